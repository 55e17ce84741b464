//! Recognition: each inbound form ↔ the recognition seam ([`Recognition`], [`Transcription`],
//! [`TextDelta`](tollgate_upstream::seams::recognition::TextDelta)), whatever format the channel speaks.
//!
//! From `/v1/audio/transcriptions`:
//! * the model becomes the catalog's upstream id (`whisper-1` and friends resolve through the
//!   aliases); language, prompt and temperature go to vendors that take them;
//! * `timestamp_granularities[]=word` asks for word times; when the upstream gives only sentence
//!   times, words are spread over each sentence ([`split_words`]) — per word for English, per
//!   character for Chinese (docs/api.md §2.2);
//! * the vendor's speaker ids (`"0"`, `"1"`) become `S1`, `S2` (docs/api.md §2.3);
//! * the result is rendered here in every response format, `text` included.
//!
//! From `/v1/speech_to_text`: the client's own form rides along for an `stt` channel to send as
//! it is (and its answer is relayed as it came); for any other channel its fields fill the seam's
//! and the answer is built here in the format it asked ([`stt_body`], [`encoders::VendorFrames`]).

use http::{HeaderValue, Response, StatusCode, header};
use tollgate_compat_audio::TranscriptionParams;
use tollgate_compat_audio::transcription::{Segment, Transcript, Word, speaker_label, split_words};
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_metering::{Basis, Measure};
use tollgate_settings::catalog::ModelEntry;
use tollgate_upstream::seams::recognition::SttBody;
use tollgate_upstream::seams::recognition::{Recognition, Transcription};
use tollgate_vendor_audio::{
    SttFormat, SttJson, SttParams, SttSegment, SttVerboseJson, SttWord, TimestampLevel,
};

/// `/v1/audio/transcriptions`' side of the recognition pipeline.
impl crate::recognition::Format for TranscriptionParams {
    type Events = encoders::CompatEvents;

    fn model(&self) -> &str {
        &self.model
    }

    fn streams(&self) -> bool {
        self.stream
    }

    fn events(&self) -> Self::Events {
        encoders::CompatEvents
    }

    fn upstream(&self, entry: &ModelEntry) -> Recognition {
        recognition(self, entry)
    }

    /// The transcript in the response format asked for (`text` included).
    fn answer(&self, result: Transcription, covered: f64, seconds: u64) -> Response<ResponseBody> {
        let transcript = transcript(result, covered, self.language.clone(), self.wants_words());
        let rendered = transcript.render(self.response_format, seconds);
        let mut response = Response::new(body::full(rendered.body));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(rendered.content_type),
        );
        response
    }
}

/// `/v1/speech_to_text`'s side of the recognition pipeline.
impl crate::recognition::Format for SttParams {
    type Events = encoders::VendorFrames;

    fn model(&self) -> &str {
        &self.model
    }

    fn streams(&self) -> bool {
        self.stream
    }

    fn events(&self) -> Self::Events {
        encoders::VendorFrames::default()
    }

    fn upstream(&self, entry: &ModelEntry) -> Recognition {
        from_stt(self, entry)
    }

    /// The result's duration settles; srt and vtt carry none, so the probe does (no format
    /// dodges the charge).
    fn seconds(&self, result: &Transcription, probed_seconds: u64) -> (u64, Basis) {
        let (seconds, basis) = crate::recognition::whole_seconds(result, probed_seconds);
        if !matches!(result.stt, Some(SttBody::Subtitles(_))) {
            return (seconds, basis);
        }
        let basis = Basis {
            estimated: false,
            note: Some("subtitles carry no duration; charged the probed duration".into()),
            measured: Measure::Probe,
        };
        (seconds, basis)
    }

    /// The body in the format asked for: an `stt` channel's own, else one built like it.
    fn answer(&self, result: Transcription, covered: f64, _seconds: u64) -> Response<ResponseBody> {
        match stt_body(result, covered, self) {
            SttBody::Json(j) => body::json_response(StatusCode::OK, &j),
            SttBody::Verbose(v) => body::json_response(StatusCode::OK, &v),
            SttBody::Subtitles(text) => {
                let mut response = Response::new(body::full(text));
                let content_type = if self.response_format == SttFormat::Vtt {
                    "text/vtt; charset=utf-8"
                } else {
                    "text/plain; charset=utf-8"
                };
                response
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
                response
            }
        }
    }
}

