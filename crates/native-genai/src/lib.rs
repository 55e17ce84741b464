//! # tollgate-native-genai
//!
//! The native text-generation format, sans-IO (docs/api.md §2.9, §4.10–4.11 and rules 3–4, §8 rule 7;
//! wire-formats §6 and §8): `generateContent` requests and responses — `contents`, `parts`
//! including thought parts and thought signatures, `systemInstruction`,
//! `generationConfig.thinkingConfig`, `usageMetadata` with `thoughtsTokenCount` — with unknown
//! fields preserved, the model families' limits, and the chat-completions bridge.
//!
//! This crate describes the format and nothing else:
//!
//! - [`request`]: [`GenerateContentRequest`] with its [`Content`] turns of [`Part`]s ([`Blob`],
//!   [`FileData`], [`FunctionCall`], [`FunctionResponse`]), [`GenerationConfig`] and
//!   [`ThinkingConfig`]; and [`CountTokensRequest`]. camelCase on the wire, snake_case accepted;
//!   every struct keeps unknown fields in `extra`, so a request decodes and encodes unchanged.
//! - [`response`]: [`GenerateContentResponse`] (also each streamed chunk) with [`Candidate`]s
//!   and [`UsageMetadata`] ([`input_tokens`](UsageMetadata::input_tokens),
//!   [`output_tokens`](UsageMetadata::output_tokens): thinking is output);
//!   [`CountTokensResponse`]; [`Model`] and [`ListModelsResponse`].
//! - [`models`]: [`ModelLimits`] and [`Thinking`] per model family (`gen-2.0-*`,
//!   `gen-2.5-pro*`, `gen-2.5-flash*`, `gen-2.5-flash-lite*`, `gen-3*`), as a table read by
//!   [`limits`].
//! - [`validate`](mod@validate): [`validate()`] checks a request against the model's limits and
//!   returns [`Validated`] (the most output the request can produce, whether it thinks), or a
//!   [`FieldError`] naming the JSON path (`generationConfig.thinkingConfig.thinkingBudget`).
//! - [`stream`]: the non-SSE `streamGenerateContent` body, one streamed JSON array:
//!   [`ArrayDecoder`] reads it incrementally, [`ArrayEncoder`] writes it.
//! - [`embed`]: `embedContent` and `batchEmbedContents` — their requests and answers, and
//!   [`embed::texts`], the rules a request keeps to before it is embedded.
//! - [`error`]: [`FieldError`] and [`Rule`], and the vendor's error body [`GoogleError`].
//! - [`chat`]: the OpenAI chat-completions types the bridge needs ([`ChatCompletionRequest`],
//!   [`ChatCompletion`], [`ChatCompletionChunk`], [`ChatUsage`], ...).
//! - [`bridge`]: [`to_native`](bridge::to_native) (chat request → native request),
//!   [`to_chat`](bridge::to_chat) (native answer → chat completion) and
//!   [`ChunkMapper`](bridge::ChunkMapper) (native chunks → chat chunks).
//! - [`responses`]: the same for the OpenAI Responses API: [`ResponsesRequest`],
//!   [`to_native`](responses::to_native), [`to_response`](responses::to_response) and
//!   [`ResponseEvents`](responses::ResponseEvents) (native chunks → Responses stream events).
//!
//! Every wire type both serializes and deserializes, so a Rust client can reuse them.
//!
//! # Example
//!
//! ```
//! use tollgate_native_genai::bridge;
//! use tollgate_native_genai::chat::ChatCompletionRequest;
//! use tollgate_native_genai::models::limits;
//! use tollgate_native_genai::{validate, GenerateContentRequest, GenerateContentResponse, GoogleError, Rule};
//!
//! // A native request, as the vendor's SDK sends it; a field this crate does not model stays.
//! let body = r#"{
//!     "systemInstruction": {"parts": [{"text": "You are terse."}]},
//!     "contents": [{"role": "user", "parts": [{"text": "Colour of a tangerine?"}]}],
//!     "generationConfig": {"maxOutputTokens": 1024,
//!                          "thinkingConfig": {"thinkingBudget": 512, "includeThoughts": true}},
//!     "labels": {"team": "fruit"}
//! }"#;
//! let request: GenerateContentRequest = serde_json::from_str(body)?;
//! let flash = limits("gen-2.5-flash").ok_or("unknown model")?;
//! let ok = validate(&request, &flash)?;
//! assert_eq!((ok.max_output_tokens, ok.thinks, ok.include_thoughts), (1024, true, true));
//! assert_eq!(serde_json::to_value(&request)?, serde_json::from_str::<serde_json::Value>(body)?);
//!
//! // A rule broken is a 400 in Google's shape naming the field.
//! let mut bad = request.clone();
//! bad.contents[0].role = Some("assistant".into());
//! let err = validate(&bad, &flash).unwrap_err();
//! assert_eq!((err.field.as_str(), err.rule), ("contents[0].role", Rule::UnsupportedValue));
//! assert_eq!(GoogleError::from(&err).error.status, "INVALID_ARGUMENT");
//!
//! // The answer: thoughts are output (docs/api.md §8 rule 7).
//! let response: GenerateContentResponse = serde_json::from_str(r#"{
//!     "candidates": [{"content": {"role": "model", "parts": [
//!         {"text": "Citrus, so...", "thought": true}, {"text": "Orange."}]},
//!         "finishReason": "STOP", "index": 0}],
//!     "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 2,
//!                       "thoughtsTokenCount": 40, "totalTokenCount": 54}
//! }"#)?;
//! let usage = response.usage_metadata.as_ref().ok_or("no usage")?;
//! assert_eq!((usage.input_tokens(), usage.output_tokens()), (12, 42));
//! assert_eq!(response.text(), "Orange.");
//!
//! // The same model through chat completions.
//! let chat: ChatCompletionRequest = serde_json::from_str(r#"{
//!     "model": "gen-2.5-flash", "max_completion_tokens": 1024, "reasoning_effort": "low",
//!     "messages": [{"role": "system", "content": "You are terse."},
//!                  {"role": "user", "content": "Colour of a tangerine?"}]
//! }"#)?;
//! let native = bridge::to_native(&chat, &flash)?;
//! assert_eq!(native.system_instruction, request.system_instruction);
//! assert_eq!(native.thinking_config().and_then(|t| t.thinking_budget), Some(1024));
//! let answer = bridge::to_chat(&response, &chat.model, "chatcmpl-1", 1_767_240_000);
//! let chat_usage = answer.usage.ok_or("no usage")?;
//! assert_eq!((chat_usage.prompt_tokens, chat_usage.completion_tokens), (12, 42));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bridge;
pub mod chat;
pub mod embed;
pub mod error;
pub mod live;
pub mod media;
pub mod models;
pub mod predict;
pub mod request;
pub mod response;
pub mod responses;
pub mod stream;
pub mod validate;

pub use chat::{ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, ChatUsage};
pub use error::{FieldError, GoogleError, GoogleErrorDetail, Rule};
pub use models::{ModelLimits, Thinking, limits};
pub use request::{
    Blob, Content, CountTokensRequest, FileData, FunctionCall, FunctionResponse,
    GenerateContentRequest, GenerationConfig, Part, ThinkingConfig,
};
pub use response::{
    Candidate, CountTokensResponse, GenerateContentResponse, ListModelsResponse, Model,
    UsageMetadata,
};
pub use responses::{Response, ResponsesRequest};
pub use stream::{ArrayDecoder, ArrayEncoder, ArrayError};
pub use validate::{Validated, validate};
