//! The Responses bridge (`POST /v1/responses`, the OpenAI Responses API, for native models;
//! `docs/decisions.md`, "The Responses bridge"): a Responses request becomes a native request
//! ([`to_native`]), a native answer becomes a [`Response`] ([`to_response`]), and native stream
//! chunks become the Responses stream's events ([`ResponseEvents`]). Pure functions and a state
//! machine; the gateway does the I/O. It shares its pieces with the chat bridge ([`crate::bridge`]).
//!
//! # Request: Responses → native ([`to_native`])
//!
//! | Responses | Native |
//! |---|---|
//! | `instructions`, then `system` / `developer` messages | `systemInstruction.parts[].text`, in that order |
//! | `input` as a string | one `user` turn with that text |
//! | a `user` message (`type` `message` or absent): string content, `input_text` parts, `input_image` with `image_url`, `input_audio`, `input_file` | a `user` turn: `text` parts; images as the chat bridge does (`data:` URL → `inlineData`, `http(s)` → `fileData`); audio inline; a file's `file_data` inline and its `file_url` as `fileData` (`file_id` refused: no file store) |
//! | an `assistant` message: string content, `output_text` or `refusal` parts | a `model` turn with its text |
//! | a `function_call` item (`call_id`, `name`, `arguments`) | a `model` turn with `functionCall{name, args}`; `extra_content.google.thought_signature` goes back as the part's `thoughtSignature` |
//! | a `function_call_output` item (`call_id`, `output`) | a `user` turn with `functionResponse{name, response}`, named after the earlier call with that `call_id`; `response` is the output when it is a JSON object, else `{"content": "<output>"}` |
//! | a `reasoning` item | left out (the native API carries its reasoning in thought signatures) |
//! | consecutive turns of one role | merged into one turn |
//! | `max_output_tokens` | `generationConfig.maxOutputTokens` (1 to the model's cap) |
//! | `temperature`, `top_p` | `temperature`, `topP` |
//! | `text.format` `text` / `json_object` / `json_schema` | nothing / `responseMimeType: "application/json"` / the same plus `responseJsonSchema` = `text.format.schema` |
//! | `reasoning.effort` | `thinkingConfig.thinkingBudget`, as the chat bridge's `reasoning_effort` |
//! | `tools` of `type: function` (`name`, `description`, `parameters`) | one tool with `functionDeclarations` (`parametersJsonSchema`) |
//! | `tool_choice` `none` / `auto` / `required` / `{type: function, name}` | `functionCallingConfig.mode` `NONE` / `AUTO` / `ANY` / `ANY` with `allowedFunctionNames` |
//!
//! Refused, naming the field: `previous_response_id` and `conversation` (the gateway stores no
//! responses: send the whole conversation in `input`), `background: true`, tools other than
//! functions, input items other than messages, function calls, their outputs and reasoning, and
//! content parts other than text, images, audio and files. Other fields
//! (`store`, `metadata`, `include`, `user`, `truncation`, `parallel_tool_calls`, ...) are not sent
//! on; the ones a [`Response`] has are echoed back.
//!
//! # Answer: native → Responses ([`to_response`], [`ResponseEvents`])
//!
//! The first candidate's text becomes one `message` item with one `output_text` part, followed
//! by a `function_call` item per `functionCall` (`call_id` the call's own id or
//! `call_<response id>_<n>`). Thought parts are left out; their tokens are reported as
//! `output_tokens_details.reasoning_tokens` and count as output (docs/api.md §8 rule 7). `status` is
//! `completed`, or `incomplete` with `incomplete_details.reason` `max_output_tokens`
//! (`MAX_TOKENS`) or `content_filter` (a safety finish or a blocked prompt). `usage`:
//! `input_tokens` = `promptTokenCount + toolUsePromptTokenCount`, `output_tokens` =
//! `candidatesTokenCount + thoughtsTokenCount`, `input_tokens_details.cached_tokens` =
//! `cachedContentTokenCount`.
//!
//! A stream is `response.created`, `response.in_progress`, then for the text
//! `response.output_item.added`, `response.content_part.added`, `response.output_text.delta`
//! per chunk, closed by `response.output_text.done`, `response.content_part.done` and
//! `response.output_item.done`; a function call is `response.output_item.added`,
//! `response.function_call_arguments.delta` (the whole arguments: the native API streams whole
//! calls), `response.function_call_arguments.done` and `response.output_item.done`; the stream
//! ends with `response.completed` (or `response.incomplete`) carrying the whole response and its
//! usage, or `response.failed` when the upstream fails midway. Every event has a
//! `sequence_number` counting from 0.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value, json};
use std::collections::HashMap;

use crate::bridge::{
    self, JSON_MIME, audio_part, declaration, declarations_tool, effort_budget_of, file_fields,
    function_response, image_part, non_empty_text, parse_arguments, push_turn,
};
use crate::error::{FieldError, Rule};
use crate::models::ModelLimits;
use crate::request::{
    Content, FunctionCall, GenerateContentRequest, GenerationConfig, Part, ROLE_MODEL, ROLE_USER,
    ThinkingConfig,
};
use crate::response::{Candidate, GenerateContentResponse, UsageMetadata};

