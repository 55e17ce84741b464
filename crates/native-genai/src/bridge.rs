//! The chat-completions bridge (docs/api.md §4 rule 4; wire-formats §8): a chat-completions request
//! becomes a native request ([`to_native`]), a native answer becomes a chat completion
//! ([`to_chat`]), and native stream chunks become chat-completion chunks ([`ChunkMapper`]). Pure
//! functions; the gateway does the I/O.
//!
//! # Request: chat → native ([`to_native`])
//!
//! | Chat | Native |
//! |---|---|
//! | `system` / `developer` messages | `systemInstruction.parts[].text`, one part per message, wherever they stand |
//! | `user` | a `user` turn; string content → a `text` part, `text` parts → `text` parts |
//! | `image_url` with a `data:<type>;base64,<data>` URL | `inlineData{mimeType, data}` |
//! | `image_url` with an `http(s)` URL | `fileData{fileUri, mimeType}`, the type guessed from the extension (`png`, `jpg`/`jpeg`, `webp`, `gif`, `heic`, `heif`, `bmp`), else `image/*` |
//! | `input_audio` (`data`, `format` `wav`, `mp3`, `aiff`, `aac`, `ogg`, `flac`, `opus`) | `inlineData{mimeType: audio/…, data}` |
//! | `file` with `file_data` (a `data:` URL, or base64 typed by `filename`'s extension) | `inlineData`; `file_id` is refused (no file store) |
//! | `assistant` | a `model` turn: its text, then each of `tool_calls` as a `functionCall{name, args}` part, `args` parsed from the `arguments` string (`""` is `{}`; anything but a JSON object is refused naming `messages[i].tool_calls[j].function.arguments`); a call's `extra_content.google.thought_signature` goes back as the part's `thoughtSignature`. An assistant message with neither text nor calls is left out. |
//! | `tool` | a `user` turn with `functionResponse{name, response}`: the name of the latest earlier tool call with that `tool_call_id` (or the message's `name`), `response` the content parsed when it is a JSON object, else `{"content": "<text>"}` |
//! | consecutive turns of one role | merged into one turn (the API wants `user`/`model` alternation; several tool results form one turn) |
//! | `max_completion_tokens`, else `max_tokens` | `generationConfig.maxOutputTokens` (1 to the model's cap, checked naming the chat field) |
//! | `temperature`, `top_p`, `stop` (string or array), `n` (1 to 8), `seed` | `temperature`, `topP`, `stopSequences`, `candidateCount`, `seed` |
//! | `response_format` `json_object` / `json_schema` / `text` | `responseMimeType: "application/json"` / the same plus `responseJsonSchema` = `json_schema.schema` / nothing |
//! | `reasoning_effort` | `thinkingConfig.thinkingBudget`, see below |
//! | `tools` (`type: function`) | one tool `{functionDeclarations: [{name, description, parametersJsonSchema}]}`; the JSON Schema goes in `parametersJsonSchema`, which takes JSON Schema as it is (the older `parameters` takes only an OpenAPI subset) |
//! | `tool_choice` `none` / `auto` / `required` / `{type: function, function: {name}}` | `toolConfig.functionCallingConfig.mode` `NONE` / `AUTO` / `ANY` / `ANY` with `allowedFunctionNames: [name]` |
//!
//! `reasoning_effort` ([`effort_budget`]): `none` and `minimal` → 0, thinking off (for a model that
//! cannot turn it off, its smallest budget; for a model that does not think, nothing); `low` →
//! 1,024; `medium` → 8,192; `high` → 24,576; `xhigh` → 32,768 — each moved into the model's range
//! ([`ModelLimits::clamp_budget`]). Any other value, or an effort above `minimal` for a model that
//! does not think, is refused naming `reasoning_effort`. Without `reasoning_effort` no
//! `thinkingConfig` is sent and the model thinks as it does by default.
//!
//! Other chat fields (`frequency_penalty`, `logprobs`, `user`, `parallel_tool_calls`, ...) are not
//! sent on.
//!
//! # Answer: native → chat ([`to_chat`], [`ChunkMapper`])
//!
//! | Native | Chat |
//! |---|---|
//! | parts with `thought: true` | left out |
//! | other `text` parts | `message.content` (concatenated; `null` when the answer only calls tools) |
//! | `functionCall` | `tool_calls[{id, type: "function", function: {name, arguments}}]`, `id` the call's own id or `call_<completion id>_<n>` (n counting from 0 over the answer or stream; the completion's id keeps ids unique across turns), `arguments` the JSON text of `args`; a `thoughtSignature` is kept as `extra_content.google.thought_signature` |
//! | `finishReason` ([`finish_reason`]) | `STOP` → `stop`, `MAX_TOKENS` → `length`, `SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, `IMAGE_SAFETY` (and `IMAGE_PROHIBITED_CONTENT`, `IMAGE_RECITATION`) → `content_filter`, anything else → `stop`; `stop` becomes `tool_calls` when the candidate called a tool |
//! | no candidates, `promptFeedback.blockReason` | one empty choice with `content_filter` |
//! | `usageMetadata` ([`usage`]) | `prompt_tokens` = `promptTokenCount + toolUsePromptTokenCount`; `completion_tokens` = `candidatesTokenCount + thoughtsTokenCount` (docs/api.md §8 rule 7); `total_tokens` = `totalTokenCount` (fallback: the sum); `prompt_tokens_details.cached_tokens` = `cachedContentTokenCount`; `completion_tokens_details.reasoning_tokens` = `thoughtsTokenCount` |

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Number, Value, json};

