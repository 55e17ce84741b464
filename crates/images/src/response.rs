//! What the Images API answers: [`ImagesResponse`] (the images, inline or by link, and the
//! tokens used) and, streamed, one [`StreamEvent`] per partial or finished image.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The answer to a generation or an edit. Its images are borrowed from the text it was read
/// from where they can be (base64 has nothing to unescape), so a relay that reads an answer to
/// vet it does not copy its images.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ImagesResponse<'a> {
    /// When it was made, in Unix seconds.
    pub created: u64,
    /// The images, in order.
    #[serde(default, borrow)]
    pub data: Vec<Image<'a>>,
    /// The background drawn (`transparent`, `opaque`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
    /// The file format (`png`, `jpeg`, `webp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<String>,
    /// The quality drawn (`low`, `medium`, `high`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<String>,
    /// The size drawn, `WIDTHxHEIGHT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// The tokens used, by kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ImageUsage>,
}

/// One image.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Image<'a> {
    /// The image's bytes, base64.
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    pub b64_json: Option<Cow<'a, str>>,
    /// Where the image can be downloaded (the gateway's signed link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The prompt the model drew from, where it rewrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revised_prompt: Option<String>,
}

/// The tokens an image call used, as OpenAI reports them.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ImageUsage {
    /// Tokens read: text and images.
    #[serde(default)]
    pub input_tokens: u64,
    /// Of those, by kind.
    #[serde(default)]
    pub input_tokens_details: InputTokensDetails,
    /// Tokens written.
    #[serde(default)]
    pub output_tokens: u64,
    /// Of those, by kind (absent: all image tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_details: Option<OutputTokensDetails>,
    /// Everything.
    #[serde(default)]
    pub total_tokens: u64,
}

/// The input tokens by kind.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InputTokensDetails {
    /// Text tokens read.
    #[serde(default)]
    pub text_tokens: u64,
    /// Image tokens seen.
    #[serde(default)]
    pub image_tokens: u64,
    /// Of all input tokens, those read from the vendor's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

/// The output tokens by kind.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutputTokensDetails {
    /// Image tokens drawn.
    #[serde(default)]
    pub image_tokens: u64,
    /// Text tokens written.
    #[serde(default)]
    pub text_tokens: u64,
}

impl ImageUsage {
    /// Its output tokens split as (text, image): undetailed output is image tokens, as OpenAI
    /// documents `output_tokens` ("the image tokens in the output image").
    pub fn output_split(&self) -> (u64, u64) {
        match self.output_tokens_details {
            Some(d) => (d.text_tokens, d.image_tokens),
            None => (0, self.output_tokens),
        }
    }
}

/// What a stream's event is.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventKind {
    /// A generation's partial image.
    #[serde(rename = "image_generation.partial_image")]
    GenerationPartial,
    /// A generation's finished image.
    #[serde(rename = "image_generation.completed")]
    GenerationCompleted,
    /// An edit's partial image.
    #[serde(rename = "image_edit.partial_image")]
    EditPartial,
    /// An edit's finished image.
    #[serde(rename = "image_edit.completed")]
    EditCompleted,
}

impl EventKind {
    /// The event's name (its `type`, and the SSE `event:` line).
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::GenerationPartial => "image_generation.partial_image",
            EventKind::GenerationCompleted => "image_generation.completed",
            EventKind::EditPartial => "image_edit.partial_image",
            EventKind::EditCompleted => "image_edit.completed",
        }
    }

    /// Whether it carries a partial image.
    pub const fn is_partial(self) -> bool {
        matches!(self, EventKind::GenerationPartial | EventKind::EditPartial)
    }

    /// The kinds of a generation's stream (`edit`: an edit's).
    pub const fn of(edit: bool, partial: bool) -> EventKind {
        match (edit, partial) {
            (false, true) => EventKind::GenerationPartial,
            (false, false) => EventKind::GenerationCompleted,
            (true, true) => EventKind::EditPartial,
            (true, false) => EventKind::EditCompleted,
        }
    }
}

/// One event of a streamed generation or edit: a partial image, or a finished one (with the
/// call's usage on the last).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamEvent<'a> {
    /// What it is.
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// The image's bytes, base64 (borrowed from the event's text where it can be).
    #[serde(borrow)]
    pub b64_json: Cow<'a, str>,
    /// When it was made, in Unix seconds.
    #[serde(default)]
    pub created_at: u64,
    /// The size drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// The quality drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<String>,
    /// The background drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
    /// The file format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<String>,
    /// A partial image's place among its image's partial images, from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_image_index: Option<u32>,
    /// The call's usage (a finished image's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ImageUsage>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openais_answer_reads_and_writes_back() {
        let text = r#"{"created":1713833628,"data":[{"b64_json":"iVBO"}],"background":"opaque","output_format":"png","quality":"high","size":"1024x1024","usage":{"input_tokens":50,"input_tokens_details":{"text_tokens":40,"image_tokens":10},"output_tokens":4160,"total_tokens":4210}}"#;
        let answer: ImagesResponse = serde_json::from_str(text).unwrap();
        assert_eq!(answer.usage.unwrap().output_split(), (0, 4160));
        assert_eq!(serde_json::to_string(&answer).unwrap(), text);
        let event: StreamEvent = serde_json::from_str(
            r#"{"type":"image_generation.partial_image","b64_json":"iVBO","created_at":1,"partial_image_index":0}"#,
        )
        .unwrap();
        assert!(event.kind.is_partial());
    }
}
