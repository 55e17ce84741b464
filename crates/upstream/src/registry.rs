//! The registry of channel formats: each format's adapter behind its modality's seam, by an
//! exhaustive match over [`Format`] (`crate::formats`, the formats' names and modalities) — so a
//! format without an adapter does not compile, and the gateway, which holds a channel's
//! [`Format`], asks here for the adapter at the call (`docs/architecture.md`, "Adding a
//! vendor"): a new vendor is an adapter file, a format and its arm here.
//!
//! ```
//! use tollgate_upstream::formats::Format;
//! use tollgate_upstream::registry;
//!
//! assert!(registry::synthesizer(Format::T2a).is_ok());
//! assert!(registry::recognizer(Format::T2a).is_err());
//! ```

use crate::UpstreamError;
use crate::adapters::ark::Ark;
use crate::adapters::gemini_live::GeminiLive;
use crate::adapters::genai::Genai;
use crate::adapters::generic_video::GenericVideo;
use crate::adapters::openai_embeddings::OpenAiEmbeddings;
use crate::adapters::openai_images::OpenAiImages;
use crate::adapters::openai_realtime::OpenAiRealtime;
use crate::adapters::openai_speech::OpenAiSpeech;
use crate::adapters::openai_transcription::OpenAiTranscription;
use crate::adapters::openai_videos::OpenAiVideos;
use crate::adapters::stt::Stt;
use crate::adapters::t2a::T2a;
use crate::formats::Format;
use crate::seams::embeddings::Embedder;
use crate::seams::genai::TextGenerator;
use crate::seams::images::ImageGenerator;
use crate::seams::recognition::Recognizer;
use crate::seams::sessions::SessionDialer;
use crate::seams::speech::Synthesizer;
use crate::seams::tasks::VideoTasks;

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
    /// A live-session adapter.
    Sessions(&'static dyn SessionDialer),
    /// An images adapter.
    Images(&'static dyn ImageGenerator),
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Adapter::Speech(_) => "Speech",
            Adapter::Recognition(_) => "Recognition",
            Adapter::Embeddings(_) => "Embeddings",
            Adapter::TextGeneration(_) => "TextGeneration",
            Adapter::VideoTasks(_) => "VideoTasks",
            Adapter::Sessions(_) => "Sessions",
            Adapter::Images(_) => "Images",
        })
    }
}

/// `format`'s adapter.
pub const fn adapter(format: Format) -> Adapter {
    match format {
        Format::OpenAiEmbeddings => Adapter::Embeddings(&OpenAiEmbeddings),
        Format::T2a => Adapter::Speech(&T2a),
        Format::OpenAiSpeech => Adapter::Speech(&OpenAiSpeech),
        Format::Stt => Adapter::Recognition(&Stt),
        Format::OpenAiTranscription => Adapter::Recognition(&OpenAiTranscription),
        Format::Ark => Adapter::VideoTasks(&Ark),
        Format::GenericVideo => Adapter::VideoTasks(&GenericVideo),
        Format::OpenAiVideos => Adapter::VideoTasks(&OpenAiVideos),
        Format::Genai => Adapter::TextGeneration(&Genai),
        Format::OpenAiRealtime => Adapter::Sessions(&OpenAiRealtime),
        Format::GeminiLive => Adapter::Sessions(&GeminiLive),
        Format::OpenAiImages => Adapter::Images(&OpenAiImages),
    }
}

/// A call of another modality than the format's: the catalog never makes one (a model's
/// channels are of its modality, checked when the configuration is read).
fn not_a(format: Format, modality: &str) -> UpstreamError {
    UpstreamError::Config(format!("{format} is not a {modality} format"))
}

/// `format`'s speech-synthesis adapter.
pub fn synthesizer(format: Format) -> Result<&'static dyn Synthesizer, UpstreamError> {
    match adapter(format) {
        Adapter::Speech(a) => Ok(a),
        _ => Err(not_a(format, "speech")),
    }
}

/// `format`'s recognition adapter.
pub fn recognizer(format: Format) -> Result<&'static dyn Recognizer, UpstreamError> {
    match adapter(format) {
        Adapter::Recognition(a) => Ok(a),
        _ => Err(not_a(format, "recognition")),
    }
}

/// `format`'s embeddings adapter.
pub fn embedder(format: Format) -> Result<&'static dyn Embedder, UpstreamError> {
    match adapter(format) {
        Adapter::Embeddings(a) => Ok(a),
        _ => Err(not_a(format, "embeddings")),
    }
}

/// `format`'s images adapter.
pub fn image_generator(format: Format) -> Result<&'static dyn ImageGenerator, UpstreamError> {
    match adapter(format) {
        Adapter::Images(a) => Ok(a),
        _ => Err(not_a(format, "images")),
    }
}

/// `format`'s text-generation adapter.
pub fn text_generator(format: Format) -> Result<&'static dyn TextGenerator, UpstreamError> {
    match adapter(format) {
        Adapter::TextGeneration(a) => Ok(a),
        _ => Err(not_a(format, "text generation")),
    }
}

/// `format`'s video-task adapter.
pub fn video_tasks(format: Format) -> Result<&'static dyn VideoTasks, UpstreamError> {
    match adapter(format) {
        Adapter::VideoTasks(a) => Ok(a),
        _ => Err(not_a(format, "video task")),
    }
}

/// `format`'s live-session adapter.
pub fn session_dialer(format: Format) -> Result<&'static dyn SessionDialer, UpstreamError> {
    match adapter(format) {
        Adapter::Sessions(a) => Ok(a),
        _ => Err(not_a(format, "live session")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::Modality;

    #[test]
    fn every_format_has_the_adapter_of_its_modality() {
        for f in Format::ALL {
            let adapters = [
                synthesizer(f).is_ok(),
                recognizer(f).is_ok(),
                embedder(f).is_ok(),
                text_generator(f).is_ok(),
                video_tasks(f).is_ok(),
                session_dialer(f).is_ok(),
                image_generator(f).is_ok(),
            ];
            let expected = match f.modality() {
                Modality::Speech => 0,
                Modality::Recognition => 1,
                Modality::Embeddings => 2,
                Modality::TextGeneration => 3,
                Modality::ClipTasks | Modality::GenericVideoTasks => 4,
                Modality::LiveSessions => 5,
                Modality::Images => 6,
            };
            for (i, has) in adapters.iter().enumerate() {
                assert_eq!(*has, i == expected, "{f}");
            }
        }
    }
}
