//! The seams: one trait per modality, with the neutral types it speaks, that every channel
//! format of the modality implements (docs/architecture.md, "Upstream seams") — so that a model
//! may list channels of different formats and the gateway calls them alike.

pub mod embeddings;
pub mod genai;
pub mod images;
pub mod recognition;
pub mod sessions;
pub mod speech;
pub mod tasks;
