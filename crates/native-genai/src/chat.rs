//! The OpenAI chat-completions types the [bridge](crate::bridge) needs (docs/api.md §4 rule 4: native
//! models can also be called through a chat-completions endpoint; wire-formats §8).
//!
//! Only what the bridge reads or writes is modelled; everything else a client sends
//! (`frequency_penalty`, `user`, `metadata`, `parallel_tool_calls`, ...) stays in the `extra` of
//! each struct. Absent optional fields stay absent when serialized, except where OpenAI's own
//! answers always carry the key (`message.content`, `finish_reason`, which are `null` then).

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `object` of a [`ChatCompletion`].
pub const CHAT_COMPLETION_OBJECT: &str = "chat.completion";
/// `object` of a [`ChatCompletionChunk`].
pub const CHAT_COMPLETION_CHUNK_OBJECT: &str = "chat.completion.chunk";

/// The body of `POST /v1/chat/completions`.
///
/// ```
/// use tollgate_native_genai::chat::{ChatCompletionRequest, MessageContent, Stop};
///
/// let request: ChatCompletionRequest = serde_json::from_str(r#"{
///     "model": "gen-2.5-flash",
///     "messages": [
///         {"role": "system", "content": "Be terse."},
///         {"role": "user", "content": [{"type": "text", "text": "What is this?"},
///             {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}
///     ],
///     "stop": "END", "stream": true, "stream_options": {"include_usage": true},
///     "user": "u-1"
/// }"#)?;
/// assert_eq!(request.messages.len(), 2);
/// assert!(matches!(request.messages[1].content, Some(MessageContent::Parts(_))));
/// assert_eq!(request.stop, Some(Stop::One("END".into())));
/// assert_eq!(request.stream_options.and_then(|o| o.include_usage), Some(true));
/// assert_eq!(request.extra["user"], "u-1");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    // Decoded when missing, refused by validation naming it: required all the same.
    schemars(rename = "ChatRequest", extend("required" = ["model", "messages"]))
)]
pub struct ChatCompletionRequest {
    /// The model id.
    #[serde(default)]
    pub model: String,
    /// The conversation.
    #[serde(default)]
    pub messages: Vec<ChatMessage>,
    /// Whether to stream chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Streaming options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// The most tokens to produce (deprecated spelling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<i64>,
    /// The most tokens to produce, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<i64>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// How many choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<i64>,
    /// Stop sequences: one string or an array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// A sampling seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// `{"type": "text" | "json_object" | "json_schema", "json_schema": {...}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
    /// `none`, `minimal`, `low`, `medium`, `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// `[{"type": "function", "function": {"name", "description", "parameters"}}]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// `"none"`, `"auto"`, `"required"` or `{"type": "function", "function": {"name"}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `stream_options`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "ChatStreamOptions"))]
pub struct StreamOptions {
    /// Whether a last chunk with `choices: []` carries the usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `stop`: one sequence or several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum Stop {
    /// `"stop": "END"`.
    One(String),
    /// `"stop": ["END", "STOP"]`.
    Many(Vec<String>),
}

impl Stop {
    /// The sequences, in order.
    pub fn sequences(&self) -> Vec<String> {
        match self {
            Stop::One(one) => vec![one.clone()],
            Stop::Many(many) => many.clone(),
        }
    }
}

/// One message of the conversation, or the answer's message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    #[serde(default)]
    pub role: String,
    /// The content: a string or an array of parts; `null` on an assistant message that only
    /// calls tools.
    #[serde(default)]
    pub content: Option<MessageContent>,
    /// A participant name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Fields this crate does not model (`refusal`, `reasoning_content`, ...), kept so they pass
    /// through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatMessage {
    /// A message of `role` with text content.
    pub fn new(role: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: Some(MessageContent::Text(text.into())),
            ..Self::default()
        }
    }
}

/// A message's content: a string, or an array of [`ContentPart`]s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum MessageContent {
    /// `"content": "Hello"`.
    Text(String),
    /// `"content": [{"type": "text", "text": "Hello"}, ...]`.
    Parts(Vec<ContentPart>),
}