/// The `object` value of a [`Response`].
pub const RESPONSE_OBJECT: &str = "response";

/// The body of `POST /v1/responses`: the fields the bridge reads; the rest stay in `extra`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    // Decoded when missing, refused by validation naming it: required all the same.
    schemars(extend("required" = ["model", "input"]))
)]
pub struct ResponsesRequest {
    /// The model (a native model of the catalog).
    #[serde(default)]
    pub model: String,
    /// A string (one user message) or an array of input items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// A system message put before the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Stream the answer as server-sent events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// The most output tokens, thinking included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<i64>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Tools; only `type: function`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    /// `none`, `auto`, `required` or `{"type": "function", "name": ...}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    /// Echoed back; the native API decides by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// `{"format": {"type": "text" | "json_object" | "json_schema", ...}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Value>,
    /// `{"effort": "none" | "minimal" | "low" | "medium" | "high" | "xhigh"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Value>,
    /// Refused: the gateway stores no responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<String>,
    /// Refused: the gateway stores no conversations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Value>,
    /// Refused when true: the gateway answers in the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// Echoed back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Fields the bridge does not read (`store`, `include`, `user`, `truncation`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The answer of `POST /v1/responses/input_tokens`: how many input tokens a Responses request
/// would send its model, counted by the model's channel (not billed).
///
/// ```
/// use tollgate_native_genai::responses::InputTokens;
///
/// assert_eq!(
///     serde_json::to_string(&InputTokens::new(12))?,
///     r#"{"object":"response.input_tokens","input_tokens":12}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ResponsesInputTokens")
)]
pub struct InputTokens {
    /// `response.input_tokens`.
    pub object: String,
    /// The request's input tokens: its instructions, input items and tools.
    pub input_tokens: u64,
}

impl InputTokens {
    /// The answer for a count of `input_tokens`.
    pub fn new(input_tokens: u64) -> InputTokens {
        InputTokens {
            object: "response.input_tokens".to_owned(),
            input_tokens,
        }
    }
}

/// The answer of `POST /v1/responses` (also inside the stream's lifecycle events).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "ResponsesResponse")
)]
pub struct Response {
    /// `resp_…`.
    pub id: String,
    /// Always `"response"`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "response")))]
    pub object: String,
    /// Unix seconds.
    pub created_at: i64,
    /// `in_progress`, `completed`, `incomplete` or `failed`.
    pub status: String,
    /// Why a `failed` response failed.
    pub error: Option<ResponseError>,
    /// Why an `incomplete` response stopped.
    pub incomplete_details: Option<IncompleteDetails>,
    /// The request's `instructions`.
    pub instructions: Option<String>,
    /// The request's `max_output_tokens`.
    pub max_output_tokens: Option<i64>,
    /// The model as the client named it.
    pub model: String,
    /// The output items.
    pub output: Vec<OutputItem>,
    /// The request's `parallel_tool_calls` (default true).
    pub parallel_tool_calls: bool,
    /// The request's `temperature`.
    pub temperature: Option<f64>,
    /// The request's `top_p`.
    pub top_p: Option<f64>,
    /// The request's `tool_choice` (default `"auto"`).
    pub tool_choice: Value,
    /// The request's `tools`.
    pub tools: Vec<Value>,
    /// The request's `text` (default `{"format": {"type": "text"}}`).
    pub text: Value,
    /// The request's `reasoning`.
    pub reasoning: Value,
    /// Always false: the gateway stores no responses.
    pub store: bool,
    /// The request's `metadata` (default `{}`).
    pub metadata: Value,
    /// Token usage; absent until the answer is complete.
    pub usage: Option<ResponseUsage>,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// [`Response::error`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResponseError {
    /// A machine-readable code (`server_error`).
    pub code: String,
    /// What happened.
    pub message: String,
}

/// [`Response::incomplete_details`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IncompleteDetails {
    /// `max_output_tokens` or `content_filter`.
    pub reason: String,
}

/// One item of [`Response::output`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    /// The assistant's text.
    Message {
        /// `msg_…`.
        id: String,
        /// `in_progress`, `completed` or `incomplete`.
        status: String,
        /// Always `assistant`.
        role: String,
        /// The text parts.
        content: Vec<OutputContent>,
    },
    /// A call of a declared function.
    FunctionCall {
        /// `fc_…`.
        id: String,
        /// The id a `function_call_output` answers.
        call_id: String,
        /// The function.
        name: String,
        /// Its arguments as JSON text.
        arguments: String,
        /// `in_progress` or `completed`.
        status: String,
        /// `{"google": {"thought_signature": …}}` when the model signed the call; to be sent
        /// back with the item.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extra_content: Option<Value>,
    },
}

/// A part of a `message` item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputContent {
    /// Text.
    OutputText {
        /// The text.
        text: String,
        /// Always empty.
        #[serde(default)]
        annotations: Vec<Value>,
        /// Always empty.
        #[serde(default)]
        logprobs: Vec<Value>,
    },
}

impl OutputContent {
    fn text(text: String) -> OutputContent {
        OutputContent::OutputText {
            text,
            annotations: Vec::new(),
            logprobs: Vec::new(),
        }
    }
}

