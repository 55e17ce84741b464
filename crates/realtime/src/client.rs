//! A client's event, inspected before it is relayed (docs/api.md, "Live voice sessions"): the
//! rules it must keep, and what it measures — the audio, text and images it puts into the
//! conversation, which bound what a response may be charged.
//!
//! The gateway relays the event's own bytes; it rebuilds none. It reads the few fields it must
//! see with borrowed types, so an audio append of megabytes is decoded once (to check it and
//! count it) and never copied into a tree of values.

use std::borrow::Cow;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::value::RawValue;
use tollgate_field_error::{FieldError, Rule};

use crate::audio::{AudioFormat, FormatProblem};

/// The client events of the GA protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKind {
    /// `session.update`
    SessionUpdate,
    /// `input_audio_buffer.append`
    AudioAppend,
    /// `input_audio_buffer.commit`
    AudioCommit,
    /// `input_audio_buffer.clear`
    AudioClear,
    /// `output_audio_buffer.clear` (WebRTC and SIP sessions)
    OutputAudioClear,
    /// `conversation.item.create`
    ItemCreate,
    /// `conversation.item.retrieve`
    ItemRetrieve,
    /// `conversation.item.truncate`
    ItemTruncate,
    /// `conversation.item.delete`
    ItemDelete,
    /// `response.create`
    ResponseCreate,
    /// `response.cancel`
    ResponseCancel,
}

impl ClientKind {
    /// Every client event.
    pub const ALL: [ClientKind; 11] = [
        ClientKind::SessionUpdate,
        ClientKind::AudioAppend,
        ClientKind::AudioCommit,
        ClientKind::AudioClear,
        ClientKind::OutputAudioClear,
        ClientKind::ItemCreate,
        ClientKind::ItemRetrieve,
        ClientKind::ItemTruncate,
        ClientKind::ItemDelete,
        ClientKind::ResponseCreate,
        ClientKind::ResponseCancel,
    ];

    /// The event's `type`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ClientKind::SessionUpdate => "session.update",
            ClientKind::AudioAppend => "input_audio_buffer.append",
            ClientKind::AudioCommit => "input_audio_buffer.commit",
            ClientKind::AudioClear => "input_audio_buffer.clear",
            ClientKind::OutputAudioClear => "output_audio_buffer.clear",
            ClientKind::ItemCreate => "conversation.item.create",
            ClientKind::ItemRetrieve => "conversation.item.retrieve",
            ClientKind::ItemTruncate => "conversation.item.truncate",
            ClientKind::ItemDelete => "conversation.item.delete",
            ClientKind::ResponseCreate => "response.create",
            ClientKind::ResponseCancel => "response.cancel",
        }
    }

    /// The kind a `type` names.
    pub fn named(name: &str) -> Option<ClientKind> {
        ClientKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// A rule a client's event broke; its code is the `error.code` of the gateway's `error` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRule {
    /// The frame is not a JSON object.
    NotJson,
    /// The object has no string `type`.
    MissingType,
    /// A field the event needs is missing.
    Required,
    /// The `type` is no client event of the protocol.
    UnknownEvent,
    /// A field has the wrong JSON type.
    InvalidType,
    /// Audio that is not base64.
    InvalidBase64,
    /// Audio over the gateway's frame limit.
    TooLarge,
    /// Audio in another format than the session's.
    WrongAudioFormat,
    /// A format the API does not know.
    UnknownAudioFormat,
    /// A `session.update` naming another model than the session's.
    ModelChange,
}

impl Rule for ClientRule {
    fn code(&self) -> &'static str {
        match self {
            ClientRule::NotJson => "invalid_json",
            ClientRule::MissingType => "missing_type",
            ClientRule::Required => "missing_field",
            ClientRule::UnknownEvent => "unknown_event",
            ClientRule::InvalidType => "invalid_type",
            ClientRule::InvalidBase64 => "invalid_base64",
            ClientRule::TooLarge => "frame_too_large",
            ClientRule::WrongAudioFormat => "wrong_audio_format",
            ClientRule::UnknownAudioFormat => "unknown_audio_format",
            ClientRule::ModelChange => "model_cannot_change",
        }
    }
}

/// A broken rule of a client's event.
pub type ClientError = FieldError<ClientRule>;

