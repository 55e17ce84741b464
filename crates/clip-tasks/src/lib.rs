//! # tollgate-clip-tasks
//!
//! The Ark-style content-generation task format, sans-IO (SPEC §2.7, §3.1; wire-formats §5):
//! the create request and its `content` items (text, first/last frame and reference images,
//! reference videos), the content rules (frames never with reference images, at most 30
//! reference images, reference-video limits per series), durations per series, the task record,
//! the list and delete calls, and Ark's error body.
//!
//! Status: the types arrive with the video-task work; until then the gateway answers
//! `/api/v3/contents/generations/tasks` with 501 in Ark's error shape.
