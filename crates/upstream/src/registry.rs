//! The registry of channel formats: one row per format a channel may speak — the name the
//! configuration uses, the modality it serves and its adapter behind that modality's seam. The
//! gateway's configuration, catalog and task workers ask it and nothing else
//! (`docs/architecture.md`, "Adding a vendor"): a new vendor is an adapter file and a row here.
//!
//! ```
//! use tollgate_upstream::registry::{self, Modality};
//!
//! let t2a = registry::format("t2a").unwrap();
//! assert_eq!(t2a.modality, Modality::Speech);
//! assert!(t2a.synthesizer().is_some() && t2a.recognizer().is_none());
//! assert!(registry::format("smoke-signals").is_none());
//! ```

use crate::adapters::ark::Ark;
use crate::adapters::genai::Genai;
use crate::adapters::generic_video::GenericVideo;
use crate::adapters::openai_embeddings::OpenAiEmbeddings;
use crate::adapters::openai_speech::OpenAiSpeech;
use crate::adapters::openai_transcription::OpenAiTranscription;
use crate::adapters::openai_videos::OpenAiVideos;
use crate::adapters::stt::Stt;
use crate::adapters::t2a::T2a;
use crate::seams::embeddings::Embedder;
use crate::seams::genai::TextGenerator;
use crate::seams::recognition::Recognizer;
use crate::seams::speech::Synthesizer;
use crate::seams::tasks::VideoTasks;

/// What a format serves. Speech, recognition, embeddings and text generation have neutral
/// seams, so formats of one modality can serve one model; each video-task format carries its
/// endpoint's own request and record, so it serves its own endpoint only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modality {
    /// Speech synthesis ([`Synthesizer`]).
    Speech,
    /// Speech recognition ([`Recognizer`]).
    Recognition,
    /// Embeddings ([`Embedder`]).
    Embeddings,
    /// Text generation in the native format ([`TextGenerator`]).
    TextGeneration,
    /// Ark-style content-generation tasks ([`VideoTasks`]).
    ClipTasks,
    /// Generic video tasks ([`VideoTasks`]): the `generic-video` format, and `openai-videos`
    /// (a Sora-style vendor) which serves the generic format's requests.
    GenericVideoTasks,
}

/// A format's adapter, behind its modality's seam.
#[derive(Clone, Copy)]
pub enum Adapter {
    /// A speech-synthesis adapter.
    Speech(&'static dyn Synthesizer),
    /// A speech-recognition adapter.
    Recognition(&'static dyn Recognizer),
    /// An embeddings adapter.
    Embeddings(&'static dyn Embedder),
    /// A text-generation adapter.
    TextGeneration(&'static dyn TextGenerator),
    /// A video-task adapter.
    VideoTasks(&'static dyn VideoTasks),
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Adapter::Speech(_) => "Speech",
            Adapter::Recognition(_) => "Recognition",
            Adapter::Embeddings(_) => "Embeddings",
            Adapter::TextGeneration(_) => "TextGeneration",
            Adapter::VideoTasks(_) => "VideoTasks",
        })
    }
}

/// One channel format.
pub struct Format {
    /// Its name in a channel's `format`.
    pub name: &'static str,
    /// What it serves.
    pub modality: Modality,
    /// Its adapter.
    pub adapter: Adapter,
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name == other.name
    }
}

impl Eq for Format {}

/// Every format, in the order the docs list them.
pub static FORMATS: &[Format] = &[
    Format {
        name: "openai-embeddings",
        modality: Modality::Embeddings,
        adapter: Adapter::Embeddings(&OpenAiEmbeddings),
    },
    Format {
        name: "t2a",
        modality: Modality::Speech,
        adapter: Adapter::Speech(&T2a),
    },
    Format {
        name: "openai-speech",
        modality: Modality::Speech,
        adapter: Adapter::Speech(&OpenAiSpeech),
    },
    Format {
        name: "stt",
        modality: Modality::Recognition,
        adapter: Adapter::Recognition(&Stt),
    },
    Format {
        name: "openai-transcription",
        modality: Modality::Recognition,
        adapter: Adapter::Recognition(&OpenAiTranscription),
    },
    Format {
        name: "ark",
        modality: Modality::ClipTasks,
        adapter: Adapter::VideoTasks(&Ark),
    },
    Format {
        name: "generic-video",
        modality: Modality::GenericVideoTasks,
        adapter: Adapter::VideoTasks(&GenericVideo),
    },
    Format {
        name: "openai-videos",
        modality: Modality::GenericVideoTasks,
        adapter: Adapter::VideoTasks(&OpenAiVideos),
    },
    Format {
        name: "genai",
        modality: Modality::TextGeneration,
        adapter: Adapter::TextGeneration(&Genai),
    },
];

/// The format named `name`, if there is one.
pub fn format(name: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.name == name)
}

/// Every format's name, for an error that lists them.
pub fn names() -> Vec<&'static str> {
    FORMATS.iter().map(|f| f.name).collect()
}

impl Format {
    /// Its speech-synthesis adapter, when it is one.
    pub fn synthesizer(&self) -> Option<&'static dyn Synthesizer> {
        match self.adapter {
            Adapter::Speech(a) => Some(a),
            _ => None,
        }
    }

    /// Its recognition adapter, when it is one.
    pub fn recognizer(&self) -> Option<&'static dyn Recognizer> {
        match self.adapter {
            Adapter::Recognition(a) => Some(a),
            _ => None,
        }
    }

    /// Its embeddings adapter, when it is one.
    pub fn embedder(&self) -> Option<&'static dyn Embedder> {
        match self.adapter {
            Adapter::Embeddings(a) => Some(a),
            _ => None,
        }
    }

    /// Its text-generation adapter, when it is one.
    pub fn text_generator(&self) -> Option<&'static dyn TextGenerator> {
        match self.adapter {
            Adapter::TextGeneration(a) => Some(a),
            _ => None,
        }
    }

    /// Its video-task adapter, when it is one.
    pub fn video_tasks(&self) -> Option<&'static dyn VideoTasks> {
        match self.adapter {
            Adapter::VideoTasks(a) => Some(a),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_one_row_and_the_adapter_of_its_modality() {
        let mut names = names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len(), "one row per name");
        for f in FORMATS {
            let adapters = [
                f.synthesizer().is_some(),
                f.recognizer().is_some(),
                f.embedder().is_some(),
                f.text_generator().is_some(),
                f.video_tasks().is_some(),
            ];
            let expected = match f.modality {
                Modality::Speech => 0,
                Modality::Recognition => 1,
                Modality::Embeddings => 2,
                Modality::TextGeneration => 3,
                Modality::ClipTasks | Modality::GenericVideoTasks => 4,
            };
            for (i, has) in adapters.iter().enumerate() {
                assert_eq!(*has, i == expected, "{}", f.name);
            }
        }
    }
}