/// The seam's recognition for a compat form.
pub fn recognition(params: &TranscriptionParams, entry: &ModelEntry) -> Recognition {
    Recognition {
        model: entry.upstream_model.clone(),
        language: params.language.clone(),
        prompt: params.prompt.clone(),
        temperature: params.temperature,
        words: params.wants_words(),
        stream: params.stream,
        stt: None,
    }
}

/// The seam's recognition for a `speech_to_text` form.
pub fn from_stt(params: &SttParams, entry: &ModelEntry) -> Recognition {
    Recognition {
        model: entry.upstream_model.clone(),
        language: params.language.clone(),
        prompt: None,
        temperature: None,
        words: params.timestamp_level == TimestampLevel::Word,
        stream: params.stream,
        stt: Some(params.clone()),
    }
}

/// The seam's result as a transcript, `duration` the seconds it covers.
pub fn transcript(
    result: Transcription,
    duration: f64,
    language: Option<String>,
    words: bool,
) -> Transcript {
    let mut transcript = Transcript::new(result.text, duration);
    transcript.language = language.or(result.language);
    if words {
        if result.words.is_empty() {
            for segment in &result.segments {
                transcript
                    .words
                    .extend(split_words(&segment.text, segment.start, segment.end));
            }
        } else {
            transcript.words = result
                .words
                .into_iter()
                .map(|w| Word::new(w.word, w.start, w.end))
                .collect();
        }
    }
    for segment in result.segments {
        let mut s = Segment::new(segment.id, segment.start, segment.end, segment.text);
        if let Some(speaker) = &segment.speaker {
            s = s.with_speaker(speaker_label(speaker));
        }
        transcript.segments.push(s);
    }
    transcript
}

