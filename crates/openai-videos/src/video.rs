//! What clients read: the `Video` object, a page of them, a deletion.

use serde::{Deserialize, Serialize};

/// A video job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum VideoStatus {
    Queued,
    InProgress,
    Completed,
    Failed,
}

/// Why a job failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VideoError {
    pub code: String,
    pub message: String,
}

/// The `Video` object (`object: "video"`). Read leniently, as a vendor of this format may
/// write it (`object`, `progress` and the nullable fields may be missing, `seconds` may be a
/// number); written whole, as OpenAI documents it.
///
/// ```
/// use tollgate_openai_videos::{Video, VideoStatus};
/// let video = Video::queued("video_1", "sora-2", 1_767_240_000, "8", "1280x720");
/// let json = serde_json::to_value(&video)?;
/// assert_eq!((json["object"].as_str(), json["status"].as_str()), (Some("video"), Some("queued")));
/// assert!(json["completed_at"].is_null() && json["error"].is_null());
/// let done = video.in_progress(40).completed(1_767_240_090, Some(1_767_326_490));
/// assert_eq!((done.status, done.progress), (VideoStatus::Completed, 100));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Video {
    pub id: String,
    /// Always `video`.
    #[serde(default = "video_object")]
    #[cfg_attr(feature = "schema", schemars(extend("const" = "video")))]
    pub object: String,
    #[serde(default)]
    pub model: String,
    pub status: VideoStatus,
    /// Percent done, 0 to 100; 100 exactly when completed.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(range(max = 100)))]
    pub progress: u8,
    /// Unix seconds.
    #[serde(default)]
    pub created_at: i64,
    /// When it finished (completed or failed), Unix seconds.
    #[serde(default)]
    pub completed_at: Option<i64>,
    /// When its content stops being downloadable, Unix seconds.
    #[serde(default)]
    pub expires_at: Option<i64>,
    /// The length in seconds, as a string (`"8"`).
    #[serde(default, deserialize_with = "string_or_number")]
    pub seconds: String,
    /// `WIDTHxHEIGHT`, or `""` where the model chooses and did not say.
    #[serde(default)]
    pub size: String,
    /// The video this one remixes.
    #[serde(default)]
    pub remixed_from_video_id: Option<String>,
    /// The prompt it was made from.
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub error: Option<VideoError>,
}

fn video_object() -> String {
    "video".into()
}

/// `"8"`, or `8` as some vendors write it; `""` for null.
fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        serde_json::Value::Null => Ok(String::new()),
        other => Err(serde::de::Error::custom(format_args!(
            "seconds is {other}, not a string or a number"
        ))),
    }
}

impl Video {
    /// The length it reports, in seconds: `None` when it says none or no number.
    pub fn seconds_value(&self) -> Option<f64> {
        self.seconds
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite())
    }
}

impl Video {
    /// A job just accepted.
    pub fn queued(
        id: impl Into<String>,
        model: impl Into<String>,
        created_at: i64,
        seconds: impl Into<String>,
        size: impl Into<String>,
    ) -> Video {
        Video {
            id: id.into(),
            object: "video".into(),
            model: model.into(),
            status: VideoStatus::Queued,
            progress: 0,
            created_at,
            completed_at: None,
            expires_at: None,
            seconds: seconds.into(),
            size: size.into(),
            remixed_from_video_id: None,
            prompt: None,
            error: None,
        }
    }

    /// Generating, `progress` percent done (at most 99: 100 is completed).
    pub fn in_progress(mut self, progress: u8) -> Video {
        self.status = VideoStatus::InProgress;
        self.progress = progress.min(99);
        self
    }

    /// Done at `completed_at`; downloadable until `expires_at`.
    pub fn completed(mut self, completed_at: i64, expires_at: Option<i64>) -> Video {
        self.status = VideoStatus::Completed;
        self.progress = 100;
        self.completed_at = Some(completed_at);
        self.expires_at = expires_at;
        self.error = None;
        self
    }

    /// Failed at `at` with `error`.
    pub fn failed(mut self, at: i64, error: VideoError) -> Video {
        self.status = VideoStatus::Failed;
        self.completed_at = Some(at);
        self.error = Some(error);
        self
    }
}

/// A page of `GET /v1/videos`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VideoList {
    /// Always `list`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "list")))]
    pub object: String,
    pub data: Vec<Video>,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
    pub has_more: bool,
}

