//! Gemini Live's messages (`BidiGenerateContent`, docs/api.md §2.12), inspected before they are
//! relayed: the rules a client's message keeps, what it puts into the conversation, and what a
//! server's message delivers and claims — the quantities a live session is bounded and charged
//! by (docs/decisions.md, "Live voice sessions").
//!
//! The gateway relays each message's own bytes; it rebuilds none. Fields are read through
//! borrowed types, so an audio chunk is decoded once (to check and count it) and never copied
//! into a tree of values.
//!
//! Google accepts two spellings of a client message's top-level field: google-genai (Python)
//! sends `client_content`, `realtime_input`, `tool_response`; @google/genai (JavaScript) sends
//! `clientContent`, `realtimeInput`, `toolResponse`. Both are read; the inner fields are the
//! camelCase both SDKs send, with the snake_case of the Python types read too.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use tollgate_field_error::{FieldError, Rule};

/// The client messages of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKind {
    /// `setup`: the session's model and configuration; the first message, and only it.
    Setup,
    /// `clientContent`: turns of the conversation.
    ClientContent,
    /// `realtimeInput`: audio, video frames and text as they come.
    RealtimeInput,
    /// `toolResponse`: the answers to the model's tool calls.
    ToolResponse,
}

/// A rule a client's message broke; the close that ends the session names it (Google closes a
/// socket whose message it cannot read with 1007 and the reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveRule {
    /// The frame is not a JSON object.
    NotJson,
    /// The object has none of the four messages, or more than one, or a field no message has.
    NotAMessage,
    /// `setup` other than first, or another message before it.
    SetupOrder,
    /// A field the message needs is missing.
    Required,
    /// A field has the wrong JSON type.
    InvalidType,
    /// Media data that is not base64.
    InvalidBase64,
    /// Media over the gateway's frame limit.
    TooLarge,
    /// Media of a type the gateway cannot measure.
    UnknownMimeType,
    /// The setup names another model than the session's.
    ModelChange,
}

impl Rule for LiveRule {
    fn code(&self) -> &'static str {
        match self {
            LiveRule::NotJson => "invalid_json",
            LiveRule::NotAMessage => "not_a_message",
            LiveRule::SetupOrder => "setup_order",
            LiveRule::Required => "missing_field",
            LiveRule::InvalidType => "invalid_type",
            LiveRule::InvalidBase64 => "invalid_base64",
            LiveRule::TooLarge => "frame_too_large",
            LiveRule::UnknownMimeType => "unknown_mime_type",
            LiveRule::ModelChange => "model_cannot_change",
        }
    }
}

/// A broken rule of a client's message.
pub type LiveError = FieldError<LiveRule>;

/// What the session is, as a client's message is judged by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The model the session was opened for (`models/…` or the bare name, as the client may
    /// spell it in `setup`).
    pub model: String,
    /// Whether `setup` has been sent.
    pub set_up: bool,
    /// The most media bytes one message may carry (decoded).
    pub max_media_bytes: usize,
}

/// What a message puts into the conversation, or delivers of a turn, as the gateway measured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Measured {
    /// Milliseconds of audio (16-bit PCM at the rate its MIME type names).
    pub audio_ms: u64,
    /// Bytes of text (UTF-8): messages, a tool's call or answer, and a `setup`'s whole
    /// configuration (instructions, tools, every setting the model may read as input). A token
    /// covers at least a byte, so they bound the text's tokens.
    pub text_bytes: u64,
    /// Images (a video frame is one).
    pub images: u64,
}

/// A client's message that keeps the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientMessage {
    /// Which message.
    pub kind: ClientKind,
    /// What it adds to the conversation.
    pub measured: Measured,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    setup: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "clientContent", alias = "client_content")]
    client_content: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "realtimeInput", alias = "realtime_input")]
    realtime_input: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "toolResponse", alias = "tool_response")]
    tool_response: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Setup<'a> {
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow, default)]
    turns: Vec<Turn<'a>>,
}

#[derive(Deserialize)]
struct Turn<'a> {
    #[serde(borrow, default)]
    parts: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, default, rename = "inlineData", alias = "inline_data")]
    inline_data: Option<Blob<'a>>,
}

#[derive(Deserialize)]
struct Blob<'a> {
    #[serde(borrow, rename = "mimeType", alias = "mime_type")]
    mime_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RealtimeInput<'a> {
    #[serde(borrow, default, rename = "mediaChunks", alias = "media_chunks")]
    media_chunks: Vec<Blob<'a>>,
    #[serde(borrow, default)]
    audio: Option<Blob<'a>>,
    #[serde(borrow, default)]
    video: Option<Blob<'a>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// Inspects one frame of a client against `session`.