use crate::chat::{
    CHAT_COMPLETION_CHUNK_OBJECT, CHAT_COMPLETION_OBJECT, ChatChoice, ChatCompletion,
    ChatCompletionChunk, ChatCompletionRequest, ChatMessage, ChatUsage, ChunkChoice, ChunkDelta,
    CompletionTokensDetails, ContentPart, MessageContent, PromptTokensDetails, ToolCall,
    ToolCallFunction,
};
use crate::error::{FieldError, Rule};
use crate::models::ModelLimits;
use crate::request::{
    Blob, Content, FileData, FunctionCall, FunctionResponse, GenerateContentRequest,
    GenerationConfig, Part, ROLE_MODEL, ROLE_USER, ThinkingConfig,
};
use crate::response::{Candidate, GenerateContentResponse, UsageMetadata};
use crate::validate::MAX_CANDIDATE_COUNT;

/// The chat role of the answer.
pub const ROLE_ASSISTANT: &str = "assistant";

/// Translates a chat-completions request into a native request for a model with `limits` (see
/// the [module](self) documentation). Errors name the chat field (`messages[3].tool_call_id`,
/// `max_tokens`, ...). The result should still be checked with [`validate`](crate::validate()).
///
/// ```
/// use tollgate_native_genai::bridge::to_native;
/// use tollgate_native_genai::chat::ChatCompletionRequest;
/// use tollgate_native_genai::models::limits;
///
/// let chat: ChatCompletionRequest = serde_json::from_str(r#"{
///     "model": "gen-2.5-flash",
///     "messages": [{"role": "system", "content": "Be terse."},
///                  {"role": "user", "content": "Hi"}],
///     "max_tokens": 100, "reasoning_effort": "none"
/// }"#)?;
/// let native = to_native(&chat, &limits("gen-2.5-flash").ok_or("unknown")?)?;
/// assert_eq!(
///     serde_json::to_value(&native)?,
///     serde_json::json!({
///         "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
///         "systemInstruction": {"parts": [{"text": "Be terse."}]},
///         "generationConfig": {"maxOutputTokens": 100, "thinkingConfig": {"thinkingBudget": 0}}
///     })
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_native(
    chat: &ChatCompletionRequest,
    limits: &ModelLimits,
) -> Result<GenerateContentRequest, FieldError> {
    let (contents, system) = messages(&chat.messages)?;
    let tools = match &chat.tools {
        Some(tools) => function_declarations(tools)?,
        None => None,
    };
    let tool_config = chat.tool_choice.as_ref().map(tool_config).transpose()?;
    Ok(assemble(
        contents,
        system,
        generation_config(chat, limits)?,
        tools,
        tool_config,
    ))
}

/// A native request of translated pieces: the system parts as the system instruction (none when
/// empty), the generation config only when it sets something.
pub(crate) fn assemble(
    contents: Vec<Content>,
    system: Vec<Part>,
    config: GenerationConfig,
    tools: Option<Vec<Value>>,
    tool_config: Option<Value>,
) -> GenerateContentRequest {
    GenerateContentRequest {
        contents,
        system_instruction: (!system.is_empty()).then(|| Content {
            role: None,
            parts: system,
            extra: Map::new(),
        }),
        generation_config: (config != GenerationConfig::default()).then_some(config),
        tools,
        tool_config,
        ..GenerateContentRequest::default()
    }
}

fn messages(messages: &[ChatMessage]) -> Result<(Vec<Content>, Vec<Part>), FieldError> {
    if messages.is_empty() {
        return Err(FieldError::new(
            "messages",
            Rule::Required,
            "'messages' is required and must have at least one message",
        ));
    }
    let mut contents: Vec<Content> = Vec::new();
    let mut system = Vec::new();
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    for (i, message) in messages.iter().enumerate() {
        let path = format!("messages[{i}]");
        match message.role.as_str() {
            "system" | "developer" => system.extend(system_parts(&path, message)?),
            "user" => push_turn(&mut contents, ROLE_USER, user_parts(&path, message)?),
            "assistant" => {
                let parts = assistant_parts(&path, message)?;
                for call in message.tool_calls.iter().flatten() {
                    call_names.insert(call.id.as_str(), call.function.name.as_str());
                }
                push_turn(&mut contents, ROLE_MODEL, parts);
            }
            "tool" => {
                let part = tool_part(&path, message, &call_names)?;
                push_turn(&mut contents, ROLE_USER, vec![part]);
            }
            "" => return Err(crate::error::required(format!("{path}.role"))),
            role => {
                let field = format!("{path}.role");
                let message = format!(
                    "'{field}' {role:?} is not accepted; use system, developer, user, assistant \
                     or tool"
                );
                return Err(FieldError::new(field, Rule::UnsupportedValue, message));
            }
        }
    }
    if contents.is_empty() {
        return Err(FieldError::new(
            "messages",
            Rule::Required,
            "'messages' must have at least one user, assistant or tool message",
        ));
    }
    Ok((contents, system))
}

/// Appends `parts` as a turn of `role`, merged into the last turn when it has the same role.
pub(crate) fn push_turn(contents: &mut Vec<Content>, role: &str, parts: Vec<Part>) {
    if parts.is_empty() {
        return;
    }
    match contents.last_mut() {
        Some(last) if last.role.as_deref() == Some(role) => last.parts.extend(parts),
        _ => contents.push(Content::new(role, parts)),
    }
}

fn unsupported_part(path: &str, j: usize, part: &ContentPart, accepted: &str) -> FieldError {
    let field = format!("{path}.content[{j}].type");
    let message = format!(
        "'{field}' {:?} is not accepted here; use {accepted}",
        part.kind()
    );
    FieldError::new(field, Rule::UnsupportedValue, message)
}

fn system_parts(path: &str, message: &ChatMessage) -> Result<Vec<Part>, FieldError> {
    match &message.content {
        None => Ok(Vec::new()),
        Some(MessageContent::Text(text)) => Ok(non_empty_text(text)),
        Some(MessageContent::Parts(parts)) => {
            let mut out = Vec::new();
            for (j, part) in parts.iter().enumerate() {
                match part {
                    ContentPart::Text { text } => out.extend(non_empty_text(text)),
                    other => return Err(unsupported_part(path, j, other, "text")),
                }
            }
            Ok(out)
        }
    }
}

