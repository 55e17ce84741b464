//! Simulated native text generation, the `genai` channel format (wire-formats §6, with the
//! vendor's brand replaced by "gen"). Everything is deterministic: the same request gets the same
//! bytes back.
//!
//! Routes, each under `/v1beta` and also under `/v1`:
//!
//! * `POST …/models/{model}:generateContent` — one `GenerateContentResponse`;
//! * `POST …/models/{model}:streamGenerateContent?alt=sse` — `text/event-stream`, one
//!   `data: {…}\r\n\r\n` event per chunk, no `event:` lines, no `[DONE]`; without `alt=sse` the
//!   same chunks as one streamed JSON array `[{…}\r\n,\r\n{…}]`;
//! * `POST …/models/{model}:countTokens` — `{"totalTokens": N, "promptTokensDetails": […]}`;
//! * `GET …/models`, `GET …/models/{model}` — the model objects of [`MODELS`].
//!
//! Auth: a non-empty `x-goog-api-key` header or `key` query parameter, else 403
//! `PERMISSION_DENIED`. Errors use the vendor's `{"error":{code,message,status}}`, wrapped in an
//! array (`[{"error":…}]`) for `streamGenerateContent` without `alt=sse`.
//!
//! The token rule (see [`text_tokens`]): a text is `ceil(UTF-8 bytes / 4)` tokens, counted per
//! text part; media — an `inlineData` part's bytes, or what a `fileData` URI answers, fetched
//! first as the vendor fetches it (`crate::fetch`; a URI that cannot be fetched is the vendor's
//! 400) — is measured and counted at the vendor's published rates (`media_tokens`: images by
//! 768-pixel tiles, 32 tokens a second of audio, 263 a second of video; bytes that cannot be
//! read as their type count [`MEDIA_PART_TOKENS`]); any other part (`functionCall`,
//! `functionResponse`, `executableCode`, …) counts its compact JSON (without `thought` and
//! `thoughtSignature`) as text; a video part's `videoMetadata.fps` multiplies its video rate
//! (`tollgate_native_genai::media::fps_multiple`). `promptTokenCount` = `systemInstruction` +
//! every `contents` part + the compact JSON of `tools` and of `generationConfig.responseSchema`
//! (or `responseJsonSchema`) as text. A `cachedContent` is refused: the simulator keeps no
//! caches.
//!
//! The answer is built from "the prompt", the text parts of the **last** `contents` entry: a
//! reply that quotes its first words and grows with it (about twice its length, at least 60 and
//! about at most 2,000 bytes). Thinking models (every model with `thinking: true`) think unless
//! `thinkingBudget` is 0: `min(budget if > 0, 3 × promptTokenCount + 40, 24,576)` tokens, then
//! capped by `maxOutputTokens`, which thoughts and answer share; an answer cut short ends with
//! `MAX_TOKENS`. `[call]` in the prompt, with `tools[].functionDeclarations`, makes the answer a
//! `functionCall` of the first declared function.
//!
//! The image models (`gen-2.5-flash-image`, `gen-3-pro-image-preview`) draw one picture after
//! a short text unless `responseModalities` leaves `IMAGE` out: a PNG of the sides
//! `imageConfig.aspectRatio` and `imageSize` give (`tollgate_native_genai::models::ImageOutput`),
//! times the `image_scale` knob (a vendor drawing larger than asked). Its tokens are the
//! vendor's for the size drawn, in `candidatesTokenCount` and, by modality,
//! `candidatesTokensDetails`.

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, Method};
use serde_json::{Map, Value, json};
use std::sync::Mutex;

/// One model of the simulated vendor.
#[derive(Debug)]
pub(crate) struct Model {
    pub id: &'static str,
    pub display_name: &'static str,
    pub version: &'static str,
    pub input_limit: u64,
    pub output_limit: u64,
    /// Thinks by default (generation 2.5 and later).
    pub thinking: bool,
    /// Draws images.
    pub draws: bool,
}

/// The models the simulator knows; any other id is a 404 `NOT_FOUND`.
pub(crate) const MODELS: &[Model] = &[
    Model {
        id: "gen-2.0-flash",
        display_name: "Gen 2.0 Flash",
        version: "2.0",
        input_limit: 1_048_576,
        output_limit: 8_192,
        thinking: false,
        draws: false,
    },
    Model {
        id: "gen-2.5-flash",
        display_name: "Gen 2.5 Flash",
        version: "001",
        input_limit: 1_048_576,
        output_limit: 65_536,
        thinking: true,
        draws: false,
    },
    Model {
        id: "gen-2.5-flash-lite",
        display_name: "Gen 2.5 Flash-Lite",
        version: "001",
        input_limit: 1_048_576,
        output_limit: 65_536,
        thinking: true,
        draws: false,
    },
    Model {
        id: "gen-2.5-pro",
        display_name: "Gen 2.5 Pro",
        version: "2.5",
        input_limit: 1_048_576,
        output_limit: 65_536,
        thinking: true,
        draws: false,
    },
    Model {
        id: "gen-3-pro-preview",
        display_name: "Gen 3 Pro Preview",
        version: "3-pro-preview-11-2025",
        input_limit: 1_048_576,
        output_limit: 65_536,
        thinking: true,
        draws: false,
    },
    Model {
        id: "gen-2.5-flash-image",
        display_name: "Gen 2.5 Flash Image",
        version: "2.5",
        input_limit: 32_768,
        output_limit: 32_768,
        thinking: false,
        draws: true,
    },
    Model {
        id: "gen-3-pro-image-preview",
        display_name: "Gen 3 Pro Image Preview",
        version: "3-pro-image-preview-11-2025",
        input_limit: 65_536,
        output_limit: 32_768,
        thinking: true,
        draws: true,
    },
];

/// Tokens of one `inlineData` or `fileData` part, whatever its size.
pub(crate) const MEDIA_PART_TOKENS: u64 = 258;
/// The most a model thinks, whatever the budget.
pub(crate) const MAX_THINKING_TOKENS: u64 = 24_576;
/// In the prompt, with declared functions: answer with a function call.
pub(crate) const CALL_MARKER: &str = "[call]";
/// The message of the error frame sent when the `error_after_frames` knob strikes.
const MID_STREAM_FAILURE: &str = "simulated failure mid-stream";

/// The token rule: `ceil(UTF-8 bytes / 4)`.
pub(crate) fn text_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

fn find_model(id: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.id == id)
}

/// What a native route does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    List,
    Get,
    Generate,
    Stream,
    Count,
    /// Imagen's `:predict`.
    Predict,
}

