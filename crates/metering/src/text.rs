//! A text-generation answer's tokens (docs/api.md §8 rule 7): the input at the input price,
//! candidates plus thoughts at the output price — from the upstream's `usageMetadata` when it
//! sent one, else the local count of the prompt and of what was delivered, marked estimated.

use crate::tokens::count_text;
use crate::{Basis, Measure};
use tollgate_billing::Usage;
use tollgate_native_genai::{GenerateContentResponse, UsageMetadata};

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

/// The usage that settles: `reported` when the upstream sent it, else `local_input` tokens in
/// and the local count of `delivered` out.
pub fn settled_usage(
    reported: Option<&UsageMetadata>,
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
                output: count_text(delivered),
            },
            Basis::local(
                "upstream reported no usage; counted locally",
                Measure::LocalCount,
            ),
        ),
    }
}