pub(crate) fn non_empty_text(text: &str) -> Vec<Part> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![Part::text(text)]
    }
}

fn user_parts(path: &str, message: &ChatMessage) -> Result<Vec<Part>, FieldError> {
    let parts = match &message.content {
        None => Vec::new(),
        Some(MessageContent::Text(text)) => non_empty_text(text),
        Some(MessageContent::Parts(parts)) => {
            let mut out = Vec::new();
            for (j, part) in parts.iter().enumerate() {
                match part {
                    ContentPart::Text { text } => out.extend(non_empty_text(text)),
                    ContentPart::ImageUrl { image_url } => out.push(image_part(
                        &format!("{path}.content[{j}].image_url.url"),
                        &image_url.url,
                    )?),
                    ContentPart::Other(value) if part.kind() == "input_audio" => {
                        out.push(audio_part(
                            &format!("{path}.content[{j}].input_audio"),
                            value.get("input_audio"),
                        )?)
                    }
                    ContentPart::Other(value) if part.kind() == "file" => out.push(file_part(
                        &format!("{path}.content[{j}].file"),
                        value.get("file"),
                    )?),
                    other => {
                        return Err(unsupported_part(
                            path,
                            j,
                            other,
                            "text, image_url, input_audio or file",
                        ));
                    }
                }
            }
            out
        }
    };
    if parts.is_empty() {
        return Err(crate::error::required(format!("{path}.content")));
    }
    Ok(parts)
}

/// An image URL as a part: a base64 `data:` URL inline, an `http(s)` URL by reference.
pub(crate) fn image_part(field: &str, url: &str) -> Result<Part, FieldError> {
    if url.is_empty() {
        return Err(crate::error::required(field));
    }
    if let Some(rest) = strip_prefix_ignore_case(url, "data:") {
        let malformed = || {
            FieldError::new(
                field,
                Rule::Malformed,
                format!("'{field}' must be a data URL of the form data:<media type>;base64,<data>"),
            )
        };
        let (header, data) = rest.split_once(',').ok_or_else(malformed)?;
        let mime = strip_suffix_ignore_case(header, ";base64").ok_or_else(malformed)?;
        let mime = mime.split(';').next().unwrap_or_default().trim();
        if mime.is_empty() || !mime.contains('/') || data.is_empty() {
            return Err(malformed());
        }
        return Ok(Part {
            inline_data: Some(Blob {
                mime_type: mime.to_ascii_lowercase(),
                data: data.to_owned(),
                extra: Map::new(),
            }),
            ..Part::default()
        });
    }
    if strip_prefix_ignore_case(url, "https://").is_some()
        || strip_prefix_ignore_case(url, "http://").is_some()
    {
        return Ok(Part {
            file_data: Some(FileData {
                mime_type: Some(guess_image_type(url).to_owned()),
                file_uri: url.to_owned(),
                extra: Map::new(),
            }),
            ..Part::default()
        });
    }
    Err(FieldError::new(
        field,
        Rule::InvalidUrl,
        format!("'{field}' must be an http(s) URL or a base64 data URL"),
    ))
}

/// The audio formats the native API takes inline, by the name OpenAI's `input_audio.format`
/// uses, and their media types.
const AUDIO_FORMATS: [(&str, &str); 7] = [
    ("wav", "audio/wav"),
    ("mp3", "audio/mp3"),
    ("aiff", "audio/aiff"),
    ("aac", "audio/aac"),
    ("ogg", "audio/ogg"),
    ("flac", "audio/flac"),
    ("opus", "audio/ogg"),
];

/// An `input_audio` part (`{"data": base64, "format": "wav"}`, chat and Responses) as inline
/// audio.
pub(crate) fn audio_part(field: &str, audio: Option<&Value>) -> Result<Part, FieldError> {
    let audio = audio
        .and_then(Value::as_object)
        .ok_or_else(|| crate::error::required(field))?;
    let data = audio
        .get("data")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .ok_or_else(|| crate::error::required(format!("{field}.data")))?;
    let format = audio
        .get("format")
        .and_then(Value::as_str)
        .ok_or_else(|| crate::error::required(format!("{field}.format")))?;
    let Some((_, mime)) = AUDIO_FORMATS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(format))
    else {
        let names: Vec<&str> = AUDIO_FORMATS.iter().map(|(n, _)| *n).collect();
        return Err(FieldError::new(
            format!("{field}.format"),
            Rule::UnsupportedValue,
            format!(
                "'{field}.format' {format:?} is not accepted; use one of {}",
                names.join(", ")
            ),
        ));
    };
    Ok(inline(mime, data))
}

/// A file part as the native API takes it: `file_data` (a `data:` URL, or base64 with the type
/// guessed from `filename`) inline; `file_url` (Responses) by reference. `file_id` is refused:
/// the gateway has no file store.
pub(crate) fn file_part(field: &str, file: Option<&Value>) -> Result<Part, FieldError> {
    let file = file
        .and_then(Value::as_object)
        .ok_or_else(|| crate::error::required(field))?;
    file_fields(field, file)
}

