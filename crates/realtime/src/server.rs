//! A vendor's event, vetted before it is relayed: it must be a JSON object with a `type`, and
//! the gateway reads what it bills by — the audio and text a response delivers, the usage its
//! `response.done` claims, an input transcription's usage, the session's formats.
//!
//! Unknown event types are relayed as they came (a vendor adds events; the client's SDK knows
//! them before the gateway does); an event the gateway bills by that does not read is refused,
//! never guessed at.

use std::borrow::Cow;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::audio::AudioFormat;

/// The vendor events the gateway reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerKind {
    /// `session.created`
    SessionCreated,
    /// `session.updated`
    SessionUpdated,
    /// `response.created`
    ResponseCreated,
    /// `response.output_audio.delta` (`response.audio.delta` before GA)
    AudioDelta,
    /// `response.output_text.delta` and `response.output_audio_transcript.delta` (and their
    /// beta names), and `response.function_call_arguments.delta`: text the model wrote
    TextDelta,
    /// `response.done`
    ResponseDone,
    /// `conversation.item.input_audio_transcription.completed`
    TranscriptionCompleted,
    /// `error`
    Error,
    /// `rate_limits.updated`
    RateLimits,
    /// Any other event: relayed as it is.
    Other,
}

impl ServerKind {
    /// The kind of an event `type`.
    pub fn of(name: &str) -> ServerKind {
        match name {
            "session.created" => ServerKind::SessionCreated,
            "session.updated" => ServerKind::SessionUpdated,
            "response.created" => ServerKind::ResponseCreated,
            "response.output_audio.delta" | "response.audio.delta" => ServerKind::AudioDelta,
            "response.output_text.delta"
            | "response.text.delta"
            | "response.output_audio_transcript.delta"
            | "response.audio_transcript.delta"
            | "response.function_call_arguments.delta" => ServerKind::TextDelta,
            "response.done" => ServerKind::ResponseDone,
            "conversation.item.input_audio_transcription.completed" => {
                ServerKind::TranscriptionCompleted
            }
            "error" => ServerKind::Error,
            "rate_limits.updated" => ServerKind::RateLimits,
            _ => ServerKind::Other,
        }
    }
}

/// Why a vendor's event was not relayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unvetted(pub String);

/// Token counts of one response, as the vendor's `response.done` claims them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct ResponseUsage {
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// The input by modality.
    pub input_token_details: InputDetails,
    /// The output by modality.
    pub output_token_details: OutputDetails,
}

/// A response's input tokens by modality; the cached ones a part of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct InputDetails {
    /// Text tokens, cached ones included.
    pub text_tokens: u64,
    /// Audio tokens, cached ones included.
    pub audio_tokens: u64,
    /// Image tokens, cached ones included.
    pub image_tokens: u64,
    /// Cached tokens of every modality.
    pub cached_tokens: u64,
    /// The cached tokens by modality.
    pub cached_tokens_details: CachedDetails,
}

/// Cached input tokens by modality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct CachedDetails {
    /// Cached text tokens.
    pub text_tokens: u64,
    /// Cached audio tokens.
    pub audio_tokens: u64,
    /// Cached image tokens.
    pub image_tokens: u64,
}

/// A response's output tokens by modality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct OutputDetails {
    /// Text tokens (a spoken answer's transcript included).
    pub text_tokens: u64,
    /// Audio tokens.
    pub audio_tokens: u64,
}

/// What an input transcription cost, as the vendor says: by tokens or by seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum TranscriptionUsage {
    /// Billed by tokens: input (audio and text) and output.
    Tokens {
        /// Input tokens.
        input: u64,
        /// Output tokens.
        output: u64,
    },
    /// Billed by the seconds of audio transcribed.
    Seconds(f64),
    /// Not said.
    #[default]
    Unsaid,
}

