//! The `openai-transcription` channel format: OpenAI's `POST {base}/v1/audio/transcriptions`
//! with `Authorization: Bearer` (wire-formats §1.2), and the servers that copy it
//! (faster-whisper servers such as speaches, whisper.cpp's server). A multipart form whose file
//! part streams from the caller's source; a whole result asked as `verbose_json` (text,
//! duration, segments, words) — or `json` from a server that refuses `verbose_json` — and a
//! stream as OpenAI's `transcript.text.delta` / `transcript.text.done` events (a server that
//! answers a stream request with one JSON body is read as one piece). Errors are OpenAI-style
//! bodies with a real HTTP status.
//!
//! Billing needs the audio's duration: `verbose_json` has it, `json` and streams carry it in
//! `usage {type: "duration", seconds}` when the server reports it; when it does not, the gateway
//! bills the duration it probed from the file.

use crate::common::client::{HttpClient, bearer_request, is_event_stream, sse_events};
use crate::common::multipart::{FilePart, form};
use crate::common::{Answer, openai_refusal};
use crate::seams::recognition::{
    DeltaStream, Recognition, Recognizer, Segment, TextDelta, Transcription, Word,
};
use crate::{Endpoint, UpstreamError};
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use http::{Method, header};
use serde::Deserialize;
use std::time::Instant;

/// The largest whole answer read: a 500 s transcript with word timestamps is well under this.
const MAX_RESPONSE: usize = 16 << 20;

/// Bounds on a streamed answer (docs/decisions.md, "Upstream answers bounded").
const STREAM_LIMITS: tollgate_sse::Limits = tollgate_sse::Limits {
    max_event_bytes: 8 << 20,
    max_total_bytes: 64 << 20,
};

/// The `openai-transcription` format behind the recognition seam ([`Recognizer`]).
///
/// A [`Recognition`] becomes OpenAI's form: `model`, `language`, `prompt`, `temperature`,
/// `timestamp_granularities[]` (`segment`, and `word` when word times are wanted), `stream`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiTranscription;

impl OpenAiTranscription {
    /// The form's text fields for `recognition`, asking `response_format`.
    pub fn fields(recognition: &Recognition, response_format: &str) -> Vec<(&'static str, String)> {
        let mut fields = vec![
            ("model", recognition.model.clone()),
            ("response_format", response_format.to_owned()),
        ];
        if let Some(language) = recognition.language.as_deref().filter(|l| !l.is_empty()) {
            fields.push(("language", language.to_owned()));
        }
        if let Some(prompt) = &recognition.prompt {
            fields.push(("prompt", prompt.clone()));
        }
        if let Some(temperature) = recognition.temperature {
            fields.push(("temperature", temperature.to_string()));
        }
        if response_format == "verbose_json" {
            fields.push(("timestamp_granularities[]", "segment".to_owned()));
            if recognition.words {
                fields.push(("timestamp_granularities[]", "word".to_owned()));
            }
        }
        if recognition.stream {
            fields.push(("stream", "true".to_owned()));
        }
        fields
    }

    async fn send(
        client: &HttpClient,
        endpoint: &Endpoint,
        fields: &[(&str, String)],
        file: FilePart<'_>,
    ) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
        let form = form(fields, file);
        let request = bearer_request(endpoint, Method::POST, "/v1/audio/transcriptions")
            .header(header::CONTENT_TYPE, form.content_type)
            .header(header::CONTENT_LENGTH, form.content_length)
            .body(form.body)
            .map_err(|e| UpstreamError::Config(e.to_string()))?;
        let response = client.send(request, &endpoint.timeouts).await?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(openai_refusal(response, endpoint).await)
    }
}

/// A `verbose_json` or `json` answer, read leniently: servers differ in what they add.
#[derive(Debug, Deserialize)]
struct Answered {
    #[serde(default)]
    text: String,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    language: Option<String>,
    #[serde(default)]
    segments: Vec<AnsweredSegment>,
    #[serde(default)]
    words: Option<Vec<AnsweredWord>>,
    #[serde(default)]
    usage: Option<AnsweredUsage>,
}