/// The fields of a file (chat's `file.{…}`, Responses' `input_file` part itself).
pub(crate) fn file_fields(field: &str, file: &Map<String, Value>) -> Result<Part, FieldError> {
    let text = |key: &str| {
        file.get(key)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    if let Some(data) = text("file_data") {
        let data_field = format!("{field}.file_data");
        if strip_prefix_ignore_case(data, "data:").is_some() {
            return image_part(&data_field, data);
        }
        let mime = text("filename").map_or("application/octet-stream", guess_media_type);
        return Ok(inline(mime, data));
    }
    if let Some(url) = text("file_url") {
        let url_field = format!("{field}.file_url");
        if strip_prefix_ignore_case(url, "https://").is_none()
            && strip_prefix_ignore_case(url, "http://").is_none()
        {
            return Err(FieldError::new(
                url_field.clone(),
                Rule::InvalidUrl,
                format!("'{url_field}' must be an http(s) URL"),
            ));
        }
        return Ok(Part {
            file_data: Some(FileData {
                mime_type: Some(guess_media_type(url).to_owned()),
                file_uri: url.to_owned(),
                extra: Map::new(),
            }),
            ..Part::default()
        });
    }
    if file.contains_key("file_id") {
        return Err(FieldError::new(
            format!("{field}.file_id"),
            Rule::UnsupportedParameter,
            format!(
                "'{field}.file_id' is not supported: this gateway has no file store; send the \
                 file as file_data (or a file_url)"
            ),
        ));
    }
    Err(crate::error::required(format!("{field}.file_data")))
}

fn inline(mime: &str, data: &str) -> Part {
    Part {
        inline_data: Some(Blob {
            mime_type: mime.to_owned(),
            data: data.to_owned(),
            extra: Map::new(),
        }),
        ..Part::default()
    }
}

/// The media type of a file by its name's (or URL's) extension: images as
/// [`guess_image_type`], and the audio, video and document types the native API takes;
/// `application/octet-stream` for anything else.
pub fn guess_media_type(name: &str) -> &'static str {
    let path = name.split(['?', '#']).next().unwrap_or(name);
    let ext = path
        .rsplit_once('/')
        .map_or(path, |(_, file)| file)
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase());
    match ext.as_deref() {
        Some("png" | "jpg" | "jpeg" | "webp" | "gif" | "heic" | "heif" | "bmp") => {
            guess_image_type(&format!("x/x.{}", ext.as_deref().unwrap_or_default()))
        }
        Some("wav") => "audio/wav",
        Some("mp3") => "audio/mp3",
        Some("aiff" | "aif") => "audio/aiff",
        Some("aac") => "audio/aac",
        Some("ogg" | "opus") => "audio/ogg",
        Some("flac") => "audio/flac",
        Some("mp4" | "m4v") => "video/mp4",
        Some("mov") => "video/quicktime",
        Some("webm") => "video/webm",
        Some("mpeg" | "mpg") => "video/mpeg",
        Some("pdf") => "application/pdf",
        Some("txt") => "text/plain",
        Some("md") => "text/markdown",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

fn strip_suffix_ignore_case<'a>(text: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = text.len().checked_sub(suffix.len())?;
    let tail = text.get(cut..)?;
    tail.eq_ignore_ascii_case(suffix).then(|| &text[..cut])
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// The media type of an image URL, from the extension of its path; `image/*` when unknown.
///
/// ```
/// use tollgate_native_genai::bridge::guess_image_type;
///
/// assert_eq!(guess_image_type("https://e.example/a/cat.JPG?size=2#x"), "image/jpeg");
/// assert_eq!(guess_image_type("https://e.example/photo"), "image/*");
/// ```
pub fn guess_image_type(url: &str) -> &'static str {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let after_scheme = path.split_once("://").map_or(path, |(_, rest)| rest);
    let Some((_, file)) = after_scheme.rsplit_once('/') else {
        return "image/*";
    };
    let Some((_, ext)) = file.rsplit_once('.') else {
        return "image/*";
    };
    match ext.to_ascii_lowercase().as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "heic" => "image/heic",
        "heif" => "image/heif",
        "bmp" => "image/bmp",
        _ => "image/*",
    }
}

fn assistant_parts(path: &str, message: &ChatMessage) -> Result<Vec<Part>, FieldError> {
    let mut parts = match &message.content {
        Some(content) => non_empty_text(&content.text()),
        None => Vec::new(),
    };
    for (j, call) in message.tool_calls.iter().flatten().enumerate() {
        let call_path = format!("{path}.tool_calls[{j}].function");
        if call.function.name.is_empty() {
            return Err(crate::error::required(format!("{call_path}.name")));
        }
        let args = parse_arguments(&format!("{call_path}.arguments"), &call.function.arguments)?;
        parts.push(Part {
            thought_signature: thought_signature(call).map(str::to_owned),
            function_call: Some(FunctionCall {
                id: None,
                name: call.function.name.clone(),
                args: Some(args),
                extra: Map::new(),
            }),
            ..Part::default()
        });
    }
    Ok(parts)
}

pub(crate) fn parse_arguments(field: &str, arguments: &str) -> Result<Value, FieldError> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(object)) => Ok(Value::Object(object)),
        Ok(_) => Err(FieldError::new(
            field,
            Rule::Malformed,
            format!("'{field}' must be a JSON object"),
        )),
        Err(e) => Err(FieldError::new(
            field,
            Rule::Malformed,
            format!("'{field}' is not valid JSON: {e}"),
        )),
    }
}

/// A tool call's `extra_content.google.thought_signature`.
fn thought_signature(call: &ToolCall) -> Option<&str> {
    call.extra
        .get("extra_content")?
        .get("google")?
        .get("thought_signature")?
        .as_str()
}

fn tool_part(
    path: &str,
    message: &ChatMessage,
    call_names: &HashMap<&str, &str>,
) -> Result<Part, FieldError> {
    let id = message.tool_call_id.as_deref().unwrap_or_default();
    let name = match (call_names.get(id), message.name.as_deref()) {
        (Some(name), _) => (*name).to_owned(),
        (None, Some(name)) if !name.is_empty() => name.to_owned(),
        _ if id.is_empty() => return Err(crate::error::required(format!("{path}.tool_call_id"))),
        _ => {
            let field = format!("{path}.tool_call_id");
            let message =
                format!("'{field}' {id:?} does not answer any earlier assistant tool call");
            return Err(FieldError::new(field, Rule::UnsupportedValue, message));
        }
    };
    let text = message
        .content
        .as_ref()
        .map(MessageContent::text)
        .unwrap_or_default();
    Ok(function_response(name, &text))
}