/// What one vendor event says that the gateway bills or relays by.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerEvent {
    /// Which event (`None`: an unknown one, relayed as it came).
    pub kind: Option<ServerKind>,
    /// The response it belongs to, where it says.
    pub response_id: Option<String>,
    /// Audio bytes a delta delivers, decoded.
    pub audio_bytes: u64,
    /// Bytes of text (UTF-8) a delta delivers; of a `session.created|updated`, the session as
    /// it states it (instructions, tools, settings: input the vendor reads).
    pub text_bytes: u64,
    /// The status of a finished response (`completed`, `cancelled`, `failed`, `incomplete`).
    pub status: Option<String>,
    /// A finished response's usage, when it says one.
    pub usage: Option<ResponseUsage>,
    /// An input transcription's usage.
    pub transcription: TranscriptionUsage,
    /// The session's model, as a `session.created|updated` names it.
    pub model: Option<String>,
    /// The session's output format, as a `session.created|updated` names it.
    pub output_format: Option<AudioFormat>,
    /// The session's input format, as a `session.created|updated` names it.
    pub input_format: Option<AudioFormat>,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    response_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(borrow)]
    response: Option<&'a RawValue>,
    #[serde(borrow)]
    session: Option<&'a RawValue>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ResponseFields<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    status: Option<Cow<'a, str>>,
    usage: Option<ResponseUsage>,
}

#[derive(Deserialize)]
struct TranscriptionFields {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    seconds: f64,
}

/// Vets one text frame of the vendor and reads what the gateway needs of it.
///
/// ```
/// use tollgate_realtime::server::{inspect, ServerKind};
///
/// let done = r#"{"type":"response.done","event_id":"e","response":{"id":"resp_1","status":"completed",
///   "usage":{"input_tokens":120,"output_tokens":900,"input_token_details":{"text_tokens":20,"audio_tokens":100,
///   "cached_tokens":10,"cached_tokens_details":{"text_tokens":10}},"output_token_details":{"text_tokens":60,"audio_tokens":840}}}}"#;
/// let event = inspect(done).unwrap();
/// assert_eq!(event.kind, Some(ServerKind::ResponseDone));
/// let usage = event.usage.unwrap();
/// assert_eq!((usage.input_token_details.audio_tokens, usage.output_token_details.audio_tokens), (100, 840));
/// assert!(inspect("[]").is_err());
/// ```
pub fn inspect(frame: &str) -> Result<ServerEvent, Unvetted> {
    let envelope: Envelope<'_> = serde_json::from_str(frame)
        .map_err(|e| Unvetted(format!("not an event with a type: {e}")))?;
    let kind = ServerKind::of(&envelope.kind);
    let mut event = ServerEvent {
        kind: (kind != ServerKind::Other).then_some(kind),
        response_id: envelope.response_id.map(Cow::into_owned),
        ..ServerEvent::default()
    };
    match kind {
        ServerKind::AudioDelta => {
            let delta = envelope
                .delta
                .ok_or_else(|| Unvetted("an audio delta without its 'delta'".into()))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(delta.as_bytes())
                .map_err(|e| Unvetted(format!("an audio delta that is not base64: {e}")))?;
            event.audio_bytes = bytes.len() as u64;
        }
        ServerKind::TextDelta => {
            event.text_bytes = envelope.delta.map_or(0, |delta| delta.len() as u64);
        }
        ServerKind::ResponseDone | ServerKind::ResponseCreated => {
            let raw = envelope
                .response
                .ok_or_else(|| Unvetted(format!("a {} without its response", envelope.kind)))?;
            let response: ResponseFields<'_> = serde_json::from_str(raw.get())
                .map_err(|e| Unvetted(format!("a response that does not read: {e}")))?;
            event.response_id = response.id.map(Cow::into_owned);
            event.status = response.status.map(Cow::into_owned);
            event.usage = response.usage;
        }
        ServerKind::TranscriptionCompleted => {
            if let Some(raw) = envelope.usage {
                let usage: TranscriptionFields = serde_json::from_str(raw.get()).map_err(|e| {
                    Unvetted(format!("a transcription usage that does not read: {e}"))
                })?;
                event.transcription = match usage.kind.as_str() {
                    "tokens" => TranscriptionUsage::Tokens {
                        input: usage.input_tokens,
                        output: usage.output_tokens,
                    },
                    "duration" => TranscriptionUsage::Seconds(usage.seconds),
                    other => {
                        return Err(Unvetted(format!("a transcription usage of type '{other}'")));
                    }
                };
            }
        }
        ServerKind::SessionCreated | ServerKind::SessionUpdated => {
            let raw = envelope
                .session
                .ok_or_else(|| Unvetted(format!("a {} without its session", envelope.kind)))?;
            read_session(raw, &mut event)?;
        }
        ServerKind::Error | ServerKind::RateLimits | ServerKind::Other => {}
    }
    Ok(event)
}

#[derive(Deserialize)]
struct SessionFields {
    model: Option<String>,
    audio: Option<serde_json::Value>,
}

