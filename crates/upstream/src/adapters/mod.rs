//! The adapters: one file per channel format, each speaking exactly what its vendor speaks
//! (`reference/wire-formats.md`) behind its modality's seam. [`crate::registry::adapter`] gives
//! each format (`crate::formats::Format`) its own.

pub mod ark;
pub mod gemini_live;
pub mod genai;
pub mod generic_video;
pub mod openai_embeddings;
pub mod openai_images;
pub mod openai_realtime;
pub mod openai_speech;
pub mod openai_transcription;
pub mod openai_videos;
pub mod stt;
pub mod t2a;