/// A recognised native route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Route<'a> {
    /// `/v1beta` or `/v1`.
    pub prefix: &'static str,
    pub op: Op,
    /// Empty for [`Op::List`].
    pub model: &'a str,
}

/// How a reply is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One JSON body.
    Whole,
    /// `streamGenerateContent?alt=sse`.
    Sse,
    /// `streamGenerateContent` without `alt=sse`: one streamed JSON array.
    Array,
}

impl Route<'_> {
    /// The counter of `/_sim/stats`, e.g. `POST /v1beta/models/{model}:generateContent`.
    pub(crate) fn stats_key(&self) -> String {
        let p = self.prefix;
        match self.op {
            Op::List => format!("GET {p}/models"),
            Op::Get => format!("GET {p}/models/{{model}}"),
            Op::Generate => format!("POST {p}/models/{{model}}:generateContent"),
            Op::Stream => format!("POST {p}/models/{{model}}:streamGenerateContent"),
            Op::Count => format!("POST {p}/models/{{model}}:countTokens"),
            Op::Predict => format!("POST {p}/models/{{model}}:predict"),
        }
    }

    /// The framing asked for by the route and its query.
    pub(crate) fn mode(&self, query: Option<&str>) -> Mode {
        match self.op {
            Op::Stream if query_param(query, "alt") == Some("sse") => Mode::Sse,
            Op::Stream => Mode::Array,
            _ => Mode::Whole,
        }
    }
}

/// Whether a path belongs to the native API (`/v1beta/…`, `/v1/models…`).
pub(crate) fn is_native_path(path: &str) -> bool {
    path.starts_with("/v1beta/")
        || path == "/v1beta"
        || path == "/v1/models"
        || path.starts_with("/v1/models/")
}

/// The route of a native path, if the method and path name one.
pub(crate) fn route<'a>(method: &Method, path: &'a str) -> Option<Route<'a>> {
    let (prefix, rest) = if let Some(rest) = path.strip_prefix("/v1beta/models") {
        ("/v1beta", rest)
    } else {
        ("/v1", path.strip_prefix("/v1/models")?)
    };
    if rest.is_empty() || rest == "/" {
        return (method == Method::GET).then_some(Route {
            prefix,
            op: Op::List,
            model: "",
        });
    }
    let rest = rest.strip_prefix('/')?;
    if rest.is_empty() || rest.contains('/') {
        return None;
    }
    let (model, op) = match rest.rsplit_once(':') {
        None if method == Method::GET => (rest, Op::Get),
        None => return None,
        Some((model, action)) if method == Method::POST => match action {
            "generateContent" => (model, Op::Generate),
            "streamGenerateContent" => (model, Op::Stream),
            "countTokens" => (model, Op::Count),
            "predict" => (model, Op::Predict),
            _ => return None,
        },
        Some(_) => return None,
    };
    (!model.is_empty()).then_some(Route { prefix, op, model })
}

/// A query parameter's value (not percent-decoded; the simulator needs none).
fn query_param<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then_some(value)
    })
}

/// How the request authenticated: `"header"` (`x-goog-api-key`), `"query"` (`?key=`), or `None`.
pub(crate) fn auth(headers: &HeaderMap, query: Option<&str>) -> Option<&'static str> {
    let header = headers
        .get("x-goog-api-key")
        .is_some_and(|v| !v.as_bytes().is_empty());
    if header {
        Some("header")
    } else if query_param(query, "key").is_some_and(|k| !k.is_empty()) {
        Some("query")
    } else {
        None
    }
}

/// The last request body the native routes received, for `GET /_sim/genai/last-request`.
#[derive(Debug, Default)]
pub(crate) struct Genai {
    last: Mutex<Option<LastRequest>>,
}

/// A request as the simulator received it.
#[derive(Debug, Clone)]
pub(crate) struct LastRequest {
    /// `POST /v1beta/models/…:…?…`, with the query as sent.
    pub line: String,
    /// `header`, `query` or `none`.
    pub auth: &'static str,
    /// The body, byte for byte.
    pub body: Bytes,
}

impl Genai {
    pub(crate) fn record(&self, request: LastRequest) {
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(request);
    }

    pub(crate) fn last(&self) -> Option<LastRequest> {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// What the server sends.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A JSON body with this status.
    Json(u16, Value),
    /// SSE events, each `data: {…}\r\n\r\n`.
    Sse(Vec<Bytes>),
    /// The pieces of one JSON array: `[{…}`, `\r\n,\r\n{…}`, …, the last ending in `]`.
    Array(Vec<Bytes>),
}

/// The vendor's status name for an HTTP status.
pub(crate) fn status_name(code: u16) -> &'static str {
    match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        412 => "FAILED_PRECONDITION",
        413 => "INVALID_ARGUMENT",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        500 => "INTERNAL",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ if (400..500).contains(&code) => "FAILED_PRECONDITION",
        _ => "UNKNOWN",
    }
}

/// `{"error":{"code","message","status"}}`.
pub(crate) fn error_body(code: u16, message: &str) -> Value {
    json!({"error": {"code": code, "message": message, "status": status_name(code)}})
}

/// An error in the framing of `mode`: wrapped in an array for the JSON-array stream.
pub(crate) fn refuse(mode: Mode, code: u16, message: &str) -> Reply {
    let body = error_body(code, message);
    Reply::Json(
        code,
        if mode == Mode::Array {
            Value::Array(vec![body])
        } else {
            body
        },
    )
}

/// The answer to the `fail_status` knob.
pub(crate) fn failure(mode: Mode, status: u16) -> Reply {
    refuse(
        mode,
        status,
        &format!("simulated upstream failure ({status})"),
    )
}

/// The answer to a request without a key.
pub(crate) fn forbidden(mode: Mode) -> Reply {
    refuse(
        mode,
        403,
        "Method doesn't allow unregistered callers (callers without established identity). \
         Please use API Key or other form of API consumer identity to call this API.",
    )
}

/// The SSE frame sent when the `error_after_frames` knob strikes.
pub(crate) fn sse_error_frame() -> Bytes {
    Bytes::from(format!(
        "data: {}\r\n\r\n",
        error_body(500, MID_STREAM_FAILURE)
    ))
}

/// The array piece sent instead of piece `at` when the `error_after_frames` knob strikes: the
/// error object as the next element, closing the array.
pub(crate) fn array_error_frame(at: u32) -> Bytes {
    let error = error_body(500, MID_STREAM_FAILURE);
    Bytes::from(if at == 0 {
        format!("[{error}]")
    } else {
        format!("\r\n,\r\n{error}]")
    })
}

