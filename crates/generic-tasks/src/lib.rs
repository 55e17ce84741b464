//! # tollgate-generic-tasks
//!
//! The generic video-task format, sans-IO (docs/api.md §2.8, §3.2, §4.8–4.9; wire-formats §7): the
//! create request of `POST /v1/video/generations` (`duration` with its alias `seconds`), the
//! create response (`id`, `task_id` = `id`, `object: "video"`, `status: "queued"`, `progress: 0`),
//! the task record of `GET /v1/video/generations/{task_id}` (`completed` with `progress` 100 and
//! `url`, plus `video_url` where the model has it; `failed` with `error`), the states and what
//! upstreams call them, and the per-model parameter table as data.
//!
//! This crate describes the format and nothing else:
//!
//! - [`request`]: [`CreateVideoRequest`]; `seconds` is accepted for `duration` (as a number or a
//!   numeric string), nulls are absent values, unknown fields are kept in
//!   [`extra`](CreateVideoRequest::extra) for passthrough.
//! - [`models`]: [`ModelSpec`] rows of the five models in [`MODELS`] (duration range, default
//!   duration and resolution, resolutions, aspect ratios, [`Supports`] for `seed`,
//!   `negative_prompt`, `sound`, `watermark` and `aspect_ratio`, whether `video_url` is
//!   returned), looked up with [`spec`].
//! - [`validate`](mod@validate): [`validate()`] checks a request against its model's row
//!   (docs/api.md §4 rule 1, §8) and returns the [`Validated`] values to send and bill, or the first
//!   [`FieldError`]; a parameter a model does not take is refused by name.
//! - [`response`]: [`CreateVideoResponse`], [`VideoTask`] and [`VideoError`].
//! - [`status`]: [`VideoStatus`] (`queued → in_progress → completed | failed`) and
//!   [`UpstreamStatus`], every state a generic upstream may report, mapped onto it.
//! - [`error`]: [`FieldError`] and [`Rule`], and the OpenAI-style [`ErrorBody`]
//!   `{error:{message,type,param,code}}` this family answers with (DESIGN §7).
//!
//! Every wire type both serializes and deserializes, so a Rust client can reuse them; decoding of
//! the response types is lenient enough to read a generic upstream too. Polling cadence
//! (docs/api.md §4 rule 6: every 5 to 10 seconds, at most once per second) and link lifetime (§4 rule 7)
//! are the gateway's; [`VideoTask::expires_at`] carries the latter.
//!
//! # Example
//!
//! ```
//! use tollgate_generic_tasks::{
//!     spec, validate, CreateVideoRequest, CreateVideoResponse, ErrorBody, Rule, UpstreamStatus,
//!     VideoError, VideoTask,
//! };
//!
//! // Submit: decode, look up the model, validate.
//! let body = r#"{"model": "wave-3-0-video", "prompt": "Waves at night", "seconds": "12",
//!                "aspect_ratio": "auto", "sound": true}"#;
//! let request: CreateVideoRequest = serde_json::from_str(body)?;
//! let model = spec(&request.model).ok_or("unknown model")?;
//! let ok = validate(&request, model)?;
//! assert_eq!((ok.duration_seconds, ok.resolution.as_str()), (12, "480p"));
//!
//! let created = CreateVideoResponse::new("vt_1", &request.model, 1_767_240_000);
//! assert_eq!(created.task_id, "vt_1");
//!
//! // Poll: map what the upstream says onto the task.
//! let task = VideoTask::from(created);
//! let upstream = UpstreamStatus::parse("SUCCESS");
//! assert!(upstream.is_terminal());
//! let task = task.completed_for(model, "https://gw.example/v1/media/vt_1");
//! assert_eq!((task.progress, task.video_url.is_some()), (100, true));
//!
//! // A parameter the model does not take is a 400 that names it.
//! let omni = spec("omni").ok_or("unknown model")?;
//! let mut request = CreateVideoRequest::new("omni", "A kite");
//! request.seed = Some(7);
//! let err = validate(&request, omni).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule), ("seed", Rule::UnsupportedParameter));
//! let answer = ErrorBody::from(&err);
//! assert_eq!(answer.error.param.as_deref(), Some("seed"));
//!
//! // A failed upstream state becomes a failed task with an error.
//! let cancelled = UpstreamStatus::parse("cancelled");
//! let code = cancelled.failure_code().unwrap_or("generation_failed");
//! let task = VideoTask::queued("vt_2", "omni", 0).failed(VideoError::new(code, "cancelled upstream"));
//! assert_eq!(task.status, cancelled.video_status());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod error;
pub mod models;
pub mod request;
pub mod response;
pub mod status;
pub mod validate;

pub use error::{ErrorBody, ErrorDetail, FieldError, INVALID_REQUEST_ERROR, Rule, SERVER_ERROR};
pub use models::{MODEL_DEFAULT, MODELS, ModelSpec, Supports, spec};
pub use request::CreateVideoRequest;
pub use response::{CreateVideoResponse, VIDEO_OBJECT, VideoError, VideoTask};
pub use status::{UpstreamStatus, VideoStatus};
pub use validate::{MAX_PROMPT_CHARS, Validated, validate};
