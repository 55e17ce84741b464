//! # tollgate-openai-videos
//!
//! The OpenAI Videos API (`/v1/videos`, docs/api.md "OpenAI Videos"), sans-IO: what the OpenAI
//! SDKs' `client.videos` sends and reads.
//!
//! - [`request`]: [`CreateVideoBody`] of `POST /v1/videos` (`model`, `prompt`, `seconds`,
//!   `size`, `input_reference`), and [`RemixBody`]; an unknown field is refused by name, as
//!   OpenAI does.
//! - [`size`]: [`Size`], `WIDTHxHEIGHT`, and the resolution (`720p`) and aspect ratio (`16:9`)
//!   it stands for, which is how the gateway maps it onto a model that speaks in those.
//! - [`video`]: the [`Video`] object (`queued`, `in_progress`, `completed`, `failed`,
//!   `progress`, `seconds`, `size`, `expires_at`, `error`), [`VideoList`] (the cursor page) and
//!   [`VideoDeleted`]; [`Variant`], what `…/content` downloads.
//!
//! The gateway decides which model can do what; this crate only says what the wire holds.

pub mod request;
pub mod size;
pub mod video;

pub use request::{Checked, CreateVideoBody, DEFAULT_MODEL, FieldError, RemixBody, Rule};
pub use size::Size;
pub use video::{Variant, Video, VideoDeleted, VideoError, VideoList, VideoStatus};
