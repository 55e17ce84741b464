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
use tollgate_vendor_audio::t2a::T2aFrame;
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
    pub audio: Audio,
    /// Characters the upstream reported billing, when it reports them.
    pub characters: Option<u64>,
    /// The stream's last piece.
    pub last: bool,
    /// The vendor's own frame, when the channel speaks `t2a`: relayed to a `t2a_v2` client with
    /// its audio as it came (the last frame may repeat the whole audio that `audio` leaves out).
    pub t2a: Option<T2aFrame>,
}

/// Audio as the channel delivered it, converted only for a client that wants it otherwise: a
/// `t2a` frame's hex goes to a `t2a_v2` client as it came, and is decoded only for a client
/// that wants bytes (docs/benchmarks.md, "Lean streams").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Audio {
    /// The audio itself.
    Bytes(Bytes),
    /// The audio as hex of whole bytes, checked (a `t2a` frame's `data.audio`).
    Hex(Bytes),
}

impl Default for Audio {
    fn default() -> Self {
        Audio::Bytes(Bytes::new())
    }
}

/// Audio decoded from hex this many bytes at a time when it is written as base64: a multiple
/// of 3, so that the pieces' base64 joins into the whole's.
const BASE64_BLOCK: usize = 3 * 1024;

impl Audio {
    /// Bytes of audio.
    pub fn len(&self) -> usize {
        match self {
            Audio::Bytes(audio) => audio.len(),
            Audio::Hex(hex) => hex.len() / 2,
        }
    }

    /// No audio.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The audio bytes: hex is decoded (a copy).
    pub fn to_bytes(&self) -> Bytes {
        match self {
            Audio::Bytes(audio) => audio.clone(),
            // Checked when the frame was read; a failure cannot be, and would be no audio.
            Audio::Hex(hex) => hex::decode(hex).map(Bytes::from).unwrap_or_default(),
        }
    }

    /// The audio as lower-case hex: bytes are encoded (a copy).
    pub fn to_hex(&self) -> Bytes {
        match self {
            Audio::Bytes(audio) => Bytes::from(hex::encode(audio)),
            Audio::Hex(hex) => hex.clone(),
        }
    }

    /// Appends the audio to `out` as standard base64 with padding; hex is decoded a block at a
    /// time on the way, never whole.
    pub fn push_base64(&self, out: &mut String) {
        use base64::Engine;
        let engine = &base64::engine::general_purpose::STANDARD;
        match self {
            Audio::Bytes(audio) => engine.encode_string(audio, out),
            Audio::Hex(hex) => {
                let mut block = [0u8; BASE64_BLOCK];
                for digits in hex.chunks(2 * BASE64_BLOCK) {
                    let block = &mut block[..digits.len() / 2];
                    if hex::decode_to_slice(digits, block).is_ok() {
                        engine.encode_string(block, out);
                    }
                }
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    #[test]
    fn hex_audio_converts_as_its_bytes_do_across_block_edges() {
        let engine = &base64::engine::general_purpose::STANDARD;
        for len in [
            0,
            1,
            2,
            3,
            BASE64_BLOCK - 1,
            BASE64_BLOCK,
            BASE64_BLOCK + 1,
            3 * BASE64_BLOCK + 2,
        ] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 256) as u8).collect();
            let raw = Audio::Bytes(Bytes::from(bytes.clone()));
            let hex = Audio::Hex(Bytes::from(hex::encode(&bytes)));
            assert_eq!((raw.len(), hex.len()), (len, len));
            assert_eq!(hex.to_bytes(), raw.to_bytes());
            assert_eq!(raw.to_hex(), hex.to_hex());
            let (mut from_raw, mut from_hex) = (String::from("x"), String::from("x"));
            raw.push_base64(&mut from_raw);
            hex.push_base64(&mut from_hex);
            assert_eq!(
                from_hex,
                format!("x{}", engine.encode(&bytes)),
                "{len} bytes"
            );
            assert_eq!(from_raw, from_hex);
        }
    }
}
