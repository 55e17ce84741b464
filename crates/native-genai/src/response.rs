//! The answers: `generateContent` (one [`GenerateContentResponse`], or one per streamed chunk),
//! `countTokens` ([`CountTokensResponse`]) and `GET /v1beta/models` ([`ListModelsResponse`] of
//! [`Model`]s) (docs/api.md §2.9, wire-formats §6.2).
//!
//! **Usage.** [`UsageMetadata`] keeps the vendor's counts as sent. `candidatesTokenCount`
//! excludes thinking, which is counted in `thoughtsTokenCount` (wire-formats §6.2); docs/api.md §8 rule 7
//! bills thinking as output, so [`UsageMetadata::output_tokens`] is candidates + thoughts and
//! [`UsageMetadata::input_tokens`] is prompt + tool-use prompt. In a stream every chunk's usage is
//! the running total so far, never a delta: the last one counts.
//!
//! As in the request, fields this crate does not model are kept in `extra`, and absent fields stay
//! absent, so a chunk relays unchanged.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::live::ModalityCount;
use crate::models::ModelLimits;
use crate::request::{Content, FunctionCall};

/// The answer of `generateContent`, and each chunk of `streamGenerateContent`.
///
/// ```
/// use tollgate_native_genai::GenerateContentResponse;
///
/// let response: GenerateContentResponse = serde_json::from_str(r#"{
///     "candidates": [{"content": {"role": "model", "parts": [
///         {"text": "Considering colour cues...", "thought": true},
///         {"text": "Orange."}]}, "finishReason": "STOP", "index": 0}],
///     "usageMetadata": {"promptTokenCount": 270, "candidatesTokenCount": 9,
///         "thoughtsTokenCount": 41, "totalTokenCount": 320},
///     "modelVersion": "gen-2.5-flash"
/// }"#)?;
/// assert_eq!(response.text(), "Orange.");
/// assert_eq!(response.thought_text(), "Considering colour cues...");
/// assert_eq!(response.finish_reason(), Some("STOP"));
/// let usage = response.usage_metadata.as_ref().ok_or("no usage")?;
/// assert_eq!((usage.input_tokens(), usage.output_tokens()), (270, 50));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentResponse {
    /// The candidates; absent when the prompt was blocked (see
    /// [`prompt_feedback`](Self::prompt_feedback)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<Candidate>>,
    /// `{blockReason, safetyRatings}`, kept as sent.
    #[serde(
        default,
        alias = "prompt_feedback",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_feedback: Option<Value>,
    /// The token counts.
    #[serde(
        default,
        alias = "usage_metadata",
        skip_serializing_if = "Option::is_none"
    )]
    pub usage_metadata: Option<UsageMetadata>,
    /// The model that answered, e.g. `gen-2.5-flash`.
    #[serde(
        default,
        alias = "model_version",
        skip_serializing_if = "Option::is_none"
    )]
    pub model_version: Option<String>,
    /// The answer's id.
    #[serde(
        default,
        alias = "response_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub response_id: Option<String>,
    /// Fields this crate does not model (`createTime`, ...), kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl GenerateContentResponse {
    /// The first candidate, when there is one.
    pub fn first_candidate(&self) -> Option<&Candidate> {
        self.candidates.as_ref().and_then(|c| c.first())
    }

    /// The text of the first candidate, thoughts left out, parts joined without separator (what
    /// the vendor's SDK calls `.text`). Empty when there is none.
    pub fn text(&self) -> String {
        self.first_candidate()
            .map(Candidate::text)
            .unwrap_or_default()
    }

    /// The thought text of the first candidate (parts with `"thought": true`), joined.
    pub fn thought_text(&self) -> String {
        self.first_candidate()
            .map(Candidate::thought_text)
            .unwrap_or_default()
    }

    /// The `finishReason` of the first candidate, when it has one.
    pub fn finish_reason(&self) -> Option<&str> {
        self.first_candidate()
            .and_then(|c| c.finish_reason.as_deref())
    }

    /// The prompt's `blockReason`, when the prompt was blocked.
    pub fn block_reason(&self) -> Option<&str> {
        self.prompt_feedback
            .as_ref()
            .and_then(|f| f.get("blockReason"))
            .and_then(Value::as_str)
    }
}