/// A tool's result as a `functionResponse` part named `name`: the result itself when it is a
/// JSON object, else `{"content": "<text>"}`.
pub(crate) fn function_response(name: String, text: &str) -> Part {
    let response = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => Value::Object(object),
        _ => json!({ "content": text }),
    };
    Part {
        function_response: Some(FunctionResponse {
            id: None,
            name,
            response: Some(response),
            extra: Map::new(),
        }),
        ..Part::default()
    }
}

fn generation_config(
    chat: &ChatCompletionRequest,
    limits: &ModelLimits,
) -> Result<GenerationConfig, FieldError> {
    let mut config = GenerationConfig::default();
    let max = match (chat.max_completion_tokens, chat.max_tokens) {
        (Some(asked), _) => Some(("max_completion_tokens", asked)),
        (None, Some(asked)) => Some(("max_tokens", asked)),
        (None, None) => None,
    };
    if let Some((field, asked)) = max {
        let cap = limits.max_output_tokens;
        if asked < 1 || asked > i64::from(cap) {
            return Err(FieldError::new(
                field,
                Rule::OutOfRange,
                format!("'{field}' must be between 1 and {cap} for this model, not {asked}"),
            ));
        }
        config.max_output_tokens = Some(asked);
    }
    config.temperature = chat.temperature.and_then(Number::from_f64);
    config.top_p = chat.top_p.and_then(Number::from_f64);
    if let Some(stop) = &chat.stop {
        let sequences = stop.sequences();
        if !sequences.is_empty() {
            config.stop_sequences = Some(sequences);
        }
    }
    if let Some(n) = chat.n {
        if !(1..=MAX_CANDIDATE_COUNT).contains(&n) {
            return Err(FieldError::new(
                "n",
                Rule::OutOfRange,
                format!("'n' must be between 1 and {MAX_CANDIDATE_COUNT}, not {n}"),
            ));
        }
        config.candidate_count = Some(n);
    }
    config.seed = chat.seed;
    if let Some(format) = &chat.response_format {
        response_format(format, &mut config)?;
    }
    if let Some(effort) = &chat.reasoning_effort
        && let Some(budget) = effort_budget(effort, limits)?
    {
        config.thinking_config = Some(ThinkingConfig {
            thinking_budget: Some(budget),
            ..ThinkingConfig::default()
        });
    }
    Ok(config)
}

pub(crate) const JSON_MIME: &str = "application/json";

fn response_format(format: &Value, config: &mut GenerationConfig) -> Result<(), FieldError> {
    let Some(kind) = format.get("type").and_then(Value::as_str) else {
        return Err(crate::error::required("response_format.type"));
    };
    match kind {
        "text" => {}
        "json_object" => config.response_mime_type = Some(JSON_MIME.to_owned()),
        "json_schema" => {
            config.response_mime_type = Some(JSON_MIME.to_owned());
            if let Some(schema) = format.get("json_schema").and_then(|s| s.get("schema")) {
                config
                    .extra
                    .insert("responseJsonSchema".to_owned(), schema.clone());
            }
        }
        other => {
            return Err(FieldError::new(
                "response_format.type",
                Rule::UnsupportedValue,
                format!(
                    "'response_format.type' {other:?} is not accepted; use text, json_object or \
                     json_schema"
                ),
            ));
        }
    }
    Ok(())
}

/// The `reasoning_effort` values and the budget each asks for, before it is moved into the
/// model's range.
pub const EFFORT_BUDGETS: [(&str, i64); 6] = [
    ("none", 0),
    ("minimal", 0),
    ("low", 1_024),
    ("medium", 8_192),
    ("high", 24_576),
    ("xhigh", 32_768),
];

/// The `thinkingBudget` for a `reasoning_effort` on a model with `limits` (see the
/// [module](self) documentation); `None` when no `thinkingConfig` is to be sent.
///
/// ```
/// use tollgate_native_genai::bridge::effort_budget;
/// use tollgate_native_genai::models::limits;
///
/// let flash = limits("gen-2.5-flash").ok_or("unknown")?;
/// let pro = limits("gen-2.5-pro").ok_or("unknown")?;
/// let old = limits("gen-2.0-flash").ok_or("unknown")?;
/// assert_eq!(effort_budget("minimal", &flash)?, Some(0));
/// assert_eq!(effort_budget("none", &pro)?, Some(128)); // cannot turn thinking off
/// assert_eq!(effort_budget("high", &flash)?, Some(24_576));
/// assert_eq!(effort_budget("xhigh", &flash)?, Some(24_576)); // clamped
/// assert_eq!(effort_budget("none", &old)?, None);
/// assert!(effort_budget("high", &old).is_err());
/// assert!(effort_budget("extreme", &flash).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn effort_budget(effort: &str, limits: &ModelLimits) -> Result<Option<i64>, FieldError> {
    effort_budget_of("reasoning_effort", effort, limits)
}

/// [`effort_budget`] for an effort given in `field` (the Responses API's `reasoning.effort`).
pub(crate) fn effort_budget_of(
    field: &str,
    effort: &str,
    limits: &ModelLimits,
) -> Result<Option<i64>, FieldError> {
    let Some((_, budget)) = EFFORT_BUDGETS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(effort))
    else {
        let accepted: Vec<&str> = EFFORT_BUDGETS.iter().map(|(name, _)| *name).collect();
        return Err(FieldError::new(
            field,
            Rule::UnsupportedValue,
            format!(
                "'{field}' {effort:?} is not accepted; use one of {}",
                accepted.join(", ")
            ),
        ));
    };
    match limits.clamp_budget(*budget) {
        Some(clamped) => Ok(Some(clamped)),
        None if *budget == 0 => Ok(None),
        None => Err(FieldError::new(
            field,
            Rule::UnsupportedParameter,
            format!("'{field}' {effort:?} is not supported: the model does not think"),
        )),
    }
}