#[derive(Debug, Deserialize)]
struct AnsweredSegment {
    #[serde(default)]
    id: u32,
    start: f64,
    end: f64,
    text: String,
    #[serde(default)]
    speaker: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AnsweredWord {
    word: String,
    start: f64,
    end: f64,
}

/// `usage` of a recognition: `{type: "duration", seconds}` for audio-billed models.
#[derive(Debug, Deserialize)]
struct AnsweredUsage {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    seconds: Option<f64>,
}

impl AnsweredUsage {
    fn seconds(usage: Option<&AnsweredUsage>) -> Option<f64> {
        usage
            .filter(|u| u.kind.as_deref().is_none_or(|k| k == "duration"))
            .and_then(|u| u.seconds)
    }
}

/// Whisper's segments start with a space: the seam's text does not.
fn transcription(answer: Answered) -> Transcription {
    Transcription {
        text: answer.text.trim().to_owned(),
        duration: answer
            .duration
            .or_else(|| AnsweredUsage::seconds(answer.usage.as_ref()))
            .filter(|d| d.is_finite() && *d >= 0.0),
        language: answer.language,
        segments: answer
            .segments
            .into_iter()
            .map(|s| Segment {
                id: s.id,
                start: s.start,
                end: s.end,
                text: s.text.trim().to_owned(),
                speaker: s.speaker,
            })
            .collect(),
        words: answer
            .words
            .unwrap_or_default()
            .into_iter()
            .map(|w| Word {
                word: w.word.trim().to_owned(),
                start: w.start,
                end: w.end,
            })
            .collect(),
        stt: None,
    }
}

/// One streamed event as a text piece; `None` for events that carry nothing.
fn event_delta(data: &str) -> Option<Result<TextDelta, UpstreamError>> {
    #[derive(Deserialize)]
    struct Event {
        #[serde(rename = "type", default)]
        kind: String,
        #[serde(default)]
        delta: String,
        #[serde(default)]
        usage: Option<AnsweredUsage>,
        #[serde(default)]
        error: Option<serde_json::Value>,
    }
    let data = data.trim();
    if data.is_empty() || data == "[DONE]" {
        return None;
    }
    let event = match serde_json::from_str::<Event>(data) {
        Ok(event) if event.error.is_none() => event,
        _ => {
            return Some(Err(UpstreamError::refused(
                502,
                data.as_bytes(),
                crate::common::openai_error_message,
                None,
            )));
        }
    };
    match event.kind.as_str() {
        "transcript.text.delta" => Some(Ok(TextDelta {
            text: event.delta,
            ..TextDelta::default()
        })),
        "transcript.text.done" => Some(Ok(TextDelta {
            last: true,
            duration: AnsweredUsage::seconds(event.usage.as_ref()),
            ..TextDelta::default()
        })),
        _ => None,
    }
}

impl Recognizer for OpenAiTranscription {
    fn transcribe<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Recognition,
        file: FilePart<'a>,
    ) -> BoxFuture<'a, Result<Answer<Transcription>, UpstreamError>> {
        async move {
            let started = Instant::now();
            let verbose = Self::fields(request, "verbose_json");
            let response = match Self::send(client, endpoint, &verbose, file).await {
                // Some models (and servers) answer only `json`: a refusal did no work, so ask
                // again in that format.
                Err(UpstreamError::Status {
                    status: 400,
                    message,
                    detail,
                    ..
                }) if message
                    .as_deref()
                    .unwrap_or(detail.as_str())
                    .contains("response_format") =>
                {
                    Self::send(client, endpoint, &Self::fields(request, "json"), file).await?
                }
                other => other?,
            };
            let bytes =
                HttpClient::read_body(response.into_body(), MAX_RESPONSE, &endpoint.timeouts)
                    .await?;
            let answer: Answered = serde_json::from_slice(&bytes)
                .map_err(|e| UpstreamError::Protocol(format!("transcription response: {e}")))?;
            Ok(Answer {
                body: transcription(answer),
                upstream_time: started.elapsed(),
            })
        }
        .boxed()
    }

    fn stream<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Recognition,
        file: FilePart<'a>,
    ) -> BoxFuture<'a, Result<DeltaStream, UpstreamError>> {
        async move {
            let response =
                Self::send(client, endpoint, &Self::fields(request, "json"), file).await?;
            if !is_event_stream(&response) {
                // A server that does not stream answers the whole text: one piece, then the end.
                let bytes =
                    HttpClient::read_body(response.into_body(), MAX_RESPONSE, &endpoint.timeouts)
                        .await?;
                let answer: Answered = serde_json::from_slice(&bytes)
                    .map_err(|e| UpstreamError::Protocol(format!("transcription response: {e}")))?;
                let whole = transcription(answer);
                let pieces = [
                    Ok(TextDelta {
                        text: whole.text,
                        ..TextDelta::default()
                    }),
                    Ok(TextDelta {
                        last: true,
                        duration: whole.duration,
                        ..TextDelta::default()
                    }),
                ];
                let deltas: DeltaStream = Box::pin(futures_util::stream::iter(pieces));
                return Ok(deltas);
            }
            let events = sse_events(response.into_body(), endpoint.timeouts.idle, STREAM_LIMITS);
            let deltas = events.filter_map(|event| async move {
                match event {
                    Err(e) => Some(Err(e)),
                    Ok(event) => event_delta(&event.data),
                }
            });
            let deltas: DeltaStream = Box::pin(crate::common::client::until_first_error(deltas));
            Ok(deltas)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_follow_openais_form() {
        let recognition = Recognition {
            model: "Systran/faster-whisper-tiny.en".into(),
            language: Some("en".into()),
            words: true,
            ..Recognition::default()
        };
        let fields = OpenAiTranscription::fields(&recognition, "verbose_json");
        let fields: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
        assert_eq!(
            fields,
            [
                ("model", "Systran/faster-whisper-tiny.en"),
                ("response_format", "verbose_json"),
                ("language", "en"),
                ("timestamp_granularities[]", "segment"),
                ("timestamp_granularities[]", "word"),
            ]
        );
    }

    #[test]
    fn answers_are_read_leniently_and_the_duration_found_where_it_is() {
        let verbose: Answered = serde_json::from_str(
            r#"{"task":"transcribe","language":"english","duration":2.5,"text":" Hello there.",
                "segments":[{"id":0,"seek":0,"start":0.0,"end":2.5,"text":" Hello there.","tokens":[1]}],
                "words":[{"word":" Hello","start":0.0,"end":0.9},{"word":" there.","start":1.0,"end":2.4}]}"#,
        )
        .unwrap();
        let t = transcription(verbose);
        assert_eq!(t.text, "Hello there.");
        assert_eq!(t.duration, Some(2.5));
        assert_eq!(t.segments[0].text, "Hello there.");
        assert_eq!(t.words[1].word, "there.");
        let json: Answered =
            serde_json::from_str(r#"{"text":"Hi","usage":{"type":"duration","seconds":3}}"#)
                .unwrap();
        assert_eq!(transcription(json).duration, Some(3.0));
        let tokens: Answered =
            serde_json::from_str(r#"{"text":"Hi","usage":{"type":"tokens","input_tokens":3}}"#)
                .unwrap();
        assert_eq!(transcription(tokens).duration, None);
    }

    #[test]
    fn stream_events() {
        let d = event_delta(r#"{"type":"transcript.text.delta","delta":"Hel"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(d.text, "Hel");
        let done = event_delta(
            r#"{"type":"transcript.text.done","text":"Hello","usage":{"type":"duration","seconds":4}}"#,
        )
        .unwrap()
        .unwrap();
        assert!(done.last);
        assert_eq!(done.duration, Some(4.0));
        assert!(event_delta(r#"{"type":"transcript.text.segment"}"#).is_none());
        assert!(
            event_delta(r#"{"error":{"message":"no"}}"#)
                .unwrap()
                .is_err()
        );
    }
}
