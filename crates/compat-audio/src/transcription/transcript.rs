//! The recognised result and its renderings.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::language::language_name;
use super::params::TranscriptionFormat;
use super::response::{DurationUsage, JsonResponse, VerboseJsonResponse, VerboseSegment};
use super::subtitle::{self, Cue, round_ms};
use super::timing::{Segment, Word};
use super::words::is_cjk;

/// The speaker label of a segment without one.
const FIRST_SPEAKER: &str = "S1";

/// The recognised result, independent of the upstream's shape; the gateway fills it from the
/// upstream's answer and renders it in the format the client asked for ([`render`](Self::render)).
///
/// | Field | Meaning |
/// |---|---|
/// | `text` | the whole text |
/// | `duration` | the audio's length in seconds |
/// | `language` | the language code, when known (the hint, or what the upstream detected) |
/// | `segments` | the sentences with times and speakers |
/// | `words` | word (or, for CJK, character) times; filled only when word granularity was asked for (see [`TranscriptionParams::wants_words`](super::TranscriptionParams::wants_words)), empty otherwise |
///
/// When `segments` is empty but `text` is not, the renderings treat the text as one segment
/// from 0 to `duration` (speaker `S1`), so that `verbose_json`, `srt` and `vtt` never lose it.
///
/// ```
/// use tollgate_compat_audio::transcription::{Segment, Transcript, TranscriptionFormat};
///
/// let mut transcript = Transcript::new("Hi all. Let's start.", 3.4);
/// transcript.segments = vec![
///     Segment::new(0, 0.2, 1.1, "Hi all.").with_speaker("S1"),
///     Segment::new(1, 1.3, 2.6, "Let's start.").with_speaker("S2"),
/// ];
/// let srt = transcript.render(TranscriptionFormat::Srt, 4);
/// assert_eq!(srt.content_type, "text/plain; charset=utf-8");
/// assert_eq!(
///     srt.body,
///     "1\n00:00:00,200 --> 00:00:01,100\nHi all.\n\n2\n00:00:01,300 --> 00:00:02,600\nLet's start.\n\n"
/// );
/// let json = transcript.render(TranscriptionFormat::Json, 4);
/// assert_eq!(
///     json.body,
///     r#"{"text":"Hi all. Let's start.","duration":3.4,"usage":{"type":"duration","seconds":4}}"#
/// );
/// assert_eq!(transcript.to_verbose_json(4).n_speakers, 2);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Transcript {
    /// The whole recognised text.
    pub text: String,
    /// The audio's length in seconds.
    pub duration: f64,
    /// The language code (`en`, `zh`, ...), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The segments, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<Segment>,
    /// The words, in order; only when word granularity was asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<Word>,
}

/// The speaker label of docs/api.md §2.3 for an upstream's speaker id: the vendor numbers speakers from
/// `"0"` (wire-formats §4), this format labels them from `S1`.
///
/// A number *n* becomes `S{n+1}`; a label that already reads `S1`, `S2`, ... is kept; anything
/// else (empty, or not a number) is `S1`.
///
/// ```
/// use tollgate_compat_audio::transcription::speaker_label;
///
/// assert_eq!(speaker_label("0"), "S1");
/// assert_eq!(speaker_label("1"), "S2");
/// assert_eq!(speaker_label("S3"), "S3");
/// assert_eq!(speaker_label(""), "S1");
/// ```
pub fn speaker_label(upstream: &str) -> String {
    let upstream = upstream.trim();
    if let Ok(n) = upstream.parse::<u32>() {
        return format!("S{}", u64::from(n) + 1);
    }
    match upstream.strip_prefix('S').map(str::parse::<u32>) {
        Some(Ok(n)) if n > 0 => format!("S{n}"),
        _ => FIRST_SPEAKER.to_owned(),
    }
}

