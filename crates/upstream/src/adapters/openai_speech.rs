//! The `openai-speech` channel format: OpenAI's `POST {base}/v1/audio/speech` with
//! `Authorization: Bearer` (wire-formats §1.1), and the servers that copy it (Kokoro, Piper and
//! Coqui front-ends, speaches). JSON in; the audio itself out, as the whole body or — the same
//! request, read as it arrives — streamed; a server that answers `text/event-stream` is read as
//! OpenAI's `speech.audio.delta` / `speech.audio.done` events. Errors are OpenAI-style bodies
//! with a real HTTP status. The vendor reports no characters: the gateway bills its own count.

use crate::common::client::{HttpClient, body_stream, is_event_stream, json_post, sse_events};
use crate::common::{Answer, openai_refusal};
use crate::seams::speech::{Audio, AudioChunk, ChunkStream, Synthesis, Synthesized, Synthesizer};
use crate::{Endpoint, UpstreamError};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use serde::Serialize;
use std::time::Instant;
use tollgate_compat_audio::SpeechStreamEvent;

/// The largest whole answer read: 4,096 characters of speech as 24 kHz PCM is about 15 MB.
const MAX_RESPONSE: usize = 64 << 20;

/// Bounds on an SSE answer (docs/decisions.md, "Upstream answers bounded").
const STREAM_LIMITS: tollgate_sse::Limits = tollgate_sse::Limits {
    max_event_bytes: 8 << 20,
    max_total_bytes: 128 << 20,
};

/// The `openai-speech` format behind the speech seam ([`Synthesizer`]).
///
/// A [`Synthesis`] becomes OpenAI's request field for field: the voice as the client named it
/// (stock names are the vendor's own), `response_format` the served format, `speed`,
/// `instructions`. A `t2a_v2` client's vendor-only fields have no counterpart and are not sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiSpeech;

/// The request body (wire-formats §1.1).
#[derive(Debug, Serialize)]
pub struct SpeechBody<'a> {
    /// The model id.
    pub model: &'a str,
    /// The text.
    pub input: &'a str,
    /// The voice.
    pub voice: &'a str,
    /// `mp3`, `wav`, `flac` or `pcm`.
    pub response_format: &'a str,
    /// Speed, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// Speaking instructions, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<&'a str>,
}

impl OpenAiSpeech {
    /// The request body for `synthesis`.
    pub fn body(synthesis: &Synthesis) -> SpeechBody<'_> {
        SpeechBody {
            model: &synthesis.model,
            input: &synthesis.text,
            voice: &synthesis.voice,
            response_format: synthesis.format.as_str(),
            speed: synthesis.speed,
            instructions: synthesis.instructions.as_deref(),
        }
    }

    async fn send(
        client: &HttpClient,
        endpoint: &Endpoint,
        synthesis: &Synthesis,
    ) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
        let body = serde_json::to_vec(&Self::body(synthesis))
            .map_err(|e| UpstreamError::Protocol(e.to_string()))?;
        let request = json_post(endpoint, "/v1/audio/speech", body)?;
        let response = client.send(request, &endpoint.timeouts).await?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(openai_refusal(response, endpoint).await)
    }
}

/// One `speech.audio.*` event as an audio piece; `None` for events that carry nothing.
fn event_chunk(data: &str) -> Option<Result<AudioChunk, UpstreamError>> {
    if data.trim().is_empty() || data.trim() == "[DONE]" {
        return None;
    }
    let chunk = match serde_json::from_str::<SpeechStreamEvent>(data) {
        Ok(SpeechStreamEvent::Delta { audio }) => match STANDARD.decode(audio.as_bytes()) {
            Ok(audio) => Ok(AudioChunk {
                audio: Audio::Bytes(Bytes::from(audio)),
                characters: None,
                last: false,
                t2a: None,
            }),
            Err(e) => Err(UpstreamError::Protocol(format!("speech.audio.delta: {e}"))),
        },
        Ok(SpeechStreamEvent::Done { .. }) => Ok(AudioChunk {
            audio: Audio::default(),
            characters: None,
            last: true,
            t2a: None,
        }),
        // An error object in the stream ends it with that error.
        Err(_) => Err(UpstreamError::refused(
            502,
            data.as_bytes(),
            crate::common::openai_error_message,
            None,
        )),
    };
    Some(chunk)
}