/// Answers a request on a recognised route (auth and knobs already applied).
pub(crate) fn respond(
    route: &Route<'_>,
    mode: Mode,
    body: &[u8],
    files: &Files,
    image_scale: u32,
) -> Reply {
    if route.op == Op::List {
        let models: Vec<Value> = MODELS.iter().map(model_json).collect();
        return Reply::Json(200, json!({ "models": models }));
    }
    if route.op == Op::Predict {
        return imagen::predict(route.model, body, image_scale);
    }
    let Some(model) = find_model(route.model) else {
        let action = match route.op {
            Op::Generate => "generateContent",
            Op::Stream => "streamGenerateContent",
            Op::Count => "countTokens",
            Op::Predict => "predict",
            Op::List | Op::Get => "get",
        };
        let version = route.prefix.trim_start_matches('/');
        return refuse(
            mode,
            404,
            &format!(
                "models/{} is not found for API version {version}, or is not supported for \
                 {action}. Call ListModels to see the list of available models and their \
                 supported methods.",
                route.model
            ),
        );
    };
    if route.op == Op::Get {
        return Reply::Json(200, model_json(model));
    }
    let request = match parse_object(body) {
        Ok(request) => request,
        Err(message) => return refuse(mode, 400, &message),
    };
    if route.op == Op::Count {
        return match count_tokens(&request, files) {
            Ok(prompt) => Reply::Json(
                200,
                json!({"totalTokens": prompt.tokens, "promptTokensDetails": prompt.details()}),
            ),
            Err(message) => refuse(mode, 400, &message),
        };
    }
    let plan = match Plan::new(model, &request, body, files, image_scale) {
        Ok(plan) => plan,
        Err(message) => return refuse(mode, 400, &message),
    };
    match mode {
        Mode::Whole => Reply::Json(200, plan.whole()),
        Mode::Sse => Reply::Sse(
            plan.chunks()
                .iter()
                .map(|c| Bytes::from(format!("data: {c}\r\n\r\n")))
                .collect(),
        ),
        Mode::Array => {
            let chunks = plan.chunks();
            let last = chunks.len().saturating_sub(1);
            Reply::Array(
                chunks
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let open = if i == 0 { "[" } else { "\r\n,\r\n" };
                        let close = if i == last { "]" } else { "" };
                        Bytes::from(format!("{open}{c}{close}"))
                    })
                    .collect(),
            )
        }
    }
}

/// The vendor's model object.
fn model_json(model: &Model) -> Value {
    json!({
        "name": format!("models/{}", model.id),
        "version": model.version,
        "displayName": model.display_name,
        "description": format!("Simulated {}.", model.display_name),
        "inputTokenLimit": model.input_limit,
        "outputTokenLimit": model.output_limit,
        "supportedGenerationMethods": ["generateContent", "countTokens"],
        "temperature": 1.0,
        "topP": 0.95,
        "topK": 64,
        "maxTemperature": 2.0,
        "thinking": model.thinking,
    })
}

fn parse_object(body: &[u8]) -> Result<Map<String, Value>, String> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("Invalid JSON payload received. Expected an object.".into()),
        Err(e) => Err(format!("Invalid JSON payload received. {e}")),
    }
}

/// A field under its camelCase or its snake_case name (the API accepts both).
fn field<'v>(object: &'v Map<String, Value>, camel: &str, snake: &str) -> Option<&'v Value> {
    object
        .get(camel)
        .or_else(|| object.get(snake))
        .filter(|v| !v.is_null())
}

/// Prompt tokens, in total and per modality.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Prompt {
    tokens: u64,
    /// (modality, tokens), in first-seen order.
    by_modality: Vec<(&'static str, u64)>,
}

impl Prompt {
    fn add(&mut self, modality: &'static str, tokens: u64) {
        self.tokens += tokens;
        match self.by_modality.iter_mut().find(|(m, _)| *m == modality) {
            Some((_, n)) => *n += tokens,
            None => self.by_modality.push((modality, tokens)),
        }
    }

    /// Counts the parts of one `Content` (`{role, parts}`).
    fn add_content(&mut self, content: &Value, files: &Files) -> Result<(), String> {
        let parts = content.get("parts").and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            let (modality, tokens) = part_tokens(part, files)?;
            self.add(modality, tokens);
        }
        Ok(())
    }

    /// `promptTokensDetails`: TEXT always, then the media modalities seen.
    fn details(&self) -> Value {
        let mut details = vec![json!({"modality": "TEXT", "tokenCount": self.text()})];
        details.extend(
            self.by_modality
                .iter()
                .filter(|(m, _)| *m != "TEXT")
                .map(|(m, n)| json!({"modality": m, "tokenCount": n})),
        );
        Value::Array(details)
    }

    fn text(&self) -> u64 {
        self.by_modality
            .iter()
            .find(|(m, _)| *m == "TEXT")
            .map_or(0, |(_, n)| *n)
    }
}

