//! Native text generation (docs/api.md §2.9, wire-formats §6): the hold's local estimate, the usage that
//! settles, and the model objects of `GET /v1beta/models`.

use crate::catalog::ModelEntry;
use crate::charge::Basis;
use serde_json::{Value, json};
use tollgate_billing::Usage;
use tollgate_native_genai::models::ModelLimits;
use tollgate_native_genai::{Content, GenerateContentRequest, GenerateContentResponse, Part};

/// Tokens an image, audio or file part is assumed to cost in the hold (the vendor's figure for
/// an image; the upstream's own count settles).
pub const MEDIA_PART_TOKENS: u64 = 258;

/// Tokens the vendor adds around each content (role and turn markers), and once per request.
pub const TOKENS_PER_CONTENT: u64 = 4;
/// See [`TOKENS_PER_CONTENT`].
pub const TOKENS_PER_REQUEST: u64 = 8;
/// The local count is scaled by this (per cent) before it is held: `cl100k_base` counts fewer
/// tokens than the vendor's tokenizer for many scripts, and a hold below the settlement lets
/// concurrent requests overdraw (`docs/decisions.md`, "Native holds").
pub const PROMPT_MARGIN_PERCENT: u64 = 125;

/// The prompt's tokens as the hold estimates them: `cl100k_base` over every text (system
/// instruction, contents, function calls and responses as JSON, tool declarations and tool
/// configuration as JSON) plus [`MEDIA_PART_TOKENS`] a media part, the vendor's per-content and
/// per-request overhead, and a margin of [`PROMPT_MARGIN_PERCENT`]. Not the vendor's tokenizer:
/// the upstream's `promptTokenCount` settles.
pub fn estimate_prompt_tokens(request: &GenerateContentRequest) -> u64 {
    let contents: Vec<&Content> = request
        .system_instruction
        .iter()
        .chain(request.contents.iter())
        .collect();
    let mut tokens: u64 = contents.iter().map(|c| content_tokens(c)).sum();
    tokens = tokens.saturating_add(TOKENS_PER_CONTENT.saturating_mul(contents.len() as u64));
    let tools = request.tools.iter().flatten();
    for value in tools.chain(request.tool_config.iter()) {
        tokens = tokens.saturating_add(crate::tokens::count_text(
            &serde_json::to_string(value).unwrap_or_default(),
        ));
    }
    tokens
        .saturating_add(TOKENS_PER_REQUEST)
        .saturating_mul(PROMPT_MARGIN_PERCENT)
        .div_ceil(100)
}

fn content_tokens(content: &Content) -> u64 {
    content.parts.iter().map(part_tokens).sum()
}

fn part_tokens(part: &Part) -> u64 {
    let mut tokens = part.text.as_deref().map_or(0, crate::tokens::count_text);
    if part.inline_data.is_some() || part.file_data.is_some() {
        tokens += MEDIA_PART_TOKENS;
    }
    if let Some(call) = &part.function_call {
        tokens += crate::tokens::count_text(&serde_json::to_string(call).unwrap_or_default());
    }
    if let Some(response) = &part.function_response {
        tokens += crate::tokens::count_text(&serde_json::to_string(response).unwrap_or_default());
    }
    tokens
}

/// The text an answer delivered (thoughts included: they are output), for the local count of a
/// stream that ended without usage.
pub fn delivered_text(response: &GenerateContentResponse) -> String {
    let mut text = String::new();
    for candidate in response.candidates.iter().flatten() {
        for part in candidate.content.iter().flat_map(|c| c.parts.iter()) {
            if let Some(t) = &part.text {
                text.push_str(t);
            }
        }
    }
    text
}

/// docs/api.md §8 rule 7: the usage that settles — the input at the input price, candidates plus
/// thoughts at the output price — from the upstream's `usageMetadata` when it sent one, else the
/// local count of the prompt and of what was delivered, marked estimated.
pub fn settled_usage(
    reported: Option<&tollgate_native_genai::UsageMetadata>,
    local_input: u64,
    delivered: &str,
) -> (Usage, Basis) {
    match reported {
        Some(usage) => (
            Usage::TextTokens {
                input: usage.input_tokens(),
                output: usage.output_tokens(),
            },
            Basis::default(),
        ),
        None => (
            Usage::TextTokens {
                input: local_input,
                output: crate::tokens::count_text(delivered),
            },
            Basis {
                estimated: true,
                note: Some("upstream reported no usage; counted locally".into()),
            },
        ),
    }
}

/// A configured native model as the vendor's model object.
pub fn model_object(entry: &ModelEntry, limits: Option<&ModelLimits>) -> Value {
    let (input, output, thinking) = limits.map_or((0, 0, false), |l| {
        (l.input_token_limit, l.max_output_tokens, l.thinks())
    });
    json!({
        "name": format!("models/{}", entry.public),
        "version": entry.upstream_model,
        "displayName": entry.public,
        "description": format!("{} through tollgate", entry.public),
        "inputTokenLimit": input,
        "outputTokenLimit": output,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
        "thinking": thinking,
    })
}