impl MessageContent {
    /// The text parts joined (a string content as it is); images and other parts left out.
    pub fn text(&self) -> String {
        match self {
            MessageContent::Text(text) => text.clone(),
            MessageContent::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// One part of a message's content, by its `type`.
///
/// ```
/// use tollgate_native_genai::chat::ContentPart;
///
/// let parts: Vec<ContentPart> = serde_json::from_str(r#"[
///     {"type": "text", "text": "Hi"},
///     {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
///     {"type": "input_audio", "input_audio": {"data": "UklGR...", "format": "wav"}}
/// ]"#)?;
/// assert_eq!(parts[0], ContentPart::Text { text: "Hi".into() });
/// assert!(matches!(&parts[1], ContentPart::ImageUrl { image_url } if image_url.detail.as_deref() == Some("low")));
/// assert!(matches!(&parts[2], ContentPart::Other(v) if v["type"] == "input_audio"));
/// assert_eq!(serde_json::to_value(&parts[2])?["input_audio"]["format"], "wav");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ContentPart {
    /// `{"type": "text", "text": ...}`.
    Text {
        /// The text.
        text: String,
    },
    /// `{"type": "image_url", "image_url": {"url", "detail"}}`.
    ImageUrl {
        /// The image.
        image_url: ImageUrl,
    },
    /// Any other part (`input_audio`, `file`, ...), or a known type of the wrong shape, as sent.
    Other(Value),
}

/// A part's schema: the two kinds read, and any other object with a `type` (refused by the
/// rules, naming it), as the decoder takes them.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for ContentPart {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ContentPart".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let image_url = generator.subschema_for::<ImageUrl>();
        schemars::json_schema!({
            "description": "One part of a message's content.",
            "anyOf": [
                {
                    "type": "object",
                    "required": ["type", "text"],
                    "properties": {"type": {"const": "text"}, "text": {"type": "string"}},
                },
                {
                    "type": "object",
                    "required": ["type", "image_url"],
                    "properties": {"type": {"const": "image_url"}, "image_url": image_url},
                },
                {
                    "type": "object",
                    "description": "Another kind of part (`input_audio`, `file`, …): refused by name.",
                },
            ],
        })
    }
}

impl ContentPart {
    /// The part's `type`.
    pub fn kind(&self) -> &str {
        match self {
            ContentPart::Text { .. } => "text",
            ContentPart::ImageUrl { .. } => "image_url",
            ContentPart::Other(value) => value.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

/// `image_url` of a [`ContentPart::ImageUrl`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ImageUrl {
    /// An `http(s)` URL or a `data:` URL.
    pub url: String,
    /// `auto`, `low` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Serialize, Deserialize)]
struct TextPartWire {
    text: String,
}

#[derive(Serialize, Deserialize)]
struct ImagePartWire {
    image_url: ImageUrl,
}

impl Serialize for ContentPart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Text { text: &'a str },
            ImageUrl { image_url: &'a ImageUrl },
        }
        match self {
            ContentPart::Text { text } => Tagged::Text { text }.serialize(serializer),
            ContentPart::ImageUrl { image_url } => {
                Tagged::ImageUrl { image_url }.serialize(serializer)
            }
            ContentPart::Other(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if !value.is_object() {
            return Err(de::Error::custom(format_args!(
                "a content part must be an object, not {}",
                Kind(&value)
            )));
        }
        let part = match value.get("type").and_then(Value::as_str) {
            Some("text") => serde_json::from_value::<TextPartWire>(value.clone())
                .ok()
                .map(|p| ContentPart::Text { text: p.text }),
            Some("image_url") => serde_json::from_value::<ImagePartWire>(value.clone())
                .ok()
                .map(|p| ContentPart::ImageUrl {
                    image_url: p.image_url,
                }),
            _ => None,
        };
        Ok(part.unwrap_or(ContentPart::Other(value)))
    }
}

struct Kind<'a>(&'a Value);

impl fmt::Display for Kind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        })
    }
}

/// A tool call of an assistant message (and, with [`index`](Self::index), of a chunk's delta).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolCall {
    /// The call's position in the message; only in streamed deltas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// The call's id (`call_...`), which the `tool` message answers.
    #[serde(default)]
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// The function and its arguments.
    #[serde(default)]
    pub function: ToolCallFunction,
    /// Fields this crate does not model (`extra_content`, ...), kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn function_type() -> String {
    "function".to_owned()
}

/// `function` of a [`ToolCall`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolCallFunction {
    /// The function's name.
    #[serde(default)]
    pub name: String,
    /// The arguments, a JSON object as a string.
    #[serde(default)]
    pub arguments: String,
}