/// The modality and tokens of one part, by the token rule.
fn part_tokens(part: &Value, files: &Files) -> Result<(&'static str, u64), String> {
    let Some(object) = part.as_object() else {
        return Ok(("TEXT", text_tokens(&part.to_string())));
    };
    if let Some(text) = object.get("text").and_then(Value::as_str) {
        return Ok(("TEXT", text_tokens(text)));
    }
    let inline = field(object, "inlineData", "inline_data");
    let file = field(object, "fileData", "file_data");
    if let Some(media) = inline.or(file) {
        let mime = media
            .get("mimeType")
            .or_else(|| media.get("mime_type"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_ascii_lowercase();
        let bytes: Bytes = match (inline, file) {
            (Some(blob), _) => blob
                .get("data")
                .and_then(Value::as_str)
                .and_then(|d| {
                    base64::engine::general_purpose::STANDARD
                        .decode(d.trim())
                        .ok()
                })
                .map(Bytes::from)
                .unwrap_or_default(),
            _ => {
                let uri = media
                    .get("fileUri")
                    .or_else(|| media.get("file_uri"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                files
                    .get(uri)
                    .cloned()
                    .ok_or_else(|| format!("Cannot fetch content from the provided URL: {uri}"))?
            }
        };
        let (modality, tokens) = media_tokens(&mime, &bytes);
        if modality != "VIDEO" {
            return Ok((modality, tokens));
        }
        // A video is sampled at the frame rate the part asks for (one a second by default).
        let fps = object
            .get("videoMetadata")
            .or_else(|| object.get("video_metadata"))
            .and_then(|metadata| metadata.get("fps"));
        let multiple = tollgate_native_genai::media::fps_multiple(fps)
            .ok_or_else(|| format!("Invalid value at 'video_metadata.fps': {fps:?}"))?;
        return Ok((modality, tokens.saturating_mul(multiple)));
    }
    let mut rest = object.clone();
    for key in ["thought", "thoughtSignature", "thought_signature"] {
        rest.remove(key);
    }
    Ok(("TEXT", text_tokens(&Value::Object(rest).to_string())))
}

/// The modality and tokens of media the vendor read: measured from the bytes
/// (`tollgate_probe::media`) at the vendor's rates (`tollgate_native_genai::media`); a text
/// document by the text rule. Bytes that cannot be read as their type count as one image
/// ([`MEDIA_PART_TOKENS`]): the vendor would refuse them, the simulator is lenient.
fn media_tokens(mime: &str, bytes: &[u8]) -> (&'static str, u64) {
    use tollgate_native_genai::media::{Media, tokens};
    use tollgate_probe::media::{Measured, measure};
    if mime.starts_with("text/") || mime == "application/json" {
        return ("TEXT", text_tokens(&String::from_utf8_lossy(bytes)));
    }
    let modality = match mime.split('/').next().unwrap_or("") {
        "image" => "IMAGE",
        "audio" => "AUDIO",
        "video" => "VIDEO",
        _ => "DOCUMENT",
    };
    let counted = match measure(mime, bytes) {
        Some(Measured::Image { width, height }) => tokens(Media::Image { width, height }),
        Some(Measured::Audio { seconds }) => tokens(Media::AudioSeconds(seconds)),
        Some(Measured::Video { seconds }) => tokens(Media::VideoSeconds(seconds)),
        None => MEDIA_PART_TOKENS,
    };
    (modality, counted)
}

/// The files a request names by URI (`fileData.fileUri`), fetched before it is answered, as
/// the vendor fetches them (`crate::fetch`): what was fetched, by URI.
pub(crate) type Files = std::collections::HashMap<String, Bytes>;

/// Every `fileData.fileUri` of a native request body (its contents and system instruction,
/// or a countTokens request's inner request).
pub(crate) fn file_uris(body: &[u8]) -> Vec<String> {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let mut uris = Vec::new();
    let mut visit = |v: &Value| {
        for part in v
            .pointer("/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let file = part.get("fileData").or_else(|| part.get("file_data"));
            if let Some(uri) = file
                .and_then(|f| f.get("fileUri").or_else(|| f.get("file_uri")))
                .and_then(Value::as_str)
            {
                uris.push(uri.to_owned());
            }
        }
    };
    let inner = value
        .get("generateContentRequest")
        .or_else(|| value.get("generate_content_request"))
        .unwrap_or(&value);
    for key in ["systemInstruction", "system_instruction"] {
        if let Some(system) = inner.get(key) {
            visit(system);
        }
    }
    for content in inner
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        visit(content);
    }
    uris
}

/// Validates `contents` (a non-empty array of contents with non-empty `parts`) and counts it
/// with the `systemInstruction`.
fn prompt_of(request: &Map<String, Value>, what: &str, files: &Files) -> Result<Prompt, String> {
    let contents = field(request, "contents", "contents")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| format!("* {what}.contents: contents is not specified\n"))?;
    let mut prompt = Prompt::default();
    if let Some(system) = field(request, "systemInstruction", "system_instruction") {
        prompt.add_content(system, files)?;
    }
    for (i, content) in contents.iter().enumerate() {
        let has_parts = content
            .get("parts")
            .and_then(Value::as_array)
            .is_some_and(|p| !p.is_empty());
        if !has_parts {
            return Err(format!(
                "* {what}.contents[{i}].parts: contents.parts must not be empty.\n"
            ));
        }
        prompt.add_content(content, files)?;
    }
    // The vendor counts the declarations of tools and the answer's schema as prompt text, and
    // adds a cached content's tokens; the simulator keeps no caches.
    if let Some(tools) = field(request, "tools", "tools") {
        prompt.add("TEXT", text_tokens(&tools.to_string()));
    }
    if let Some(Value::Object(config)) = field(request, "generationConfig", "generation_config") {
        for (camel, snake) in [
            ("responseSchema", "response_schema"),
            ("responseJsonSchema", "response_json_schema"),
        ] {
            if let Some(schema) = field(config, camel, snake) {
                prompt.add("TEXT", text_tokens(&schema.to_string()));
            }
        }
    }
    if let Some(name) = field(request, "cachedContent", "cached_content") {
        return Err(format!(
            "CachedContent not found (or permission denied): {name}"
        ));
    }
    Ok(prompt)
}

/// `countTokens`: `contents`, or `generateContentRequest.{systemInstruction, contents}`.
fn count_tokens(request: &Map<String, Value>, files: &Files) -> Result<Prompt, String> {
    match field(
        request,
        "generateContentRequest",
        "generate_content_request",
    ) {
        Some(Value::Object(inner)) => {
            prompt_of(inner, "CountTokensRequest.generateContentRequest", files)
        }
        Some(_) => Err("* CountTokensRequest.generateContentRequest: must be an object\n".into()),
        None => prompt_of(request, "CountTokensRequest", files),
    }
}

/// An integer setting: absent (or null) is `None`, a non-integer is an error.
fn int_setting(
    object: Option<&Map<String, Value>>,
    camel: &str,
    snake: &str,
) -> Result<Option<i64>, String> {
    match object.and_then(|o| field(o, camel, snake)) {
        None => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| {
            format!("Invalid value at '{snake}' (TYPE_INT32), {v}: expected an integer")
        }),
    }
}

/// What the model answers.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Text(String),
    /// `{"name", "args"}`.
    Call(Value),
}

/// One generation, worked out in full before anything is sent.
#[derive(Debug)]
struct Plan {
    model: &'static Model,
    prompt: Prompt,
    /// Thinking tokens spent (`thoughtsTokenCount`).
    thoughts: u64,
    /// The thinking itself, exactly `4 × thoughts` ASCII bytes, when `includeThoughts` is set.
    thought_text: Option<String>,
    answer: Answer,
    finish: &'static str,
    response_id: String,
    /// Set when `includeThoughts` is true and the model thought.
    signature: Option<String>,
    /// The picture an image model drew.
    image: Option<Drawn>,
}

