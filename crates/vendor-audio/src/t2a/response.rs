//! The response of `POST /v1/t2a_v2`: one JSON body, or one per SSE frame.

use serde::{Deserialize, Serialize};

use crate::base_resp::BaseResp;

/// wire-formats §3.2: `data.status` 1, a chunk of a stream (more follows).
pub const STATUS_CHUNK: u8 = 1;

/// wire-formats §3.2: `data.status` 2, synthesis finished (the whole non-stream response, or the
/// last frame of a stream).
pub const STATUS_FINISHED: u8 = 2;

/// A `t2a_v2` response (wire-formats §3.2) or one frame of a stream (wire-formats §3.3): the
/// same envelope serves both.
///
/// | Field | Present |
/// |---|---|
/// | `data` | audio and status; absent or `null` on an error |
/// | `extra_info` | on the non-stream response and on the final frame of a stream: the usage, see [`ExtraInfo::usage_characters`] |
/// | `trace_id` | the request id |
/// | `base_resp` | always; a non-zero code is an error, also mid-stream |
///
/// ```
/// use tollgate_vendor_audio::t2a::{encode_audio, T2aResponse, STATUS_FINISHED};
///
/// let frame: T2aResponse = serde_json::from_str(
///     r#"{"data":{"audio":"","status":2},"extra_info":{"usage_characters":44},
///         "trace_id":"03a1","base_resp":{"status_code":0,"status_msg":"success"}}"#,
/// )?;
/// assert!(frame.is_final());
/// assert!(frame.base_resp.is_success());
/// assert_eq!(frame.usage_characters(), Some(44));
/// assert_eq!(frame.data.as_ref().map(|data| data.status), Some(STATUS_FINISHED));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct T2aResponse {
    /// The audio and the synthesis status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<T2aData>,
    /// Facts about the audio, and the billed characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_info: Option<ExtraInfo>,
    /// The request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The status: 0 for success, otherwise an error code.
    pub base_resp: BaseResp,
}

impl T2aResponse {
    /// A successful response or frame carrying `data`.
    pub fn success(data: T2aData) -> Self {
        Self {
            data: Some(data),
            extra_info: None,
            trace_id: None,
            base_resp: BaseResp::success(),
        }
    }

    /// An error response: only `base_resp`, with the given code and message.
    ///
    /// ```
    /// use tollgate_vendor_audio::base_resp::codes;
    /// use tollgate_vendor_audio::t2a::T2aResponse;
    ///
    /// let resp = T2aResponse::error(codes::INVALID_PARAMETERS, "'text' is required");
    /// assert_eq!(
    ///     serde_json::to_string(&resp)?,
    ///     r#"{"base_resp":{"status_code":2013,"status_msg":"'text' is required"}}"#
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn error(code: i64, msg: impl Into<String>) -> Self {
        Self {
            data: None,
            extra_info: None,
            trace_id: None,
            base_resp: BaseResp::error(code, msg),
        }
    }

    /// Whether `data.status` is [`STATUS_FINISHED`]: the non-stream response or the last frame.
    pub fn is_final(&self) -> bool {
        self.data
            .as_ref()
            .is_some_and(|data| data.status == STATUS_FINISHED)
    }

    /// The billed characters, `extra_info.usage_characters` (docs/api.md §2.4), when present.
    pub fn usage_characters(&self) -> Option<u64> {
        self.extra_info
            .as_ref()
            .and_then(|info| info.usage_characters)
    }
}

/// The `data` object: audio and status (wire-formats §3.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct T2aData {
    /// The audio bytes, hex-encoded (see [`decode_audio`](super::decode_audio)); may be empty,
    /// e.g. in the final frame of a stream with `exclude_aggregated_audio: true`.
    #[serde(default)]
    pub audio: String,
    /// [`STATUS_CHUNK`] (1) or [`STATUS_FINISHED`] (2).
    pub status: u8,
    /// The URL of a subtitle file; never produced by this service (docs/api.md §2.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtitle_file: Option<String>,
}

impl T2aData {
    /// Data with `audio_bytes` hex-encoded and the given status.
    pub fn new(audio_bytes: &[u8], status: u8) -> Self {
        Self {
            audio: super::encode_audio(audio_bytes),
            status,
            subtitle_file: None,
        }
    }

    /// A stream chunk ([`STATUS_CHUNK`]) carrying `audio_bytes`.
    pub fn chunk(audio_bytes: &[u8]) -> Self {
        Self::new(audio_bytes, STATUS_CHUNK)
    }

    /// The finished audio ([`STATUS_FINISHED`]): the whole audio of a non-stream response, or
    /// the final frame of a stream.
    pub fn finished(audio_bytes: &[u8]) -> Self {
        Self::new(audio_bytes, STATUS_FINISHED)
    }

    /// The audio bytes, decoded from hex; an error means the sender broke the format.
    pub fn audio_bytes(&self) -> Result<Vec<u8>, super::AudioHexError> {
        super::decode_audio(&self.audio)
    }
}

/// The `extra_info` object: facts about the produced audio (wire-formats §3.2). Every field is
/// optional; absent fields are left out when serializing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExtraInfo {
    /// The audio duration in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_length: Option<u64>,
    /// The sample rate in Hz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_sample_rate: Option<u32>,
    /// The audio size in bytes; can be 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_size: Option<u64>,
    /// The bitrate in bit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bitrate: Option<u32>,
    /// Spoken characters or words, punctuation excluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub word_count: Option<u64>,
    /// The share of invisible or illegal characters (above 10% is error 1042).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invisible_character_ratio: Option<f64>,
    /// docs/api.md §2.4: the billed character count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_characters: Option<u64>,
    /// The audio format, e.g. `"mp3"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_format: Option<String>,
    /// The number of channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_channel: Option<u8>,
}