///
/// ```
/// use tollgate_native_genai::live::{inspect_client, ClientKind, Session};
///
/// let session = Session { model: "models/gemini-live".into(), set_up: true, max_media_bytes: 1 << 20 };
/// let audio = r#"{"realtime_input":{"audio":{"mimeType":"audio/pcm;rate=16000","data":"AAABAA=="}}}"#;
/// let message = inspect_client(audio, &session).unwrap();
/// assert_eq!(message.kind, ClientKind::RealtimeInput);
/// assert_eq!(message.measured.audio_ms, 1); // 4 bytes at 32,000 a second, rounded up
/// let err = inspect_client(r#"{"explode":{}}"#, &session).unwrap_err();
/// assert_eq!(err.field, "explode");
/// ```
pub fn inspect_client(frame: &str, session: &Session) -> Result<ClientMessage, LiveError> {
    let envelope: Envelope<'_> = serde_json::from_str(frame).map_err(|e| {
        let text = e.to_string();
        // serde names an unknown field between backquotes: the field to blame.
        match text.strip_prefix("unknown field `").and_then(|t| t.split('`').next()) {
            Some(field) => FieldError::new(
                field,
                LiveRule::NotAMessage,
                format!("'{field}' is not a message of the Live API (setup, clientContent, realtimeInput, toolResponse)"),
            ),
            None if e.is_data() => FieldError::new("", LiveRule::NotAMessage, format!("not a Live API message: {e}")),
            None => FieldError::new("", LiveRule::NotJson, format!("a message must be a JSON object: {e}")),
        }
    })?;
    let present = [
        envelope.setup.map(|raw| (ClientKind::Setup, raw)),
        envelope
            .client_content
            .map(|raw| (ClientKind::ClientContent, raw)),
        envelope
            .realtime_input
            .map(|raw| (ClientKind::RealtimeInput, raw)),
        envelope
            .tool_response
            .map(|raw| (ClientKind::ToolResponse, raw)),
    ];
    let mut present = present.into_iter().flatten();
    let (Some((kind, raw)), None) = (present.next(), present.next()) else {
        return Err(FieldError::new(
            "",
            LiveRule::NotAMessage,
            "a message holds exactly one of setup, clientContent, realtimeInput and toolResponse",
        ));
    };
    if (kind == ClientKind::Setup) == session.set_up {
        return Err(FieldError::new(
            if kind == ClientKind::Setup {
                "setup"
            } else {
                ""
            },
            LiveRule::SetupOrder,
            "'setup' is the session's first message, and only it",
        ));
    }
    let mut measured = Measured::default();
    match kind {
        ClientKind::Setup => {
            let setup: Setup<'_> = serde_json::from_str(raw.get())
                .map_err(|e| invalid("setup", format!("'setup' must be an object: {e}")))?;
            let model = setup.model.ok_or_else(|| required("setup.model"))?;
            if !same_model(&model, &session.model) {
                return Err(FieldError::new(
                    "setup.model",
                    LiveRule::ModelChange,
                    format!(
                        "the session was opened for '{}'; its setup names '{model}'",
                        session.model
                    ),
                ));
            }
            measured.text_bytes = raw.get().len() as u64;
        }
        ClientKind::ClientContent => {
            let content: Content<'_> = serde_json::from_str(raw.get()).map_err(|e| {
                invalid(
                    "clientContent",
                    format!("'clientContent' must hold 'turns' of 'parts': {e}"),
                )
            })?;
            for (t, turn) in content.turns.iter().enumerate() {
                for (p, part) in turn.parts.iter().enumerate() {
                    let field = format!("clientContent.turns[{t}].parts[{p}]");
                    measure_part(part, &field, session, &mut measured)?;
                }
            }
        }
        ClientKind::RealtimeInput => {
            let input: RealtimeInput<'_> = serde_json::from_str(raw.get()).map_err(|e| {
                invalid(
                    "realtimeInput",
                    format!("'realtimeInput' does not read: {e}"),
                )
            })?;
            for (i, chunk) in input.media_chunks.iter().enumerate() {
                measure_blob(
                    chunk,
                    &format!("realtimeInput.mediaChunks[{i}]"),
                    session,
                    &mut measured,
                )?;
            }
            if let Some(audio) = &input.audio {
                measure_blob(audio, "realtimeInput.audio", session, &mut measured)?;
            }
            if let Some(video) = &input.video {
                measure_blob(video, "realtimeInput.video", session, &mut measured)?;
            }
            if let Some(text) = &input.text {
                measured.text_bytes = measured.text_bytes.saturating_add(text.len() as u64);
            }
        }
        ClientKind::ToolResponse => measured.text_bytes = raw.get().len() as u64,
    }
    Ok(ClientMessage { kind, measured })
}

