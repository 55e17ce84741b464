//! Transcription in the OpenAI-compatible format: `POST /v1/audio/transcriptions` (docs/api.md §2.2,
//! §2.3, §4.2, §6, §8; wire-formats §1.2).
//!
//! # Request
//!
//! A `multipart/form-data` body. The gateway reads the multipart stream; it hands the text parts
//! to [`TranscriptionParams::from_fields`] and checks the file part with [`validate_file`] (and
//! [`validate_duration`] once the length is known).
//!
//! | Field | Type | Rules |
//! |---|---|---|
//! | `model` | string | required; `asr-1.0` ([`MODEL`]) or an alias, see [`DEFAULT_ALIASES`] |
//! | `file` | file | required; one of [`ACCEPTED_CONTAINERS`] (not raw PCM); at most [`MAX_FILE_BYTES`] bytes and [`MAX_SECONDS`] seconds |
//! | `response_format` | [`TranscriptionFormat`] | `json` (default), `verbose_json`, `srt`, `vtt`, `text` |
//! | `language` | string | a hint (`zh`, `en`, `ja`, `yue`, ...); detected when absent |
//! | `prompt` | string | a style hint |
//! | `temperature` | number | within [`TEMPERATURE_RANGE`], 0 to 1 |
//! | `timestamp_granularities[]` | [`Granularity`], repeated | `word` gives per-word (per-character for CJK) times in `verbose_json`, `srt`, `vtt` |
//! | `stream` | boolean | SSE; only with `json` and `text` |
//!
//! **Unknown fields are ignored**: the SDKs send more fields over time (`include[]`,
//! `chunking_strategy`, ...). Parsing checks that each value is of its kind; [`validate`] checks
//! the rules between them. Both name the form field and the [`Rule`](crate::Rule).
//!
//! # Response
//!
//! The gateway turns the upstream's answer into a [`Transcript`] (with [`split_words`] when the
//! upstream has only sentence times, and [`speaker_label`] for the speakers) and renders it with
//! [`Transcript::render`]:
//!
//! | `response_format` | Body | `Content-Type` |
//! |---|---|---|
//! | `json` | [`JsonResponse`]: `text`, `duration`, `usage` | `application/json` |
//! | `verbose_json` | [`VerboseJsonResponse`]: `task`, `language`, `duration`, `text`, `segments` (with `speaker` `S1`, `S2`, ...), `words`, `n_speakers`, `usage` | `application/json` |
//! | `srt` | SubRip ([`Transcript::to_srt`]) | `text/plain; charset=utf-8` |
//! | `vtt` | WebVTT ([`Transcript::to_vtt`]) | `text/vtt; charset=utf-8` |
//! | `text` | the text and a line break | `text/plain; charset=utf-8` |
//!
//! With `stream: true` the answer is a stream of [`TranscriptionStreamEvent`]s (docs/api.md §6).
//! `usage.seconds` is the billed duration: the audio's length rounded up (docs/api.md §8).
//!
//! # Example
//!
//! ```
//! use tollgate_compat_audio::transcription::{
//!     default_alias, speaker_label, split_words, validate, Segment, Transcript,
//!     TranscriptionFormat, TranscriptionParams, TranscriptionStreamEvent, StreamUsage,
//! };
//! use tollgate_compat_audio::Rule;
//!
//! let params = TranscriptionParams::from_fields([
//!     ("model", "whisper-1"),
//!     ("response_format", "verbose_json"),
//!     ("timestamp_granularities[]", "word"),
//!     ("language", "en"),
//! ])?;
//! validate(&params)?;
//! assert_eq!(default_alias(&params.model), Some("asr-1.0"));
//! assert!(params.wants_words());
//!
//! // The upstream's answer, in the gateway's hands.
//! let mut transcript = Transcript::new("Hi all. Let's start.", 3.4);
//! transcript.language = params.language.clone();
//! transcript.segments = vec![
//!     Segment::new(0, 0.2, 1.1, "Hi all.").with_speaker(speaker_label("0")),
//!     Segment::new(1, 1.3, 2.6, "Let's start.").with_speaker(speaker_label("1")),
//! ];
//! for segment in &transcript.segments {
//!     transcript.words.extend(split_words(&segment.text, segment.start, segment.end));
//! }
//!
//! let body = transcript.to_verbose_json(4);
//! assert_eq!((body.language.as_str(), body.n_speakers), ("english", 2));
//! assert_eq!(body.segments[1].text, " Let's start.");
//! assert_eq!(body.segments[1].speaker, "S2");
//! assert_eq!(body.words.as_ref().map(Vec::len), Some(4));
//! let rendered = transcript.render(TranscriptionFormat::VerboseJson, 4);
//! assert_eq!(rendered.content_type, "application/json");
//!
//! // Streaming works with json and text only.
//! let srt_stream = TranscriptionParams::from_fields([
//!     ("model", "whisper-1"), ("response_format", "srt"), ("stream", "true"),
//! ])?;
//! let err = validate(&srt_stream).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule), ("stream", Rule::NotStreamable));
//!
//! let done = TranscriptionStreamEvent::done("Hi all. Let's start.", StreamUsage::new(4, 4));
//! assert_eq!(done.event_type(), "transcript.text.done");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod file;
mod language;
mod params;
mod response;
mod rules;
mod stream;
mod subtitle;
mod timing;
mod transcript;
mod words;

pub use file::{
    ACCEPTED_CONTAINERS, MAX_FILE_BYTES, MAX_SECONDS, container_from_filename, sniff_container,
    validate_duration, validate_file,
};
pub use language::{LANGUAGE_NAMES, language_name};
pub use params::{GRANULARITIES_FIELD, Granularity, TranscriptionFormat, TranscriptionParams};
pub use response::{
    DurationUsage, JsonResponse, USAGE_DURATION, VerboseJsonResponse, VerboseSegment,
};
pub use rules::{DEFAULT_ALIASES, MODEL, TEMPERATURE_RANGE, default_alias, validate};
pub use stream::{StreamUsage, TranscriptionStreamEvent};
pub use timing::{Segment, Word};
pub use transcript::{Rendered, Transcript, speaker_label};
pub use words::{split_words, words_from_segments};
