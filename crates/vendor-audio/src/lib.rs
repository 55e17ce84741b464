//! # tollgate-vendor-audio
//!
//! The vendor audio wire formats, sans-IO: `t2a_v2` speech synthesis (SPEC §2.4, wire-formats
//! §3: hex audio, SSE frames ending with `data.status = 2`, `base_resp` status codes) and
//! `speech_to_text` recognition (SPEC §2.5, wire-formats §4: the multipart form, the `language`
//! header, `timestamp_level`, and the `{index, delta, finish, duration}` stream frames).
//!
//! This crate describes the formats and nothing else:
//!
//! - [`t2a`]: the request [`T2aRequest`] (with [`VoiceSetting`], [`AudioSetting`] and the
//!   pass-through fields), its rules and [`t2a::validate`], the response and stream frame
//!   [`T2aResponse`], and the hex audio encoding ([`t2a::encode_audio`], [`t2a::decode_audio`]).
//! - [`base_resp`]: the [`BaseResp`] envelope, the status [`codes`](base_resp::codes), and an
//!   honest HTTP status for each ([`http_status`](base_resp::http_status)).
//! - [`error`]: [`FieldError`] and [`Rule`], the field-level errors shared by the resources; a
//!   field error is answered as `base_resp` code 2013 (invalid parameters).
//!
//! The `speech_to_text` part (SPEC §2.5, wire-formats §4) is a later issue; it will be a module
//! next to [`t2a`], reusing [`error`] and [`base_resp`]. Until it arrives the gateway answers
//! `/v1/speech_to_text` with 501 in OpenAI's error shape.
//!
//! Every type both serializes and deserializes, so a Rust client can reuse them. Validation is a
//! plain function per resource (`t2a::validate`), not re-exported at the root.
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
//! # Ok::<(), serde_json::Error>(())
//! ```

pub mod base_resp;
pub mod error;
pub mod t2a;

pub use base_resp::BaseResp;
pub use error::{FieldError, Rule};
pub use t2a::{
    AudioSetting, ExtraInfo, StreamOptions, T2aData, T2aFormat, T2aRequest, T2aResponse,
    VoiceSetting,
};