/// What the session is, as far as a client's event is judged by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The public model the session was opened for.
    pub model: String,
    /// The format of the audio the client sends.
    pub input_format: AudioFormat,
    /// The most audio bytes one event may carry (decoded).
    pub max_audio_bytes: usize,
}

/// What a client's event puts into the conversation, as the gateway measured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Measured {
    /// Audio bytes, decoded, in the session's input format.
    pub audio_bytes: u64,
    /// Bytes of text (UTF-8): messages, transcripts given, a tool's output and arguments, and
    /// a `session.update`'s whole session (instructions, tools and every setting the vendor may
    /// read as input). A token covers at least a byte, so they bound the text's tokens.
    pub text_bytes: u64,
    /// Images.
    pub images: u64,
}

/// A session's settings a `session.update` changes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionChange {
    /// The input audio format, when it is set.
    pub input_format: Option<AudioFormat>,
    /// The output audio format, when it is set.
    pub output_format: Option<AudioFormat>,
    /// The voice, when it is set.
    pub voice: Option<String>,
    /// Where the event names the voice by a name (the GA or the beta spelling; empty when it
    /// names none, or names a custom voice by its object).
    pub voice_path: &'static [&'static str],
    /// The input transcription, when it is set: its model, or `None` for none. The model's
    /// path in the event is [`SessionChange::transcription_path`].
    pub transcription: Option<Option<String>>,
    /// Where the event names the transcription model (the GA or the beta spelling; empty
    /// when it names none).
    pub transcription_path: &'static [&'static str],
}

/// A client's event that keeps the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientEvent {
    /// Which event.
    pub kind: ClientKind,
    /// The client's `event_id`, echoed in an error about it.
    pub event_id: Option<String>,
    /// What it adds to the conversation.
    pub measured: Measured,
    /// What it changes of the session (`session.update` only).
    pub change: Option<SessionChange>,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    event_id: Option<Cow<'a, str>>,
    /// `input_audio_buffer.append`'s base64, left unread until the kind is known.
    #[serde(borrow)]
    audio: Option<&'a RawValue>,
    #[serde(borrow)]
    session: Option<&'a RawValue>,
    #[serde(borrow)]
    item: Option<&'a RawValue>,
    #[serde(borrow)]
    response: Option<&'a RawValue>,
}

/// Inspects one text frame of a client against `session`.
///
/// ```
/// use tollgate_realtime::audio::AudioFormat;
/// use tollgate_realtime::client::{inspect, ClientKind, Session};
///
/// let session = Session { model: "gpt-realtime".into(), input_format: AudioFormat::Pcm16, max_audio_bytes: 1 << 20 };
/// let append = r#"{"type":"input_audio_buffer.append","audio":"AAABAA=="}"#;
/// let event = inspect(append, &session).unwrap();
/// assert_eq!((event.kind, event.measured.audio_bytes), (ClientKind::AudioAppend, 4));
/// let err = inspect(r#"{"type":"response.explode"}"#, &session).unwrap_err();
/// assert_eq!((err.field.as_str(), err.message.as_str()), ("type", "'response.explode' is not a client event of the Realtime API"));
/// ```
pub fn inspect(frame: &str, session: &Session) -> Result<ClientEvent, ClientError> {
    let envelope: Envelope<'_> = serde_json::from_str(frame).map_err(|e| {
        FieldError::new(
            "",
            ClientRule::NotJson,
            format!("an event must be a JSON object: {e}"),
        )
    })?;
    let Some(name) = envelope.kind.as_deref() else {
        return Err(FieldError::new(
            "type",
            ClientRule::MissingType,
            "an event must name its 'type'",
        ));
    };
    let kind = ClientKind::named(name).ok_or_else(|| {
        FieldError::new(
            "type",
            ClientRule::UnknownEvent,
            format!("'{name}' is not a client event of the Realtime API"),
        )
    })?;
    let mut measured = Measured::default();
    let mut change = None;
    match kind {
        ClientKind::AudioAppend => {
            let audio = envelope.audio.ok_or_else(|| required("audio"))?;
            measured.audio_bytes = audio_bytes(audio, "audio", session)?;
        }
        ClientKind::SessionUpdate => {
            let raw = envelope.session.ok_or_else(|| required("session"))?;
            change = Some(session_change(raw, session)?);
            measured.text_bytes = raw.get().len() as u64;
        }
        ClientKind::ItemCreate => {
            let item = envelope.item.ok_or_else(|| required("item"))?;
            measure_item(item, "item", session, &mut measured)?;
        }
        ClientKind::ResponseCreate => {
            if let Some(response) = envelope.response {
                measure_response(response, session, &mut measured)?;
            }
        }
        _ => {}
    }
    Ok(ClientEvent {
        kind,
        event_id: envelope.event_id.map(Cow::into_owned),
        measured,
        change,
    })
}