/// [`Response::usage`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResponseUsage {
    /// `promptTokenCount + toolUsePromptTokenCount`.
    pub input_tokens: u64,
    /// `cached_tokens`.
    pub input_tokens_details: InputTokensDetails,
    /// `candidatesTokenCount + thoughtsTokenCount` (thinking is output).
    pub output_tokens: u64,
    /// `reasoning_tokens`.
    pub output_tokens_details: OutputTokensDetails,
    /// `totalTokenCount`.
    pub total_tokens: u64,
}

/// [`ResponseUsage::input_tokens_details`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InputTokensDetails {
    /// `cachedContentTokenCount`.
    pub cached_tokens: u64,
}

/// [`ResponseUsage::output_tokens_details`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OutputTokensDetails {
    /// `thoughtsTokenCount`.
    pub reasoning_tokens: u64,
}

/// The usage of a native answer, the Responses way (see the [module](self) documentation).
pub fn usage(native: &UsageMetadata) -> ResponseUsage {
    ResponseUsage {
        input_tokens: native.input_tokens(),
        input_tokens_details: InputTokensDetails {
            cached_tokens: native.cached_content_token_count.unwrap_or(0),
        },
        output_tokens: native.output_tokens(),
        output_tokens_details: OutputTokensDetails {
            reasoning_tokens: native.thoughts_token_count.unwrap_or(0),
        },
        total_tokens: native.total_tokens(),
    }
}

/// Translates a Responses request into a native request for a model with `limits` (see the
/// [module](self) documentation). Errors name the Responses field (`input[2].call_id`,
/// `text.format.type`, ...). The result should still be checked with
/// [`validate`](crate::validate()).
///
/// ```
/// use tollgate_native_genai::responses::{ResponsesRequest, to_native};
/// use tollgate_native_genai::models::limits;
///
/// let request: ResponsesRequest = serde_json::from_str(r#"{
///     "model": "gen-2.5-flash", "instructions": "Be terse.", "input": "Hi",
///     "max_output_tokens": 100, "reasoning": {"effort": "none"}
/// }"#)?;
/// let native = to_native(&request, &limits("gen-2.5-flash").ok_or("unknown")?)?;
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
    request: &ResponsesRequest,
    limits: &ModelLimits,
) -> Result<GenerateContentRequest, FieldError> {
    refuse_stateful(request)?;
    let mut system = request
        .instructions
        .as_deref()
        .map(non_empty_text)
        .unwrap_or_default();
    let contents = input(request.input.as_ref(), &mut system)?;
    let tools = match &request.tools {
        Some(tools) => function_declarations(tools)?,
        None => None,
    };
    let tool_config = request.tool_choice.as_ref().map(tool_config).transpose()?;
    Ok(bridge::assemble(
        contents,
        system,
        generation_config(request, limits)?,
        tools,
        tool_config,
    ))
}

fn refuse_stateful(request: &ResponsesRequest) -> Result<(), FieldError> {
    let stored = |field: &str| {
        FieldError::new(
            field,
            Rule::UnsupportedParameter,
            format!(
                "'{field}' is not supported: this gateway stores no responses; send the whole \
                 conversation in 'input'"
            ),
        )
    };
    if request
        .previous_response_id
        .as_deref()
        .is_some_and(|id| !id.is_empty())
    {
        return Err(stored("previous_response_id"));
    }
    if request.conversation.as_ref().is_some_and(|c| !c.is_null()) {
        return Err(stored("conversation"));
    }
    if request.background == Some(true) {
        return Err(FieldError::new(
            "background",
            Rule::UnsupportedParameter,
            "'background' is not supported: the answer comes in the request (or its stream)",
        ));
    }
    Ok(())
}

fn input(input: Option<&Value>, system: &mut Vec<Part>) -> Result<Vec<Content>, FieldError> {
    let mut contents: Vec<Content> = Vec::new();
    match input {
        None | Some(Value::Null) => return Err(crate::error::required("input")),
        Some(Value::String(text)) => push_turn(&mut contents, ROLE_USER, non_empty_text(text)),
        Some(Value::Array(items)) => {
            let mut call_names: HashMap<String, String> = HashMap::new();
            for (i, item) in items.iter().enumerate() {
                input_item(
                    &format!("input[{i}]"),
                    item,
                    &mut contents,
                    system,
                    &mut call_names,
                )?;
            }
        }
        Some(_) => {
            return Err(FieldError::new(
                "input",
                Rule::Malformed,
                "'input' must be a string or an array of input items",
            ));
        }
    }
    if contents.is_empty() {
        return Err(FieldError::new(
            "input",
            Rule::Required,
            "'input' must hold some text, a user or assistant message, or a function call",
        ));
    }
    Ok(contents)
}