fn read_session(raw: &RawValue, event: &mut ServerEvent) -> Result<(), Unvetted> {
    let session: SessionFields = serde_json::from_str(raw.get())
        .map_err(|e| Unvetted(format!("a session that does not read: {e}")))?;
    event.model = session.model;
    event.text_bytes = raw.get().len() as u64;
    let format = |direction: &str| -> Result<Option<AudioFormat>, Unvetted> {
        match session
            .audio
            .as_ref()
            .and_then(|audio| audio.get(direction))
            .and_then(|d| d.get("format"))
        {
            None => Ok(None),
            Some(value) => AudioFormat::from_json(value)
                .map(Some)
                .map_err(|p| Unvetted(format!("a session audio format that does not read: {p:?}"))),
        }
    };
    event.input_format = format("input")?;
    event.output_format = format("output")?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn deltas_count_what_they_deliver() {
        let audio = inspect(
            r#"{"type":"response.output_audio.delta","response_id":"r","item_id":"i","delta":"AAAAAA=="}"#,
        )
        .unwrap();
        assert_eq!(
            (audio.kind, audio.audio_bytes, audio.response_id.as_deref()),
            (Some(ServerKind::AudioDelta), 4, Some("r"))
        );
        let call = inspect(
            r#"{"type":"response.function_call_arguments.delta","response_id":"r","delta":"{\"city\":"}"#,
        )
        .unwrap();
        assert_eq!(
            (call.kind, call.text_bytes),
            (Some(ServerKind::TextDelta), 8)
        );
        let text = inspect(r#"{"type":"response.output_audio_transcript.delta","delta":"héllo"}"#)
            .unwrap();
        assert_eq!(text.text_bytes, 6);
        assert!(inspect(r#"{"type":"response.output_audio.delta","delta":"@@"}"#).is_err());
        assert!(inspect(r#"{"type":"response.output_audio.delta"}"#).is_err());
    }

    #[test]
    fn a_session_the_vendor_states_counts_as_text_it_reads() {
        let session = r#"{"model":"gpt-realtime","instructions":"Be brief."}"#;
        let created = inspect(&format!(
            r#"{{"type":"session.created","session":{session}}}"#
        ))
        .unwrap();
        assert_eq!(created.text_bytes, session.len() as u64);
        assert_eq!(created.model.as_deref(), Some("gpt-realtime"));
    }

    #[test]
    fn unknown_events_pass_and_unreadable_ones_do_not() {
        let unknown =
            inspect(r#"{"type":"output_audio_buffer.started","response_id":"r"}"#).unwrap();
        assert_eq!(unknown.kind, None);
        for bad in ["", "nonsense", "[]", r#"{"no":"type"}"#, r#"{"type":7}"#] {
            assert!(inspect(bad).is_err(), "{bad}");
        }
        assert!(inspect(r#"{"type":"response.done"}"#).is_err());
        assert!(
            inspect(r#"{"type":"response.done","response":{"usage":{"input_tokens":-1}}}"#)
                .is_err()
        );
    }

    #[test]
    fn a_transcription_says_its_usage_by_tokens_or_seconds() {
        let tokens = inspect(
            r#"{"type":"conversation.item.input_audio_transcription.completed","item_id":"i","content_index":0,"transcript":"hi",
                "usage":{"type":"tokens","input_tokens":40,"output_tokens":3,"total_tokens":43}}"#,
        )
        .unwrap();
        assert_eq!(
            tokens.transcription,
            TranscriptionUsage::Tokens {
                input: 40,
                output: 3
            }
        );
        let seconds = inspect(
            r#"{"type":"conversation.item.input_audio_transcription.completed","usage":{"type":"duration","seconds":2.5}}"#,
        )
        .unwrap();
        assert_eq!(seconds.transcription, TranscriptionUsage::Seconds(2.5));
    }

    #[test]
    fn a_session_event_names_its_model_and_formats() {
        let created = inspect(
            r#"{"type":"session.created","session":{"type":"realtime","model":"gpt-realtime",
                "audio":{"input":{"format":{"type":"audio/pcm","rate":24000}},"output":{"format":{"type":"audio/pcmu"}}}}}"#,
        )
        .unwrap();
        assert_eq!(created.model.as_deref(), Some("gpt-realtime"));
        assert_eq!(
            (created.input_format, created.output_format),
            (Some(AudioFormat::Pcm16), Some(AudioFormat::Pcmu))
        );
    }
}
