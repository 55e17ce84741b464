//! The speech-recognition seam: what the gateway asks of a recognition channel, whatever format
//! the channel speaks (docs/architecture.md, "Upstream seams").
//!
//! One adapter per channel format implements [`Recognizer`]: `stt` ([`crate::adapters::stt::Stt`]) and
//! `openai-transcription` ([`crate::adapters::openai_transcription::OpenAiTranscription`]). The gateway
//! translates each inbound form to a [`Recognition`] and the [`Transcription`] or the
//! [`TextDelta`]s back to the client's format.

use crate::common::Answer;
use crate::common::multipart::FilePart;
use crate::{Endpoint, HttpClient, UpstreamError};
use futures_util::Stream;
use futures_util::future::BoxFuture;
use std::pin::Pin;
use tollgate_vendor_audio::stt::{SttJson, SttVerboseJson};
use tollgate_vendor_audio::{SttParams, SttStreamFrame};

/// An audio file to recognise, as every recognition channel understands it (the file itself
/// travels beside it as a [`FilePart`]).
#[derive(Debug, Clone, Default)]
pub struct Recognition {
    /// The model id the channel knows.
    pub model: String,
    /// The spoken language (ISO-639-1), when the client knows it.
    pub language: Option<String>,
    /// Text that guides the recognition, for vendors that take it.
    pub prompt: Option<String>,
    /// Sampling temperature, for vendors that take it.
    pub temperature: Option<f64>,
    /// Whether word times are wanted.
    pub words: bool,
    /// Whether the text is wanted as a stream.
    pub stream: bool,
    /// The client's own `speech_to_text` form when it spoke that format: an `stt` channel sends
    /// it as it is and answers in the format it asked; other channels use the fields above.
    pub stt: Option<SttParams>,
}

/// A timed piece of a transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Its position.
    pub id: u32,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds.
    pub end: f64,
    /// Its text.
    pub text: String,
    /// The vendor's speaker id (`"0"`, `"1"`), when it tells speakers apart.
    pub speaker: Option<String>,
}

/// A timed word.
#[derive(Debug, Clone, PartialEq)]
pub struct Word {
    /// The word.
    pub word: String,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds.
    pub end: f64,
}

/// A whole recognition result.
#[derive(Debug, Clone, Default)]
pub struct Transcription {
    /// The text.
    pub text: String,
    /// The audio's duration in seconds as the upstream reports it — what is billed.
    pub duration: Option<f64>,
    /// The language the upstream heard.
    pub language: Option<String>,
    /// Sentences or segments, with times.
    pub segments: Vec<Segment>,
    /// Words with times, when they were asked for and the upstream gives them.
    pub words: Vec<Word>,
    /// The vendor's own body in the format the client's `speech_to_text` form asked, when the
    /// channel speaks `stt`: relayed as it came.
    pub stt: Option<SttBody>,
}

/// A piece of a streamed recognition.
#[derive(Debug, Clone, Default)]
pub struct TextDelta {
    /// Text to append to the pieces before.
    pub text: String,
    /// The stream's last piece.
    pub last: bool,
    /// On the last piece: the audio's duration in seconds as the upstream reports it.
    pub duration: Option<f64>,
    /// The vendor's own frame, when the channel speaks `stt`.
    pub stt: Option<SttStreamFrame>,
}

/// Text pieces as they arrive; an `Err` is the last item, and a stream that ends without a
/// `last` piece was cut.
pub type DeltaStream = Pin<Box<dyn Stream<Item = Result<TextDelta, UpstreamError>> + Send>>;

/// A recognition channel format.
pub trait Recognizer: Send + Sync {
    /// The whole result at once.
    fn transcribe<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Recognition,
        file: FilePart<'a>,
    ) -> BoxFuture<'a, Result<Answer<Transcription>, UpstreamError>>;

    /// The text as the upstream produces it; returns once the response head has arrived.
    fn stream<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Recognition,
        file: FilePart<'a>,
    ) -> BoxFuture<'a, Result<DeltaStream, UpstreamError>>;
}

/// A whole recognition result of an `stt` channel, in the format that was asked: the body
/// [`Transcription::stt`] relays to a `speech_to_text` client as it came.
#[derive(Debug, Clone)]
pub enum SttBody {
    /// `response_format=json`.
    Json(SttJson),
    /// `response_format=verbose_json`.
    Verbose(SttVerboseJson),
    /// `srt` or `vtt`: the document itself.
    Subtitles(String),
}
