//! One module per endpoint family; each handler reads as the request flow of DESIGN §2. Step 2
//! (who is calling) is done once, in the service (`service::dispatch`): a handler of a client
//! route is handed the caller's `Principal`.

pub mod charges;
pub mod chat;
pub mod clip_tasks;
pub mod embeddings;
pub mod gemini_live;
pub mod images;
pub mod media;
pub mod native;
pub mod native_embeddings;
pub mod native_images;
pub mod ops;
pub mod realtime;
pub mod redemptions;
pub mod responses;
pub mod speech;
pub mod speech_to_text;
pub mod t2a;
pub mod transcriptions;
pub mod video_generations;
pub mod videos;
pub mod webhooks;