impl Synthesizer for OpenAiSpeech {
    fn synthesize<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Synthesis,
    ) -> BoxFuture<'a, Result<Answer<Synthesized>, UpstreamError>> {
        async move {
            let started = Instant::now();
            let response = Self::send(client, endpoint, request).await?;
            let audio = if is_event_stream(&response) {
                let mut audio = Vec::new();
                let mut events = std::pin::pin!(sse_events(
                    response.into_body(),
                    endpoint.timeouts.idle,
                    STREAM_LIMITS
                ));
                while let Some(event) = events.next().await {
                    match event_chunk(&event?.data) {
                        Some(chunk) => audio.extend_from_slice(&chunk?.audio.to_bytes()),
                        None => continue,
                    }
                }
                Bytes::from(audio)
            } else {
                HttpClient::read_body(response.into_body(), MAX_RESPONSE, &endpoint.timeouts)
                    .await?
            };
            if audio.is_empty() {
                return Err(UpstreamError::Protocol(
                    "the speech answer has no audio".into(),
                ));
            }
            Ok(Answer {
                body: Synthesized {
                    audio,
                    characters: None,
                    t2a: None,
                },
                upstream_time: started.elapsed(),
            })
        }
        .boxed()
    }

    fn stream<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Synthesis,
    ) -> BoxFuture<'a, Result<ChunkStream, UpstreamError>> {
        async move {
            let response = Self::send(client, endpoint, request).await?;
            let idle = endpoint.timeouts.idle;
            if is_event_stream(&response) {
                let chunks = sse_events(response.into_body(), idle, STREAM_LIMITS).filter_map(
                    |event| async move {
                        match event {
                            Err(e) => Some(Err(e)),
                            Ok(event) => event_chunk(&event.data),
                        }
                    },
                );
                let chunks: ChunkStream =
                    Box::pin(crate::common::client::until_first_error(chunks));
                return Ok(chunks);
            }
            // The body is the audio: each piece as it comes, and its clean end the last piece.
            let pieces = body_stream(response.into_body(), idle).map(|piece| {
                piece.map(|audio| AudioChunk {
                    audio: Audio::Bytes(audio),
                    characters: None,
                    last: false,
                    t2a: None,
                })
            });
            let end = futures_util::stream::once(async {
                Ok(AudioChunk {
                    audio: Audio::default(),
                    characters: None,
                    last: true,
                    t2a: None,
                })
            });
            let chunks: ChunkStream =
                Box::pin(crate::common::client::until_first_error(pieces.chain(end)));
            Ok(chunks)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seams::speech::AudioFormat;

    #[test]
    fn the_request_is_openais_field_for_field() {
        let synthesis = Synthesis {
            model: "kokoro".into(),
            text: "hello".into(),
            voice: "alloy".into(),
            default_voice: "English_Graceful_Lady".into(),
            speed: Some(1.25),
            format: AudioFormat::Wav,
            sample_rate: 32_000,
            instructions: None,
            stream: true,
            t2a: None,
        };
        let body = serde_json::to_value(OpenAiSpeech::body(&synthesis)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"model": "kokoro", "input": "hello", "voice": "alloy",
                "response_format": "wav", "speed": 1.25})
        );
    }

    #[test]
    fn events_decode_and_errors_end_the_stream() {
        let chunk = event_chunk(r#"{"type":"speech.audio.delta","audio":"AAEC"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(chunk.audio, Audio::Bytes(Bytes::from_static(&[0, 1, 2])));
        assert!(!chunk.last);
        let done = event_chunk(
            r#"{"type":"speech.audio.done","usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3}}"#,
        )
        .unwrap()
        .unwrap();
        assert!(done.last);
        assert!(event_chunk("[DONE]").is_none());
        let e = event_chunk(r#"{"error":{"message":"boom"}}"#)
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(e, UpstreamError::Status { status: 502, ref message, .. } if message.as_deref() == Some("boom"))
        );
    }
}