/// One candidate answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// The answer's turn (role `model`); absent when nothing was generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// `STOP`, `MAX_TOKENS`, `SAFETY`, ... (wire-formats §6.2); in a stream only on the last
    /// chunk.
    #[serde(
        default,
        alias = "finish_reason",
        skip_serializing_if = "Option::is_none"
    )]
    pub finish_reason: Option<String>,
    /// The candidate's index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<i64>,
    /// `[{category, probability}]`, kept as sent.
    #[serde(
        default,
        alias = "safety_ratings",
        skip_serializing_if = "Option::is_none"
    )]
    pub safety_ratings: Option<Value>,
    /// Fields this crate does not model (`citationMetadata`, `finishMessage`, ...), kept so they
    /// pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Candidate {
    /// The non-thought text, joined.
    pub fn text(&self) -> String {
        self.joined(false)
    }

    /// The thought text, joined.
    pub fn thought_text(&self) -> String {
        self.joined(true)
    }

    /// The function calls, in order.
    pub fn function_calls(&self) -> impl Iterator<Item = &FunctionCall> {
        self.content
            .iter()
            .flat_map(|c| c.parts.iter())
            .filter_map(|p| p.function_call.as_ref())
    }

    fn joined(&self, thought: bool) -> String {
        self.content
            .iter()
            .flat_map(|c| c.parts.iter())
            .filter(|p| p.is_thought() == thought)
            .filter_map(|p| p.text.as_deref())
            .collect()
    }
}

/// `usageMetadata` (docs/api.md §2.9, wire-formats §6.2). Counts the vendor omits when zero are `None`.
///
/// ```
/// use tollgate_native_genai::UsageMetadata;
///
/// let usage: UsageMetadata = serde_json::from_str(
///     r#"{"promptTokenCount": 100, "toolUsePromptTokenCount": 20, "candidatesTokenCount": 30,
///         "thoughtsTokenCount": 50, "totalTokenCount": 200}"#,
/// )?;
/// assert_eq!(usage.input_tokens(), 120);
/// assert_eq!(usage.output_tokens(), 80); // thinking is output (docs/api.md §8 rule 7)
/// assert_eq!(usage.total_tokens(), 200);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageMetadata {
    /// The prompt's tokens (cached ones included).
    #[serde(
        default,
        alias = "prompt_token_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_token_count: Option<u64>,
    /// The candidates' tokens, thinking excluded.
    #[serde(
        default,
        alias = "candidates_token_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub candidates_token_count: Option<u64>,
    /// The thinking tokens.
    #[serde(
        default,
        alias = "thoughts_token_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub thoughts_token_count: Option<u64>,
    /// The part of the prompt served from a cache.
    #[serde(
        default,
        alias = "cached_content_token_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub cached_content_token_count: Option<u64>,
    /// The tokens of tool results (search, code execution) fed back as prompt.
    #[serde(
        default,
        alias = "tool_use_prompt_token_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_use_prompt_token_count: Option<u64>,
    /// The total the vendor reports.
    #[serde(
        default,
        alias = "total_token_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub total_token_count: Option<u64>,
    /// The prompt by modality (`TEXT`, `IMAGE`, `AUDIO`, `VIDEO`, `DOCUMENT`).
    #[serde(
        default,
        alias = "prompt_tokens_details",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub prompt_tokens_details: Vec<ModalityCount>,
    /// The cached part of the prompt by modality.
    #[serde(
        default,
        alias = "cache_tokens_details",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub cache_tokens_details: Vec<ModalityCount>,
    /// The candidates by modality: an image model's `IMAGE` tokens are here.
    #[serde(
        default,
        alias = "candidates_tokens_details",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub candidates_tokens_details: Vec<ModalityCount>,
    /// The tool results by modality.
    #[serde(
        default,
        alias = "tool_use_prompt_tokens_details",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tool_use_prompt_tokens_details: Vec<ModalityCount>,
    /// Fields this crate does not model (`trafficType`, ...), kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UsageMetadata {
    /// The tokens billed as input: `promptTokenCount + toolUsePromptTokenCount`.
    pub fn input_tokens(&self) -> u64 {
        self.prompt_token_count
            .unwrap_or(0)
            .saturating_add(self.tool_use_prompt_token_count.unwrap_or(0))
    }

    /// The tokens billed as output: `candidatesTokenCount + thoughtsTokenCount` (docs/api.md §8 rule 7:
    /// thinking counts as output).
    pub fn output_tokens(&self) -> u64 {
        self.candidates_token_count
            .unwrap_or(0)
            .saturating_add(self.thoughts_token_count.unwrap_or(0))
    }

    /// `totalTokenCount`, or input + output when the vendor sent none.
    pub fn total_tokens(&self) -> u64 {
        self.total_token_count
            .unwrap_or_else(|| self.input_tokens().saturating_add(self.output_tokens()))
    }
}

