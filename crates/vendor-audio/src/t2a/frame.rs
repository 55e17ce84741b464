//! A `t2a_v2` answer or stream frame read with its audio left where it arrived: the hex is
//! checked, not decoded and not copied, so that a gateway relaying the vendor's frames to a
//! `t2a_v2` client holds each frame once (docs/benchmarks.md, "Lean streams").

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;

use super::{AudioHexError, ExtraInfo, T2aData, T2aResponse, check_audio};
use crate::base_resp::BaseResp;

/// A frame (or whole answer) read from its JSON bytes.
///
/// `response` is what [`T2aResponse`]'s own reading gives — the same fields, unknown ones
/// dropped, duplicates refused — except that `data.audio` is left empty there and kept in
/// `audio_hex`: the vendor's text, checked as whole bytes of hex, and a slice of the frame's own
/// bytes unless the vendor escaped a character in it. A frame whose `base_resp` is an error
/// keeps no audio (it is not relayed, and its audio is not checked).
///
/// ```
/// use bytes::Bytes;
/// use tollgate_vendor_audio::t2a::{T2aFrame, T2aResponse};
///
/// let json = r#"{"data":{"audio":"fffb","status":1},"base_resp":{"status_code":0,"status_msg":""}}"#;
/// let frame = T2aFrame::read(Bytes::from_static(json.as_bytes()))?;
/// assert_eq!(&frame.audio_hex[..], b"fffb");
/// assert_eq!(frame.audio_len(), 2);
/// assert_eq!(frame.response.data.as_ref().map(|data| data.audio.as_str()), Some(""));
///
/// // Its JSON again, in three pieces around the audio: what `T2aResponse` would write.
/// let (head, audio, tail) = frame.json_pieces();
/// let whole: T2aResponse = serde_json::from_str(json)?;
/// assert_eq!([head.as_bytes(), &audio, tail.as_bytes()].concat(), serde_json::to_vec(&whole)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct T2aFrame {
    /// The frame without its audio: `data.audio` is empty.
    pub response: T2aResponse,
    /// `data.audio` as the vendor sent it: hex of whole bytes (checked), never decoded here.
    pub audio_hex: Bytes,
}

/// Why a frame could not be read: it is not a `t2a_v2` answer, or its audio is not hex.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The JSON does not have the answer's shape.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// `data.audio` is not hex of whole bytes.
    #[error("audio: {0}")]
    Audio(#[from] AudioHexError),
}

/// [`T2aResponse`] with its audio borrowed: the same fields, read the same way.
#[derive(Deserialize)]
struct Borrowed<'a> {
    #[serde(default, borrow)]
    data: Option<BorrowedData<'a>>,
    #[serde(default)]
    extra_info: Option<ExtraInfo>,
    #[serde(default)]
    trace_id: Option<String>,
    base_resp: BaseResp,
}

/// [`T2aData`] with its audio borrowed.
#[derive(Deserialize)]
struct BorrowedData<'a> {
    #[serde(default, borrow)]
    audio: Cow<'a, str>,
    status: u8,
    #[serde(default)]
    subtitle_file: Option<String>,
}

/// How [`T2aResponse`] writes the start of an answer with `data`, up to its audio's text.
const HEAD: &str = r#"{"data":{"audio":""#;

impl T2aFrame {
    /// Reads a frame from the JSON the vendor sent.
    pub fn read(json: Bytes) -> Result<T2aFrame, FrameError> {
        let Borrowed {
            data,
            extra_info,
            trace_id,
            base_resp,
        } = serde_json::from_slice(&json)?;
        let mut audio_hex = Bytes::new();
        let data = match data {
            None => None,
            Some(data) => {
                if base_resp.is_success() {
                    check_audio(&data.audio)?;
                    audio_hex = match data.audio {
                        Cow::Borrowed(text) => json.slice_ref(text.as_bytes()),
                        Cow::Owned(text) => Bytes::from(text),
                    };
                }
                Some(T2aData {
                    audio: String::new(),
                    status: data.status,
                    subtitle_file: data.subtitle_file,
                })
            }
        };
        let response = T2aResponse {
            data,
            extra_info,
            trace_id,
            base_resp,
        };
        Ok(T2aFrame {
            response,
            audio_hex,
        })
    }

    /// A frame built around audio that is hex already (see [`super::encode_audio`]).
    pub fn new(response: T2aResponse, audio_hex: Bytes) -> T2aFrame {
        T2aFrame {
            response,
            audio_hex,
        }
    }

    /// Bytes of audio the frame carries.
    pub fn audio_len(&self) -> usize {
        self.audio_hex.len() / 2
    }

    /// The audio, decoded.
    pub fn decode_audio(&self) -> Result<Vec<u8>, AudioHexError> {
        // Checked when read (a frame built with [`T2aFrame::new`] is checked here).
        super::decode_audio(&String::from_utf8_lossy(&self.audio_hex))
    }

    /// The whole answer, its audio in `data.audio` (a copy of the audio).
    pub fn into_response(self) -> T2aResponse {
        let mut response = self.response;
        if let Some(data) = &mut response.data {
            data.audio = String::from_utf8_lossy(&self.audio_hex).into_owned();
        }
        response
    }

