//! The create request of `POST /api/v3/contents/generations/tasks` (docs/api.md §2.7, §4.6;
//! wire-formats §5.1) and its `content` items.
//!
//! Decoding accepts what the vendor's own SDK sends: every optional field may be an explicit
//! `null` (read as absent), and fields this crate does not model (`callback_url`,
//! `return_last_frame`, `service_tier`, `execution_expires_after`, `draft`, `camera_fixed`,
//! `frames`, `tools`, `priority`, ...) are kept in [`CreateTaskRequest::extra`]. Decoding checks
//! JSON types only; the rules are checked by [`validate`](crate::validate::validate()).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::error::null_as_empty;
use crate::series::{
    DEFAULT_DURATION, DEFAULT_GENERATE_AUDIO, DEFAULT_RATIO, DEFAULT_RESOLUTION,
    DURATION_MODEL_CHOOSES,
};

/// wire-formats §5.1: the top-level fields, other than those modelled by [`CreateTaskRequest`],
/// that the upstream understands and [`CreateTaskRequest::for_upstream`] passes on.
pub const UPSTREAM_FIELDS: [&str; 10] = [
    "frames",
    "camera_fixed",
    "draft",
    "return_last_frame",
    "service_tier",
    "execution_expires_after",
    "priority",
    "safety_identifier",
    "tools",
    "output_format",
];

/// Fields the upstream understands but the gateway accepts and does not pass on.
///
/// `callback_url`: docs/api.md §6 defines no callbacks ("clients poll"); an upstream callback would
/// carry the upstream's task id to the client's URL, outside the gateway's metering.
pub const WITHHELD_FIELDS: [&str; 1] = ["callback_url"];

/// The body of `POST /api/v3/contents/generations/tasks` (docs/api.md §2.7, wire-formats §5.1).
///
/// An absent or `null` `model` decodes as an empty string and `content` as an empty list; both
/// are then refused by validation. `duration` accepts an integer or a whole-number float (`5.0`).
///
/// ```
/// use tollgate_clip_tasks::{ContentItem, CreateTaskRequest, ImageRole};
///
/// let request: CreateTaskRequest = serde_json::from_str(r#"{
///     "model": "clipgen-cn-2.0-260128",
///     "content": [
///         {"type": "text", "text": "A paper boat drifts down a rainy street."},
///         {"type": "image_url", "image_url": {"url": "https://example.com/first.png"}, "role": "first_frame"}
///     ],
///     "duration": 5, "resolution": null, "ratio": null, "seed": null,
///     "return_last_frame": true, "callback_url": null
/// }"#)?;
/// assert_eq!(request.resolution_or_default(), "720p");
/// assert_eq!(request.ratio_or_default(), "adaptive");
/// assert!(request.generate_audio_or_default());
/// assert_eq!(request.extra["return_last_frame"], true);
/// assert!(matches!(
///     &request.content[1],
///     ContentItem::ImageUrl { role: Some(ImageRole::FirstFrame), .. }
/// ));
///
/// // What goes upstream: defaults made explicit, only the fields the upstream understands.
/// let upstream = request.for_upstream("doubao-seedance-2-0-260128");
/// assert_eq!(upstream.resolution.as_deref(), Some("720p"));
/// assert_eq!(upstream.extra.get("return_last_frame"), Some(&serde_json::json!(true)));
/// assert!(!upstream.extra.contains_key("callback_url"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    // Decoded when missing, refused by validation naming it: required all the same.
    schemars(rename = "ClipTaskRequest", extend("required" = ["model", "content"]))
)]
pub struct CreateTaskRequest {
    /// The model id, e.g. `clipgen-cn-2.0-260128`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub model: String,
    /// The prompt and the media: text, images, videos, audio, a draft task.
    #[serde(default, deserialize_with = "null_as_empty_list")]
    pub content: Vec<ContentItem>,
    /// Seconds: 4 to 15 (2.0 series) or 4 to 30 (2.5 series); `-1` lets the model choose.
    #[serde(
        default,
        deserialize_with = "opt_whole_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub duration: Option<i64>,
    /// `480p` or `720p`; default `720p`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    /// `16:9`, `9:16`, `1:1`, `4:3`, `3:4`, `21:9` or `adaptive`; default `adaptive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<String>,
    /// Whether the clip has sound; default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_audio: Option<bool>,
    /// Adds a watermark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<bool>,
    /// Random seed (`-1` = random).
    #[serde(
        default,
        deserialize_with = "opt_whole_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub seed: Option<i64>,
    /// Fields this crate does not model (`callback_url`, `return_last_frame`, `service_tier`,
    /// `frames`, `tools`, ...), kept as given, explicit `null`s included.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateTaskRequest {
    /// A request with only `model` and `content` set.
    pub fn new(model: impl Into<String>, content: Vec<ContentItem>) -> Self {
        Self {
            model: model.into(),
            content,
            ..Self::default()
        }
    }