fn input_item(
    path: &str,
    item: &Value,
    contents: &mut Vec<Content>,
    system: &mut Vec<Part>,
    call_names: &mut HashMap<String, String>,
) -> Result<(), FieldError> {
    let Some(item) = item.as_object() else {
        return Err(FieldError::new(
            path,
            Rule::Malformed,
            format!("'{path}' must be an object"),
        ));
    };
    match item.get("type").and_then(Value::as_str) {
        None | Some("message") => message(path, item, contents, system),
        Some("function_call") => {
            let call_id = required_str(path, item, "call_id")?;
            let name = required_str(path, item, "name")?;
            let arguments = item.get("arguments").and_then(Value::as_str).unwrap_or("");
            let args = parse_arguments(&format!("{path}.arguments"), arguments)?;
            call_names.insert(call_id.to_owned(), name.to_owned());
            let signature = item
                .get("extra_content")
                .and_then(|e| e.get("google"))
                .and_then(|g| g.get("thought_signature"))
                .and_then(Value::as_str);
            let part = Part {
                thought_signature: signature.map(str::to_owned),
                function_call: Some(FunctionCall {
                    id: None,
                    name: name.to_owned(),
                    args: Some(args),
                    extra: Map::new(),
                }),
                ..Part::default()
            };
            push_turn(contents, ROLE_MODEL, vec![part]);
            Ok(())
        }
        Some("function_call_output") => {
            let call_id = required_str(path, item, "call_id")?;
            let Some(name) = call_names.get(call_id) else {
                let field = format!("{path}.call_id");
                let message =
                    format!("'{field}' {call_id:?} does not answer any earlier function_call");
                return Err(FieldError::new(field, Rule::UnsupportedValue, message));
            };
            let output = match item.get("output") {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect(),
                _ => return Err(crate::error::required(format!("{path}.output"))),
            };
            push_turn(
                contents,
                ROLE_USER,
                vec![function_response(name.clone(), &output)],
            );
            Ok(())
        }
        // The native API carries its reasoning in thought signatures, not in the history.
        Some("reasoning") => Ok(()),
        Some(other) => {
            let field = format!("{path}.type");
            let message = format!(
                "'{field}' {other:?} is not accepted; use message, function_call, \
                 function_call_output or reasoning"
            );
            Err(FieldError::new(field, Rule::UnsupportedValue, message))
        }
    }
}

fn required_str<'a>(
    path: &str,
    item: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a str, FieldError> {
    match item.get(key).and_then(Value::as_str) {
        Some(value) if !value.is_empty() => Ok(value),
        _ => Err(crate::error::required(format!("{path}.{key}"))),
    }
}

fn message(
    path: &str,
    item: &Map<String, Value>,
    contents: &mut Vec<Content>,
    system: &mut Vec<Part>,
) -> Result<(), FieldError> {
    let role = required_str(path, item, "role")?;
    let (accepted, image_ok): (&[&str], bool) = match role {
        "system" | "developer" => (&["input_text"], false),
        "user" => (&["input_text"], true),
        "assistant" => (&["output_text", "refusal"], false),
        other => {
            let field = format!("{path}.role");
            let message = format!(
                "'{field}' {other:?} is not accepted; use system, developer, user or assistant"
            );
            return Err(FieldError::new(field, Rule::UnsupportedValue, message));
        }
    };
    let mut parts = Vec::new();
    match item.get("content") {
        Some(Value::String(text)) => parts.extend(non_empty_text(text)),
        Some(Value::Array(list)) => {
            for (j, part) in list.iter().enumerate() {
                let part_path = format!("{path}.content[{j}]");
                let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
                if kind == "input_image" && image_ok {
                    let field = format!("{part_path}.image_url");
                    let url = match part.get("image_url") {
                        Some(Value::String(url)) => url.as_str(),
                        // The chat form, `{"url": ...}`, which some clients send here too.
                        Some(Value::Object(o)) => {
                            o.get("url").and_then(Value::as_str).unwrap_or_default()
                        }
                        _ if part.get("file_id").is_some() => {
                            return Err(FieldError::new(
                                format!("{part_path}.file_id"),
                                Rule::UnsupportedParameter,
                                format!(
                                    "'{part_path}.file_id' is not supported: this gateway has no \
                                     file store; send the image as an http(s) or data URL"
                                ),
                            ));
                        }
                        _ => "",
                    };
                    parts.push(image_part(&field, url)?);
                } else if kind == "input_audio" && image_ok {
                    parts.push(audio_part(
                        &format!("{part_path}.input_audio"),
                        part.get("input_audio"),
                    )?);
                } else if kind == "input_file" && image_ok {
                    let fields = part.as_object().cloned().unwrap_or_default();
                    parts.push(file_fields(&part_path, &fields)?);
                } else if accepted.contains(&kind) {
                    let text = part.get("text").and_then(Value::as_str);
                    let text = text.or_else(|| part.get("refusal").and_then(Value::as_str));
                    parts.extend(non_empty_text(text.unwrap_or_default()));
                } else {
                    let field = format!("{part_path}.type");
                    let mut allowed = accepted.to_vec();
                    if image_ok {
                        allowed.extend(["input_image", "input_audio", "input_file"]);
                    }
                    let message = format!(
                        "'{field}' {kind:?} is not accepted in a {role} message; use {}",
                        allowed.join(" or ")
                    );
                    return Err(FieldError::new(field, Rule::UnsupportedValue, message));
                }
            }
        }
        _ => return Err(crate::error::required(format!("{path}.content"))),
    }
    match role {
        "system" | "developer" => system.extend(parts),
        "user" if parts.is_empty() => {
            return Err(crate::error::required(format!("{path}.content")));
        }
        "user" => push_turn(contents, ROLE_USER, parts),
        _ => push_turn(contents, ROLE_MODEL, parts),
    }
    Ok(())
}