/// The `speech_to_text` answer for a whole result, in the format `params` asked: an `stt`
/// channel's own body, else one built like it (`duration` the seconds charged, since a channel
/// that reports none is charged the probed duration).
pub fn stt_body(result: Transcription, duration: f64, params: &SttParams) -> SttBody {
    if let Some(own) = result.stt {
        return own;
    }
    let words = params.timestamp_level == TimestampLevel::Word;
    match params.response_format {
        SttFormat::Json => SttBody::Json(SttJson {
            text: result.text,
            duration,
            trace_id: None,
        }),
        SttFormat::VerboseJson => {
            let mut segments: Vec<SttSegment> = result
                .segments
                .iter()
                .map(|s| SttSegment {
                    id: s.id,
                    start: s.start,
                    end: s.end,
                    text: s.text.clone(),
                    speaker: s.speaker.clone().unwrap_or_else(|| "0".to_owned()),
                    words: None,
                })
                .collect();
            if segments.is_empty() && !result.text.trim().is_empty() {
                segments.push(SttSegment {
                    id: 0,
                    start: 0.0,
                    end: duration,
                    text: result.text.clone(),
                    speaker: "0".to_owned(),
                    words: None,
                });
            }
            if words {
                for segment in &mut segments {
                    let inside: Vec<SttWord> = result
                        .words
                        .iter()
                        .filter(|w| {
                            w.start >= segment.start
                                && w.start < segment.end.max(segment.start + f64::EPSILON)
                        })
                        .map(|w| SttWord {
                            text: w.word.clone(),
                            start: w.start,
                            end: w.end,
                        })
                        .collect();
                    segment.words = Some(if inside.is_empty() {
                        split_words(&segment.text, segment.start, segment.end)
                            .into_iter()
                            .map(|w| SttWord {
                                text: w.word,
                                start: w.start,
                                end: w.end,
                            })
                            .collect()
                    } else {
                        inside
                    });
                }
            }
            let mut speakers: Vec<&str> = segments.iter().map(|s| s.speaker.as_str()).collect();
            speakers.sort_unstable();
            speakers.dedup();
            SttBody::Verbose(SttVerboseJson {
                text: result.text,
                duration,
                n_speakers: u32::try_from(speakers.len()).unwrap_or(u32::MAX),
                segments,
                trace_id: None,
            })
        }
        SttFormat::Srt | SttFormat::Vtt => {
            let srt = params.response_format == SttFormat::Srt;
            let transcript = transcript(result, duration, None, false);
            SttBody::Subtitles(if srt {
                transcript.to_srt()
            } else {
                transcript.to_vtt()
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_upstream::seams::recognition::Segment as Spoken;

    fn result() -> Transcription {
        let segment = |id, start, end, text: &str, speaker: &str| Spoken {
            id,
            start,
            end,
            text: text.into(),
            speaker: Some(speaker.into()),
        };
        Transcription {
            text: "Hi all. 你好。".into(),
            duration: Some(3.0),
            segments: vec![
                segment(0, 0.0, 1.0, "Hi all.", "0"),
                segment(1, 1.0, 3.0, "你好。", "1"),
            ],
            ..Transcription::default()
        }
    }

    #[test]
    fn speakers_words_and_sentences() {
        let t = transcript(result(), 3.0, Some("en".into()), true);
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

    #[test]
    fn speech_to_text_answers_are_built_for_other_channels() {
        let mut params = SttParams::new("asr-1.0");
        params.response_format = SttFormat::VerboseJson;
        params.timestamp_level = TimestampLevel::Word;
        let SttBody::Verbose(verbose) = stt_body(result(), 3.0, &params) else {
            panic!("verbose_json was asked");
        };
        assert_eq!(verbose.n_speakers, 2);
        assert_eq!(verbose.segments[1].speaker, "1");
        let words = verbose.segments[0].words.as_ref().unwrap();
        assert_eq!(words[0].text, "Hi");
        params.response_format = SttFormat::Json;
        let SttBody::Json(json) = stt_body(result(), 4.0, &params) else {
            panic!("json was asked");
        };
        assert_eq!(json.duration, 4.0);
        params.response_format = SttFormat::Vtt;
        let SttBody::Subtitles(vtt) = stt_body(result(), 3.0, &params) else {
            panic!("vtt was asked");
        };
        assert!(vtt.starts_with("WEBVTT"), "{vtt}");
    }
}

/// The client's side of a relayed recognition stream.
pub mod encoders {
    use crate::recognition::Encoder;
    use bytes::Bytes;
    use tollgate_compat_audio::TranscriptionStreamEvent;
    use tollgate_compat_audio::transcription::StreamUsage;
    use tollgate_exchange::errors::ApiError;
    use tollgate_sse::Event;
    use tollgate_upstream::seams::recognition::TextDelta;
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
        fn frame(&mut self, frame: &TextDelta) -> Option<Bytes> {
            (!frame.text.is_empty())
                .then(|| event(&TranscriptionStreamEvent::delta(frame.text.clone())))
        }
        fn done(
            &mut self,
            text: &str,
            seconds: u64,
            charged: Option<tollgate_billing::Amount>,
        ) -> Option<Bytes> {
            let usage = StreamUsage::new(seconds, seconds * AUDIO_TOKENS_PER_SECOND);
            let done = TranscriptionStreamEvent::done(text.to_owned(), usage);
            let json = serde_json::to_string(&done).unwrap_or_default();
            Some(Event::data(crate::hold::with_charge(&json, charged)).encode())
        }
        fn failed(&mut self, error: &ApiError) -> Option<Bytes> {
            let body = serde_json::json!({
                "type": "error",
                "error": {"message": error.message, "type": "server_error", "code": "upstream_error"},
            });
            Some(Event::data(body.to_string()).encode())
        }
    }

    /// `/v1/speech_to_text` with `stream=true`: an `stt` channel's frames as they came; another
    /// channel's text as frames built like them — a `delta` frame per piece, then the `finish`
    /// frame with the seconds charged once they are known; on a cut an OpenAI-style error object
    /// (the vendor's error shape).
    #[derive(Debug, Default)]
    pub struct VendorFrames {
        /// The next built frame's index.
        index: u32,
        /// Frames are being built (the channel is not `stt`).
        built: bool,
    }

    impl Encoder for VendorFrames {
        fn frame(&mut self, frame: &TextDelta) -> Option<Bytes> {
            let built;
            let vendor = match &frame.stt {
                Some(own) => own,
                None => {
                    self.built = true;
                    if frame.text.is_empty() {
                        return None;
                    }
                    built = SttStreamFrame::delta(self.index, frame.text.clone());
                    self.index += 1;
                    &built
                }
            };
            serde_json::to_string(vendor)
                .ok()
                .map(|json| Event::data(json).encode())
        }
        fn done(
            &mut self,
            _text: &str,
            seconds: u64,
            charged: Option<tollgate_billing::Amount>,
        ) -> Option<Bytes> {
            if !self.built {
                return None;
            }
            serde_json::to_string(&SttStreamFrame::finish(self.index, seconds as f64))
                .ok()
                .map(|json| Event::data(crate::hold::with_charge(&json, charged)).encode())
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