/// A picture drawn: its tokens and its PNG, base64.
#[derive(Debug)]
struct Drawn {
    tokens: u64,
    b64: String,
}

/// The picture `model` draws for `config`, if it draws: the sides of the ratio and size asked,
/// times `scale`; its tokens the vendor's for the size drawn.
fn draw(
    model: &Model,
    config: Option<&Map<String, Value>>,
    prompt: &str,
    scale: u32,
) -> Result<Option<Drawn>, String> {
    let Some(images) = tollgate_native_genai::models::limits(model.id).and_then(|l| l.images)
    else {
        return Ok(None);
    };
    let asks = match config.and_then(|c| field(c, "responseModalities", "response_modalities")) {
        None => true,
        Some(Value::Array(modalities)) => modalities
            .iter()
            .any(|m| m.as_str().is_some_and(|m| m.eq_ignore_ascii_case("IMAGE"))),
        Some(_) => return Err("Invalid value at 'generation_config.response_modalities'".into()),
    };
    if !model.draws || !asks {
        return Ok(None);
    }
    let image_config = config.and_then(|c| field(c, "imageConfig", "image_config"));
    let setting = |camel, snake| {
        image_config
            .and_then(Value::as_object)
            .and_then(|c| field(c, camel, snake))
            .and_then(Value::as_str)
    };
    let aspect = setting("aspectRatio", "aspect_ratio").unwrap_or("1:1");
    let size = match setting("imageSize", "image_size") {
        None => 0,
        Some(size) => images
            .size_index(size)
            .ok_or_else(|| format!("Invalid image size {size:?}"))?,
    };
    let (w, h) = images
        .sides(aspect, size)
        .ok_or_else(|| format!("Invalid aspect ratio {aspect:?}"))?;
    let (w, h) = (w * scale.max(1), h * scale.max(1));
    let seed = prompt
        .bytes()
        .fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
    let png = crate::images::picture(
        tollgate_images::Size::new(w, h),
        seed,
        1,
        tollgate_images::OutputFormat::Png,
    )?;
    Ok(Some(Drawn {
        tokens: images.tokens_of(usize::MAX, (w, h)),
        b64: base64::engine::general_purpose::STANDARD.encode(png),
    }))
}

impl Plan {
    fn new(
        model: &'static Model,
        request: &Map<String, Value>,
        body: &[u8],
        files: &Files,
        image_scale: u32,
    ) -> Result<Plan, String> {
        let prompt = prompt_of(request, "GenerateContentRequest", files)?;
        let config = match field(request, "generationConfig", "generation_config") {
            None => None,
            Some(Value::Object(config)) => Some(config),
            Some(_) => {
                return Err("Invalid value at 'generation_config': expected an object".into());
            }
        };
        let max_output = match int_setting(config, "maxOutputTokens", "max_output_tokens")? {
            None | Some(0) => model.output_limit,
            Some(n) if n > 0 => u64::try_from(n).unwrap_or(u64::MAX).min(model.output_limit),
            Some(n) => return Err(format!("max_output_tokens must be positive, got {n}")),
        };
        let thinking = match config.and_then(|c| field(c, "thinkingConfig", "thinking_config")) {
            None => None,
            Some(Value::Object(thinking)) => Some(thinking),
            Some(_) => {
                return Err(
                    "Invalid value at 'generation_config.thinking_config': expected an object"
                        .into(),
                );
            }
        };
        let budget = match int_setting(thinking, "thinkingBudget", "thinking_budget")? {
            None => -1,
            Some(b) if b >= -1 => b,
            Some(b) => return Err(format!("thinking_budget must be -1 or more, got {b}")),
        };
        let include_thoughts =
            match thinking.and_then(|t| field(t, "includeThoughts", "include_thoughts")) {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(v) => {
                    return Err(format!(
                        "Invalid value at 'generation_config.thinking_config.include_thoughts' \
                     (TYPE_BOOL), {v}"
                    ));
                }
            };

        let automatic = (3 * prompt.tokens + 40).min(MAX_THINKING_TOKENS);
        let planned = match (model.thinking, budget) {
            (false, _) | (true, 0) => 0,
            (true, b) if b > 0 => u64::try_from(b).unwrap_or(0).min(automatic),
            (true, _) => automatic,
        };
        let thoughts = planned.min(max_output);
        let left = max_output - thoughts;

        let text = last_text(request);
        let response_id = response_id(model.id, body);
        let (answer, finish) = match function_to_call(request, &text) {
            Some(name) => {
                let query = text.replace(CALL_MARKER, "").trim().to_owned();
                let call = json!({"name": name, "args": {"query": query}});
                (Answer::Call(call), "STOP")
            }
            None => {
                let full = compose(&text);
                let kept = prefix(
                    &full,
                    usize::try_from(left.saturating_mul(4)).unwrap_or(usize::MAX),
                );
                let finish = if kept.len() < full.len() || thoughts < planned {
                    "MAX_TOKENS"
                } else {
                    "STOP"
                };
                (Answer::Text(kept.to_owned()), finish)
            }
        };
        let image = draw(model, config, &text, image_scale)?;
        let shows_thoughts = include_thoughts && thoughts > 0;
        let signed = shows_thoughts || matches!(answer, Answer::Call(_));
        let signature = signed.then(|| signature(&response_id));
        let thought_text = shows_thoughts.then(|| think(&text, thoughts));
        Ok(Plan {
            model,
            prompt,
            thoughts,
            thought_text,
            answer,
            finish,
            response_id,
            signature,
            image,
        })
    }

    /// `candidatesTokenCount` of the whole answer.
    fn answer_tokens(&self) -> u64 {
        match &self.answer {
            Answer::Text(text) => text_tokens(text),
            Answer::Call(call) => text_tokens(&call.to_string()),
        }
    }

    fn usage(&self, candidates: u64, thoughts: u64) -> Value {
        let mut usage = json!({
            "promptTokenCount": self.prompt.tokens,
            "candidatesTokenCount": candidates,
            "totalTokenCount": self.prompt.tokens + candidates + thoughts,
            "promptTokensDetails": self.prompt.details(),
        });
        if thoughts > 0 {
            usage["thoughtsTokenCount"] = json!(thoughts);
        }
        if self.model.draws {
            // An image model itemises its candidates: the picture once it is sent.
            let sent = candidates >= self.answer_tokens() + self.image_tokens();
            let drawn = if sent { self.image_tokens() } else { 0 };
            let mut details = vec![json!({"modality": "TEXT", "tokenCount": candidates - drawn})];
            if drawn > 0 {
                details.push(json!({"modality": "IMAGE", "tokenCount": drawn}));
            }
            usage["candidatesTokensDetails"] = Value::Array(details);
        }
        usage
    }