fn function_declarations(tools: &[Value]) -> Result<Option<Vec<Value>>, FieldError> {
    let mut declarations = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let path = format!("tools[{i}]");
        match tool.get("type").and_then(Value::as_str) {
            Some("function") => {}
            Some(other) => {
                let field = format!("{path}.type");
                let message = format!("'{field}' {other:?} is not accepted; use \"function\"");
                return Err(FieldError::new(field, Rule::UnsupportedValue, message));
            }
            None => return Err(crate::error::required(format!("{path}.type"))),
        }
        let Some(function) = tool.get("function").and_then(Value::as_object) else {
            return Err(crate::error::required(format!("{path}.function")));
        };
        let name = match function.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name,
            _ => return Err(crate::error::required(format!("{path}.function.name"))),
        };
        declarations.push(declaration(name, function));
    }
    Ok(declarations_tool(declarations))
}

/// One `functionDeclarations` entry: `name`, `description`, and the JSON Schema of
/// `parameters` as `parametersJsonSchema` (which takes JSON Schema as it is).
pub(crate) fn declaration(name: &str, function: &Map<String, Value>) -> Value {
    let mut declaration = Map::new();
    declaration.insert("name".to_owned(), Value::from(name));
    if let Some(description) = function.get("description").filter(|d| !d.is_null()) {
        declaration.insert("description".to_owned(), description.clone());
    }
    if let Some(parameters) = function.get("parameters").filter(|p| !p.is_null()) {
        declaration.insert("parametersJsonSchema".to_owned(), parameters.clone());
    }
    Value::Object(declaration)
}

/// The native `tools` holding `declarations` as one tool; `None` when there are none.
pub(crate) fn declarations_tool(declarations: Vec<Value>) -> Option<Vec<Value>> {
    (!declarations.is_empty()).then(|| vec![json!({ "functionDeclarations": declarations })])
}

fn tool_config(choice: &Value) -> Result<Value, FieldError> {
    tool_config_at(
        choice,
        &["function", "name"],
        "{\"type\": \"function\", \"function\": {\"name\": ...}}",
    )
}

/// The native `toolConfig` of a `tool_choice`: a mode string (`none`, `auto`, `required`), or an
/// object of `type: "function"` with the function's name at `name_at` (chat:
/// `function.name`; the Responses API: `name`), which `object_form` shows in error messages.
pub(crate) fn tool_config_at(
    choice: &Value,
    name_at: &[&str],
    object_form: &str,
) -> Result<Value, FieldError> {
    const FIELD: &str = "tool_choice";
    let name_field = format!("{FIELD}.{}", name_at.join("."));
    let config = match choice {
        Value::String(mode) => calling_mode(FIELD, mode, object_form)?,
        Value::Object(object) => {
            let name = name_at
                .iter()
                .try_fold(choice, |value, key| value.get(key))
                .and_then(Value::as_str)
                .filter(|name| !name.is_empty());
            match (object.get("type").and_then(Value::as_str), name) {
                (Some("function"), Some(name)) => forced_function(name),
                (Some("function"), None) => return Err(crate::error::required(name_field)),
                _ => {
                    return Err(FieldError::new(
                        "tool_choice.type",
                        Rule::UnsupportedValue,
                        "'tool_choice.type' must be \"function\"",
                    ));
                }
            }
        }
        _ => {
            return Err(FieldError::new(
                FIELD,
                Rule::Malformed,
                format!("'{FIELD}' must be a string or an object"),
            ));
        }
    };
    Ok(json!({ "functionCallingConfig": config }))
}

/// The `functionCallingConfig` of a tool-choice mode string, `none` / `auto` / `required`;
/// `object_form` shows the format's way to force one function in the error message.
pub(crate) fn calling_mode(
    field: &str,
    mode: &str,
    object_form: &str,
) -> Result<Value, FieldError> {
    let mode = match mode {
        "none" => "NONE",
        "auto" => "AUTO",
        "required" => "ANY",
        other => {
            return Err(FieldError::new(
                field,
                Rule::UnsupportedValue,
                format!(
                    "'{field}' {other:?} is not accepted; use none, auto, required or {object_form}"
                ),
            ));
        }
    };
    Ok(json!({ "mode": mode }))
}

/// The `functionCallingConfig` that makes the model call `name`.
pub(crate) fn forced_function(name: &str) -> Value {
    json!({ "mode": "ANY", "allowedFunctionNames": [name] })
}

/// The chat `finish_reason` of a native `finishReason` (see the [module](self) documentation);
/// `None` when there is none. `called_tools`: whether the candidate called a tool.
///
/// ```
/// use tollgate_native_genai::bridge::finish_reason;
///
/// assert_eq!(finish_reason(Some("STOP"), false), Some("stop"));
/// assert_eq!(finish_reason(Some("STOP"), true), Some("tool_calls"));
/// assert_eq!(finish_reason(Some("MAX_TOKENS"), true), Some("length"));
/// assert_eq!(finish_reason(Some("SPII"), false), Some("content_filter"));
/// assert_eq!(finish_reason(Some("MALFORMED_FUNCTION_CALL"), false), Some("stop"));
/// assert_eq!(finish_reason(None, false), None);
/// ```
pub fn finish_reason(native: Option<&str>, called_tools: bool) -> Option<&'static str> {
    let mapped = match native? {
        "MAX_TOKENS" => "length",
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => "content_filter",
        _ => "stop",
    };
    Some(if mapped == "stop" && called_tools {
        "tool_calls"
    } else {
        mapped
    })
}

