//! Request body limits by endpoint (DESIGN §2 step 3). Each is a bound on what a valid request
//! can need, with room for JSON escaping; `[limits]` in the configuration overrides them.

use crate::config::ConfigError;
use std::collections::BTreeMap;

/// Which limit applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `/v1/embeddings`: 2048 inputs of up to 300,000 tokens in all.
    Embeddings,
    /// `/v1/audio/speech`: 10,000 characters, each up to 6 bytes escaped.
    Speech,
    /// `/v1/t2a_v2`.
    T2a,
    /// `/v1/audio/transcriptions`: the `file` part, 50 MB (docs/api.md §2.2); the other fields are
    /// bounded separately.
    Transcriptions,
    /// `/v1/speech_to_text`: the `file` part, 50 MB (docs/api.md §2.5).
    SpeechToText,
    /// `/api/v3/contents/generations/tasks`: inline images.
    ClipTasks,
    /// `/v1/video/generations`.
    VideoGenerations,
    /// `/v1/videos`: a prompt, a few fields, and an `input_reference` image (inline or a form
    /// file) within the clip format's inline bound.
    Videos,
    /// `/v1beta/models/…`: inline media parts.
    Native,
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/responses`.
    Responses,
    /// `/v1/realtime/client_secrets`: a session's configuration (instructions, tools).
    ClientSecrets,
    /// `/v1/images/generations`: a prompt of up to 32,000 characters and a few fields.
    ImageGenerations,
    /// `/v1/images/edits`: the whole form, its images and mask (OpenAI takes images of up to
    /// 50 MB).
    ImageEdits,
    /// `/v1/redemptions`: one code.
    Redemptions,
    /// `/webhooks/stripe`: one event (Stripe's are a few kilobytes).
    Webhooks,
}

impl Endpoint {
    const ALL: [(Endpoint, &'static str, usize); 16] = [
        (Endpoint::Embeddings, "embeddings", 8 << 20),
        (Endpoint::Speech, "speech", 256 << 10),
        (Endpoint::T2a, "t2a", 256 << 10),
        (Endpoint::Transcriptions, "transcriptions", 50_000_000),
        (Endpoint::SpeechToText, "speech_to_text", 50_000_000),
        (Endpoint::ClipTasks, "clip_tasks", 16 << 20),
        (Endpoint::VideoGenerations, "video_generations", 1 << 20),
        (Endpoint::Videos, "videos", 16 << 20),
        (Endpoint::Native, "native", 20 << 20),
        (Endpoint::Chat, "chat", 20 << 20),
        (Endpoint::Responses, "responses", 20 << 20),
        (Endpoint::ClientSecrets, "client_secrets", 1 << 20),
        (Endpoint::ImageGenerations, "image_generations", 1 << 20),
        (Endpoint::ImageEdits, "image_edits", 50_000_000),
        (Endpoint::Redemptions, "redemptions", 4 << 10),
        (Endpoint::Webhooks, "webhooks", 256 << 10),
    ];
}

/// The limits in force.
#[derive(Debug, Clone)]
pub struct Limits {
    bytes: BTreeMap<&'static str, usize>,
}

impl Limits {
    /// The built-in limits with `overrides` (by name) applied.
    pub fn new(overrides: &BTreeMap<String, usize>) -> Result<Limits, ConfigError> {
        let mut bytes: BTreeMap<&'static str, usize> = Endpoint::ALL
            .iter()
            .map(|(_, name, n)| (*name, *n))
            .collect();
        for (name, value) in overrides {
            let Some(slot) = bytes.get_mut(name.as_str()) else {
                return Err(ConfigError::Invalid(format!(
                    "[limits] has no endpoint {name:?}; known: {}",
                    Endpoint::ALL.map(|(_, n, _)| n).join(", ")
                )));
            };
            *slot = *value;
        }
        Ok(Limits { bytes })
    }

    /// The limit of `endpoint` in bytes.
    pub fn of(&self, endpoint: Endpoint) -> usize {
        Endpoint::ALL
            .iter()
            .find(|(e, _, _)| *e == endpoint)
            .and_then(|(_, name, _)| self.bytes.get(name).copied())
            .unwrap_or(1 << 20)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            bytes: Endpoint::ALL
                .iter()
                .map(|(_, name, n)| (*name, *n))
                .collect(),
        }
    }
}