/// The answer of `countTokens`.
///
/// ```
/// use tollgate_native_genai::CountTokensResponse;
///
/// let answer: CountTokensResponse = serde_json::from_str(
///     r#"{"totalTokens": 31, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 31}]}"#,
/// )?;
/// assert_eq!(answer.total_tokens, 31);
/// assert!(answer.extra.contains_key("promptTokensDetails"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CountTokensResponse {
    /// The prompt's tokens.
    #[serde(default, alias = "total_tokens")]
    pub total_tokens: u64,
    /// The part served from a cache.
    #[serde(
        default,
        alias = "cached_content_token_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub cached_content_token_count: Option<u64>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The generation methods a native model offers through the gateway.
pub const GENERATION_METHODS: [&str; 3] =
    ["generateContent", "streamGenerateContent", "countTokens"];

/// A model object of `GET /v1beta/models` and `GET /v1beta/models/{id}`.
///
/// ```
/// use tollgate_native_genai::models::limits;
/// use tollgate_native_genai::Model;
///
/// let model = Model::new("gen-2.5-flash", limits("gen-2.5-flash").as_ref());
/// let json = serde_json::to_value(&model)?;
/// assert_eq!(json["name"], "models/gen-2.5-flash");
/// assert_eq!((json["outputTokenLimit"].as_u64(), json["thinking"].as_bool()), (Some(65536), Some(true)));
/// assert_eq!(model.id(), "gen-2.5-flash");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "NativeModel")
)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// `models/{id}`.
    #[serde(default)]
    pub name: String,
    /// A name for people.
    #[serde(
        default,
        alias = "display_name",
        skip_serializing_if = "Option::is_none"
    )]
    pub display_name: Option<String>,
    /// The most input tokens.
    #[serde(
        default,
        alias = "input_token_limit",
        skip_serializing_if = "Option::is_none"
    )]
    pub input_token_limit: Option<u64>,
    /// The most output tokens.
    #[serde(
        default,
        alias = "output_token_limit",
        skip_serializing_if = "Option::is_none"
    )]
    pub output_token_limit: Option<u64>,
    /// `generateContent`, `countTokens`, ...
    #[serde(default, alias = "supported_generation_methods")]
    pub supported_generation_methods: Vec<String>,
    /// Whether the model thinks.
    #[serde(default)]
    pub thinking: bool,
    /// Fields this crate does not model (`version`, `description`, `temperature`, ...), kept so
    /// they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Model {
    /// The model object of `id` (without `models/`) with the limits of its family, when known,
    /// and the [`GENERATION_METHODS`].
    pub fn new(id: &str, limits: Option<&ModelLimits>) -> Self {
        Self {
            name: format!("models/{id}"),
            display_name: Some(id.to_owned()),
            input_token_limit: limits.map(|l| u64::from(l.input_token_limit)),
            output_token_limit: limits.map(|l| u64::from(l.max_output_tokens)),
            supported_generation_methods: GENERATION_METHODS.map(str::to_owned).to_vec(),
            thinking: limits.is_some_and(ModelLimits::can_think),
            extra: Map::new(),
        }
    }

    /// The id: the name without `models/`.
    pub fn id(&self) -> &str {
        self.name.strip_prefix("models/").unwrap_or(&self.name)
    }
}