    /// The frame's JSON in three pieces — before the audio, the audio, after it — whose
    /// concatenation is exactly what [`T2aResponse`] writes for the whole answer: the audio is
    /// not copied to write it.
    pub fn json_pieces(&self) -> (String, Bytes, String) {
        let json = serde_json::to_string(&self.response).unwrap_or_default();
        match json.strip_prefix(HEAD) {
            Some(tail) if self.response.data.is_some() => {
                (HEAD.to_owned(), self.audio_hex.clone(), tail.to_owned())
            }
            // No `data`: nothing to put the audio in.
            _ => (json, Bytes::new(), String::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    fn read(json: &str) -> Result<T2aFrame, FrameError> {
        T2aFrame::read(Bytes::copy_from_slice(json.as_bytes()))
    }

    #[test]
    fn the_audio_is_a_slice_of_the_frame_unless_escaped() {
        let json = Bytes::from_static(
            br#"{"data":{"audio":"00ff","status":1},"base_resp":{"status_code":0}}"#,
        );
        let frame = T2aFrame::read(json.clone()).unwrap();
        let inside = json.as_ptr_range();
        assert!(inside.contains(&frame.audio_hex.as_ptr()), "not copied");
        let escaped =
            read(r#"{"data":{"audio":"\u0030\u0030ff","status":1},"base_resp":{"status_code":0}}"#)
                .unwrap();
        assert_eq!(&escaped.audio_hex[..], b"00ff");
        assert_eq!(escaped.decode_audio().unwrap(), [0, 0xff]);
    }

    #[test]
    fn bad_audio_and_bad_shapes_are_refused_and_an_errors_audio_is_dropped() {
        let odd = read(r#"{"data":{"audio":"fff","status":1},"base_resp":{"status_code":0}}"#);
        assert!(matches!(
            odd,
            Err(FrameError::Audio(AudioHexError::OddLength { len: 3 }))
        ));
        let twice = read(r#"{"data":null,"data":null,"base_resp":{"status_code":0}}"#);
        assert!(matches!(twice, Err(FrameError::Json(_))), "{twice:?}");
        let refused =
            read(r#"{"data":{"audio":"zz","status":1},"base_resp":{"status_code":1002}}"#).unwrap();
        assert!(refused.audio_hex.is_empty());
        assert!(!refused.response.base_resp.is_success());
    }

    fn frames() -> impl Strategy<Value = String> {
        let audio = prop_oneof![
            "[0-9a-fA-F]{0,8}".prop_map(|hex| format!("{hex}{hex}")),
            Just(r"\u0041b".to_owned()),
            "[0-9g-z]{0,4}",
        ];
        let data = prop_oneof![
            Just(String::new()),
            Just(r#""data":null,"#.to_owned()),
            (audio, 0u8..4, any::<bool>()).prop_map(|(audio, status, subtitle)| {
                let subtitle = if subtitle {
                    r#","subtitle_file":"https://x/s.json""#
                } else {
                    ""
                };
                format!(r#""data":{{"status":{status},"audio":"{audio}"{subtitle},"new":1}},"#)
            }),
        ];
        let extra = prop_oneof![
            Just(String::new()),
            (0u64..100).prop_map(|n| format!(r#""extra_info":{{"usage_characters":{n}}},"#)),
        ];
        (data, extra, any::<bool>(), 0i64..3).prop_map(|(data, extra, trace, code)| {
            let trace = if trace { r#""trace_id":"t-1","# } else { "" };
            format!(
                r#"{{{extra}{trace}{data}"base_resp":{{"status_code":{code},"status_msg":"m"}}}}"#
            )
        })
    }

    proptest! {
        /// Against `T2aResponse`'s own reading and writing: the same frames read, the same
        /// refused, and the same JSON written.
        #[test]
        fn a_frame_reads_and_writes_as_the_whole_answer_does(json in frames()) {
            let whole = serde_json::from_str::<T2aResponse>(&json);
            match (read(&json), whole) {
                (Ok(frame), Ok(whole)) if !whole.base_resp.is_success() => {
                    prop_assert!(frame.audio_hex.is_empty());
                    prop_assert_eq!(frame.response.base_resp, whole.base_resp);
                }
                (Ok(frame), Ok(whole)) => {
                    let (head, audio, tail) = frame.json_pieces();
                    let written = [head.as_bytes(), &audio, tail.as_bytes()].concat();
                    prop_assert_eq!(written, serde_json::to_vec(&whole).unwrap());
                    let decoded = whole.data.as_ref().map(|d| d.audio_bytes().unwrap());
                    prop_assert_eq!(frame.decode_audio().unwrap(), decoded.unwrap_or_default());
                    prop_assert_eq!(frame.into_response(), whole);
                }
                (Ok(frame), Err(_)) => prop_assert!(false, "read a frame serde refuses: {frame:?}"),
                (Err(FrameError::Audio(e)), Ok(whole)) => {
                    let audio = whole.data.map(|d| d.audio_bytes());
                    prop_assert_eq!(audio, Some(Err(e)));
                }
                (Err(FrameError::Json(_)), Ok(whole)) => {
                    prop_assert!(false, "refused a frame serde reads: {whole:?}");
                }
                (Err(_), Err(_)) => {}
            }
        }
    }
}