    /// `resolution`, or `720p` when it is absent (docs/api.md §2.7).
    pub fn resolution_or_default(&self) -> &str {
        self.resolution.as_deref().unwrap_or(DEFAULT_RESOLUTION)
    }

    /// `ratio`, or `adaptive` when it is absent (docs/api.md §2.7).
    pub fn ratio_or_default(&self) -> &str {
        self.ratio.as_deref().unwrap_or(DEFAULT_RATIO)
    }

    /// `generate_audio`, or `true` when it is absent (docs/api.md §2.7).
    pub fn generate_audio_or_default(&self) -> bool {
        self.generate_audio.unwrap_or(DEFAULT_GENERATE_AUDIO)
    }

    /// `frames` (wire-formats §5.1: an alternative to `duration`, `25 + 4n`), when it is given
    /// as an integer.
    pub fn frames(&self) -> Option<i64> {
        self.extra.get("frames").and_then(Value::as_i64)
    }

    /// The reference videos: the index of each `video_url` item in `content` and its URL.
    pub fn reference_videos(&self) -> impl Iterator<Item = (usize, &str)> {
        self.content
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item {
                ContentItem::VideoUrl { video_url, .. } => Some((i, video_url.url.as_str())),
                _ => None,
            })
    }

    /// The body to send upstream, for a request that passed
    /// [`validate`](crate::validate::validate()):
    ///
    /// - `model` is `upstream_model` (the catalog maps public ids to the upstream's);
    /// - `resolution`, `ratio` and `generate_audio` are sent explicitly with their defaults, and
    ///   so is `duration` ([`DEFAULT_DURATION`]) unless `frames` is given, so that the clip
    ///   generated is the one held for (wire-formats §5.1: the structured fields also win over
    ///   inline `--rs`/`--rt`/`--dur` flags in the prompt);
    /// - of [`extra`](Self::extra), only the non-null [`UPSTREAM_FIELDS`] are passed on: the
    ///   [`WITHHELD_FIELDS`], explicit `null`s and fields the upstream does not document are
    ///   dropped;
    /// - content items of an unknown type (which validation refuses) are dropped.
    pub fn for_upstream(&self, upstream_model: &str) -> CreateTaskRequest {
        let extra: Map<String, Value> = self
            .extra
            .iter()
            .filter(|(key, value)| {
                !value.is_null()
                    && UPSTREAM_FIELDS.contains(&key.as_str())
                    && !WITHHELD_FIELDS.contains(&key.as_str())
            })
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        let duration = match self.duration {
            Some(duration) => Some(duration),
            None if extra.contains_key("frames") => None,
            None => Some(i64::from(DEFAULT_DURATION)),
        };
        CreateTaskRequest {
            model: upstream_model.to_owned(),
            content: self
                .content
                .iter()
                .filter(|item| !matches!(item, ContentItem::Other(_)))
                .cloned()
                .collect(),
            duration,
            resolution: Some(self.resolution_or_default().to_owned()),
            ratio: Some(self.ratio_or_default().to_owned()),
            generate_audio: Some(self.generate_audio_or_default()),
            watermark: self.watermark,
            seed: self.seed,
            extra,
        }
    }

    /// Whether the request asks the model to choose the duration (`duration: -1`).
    pub fn model_chooses_duration(&self) -> bool {
        self.duration == Some(DURATION_MODEL_CHOOSES)
    }
}

