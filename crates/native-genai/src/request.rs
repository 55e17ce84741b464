//! The request of `generateContent`, `streamGenerateContent` and `countTokens` (docs/api.md §2.9,
//! wire-formats §6.1).
//!
//! | Field | Type | Notes |
//! |---|---|---|
//! | `contents` | array of [`Content`] | required, at least one turn; `role` `user` or `model` |
//! | `systemInstruction` | [`Content`] | the system prompt (there is no `system` role) |
//! | `generationConfig` | [`GenerationConfig`] | sampling, output cap, [`ThinkingConfig`] |
//! | `safetySettings`, `tools`, `toolConfig` | JSON | kept as sent |
//! | `cachedContent` | string | a cached-content name |
//!
//! A [`Part`] holds one of `text` (a thought when `thought` is true), `inlineData`
//! ([`Blob`]), `fileData` ([`FileData`]), `functionCall` ([`FunctionCall`]) or
//! `functionResponse` ([`FunctionResponse`]), and may carry a `thoughtSignature` that has to be
//! sent back unchanged; other kinds (`executableCode`, `codeExecutionResult`, ...) stay in
//! [`Part::extra`].
//!
//! **Nothing is lost.** Every struct keeps the fields it does not model in `extra` (flattened),
//! and absent fields stay absent when serialized again, so a decoded request encodes to the same
//! JSON (`null` aside, which reads as absent). Numbers keep their meaning: counts are integers,
//! and `temperature`, `topP` and `topK` are kept as the [`Number`] that was sent (`40` stays `40`,
//! `40.0` stays `40.0`; the vendor's Python SDK sends `topK` as a float).
//!
//! **Spellings.** The API speaks camelCase, and this crate writes it. Like the vendor's own
//! protobuf JSON parser (and gateways, wire-formats §6), decoding also accepts the snake_case
//! names (`system_instruction`, `generation_config`, `inline_data`, `mime_type`,
//! `thinking_budget`, ...). A request that gives both spellings of one field is a decode error.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// The body of `generateContent` and `streamGenerateContent` (wire-formats §6.1).
///
/// ```
/// use tollgate_native_genai::GenerateContentRequest;
///
/// let request: GenerateContentRequest = serde_json::from_str(
///     r#"{"system_instruction": {"parts": [{"text": "Be terse."}]},
///         "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
///         "generationConfig": {"thinkingConfig": {"thinking_budget": 0}},
///         "labels": {"team": "a"}}"#,
/// )?;
/// assert_eq!(request.contents[0].parts[0].text.as_deref(), Some("Hi"));
/// let thinking = request.generation_config.as_ref().and_then(|c| c.thinking_config.as_ref());
/// assert_eq!(thinking.and_then(|t| t.thinking_budget), Some(0));
/// // Written back in camelCase, with the unknown field kept.
/// assert_eq!(
///     serde_json::to_string(&request)?,
///     r#"{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"systemInstruction":{"parts":[{"text":"Be terse."}]},"generationConfig":{"thinkingConfig":{"thinkingBudget":0}},"labels":{"team":"a"}}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentRequest {
    /// The conversation, oldest turn first. Absent decodes as empty (validation then names it).
    #[serde(default)]
    pub contents: Vec<Content>,
    /// The system prompt.
    #[serde(
        default,
        alias = "system_instruction",
        skip_serializing_if = "Option::is_none"
    )]
    pub system_instruction: Option<Content>,
    /// Sampling, output cap and thinking.
    #[serde(
        default,
        alias = "generation_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub generation_config: Option<GenerationConfig>,
    /// `[{category, threshold}]`, kept as sent.
    #[serde(
        default,
        alias = "safety_settings",
        skip_serializing_if = "Option::is_none"
    )]
    pub safety_settings: Option<Vec<Value>>,
    /// `functionDeclarations`, `googleSearch`, `codeExecution`, ..., kept as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// `{functionCallingConfig: {mode, allowedFunctionNames}}`, kept as sent.
    #[serde(
        default,
        alias = "tool_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_config: Option<Value>,
    /// The name of a cached content (`cachedContents/...`).
    #[serde(
        default,
        alias = "cached_content",
        skip_serializing_if = "Option::is_none"
    )]
    pub cached_content: Option<String>,
    /// Fields this crate does not model (`labels`, `model`, ...), kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl GenerateContentRequest {
    /// A request of one user turn with one text part.
    ///
    /// ```
    /// use tollgate_native_genai::GenerateContentRequest;
    ///
    /// let request = GenerateContentRequest::text("Hello");
    /// assert_eq!(
    ///     serde_json::to_string(&request)?,
    ///     r#"{"contents":[{"role":"user","parts":[{"text":"Hello"}]}]}"#
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            contents: vec![Content::user(text)],
            ..Self::default()
        }
    }

    /// The thinking configuration, when the request has one.
    pub fn thinking_config(&self) -> Option<&ThinkingConfig> {
        self.generation_config
            .as_ref()
            .and_then(|c| c.thinking_config.as_ref())
    }
}

