//! # tollgate-clip-tasks
//!
//! The Ark-style content-generation task format, sans-IO (docs/api.md §2.7, §3.1, §4.6–4.7;
//! wire-formats §5): the create request and its `content` items, the content rules, the task
//! record and its states, the list and delete calls, and Ark's error body.
//!
//! This crate describes the format and nothing else:
//!
//! - [`request`]: the create request [`CreateTaskRequest`] and its [`ContentItem`]s (text,
//!   images with an [`ImageRole`], reference videos and audio, draft tasks, and anything else
//!   kept as [`ContentItem::Other`]). Decoding accepts what the vendor's SDK sends — explicit
//!   `null`s and fields this crate does not model, kept in `extra` — and
//!   [`CreateTaskRequest::for_upstream`] builds the body to pass on.
//! - [`series`](mod@series): the model family (`clipgen-cn-*`, `clipgen-intl-*`, `-fast`, `-mini`), the
//!   [`ClipSeries`] read from a model id ([`series::series`]), and the limits per series.
//! - [`media_url`]: the public-URL checks of docs/api.md §2.7 content rule 4 (no loopback, private,
//!   link-local or encoded-IP hosts) and inline `data:` images — the crate `tollgate-media-url`,
//!   which also holds the address rule of the gateway's SSRF guard.
//! - [`validate`](mod@validate): [`validate()`], the content rules and limits with a
//!   [`FieldError`] naming the field path (`content[2].image_url.url`), and [`Validated`], what
//!   the gateway needs to hold and bill (series, duration, resolution, ratio, [`Tier`]); and
//!   [`validate::validate_reference_seconds`] for the reference videos' total length.
//! - [`task`]: [`TaskStatus`] and its state machine, the [`CreateTaskResponse`], the [`Task`]
//!   record, the paths and the polling rules.
//! - [`list`]: [`ListQuery`] read from a raw query string, and the [`ListResponse`].
//! - [`delete`]: what `DELETE` does in each status ([`delete_effect`]).
//! - [`error`]: [`FieldError`] and [`Rule`], and Ark's error body [`ArkError`].
//!
//! Every wire type both serializes and deserializes, so a Rust client can reuse them.
//!
//! # Example
//!
//! ```
//! use tollgate_clip_tasks::{
//!     validate, ArkError, CreateTaskRequest, CreateTaskResponse, Rule, Task, TaskStatus, Tier,
//! };
//!
//! // What the vendor SDK sends: explicit nulls and fields this crate does not model.
//! let body = r#"{
//!     "model": "clipgen-intl-2.5-fast-260301",
//!     "content": [
//!         {"type": "text", "text": "A lighthouse in a storm, waves crashing."},
//!         {"type": "video_url", "video_url": {"url": "https://cdn.example.com/ref.mp4"}, "role": "reference_video"}
//!     ],
//!     "duration": 12, "resolution": "480p", "ratio": null, "generate_audio": null,
//!     "watermark": null, "seed": null, "callback_url": null, "service_tier": "default"
//! }"#;
//! let request: CreateTaskRequest = serde_json::from_str(body)?;
//! let ok = validate(&request)?;
//! assert_eq!((ok.duration_seconds, ok.resolution, ok.ratio), (12, "480p", "adaptive"));
//! assert_eq!((ok.tier, ok.hold_reference_seconds()), (Tier::ReferenceVideo, 30));
//!
//! let answer = CreateTaskResponse::queued("cgt-20260101123456-abcde", &request.model, 1767240000);
//! assert_eq!(answer.status, Some(TaskStatus::Queued));
//!
//! // A request that breaks a rule is answered in Ark's error shape, naming the field.
//! let mut bad = request.clone();
//! bad.content.push(tollgate_clip_tasks::ContentItem::image("http://169.254.169.254/latest", None));
//! let err = validate(&bad).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule), ("content[2].image_url.url", Rule::NotPublic));
//! let body = ArkError::from(&err);
//! assert_eq!((body.http_status(), body.error.code.as_str()), (400, "InvalidParameter"));
//!
//! // Polling the record.
//! let task: Task = serde_json::from_str(
//!     r#"{"id": "cgt-20260101123456-abcde", "model": "clipgen-intl-2.5-fast-260301",
//!         "status": "failed", "error": {"code": "OutputVideoSensitiveContentDetected", "message": "..."}}"#,
//! )?;
//! assert!(task.status.is_terminal() && task.status.is_refunded());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod delete;
pub mod error;
pub mod inline;
pub mod list;
pub mod request;
pub mod series;
pub mod task;
pub mod validate;

pub use delete::{DeleteEffect, delete_effect};
pub use error::{ArkError, ArkErrorDetail, FieldError, Rule};
pub use inline::lift_inline_flags;
pub use list::{ListQuery, ListResponse};
pub use request::{ContentItem, CreateTaskRequest, DraftTaskRef, ImageRole, MediaUrl};
pub use series::{ClipSeries, series};
pub use task::{CreateTaskResponse, Task, TaskContent, TaskError, TaskStatus, Usage};
/// The media URL rules, from `tollgate-media-url` (the guard's address rule among them).
pub use tollgate_media_url as media_url;
pub use tollgate_media_url::{UrlProblem, check_image_url, check_video_url, is_public_ip};
pub use validate::{Tier, Validated, validate, validate_reference_seconds, validate_trusting};
