//! The timed pieces of a transcript — segments and words — that the response shapes, the word
//! splitter and the transcript itself all speak of.

use serde::{Deserialize, Serialize};

/// A segment (a sentence) of a transcript (`super::Transcript`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// The segment's number, from 0.
    pub id: u32,
    /// Start time in seconds.
    pub start: f64,
    /// End time in seconds.
    pub end: f64,
    /// The text.
    pub text: String,
    /// docs/api.md §2.3: the speaker label, `S1`, `S2`, ... (see [`super::speaker_label`]); `None` counts as
    /// `S1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
}

impl Segment {
    /// A segment without a speaker label.
    pub fn new(id: u32, start: f64, end: f64, text: impl Into<String>) -> Self {
        Self {
            id,
            start,
            end,
            text: text.into(),
            speaker: None,
        }
    }

    /// The segment with the speaker label `label`.
    #[must_use]
    pub fn with_speaker(mut self, label: impl Into<String>) -> Self {
        self.speaker = Some(label.into());
        self
    }
}

/// A word (or, for CJK scripts, a character) with its times, as `verbose_json` carries it
/// (wire-formats §1.2: `word`, `start`, `end`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "TranscriptionWord")
)]
pub struct Word {
    /// The word, without punctuation.
    pub word: String,
    /// Start time in seconds.
    pub start: f64,
    /// End time in seconds.
    pub end: f64,
}

impl Word {
    /// A word with its times.
    pub fn new(word: impl Into<String>, start: f64, end: f64) -> Self {
        Self {
            word: word.into(),
            start,
            end,
        }
    }
}