/// One turn of the conversation (or the system instruction): a `role` and its `parts`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Content {
    /// `user` or `model`; absent means `user` (and is usual in `systemInstruction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The parts of the turn, in order. Absent decodes as empty (validation then names it).
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The role of the user's turns.
pub const ROLE_USER: &str = "user";
/// The role of the model's turns.
pub const ROLE_MODEL: &str = "model";

impl Content {
    /// A turn with the given role and parts.
    pub fn new(role: impl Into<String>, parts: Vec<Part>) -> Self {
        Self {
            role: Some(role.into()),
            parts,
            extra: Map::new(),
        }
    }

    /// A user turn of one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(ROLE_USER, vec![Part::text(text)])
    }

    /// A model turn of one text part.
    pub fn model(text: impl Into<String>) -> Self {
        Self::new(ROLE_MODEL, vec![Part::text(text)])
    }
}

/// One part of a turn (wire-formats §6.1 `parts[]`).
///
/// ```
/// use tollgate_native_genai::Part;
///
/// let part: Part = serde_json::from_str(
///     r#"{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
///         "thoughtSignature": "CiQBVKhc..."}"#,
/// )?;
/// assert_eq!(part.function_call.as_ref().map(|c| c.name.as_str()), Some("get_weather"));
/// assert_eq!(part.thought_signature.as_deref(), Some("CiQBVKhc..."));
/// assert!(!part.is_thought());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text; a thought summary when [`thought`](Self::thought) is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Whether the text is a thought (only in answers with `includeThoughts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    /// An opaque signature of the model's thinking, to be sent back unchanged with the part.
    #[serde(
        default,
        alias = "thought_signature",
        skip_serializing_if = "Option::is_none"
    )]
    pub thought_signature: Option<String>,
    /// Inline media, base64.
    #[serde(
        default,
        alias = "inline_data",
        skip_serializing_if = "Option::is_none"
    )]
    pub inline_data: Option<Blob>,
    /// Media by URI.
    #[serde(default, alias = "file_data", skip_serializing_if = "Option::is_none")]
    pub file_data: Option<FileData>,
    /// A call the model asks for.
    #[serde(
        default,
        alias = "function_call",
        skip_serializing_if = "Option::is_none"
    )]
    pub function_call: Option<FunctionCall>,
    /// The result of a call, sent by the user.
    #[serde(
        default,
        alias = "function_response",
        skip_serializing_if = "Option::is_none"
    )]
    pub function_response: Option<FunctionResponse>,
    /// Other kinds of part (`executableCode`, `codeExecutionResult`, `videoMetadata`, ...) and
    /// fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// Whether the part is a thought (`"thought": true`).
    pub fn is_thought(&self) -> bool {
        self.thought == Some(true)
    }

    /// The frame rate the part asks the vendor to sample its video at (`videoMetadata.fps`),
    /// as sent; see [`crate::media::fps_multiple`].
    pub fn video_fps(&self) -> Option<&Value> {
        self.extra
            .get("videoMetadata")
            .or_else(|| self.extra.get("video_metadata"))
            .and_then(|metadata| metadata.get("fps"))
    }

    /// Whether the part carries anything: a known data field, a thought signature, or a field
    /// this crate does not model. An empty `{}` part does not.
    pub fn has_data(&self) -> bool {
        self.text.is_some()
            || self.inline_data.is_some()
            || self.file_data.is_some()
            || self.function_call.is_some()
            || self.function_response.is_some()
            || self.thought_signature.is_some()
            || !self.extra.is_empty()
    }
}

