//! Translation between what the client sent and what the channel speaks. Handlers call these;
//! they never translate inline.

pub mod chat;
pub mod clip;
pub mod embeddings;
pub mod native;
pub mod openai_video;
pub mod responses;
pub mod speech;
pub mod transcription;
pub mod video;
