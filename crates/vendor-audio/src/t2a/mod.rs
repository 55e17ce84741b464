//! Speech synthesis in the vendor format: `POST /v1/t2a_v2` (docs/api.md §2.4, §4.3, §6, §8;
//! wire-formats §3).
//!
//! # Request
//!
//! A JSON [`T2aRequest`]:
//!
//! | Field | Type | Rules (checked by [`validate`]) |
//! |---|---|---|
//! | `model` | string | required, e.g. `speech-2.8-hd` |
//! | `text` | string | required; at most [`MAX_TEXT_CHARS`] characters, at most [`MAX_TEXT_CHARS_UNCOMPRESSED`] for `wav`, `flac`, `pcm` |
//! | `stream` | bool | `true` for SSE frames |
//! | `stream_options` | [`StreamOptions`] | `exclude_aggregated_audio` |
//! | `voice_setting` | [`VoiceSetting`] | `voice_id` required unless `timbre_weights` is given; `speed` 0.5–2, `vol` (0, 10], `pitch` −12–12 |
//! | `audio_setting` | [`AudioSetting`] | `sample_rate` in [`SAMPLE_RATES`], `bitrate` in [`BITRATES`], `format` a [`T2aFormat`] (`wav` not with `stream`), `channel` 1 or 2 |
//! | `pronunciation_dict`, `timbre_weights`, `language_boost`, `voice_modify` | JSON | accepted and passed through as given |
//! | `subtitle_enable` | bool | docs/api.md §2.4: not available; only `false` |
//! | `output_format` | string | docs/api.md §2.4: always `hex`; `url` is not offered |
//! | `aigc_watermark` | bool | |
//! | anything else | JSON | kept in `extra` and passed through |
//!
//! # Response
//!
//! wire-formats §3.2: a non-stream request is answered with one [`T2aResponse`] whose
//! `data.audio` is the whole audio in hex ([`encode_audio`], [`decode_audio`]),
//! `data.status` = [`STATUS_FINISHED`], and whose `extra_info.usage_characters` is the billed
//! character count (docs/api.md §2.4).
//!
//! wire-formats §3.3: a stream is a sequence of SSE `data:` frames, each a [`T2aResponse`]:
//! frames with `data.status` = [`STATUS_CHUNK`] carry incremental audio, and the last frame has
//! `data.status` = [`STATUS_FINISHED`] and the `extra_info` with the usage (docs/api.md §6). Unless the
//! request set `stream_options.exclude_aggregated_audio: true`, that last frame repeats the whole
//! audio ([`T2aRequest::excludes_aggregated_audio`]). An error can arrive mid-stream as a frame
//! whose `base_resp.status_code` is not 0.
//!
//! Errors use the [`BaseResp`](crate::BaseResp) envelope and its codes, see
//! [`base_resp`](crate::base_resp).
//!
//! # Example
//!
//! ```
//! use tollgate_vendor_audio::t2a::{
//!     decode_audio, validate, ExtraInfo, T2aData, T2aFormat, T2aRequest, T2aResponse,
//! };
//! use tollgate_vendor_audio::{BaseResp, Rule};
//!
//! let body = r#"{
//!     "model": "speech-2.8-hd",
//!     "text": "Welcome back.<#0.4#>Your order has shipped.",
//!     "stream": true,
//!     "voice_setting": {"voice_id": "English_Graceful_Lady", "speed": 1.0, "vol": 1.0, "pitch": 0},
//!     "audio_setting": {"sample_rate": 32000, "bitrate": 128000, "format": "mp3", "channel": 1},
//!     "pronunciation_dict": {"tone": ["SQL/sequel"]},
//!     "language_boost": "English"
//! }"#;
//! let request: T2aRequest = serde_json::from_str(body)?;
//! validate(&request)?;
//! assert!(request.is_stream());
//! assert_eq!(request.format(), T2aFormat::Mp3);
//!
//! // The stream: chunks, then the final frame with the usage.
//! let chunk = T2aResponse::success(T2aData::chunk(&[0xff, 0xfb, 0x90, 0x64]));
//! assert_eq!(chunk.data.as_ref().map(|d| d.audio.as_str()), Some("fffb9064"));
//! let mut last = T2aResponse::success(T2aData::finished(&[]));
//! last.extra_info = Some(ExtraInfo { usage_characters: Some(44), ..ExtraInfo::default() });
//! assert!(last.is_final());
//! assert_eq!(last.usage_characters(), Some(44));
//!
//! // A relay decodes each frame's audio; bad hex is an upstream fault.
//! let frame: T2aResponse = serde_json::from_str(&serde_json::to_string(&chunk)?)?;
//! let audio = frame.data.map(|d| d.audio).unwrap_or_default();
//! assert_eq!(decode_audio(&audio)?, vec![0xff, 0xfb, 0x90, 0x64]);
//!
//! // A request that breaks a rule is answered with status code 2013, naming the field.
//! let wav_stream: T2aRequest = serde_json::from_str(
//!     r#"{"model": "speech-2.8-hd", "text": "Hi", "stream": true,
//!         "voice_setting": {"voice_id": "Wise_Woman"}, "audio_setting": {"format": "wav"}}"#,
//! )?;
//! let err = validate(&wav_stream).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule), ("audio_setting.format", Rule::NotStreamable));
//! let resp = BaseResp::from(&err);
//! assert_eq!((resp.status_code, resp.http_status()), (2013, 400));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod audio;
mod frame;
mod request;
mod response;
mod rules;

pub use audio::{AudioHexError, check_audio, decode_audio, encode_audio};
pub use frame::{FrameError, T2aFrame};
pub use request::{
    AudioSetting, BITRATES, DEFAULT_SAMPLE_RATE, SAMPLE_RATES, StreamOptions, T2aFormat,
    T2aRequest, VoiceSetting,
};
pub use response::{ExtraInfo, STATUS_CHUNK, STATUS_FINISHED, T2aData, T2aResponse};
pub use rules::{
    CHANNELS, MAX_TEXT_CHARS, MAX_TEXT_CHARS_UNCOMPRESSED, MAX_VOL, OUTPUT_FORMAT_HEX, PITCH_RANGE,
    SPEED_RANGE, validate,
};
