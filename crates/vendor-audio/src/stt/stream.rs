//! The SSE frames of `stream: true`.

use serde::{Deserialize, Serialize};

/// wire-formats §4: a `data: [DONE]` line may end the stream; clients tolerate it. This service
/// does not send it.
pub const DONE_SENTINEL: &str = "[DONE]";

/// One SSE `data:` frame of a `speech_to_text` stream (docs/api.md §6, wire-formats §4):
/// `{index, delta, finish, duration}`.
///
/// Text frames carry `delta`; the final frame has `finish: true` and `duration` (seconds, the
/// billed quantity), and only the final frame carries `duration`.
///
/// | Field | Encoding | Decoding |
/// |---|---|---|
/// | `index` | always written | 0 when absent (**[?]** wire-formats §4: not confirmed; the official CLI reads only `delta`, `finish`, `duration`) |
/// | `delta` | always written, `""` on the final frame | `""` when absent |
/// | `finish` | written only when `true` | `false` when absent |
/// | `duration` | written only when present | `None` when absent |
///
/// ```
/// use tollgate_vendor_audio::stt::SttStreamFrame;
///
/// let frame = SttStreamFrame::delta(0, "Hi all.");
/// assert_eq!(serde_json::to_string(&frame)?, r#"{"index":0,"delta":"Hi all."}"#);
/// let last = SttStreamFrame::finish(2, 3.4);
/// assert_eq!(
///     serde_json::to_string(&last)?,
///     r#"{"index":2,"delta":"","finish":true,"duration":3.4}"#
/// );
/// assert!(last.is_final());
///
/// // A frame with only the confirmed fields decodes too.
/// let decoded: SttStreamFrame = serde_json::from_str(r#"{"delta":"Hi"}"#)?;
/// assert_eq!(decoded, SttStreamFrame::delta(0, "Hi"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SttStreamFrame {
    /// The frame's number, from 0.
    #[serde(default)]
    pub index: u32,
    /// The next piece of text, to be appended to the previous ones.
    #[serde(default)]
    pub delta: String,
    /// `true` on the final frame.
    #[serde(default, skip_serializing_if = "is_false")]
    pub finish: bool,
    /// The audio's duration in seconds, on the final frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
}

// serde's `skip_serializing_if` passes a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(value: &bool) -> bool {
    !*value
}

impl SttStreamFrame {
    /// A text frame.
    pub fn delta(index: u32, delta: impl Into<String>) -> Self {
        Self {
            index,
            delta: delta.into(),
            finish: false,
            duration: None,
        }
    }

    /// The final frame: no text, `finish: true` and the duration in seconds.
    pub fn finish(index: u32, duration: f64) -> Self {
        Self {
            index,
            delta: String::new(),
            finish: true,
            duration: Some(duration),
        }
    }

    /// Whether this is the final frame (`finish: true`).
    pub fn is_final(&self) -> bool {
        self.finish
    }

    /// Decodes the data of one SSE `data:` line; `Ok(None)` for the [`DONE_SENTINEL`].
    ///
    /// ```
    /// use tollgate_vendor_audio::stt::SttStreamFrame;
    ///
    /// let frame = SttStreamFrame::parse(r#"{"index":2,"delta":"","finish":true,"duration":3.4}"#)?;
    /// assert_eq!(frame.and_then(|f| f.duration), Some(3.4));
    /// assert_eq!(SttStreamFrame::parse(" [DONE] ")?, None);
    /// assert!(SttStreamFrame::parse("{").is_err());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn parse(data: &str) -> Result<Option<Self>, serde_json::Error> {
        let data = data.trim();
        if data == DONE_SENTINEL {
            return Ok(None);
        }
        serde_json::from_str(data).map(Some)
    }
}