fn generation_config(
    request: &ResponsesRequest,
    limits: &ModelLimits,
) -> Result<GenerationConfig, FieldError> {
    const MAX: &str = "max_output_tokens";
    let mut config = GenerationConfig::default();
    if let Some(asked) = request.max_output_tokens {
        let cap = limits.max_output_tokens;
        if asked < 1 || asked > i64::from(cap) {
            return Err(FieldError::new(
                MAX,
                Rule::OutOfRange,
                format!("'{MAX}' must be between 1 and {cap} for this model, not {asked}"),
            ));
        }
        config.max_output_tokens = Some(asked);
    }
    config.temperature = request.temperature.and_then(Number::from_f64);
    config.top_p = request.top_p.and_then(Number::from_f64);
    if let Some(format) = request.text.as_ref().and_then(|t| t.get("format")) {
        text_format(format, &mut config)?;
    }
    let effort = request.reasoning.as_ref().and_then(|r| r.get("effort"));
    if let Some(effort) = effort.filter(|e| !e.is_null()) {
        let Some(effort) = effort.as_str() else {
            return Err(FieldError::new(
                "reasoning.effort",
                Rule::Malformed,
                "'reasoning.effort' must be a string",
            ));
        };
        if let Some(budget) = effort_budget_of("reasoning.effort", effort, limits)? {
            config.thinking_config = Some(ThinkingConfig {
                thinking_budget: Some(budget),
                ..ThinkingConfig::default()
            });
        }
    }
    Ok(config)
}

fn text_format(format: &Value, config: &mut GenerationConfig) -> Result<(), FieldError> {
    const FIELD: &str = "text.format.type";
    match format.get("type").and_then(Value::as_str) {
        None => Err(crate::error::required(FIELD)),
        Some("text") => Ok(()),
        Some("json_object") => {
            config.response_mime_type = Some(JSON_MIME.to_owned());
            Ok(())
        }
        Some("json_schema") => {
            config.response_mime_type = Some(JSON_MIME.to_owned());
            match format.get("schema") {
                Some(schema) if schema.is_object() => {
                    config
                        .extra
                        .insert("responseJsonSchema".to_owned(), schema.clone());
                    Ok(())
                }
                _ => Err(crate::error::required("text.format.schema")),
            }
        }
        Some(other) => Err(FieldError::new(
            FIELD,
            Rule::UnsupportedValue,
            format!("'{FIELD}' {other:?} is not accepted; use text, json_object or json_schema"),
        )),
    }
}

fn function_declarations(tools: &[Value]) -> Result<Option<Vec<Value>>, FieldError> {
    let mut declarations = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let path = format!("tools[{i}]");
        let Some(tool) = tool.as_object() else {
            return Err(FieldError::new(
                &path,
                Rule::Malformed,
                format!("'{path}' must be an object"),
            ));
        };
        match tool.get("type").and_then(Value::as_str) {
            Some("function") => {}
            Some(other) => {
                let field = format!("{path}.type");
                let message =
                    format!("'{field}' {other:?} is not supported by this model; use \"function\"");
                return Err(FieldError::new(field, Rule::UnsupportedValue, message));
            }
            None => return Err(crate::error::required(format!("{path}.type"))),
        }
        let name = required_str(&path, tool, "name")?;
        declarations.push(declaration(name, tool));
    }
    Ok(declarations_tool(declarations))
}

fn tool_config(choice: &Value) -> Result<Value, FieldError> {
    // A mode given in the object form (`{"type": "auto"}`) is a shape the chat format never had.
    if let Some("none" | "auto" | "required") = choice.get("type").and_then(Value::as_str) {
        return Err(FieldError::new(
            "tool_choice.type",
            Rule::Malformed,
            "'tool_choice' takes none, auto and required as strings",
        ));
    }
    bridge::tool_config_at(choice, &["name"], "{\"type\": \"function\", \"name\": ...}")
}

/// What a [`Response`] takes from its request and its identity: everything but the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseTemplate {
    id: String,
    created_at: i64,
    model: String,
    instructions: Option<String>,
    max_output_tokens: Option<i64>,
    parallel_tool_calls: bool,
    temperature: Option<f64>,
    top_p: Option<f64>,
    tool_choice: Value,
    tools: Vec<Value>,
    text: Value,
    reasoning: Value,
    metadata: Value,
}

impl ResponseTemplate {
    /// The template of the answer to `request`, with id `id` (`resp_…`) made at `created_at`
    /// (Unix seconds); the model is named as the client named it.
    pub fn new(request: &ResponsesRequest, id: &str, created_at: i64) -> ResponseTemplate {
        ResponseTemplate {
            id: id.to_owned(),
            created_at,
            model: request.model.clone(),
            instructions: request.instructions.clone(),
            max_output_tokens: request.max_output_tokens,
            parallel_tool_calls: request.parallel_tool_calls.unwrap_or(true),
            temperature: request.temperature,
            top_p: request.top_p,
            tool_choice: request.tool_choice.clone().unwrap_or_else(|| json!("auto")),
            tools: request.tools.clone().unwrap_or_default(),
            text: request
                .text
                .clone()
                .unwrap_or_else(|| json!({"format": {"type": "text"}})),
            reasoning: request
                .reasoning
                .clone()
                .unwrap_or_else(|| json!({"effort": null, "summary": null})),
            metadata: request.metadata.clone().unwrap_or_else(|| json!({})),
        }
    }