/// The chat usage of a native `usageMetadata` (see the [module](self) documentation).
///
/// ```
/// use tollgate_native_genai::bridge::usage;
/// use tollgate_native_genai::UsageMetadata;
///
/// let native: UsageMetadata = serde_json::from_str(
///     r#"{"promptTokenCount": 270, "candidatesTokenCount": 9, "thoughtsTokenCount": 41,
///         "cachedContentTokenCount": 200, "totalTokenCount": 320}"#,
/// )?;
/// let chat = usage(&native);
/// assert_eq!((chat.prompt_tokens, chat.completion_tokens, chat.total_tokens), (270, 50, 320));
/// assert_eq!(chat.prompt_tokens_details.map(|d| d.cached_tokens), Some(200));
/// assert_eq!(chat.completion_tokens_details.map(|d| d.reasoning_tokens), Some(41));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn usage(native: &UsageMetadata) -> ChatUsage {
    ChatUsage {
        prompt_tokens: native.input_tokens(),
        completion_tokens: native.output_tokens(),
        total_tokens: native.total_tokens(),
        prompt_tokens_details: Some(PromptTokensDetails {
            cached_tokens: native.cached_content_token_count.unwrap_or(0),
            extra: Map::new(),
        }),
        completion_tokens_details: Some(CompletionTokensDetails {
            reasoning_tokens: native.thoughts_token_count.unwrap_or(0),
            extra: Map::new(),
        }),
        extra: Map::new(),
    }
}

fn candidate_index(candidate: &Candidate, position: usize) -> u32 {
    candidate
        .index
        .and_then(|i| u32::try_from(i).ok())
        .unwrap_or_else(|| u32::try_from(position).unwrap_or(u32::MAX))
}

/// The function calls of a candidate as chat tool calls; `next_id` numbers the generated ids,
/// which carry the completion's own id so that they are unique across turns.
fn tool_calls(
    candidate: &Candidate,
    completion_id: &str,
    next_id: &mut u64,
    indexed: Option<u32>,
) -> Vec<ToolCall> {
    let mut calls = Vec::new();
    let parts = candidate.content.iter().flat_map(|c| c.parts.iter());
    for part in parts {
        let Some(call) = &part.function_call else {
            continue;
        };
        let id = match &call.id {
            Some(id) if !id.is_empty() => id.clone(),
            _ => {
                let unique = completion_id
                    .strip_prefix("chatcmpl-")
                    .unwrap_or(completion_id);
                let id = format!("call_{unique}_{next_id}");
                *next_id += 1;
                id
            }
        };
        let mut extra = Map::new();
        if let Some(signature) = &part.thought_signature {
            extra.insert(
                "extra_content".to_owned(),
                json!({ "google": { "thought_signature": signature } }),
            );
        }
        let arguments = call
            .args
            .as_ref()
            .map_or_else(|| "{}".to_owned(), Value::to_string);
        calls.push(ToolCall {
            index: indexed.map(|first| first + u32::try_from(calls.len()).unwrap_or(u32::MAX)),
            id,
            kind: "function".to_owned(),
            function: ToolCallFunction {
                name: call.name.clone(),
                arguments,
            },
            extra,
        });
    }
    calls
}

/// Translates a native answer into a chat completion (see the [module](self) documentation):
/// one choice per candidate.
///
/// ```
/// use tollgate_native_genai::bridge::to_chat;
/// use tollgate_native_genai::chat::MessageContent;
/// use tollgate_native_genai::GenerateContentResponse;
///
/// let native: GenerateContentResponse = serde_json::from_str(r#"{
///     "candidates": [{"content": {"role": "model", "parts": [
///         {"text": "Thinking...", "thought": true}, {"text": "Orange."}]},
///         "finishReason": "STOP", "index": 0}],
///     "usageMetadata": {"promptTokenCount": 270, "candidatesTokenCount": 9,
///         "thoughtsTokenCount": 41, "totalTokenCount": 320}
/// }"#)?;
/// let chat = to_chat(&native, "gen-2.5-flash", "chatcmpl-1", 1_767_240_000);
/// assert_eq!(chat.choices[0].message.content, Some(MessageContent::Text("Orange.".into())));
/// assert_eq!(chat.choices[0].finish_reason.as_deref(), Some("stop"));
/// assert_eq!(chat.usage.map(|u| u.completion_tokens), Some(50));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn to_chat(
    response: &GenerateContentResponse,
    model: &str,
    id: &str,
    created: i64,
) -> ChatCompletion {
    let mut next_id = 0;
    let mut choices: Vec<ChatChoice> = response
        .candidates
        .iter()
        .flatten()
        .enumerate()
        .map(|(position, candidate)| {
            let calls = tool_calls(candidate, id, &mut next_id, None);
            let text = candidate.text();
            let content =
                (!text.is_empty() || calls.is_empty()).then_some(MessageContent::Text(text));
            let reason = finish_reason(candidate.finish_reason.as_deref(), !calls.is_empty());
            ChatChoice {
                index: candidate_index(candidate, position),
                message: ChatMessage {
                    role: ROLE_ASSISTANT.to_owned(),
                    content,
                    tool_calls: (!calls.is_empty()).then_some(calls),
                    ..ChatMessage::default()
                },
                finish_reason: reason.map(str::to_owned),
                extra: Map::new(),
            }
        })
        .collect();
    if choices.is_empty() {
        choices.push(ChatChoice {
            index: 0,
            message: ChatMessage::new(ROLE_ASSISTANT, ""),
            finish_reason: response.block_reason().map(|_| "content_filter".to_owned()),
            extra: Map::new(),
        });
    }
    ChatCompletion {
        id: id.to_owned(),
        object: CHAT_COMPLETION_OBJECT.to_owned(),
        created,
        model: model.to_owned(),
        choices,
        usage: response.usage_metadata.as_ref().map(usage),
        extra: Map::new(),
    }
}