/// Inline media: `{"mimeType": "image/png", "data": "<base64>"}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Blob {
    /// The media type, e.g. `image/png`.
    #[serde(default, alias = "mime_type", skip_serializing_if = "String::is_empty")]
    pub mime_type: String,
    /// The bytes, base64.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data: String,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Media by URI: `{"mimeType": "video/mp4", "fileUri": "https://..."}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FileData {
    /// The media type, when given.
    #[serde(default, alias = "mime_type", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The URI of the file.
    #[serde(default, alias = "file_uri", skip_serializing_if = "String::is_empty")]
    pub file_uri: String,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A function call of the model: `{"name": "get_weather", "args": {...}}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FunctionCall {
    /// The call's id, when the API assigns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The arguments, a JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of a function call: `{"name": "get_weather", "response": {...}}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FunctionResponse {
    /// The id of the call answered, when the call had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The result, a JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `generationConfig` (wire-formats §6.1). `responseJsonSchema`, `presencePenalty`,
/// `responseModalities`, `speechConfig`, ... stay in [`extra`](Self::extra).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GenerationConfig {
    /// Sampling temperature, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Nucleus sampling, as sent.
    #[serde(default, alias = "top_p", skip_serializing_if = "Option::is_none")]
    pub top_p: Option<Number>,
    /// Top-k sampling, as sent (an integer or, from the Python SDK, a float).
    #[serde(default, alias = "top_k", skip_serializing_if = "Option::is_none")]
    pub top_k: Option<Number>,
    /// How many candidates to generate (1 to 8).
    #[serde(
        default,
        alias = "candidate_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub candidate_count: Option<i64>,
    /// The most tokens a candidate may produce, thinking included.
    #[serde(
        default,
        alias = "max_output_tokens",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_output_tokens: Option<i64>,
    /// Sequences that stop generation.
    #[serde(
        default,
        alias = "stop_sequences",
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_sequences: Option<Vec<String>>,
    /// `text/plain`, `application/json`, `text/x.enum`.
    #[serde(
        default,
        alias = "response_mime_type",
        skip_serializing_if = "Option::is_none"
    )]
    pub response_mime_type: Option<String>,
    /// The answer's schema (OpenAPI subset), kept as sent.
    #[serde(
        default,
        alias = "response_schema",
        skip_serializing_if = "Option::is_none"
    )]
    pub response_schema: Option<Value>,
    /// A sampling seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Thinking budget, level and whether thoughts are returned.
    #[serde(
        default,
        alias = "thinking_config",
        skip_serializing_if = "Option::is_none"
    )]
    pub thinking_config: Option<ThinkingConfig>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `generationConfig.thinkingConfig` (docs/api.md §2.9, wire-formats §6.1).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ThinkingConfig {
    /// Thinking tokens: `0` = off, `-1` = the model decides, else within the model's range
    /// ([`ModelLimits`](crate::models::ModelLimits)).
    #[serde(
        default,
        alias = "thinking_budget",
        skip_serializing_if = "Option::is_none"
    )]
    pub thinking_budget: Option<i64>,
    /// Whether thought summaries are returned as parts with `"thought": true`.
    #[serde(
        default,
        alias = "include_thoughts",
        skip_serializing_if = "Option::is_none"
    )]
    pub include_thoughts: Option<bool>,
    /// `MINIMAL`, `LOW`, `MEDIUM` or `HIGH` (generation 3); not together with a budget.
    #[serde(
        default,
        alias = "thinking_level",
        skip_serializing_if = "Option::is_none"
    )]
    pub thinking_level: Option<String>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The body of `countTokens`: either `contents`, or a whole `generateContentRequest` (which then
/// also carries `model`, kept in its `extra`).
///
/// ```
/// use tollgate_native_genai::CountTokensRequest;
///
/// let request: CountTokensRequest = serde_json::from_str(
///     r#"{"generateContentRequest": {"model": "models/gen-2.5-flash",
///         "contents": [{"parts": [{"text": "How many?"}]}]}}"#,
/// )?;
/// let inner = request.generate_content_request.as_ref().ok_or("no request")?;
/// assert_eq!(inner.extra["model"], "models/gen-2.5-flash");
/// assert!(request.contents.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CountTokensRequest {
    /// The turns to count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contents: Option<Vec<Content>>,
    /// A whole request to count (system instruction and tools included).
    #[serde(
        default,
        alias = "generate_content_request",
        skip_serializing_if = "Option::is_none"
    )]
    pub generate_content_request: Option<GenerateContentRequest>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CountTokensRequest {
    /// A count of the whole of `request` — its system instruction and tools with its turns — for
    /// the upstream model `model` (the native API wants the model inside a whole request).
    ///
    /// ```
    /// use tollgate_native_genai::{CountTokensRequest, GenerateContentRequest};
    ///
    /// let count = CountTokensRequest::whole(GenerateContentRequest::text("Hi"), "gen-2.5-flash");
    /// let inner = count.generate_content_request.as_ref().ok_or("no request")?;
    /// assert_eq!(inner.extra["model"], "models/gen-2.5-flash");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn whole(mut request: GenerateContentRequest, model: &str) -> CountTokensRequest {
        request
            .extra
            .insert("model".to_owned(), Value::String(format!("models/{model}")));
        CountTokensRequest {
            generate_content_request: Some(request),
            ..CountTokensRequest::default()
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn snake_case_is_read_and_camel_case_written() {
        let request: GenerateContentRequest = serde_json::from_value(json!({
            "contents": [{"role": "user", "parts": [
                {"inline_data": {"mime_type": "image/png", "data": "AAAA"}},
                {"file_data": {"mime_type": "video/mp4", "file_uri": "https://x.example/v.mp4"}}
            ]}],
            "generation_config": {"max_output_tokens": 100, "thinking_config":
                {"thinking_budget": 512, "include_thoughts": true, "thinking_level": "low"}},
            "safety_settings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            json!({
                "contents": [{"role": "user", "parts": [
                    {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
                    {"fileData": {"mimeType": "video/mp4", "fileUri": "https://x.example/v.mp4"}}
                ]}],
                "generationConfig": {"maxOutputTokens": 100, "thinkingConfig":
                    {"thinkingBudget": 512, "includeThoughts": true, "thinkingLevel": "low"}},
                "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
            })
        );
    }

    #[test]
    fn both_spellings_of_a_field_is_an_error() {
        let both = json!({"contents": [], "systemInstruction": {"parts": []},
            "system_instruction": {"parts": []}});
        assert!(serde_json::from_value::<GenerateContentRequest>(both).is_err());
    }

    #[test]
    fn numbers_keep_their_form() {
        let config = json!({"temperature": 1, "topP": 0.95, "topK": 40.0, "seed": -7,
            "presencePenalty": 0.30000000000000004});
        let decoded: GenerationConfig = serde_json::from_value(config.clone()).unwrap();
        assert_eq!(serde_json::to_value(&decoded).unwrap(), config);
        let text = r#"{"temperature":0.1,"topP":1e-7,"topK":40}"#;
        let decoded: GenerationConfig = serde_json::from_str(text).unwrap();
        assert_eq!(
            serde_json::to_string(&decoded).unwrap(),
            r#"{"temperature":0.1,"topP":1e-7,"topK":40}"#
        );
    }

    #[test]
    fn empty_part_has_no_data() {
        assert!(!Part::default().has_data());
        let thought_only: Part = serde_json::from_value(json!({"thought": true})).unwrap();
        assert!(!thought_only.has_data());
        let code: Part =
            serde_json::from_value(json!({"executableCode": {"language": "PYTHON", "code": "1"}}))
                .unwrap();
        assert!(code.has_data());
    }
}