    /// The picture's part.
    fn image_part(&self) -> Option<Value> {
        self.image
            .as_ref()
            .map(|d| json!({"inlineData": {"mimeType": "image/png", "data": d.b64}}))
    }

    /// The picture's tokens.
    fn image_tokens(&self) -> u64 {
        self.image.as_ref().map_or(0, |d| d.tokens)
    }

    /// One `GenerateContentResponse` with these parts.
    fn response(&self, parts: Vec<Value>, finish: bool, candidates: u64, thoughts: u64) -> Value {
        let mut content = json!({"role": "model"});
        if !parts.is_empty() {
            content["parts"] = Value::Array(parts);
        }
        let mut candidate = json!({"content": content, "index": 0});
        if finish {
            candidate["finishReason"] = json!(self.finish);
        }
        json!({
            "candidates": [candidate],
            "usageMetadata": self.usage(candidates, thoughts),
            "modelVersion": self.model.id,
            "responseId": self.response_id,
        })
    }

    /// The answer part(s) after the thoughts.
    fn answer_part(&self, text: &str) -> Option<Value> {
        match &self.answer {
            Answer::Text(_) if text.is_empty() => None,
            Answer::Text(_) => Some(json!({ "text": text })),
            Answer::Call(call) => Some(json!({ "functionCall": call })),
        }
    }

    /// The `generateContent` answer.
    fn whole(&self) -> Value {
        let mut parts = Vec::new();
        if let Some(thought) = &self.thought_text {
            parts.push(json!({"text": thought, "thought": true}));
        }
        let text = match &self.answer {
            Answer::Text(text) => text.as_str(),
            Answer::Call(_) => "",
        };
        parts.extend(self.answer_part(text));
        parts.extend(self.image_part());
        sign_last(&mut parts, self.signature.as_deref());
        self.response(
            parts,
            true,
            self.answer_tokens() + self.image_tokens(),
            self.thoughts,
        )
    }

    /// The chunks of a stream: thought chunks first (when shown), then the answer in pieces; every
    /// chunk carries the usage so far, the last one `finishReason` and the final totals.
    fn chunks(&self) -> Vec<Value> {
        // (parts, candidates so far, thoughts so far)
        let mut chunks: Vec<(Vec<Value>, u64, u64)> = Vec::new();
        if let Some(thought) = &self.thought_text {
            let mut sent = 0usize;
            for piece in split(thought, 8, 64) {
                sent += piece.len();
                let part = json!({"text": piece, "thought": true});
                chunks.push((vec![part], 0, (sent as u64).div_ceil(4)));
            }
        }
        match &self.answer {
            Answer::Text(text) if !text.is_empty() => {
                let mut sent = 0usize;
                for piece in split(text, 16, 32) {
                    sent += piece.len();
                    let parts = self.answer_part(piece).into_iter().collect();
                    chunks.push((parts, (sent as u64).div_ceil(4), self.thoughts));
                }
            }
            Answer::Text(_) => chunks.push((Vec::new(), 0, self.thoughts)),
            Answer::Call(_) => {
                let parts = self.answer_part("").into_iter().collect();
                chunks.push((parts, self.answer_tokens(), self.thoughts));
            }
        }
        if let Some(part) = self.image_part() {
            // The picture comes whole, in a chunk of its own.
            let candidates = chunks.last().map_or(0, |c| c.1);
            chunks.push((vec![part], candidates + self.image_tokens(), self.thoughts));
        }
        // The signature goes on the last part sent.
        if let Some(parts) = chunks
            .iter_mut()
            .rev()
            .map(|c| &mut c.0)
            .find(|p| !p.is_empty())
        {
            sign_last(parts, self.signature.as_deref());
        }
        let last = chunks.len().saturating_sub(1);
        chunks
            .into_iter()
            .enumerate()
            .map(|(i, (parts, candidates, thoughts))| {
                self.response(parts, i == last, candidates, thoughts)
            })
            .collect()
    }
}

/// Puts the signature on the last part, if any.
fn sign_last(parts: &mut [Value], signature: Option<&str>) {
    if let (Some(signature), Some(Value::Object(last))) = (signature, parts.last_mut()) {
        last.insert("thoughtSignature".into(), json!(signature));
    }
}

/// The text parts (not thoughts) of the last `contents` entry, joined by newlines; for an entry
/// without text (a `functionResponse` turn), a description of its parts.
fn last_text(request: &Map<String, Value>) -> String {
    let parts = field(request, "contents", "contents")
        .and_then(Value::as_array)
        .and_then(|c| c.last())
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let texts: Vec<&str> = parts
        .iter()
        .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect();
    if !texts.is_empty() {
        return texts.join("\n");
    }
    let names: Vec<&str> = parts
        .iter()
        .filter_map(|p| {
            p.get("functionResponse")
                .or_else(|| p.get("function_response"))
        })
        .filter_map(|r| r.get("name").and_then(Value::as_str))
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!("the result of {}", names.join(" and "))
    }
}

/// The first declared function, when the prompt asks for a call and calling is not switched off.
fn function_to_call<'r>(request: &'r Map<String, Value>, text: &str) -> Option<&'r str> {
    if !text.contains(CALL_MARKER) {
        return None;
    }
    let mode = field(request, "toolConfig", "tool_config")
        .and_then(|c| {
            c.get("functionCallingConfig")
                .or_else(|| c.get("function_calling_config"))
        })
        .and_then(|c| c.get("mode"))
        .and_then(Value::as_str);
    if mode == Some("NONE") {
        return None;
    }
    field(request, "tools", "tools")?
        .as_array()?
        .iter()
        .filter_map(|tool| {
            tool.get("functionDeclarations")
                .or_else(|| tool.get("function_declarations"))
        })
        .filter_map(Value::as_array)
        .flatten()
        .find_map(|declaration| declaration.get("name").and_then(Value::as_str))
}

/// The longest prefix of at most `bytes` bytes that ends on a character boundary.
fn prefix(text: &str, bytes: usize) -> &str {
    let mut cut = bytes.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    &text[..cut]
}

/// At most the first 40 bytes of a word.
fn clip_word(word: &str) -> &str {
    prefix(word, 40)
}