impl VideoList {
    /// A page of `data`, with more after it or not.
    pub fn new(data: Vec<Video>, has_more: bool) -> VideoList {
        VideoList {
            object: "list".into(),
            first_id: data.first().map(|v| v.id.clone()),
            last_id: data.last().map(|v| v.id.clone()),
            data,
            has_more,
        }
    }
}

/// What `GET /v1/videos/{id}/content?variant=…` downloads: the video (MP4), its thumbnail
/// (WebP) or its spritesheet (JPEG), wire-formats §7.2.
///
/// ```
/// use tollgate_openai_videos::Variant;
/// assert_eq!(Variant::parse(None), Some(Variant::Video));
/// assert_eq!(Variant::parse(Some("thumbnail")).map(Variant::content_type), Some("image/webp"));
/// assert_eq!(Variant::parse(Some("poster")), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    Video,
    Thumbnail,
    Spritesheet,
}

impl Variant {
    /// Every variant, in the documented order.
    pub const ALL: [Variant; 3] = [Variant::Video, Variant::Thumbnail, Variant::Spritesheet];

    /// The query's `variant` (`video` when absent); `None` for another word.
    pub fn parse(asked: Option<&str>) -> Option<Variant> {
        match asked {
            None => Some(Variant::Video),
            Some(word) => Variant::ALL.into_iter().find(|v| v.as_str() == word),
        }
    }

    /// Its name in the query.
    pub const fn as_str(self) -> &'static str {
        match self {
            Variant::Video => "video",
            Variant::Thumbnail => "thumbnail",
            Variant::Spritesheet => "spritesheet",
        }
    }

    /// The media type of its file.
    pub const fn content_type(self) -> &'static str {
        match self {
            Variant::Video => "video/mp4",
            Variant::Thumbnail => "image/webp",
            Variant::Spritesheet => "image/jpeg",
        }
    }
}

/// The answer of `DELETE /v1/videos/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VideoDeleted {
    pub id: String,
    /// Always `video.deleted`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "video.deleted")))]
    pub object: String,
    pub deleted: bool,
}

impl VideoDeleted {
    pub fn new(id: impl Into<String>) -> VideoDeleted {
        VideoDeleted {
            id: id.into(),
            object: "video.deleted".into(),
            deleted: true,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_page_names_its_ends() {
        let a = Video::queued("video_a", "m", 1, "4", "");
        let b = Video::queued("video_b", "m", 2, "4", "");
        let page = VideoList::new(vec![a, b], true);
        let json = serde_json::to_value(&page).unwrap();
        assert_eq!(json["object"], "list");
        assert_eq!(
            (json["first_id"].as_str(), json["last_id"].as_str()),
            (Some("video_a"), Some("video_b"))
        );
        let empty = serde_json::to_value(VideoList::new(vec![], false)).unwrap();
        assert!(empty["first_id"].is_null() && empty["has_more"] == false);
        let gone = serde_json::to_value(VideoDeleted::new("video_a")).unwrap();
        assert_eq!(
            gone,
            serde_json::json!({"id": "video_a", "object": "video.deleted", "deleted": true})
        );
    }

    #[test]
    fn a_vendors_record_is_read_leniently() {
        let v: Video = serde_json::from_str(
            r#"{"id":"video_1","status":"completed","seconds":8,"size":"1280x720"}"#,
        )
        .unwrap();
        assert_eq!((v.object.as_str(), v.seconds_value()), ("video", Some(8.0)));
        let v: Video =
            serde_json::from_str(r#"{"id":"video_1","status":"queued","seconds":null}"#).unwrap();
        assert_eq!(v.seconds_value(), None);
        assert!(serde_json::from_str::<Video>(r#"{"id":"v","status":"lost"}"#).is_err());
    }

    #[test]
    fn a_failure_keeps_its_progress_and_says_why() {
        let v = Video::queued("v", "m", 1, "4", "").in_progress(120);
        assert_eq!(v.progress, 99);
        let failed = v.failed(
            9,
            VideoError {
                code: "generation_failed".into(),
                message: "no".into(),
            },
        );
        assert_eq!(
            (failed.status, failed.progress, failed.completed_at),
            (VideoStatus::Failed, 99, Some(9))
        );
    }
}