/// An item of `content` (docs/api.md §2.7, wire-formats §5.1), tagged by `type`.
///
/// An item whose `type` is not one of the five below, or whose fields have the wrong JSON type
/// (an `image_url` that is a string, an unknown `role`), decodes as [`Other`](Self::Other) with
/// the item as given, so that decoding never fails on an item; validation then refuses it
/// naming the item and what is wrong (an unknown type with [`UnsupportedValue`], a known type of
/// the wrong shape with [`Malformed`]).
///
/// [`UnsupportedValue`]: crate::Rule::UnsupportedValue
/// [`Malformed`]: crate::Rule::Malformed
///
/// ```
/// use tollgate_clip_tasks::{ContentItem, ImageRole};
///
/// let item: ContentItem = serde_json::from_str(
///     r#"{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}, "role": null}"#,
/// )?;
/// assert_eq!(item, ContentItem::image("https://example.com/a.png", None));
///
/// let other: ContentItem = serde_json::from_str(r#"{"type": "hologram", "hologram": {}}"#)?;
/// assert_eq!(other.type_name(), Some("hologram"));
/// assert!(matches!(other, ContentItem::Other(_)));
///
/// assert_eq!(
///     serde_json::to_string(&ContentItem::text("A cat"))?,
///     r#"{"type":"text","text":"A cat"}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ClipContentItem")
)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentItem {
    /// `{"type": "text", "text": ...}`: the prompt.
    Text {
        /// The prompt; `null` reads as empty (refused by validation).
        #[serde(default, deserialize_with = "null_as_empty")]
        text: String,
    },
    /// `{"type": "image_url", "image_url": {"url": ...}, "role": ...}`: a first or last frame or
    /// a reference image; without a role, a first frame (wire-formats §5.1).
    ImageUrl {
        /// A public `http(s)` URL or inline `data:image/...;base64,` data.
        image_url: MediaUrl,
        /// `first_frame`, `last_frame` or `reference_image`; absent or `null` = first frame.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<ImageRole>,
    },
    /// `{"type": "video_url", "video_url": {"url": ...}, "role": "reference_video"}`: a reference
    /// video.
    VideoUrl {
        /// A public `http(s)` URL, not empty.
        video_url: MediaUrl,
        /// `reference_video` (the only role), or absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// `{"type": "audio_url", "audio_url": {"url": ...}, "role": "reference_audio"}`: reference
    /// audio (wire-formats §5.1; needs an image or a video in the same request).
    AudioUrl {
        /// A public `http(s)` URL or inline `data:audio/...;base64,` data.
        audio_url: MediaUrl,
        /// `reference_audio` (the only role), or absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// `{"type": "draft_task", "draft_task": {"id": ...}}`: renders a draft task in full
    /// (wire-formats §5.1, `draft`).
    DraftTask {
        /// The draft task.
        draft_task: DraftTaskRef,
    },
    /// Any other item, kept as given (see the type's documentation).
    #[serde(untagged)]
    Other(Value),
}

/// The known `type`s of a content item, in the order of wire-formats §5.1.
pub const CONTENT_TYPES: [&str; 5] = ["text", "image_url", "video_url", "audio_url", "draft_task"];

/// wire-formats §5.1: the role of a `video_url` item.
pub const ROLE_REFERENCE_VIDEO: &str = "reference_video";

/// wire-formats §5.1: the role of an `audio_url` item.
pub const ROLE_REFERENCE_AUDIO: &str = "reference_audio";

impl ContentItem {
    /// A text item.
    pub fn text(text: impl Into<String>) -> Self {
        ContentItem::Text { text: text.into() }
    }

    /// An image item with the given role (`None`: a first frame).
    pub fn image(url: impl Into<String>, role: Option<ImageRole>) -> Self {
        ContentItem::ImageUrl {
            image_url: MediaUrl::new(url),
            role,
        }
    }

    /// A reference video item (`role: "reference_video"`).
    pub fn video(url: impl Into<String>) -> Self {
        ContentItem::VideoUrl {
            video_url: MediaUrl::new(url),
            role: Some(ROLE_REFERENCE_VIDEO.to_owned()),
        }
    }

    /// A reference audio item (`role: "reference_audio"`).
    pub fn audio(url: impl Into<String>) -> Self {
        ContentItem::AudioUrl {
            audio_url: MediaUrl::new(url),
            role: Some(ROLE_REFERENCE_AUDIO.to_owned()),
        }
    }

    /// A draft task item.
    pub fn draft_task(id: impl Into<String>) -> Self {
        ContentItem::DraftTask {
            draft_task: DraftTaskRef { id: id.into() },
        }
    }

    /// The item's `type` as on the wire; for [`Other`](Self::Other), its `type` when that is a
    /// string.
    pub fn type_name(&self) -> Option<&str> {
        match self {
            ContentItem::Text { .. } => Some("text"),
            ContentItem::ImageUrl { .. } => Some("image_url"),
            ContentItem::VideoUrl { .. } => Some("video_url"),
            ContentItem::AudioUrl { .. } => Some("audio_url"),
            ContentItem::DraftTask { .. } => Some("draft_task"),
            ContentItem::Other(value) => value.get("type").and_then(Value::as_str),
        }
    }
}

/// The `{"url": ...}` object of an image, video or audio item.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ClipMediaUrl")
)]
pub struct MediaUrl {
    /// The URL; `null` reads as empty (refused by validation).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub url: String,
}