/// The answer of `GET /v1beta/models`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "NativeModelList")
)]
#[serde(rename_all = "camelCase")]
pub struct ListModelsResponse {
    /// The models.
    #[serde(default)]
    pub models: Vec<Model>,
    /// The token of the next page, when there is one.
    #[serde(
        default,
        alias = "next_page_token",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_page_token: Option<String>,
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
    fn response_round_trips() {
        let original = json!({
            "candidates": [{
                "content": {"role": "model", "parts": [
                    {"text": "Considering colour cues...", "thought": true},
                    {"text": "{\"colour\":\"orange\"}", "thoughtSignature": "c2ln"}
                ]},
                "finishReason": "STOP", "index": 0,
                "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"}],
                "citationMetadata": {"citationSources": [{"startIndex": 1, "uri": "https://e.example"}]}
            }],
            "usageMetadata": {"promptTokenCount": 270, "candidatesTokenCount": 9,
                "thoughtsTokenCount": 41, "cachedContentTokenCount": 0, "totalTokenCount": 320,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 12}, {"modality": "IMAGE", "tokenCount": 258}]},
            "modelVersion": "gen-2.5-flash",
            "responseId": "mH3xZ",
            "createTime": "2026-01-01T00:00:00Z"
        });
        let decoded: GenerateContentResponse = serde_json::from_value(original.clone()).unwrap();
        assert_eq!(serde_json::to_value(&decoded).unwrap(), original);
        assert_eq!(decoded.text(), "{\"colour\":\"orange\"}");
        let usage = decoded.usage_metadata.unwrap();
        assert_eq!((usage.input_tokens(), usage.output_tokens()), (270, 50));
    }

    #[test]
    fn blocked_prompt_has_no_candidates() {
        let blocked: GenerateContentResponse = serde_json::from_value(json!({
            "promptFeedback": {"blockReason": "SAFETY"},
            "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8}
        }))
        .unwrap();
        assert_eq!(blocked.block_reason(), Some("SAFETY"));
        assert_eq!(blocked.text(), "");
        assert_eq!(blocked.finish_reason(), None);
        let usage = blocked.usage_metadata.unwrap();
        assert_eq!((usage.input_tokens(), usage.output_tokens()), (8, 0));
    }

    #[test]
    fn usage_total_falls_back_to_the_sum() {
        let usage = UsageMetadata {
            prompt_token_count: Some(10),
            candidates_token_count: Some(5),
            thoughts_token_count: Some(7),
            ..UsageMetadata::default()
        };
        assert_eq!(usage.total_tokens(), 22);
    }

    #[test]
    fn function_calls_are_listed() {
        let response: GenerateContentResponse = serde_json::from_value(json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "a", "args": {}}},
                {"text": "and"},
                {"functionCall": {"name": "b"}}
            ]}}]
        }))
        .unwrap();
        let names: Vec<&str> = response
            .first_candidate()
            .unwrap()
            .function_calls()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn model_list_round_trips() {
        let list = json!({"models": [{"name": "models/gen-2.0-flash", "version": "001",
            "displayName": "Gen 2.0 Flash", "inputTokenLimit": 1048576, "outputTokenLimit": 8192,
            "supportedGenerationMethods": ["generateContent", "countTokens"], "thinking": false}],
            "nextPageToken": "abc"});
        let decoded: ListModelsResponse = serde_json::from_value(list.clone()).unwrap();
        assert_eq!(decoded.models[0].id(), "gen-2.0-flash");
        assert_eq!(serde_json::to_value(&decoded).unwrap(), list);
    }
}
