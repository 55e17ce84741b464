//! # tollgate-vendor-audio
//!
//! The vendor audio wire formats, sans-IO: `t2a_v2` speech synthesis (docs/api.md §2.4, wire-formats
//! §3: hex audio, SSE frames ending with `data.status = 2`, `base_resp` status codes) and
//! `speech_to_text` recognition (docs/api.md §2.5, wire-formats §4: the multipart form, the `language`
//! header, `timestamp_level`, and the `{index, delta, finish, duration}` stream frames).
//!
//! This crate describes the formats and nothing else:
//!
//! - [`t2a`]: the request [`T2aRequest`] (with [`VoiceSetting`], [`AudioSetting`] and the
//!   pass-through fields), its rules and [`t2a::validate`], the response and stream frame
//!   [`T2aResponse`], and the hex audio encoding ([`t2a::encode_audio`], [`t2a::decode_audio`]).
//! - [`stt`]: the `speech_to_text` form fields and `language` header parsed into [`SttParams`]
//!   (with [`SttFormat`] and [`TimestampLevel`]), [`stt::validate`], the fields to send
//!   upstream; the [`SttJson`] and [`SttVerboseJson`] bodies, the [`SttStreamFrame`]s, and the
//!   OpenAI-style [`SttError`] body.
//! - [`base_resp`]: the [`BaseResp`] envelope, the status [`codes`](base_resp::codes), and an
//!   honest HTTP status for each ([`http_status`](base_resp::http_status)).
//! - [`error`]: [`FieldError`] and [`Rule`], the field-level errors shared by the resources; a
//!   field error is answered as `base_resp` code 2013 (invalid parameters) in `t2a_v2`, and as
//!   an [`SttError`] with HTTP 400 in `speech_to_text`.
//!
//! Every wire type both serializes and deserializes, so a Rust client can reuse them. Validation
//! is a plain function per resource (`t2a::validate`, `stt::validate`), not re-exported at the
//! root. The multipart parsing of a `speech_to_text` request is the gateway's: it hands the text
//! parts over as `(name, value)` pairs.
//!
//! # Example
//!
//! ```
//! use tollgate_vendor_audio::t2a::{self, T2aRequest, T2aResponse};
//! use tollgate_vendor_audio::{BaseResp, Rule};
//!
//! let body = r#"{"model": "speech-2.8-hd", "text": "Hi", "voice_setting": {"voice_id": "Wise_Woman"},
//!                "subtitle_enable": true}"#;
//! let request: T2aRequest = serde_json::from_str(body)?;
//! let err = t2a::validate(&request).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule), ("subtitle_enable", Rule::Unavailable));
//!
//! let base = BaseResp::from(&err);
//! let answer = T2aResponse::error(base.status_code, base.status_msg);
//! assert_eq!(answer.base_resp.http_status(), 400);
//!
//! let params = tollgate_vendor_audio::SttParams::from_fields(
//!     [("model", "asr-1.0"), ("response_format", "vtt"), ("stream", "true")],
//!     Some("zh"),
//! )?;
//! let err = tollgate_vendor_audio::stt::validate(&params).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule), ("stream", Rule::NotStreamable));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod base_resp;
pub mod error;
pub mod stt;
pub mod t2a;

pub use base_resp::BaseResp;
pub use error::{FieldError, Rule};
pub use stt::{
    SttError, SttFormat, SttJson, SttParams, SttSegment, SttStreamFrame, SttVerboseJson, SttWord,
    TimestampLevel,
};
pub use t2a::{
    AudioSetting, ExtraInfo, StreamOptions, T2aData, T2aFormat, T2aRequest, T2aResponse,
    VoiceSetting,
};