/// The `event_id` of a frame [`inspect`] refused, to echo in the error about it (`None` for a
/// frame that is no JSON object, or names none).
///
/// ```
/// use tollgate_realtime::client::event_id;
///
/// assert_eq!(event_id(r#"{"type":"no.such","event_id":"e1"}"#).as_deref(), Some("e1"));
/// assert_eq!(event_id("not json"), None);
/// ```
pub fn event_id(frame: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Id<'a> {
        #[serde(borrow)]
        event_id: Option<Cow<'a, str>>,
    }
    let id: Id<'_> = serde_json::from_str(frame).ok()?;
    id.event_id.map(Cow::into_owned)
}

fn required(field: &str) -> ClientError {
    FieldError::new(
        field,
        ClientRule::Required,
        format!("'{field}' is required"),
    )
}

fn wrong_type(field: &str, expected: &str) -> ClientError {
    FieldError::new(
        field,
        ClientRule::InvalidType,
        format!("'{field}' must be {expected}"),
    )
}

/// The decoded length of base64 `audio` at `field`, checked against the session.
fn audio_bytes(audio: &RawValue, field: &str, session: &Session) -> Result<u64, ClientError> {
    let text: Cow<'_, str> =
        serde_json::from_str(audio.get()).map_err(|_| wrong_type(field, "a base64 string"))?;
    // A quick refusal before decoding: base64 is 4 characters for 3 bytes.
    if text.len() / 4 * 3 > session.max_audio_bytes.saturating_add(3) {
        return Err(too_large(field, session));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .map_err(|e| {
            FieldError::new(
                field,
                ClientRule::InvalidBase64,
                format!("'{field}' is not base64 audio: {e}"),
            )
        })?;
    if bytes.len() > session.max_audio_bytes {
        return Err(too_large(field, session));
    }
    session.input_format.admits(&bytes).map_err(|looks_like| {
        FieldError::new(
            field,
            ClientRule::WrongAudioFormat,
            format!(
                "'{field}' must be raw {} audio, the session's input format; it is {looks_like}",
                session.input_format.as_str()
            ),
        )
    })?;
    Ok(bytes.len() as u64)
}

fn too_large(field: &str, session: &Session) -> ClientError {
    FieldError::new(
        field,
        ClientRule::TooLarge,
        format!(
            "'{field}' is over {} bytes of audio, the most one event may carry",
            session.max_audio_bytes
        ),
    )
}

#[derive(Deserialize)]
struct SessionFields<'a> {
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    audio: Option<AudioFields<'a>>,
    // The beta spellings, still accepted by the API.
    #[serde(borrow)]
    input_audio_format: Option<&'a RawValue>,
    #[serde(borrow)]
    output_audio_format: Option<&'a RawValue>,
    #[serde(borrow)]
    voice: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    input_audio_transcription: Option<Option<TranscriptionFields>>,
}

/// A field that may be given as `null` (`Some(None)`) or left out (`None`).
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct TranscriptionFields {
    model: Option<String>,
}

#[derive(Deserialize)]
struct AudioFields<'a> {
    #[serde(borrow)]
    input: Option<DirectionFields<'a>>,
    #[serde(borrow)]
    output: Option<DirectionFields<'a>>,
}

#[derive(Deserialize)]
struct DirectionFields<'a> {
    #[serde(borrow)]
    format: Option<&'a RawValue>,
    voice: Option<serde_json::Value>,
    #[serde(default, deserialize_with = "present")]
    transcription: Option<Option<TranscriptionFields>>,
}