/// The answer of a non-streamed chat completion.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ChatResponse")
)]
pub struct ChatCompletion {
    /// `chatcmpl-...`.
    pub id: String,
    /// [`CHAT_COMPLETION_OBJECT`].
    #[cfg_attr(feature = "schema", schemars(extend("const" = CHAT_COMPLETION_OBJECT)))]
    pub object: String,
    /// Unix seconds.
    pub created: i64,
    /// The model asked for.
    pub model: String,
    /// The choices, one per candidate.
    pub choices: Vec<ChatChoice>,
    /// The token counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ChatUsage>,
    /// Fields this crate does not model (`system_fingerprint`, ...), kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One choice of a [`ChatCompletion`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChatChoice {
    /// The choice's index.
    pub index: u32,
    /// The assistant's message.
    pub message: ChatMessage,
    /// `stop`, `length`, `tool_calls`, `content_filter`; `null` when unknown.
    pub finish_reason: Option<String>,
    /// Fields this crate does not model (`logprobs`, ...), kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One chunk of a streamed chat completion.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatCompletionChunk {
    /// The same id in every chunk of a stream.
    pub id: String,
    /// [`CHAT_COMPLETION_CHUNK_OBJECT`].
    pub object: String,
    /// Unix seconds, the same in every chunk.
    pub created: i64,
    /// The model asked for.
    pub model: String,
    /// The choices' deltas; empty in the usage chunk.
    pub choices: Vec<ChunkChoice>,
    /// The usage, only in the last chunk when `stream_options.include_usage` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ChatUsage>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One choice of a [`ChatCompletionChunk`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChunkChoice {
    /// The choice's index.
    pub index: u32,
    /// What is new.
    pub delta: ChunkDelta,
    /// Set on the choice's last chunk; `null` before.
    pub finish_reason: Option<String>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `delta` of a [`ChunkChoice`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChunkDelta {
    /// `assistant`, in the choice's first chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// New text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// New tool calls, each with its `index`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChunkDelta {
    /// Whether the delta carries nothing.
    pub fn is_empty(&self) -> bool {
        self.role.is_none()
            && self.content.is_none()
            && self.tool_calls.is_none()
            && self.extra.is_empty()
    }
}

/// `usage` of a chat completion (wire-formats §8).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChatUsage {
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Output tokens, reasoning included.
    pub completion_tokens: u64,
    /// All tokens.
    pub total_tokens: u64,
    /// `{cached_tokens}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// `{reasoning_tokens}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PromptTokensDetails {
    /// Input tokens served from a cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Fields this crate does not model (`audio_tokens`, ...), kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CompletionTokensDetails {
    /// Output tokens spent on reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_round_trips() {
        let original = json!({
            "model": "gen-2.5-flash",
            "messages": [
                {"role": "developer", "content": "Be terse."},
                {"role": "user", "content": [
                    {"type": "text", "text": "Look"},
                    {"type": "image_url", "image_url": {"url": "https://e.example/a.jpg", "detail": "high"}},
                    {"type": "file", "file": {"file_id": "f1"}}
                ], "name": "ann"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_0", "content": "42"}
            ],
            "stream": true, "stream_options": {"include_usage": true},
            "max_completion_tokens": 100, "temperature": 0.2, "top_p": 0.9, "n": 1,
            "stop": ["a", "b"], "seed": 3, "response_format": {"type": "json_object"},
            "reasoning_effort": "low",
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            "tool_choice": "auto", "parallel_tool_calls": false
        });
        let decoded: ChatCompletionRequest = serde_json::from_value(original.clone()).unwrap();
        let mut back = serde_json::to_value(&decoded).unwrap();
        // User and tool messages had no "content": null to lose; the messages gain nothing else.
        assert_eq!(back, original);
        back["messages"][3]["content"] = json!(null);
        let again: ChatCompletionRequest = serde_json::from_value(back).unwrap();
        assert_eq!(again.messages[3].content, None);
    }

    #[test]
    fn malformed_known_parts_are_kept_as_other() {
        let part: ContentPart = serde_json::from_value(json!({"type": "text", "text": 5})).unwrap();
        assert!(matches!(part, ContentPart::Other(_)));
        assert_eq!(part.kind(), "text");
        assert!(serde_json::from_value::<ContentPart>(json!("text")).is_err());
    }

    #[test]
    fn chunk_serializes_like_openai() {
        let chunk = ChatCompletionChunk {
            id: "chatcmpl-1".into(),
            object: CHAT_COMPLETION_CHUNK_OBJECT.into(),
            created: 1,
            model: "m".into(),
            choices: vec![ChunkChoice {
                index: 0,
                delta: ChunkDelta {
                    content: Some("Hi".into()),
                    ..ChunkDelta::default()
                },
                finish_reason: None,
                extra: Map::new(),
            }],
            usage: None,
            extra: Map::new(),
        };
        assert_eq!(
            serde_json::to_value(&chunk).unwrap(),
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]})
        );
    }
}