/// A rendered answer: the body and its `Content-Type` (see
/// [`TranscriptionFormat::content_type`]). Not a wire type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The `Content-Type` header value.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Transcript {
    /// A transcript with only its text and duration.
    pub fn new(text: impl Into<String>, duration: f64) -> Self {
        Self {
            text: text.into(),
            duration,
            ..Self::default()
        }
    }

    /// The segments the renderings use: [`segments`](Self::segments), or the whole text as one
    /// segment when there are none (nothing when the text is blank too).
    fn cue_segments(&self) -> Cow<'_, [Segment]> {
        if self.segments.is_empty() && !self.text.trim().is_empty() {
            Cow::Owned(vec![Segment::new(0, 0.0, self.duration, self.text.clone())])
        } else {
            Cow::Borrowed(&self.segments)
        }
    }

    /// The number of distinct speakers among the segments (a segment without a label counts as
    /// `S1`); 0 when there are none.
    pub fn n_speakers(&self) -> u32 {
        let mut speakers: Vec<&str> = Vec::new();
        let segments = self.cue_segments();
        for segment in segments.iter() {
            let label = segment.speaker.as_deref().unwrap_or(FIRST_SPEAKER);
            if !speakers.contains(&label) {
                speakers.push(label);
            }
        }
        u32::try_from(speakers.len()).unwrap_or(u32::MAX)
    }

    /// The `json` body (docs/api.md §2.3): `text`, `duration` (rounded to milliseconds) and the
    /// `usage` of `seconds` billed seconds.
    pub fn to_json(&self, seconds: u64) -> JsonResponse {
        JsonResponse {
            text: self.text.clone(),
            duration: round_ms(self.duration),
            usage: Some(DurationUsage::new(seconds)),
        }
    }

    /// The `verbose_json` body (docs/api.md §2.3, wire-formats §1.2).
    ///
    /// - `task` is `"transcribe"`.
    /// - `language` is the full English name of [`language`](Self::language)
    ///   ([`language_name`](super::language_name())): `"english"` for `en`, the code itself when
    ///   the table does not know it, `"unknown"` when there is none.
    /// - `segments` come from [`segments`](Self::segments) (see the type's note on an empty
    ///   list), with the speaker label (`S1` when missing) and Whisper's decoding fields at
    ///   neutral values (see [`VerboseSegment`]). Each text is trimmed and, like OpenAI's, starts
    ///   with one space, except when it starts with a CJK character or CJK punctuation (Whisper's
    ///   Chinese and Japanese segments carry no space).
    /// - `words` is present when [`words`](Self::words) is not empty.
    /// - `n_speakers` is [`n_speakers`](Self::n_speakers); `usage` the `seconds` billed.
    ///
    /// Times are rounded to milliseconds; a negative time, or one that is not a number, is 0.
    pub fn to_verbose_json(&self, seconds: u64) -> VerboseJsonResponse {
        let segments = self
            .cue_segments()
            .iter()
            .map(|segment| VerboseSegment {
                id: segment.id,
                seek: 0,
                start: round_ms(segment.start),
                end: round_ms(segment.end),
                text: openai_segment_text(&segment.text),
                tokens: Vec::new(),
                temperature: 0.0,
                avg_logprob: 0.0,
                compression_ratio: 0.0,
                no_speech_prob: 0.0,
                speaker: segment
                    .speaker
                    .clone()
                    .unwrap_or_else(|| FIRST_SPEAKER.to_owned()),
            })
            .collect();
        let words = (!self.words.is_empty()).then(|| {
            self.words
                .iter()
                .map(|w| Word::new(w.word.clone(), round_ms(w.start), round_ms(w.end)))
                .collect()
        });
        VerboseJsonResponse {
            task: "transcribe".to_owned(),
            language: self
                .language
                .as_deref()
                .map_or_else(|| "unknown".to_owned(), language_name),
            duration: round_ms(self.duration),
            text: self.text.clone(),
            segments,
            words,
            n_speakers: self.n_speakers(),
            usage: DurationUsage::new(seconds),
        }
    }

    /// The `text` body: the text followed by a line break.
    pub fn to_text(&self) -> String {
        format!("{}\n", self.text)
    }

    /// The `srt` body: SubRip cues numbered from 1, `HH:MM:SS,mmm --> HH:MM:SS,mmm`, each
    /// followed by a blank line.
    ///
    /// The cues are the [`words`](Self::words) when there are any (one cue per word, per
    /// character for CJK), otherwise the segments. Times are rounded to milliseconds and an end
    /// before its start is moved to the start. Each cue's text is put on one line (runs of
    /// whitespace, line breaks included, become one space), a `-->` in it becomes `->`, and a
    /// cue with no text is left out. No cues give an empty body.
    pub fn to_srt(&self) -> String {
        subtitle::srt(&self.cues(&self.cue_segments()))
    }

    /// The `vtt` body: `WEBVTT`, a blank line, then cues `HH:MM:SS.mmm --> HH:MM:SS.mmm`
    /// (without identifiers), each followed by a blank line.
    ///
    /// The cues are chosen and cleaned as in [`to_srt`](Self::to_srt), except that `&`, `<` and
    /// `>` in the text are escaped (`&amp;`, `&lt;`, `&gt;`), since WebVTT cue text is markup.
    pub fn to_vtt(&self) -> String {
        subtitle::vtt(&self.cues(&self.cue_segments()))
    }

    /// The subtitle cues: the words, or else the segments.
    fn cues<'a>(&'a self, segments: &'a [Segment]) -> Vec<Cue<'a>> {
        if self.words.is_empty() {
            segments
                .iter()
                .map(|s| Cue {
                    start: s.start,
                    end: s.end,
                    text: &s.text,
                })
                .collect()
        } else {
            self.words
                .iter()
                .map(|w| Cue {
                    start: w.start,
                    end: w.end,
                    text: &w.word,
                })
                .collect()
        }
    }

    /// The body in `format` and its `Content-Type` ([`TranscriptionFormat::content_type`]);
    /// `seconds` is the billed duration for the JSON formats' `usage`.
    ///
    /// ```
    /// use tollgate_compat_audio::transcription::{Transcript, TranscriptionFormat};
    ///
    /// let transcript = Transcript::new("Hello.", 0.9);
    /// let text = transcript.render(TranscriptionFormat::Text, 1);
    /// assert_eq!((text.content_type, text.body.as_str()), ("text/plain; charset=utf-8", "Hello.\n"));
    /// let vtt = transcript.render(TranscriptionFormat::Vtt, 1);
    /// assert_eq!(vtt.content_type, "text/vtt; charset=utf-8");
    /// assert_eq!(vtt.body, "WEBVTT\n\n00:00:00.000 --> 00:00:00.900\nHello.\n\n");
    /// ```
    pub fn render(&self, format: TranscriptionFormat, seconds: u64) -> Rendered {
        let body = match format {
            TranscriptionFormat::Json => json(&self.to_json(seconds)),
            TranscriptionFormat::VerboseJson => json(&self.to_verbose_json(seconds)),
            TranscriptionFormat::Srt => self.to_srt(),
            TranscriptionFormat::Vtt => self.to_vtt(),
            TranscriptionFormat::Text => self.to_text(),
        };
        Rendered {
            content_type: format.content_type(),
            body,
        }
    }
}

/// A response body as JSON.
///
/// Serializing these types cannot fail: they hold only strings, integers, floats (which
/// serde_json writes as `null` if they are not finite, and the times are made finite before) and
/// lists of those; the fallback is never taken.
fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_owned())
}

/// A segment's text as OpenAI writes it: trimmed, and with one leading space unless it starts
/// with a CJK character, CJK or full-width punctuation, or is empty.
fn openai_segment_text(text: &str) -> String {
    let text = text.trim();
    let unspaced = |c: char| {
        is_cjk(c)
            || ('\u{3000}'..='\u{303F}').contains(&c)
            || ('\u{FF00}'..='\u{FFEF}').contains(&c)
    };
    match text.chars().next() {
        Some(first) if !unspaced(first) => format!(" {text}"),
        _ => text.to_owned(),
    }
}
