//! The speech-synthesis seam: what the gateway asks of a speech channel, whatever format the
//! channel speaks (docs/architecture.md, "Upstream seams").
//!
//! One adapter per channel format implements [`Synthesizer`]: `t2a` ([`crate::adapters::t2a::T2a`]) and
//! `openai-speech` ([`crate::adapters::openai_speech::OpenAiSpeech`]). The gateway translates each inbound
//! format to a [`Synthesis`], and [`Synthesized`] audio or a stream of [`AudioChunk`]s back to the
//! client's format; an adapter translates a [`Synthesis`] to its vendor's request and its vendor's
//! answer to these types, and nothing else.

use crate::common::Answer;
use crate::{Endpoint, HttpClient, UpstreamError};
use bytes::Bytes;
use futures_util::Stream;
use futures_util::future::BoxFuture;
use std::pin::Pin;
pub use tollgate_compat_audio::AudioFormat;
use tollgate_vendor_audio::{T2aRequest, T2aResponse};

/// A text to speak, as every speech channel understands it.
#[derive(Debug, Clone)]
pub struct Synthesis {
    /// The model id the channel knows.
    pub model: String,
    /// The text.
    pub text: String,
    /// The voice the client asked for: an OpenAI stock name (`alloy`), a vendor voice id, or a
    /// custom voice's id.
    pub voice: String,
    /// The voice a vendor without OpenAI's stock voices speaks in their place.
    pub default_voice: String,
    /// Speed, 1.0 when absent.
    pub speed: Option<f64>,
    /// The audio format wanted.
    pub format: AudioFormat,
    /// The sample rate wanted, where the vendor lets it be chosen.
    pub sample_rate: u32,
    /// Speaking instructions, for vendors that take them.
    pub instructions: Option<String>,
    /// Whether the answer is wanted as a stream.
    pub stream: bool,
    /// The client's own `t2a_v2` request when it spoke that format: a `t2a` channel sends it as
    /// it is (its every vendor field kept), other channels use the fields above.
    pub t2a: Option<T2aRequest>,
}

/// A piece of a streamed synthesis.
#[derive(Debug, Clone)]
pub struct AudioChunk {
    /// New audio (never a repeat of audio sent before; may be empty).
    pub audio: Bytes,
    /// Characters the upstream reported billing, when it reports them.
    pub characters: Option<u64>,
    /// The stream's last piece.
    pub last: bool,
    /// The vendor's own frame, when the channel speaks `t2a`: relayed as it came to a `t2a_v2`
    /// client (the last frame may repeat the whole audio that `audio` leaves out).
    pub t2a: Option<T2aResponse>,
}

/// A whole synthesis.
#[derive(Debug, Clone)]
pub struct Synthesized {
    /// The audio.
    pub audio: Bytes,
    /// Characters the upstream reported billing, when it reports them.
    pub characters: Option<u64>,
    /// The vendor's own answer, when the channel speaks `t2a`.
    pub t2a: Option<T2aResponse>,
}

/// Audio pieces as they arrive; an `Err` is the last item, and a stream that ends without a
/// `last` piece was cut.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<AudioChunk, UpstreamError>> + Send>>;

/// A speech channel format.
pub trait Synthesizer: Send + Sync {
    /// The whole audio at once.
    fn synthesize<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Synthesis,
    ) -> BoxFuture<'a, Result<Answer<Synthesized>, UpstreamError>>;

    /// The audio as the upstream produces it; returns once the response head has arrived. A
    /// format the vendor cannot stream comes whole, as one last piece.
    fn stream<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Synthesis,
    ) -> BoxFuture<'a, Result<ChunkStream, UpstreamError>>;
}