/// Turns native stream chunks into chat-completion chunks, one stream at a time (see the
/// [module](self) documentation for the mapping).
///
/// - Each choice's first chunk carries `delta.role: "assistant"` (and `content: ""` when there is
///   nothing else to carry yet).
/// - Text deltas become `delta.content`; thought parts are not shown.
/// - Function calls become `delta.tool_calls`, each with its `index` within the choice.
/// - A native `finishReason` becomes a chunk of its own with an empty delta and the
///   `finish_reason`, once per choice.
/// - A blocked prompt (no candidates, a `blockReason`) becomes choice 0 finishing with
///   `content_filter`.
/// - The last `usageMetadata` seen is kept (it is the running total, never summed); [`finish`]
///   adds the usage chunk (`choices: []`) when `include_usage` is set and a usage was seen.
///
/// ```
/// use tollgate_native_genai::bridge::ChunkMapper;
/// use tollgate_native_genai::GenerateContentResponse;
///
/// let mut mapper = ChunkMapper::new("gen-2.5-flash", "chatcmpl-1", 1_767_240_000, true);
/// let first: GenerateContentResponse = serde_json::from_str(
///     r#"{"candidates": [{"content": {"role": "model", "parts": [{"text": "Or"}]}, "index": 0}],
///         "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1, "totalTokenCount": 6}}"#,
/// )?;
/// let last: GenerateContentResponse = serde_json::from_str(
///     r#"{"candidates": [{"content": {"role": "model", "parts": [{"text": "ange."}]},
///         "finishReason": "STOP", "index": 0}],
///         "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8}}"#,
/// )?;
/// let mut chunks = mapper.map(&first);
/// chunks.extend(mapper.map(&last));
/// chunks.extend(mapper.finish());
/// let deltas: Vec<_> = chunks.iter().flat_map(|c| &c.choices).map(|c| c.delta.content.clone()).collect();
/// assert_eq!(deltas, [Some("Or".into()), Some("ange.".into()), None]);
/// assert_eq!(chunks[0].choices[0].delta.role.as_deref(), Some("assistant"));
/// assert_eq!(chunks[2].choices[0].finish_reason.as_deref(), Some("stop"));
/// let usage = chunks[3].usage.as_ref().ok_or("no usage")?;
/// assert!(chunks[3].choices.is_empty());
/// assert_eq!((usage.prompt_tokens, usage.completion_tokens), (5, 3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`finish`]: ChunkMapper::finish
#[derive(Debug, Clone)]
pub struct ChunkMapper {
    model: String,
    id: String,
    created: i64,
    include_usage: bool,
    started: BTreeSet<u32>,
    finished: BTreeSet<u32>,
    calls_per_choice: BTreeMap<u32, u32>,
    next_id: u64,
    usage: Option<UsageMetadata>,
}

impl ChunkMapper {
    /// A mapper for one stream: the chunks carry `model`, `id` and `created`; `include_usage` is
    /// the request's `stream_options.include_usage`.
    pub fn new(model: &str, id: &str, created: i64, include_usage: bool) -> Self {
        Self {
            model: model.to_owned(),
            id: id.to_owned(),
            created,
            include_usage,
            started: BTreeSet::new(),
            finished: BTreeSet::new(),
            calls_per_choice: BTreeMap::new(),
            next_id: 0,
            usage: None,
        }
    }

    /// The chat chunks for one native chunk (possibly none).
    pub fn map(&mut self, response: &GenerateContentResponse) -> Vec<ChatCompletionChunk> {
        if let Some(usage) = &response.usage_metadata {
            self.usage = Some(usage.clone());
        }
        let mut out = Vec::new();
        let candidates = response.candidates.as_deref().unwrap_or_default();
        for (position, candidate) in candidates.iter().enumerate() {
            let index = candidate_index(candidate, position);
            let mut delta = ChunkDelta::default();
            let first = self.started.insert(index);
            let made = self.calls_per_choice.entry(index).or_insert(0);
            let calls = tool_calls(candidate, &self.id, &mut self.next_id, Some(*made));
            *made += u32::try_from(calls.len()).unwrap_or(u32::MAX);
            let called = *made > 0;
            let text = candidate.text();
            if !text.is_empty() {
                delta.content = Some(text);
            }
            if !calls.is_empty() {
                delta.tool_calls = Some(calls);
            }
            if first {
                delta.role = Some(ROLE_ASSISTANT.to_owned());
                if delta.content.is_none() && delta.tool_calls.is_none() {
                    delta.content = Some(String::new());
                }
            }
            if !delta.is_empty() {
                out.push(self.chunk(vec![choice(index, delta, None)], None));
            }
            if let Some(reason) = finish_reason(candidate.finish_reason.as_deref(), called)
                && self.finished.insert(index)
            {
                out.push(self.chunk(
                    vec![choice(index, ChunkDelta::default(), Some(reason))],
                    None,
                ));
            }
        }
        if candidates.is_empty() && response.block_reason().is_some() {
            if self.started.insert(0) {
                let delta = ChunkDelta {
                    role: Some(ROLE_ASSISTANT.to_owned()),
                    content: Some(String::new()),
                    ..ChunkDelta::default()
                };
                out.push(self.chunk(vec![choice(0, delta, None)], None));
            }
            if self.finished.insert(0) {
                out.push(self.chunk(
                    vec![choice(0, ChunkDelta::default(), Some("content_filter"))],
                    None,
                ));
            }
        }
        out
    }

    /// The chunks that end the stream: the usage chunk (`choices: []`) when `include_usage` was
    /// asked and a usage was seen; otherwise none.
    pub fn finish(&mut self) -> Vec<ChatCompletionChunk> {
        match (&self.usage, self.include_usage) {
            (Some(native), true) => vec![self.chunk(Vec::new(), Some(usage(native)))],
            _ => Vec::new(),
        }
    }

    /// The last native usage seen.
    pub fn usage(&self) -> Option<&UsageMetadata> {
        self.usage.as_ref()
    }

    fn chunk(&self, choices: Vec<ChunkChoice>, usage: Option<ChatUsage>) -> ChatCompletionChunk {
        ChatCompletionChunk {
            id: self.id.clone(),
            object: CHAT_COMPLETION_CHUNK_OBJECT.to_owned(),
            created: self.created,
            model: self.model.clone(),
            choices,
            usage,
            extra: Map::new(),
        }
    }
}

fn choice(index: u32, delta: ChunkDelta, finish_reason: Option<&str>) -> ChunkChoice {
    ChunkChoice {
        index,
        delta,
        finish_reason: finish_reason.map(str::to_owned),
        extra: Map::new(),
    }
}