/// The model a session's first message, its `setup`, names (`models/…` as the SDKs send it,
/// or the bare name): what the session is opened, priced and held for before anything is
/// relayed.
///
/// ```
/// use tollgate_native_genai::live::setup_model;
///
/// assert_eq!(setup_model(r#"{"setup":{"model":"models/gemini-live"}}"#).unwrap(), "gemini-live");
/// assert!(setup_model(r#"{"clientContent":{}}"#).is_err());
/// ```
pub fn setup_model(frame: &str) -> Result<String, LiveError> {
    #[derive(Deserialize)]
    struct First<'a> {
        #[serde(borrow)]
        setup: Option<Setup<'a>>,
    }
    let first: First<'_> = serde_json::from_str(frame).map_err(|e| {
        FieldError::new(
            "setup",
            LiveRule::SetupOrder,
            format!("the first message must be a 'setup': {e}"),
        )
    })?;
    let setup = first.setup.ok_or_else(|| {
        FieldError::new(
            "setup",
            LiveRule::SetupOrder,
            "the first message must be a 'setup'",
        )
    })?;
    let model = setup.model.ok_or_else(|| required("setup.model"))?;
    Ok(model.strip_prefix("models/").unwrap_or(&model).to_owned())
}

/// Gemini Live's sockets, where google-genai and @google/genai connect: `BidiGenerateContent`
/// under each API version they may use (`v1beta`; `v1` is google-genai 3's default, `v1alpha`
/// for experiments), and `BidiGenerateContentConstrained`, where a session opened with an
/// ephemeral token connects (`v1alpha`, as Google serves it; `v1beta` for a client set to it).
pub const SOCKET: &str =
    "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";
/// [`SOCKET`] under `v1`.
pub const SOCKET_V1: &str =
    "/ws/google.ai.generativelanguage.v1.GenerativeService.BidiGenerateContent";
/// [`SOCKET`] under `v1alpha`.
pub const SOCKET_V1ALPHA: &str =
    "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContent";
/// The constrained socket (`v1alpha`).
pub const CONSTRAINED_SOCKET: &str =
    "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained";
/// The constrained socket under `v1beta`.
pub const CONSTRAINED_SOCKET_V1BETA: &str =
    "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContentConstrained";

/// An ephemeral token's constraints on the setup of the sessions it opens (Google's
/// `bidiGenerateContentSetup` and `fieldMask`, as `POST /v1alpha/auth_tokens` takes them).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize)]
pub struct SetupConstraints {
    /// The setup fields the token sets.
    #[serde(rename = "bidiGenerateContentSetup", default)]
    pub setup: serde_json::Map<String, serde_json::Value>,
    /// The fields locked, comma-separated paths (`generationConfig.temperature`); `None`:
    /// every field `setup` sets.
    #[serde(rename = "fieldMask", default, skip_serializing_if = "Option::is_none")]
    pub field_mask: Option<String>,
}

impl SetupConstraints {
    /// The paths locked: the mask's, or every field the token's setup sets.
    fn locked(&self) -> Vec<Vec<String>> {
        match self.field_mask.as_deref().filter(|m| !m.trim().is_empty()) {
            Some(mask) => mask
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| p.split('.').map(str::to_owned).collect())
                .collect(),
            None => self.setup.keys().map(|k| vec![k.clone()]).collect(),
        }
    }
}

