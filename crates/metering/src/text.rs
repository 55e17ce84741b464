//! A text-generation answer's tokens (docs/api.md §8 rule 7): the input at the input price,
//! candidates plus thoughts at the output price — from the upstream's `usageMetadata` when it
//! sent one, else the local count of the prompt and of what was delivered, marked estimated.

use crate::tokens::estimate_vendor_tokens;
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
/// and the local estimate of `delivered` out ([`estimate_vendor_tokens`]).
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
                output: estimate_vendor_tokens(delivered),
            },
            Basis::local(
                "upstream reported no usage; counted locally",
                Measure::LocalCount,
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that ended without the vendor's usage is settled on the local estimate of what
    /// it delivered: text the model was asked to make cheap to count (runs of one character)
    /// is counted at one token per 8 bytes at least, as a prompt's text is held.
    #[test]
    fn delivered_text_without_usage_is_estimated_with_the_floor() {
        let (usage, basis) = settled_usage(None, 10, &" ".repeat(8_192));
        assert_eq!(
            usage,
            Usage::TextTokens {
                input: 10,
                output: 1_024
            }
        );
        assert_eq!(basis.measured, Measure::LocalCount);
        let (usage, _) = settled_usage(None, 10, "Hello, world.");
        assert_eq!(
            usage,
            Usage::TextTokens {
                input: 10,
                output: crate::tokens::count_text("Hello, world.")
            }
        );
    }
}