    /// The response's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A [`Response`] with `status`, `output` and `usage`.
    pub fn response(
        &self,
        status: Status,
        output: Vec<OutputItem>,
        usage: Option<ResponseUsage>,
    ) -> Response {
        let (error, incomplete_details) = match &status {
            Status::Failed(message) => (
                Some(ResponseError {
                    code: "server_error".to_owned(),
                    message: message.clone(),
                }),
                None,
            ),
            Status::Incomplete(reason) => (
                None,
                Some(IncompleteDetails {
                    reason: (*reason).to_owned(),
                }),
            ),
            _ => (None, None),
        };
        Response {
            id: self.id.clone(),
            object: RESPONSE_OBJECT.to_owned(),
            created_at: self.created_at,
            status: status.name().to_owned(),
            error,
            incomplete_details,
            instructions: self.instructions.clone(),
            max_output_tokens: self.max_output_tokens,
            model: self.model.clone(),
            output,
            parallel_tool_calls: self.parallel_tool_calls,
            temperature: self.temperature,
            top_p: self.top_p,
            tool_choice: self.tool_choice.clone(),
            tools: self.tools.clone(),
            text: self.text.clone(),
            reasoning: self.reasoning.clone(),
            store: false,
            metadata: self.metadata.clone(),
            usage,
            extra: Map::new(),
        }
    }

    fn unique(&self) -> &str {
        self.id.strip_prefix("resp_").unwrap_or(&self.id)
    }

    fn message_id(&self) -> String {
        format!("msg_{}", self.unique())
    }

    /// The `n`th function call's item id and its `call_id` (the call's own id when it has one).
    fn call_ids(&self, call: &FunctionCall, n: u64) -> (String, String) {
        let unique = self.unique();
        let call_id = match &call.id {
            Some(id) if !id.is_empty() => id.clone(),
            _ => format!("call_{unique}_{n}"),
        };
        (format!("fc_{unique}_{n}"), call_id)
    }
}

/// A response's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Still streaming.
    InProgress,
    /// Finished.
    Completed,
    /// Stopped early, for this reason (`max_output_tokens`, `content_filter`).
    Incomplete(&'static str),
    /// Failed midway, with this message.
    Failed(String),
}

impl Status {
    /// Its wire name.
    pub fn name(&self) -> &'static str {
        match self {
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
            Status::Incomplete(_) => "incomplete",
            Status::Failed(_) => "failed",
        }
    }

    /// The status a native finish reason (and a blocked prompt) gives.
    fn of(finish_reason: Option<&str>, blocked: bool) -> Status {
        if blocked {
            return Status::Incomplete("content_filter");
        }
        match bridge::finish_reason(finish_reason, false) {
            Some("length") => Status::Incomplete("max_output_tokens"),
            Some("content_filter") => Status::Incomplete("content_filter"),
            _ => Status::Completed,
        }
    }
}

/// The function calls of a candidate as output items, numbered on from `*next`.
fn call_items(
    template: &ResponseTemplate,
    candidate: &Candidate,
    next: &mut u64,
) -> Vec<OutputItem> {
    let parts = candidate.content.iter().flat_map(|c| c.parts.iter());
    parts
        .filter_map(|part| {
            let call = part.function_call.as_ref()?;
            let (id, call_id) = template.call_ids(call, *next);
            *next += 1;
            Some(OutputItem::FunctionCall {
                id,
                call_id,
                name: call.name.clone(),
                arguments: call
                    .args
                    .as_ref()
                    .map_or_else(|| "{}".to_owned(), Value::to_string),
                status: Status::Completed.name().to_owned(),
                extra_content: part
                    .thought_signature
                    .as_ref()
                    .map(|s| json!({"google": {"thought_signature": s}})),
            })
        })
        .collect()
}

/// A native answer as a [`Response`] (see the [module](self) documentation).
///
/// ```
/// use tollgate_native_genai::GenerateContentResponse;
/// use tollgate_native_genai::responses::{ResponseTemplate, ResponsesRequest, to_response};
///
/// let request: ResponsesRequest = serde_json::from_str(r#"{"model": "gen-2.5-flash", "input": "Hi"}"#)?;
/// let native: GenerateContentResponse = serde_json::from_str(r#"{
///     "candidates": [{"content": {"role": "model", "parts": [{"text": "Hello."}]}, "finishReason": "STOP"}],
///     "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 2, "thoughtsTokenCount": 5, "totalTokenCount": 9}
/// }"#)?;
/// let response = to_response(&native, &ResponseTemplate::new(&request, "resp_1", 1_767_240_000));
/// let value = serde_json::to_value(&response)?;
/// assert_eq!(value["status"], "completed");
/// assert_eq!(value["output"][0]["content"][0]["text"], "Hello.");
/// assert_eq!(value["usage"]["output_tokens"], 7);
/// assert_eq!(value["usage"]["output_tokens_details"]["reasoning_tokens"], 5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_response(native: &GenerateContentResponse, template: &ResponseTemplate) -> Response {
    let candidate = native.first_candidate();
    let mut output = Vec::new();
    let mut next = 0;
    let calls = candidate.map_or_else(Vec::new, |c| call_items(template, c, &mut next));
    let text = candidate.map(Candidate::text).unwrap_or_default();
    if !text.is_empty() || calls.is_empty() {
        output.push(OutputItem::Message {
            id: template.message_id(),
            status: Status::Completed.name().to_owned(),
            role: bridge::ROLE_ASSISTANT.to_owned(),
            content: vec![OutputContent::text(text)],
        });
    }
    output.extend(calls);
    let status = Status::of(
        candidate.and_then(|c| c.finish_reason.as_deref()),
        candidate.is_none() && native.block_reason().is_some(),
    );
    template.response(status, output, native.usage_metadata.as_ref().map(usage))
}

