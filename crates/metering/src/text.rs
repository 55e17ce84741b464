//! A text-generation answer's tokens (docs/api.md §8 rule 7): the input at the input price,
//! candidates plus thoughts at the output price — from the upstream's `usageMetadata` when it
//! sent one, else the local count of the prompt and of what was delivered, marked estimated.
//!
//! A model priced by token class — an image model, whose images out cost many times its text
//! ([`Generation`], docs/decisions.md "Images") — is charged the vendor's figure by modality
//! (`candidatesTokensDetails`), each class cut to the bound of what the gateway measured: the
//! prompt by modality, the images it relayed, decoded, at the model's published tokens for
//! their size, and the output cap for the rest.

use crate::prompt::PromptEstimate;
use crate::session::{Claim, ResponseBound, by_modality, dearest};
use crate::tokens::estimate_vendor_tokens;
use crate::{Basis, Capped, Measure};
use tollgate_billing::{Tariff, TokenClass, TokenClasses, Usage};
use tollgate_native_genai::models::ImageOutput;
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

/// Gemini's counts of a `generateContent` answer, as a [`Claim`], as its live sessions' are
/// read (`From<&LiveUsage>`): tool results are prompt, thinking is text the model wrote.
impl From<&UsageMetadata> for Claim {
    fn from(usage: &UsageMetadata) -> Claim {
        // Counts the vendor did not itemise at all are text: a text answer's usage often has no
        // details, and an image is believed only where the vendor says it drew one.
        let itemised = |details: &[tollgate_native_genai::live::ModalityCount],
                        total: Option<u64>| {
            if details.is_empty() {
                [total.unwrap_or(0), 0, 0]
            } else {
                by_modality(details)
            }
        };
        let (prompt, tools) = (
            itemised(&usage.prompt_tokens_details, usage.prompt_token_count),
            itemised(
                &usage.tool_use_prompt_tokens_details,
                usage.tool_use_prompt_token_count,
            ),
        );
        let response = itemised(
            &usage.candidates_tokens_details,
            usage.candidates_token_count,
        );
        let thoughts = usage.thoughts_token_count.unwrap_or(0);
        Claim {
            input: usage.input_tokens(),
            input_by: [0, 1, 2].map(|i| prompt[i].saturating_add(tools[i])),
            cached_by: by_modality(&usage.cache_tokens_details),
            output: usage.output_tokens(),
            output_by: [
                response[0].saturating_add(thoughts),
                response[1],
                response[2],
            ],
        }
    }
}

/// What a native answer delivered to the client, as measured: its text, and the decoded
/// sides of each image relayed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivered {
    /// The text (thoughts included).
    pub text: String,
    /// Width and height of each image, read from its header.
    pub images: Vec<(u32, u32)>,
}

/// A native request to a model priced by token class, as measured before it was sent: the
/// prompt by modality, the output cap, and what the model draws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    /// The prompt's estimate.
    pub prompt: PromptEstimate,
    /// The model's input limit: what a part the gateway cannot measure may come to.
    pub input_limit: u64,
    /// The most the answer may write, thinking and images included (the vendor counts images
    /// within `maxOutputTokens`).
    pub max_output: u64,
    /// What the model draws and the size asked (a position in its sizes); `None` when the
    /// answer may hold no image.
    pub images: Option<(ImageOutput, usize)>,
}

impl Generation {
    /// The most the prompt may count, by input modality.
    fn input(&self) -> ResponseBound {
        let whole = self.prompt.unmeasured.is_some().then_some(self.input_limit);
        let by = self.prompt.media_by;
        ResponseBound {
            text_in: whole.unwrap_or(self.prompt.text),
            audio_in: whole.unwrap_or(by.audio),
            image_in: whole.unwrap_or(by.image),
            ..ResponseBound::default()
        }
    }

    /// The tokens the images `drawn` may count out: each at its size's, never above the size
    /// asked, all within the output cap.
    pub fn drawn_tokens(&self, drawn: &[(u32, u32)]) -> u64 {
        let Some((images, asked)) = self.images else {
            return 0;
        };
        drawn
            .iter()
            .fold(0u64, |sum, sides| {
                sum.saturating_add(images.tokens_of(asked, *sides))
            })
            .min(self.max_output)
    }

    /// The hold at `tariff`: the prompt by modality — the model's whole input limit at the
    /// dearest input price when a part cannot be measured — and the output cap at the dearest
    /// output price the answer may hold.
    pub fn hold(&self, tariff: &Tariff) -> Usage {
        let mut usage = match self.prompt.unmeasured {
            Some(_) => {
                let mut usage = TokenClasses::default();
                let classes = [
                    TokenClass::TextIn,
                    TokenClass::AudioIn,
                    TokenClass::ImageIn,
                    TokenClass::CachedTextIn,
                    TokenClass::CachedAudioIn,
                    TokenClass::CachedImageIn,
                ];
                usage.add(dearest(tariff, &classes), self.input_limit);
                usage
            }
            None => self.input().dearest(tariff),
        };
        let outputs: &[TokenClass] = match self.images {
            Some(_) => &[TokenClass::TextOut, TokenClass::ImageOut],
            None => &[TokenClass::TextOut],
        };
        usage.add(dearest(tariff, outputs), self.max_output);
        Usage::TokenClasses(usage)
    }