/// The client's setup message under a token's constraints, as Google applies them: each
/// locked field takes the token's value, or is removed when the token sets none, whatever the
/// client sent (in either spelling, `generationConfig` or `generation_config`); the fields not
/// locked are the client's. The answer is the setup message to relay (and to read the model
/// from).
///
/// ```
/// use tollgate_native_genai::live::{SetupConstraints, constrain_setup, setup_model};
///
/// let token: SetupConstraints = serde_json::from_str(
///     r#"{"bidiGenerateContentSetup":{"model":"models/live-1","generationConfig":{"temperature":0.2}}}"#)?;
/// let client = r#"{"setup":{"model":"models/live-2","generation_config":{"temperature":1.5},"systemInstruction":{"parts":[{"text":"hi"}]}}}"#;
/// let constrained = constrain_setup(client, &token).unwrap();
/// assert_eq!(setup_model(&constrained).unwrap(), "live-1");
/// let value: serde_json::Value = serde_json::from_str(&constrained)?;
/// assert_eq!(value["setup"]["generationConfig"]["temperature"], 0.2);
/// assert!(value["setup"].get("generation_config").is_none());
/// assert_eq!(value["setup"]["systemInstruction"]["parts"][0]["text"], "hi");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn constrain_setup(frame: &str, constraints: &SetupConstraints) -> Result<String, LiveError> {
    let mut message: serde_json::Value = serde_json::from_str(frame).map_err(|e| {
        FieldError::new(
            "setup",
            LiveRule::SetupOrder,
            format!("the first message must be a 'setup': {e}"),
        )
    })?;
    let Some(setup) = message.get_mut("setup").and_then(|s| s.as_object_mut()) else {
        return Err(FieldError::new(
            "setup",
            LiveRule::SetupOrder,
            "the first message must be a 'setup' object",
        ));
    };
    for path in constraints.locked() {
        let value = lookup(&constraints.setup, &path).cloned();
        place(setup, &path, value);
    }
    Ok(message.to_string())
}

/// The value at `path` in `map` (each key in either spelling).
fn lookup<'a>(
    map: &'a serde_json::Map<String, serde_json::Value>,
    path: &[String],
) -> Option<&'a serde_json::Value> {
    let (first, rest) = path.split_first()?;
    let found = map.get(first.as_str()).or_else(|| map.get(&snake(first)))?;
    if rest.is_empty() {
        return Some(found);
    }
    lookup(found.as_object()?, rest)
}

/// Sets (or, for `None`, removes) the value at `path` in `map`, its other spelling removed.
fn place(
    map: &mut serde_json::Map<String, serde_json::Value>,
    path: &[String],
    value: Option<serde_json::Value>,
) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let camel = camel(first);
    let snake = snake(first);
    if rest.is_empty() {
        map.remove(&snake);
        map.remove(&camel);
        if let Some(value) = value {
            map.insert(camel, value);
        }
        return;
    }
    // The client's inner object, under whichever spelling it used, moved to the camel one.
    let inner = map
        .remove(&camel)
        .or_else(|| map.remove(&snake))
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new()));
    let mut inner = match inner {
        serde_json::Value::Object(inner) => inner,
        _ => serde_json::Map::new(),
    };
    place(&mut inner, rest, value);
    if !inner.is_empty() {
        map.insert(camel, serde_json::Value::Object(inner));
    }
}

/// `generation_config` → `generationConfig`.
fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `generationConfig` → `generation_config`.
fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `models/x` and `x` name one model.
fn same_model(a: &str, b: &str) -> bool {
    a.strip_prefix("models/").unwrap_or(a) == b.strip_prefix("models/").unwrap_or(b)
}

fn required(field: &str) -> LiveError {
    FieldError::new(field, LiveRule::Required, format!("'{field}' is required"))
}

fn invalid(field: &str, message: String) -> LiveError {
    FieldError::new(field, LiveRule::InvalidType, message)
}

/// A part of a turn: inline media by its measure, anything else (text, a function's call or
/// answer) by its bytes.
fn measure_part(
    part: &RawValue,
    field: &str,
    session: &Session,
    measured: &mut Measured,
) -> Result<(), LiveError> {
    let read: Part<'_> = serde_json::from_str(part.get())
        .map_err(|e| invalid(field, format!("'{field}' must be a part object: {e}")))?;
    match &read.inline_data {
        Some(blob) => measure_blob(blob, &format!("{field}.inlineData"), session, measured),
        None => {
            measured.text_bytes = measured.text_bytes.saturating_add(part.get().len() as u64);
            Ok(())
        }
    }
}