/// The reply to a prompt: quotes its first eight words, then "Point n: …" sentences cycling
/// through its words, until it is twice as long as the prompt (at least 60, at most 2,000 bytes
/// before the last sentence).
fn compose(prompt: &str) -> String {
    let mut words: Vec<&str> = prompt
        .split_whitespace()
        .filter(|w| *w != CALL_MARKER)
        .map(clip_word)
        .collect();
    if words.is_empty() {
        words.push("nothing");
    }
    let target = (prompt.len() * 2).clamp(60, 2000);
    let head: Vec<&str> = words.iter().take(8).copied().collect();
    let mut out = format!("Simulated reply to \"{}\".", head.join(" "));
    let mut n = 0usize;
    while out.len() < target {
        let word = |k: usize| words[(n * 3 + k) % words.len()];
        out.push_str(&format!(
            " Point {}: {} {} {}.",
            n + 1,
            word(0),
            word(1),
            word(2)
        ));
        n += 1;
    }
    out
}

/// Thinking text of exactly `4 × tokens` ASCII bytes, so that it counts exactly `tokens`.
fn think(prompt: &str, tokens: u64) -> String {
    let size = usize::try_from(tokens.saturating_mul(4)).unwrap_or(usize::MAX);
    let words: Vec<String> = prompt
        .split_whitespace()
        .map(|w| {
            w.chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .map(|w| clip_word(&w).to_owned())
        .collect();
    let mut out = String::with_capacity(size + 64);
    out.push_str("Thinking about the request. ");
    let mut n = 0usize;
    while out.len() < size {
        let word = words
            .get(n % words.len().max(1))
            .map_or("it", String::as_str);
        out.push_str(&format!("Step {}: weigh {word}. ", n + 1));
        n += 1;
    }
    out.truncate(size);
    out
}

/// Splits a text into at most about `pieces` pieces of at least `min` bytes, on character
/// boundaries.
fn split(text: &str, pieces: usize, min: usize) -> Vec<&str> {
    let size = text.len().div_ceil(pieces.max(1)).max(min).max(1);
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, tail) = rest.split_at(cut);
        out.push(piece);
        rest = tail;
    }
    out
}

/// FNV-1a of the model and the body, as the response id.
fn response_id(model: &str, body: &[u8]) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in model.bytes().chain([0u8]).chain(body.iter().copied()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("sim{h:016x}")
}

/// A base64 `thoughtSignature`.
fn signature(response_id: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("sim-thought-signature:{response_id}"))
}

#[cfg(test)]
mod unit {
    use super::*;

    fn plan(model: &str, request: Value) -> Plan {
        let body = request.to_string();
        let Value::Object(map) = request else {
            panic!("not an object")
        };
        Plan::new(
            find_model(model).unwrap(),
            &map,
            body.as_bytes(),
            &Files::new(),
            1,
        )
        .unwrap()
    }

    /// An image model draws a PNG of the ratio and size asked, and itemises its tokens.
    #[test]
    fn image_models_draw_and_itemise() {
        let mut request = user("a red fox");
        request["generationConfig"] = json!({"imageConfig": {"aspectRatio": "16:9"}});
        let whole = plan("gen-2.5-flash-image", request).whole();
        let parts = whole["candidates"][0]["content"]["parts"]
            .as_array()
            .unwrap();
        let data = parts.last().unwrap()["inlineData"]["data"]
            .as_str()
            .unwrap();
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        assert_eq!(&png[16..24], &[0, 0, 5, 64, 0, 0, 3, 0]); // 1344 x 768
        let usage = &whole["usageMetadata"];
        let details = usage["candidatesTokensDetails"].as_array().unwrap();
        assert_eq!(
            details[1],
            json!({"modality": "IMAGE", "tokenCount": 1_290})
        );
        let text = details[0]["tokenCount"].as_u64().unwrap();
        assert_eq!(usage["candidatesTokenCount"], json!(text + 1_290));
        let mut text_only = user("a red fox");
        text_only["generationConfig"] = json!({"responseModalities": ["TEXT"]});
        assert!(plan("gen-2.5-flash-image", text_only).image.is_none());
    }

    fn user(text: &str) -> Value {
        json!({"contents": [{"role": "user", "parts": [{"text": text}]}]})
    }

    #[test]
    fn routes_parse_under_both_prefixes() {
        let r = route(
            &Method::POST,
            "/v1beta/models/gen-2.5-flash:generateContent",
        )
        .unwrap();
        assert_eq!(
            (r.prefix, r.op, r.model),
            ("/v1beta", Op::Generate, "gen-2.5-flash")
        );
        assert_eq!(r.stats_key(), "POST /v1beta/models/{model}:generateContent");
        let r = route(&Method::POST, "/v1/models/x:streamGenerateContent").unwrap();
        assert_eq!((r.prefix, r.op), ("/v1", Op::Stream));
        assert_eq!(r.mode(Some("alt=sse&key=k")), Mode::Sse);
        assert_eq!(r.mode(Some("key=k")), Mode::Array);
        assert_eq!(route(&Method::GET, "/v1beta/models").unwrap().op, Op::List);
        assert_eq!(
            route(&Method::GET, "/v1/models/gen-2.0-flash").unwrap().op,
            Op::Get
        );
        assert!(route(&Method::GET, "/v1beta/models/x:generateContent").is_none());
        assert!(route(&Method::POST, "/v1beta/models/x:embedContent").is_none());
        assert!(route(&Method::POST, "/v1beta/models/:countTokens").is_none());
        assert!(is_native_path("/v1beta/anything") && !is_native_path("/v1/embeddings"));
    }