    /// The bound once relayed: the prompt by modality, each image relayed at its tokens, and
    /// the rest of the output cap as text (thinking included).
    pub fn bound(&self, delivered: &Delivered) -> ResponseBound {
        let image_out = self.drawn_tokens(&delivered.images);
        ResponseBound {
            image_out,
            text_out: self.max_output.saturating_sub(image_out),
            ..self.input()
        }
    }

    /// What the answer is charged at `tariff`: the vendor's figure by class (`reported`; the
    /// local count where it sent none, marked estimated), cut class by class to the bound of
    /// what was `delivered`.
    pub fn settle(
        &self,
        tariff: &Tariff,
        reported: Option<&UsageMetadata>,
        delivered: &Delivered,
    ) -> Capped {
        let bound = self.bound(delivered);
        let note = (!delivered.images.is_empty()).then(|| {
            let sides: Vec<String> = delivered
                .images
                .iter()
                .map(|(w, h)| format!("{w}x{h}"))
                .collect();
            format!("images decoded: {}", sides.join(", "))
        });
        let (claimed, basis) = match reported {
            Some(usage) => (
                Claim::from(usage).classes(tariff),
                Basis {
                    estimated: false,
                    note,
                    measured: Measure::Vendor,
                },
            ),
            None => {
                let mut local = TokenClasses::default();
                let by = self.prompt.media_by;
                local.add(TokenClass::TextIn, self.prompt.text);
                local.add(TokenClass::AudioIn, by.audio);
                local.add(TokenClass::ImageIn, by.image);
                local.add(TokenClass::TextOut, estimate_vendor_tokens(&delivered.text));
                local.add(TokenClass::ImageOut, self.drawn_tokens(&delivered.images));
                let why = match note {
                    Some(note) => format!("upstream reported no usage; counted locally; {note}"),
                    None => "upstream reported no usage; counted locally".to_owned(),
                };
                (local, Basis::local(why, Measure::LocalCount))
            }
        };
        let (capped, anomaly) = bound.cap(&claimed);
        Capped {
            usage: Usage::TokenClasses(capped),
            basis,
            bound: Usage::TokenClasses(bound.dearest(tariff)),
            anomaly,
        }
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

    fn image_model() -> (Generation, Tariff) {
        let images = tollgate_native_genai::models::limits("gen-3-pro-image-preview")
            .and_then(|l| l.images)
            .unwrap();
        let generation = Generation {
            prompt: PromptEstimate {
                text: 20,
                ..PromptEstimate::default()
            },
            input_limit: 65_536,
            max_output: 32_768,
            images: Some((images, 0)),
        };
        let tariff = serde_json::from_str(
            r#"{"meter":"token_classes","per_million":{"text_in":"2","image_in":"2","text_out":"12","image_out":"120"}}"#,
        )
        .unwrap();
        (generation, tariff)
    }

    /// The vendor's image tokens are believed up to the images relayed; a 4K image drawn for a
    /// 1K request counts 1K's; a claim of 100× is cut, the honest text kept.
    #[test]
    fn image_tokens_are_bounded_by_the_images_relayed() {
        let (generation, tariff) = image_model();
        let usage: UsageMetadata = serde_json::from_str(
            r#"{"promptTokenCount":12,"candidatesTokenCount":112010,"thoughtsTokenCount":30,
                "promptTokensDetails":[{"modality":"TEXT","tokenCount":12}],
                "candidatesTokensDetails":[{"modality":"TEXT","tokenCount":10},{"modality":"IMAGE","tokenCount":112000}]}"#,
        )
        .unwrap();
        let delivered = Delivered {
            text: "A cat.".into(),
            images: vec![(4096, 4096)],
        };
        let Capped {
            usage: charged,
            basis,
            anomaly,
            ..
        } = generation.settle(&tariff, Some(&usage), &delivered);
        let Usage::TokenClasses(classes) = charged else {
            panic!("{charged:?}")
        };
        assert_eq!(
            (classes.text_in, classes.text_out, classes.image_out),
            (12, 40, 1_120)
        );
        assert!(anomaly.unwrap().contains("image_out 112000"));
        assert_eq!(basis.note.as_deref(), Some("images decoded: 4096x4096"));
        // The hold covers the output cap at the image price.
        let Usage::TokenClasses(hold) = generation.hold(&tariff) else {
            panic!()
        };
        assert_eq!(
            (hold.text_in, hold.image_out, hold.text_out),
            (20, 32_768, 0)
        );
        // No usage: the local count, images at their tokens.
        let Capped {
            usage: local,
            basis,
            ..
        } = generation.settle(&tariff, None, &delivered);
        let Usage::TokenClasses(local) = local else {
            panic!()
        };
        assert_eq!((local.text_in, local.image_out), (20, 1_120));
        assert!(basis.estimated);
    }
}