/// One server-sent event of a streamed response: its kind and its place in the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamEvent {
    /// The event (its `type` and fields).
    #[serde(flatten)]
    pub kind: EventKind,
    /// Counts from 0 over the stream.
    pub sequence_number: u64,
}

impl StreamEvent {
    /// The event as SSE: `event: <type>`, then `data: <json>`.
    pub fn to_sse(&self) -> String {
        format!(
            "event: {}\ndata: {}\n\n",
            self.kind.name(),
            serde_json::to_string(self).unwrap_or_default()
        )
    }
}

/// The events of a Responses stream that the bridge emits.
#[allow(missing_docs)] // the fields are the wire's, named in the module documentation
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum EventKind {
    #[serde(rename = "response.created")]
    Created { response: Response },
    #[serde(rename = "response.in_progress")]
    InProgress { response: Response },
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        output_index: usize,
        item: OutputItem,
    },
    #[serde(rename = "response.content_part.added")]
    ContentPartAdded {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: OutputContent,
    },
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        item_id: String,
        output_index: usize,
        content_index: usize,
        delta: String,
        logprobs: Vec<Value>,
    },
    #[serde(rename = "response.output_text.done")]
    OutputTextDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        text: String,
        logprobs: Vec<Value>,
    },
    #[serde(rename = "response.content_part.done")]
    ContentPartDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: OutputContent,
    },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        output_index: usize,
        item: OutputItem,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        item_id: String,
        output_index: usize,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone {
        item_id: String,
        output_index: usize,
        name: String,
        arguments: String,
    },
    #[serde(rename = "response.completed")]
    Completed { response: Response },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: Response },
    #[serde(rename = "response.failed")]
    Failed { response: Response },
}

impl EventKind {
    /// The event's `type`.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::Created { .. } => "response.created",
            EventKind::InProgress { .. } => "response.in_progress",
            EventKind::OutputItemAdded { .. } => "response.output_item.added",
            EventKind::ContentPartAdded { .. } => "response.content_part.added",
            EventKind::OutputTextDelta { .. } => "response.output_text.delta",
            EventKind::OutputTextDone { .. } => "response.output_text.done",
            EventKind::ContentPartDone { .. } => "response.content_part.done",
            EventKind::OutputItemDone { .. } => "response.output_item.done",
            EventKind::FunctionCallArgumentsDelta { .. } => {
                "response.function_call_arguments.delta"
            }
            EventKind::FunctionCallArgumentsDone { .. } => "response.function_call_arguments.done",
            EventKind::Completed { .. } => "response.completed",
            EventKind::Incomplete { .. } => "response.incomplete",
            EventKind::Failed { .. } => "response.failed",
        }
    }
}

/// Native stream chunks → the Responses stream's events (see the [module](self)
/// documentation): feed each chunk to [`map`](Self::map), then call [`finish`](Self::finish),
/// or [`fail`](Self::fail) when the upstream fails midway.
#[derive(Debug, Clone)]
pub struct ResponseEvents {
    template: ResponseTemplate,
    sequence: u64,
    started: bool,
    /// The finished items.
    output: Vec<OutputItem>,
    /// The text of the message item being streamed (its index is `output.len()`).
    open_text: Option<String>,
    next_call: u64,
    finish_reason: Option<String>,
    blocked: bool,
    usage: Option<UsageMetadata>,
}

impl ResponseEvents {
    /// A stream answering with `template`.
    pub fn new(template: ResponseTemplate) -> ResponseEvents {
        ResponseEvents {
            template,
            sequence: 0,
            started: false,
            output: Vec::new(),
            open_text: None,
            next_call: 0,
            finish_reason: None,
            blocked: false,
            usage: None,
        }
    }

    /// The latest usage a chunk reported.
    pub fn usage(&self) -> Option<&UsageMetadata> {
        self.usage.as_ref()
    }