fn session_change(raw: &RawValue, session: &Session) -> Result<SessionChange, ClientError> {
    let fields: SessionFields<'_> =
        serde_json::from_str(raw.get()).map_err(|_| wrong_type("session", "an object"))?;
    if let Some(model) = fields.model.as_deref()
        && model != session.model
    {
        return Err(FieldError::new(
            "session.model",
            ClientRule::ModelChange,
            format!(
                "the session was opened for '{}'; a session cannot change its model to '{model}'",
                session.model
            ),
        ));
    }
    let (input, output) = match fields.audio {
        Some(AudioFields { input, output }) => (input, output),
        None => (None, None),
    };
    const GA: &[&str] = &["session", "audio", "input", "transcription", "model"];
    const BETA: &[&str] = &["session", "input_audio_transcription", "model"];
    let (set, transcription_path) = match input.as_ref().and_then(|d| d.transcription.as_ref()) {
        Some(set) => (Some(set), GA),
        None => match fields.input_audio_transcription.as_ref() {
            Some(set) => (Some(set), BETA),
            None => (None, &[][..]),
        },
    };
    // `null` turns transcription off; an object names its model (the gateway prices it).
    let transcription = match set {
        None => None,
        Some(None) => Some(None),
        Some(Some(TranscriptionFields { model: Some(model) })) => Some(Some(model.clone())),
        Some(Some(TranscriptionFields { model: None })) => {
            return Err(required(&transcription_path[..].join(".")));
        }
    };
    let input_format = input
        .as_ref()
        .and_then(|d| d.format)
        .map(|f| (f, "session.audio.input.format"))
        .or(fields
            .input_audio_format
            .map(|f| (f, "session.input_audio_format")));
    let output_format = output
        .as_ref()
        .and_then(|d| d.format)
        .map(|f| (f, "session.audio.output.format"))
        .or(fields
            .output_audio_format
            .map(|f| (f, "session.output_audio_format")));
    const GA_VOICE: &[&str] = &["session", "audio", "output", "voice"];
    const BETA_VOICE: &[&str] = &["session", "voice"];
    let (voice, voice_path) = match output.and_then(|d| d.voice) {
        Some(serde_json::Value::String(voice)) => (Some(voice), GA_VOICE),
        Some(serde_json::Value::Object(custom)) => (
            custom
                .get("id")
                .and_then(|id| id.as_str())
                .map(str::to_owned),
            &[][..],
        ),
        Some(_) => return Err(wrong_type("session.audio.output.voice", "a voice name")),
        None => match fields.voice {
            Some(voice) => (Some(voice.into_owned()), BETA_VOICE),
            None => (None, &[][..]),
        },
    };
    Ok(SessionChange {
        input_format: input_format.map(read_format).transpose()?,
        output_format: output_format.map(read_format).transpose()?,
        voice,
        voice_path,
        transcription,
        transcription_path,
    })
}

fn read_format((raw, field): (&RawValue, &str)) -> Result<AudioFormat, ClientError> {
    let value: serde_json::Value =
        serde_json::from_str(raw.get()).map_err(|_| wrong_type(field, "an audio format"))?;
    AudioFormat::from_json(&value).map_err(|problem| {
        let message = match problem {
            FormatProblem::Unknown(name) => format!(
                "'{field}' is '{name}'; the formats are audio/pcm (24 kHz), audio/pcmu and audio/pcma"
            ),
            FormatProblem::Rate(rate) => {
                format!("'{field}' asks audio/pcm at {rate} Hz; it is 24000 Hz only")
            }
            FormatProblem::Shape => format!("'{field}' must be an audio format object"),
        };
        FieldError::new(field, ClientRule::UnknownAudioFormat, message)
    })
}

#[derive(Deserialize)]
struct ItemFields<'a> {
    #[serde(borrow, default)]
    content: Vec<PartFields<'a>>,
    /// A function call's output.
    #[serde(borrow)]
    output: Option<Cow<'a, str>>,
    /// A function call's arguments.
    #[serde(borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct PartFields<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    transcript: Option<Cow<'a, str>>,
    #[serde(borrow)]
    audio: Option<&'a RawValue>,
}