    #[test]
    fn tokens_follow_the_rule() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abcd"), 1);
        assert_eq!(text_tokens("abcde"), 2);
        assert_eq!(text_tokens("你好"), 2); // 6 bytes
        let request = json!({
            "systemInstruction": {"parts": [{"text": "Be terse."}]},           // 9 B → 3
            "contents": [
                {"role": "user", "parts": [
                    {"text": "Describe."},                                       // 9 B → 3
                    {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}    // 258
                ]},
                {"role": "model", "parts": [{"text": "A cat.", "thoughtSignature": "c2ln"}]}, // 2
                {"role": "user", "parts": [{"text": "Colour?"}]}                 // 2
            ]
        });
        let Value::Object(map) = request else {
            panic!()
        };
        let prompt = count_tokens(&map, &Files::new()).unwrap();
        assert_eq!(prompt.tokens, 3 + 3 + 258 + 2 + 2);
        assert_eq!(
            prompt.details(),
            json!([{"modality": "TEXT", "tokenCount": 10}, {"modality": "IMAGE", "tokenCount": 258}])
        );
        let call = json!({"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "x"});
        let bare = json!({"functionCall": {"name": "f", "args": {}}}).to_string();
        assert_eq!(
            part_tokens(&call, &Files::new()),
            Ok(("TEXT", text_tokens(&bare)))
        );
    }

    #[test]
    fn thinking_defaults_budgets_and_the_output_cap() {
        let p = plan("gen-2.5-flash", user("Why is the sky blue?"));
        // 20 bytes → 5 prompt tokens → 3 × 5 + 40 thinking tokens.
        assert_eq!((p.prompt.tokens, p.thoughts, p.finish), (5, 55, "STOP"));
        assert!(p.thought_text.is_none() && p.signature.is_none());
        assert_eq!(
            plan("gen-2.0-flash", user("Why is the sky blue?")).thoughts,
            0
        );

        let mut r = user("Why is the sky blue?");
        r["generationConfig"] = json!({"thinkingConfig": {"thinkingBudget": 0}});
        assert_eq!(plan("gen-3-pro-preview", r.clone()).thoughts, 0);
        r["generationConfig"] = json!({"thinkingConfig": {"thinkingBudget": 16}});
        assert_eq!(plan("gen-2.5-pro", r.clone()).thoughts, 16);
        r["generationConfig"] =
            json!({"thinking_config": {"thinking_budget": -1, "include_thoughts": true}});
        let p = plan("gen-2.5-pro", r.clone());
        assert_eq!(p.thoughts, 55);
        assert_eq!(text_tokens(p.thought_text.as_deref().unwrap()), 55);
        assert_eq!(p.thought_text.as_deref().unwrap().len(), 220);
        assert!(p.signature.is_some());

        // Thoughts take 55 of 60 tokens; the answer gets the other 5 (20 bytes).
        r["generationConfig"] = json!({"maxOutputTokens": 60});
        let p = plan("gen-2.5-flash", r.clone());
        assert_eq!(p.finish, "MAX_TOKENS");
        assert_eq!(p.answer_tokens(), 5);
        assert_eq!(p.answer, Answer::Text("Simulated reply to \"".into()));
        // Thoughts eat everything: no answer part at all.
        r["generationConfig"] = json!({"maxOutputTokens": 30});
        let p = plan("gen-2.5-flash", r.clone());
        assert_eq!(
            (p.thoughts, p.answer_tokens(), p.finish),
            (30, 0, "MAX_TOKENS")
        );
        let whole = p.whole();
        assert!(
            whole["candidates"][0]["content"].get("parts").is_none(),
            "{whole}"
        );
        assert_eq!(whole["usageMetadata"]["totalTokenCount"], 5 + 30);
    }

    #[test]
    fn replies_are_deterministic_bounded_and_grow_with_the_prompt() {
        let short = compose("hi");
        assert!(short.len() >= 60 && short.starts_with("Simulated reply to \"hi\"."));
        assert_eq!(short, compose("hi"));
        let long_prompt = "word ".repeat(200);
        let long = compose(&long_prompt);
        assert!(long.len() >= 2000 && long.len() < 2100, "{}", long.len());
        let huge = compose(&"x".repeat(100_000));
        assert!(huge.len() < 2200);
        assert_eq!(think("日本 go", 3), "Thinking abo");
        assert_eq!(think("go", 10), "Thinking about the request. Step 1: weig");
        assert_eq!(split("abcdef", 2, 1), ["abc", "def"]);
        assert_eq!(split("ééé", 3, 1), ["é", "é", "é"]);
    }

    #[test]
    fn the_call_marker_calls_the_first_declared_function() {
        let mut r = user("Weather in Paris? [call]");
        r["tools"] = json!([{"googleSearch": {}}, {"functionDeclarations": [{"name": "get_weather"}, {"name": "other"}]}]);
        let p = plan("gen-2.0-flash", r.clone());
        assert_eq!(
            p.answer,
            Answer::Call(json!({"name": "get_weather", "args": {"query": "Weather in Paris?"}}))
        );
        assert_eq!(p.finish, "STOP");
        let whole = p.whole();
        let part = &whole["candidates"][0]["content"]["parts"][0];
        assert_eq!(part["functionCall"]["name"], "get_weather");
        assert!(part["thoughtSignature"].is_string());
        r["toolConfig"] = json!({"functionCallingConfig": {"mode": "NONE"}});
        assert!(matches!(plan("gen-2.0-flash", r).answer, Answer::Text(_)));
        assert!(matches!(
            plan("gen-2.0-flash", user("[call]")).answer,
            Answer::Text(_)
        ));
    }

    #[test]
    fn stream_chunks_accumulate_usage_and_end_with_the_totals() {
        let mut r = user(&"tell me about rivers ".repeat(10));
        r["generationConfig"] = json!({"thinkingConfig": {"includeThoughts": true}});
        let p = plan("gen-2.5-flash", r);
        let chunks = p.chunks();
        assert!(chunks.len() > 4);
        let mut thought_seen_after_answer = false;
        let mut answer_started = false;
        let (mut last_c, mut last_t) = (0, 0);
        for (i, chunk) in chunks.iter().enumerate() {
            let u = &chunk["usageMetadata"];
            let (c, t) = (
                u["candidatesTokenCount"].as_u64().unwrap(),
                u["thoughtsTokenCount"].as_u64().unwrap_or(0),
            );
            assert_eq!(
                u["totalTokenCount"].as_u64().unwrap(),
                p.prompt.tokens + c + t
            );
            assert!(c >= last_c && t >= last_t);
            (last_c, last_t) = (c, t);
            let part = &chunk["candidates"][0]["content"]["parts"][0];
            let thought = part["thought"] == json!(true);
            thought_seen_after_answer |= thought && answer_started;
            answer_started |= !thought;
            assert_eq!(
                chunk["candidates"][0].get("finishReason").is_some(),
                i == chunks.len() - 1
            );
        }
        assert!(!thought_seen_after_answer);
        assert_eq!(last_c, p.answer_tokens());
        assert_eq!(last_t, p.thoughts);
        let last = &chunks[chunks.len() - 1]["candidates"][0]["content"]["parts"][0];
        assert!(last["thoughtSignature"].is_string());
        let whole = p.whole();
        assert_eq!(
            whole["usageMetadata"],
            chunks[chunks.len() - 1]["usageMetadata"]
        );
    }
}

mod imagen;
#[cfg(test)]
mod tests;