/// Media: PCM audio by its duration, images and video frames by their count; base64 checked,
/// its size checked before it is decoded.
fn measure_blob(
    blob: &Blob<'_>,
    field: &str,
    session: &Session,
    measured: &mut Measured,
) -> Result<(), LiveError> {
    let mime = blob
        .mime_type
        .as_deref()
        .ok_or_else(|| required(&format!("{field}.mimeType")))?;
    let data = blob
        .data
        .as_deref()
        .ok_or_else(|| required(&format!("{field}.data")))?;
    if data.len() / 4 * 3 > session.max_media_bytes {
        return Err(FieldError::new(
            format!("{field}.data"),
            LiveRule::TooLarge,
            format!(
                "media may hold at most {} bytes a message",
                session.max_media_bytes
            ),
        ));
    }
    let bytes = decoded_len(data).ok_or_else(|| {
        FieldError::new(
            format!("{field}.data"),
            LiveRule::InvalidBase64,
            "'data' must be base64",
        )
    })?;
    match MediaType::of(mime) {
        Some(MediaType::Pcm { rate }) => {
            if !bytes.is_multiple_of(2) {
                return Err(FieldError::new(
                    format!("{field}.data"),
                    LiveRule::InvalidType,
                    "16-bit PCM holds whole samples: an even number of bytes",
                ));
            }
            measured.audio_ms = measured.audio_ms.saturating_add(pcm_millis(bytes, rate));
        }
        Some(MediaType::Image) => measured.images = measured.images.saturating_add(1),
        None => {
            return Err(FieldError::new(
                format!("{field}.mimeType"),
                LiveRule::UnknownMimeType,
                format!(
                    "'{mime}' is not media the gateway can measure: audio/pcm (8 to 48 kHz) or an image (image/jpeg, image/png, image/webp)"
                ),
            ));
        }
    }
    Ok(())
}

/// The bytes a base64 string decodes to, when it is one — checked without decoding into a
/// buffer (a chunk of audio is counted, not kept). Google reads bytes as proto3 JSON does:
/// the standard or the URL-safe alphabet, padded or not (google-genai's Python types send
/// URL-safe base64).
fn decoded_len(data: &str) -> Option<u64> {
    let body = data.trim_end_matches('=');
    let padding = data.len() - body.len();
    if padding > 2 || (padding > 0 && !data.len().is_multiple_of(4)) || body.len() % 4 == 1 {
        return None;
    }
    let bytes = body.as_bytes();
    let standard = |b: &u8| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/';
    let url_safe = |b: &u8| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_';
    if !(bytes.iter().all(standard) || bytes.iter().all(url_safe)) {
        return None;
    }
    Some((bytes.len() / 4 * 3 + (bytes.len() % 4).saturating_sub(1)) as u64)
}

/// Media the gateway measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaType {
    /// `audio/pcm[;rate=N]`: 16-bit little-endian PCM, mono, at `rate` Hz (16,000 unless named).
    Pcm {
        /// Samples a second.
        rate: u64,
    },
    /// An image or a video frame.
    Image,
}

impl MediaType {
    /// The media a MIME type names, if the gateway measures it.
    ///
    /// ```
    /// use tollgate_native_genai::live::MediaType;
    ///
    /// assert_eq!(MediaType::of("audio/pcm;rate=24000"), Some(MediaType::Pcm { rate: 24_000 }));
    /// assert_eq!(MediaType::of("audio/pcm"), Some(MediaType::Pcm { rate: 16_000 }));
    /// assert_eq!(MediaType::of("audio/pcm;rate=1"), None);
    /// assert_eq!(MediaType::of("image/jpeg"), Some(MediaType::Image));
    /// ```
    pub fn of(mime: &str) -> Option<MediaType> {
        let mut params = mime.split(';').map(str::trim);
        let essence = params.next()?.to_ascii_lowercase();
        match essence.as_str() {
            "audio/pcm" | "audio/l16" => {
                let mut rate = 16_000;
                for param in params {
                    if let Some((name, value)) = param.split_once('=')
                        && name.trim().eq_ignore_ascii_case("rate")
                    {
                        rate = value.trim().parse().ok()?;
                    }
                }
                (8_000..=48_000)
                    .contains(&rate)
                    .then_some(MediaType::Pcm { rate })
            }
            "image/jpeg" | "image/png" | "image/webp" | "image/heic" | "image/heif" => {
                Some(MediaType::Image)
            }
            _ => None,
        }
    }
}

/// Milliseconds `bytes` of 16-bit mono PCM at `rate` Hz last, rounded up.
///
/// ```
/// use tollgate_native_genai::live::pcm_millis;
///
/// assert_eq!(pcm_millis(32_000, 16_000), 1_000);
/// assert_eq!(pcm_millis(48_000 * 3, 24_000), 3_000);
/// assert_eq!(pcm_millis(1, 24_000), 1);
/// ```
pub const fn pcm_millis(bytes: u64, rate: u64) -> u64 {
    let per_second = rate.saturating_mul(2);
    if per_second == 0 {
        return 0;
    }
    let whole = bytes / per_second;
    let rest = bytes % per_second;
    whole
        .saturating_mul(1_000)
        .saturating_add((rest * 1_000).div_ceil(per_second))
}

/// Why a server's message was not relayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unvetted(pub String);