    /// The events for one native chunk (the lifecycle's first two before the first).
    pub fn map(&mut self, chunk: &GenerateContentResponse) -> Vec<StreamEvent> {
        let mut out = self.begin();
        if let Some(usage) = &chunk.usage_metadata {
            self.usage = Some(usage.clone());
        }
        let Some(candidate) = chunk.first_candidate() else {
            self.blocked |= chunk.block_reason().is_some();
            return out;
        };
        let text = candidate.text();
        if !text.is_empty() {
            if self.open_text.is_none() {
                self.open_message(&mut out);
            }
            if let Some(open) = &mut self.open_text {
                open.push_str(&text);
            }
            let kind = EventKind::OutputTextDelta {
                item_id: self.template.message_id(),
                output_index: self.output.len(),
                content_index: 0,
                delta: text,
                logprobs: Vec::new(),
            };
            self.push(&mut out, kind);
        }
        for item in call_items(&self.template, candidate, &mut self.next_call) {
            self.close_message(&mut out);
            self.call(&mut out, item);
        }
        if let Some(reason) = &candidate.finish_reason {
            self.finish_reason = Some(reason.clone());
        }
        out
    }

    /// The last events: the open message closed, then `response.completed` (or
    /// `response.incomplete`) with the whole response.
    pub fn finish(&mut self) -> Vec<StreamEvent> {
        let mut out = self.begin();
        if self.output.is_empty() && self.open_text.is_none() {
            // An answer with no text and no call still has its (empty) message, as a whole one.
            self.open_message(&mut out);
        }
        self.close_message(&mut out);
        let status = Status::of(self.finish_reason.as_deref(), self.blocked);
        let incomplete = matches!(status, Status::Incomplete(_));
        let response =
            self.template
                .response(status, self.output.clone(), self.usage.as_ref().map(usage));
        let kind = if incomplete {
            EventKind::Incomplete { response }
        } else {
            EventKind::Completed { response }
        };
        self.push(&mut out, kind);
        out
    }

    /// The last event when the upstream failed midway: `response.failed` with what was
    /// delivered and `message`.
    pub fn fail(&mut self, message: &str) -> Vec<StreamEvent> {
        let mut out = self.begin();
        let mut output = self.output.clone();
        if let Some(text) = self.open_text.take() {
            output.push(self.message("incomplete", text));
        }
        let response = self.template.response(
            Status::Failed(message.to_owned()),
            output,
            self.usage.as_ref().map(usage),
        );
        self.push(&mut out, EventKind::Failed { response });
        out
    }

    fn begin(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            let response = self.template.response(Status::InProgress, Vec::new(), None);
            self.push(
                &mut out,
                EventKind::Created {
                    response: response.clone(),
                },
            );
            self.push(&mut out, EventKind::InProgress { response });
        }
        out
    }

    fn push(&mut self, out: &mut Vec<StreamEvent>, kind: EventKind) {
        out.push(StreamEvent {
            kind,
            sequence_number: self.sequence,
        });
        self.sequence += 1;
    }

    fn message(&self, status: &str, text: String) -> OutputItem {
        OutputItem::Message {
            id: self.template.message_id(),
            status: status.to_owned(),
            role: bridge::ROLE_ASSISTANT.to_owned(),
            content: if text.is_empty() && status == Status::InProgress.name() {
                Vec::new()
            } else {
                vec![OutputContent::text(text)]
            },
        }
    }

    fn open_message(&mut self, out: &mut Vec<StreamEvent>) {
        self.open_text = Some(String::new());
        let output_index = self.output.len();
        let item = self.message(Status::InProgress.name(), String::new());
        self.push(out, EventKind::OutputItemAdded { output_index, item });
        let kind = EventKind::ContentPartAdded {
            item_id: self.template.message_id(),
            output_index,
            content_index: 0,
            part: OutputContent::text(String::new()),
        };
        self.push(out, kind);
    }

    fn close_message(&mut self, out: &mut Vec<StreamEvent>) {
        let Some(text) = self.open_text.take() else {
            return;
        };
        let (item_id, output_index) = (self.template.message_id(), self.output.len());
        let kind = EventKind::OutputTextDone {
            item_id: item_id.clone(),
            output_index,
            content_index: 0,
            text: text.clone(),
            logprobs: Vec::new(),
        };
        self.push(out, kind);
        let kind = EventKind::ContentPartDone {
            item_id,
            output_index,
            content_index: 0,
            part: OutputContent::text(text.clone()),
        };
        self.push(out, kind);
        let item = self.message(Status::Completed.name(), text);
        self.output.push(item.clone());
        self.push(out, EventKind::OutputItemDone { output_index, item });
    }

    fn call(&mut self, out: &mut Vec<StreamEvent>, item: OutputItem) {
        let output_index = self.output.len();
        // Announced in progress and without arguments, which then arrive in one delta.
        let mut added = item.clone();
        let OutputItem::FunctionCall {
            id,
            name,
            arguments,
            status,
            ..
        } = &mut added
        else {
            return;
        };
        let (id, name, arguments) = (id.clone(), name.clone(), std::mem::take(arguments));
        *status = Status::InProgress.name().to_owned();
        self.push(
            out,
            EventKind::OutputItemAdded {
                output_index,
                item: added,
            },
        );
        let kind = EventKind::FunctionCallArgumentsDelta {
            item_id: id.clone(),
            output_index,
            delta: arguments.clone(),
        };
        self.push(out, kind);
        let kind = EventKind::FunctionCallArgumentsDone {
            item_id: id,
            output_index,
            name,
            arguments,
        };
        self.push(out, kind);
        self.output.push(item.clone());
        self.push(out, EventKind::OutputItemDone { output_index, item });
    }
}
