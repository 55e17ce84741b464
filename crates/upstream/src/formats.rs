//! The channel formats by name: what a channel's `format` may say and what each serves — facts
//! only, with nothing to import, so that the configuration and the catalog hold a format without
//! standing on the adapters (`docs/architecture.md`, "Adding a vendor"). Each format's adapter is
//! [`crate::registry`]'s, by an exhaustive match: a format here without an adapter there does not
//! compile.
//!
//! ```
//! use tollgate_upstream::formats::{Format, Modality};
//!
//! let t2a = Format::named("t2a").unwrap();
//! assert_eq!(t2a.modality(), Modality::Speech);
//! assert!(Format::named("smoke-signals").is_none());
//! assert_eq!(Format::ALL.len(), Format::names().len());
//! ```

/// What a format serves. Speech, recognition, embeddings and text generation have neutral
/// seams, so formats of one modality can serve one model; each video-task format carries its
/// endpoint's own request and record, so it serves its own endpoint only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modality {
    /// Speech synthesis (`seams::speech::Synthesizer`).
    Speech,
    /// Speech recognition (`seams::recognition::Recognizer`).
    Recognition,
    /// Embeddings (`seams::embeddings::Embedder`).
    Embeddings,
    /// Text generation in the native format (`seams::genai::TextGenerator`).
    TextGeneration,
    /// Ark-style content-generation tasks (`seams::tasks::VideoTasks`).
    ClipTasks,
    /// Generic video tasks (`seams::tasks::VideoTasks`): the `generic-video` format, and
    /// `openai-videos` (a Sora-style vendor) which serves the generic format's requests.
    GenericVideoTasks,
    /// Live voice sessions over a WebSocket (`seams::sessions::SessionDialer`).
    LiveSessions,
    /// Images drawn and edited (`seams::images::ImageGenerator`).
    Images,
}

/// One channel format: a row of [`Format::ALL`], its adapter [`crate::registry`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// OpenAI `/v1/embeddings`.
    OpenAiEmbeddings,
    /// MiniMax-style `/v1/t2a_v2`.
    T2a,
    /// OpenAI `/v1/audio/speech`.
    OpenAiSpeech,
    /// `/v1/speech_to_text`.
    Stt,
    /// OpenAI `/v1/audio/transcriptions`.
    OpenAiTranscription,
    /// Ark content-generation tasks.
    Ark,
    /// Generic `/v1/video/generations` tasks.
    GenericVideo,
    /// OpenAI `/v1/videos`.
    OpenAiVideos,
    /// Gemini `generateContent`.
    Genai,
    /// OpenAI Realtime: `/v1/realtime` over a WebSocket.
    OpenAiRealtime,
    /// Gemini Live: `BidiGenerateContent` over a WebSocket.
    GeminiLive,
    /// OpenAI Images: `/v1/images/generations` and `/v1/images/edits`.
    OpenAiImages,
}

impl Format {
    /// Every format, in the order the docs list them.
    pub const ALL: [Format; 12] = [
        Format::OpenAiEmbeddings,
        Format::T2a,
        Format::OpenAiSpeech,
        Format::Stt,
        Format::OpenAiTranscription,
        Format::Ark,
        Format::GenericVideo,
        Format::OpenAiVideos,
        Format::Genai,
        Format::OpenAiRealtime,
        Format::GeminiLive,
        Format::OpenAiImages,
    ];

    /// Its name in a channel's `format`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::OpenAiEmbeddings => "openai-embeddings",
            Format::T2a => "t2a",
            Format::OpenAiSpeech => "openai-speech",
            Format::Stt => "stt",
            Format::OpenAiTranscription => "openai-transcription",
            Format::Ark => "ark",
            Format::GenericVideo => "generic-video",
            Format::OpenAiVideos => "openai-videos",
            Format::Genai => "genai",
            Format::OpenAiRealtime => "openai-realtime",
            Format::GeminiLive => "gemini-live",
            Format::OpenAiImages => "openai-images",
        }
    }

    /// What it serves.
    pub const fn modality(self) -> Modality {
        match self {
            Format::OpenAiEmbeddings => Modality::Embeddings,
            Format::T2a | Format::OpenAiSpeech => Modality::Speech,
            Format::Stt | Format::OpenAiTranscription => Modality::Recognition,
            Format::Ark => Modality::ClipTasks,
            Format::GenericVideo | Format::OpenAiVideos => Modality::GenericVideoTasks,
            Format::Genai => Modality::TextGeneration,
            Format::OpenAiRealtime | Format::GeminiLive => Modality::LiveSessions,
            Format::OpenAiImages => Modality::Images,
        }
    }

    /// Whether it is a video-task format (its channels are polled by the task workers).
    pub const fn is_video_tasks(self) -> bool {
        matches!(
            self.modality(),
            Modality::ClipTasks | Modality::GenericVideoTasks
        )
    }

    /// The format named `name`, if there is one.
    pub fn named(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Every format's name, for an error that lists them.
    pub fn names() -> Vec<&'static str> {
        Format::ALL.iter().map(|f| f.name()).collect()
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Read from its name; an unknown name's error lists the names there are.
impl<'de> serde::Deserialize<'de> for Format {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Format, D::Error> {
        let name = String::deserialize(d)?;
        Format::named(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown channel format {name:?}; one of {}",
                Format::names().join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_one_name_and_is_found_by_it() {
        let mut names = Format::names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Format::ALL.len(), "one name per format");
        for f in Format::ALL {
            assert_eq!(Format::named(f.name()), Some(f));
            assert_eq!(f.to_string(), f.name());
        }
    }
}