/// Token counts by modality (`ModalityTokenCount`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModalityCount {
    /// `TEXT`, `IMAGE`, `VIDEO`, `AUDIO`, `DOCUMENT`.
    #[serde(default)]
    pub modality: String,
    /// Its tokens.
    #[serde(default, rename = "tokenCount", alias = "token_count")]
    pub token_count: u64,
}

/// A turn's usage as the server claims it (`UsageMetadata`): every count a non-negative
/// integer, or the message does not read.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(default)]
pub struct LiveUsage {
    /// The prompt's tokens, cached ones included.
    #[serde(rename = "promptTokenCount", alias = "prompt_token_count")]
    pub prompt_token_count: u64,
    /// The cached part of the prompt.
    #[serde(
        rename = "cachedContentTokenCount",
        alias = "cached_content_token_count"
    )]
    pub cached_content_token_count: u64,
    /// The response's tokens.
    #[serde(rename = "responseTokenCount", alias = "response_token_count")]
    pub response_token_count: u64,
    /// Tokens of tool results read as prompt.
    #[serde(
        rename = "toolUsePromptTokenCount",
        alias = "tool_use_prompt_token_count"
    )]
    pub tool_use_prompt_token_count: u64,
    /// Thinking tokens (billed as output, never sent).
    #[serde(rename = "thoughtsTokenCount", alias = "thoughts_token_count")]
    pub thoughts_token_count: u64,
    /// The prompt by modality.
    #[serde(rename = "promptTokensDetails", alias = "prompt_tokens_details")]
    pub prompt_tokens_details: Vec<ModalityCount>,
    /// The cached part by modality.
    #[serde(rename = "cacheTokensDetails", alias = "cache_tokens_details")]
    pub cache_tokens_details: Vec<ModalityCount>,
    /// The response by modality.
    #[serde(rename = "responseTokensDetails", alias = "response_tokens_details")]
    pub response_tokens_details: Vec<ModalityCount>,
    /// The tool results by modality.
    #[serde(
        rename = "toolUsePromptTokensDetails",
        alias = "tool_use_prompt_tokens_details"
    )]
    pub tool_use_prompt_tokens_details: Vec<ModalityCount>,
}

impl LiveUsage {
    /// The tokens of `modality` in `details`.
    pub fn of(details: &[ModalityCount], modality: &str) -> u64 {
        details
            .iter()
            .filter(|d| d.modality.eq_ignore_ascii_case(modality))
            .fold(0, |sum, d| sum.saturating_add(d.token_count))
    }
}

/// What a server's message delivers and claims.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerMessage {
    /// `setupComplete`.
    pub setup_complete: bool,
    /// The model's turn as it was delivered: audio, text, tool calls (their bytes).
    pub delivered: Measured,
    /// `serverContent.turnComplete`.
    pub turn_complete: bool,
    /// `usageMetadata`: the turn's usage.
    pub usage: Option<LiveUsage>,
    /// `goAway`.
    pub go_away: bool,
}

#[derive(Deserialize)]
struct ServerEnvelope<'a> {
    #[serde(borrow, default, rename = "setupComplete", alias = "setup_complete")]
    setup_complete: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "serverContent", alias = "server_content")]
    server_content: Option<ServerContent<'a>>,
    #[serde(borrow, default, rename = "toolCall", alias = "tool_call")]
    tool_call: Option<&'a RawValue>,
    #[serde(default, rename = "usageMetadata", alias = "usage_metadata")]
    usage_metadata: Option<LiveUsage>,
    #[serde(borrow, default, rename = "goAway", alias = "go_away")]
    go_away: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ServerContent<'a> {
    #[serde(borrow, default, rename = "modelTurn", alias = "model_turn")]
    model_turn: Option<Turn<'a>>,
    #[serde(default, rename = "turnComplete", alias = "turn_complete")]
    turn_complete: bool,
}

#[derive(Deserialize)]
struct ServerPart<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "inlineData", alias = "inline_data")]
    inline_data: Option<Blob<'a>>,
}