impl MediaUrl {
    /// `{"url": url}`.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into() }
    }
}

/// The `{"id": ...}` object of a `draft_task` item.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ClipDraftTaskRef")
)]
pub struct DraftTaskRef {
    /// The id of the draft task; `null` reads as empty (refused by validation).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub id: String,
}

/// The role of an image (docs/api.md §2.7, wire-formats §5.1), snake_case on the wire.
///
/// An image without a role is a first frame; two role-less images are a first frame and then a
/// last frame (wire-formats §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ClipImageRole")
)]
#[serde(rename_all = "snake_case")]
pub enum ImageRole {
    /// `first_frame`.
    FirstFrame,
    /// `last_frame`.
    LastFrame,
    /// `reference_image`.
    ReferenceImage,
}

impl ImageRole {
    /// Every role.
    pub const ALL: [ImageRole; 3] = [
        ImageRole::FirstFrame,
        ImageRole::LastFrame,
        ImageRole::ReferenceImage,
    ];

    /// The value as on the wire, e.g. `"reference_image"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ImageRole::FirstFrame => "first_frame",
            ImageRole::LastFrame => "last_frame",
            ImageRole::ReferenceImage => "reference_image",
        }
    }

    /// Whether the role is a frame (first or last), as opposed to a reference image.
    pub const fn is_frame(self) -> bool {
        !matches!(self, ImageRole::ReferenceImage)
    }
}

fn null_as_empty_list<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ContentItem>, D::Error> {
    Ok(Option::<Vec<ContentItem>>::deserialize(deserializer)?.unwrap_or_default())
}

/// An optional integer that may arrive as a whole-number float (`5.0`); `null` is absent.
fn opt_whole_number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    if let Some(n) = number.as_i64() {
        return Ok(Some(n));
    }
    match number.as_f64() {
        Some(f) if f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64 => {
            // A whole number within range converts exactly enough: it has no fraction.
            #[allow(clippy::cast_possible_truncation)]
            Ok(Some(f as i64))
        }
        _ => Err(D::Error::custom(format!(
            "invalid value: {number}, expected a whole number"
        ))),
    }
}