/// Adds what one conversation item at `at` holds to `measured`.
fn measure_item(
    raw: &RawValue,
    at: &str,
    session: &Session,
    measured: &mut Measured,
) -> Result<(), ClientError> {
    let item: ItemFields<'_> =
        serde_json::from_str(raw.get()).map_err(|_| wrong_type(at, "a conversation item"))?;
    for text in [&item.output, &item.arguments].into_iter().flatten() {
        measured.text_bytes += text.len() as u64;
    }
    for (i, part) in item.content.iter().enumerate() {
        for text in [&part.text, &part.transcript].into_iter().flatten() {
            measured.text_bytes += text.len() as u64;
        }
        if let Some(audio) = part.audio {
            let field = format!("{at}.content[{i}].audio");
            measured.audio_bytes += audio_bytes(audio, &field, session)?;
        }
        if part.kind.as_deref() == Some("input_image") {
            measured.images += 1;
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct ResponseFields<'a> {
    #[serde(borrow)]
    instructions: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Vec<&'a RawValue>,
}

fn measure_response(
    raw: &RawValue,
    session: &Session,
    measured: &mut Measured,
) -> Result<(), ClientError> {
    let response: ResponseFields<'_> =
        serde_json::from_str(raw.get()).map_err(|_| wrong_type("response", "an object"))?;
    if let Some(instructions) = &response.instructions {
        measured.text_bytes += instructions.len() as u64;
    }
    for (i, item) in response.input.iter().enumerate() {
        measure_item(item, &format!("response.input[{i}]"), session, measured)?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session {
            model: "gpt-realtime".into(),
            input_format: AudioFormat::Pcm16,
            max_audio_bytes: 16,
        }
    }

    #[test]
    fn a_session_update_names_its_transcription_model_in_either_spelling() {
        let change = |session: &str| {
            let frame = format!(r#"{{"type":"session.update","session":{session}}}"#);
            inspect(&frame, &session_()).map(|e| e.change.unwrap())
        };
        fn session_() -> Session {
            session()
        }
        let ga = change(r#"{"audio":{"input":{"transcription":{"model":"whisper-1"}}}}"#).unwrap();
        assert_eq!(ga.transcription, Some(Some("whisper-1".into())));
        assert_eq!(
            ga.transcription_path.join("."),
            "session.audio.input.transcription.model"
        );
        let beta =
            change(r#"{"input_audio_transcription":{"model":"gpt-4o-transcribe"}}"#).unwrap();
        assert_eq!(beta.transcription, Some(Some("gpt-4o-transcribe".into())));
        assert_eq!(
            beta.transcription_path.join("."),
            "session.input_audio_transcription.model"
        );
        let off = change(r#"{"audio":{"input":{"transcription":null}}}"#).unwrap();
        assert_eq!(off.transcription, Some(None));
        assert_eq!(
            change(r#"{"instructions":"x"}"#).unwrap().transcription,
            None
        );
        let unnamed = change(r#"{"audio":{"input":{"transcription":{"language":"en"}}}}"#);
        assert_eq!(
            unnamed.unwrap_err().field,
            "session.audio.input.transcription.model"
        );
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn refused(frame: &str) -> (String, &'static str) {
        let err = inspect(frame, &session()).unwrap_err();
        (err.field, err.rule.code())
    }

    #[test]
    fn every_client_event_is_known_by_its_name() {
        for kind in ClientKind::ALL {
            assert_eq!(ClientKind::named(kind.as_str()), Some(kind));
            let frame = format!(r#"{{"type":"{}","event_id":"e1"}}"#, kind.as_str());
            match inspect(&frame, &session()) {
                Ok(event) => assert_eq!(event.event_id.as_deref(), Some("e1")),
                // The three that need a body say which field.
                Err(err) => assert!(
                    ["audio", "session", "item"].contains(&err.field.as_str()),
                    "{kind:?}: {err}"
                ),
            }
        }
    }

    #[test]
    fn what_is_not_an_event_is_refused_by_its_rule() {
        assert_eq!(refused("not json").1, "invalid_json");
        assert_eq!(refused("[1]").1, "invalid_json");
        assert_eq!(
            refused(r#"{"event_id":"x"}"#),
            ("type".into(), "missing_type")
        );
        assert_eq!(refused(r#"{"type":"session.explode"}"#).1, "unknown_event");
        assert_eq!(
            refused(r#"{"type":"input_audio_buffer.append","audio":3}"#),
            ("audio".into(), "invalid_type")
        );
        assert_eq!(
            refused(r#"{"type":"input_audio_buffer.append","audio":"!!!!"}"#).1,
            "invalid_base64"
        );
    }

    #[test]
    fn audio_must_be_the_sessions_format_and_within_the_frame_limit() {
        let append = |bytes: &[u8]| {
            format!(
                r#"{{"type":"input_audio_buffer.append","audio":"{}"}}"#,
                b64(bytes)
            )
        };
        assert_eq!(
            inspect(&append(&[0; 16]), &session())
                .unwrap()
                .measured
                .audio_bytes,
            16
        );
        assert_eq!(refused(&append(&[0; 18])).1, "frame_too_large");
        assert_eq!(refused(&append(&[0; 5_000])).1, "frame_too_large");
        assert_eq!(refused(&append(&[0; 3])).1, "wrong_audio_format");
        let mut wav = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
        wav.truncate(12);
        assert_eq!(refused(&append(&wav)).1, "wrong_audio_format");
    }

    #[test]
    fn a_session_keeps_its_model_and_says_its_formats_and_voice() {
        assert_eq!(
            refused(
                r#"{"type":"session.update","session":{"type":"realtime","model":"gpt-4o-realtime-preview"}}"#
            ),
            ("session.model".into(), "model_cannot_change")
        );
        let event = inspect(
            r#"{"type":"session.update","session":{"type":"realtime","model":"gpt-realtime","instructions":"Be brief.",
                "audio":{"input":{"format":{"type":"audio/pcmu"}},"output":{"format":{"type":"audio/pcma"},"voice":"marin"}}}}"#,
            &session(),
        )
        .unwrap();
        assert_eq!(
            event.change,
            Some(SessionChange {
                input_format: Some(AudioFormat::Pcmu),
                output_format: Some(AudioFormat::Pcma),
                voice: Some("marin".into()),
                voice_path: &["session", "audio", "output", "voice"],
                ..SessionChange::default()
            })
        );
        // The whole session object counts: instructions, tools, settings.
        assert!(event.measured.text_bytes > 9);
        let beta = inspect(
            r#"{"type":"session.update","session":{"input_audio_format":"g711_alaw","voice":"alloy"}}"#,
            &session(),
        )
        .unwrap();
        let beta = beta.change.unwrap();
        assert_eq!(beta.input_format, Some(AudioFormat::Pcma));
        assert_eq!(
            (beta.voice.as_deref(), beta.voice_path),
            (Some("alloy"), &["session", "voice"][..])
        );
        assert_eq!(
            refused(
                r#"{"type":"session.update","session":{"audio":{"input":{"format":{"type":"audio/pcm","rate":16000}}}}}"#
            ),
            ("session.audio.input.format".into(), "unknown_audio_format")
        );
    }

    #[test]
    fn items_and_responses_count_their_text_audio_and_images() {
        let frame = format!(
            r#"{{"type":"conversation.item.create","item":{{"type":"message","role":"user","content":[
                {{"type":"input_text","text":"héllo"}},{{"type":"input_audio","audio":"{}"}},
                {{"type":"input_image","image_url":"data:image/png;base64,AAAA"}}]}}}}"#,
            b64(&[0; 8])
        );
        let measured = inspect(&frame, &session()).unwrap().measured;
        assert_eq!(
            measured,
            Measured {
                audio_bytes: 8,
                text_bytes: 6,
                images: 1
            }
        );
        let response = r#"{"type":"response.create","response":{"instructions":"Say hi",
            "input":[{"type":"function_call_output","call_id":"c","output":"{\"ok\":true}"}]}}"#;
        assert_eq!(
            inspect(response, &session()).unwrap().measured.text_bytes,
            6 + 11
        );
        let bad_audio = format!(
            r#"{{"type":"response.create","response":{{"input":[{{"type":"message","content":[{{"type":"input_audio","audio":"{}"}}]}}]}}}}"#,
            b64(&[0; 3])
        );
        assert_eq!(
            refused(&bad_audio),
            (
                "response.input[0].content[0].audio".into(),
                "wrong_audio_format"
            )
        );
    }
}
