//! Recognition: the OpenAI-compatible form → the `speech_to_text` form the channel speaks, and
//! the channel's result → a [`Transcript`] the compat crate renders in any response format.
//!
//! * the model becomes the catalog's upstream id (`whisper-1` and friends resolve to `asr-1.0`
//!   through the aliases), the language hint moves to the `language` header;
//! * a non-streamed request always asks for `verbose_json`: the segments, times and speakers it
//!   carries are enough to render json, verbose_json, srt, vtt and text here — including `text`,
//!   which the vendor does not offer;
//! * `timestamp_granularities[]=word` becomes `timestamp_level=word`; when the upstream gives
//!   only sentence times, words are spread over each sentence ([`split_words`]) — per word for
//!   English, per character for Chinese (docs/api.md §2.2);
//! * the vendor's speaker ids (`"0"`, `"1"`) become `S1`, `S2` (docs/api.md §2.3);
//! * a streamed request asks for the vendor's json stream (its only streamable format).

use crate::catalog::ModelEntry;
use tollgate_compat_audio::TranscriptionParams;
use tollgate_compat_audio::transcription::{Segment, Transcript, Word, speaker_label, split_words};
use tollgate_vendor_audio::{SttFormat, SttParams, SttVerboseJson, TimestampLevel};

/// The upstream form for a compat request.
pub fn to_stt(params: &TranscriptionParams, entry: &ModelEntry) -> SttParams {
    let mut stt = SttParams::new(entry.upstream_model.clone());
    stt.response_format = if params.stream {
        SttFormat::Json
    } else {
        SttFormat::VerboseJson
    };
    stt.timestamp_level = if params.wants_words() {
        TimestampLevel::Word
    } else {
        TimestampLevel::Sentence
    };
    stt.stream = params.stream;
    stt.language = params.language.clone();
    stt
}

/// The client's own `speech_to_text` form as sent upstream: only the model id changes.
pub fn stt_upstream(params: &SttParams, entry: &ModelEntry) -> SttParams {
    let mut upstream = params.clone();
    upstream.model = entry.upstream_model.clone();
    upstream
}

/// The upstream's verbose result as a transcript.
pub fn transcript(result: SttVerboseJson, language: Option<String>, words: bool) -> Transcript {
    let mut transcript = Transcript::new(result.text, result.duration);
    transcript.language = language;
    for segment in result.segments {
        if words {
            match &segment.words {
                Some(upstream_words) if !upstream_words.is_empty() => transcript.words.extend(
                    upstream_words
                        .iter()
                        .map(|w| Word::new(w.text.clone(), w.start, w.end)),
                ),
                _ => {
                    transcript
                        .words
                        .extend(split_words(&segment.text, segment.start, segment.end))
                }
            }
        }
        transcript.segments.push(
            Segment::new(segment.id, segment.start, segment.end, segment.text)
                .with_speaker(speaker_label(&segment.speaker)),
        );
    }
    transcript
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_vendor_audio::SttSegment;

    #[test]
    fn speakers_words_and_sentences() {
        let result = SttVerboseJson {
            text: "Hi all. 你好。".into(),
            duration: 3.0,
            n_speakers: 2,
            segments: vec![
                SttSegment {
                    id: 0,
                    start: 0.0,
                    end: 1.0,
                    text: "Hi all.".into(),
                    speaker: "0".into(),
                    words: None,
                },
                SttSegment {
                    id: 1,
                    start: 1.0,
                    end: 3.0,
                    text: "你好。".into(),
                    speaker: "1".into(),
                    words: None,
                },
            ],
            trace_id: None,
        };
        let t = transcript(result, Some("en".into()), true);
        let speakers: Vec<_> = t
            .segments
            .iter()
            .map(|s| s.speaker.clone().unwrap())
            .collect();
        assert_eq!(speakers, ["S1", "S2"]);
        let words: Vec<_> = t.words.iter().map(|w| w.word.as_str()).collect();
        assert_eq!(words, ["Hi", "all", "你", "好"]);
        assert_eq!(t.words.last().unwrap().end, 3.0);
    }
}

/// The client's side of a relayed recognition stream.
pub mod encoders {
    use crate::errors::ApiError;
    use crate::recognition::Encoder;
    use bytes::Bytes;
    use tollgate_compat_audio::TranscriptionStreamEvent;
    use tollgate_compat_audio::transcription::StreamUsage;
    use tollgate_sse::Event;
    use tollgate_vendor_audio::SttStreamFrame;

    /// Audio tokens reported per second in `usage.input_tokens`: Whisper's encoder sees 1,500
    /// positions per 30 s window. Informational only — recognition is billed by seconds.
    pub const AUDIO_TOKENS_PER_SECOND: u64 = 50;

    /// `/v1/audio/transcriptions` with `stream=true`: `transcript.text.delta` per delta, then
    /// `transcript.text.done` with the whole text and `usage {type: duration, seconds,
    /// input_tokens}` (docs/api.md §6).
    #[derive(Debug, Default)]
    pub struct CompatEvents;

    impl Encoder for CompatEvents {
        fn frame(&mut self, frame: &SttStreamFrame) -> Option<Bytes> {
            (!frame.delta.is_empty())
                .then(|| event(&TranscriptionStreamEvent::delta(frame.delta.clone())))
        }
        fn done(&mut self, text: &str, seconds: u64) -> Option<Bytes> {
            let usage = StreamUsage::new(seconds, seconds * AUDIO_TOKENS_PER_SECOND);
            Some(event(&TranscriptionStreamEvent::done(
                text.to_owned(),
                usage,
            )))
        }
        fn failed(&mut self, error: &ApiError) -> Option<Bytes> {
            let body = serde_json::json!({
                "type": "error",
                "error": {"message": error.message, "type": "server_error", "code": "upstream_error"},
            });
            Some(Event::data(body.to_string()).encode())
        }
    }

    /// `/v1/speech_to_text` with `stream=true`: the vendor's frames as they came, and on a cut an
    /// OpenAI-style error object (the vendor's error shape).
    #[derive(Debug, Default)]
    pub struct VendorFrames;

    impl Encoder for VendorFrames {
        fn frame(&mut self, frame: &SttStreamFrame) -> Option<Bytes> {
            serde_json::to_string(frame)
                .ok()
                .map(|json| Event::data(json).encode())
        }
        fn done(&mut self, _text: &str, _seconds: u64) -> Option<Bytes> {
            None
        }
        fn failed(&mut self, error: &ApiError) -> Option<Bytes> {
            let body =
                serde_json::json!({"error": {"message": error.message, "type": "server_error"}});
            Some(Event::data(body.to_string()).encode())
        }
    }

    fn event(e: &TranscriptionStreamEvent) -> Bytes {
        Event::data(serde_json::to_string(e).unwrap_or_default()).encode()
    }
}