/// Vets one server frame: a JSON object, whose model turn's media and usage read. Fields the
/// gateway does not bill by (transcriptions, grounding, resumption handles, what a vendor adds
/// later) are relayed as they came.
///
/// ```
/// use tollgate_native_genai::live::inspect_server;
///
/// let frame = r#"{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm;rate=24000","data":"AAAAAA=="}}]},"turnComplete":true},
///     "usageMetadata":{"promptTokenCount":40,"responseTokenCount":9,"responseTokensDetails":[{"modality":"AUDIO","tokenCount":9}]}}"#;
/// let message = inspect_server(frame).unwrap();
/// assert_eq!(message.delivered.audio_ms, 1);
/// assert!(message.turn_complete);
/// assert_eq!(message.usage.unwrap().response_token_count, 9);
/// assert!(inspect_server(r#"{"usageMetadata":{"promptTokenCount":-1}}"#).is_err());
/// ```
pub fn inspect_server(frame: &str) -> Result<ServerMessage, Unvetted> {
    let envelope: ServerEnvelope<'_> = serde_json::from_str(frame)
        .map_err(|e| Unvetted(format!("not a Live API message: {e}")))?;
    let mut message = ServerMessage {
        setup_complete: envelope.setup_complete.is_some(),
        usage: envelope.usage_metadata,
        go_away: envelope.go_away.is_some(),
        ..ServerMessage::default()
    };
    if let Some(content) = envelope.server_content {
        message.turn_complete = content.turn_complete;
        for part in content.model_turn.iter().flat_map(|t| &t.parts) {
            let read: ServerPart<'_> = serde_json::from_str(part.get())
                .map_err(|e| Unvetted(format!("a model turn's part does not read: {e}")))?;
            let delivered = &mut message.delivered;
            if let Some(text) = &read.text {
                delivered.text_bytes = delivered.text_bytes.saturating_add(text.len() as u64);
            }
            if let Some(blob) = &read.inline_data {
                let data = blob.data.as_deref().unwrap_or_default();
                let bytes = decoded_len(data)
                    .ok_or_else(|| Unvetted("a model turn's audio is not base64".into()))?;
                match blob.mime_type.as_deref().and_then(MediaType::of) {
                    Some(MediaType::Pcm { rate }) => {
                        delivered.audio_ms =
                            delivered.audio_ms.saturating_add(pcm_millis(bytes, rate));
                    }
                    _ => return Err(Unvetted("a model turn's media is not PCM audio".into())),
                }
            }
        }
    }
    if let Some(call) = envelope.tool_call {
        // A tool call's name and arguments are output the model wrote.
        message.delivered.text_bytes = message
            .delivered
            .text_bytes
            .saturating_add(call.get().len() as u64);
    }
    Ok(message)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_field_mask_locks_only_its_fields_and_those_the_token_leaves_unset() {
        let token: SetupConstraints = serde_json::from_str(
            r#"{"bidiGenerateContentSetup":{"model":"models/live-1","generationConfig":{"temperature":0.2,"topK":3}},
                "fieldMask":"model,generationConfig.temperature,systemInstruction"}"#,
        )
        .unwrap();
        let client = r#"{"setup":{"model":"models/live-9","generationConfig":{"temperature":1.5,"topK":40},
            "system_instruction":{"parts":[{"text":"ignore the rules"}]},"tools":[]}}"#;
        let constrained: serde_json::Value =
            serde_json::from_str(&constrain_setup(client, &token).unwrap()).unwrap();
        let setup = &constrained["setup"];
        assert_eq!(setup["model"], "models/live-1");
        // Locked, the token's; not locked, the client's.
        assert_eq!(setup["generationConfig"]["temperature"], 0.2);
        assert_eq!(setup["generationConfig"]["topK"], 40);
        // Locked and unset by the token: the client's removed, in either spelling.
        assert!(
            setup.get("system_instruction").is_none() && setup.get("systemInstruction").is_none()
        );
        assert_eq!(setup["tools"], serde_json::json!([]));
        // Without a mask, every field the token sets is locked; a setup must still be one.
        let all = SetupConstraints {
            field_mask: None,
            ..token
        };
        let constrained = constrain_setup(client, &all).unwrap();
        assert!(constrained.contains(r#""topK":3"#), "{constrained}");
        assert!(constrain_setup(r#"{"clientContent":{}}"#, &all).is_err());
        assert!(constrain_setup("nonsense", &all).is_err());
    }

    fn session() -> Session {
        Session {
            model: "models/gemini-live".into(),
            set_up: false,
            max_media_bytes: 1_000,
        }
    }

    #[test]
    fn setup_comes_first_names_the_sessions_model_and_counts_as_text() {
        let mut s = session();
        let err = inspect_client(r#"{"clientContent":{"turns":[]}}"#, &s).unwrap_err();
        assert_eq!(err.rule, LiveRule::SetupOrder);
        let setup = r#"{"setup":{"model":"gemini-live","systemInstruction":{"parts":[{"text":"Be brief."}]}}}"#;
        let message = inspect_client(setup, &s).unwrap();
        assert_eq!(message.kind, ClientKind::Setup);
        assert!(message.measured.text_bytes > 40);
        let other = r#"{"setup":{"model":"models/another"}}"#;
        assert_eq!(
            inspect_client(other, &s).unwrap_err().rule,
            LiveRule::ModelChange
        );
        s.set_up = true;
        assert_eq!(
            inspect_client(setup, &s).unwrap_err().rule,
            LiveRule::SetupOrder
        );
    }

    #[test]
    fn both_spellings_read_and_one_message_a_frame() {
        let s = Session {
            set_up: true,
            ..session()
        };
        for frame in [
            r#"{"client_content":{"turns":[{"role":"user","parts":[{"text":"héllo"}]}],"turn_complete":true}}"#,
            r#"{"clientContent":{"turns":[{"role":"user","parts":[{"text":"héllo"}]}],"turnComplete":true}}"#,
        ] {
            let message = inspect_client(frame, &s).unwrap();
            assert_eq!(message.kind, ClientKind::ClientContent);
            assert_eq!(
                message.measured.text_bytes,
                r#"{"text":"héllo"}"#.len() as u64
            );
        }
        let two = r#"{"clientContent":{},"toolResponse":{}}"#;
        assert_eq!(
            inspect_client(two, &s).unwrap_err().rule,
            LiveRule::NotAMessage
        );
        let twice = r#"{"clientContent":{},"client_content":{}}"#;
        assert_eq!(
            inspect_client(twice, &s).unwrap_err().rule,
            LiveRule::NotAMessage
        );
        assert_eq!(
            inspect_client("[]", &s).unwrap_err().rule,
            LiveRule::NotAMessage
        );
        assert_eq!(inspect_client("{", &s).unwrap_err().rule, LiveRule::NotJson);
    }

    #[test]
    fn media_is_measured_checked_and_bounded() {
        let s = Session {
            set_up: true,
            ..session()
        };
        // 32,000 bytes at 16 kHz is a second; the limit is checked first.
        let chunk = |mime: &str, data: &str| {
            format!(
                r#"{{"realtimeInput":{{"mediaChunks":[{{"mimeType":"{mime}","data":"{data}"}}]}}}}"#
            )
        };
        let big = "A".repeat(2_000);
        assert_eq!(
            inspect_client(&chunk("audio/pcm", &big), &s)
                .unwrap_err()
                .rule,
            LiveRule::TooLarge
        );
        assert_eq!(
            inspect_client(&chunk("audio/pcm", "AAA$"), &s)
                .unwrap_err()
                .rule,
            LiveRule::InvalidBase64
        );
        assert_eq!(
            inspect_client(&chunk("audio/pcm", "AA=="), &s)
                .unwrap_err()
                .rule,
            LiveRule::InvalidType
        );
        assert_eq!(
            inspect_client(&chunk("audio/mpeg", "AAAA"), &s)
                .unwrap_err()
                .field,
            "realtimeInput.mediaChunks[0].mimeType"
        );
        let image = inspect_client(&chunk("image/jpeg", "AAAA"), &s).unwrap();
        assert_eq!(image.measured.images, 1);
        let audio = inspect_client(&chunk("audio/pcm;rate=8000", &"A".repeat(400)), &s).unwrap();
        assert_eq!(audio.measured.audio_ms, 19); // 300 bytes at 16,000 a second
        // Proto3 JSON's bytes: URL-safe, unpadded.
        let url_safe = inspect_client(&chunk("audio/pcm", "-_8"), &s).unwrap();
        assert_eq!(url_safe.measured.audio_ms, 1); // 2 bytes
        assert_eq!(
            inspect_client(&chunk("audio/pcm", "A"), &s)
                .unwrap_err()
                .rule,
            LiveRule::InvalidBase64
        );
    }

    #[test]
    fn a_server_message_that_bills_must_read() {
        assert!(inspect_server(r#"{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm;rate=24000","data":"%%%%"}}]}}}"#).is_err());
        assert!(inspect_server(r#"{"usageMetadata":{"promptTokenCount":1.5}}"#).is_err());
        let unknown = inspect_server(r#"{"sessionResumptionUpdate":{"newHandle":"h"}}"#).unwrap();
        assert_eq!(unknown, ServerMessage::default());
        let call =
            inspect_server(r#"{"toolCall":{"functionCalls":[{"name":"f","args":{}}]}}"#).unwrap();
        assert!(call.delivered.text_bytes > 20);
        assert!(
            inspect_server(r#"{"setupComplete":{}}"#)
                .unwrap()
                .setup_complete
        );
    }
}
