//! Simulated `speech_to_text` (wire-formats §4): a `multipart/form-data` request (`model`,
//! `file`, `response_format`, `timestamp_level`, `stream`, and the `language` header), the file
//! probed for its real container and duration ([`tollgate_probe`]), refused like the vendor
//! refuses (bare PCM or anything unknown, more than 500 s: 400; more than 50,000,000 bytes:
//! 413).
//!
//! The recognised text is the text the simulated synthesis embedded in the file
//! ([`crate::audio::embedded_text`]), so a synthesis → recognition round trip gives back the
//! original sentence exactly; any other file gets a deterministic placeholder that names its
//! container and duration ("Simulated transcript of a 3.2 second opus recording."). The text is
//! split into sentences (on `.`, `!`, `?` before a space or the end, and on `。`, `！`, `？`),
//! spread over the probed duration in proportion to their length with the synthesis's rule
//! (lead-in and tail of 0.15 s, CJK characters weigh twice), so the times match the simulated
//! voice. Audio longer than 20 s has two speakers, `"0"` and `"1"`, taking turns by sentence.
//! `timestamp_level: word` adds per-word (per-character for Chinese) times.
//!
//! `json`, `verbose_json`, `srt` and `vtt` bodies as the vendor's; a stream sends one `delta`
//! frame per sentence (a single sentence is cut into a few word groups), then the final frame
//! with `finish` and `duration`, LF-separated, paced by the knobs. Errors are OpenAI-style
//! [`SttError`] bodies with a real HTTP status, as the vendor's are.

use crate::audio;
use bytes::Bytes;
use std::time::Duration;
use tollgate_compat_audio::transcription::{Segment, Transcript, Word, split_words};
use tollgate_probe::{Probe, ProbeError};
use tollgate_vendor_audio::stt::{
    INVALID_REQUEST_ERROR, MAX_FILE_BYTES, MAX_SECONDS, SttError, SttErrorDetail, SttFormat,
    SttJson, SttParams, SttSegment, SttStreamFrame, SttVerboseJson, SttWord, TimestampLevel,
    validate,
};

/// Audio longer than this (seconds) has two speakers.
const TWO_SPEAKERS_AFTER: f64 = 20.0;
/// The lead-in and the tail of the simulated voice, seconds (at speed 1).
const PAUSE: f64 = 0.15;
/// A single-sentence stream is cut into at most this many deltas.
const MAX_GROUPS: usize = 4;

/// What the handler does with a request.
pub(crate) enum Answer {
    /// A body with its `Content-Type`, HTTP 200.
    Whole {
        content_type: &'static str,
        body: Bytes,
    },
    /// SSE frames, each already encoded, with the knobs' pacing and faults.
    Stream(Vec<Bytes>),
    /// An OpenAI-style error body with this HTTP status.
    Refused(u16, SttError),
}

/// A refusal: the HTTP status and the body.
pub(crate) type Refusal = (u16, SttError);

/// Reads the form, probes the file and recognises it. `content_type` and `language` are the
/// request's headers.
pub(crate) async fn respond(
    content_type: Option<&str>,
    language: Option<&str>,
    body: Bytes,
) -> Answer {
    match recognise(content_type, language, body).await {
        Ok(answer) => answer,
        Err((status, error)) => Answer::Refused(status, error),
    }
}

/// The frame sent when the `error_after_frames` knob strikes.
pub(crate) fn error_frame() -> Bytes {
    encode_frame(&SttError {
        error: SttErrorDetail {
            message: "simulated failure mid-stream".to_owned(),
            kind: Some("server_error".to_owned()),
            param: None,
            code: None,
        },
        request_id: None,
    })
}

async fn recognise(
    content_type: Option<&str>,
    language: Option<&str>,
    body: Bytes,
) -> Result<Answer, Refusal> {
    let form = read_form(content_type, body).await?;
    let fields = form.fields.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    let params = SttParams::from_fields(fields, language).map_err(|e| (400, SttError::from(&e)))?;
    validate(&params).map_err(|e| (400, SttError::from(&e)))?;
    let file = form
        .file
        .ok_or_else(|| refuse(400, "file", "'file' is required"))?;
    if file.len() as u64 > MAX_FILE_BYTES {
        return Err(refuse(
            413,
            "file",
            format!(
                "file of {} bytes; at most {MAX_FILE_BYTES} bytes",
                file.len()
            ),
        ));
    }
    let (text, seconds) = examine(file).await?;
    Ok(answer(&params, &text, seconds))
}

/// The file probed: the text it holds (the simulated synthesis's, or a placeholder) and its
/// seconds; refused like the vendor refuses (unknown containers, more than 500 s).
pub(crate) async fn examine(file: Bytes) -> Result<(String, f64), Refusal> {
    let examined = tokio::task::spawn_blocking(move || {
        tollgate_probe::probe_bytes(file.to_vec()).map(|probe| (audio::embedded_text(&file), probe))
    })
    .await;
    let (embedded, probe) = match examined {
        Ok(Ok(found)) => found,
        Ok(Err(ProbeError::Unrecognized)) => {
            return Err(refuse(
                400,
                "file",
                "unsupported audio format; send wav, aiff, flac, m4a, mp3, aac, opus or ogg",
            ));
        }
        Ok(Err(e)) => return Err(refuse(400, "file", e.to_string())),
        Err(e) => {
            let mut error = SttError::new(e.to_string());
            error.error.kind = Some("server_error".to_owned());
            return Err((500, error));
        }
    };
    if probe.duration > Duration::from_secs(MAX_SECONDS) {
        return Err(refuse(
            400,
            "file",
            format!("audio longer than {MAX_SECONDS} seconds; split it"),
        ));
    }
    let seconds = probe.duration.as_secs_f64();
    let text = embedded.unwrap_or_else(|| placeholder(&probe));
    Ok((text, seconds))
}

/// The form's text fields, in order, and the last `file` part.
pub(crate) struct Form {
    pub(crate) fields: Vec<(String, String)>,
    pub(crate) file: Option<Bytes>,
}

pub(crate) async fn read_form(content_type: Option<&str>, body: Bytes) -> Result<Form, Refusal> {
    let boundary = content_type
        .and_then(|ct| multer::parse_boundary(ct).ok())
        .ok_or_else(|| {
            refuse(
                400,
                "file",
                "the body must be multipart/form-data with a boundary",
            )
        })?;
    let malformed =
        |e: multer::Error| refuse(400, "file", format!("malformed multipart body: {e}"));
    let chunks = futures_util::stream::once(async { Ok::<_, std::io::Error>(body) });
    let mut multipart = multer::Multipart::new(chunks, boundary);
    let mut form = Form {
        fields: Vec::new(),
        file: None,
    };
    while let Some(field) = multipart.next_field().await.map_err(malformed)? {
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            form.file = Some(field.bytes().await.map_err(malformed)?);
        } else {
            form.fields
                .push((name, field.text().await.map_err(malformed)?));
        }
    }
    Ok(form)
}

/// The form's text fields, in order, and its files, each with its field's name (an image
/// edit's `image[]` and `mask`).
pub(crate) struct Files {
    pub(crate) fields: Vec<(String, String)>,
    pub(crate) files: Vec<(String, Bytes)>,
}

/// Reads a form whose every part with a file name is a file.
pub(crate) async fn read_form_files(
    content_type: Option<&str>,
    body: Bytes,
) -> Result<Files, String> {
    let boundary = content_type
        .and_then(|ct| multer::parse_boundary(ct).ok())
        .ok_or("the body must be multipart/form-data with a boundary")?;
    let chunks = futures_util::stream::once(async { Ok::<_, std::io::Error>(body) });
    let mut multipart = multer::Multipart::new(chunks, boundary);
    let mut form = Files {
        fields: Vec::new(),
        files: Vec::new(),
    };
    let malformed = |e: multer::Error| format!("malformed multipart body: {e}");
    while let Some(field) = multipart.next_field().await.map_err(malformed)? {
        let name = field.name().unwrap_or_default().to_owned();
        if field.file_name().is_some() {
            form.files
                .push((name, field.bytes().await.map_err(malformed)?));
        } else {
            form.fields
                .push((name, field.text().await.map_err(malformed)?));
        }
    }
    Ok(form)
}

/// A request error about `param`: `type` `invalid_request_error`, no code.
pub(crate) fn refuse(status: u16, param: &str, message: impl Into<String>) -> Refusal {
    let mut error = SttError::new(message);
    error.error.kind = Some(INVALID_REQUEST_ERROR.to_owned());
    error.error.param = Some(param.to_owned());
    (status, error)
}

/// The text of a file the simulator did not make.
fn placeholder(probe: &Probe) -> String {
    format!(
        "Simulated transcript of a {:.1} second {} recording.",
        probe.duration.as_secs_f64(),
        probe.container
    )
}

/// The answer in the asked format for `text` recognised from `seconds` of audio.
fn answer(params: &SttParams, text: &str, seconds: f64) -> Answer {
    let duration = round_ms(seconds);
    let trace_id = trace_id(text, duration);
    let pieces = sentences(text);
    if params.stream {
        let deltas = if pieces.len() >= 2 {
            pieces
        } else {
            word_groups(text)
        };
        let mut frames: Vec<Bytes> = deltas
            .iter()
            .zip(0u32..)
            .map(|(delta, i)| encode_frame(&SttStreamFrame::delta(i, *delta)))
            .collect();
        let n = u32::try_from(deltas.len()).unwrap_or(u32::MAX);
        frames.push(encode_frame(&SttStreamFrame::finish(n, duration)));
        return Answer::Stream(frames);
    }
    let words = params.timestamp_level == TimestampLevel::Word;
    let segments = segments(text, &pieces, seconds, words);
    match params.response_format {
        SttFormat::Json => json(&SttJson {
            text: text.to_owned(),
            duration,
            trace_id: Some(trace_id),
        }),
        SttFormat::VerboseJson => {
            let mut speakers: Vec<&str> = segments.iter().map(|s| s.speaker.as_str()).collect();
            speakers.sort_unstable();
            speakers.dedup();
            json(&SttVerboseJson {
                text: text.to_owned(),
                duration,
                n_speakers: u32::try_from(speakers.len()).unwrap_or(u32::MAX),
                segments,
                trace_id: Some(trace_id),
            })
        }
        SttFormat::Srt => Answer::Whole {
            content_type: "text/plain; charset=utf-8",
            body: Bytes::from(transcript(text, duration, &segments).to_srt()),
        },
        SttFormat::Vtt => Answer::Whole {
            content_type: "text/vtt; charset=utf-8",
            body: Bytes::from(transcript(text, duration, &segments).to_vtt()),
        },
    }
}

/// The text cut into sentences: consecutive slices that together are the whole text, each but
/// the first starting with the whitespace before it. A sentence ends with `.`, `!` or `?`
/// followed by whitespace or the end (so `3.2` stays whole), or with `。`, `！` or `？` (and any
/// closing marks right after). Trailing whitespace joins the last sentence; a text without
/// sentence ends is one sentence; a blank text has none.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    let is_end = |c: char| matches!(c, '.' | '!' | '?' | '。' | '！' | '？');
    let mut pieces = Vec::new();
    let mut from = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !is_end(c) {
            continue;
        }
        let next = chars.peek().map(|&(_, n)| n);
        let cut = match next {
            None => true,
            Some(n) if is_end(n) => false,
            Some(n) => n.is_whitespace() || !c.is_ascii(),
        };
        if cut {
            let to = i + c.len_utf8();
            pieces.push(&text[from..to]);
            from = to;
        }
    }
    let rest = &text[from..];
    if !rest.trim().is_empty() {
        pieces.push(rest);
    } else if let Some(last) = pieces.last_mut() {
        let start = text.len() - last.len() - rest.len();
        *last = &text[start..];
    }
    pieces
}

/// A single sentence cut into at most [`MAX_GROUPS`] runs of words (of characters when there is
/// no whitespace), so that a stream has several deltas; the runs together are the whole text.
fn word_groups(text: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = text
        .char_indices()
        .zip(text.chars().skip(1))
        .filter(|&((_, before), c)| before.is_whitespace() && !c.is_whitespace())
        .map(|((i, before), _)| i + before.len_utf8())
        .collect();
    if starts.is_empty() {
        starts = text.char_indices().skip(1).map(|(i, _)| i).collect();
    }
    if text.trim().is_empty() {
        return Vec::new();
    }
    let tokens = starts.len() + 1;
    let groups = tokens.min(MAX_GROUPS);
    let mut pieces = Vec::with_capacity(groups);
    let mut from = 0;
    for g in 1..groups {
        let to = starts[g * tokens / groups - 1];
        pieces.push(&text[from..to]);
        from = to;
    }
    pieces.push(&text[from..]);
    pieces
}

/// The segments of `pieces` (from [`sentences`]) over `seconds` of audio: after a lead-in, each
/// sentence's characters take time in proportion to their weight, as the simulated voice
/// speaks them; with `words`, the words' times too ([`split_words`]).
pub(crate) fn segments(text: &str, pieces: &[&str], seconds: f64, words: bool) -> Vec<SttSegment> {
    let total = units(text);
    if total == 0 {
        return Vec::new();
    }
    let pause = PAUSE.min(seconds / 10.0);
    let span = seconds - 2.0 * pause;
    let at = |u: u64| pause + span * (u as f64 / total as f64);
    let mut before = 0;
    let mut segments = Vec::with_capacity(pieces.len());
    for (piece, id) in pieces.iter().zip(0u32..) {
        let sentence = piece.trim();
        let lead = &piece[..piece.len() - piece.trim_start().len()];
        let first = before + units(lead);
        let (start, end) = (at(first), at(first + units(sentence)));
        before += units(piece);
        let speaker = if seconds > TWO_SPEAKERS_AFTER && id % 2 == 1 {
            "1"
        } else {
            "0"
        };
        segments.push(SttSegment {
            id,
            start: round_ms(start),
            end: round_ms(end),
            text: sentence.to_owned(),
            speaker: speaker.to_owned(),
            words: words.then(|| {
                split_words(sentence, start, end)
                    .into_iter()
                    .map(|w| SttWord {
                        text: w.word,
                        start: round_ms(w.start),
                        end: round_ms(w.end),
                    })
                    .collect()
            }),
        });
    }
    segments
}

/// The segments as a compat [`Transcript`] for the subtitle renderers: the words as cues when
/// there are any, otherwise the sentences; speakers are not shown.
pub(crate) fn transcript(text: &str, duration: f64, segments: &[SttSegment]) -> Transcript {
    let mut transcript = Transcript::new(text, duration);
    for s in segments {
        transcript
            .segments
            .push(Segment::new(s.id, s.start, s.end, s.text.clone()));
        for w in s.words.iter().flatten() {
            transcript
                .words
                .push(Word::new(w.text.clone(), w.start, w.end));
        }
    }
    transcript
}

/// The weight of `text` in the synthesis's duration rule ([`audio::duration_for`]): 2 for an
/// East Asian wide character, 1 for anything else.
fn units(text: &str) -> u64 {
    text.chars()
        .map(|c| {
            let wide = matches!(u32::from(c),
                0x1100..=0x115F
                | 0x2E80..=0xA4CF
                | 0xAC00..=0xD7A3
                | 0xF900..=0xFAFF
                | 0xFE30..=0xFE4F
                | 0xFF00..=0xFF60
                | 0xFFE0..=0xFFE6
                | 0x20000..=0x3FFFD);
            if wide { 2 } else { 1 }
        })
        .sum()
}

/// Seconds rounded to milliseconds.
pub(crate) fn round_ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

fn json<T: serde::Serialize>(value: &T) -> Answer {
    Answer::Whole {
        content_type: "application/json",
        body: Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
    }
}

fn encode_frame<T: serde::Serialize>(frame: &T) -> Bytes {
    let json = serde_json::to_string(frame).unwrap_or_default();
    Bytes::from(format!("data: {json}\n\n"))
}

fn trace_id(text: &str, duration: f64) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in text.bytes().chain(duration.to_bits().to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("sim-{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::{AudioFormat, Synthesis};
    use crate::{KnobSettings, start};
    use http::{Request, StatusCode, header};
    use http_body_util::{BodyExt, Full};

    const BOUNDARY: &str = "sim-stt-test-boundary";
    const ROUND_TRIP: &str = "Hello there. This is a round trip test.";

    /// A multipart body with these text fields and, if given, a `file` part.
    fn form(fields: &[(&str, &str)], file: Option<&[u8]>) -> Bytes {
        let mut body = Vec::new();
        for (name, value) in fields {
            body.extend_from_slice(
                format!(
                    "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
                )
                .as_bytes(),
            );
        }
        if let Some(file) = file {
            body.extend_from_slice(
                format!(
                    "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend_from_slice(file);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
        Bytes::from(body)
    }

    fn content_type() -> String {
        format!("multipart/form-data; boundary={BOUNDARY}")
    }

    fn synth(text: &str, format: AudioFormat) -> Vec<u8> {
        let s = Synthesis {
            format,
            sample_rate: 16000,
            channels: 1,
            bitrate: 64_000,
            speed: 1.0,
        };
        audio::synthesize(text, &s).unwrap()
    }

    async fn ask(fields: &[(&str, &str)], file: Option<&[u8]>) -> Answer {
        respond(Some(&content_type()), None, form(fields, file)).await
    }

    /// The body of a whole answer, and its content type.
    async fn whole(fields: &[(&str, &str)], file: &[u8]) -> (&'static str, Bytes) {
        match ask(fields, Some(file)).await {
            Answer::Whole { content_type, body } => (content_type, body),
            Answer::Refused(status, e) => panic!("refused {status}: {e:?}"),
            Answer::Stream(_) => panic!("unexpected stream"),
        }
    }

    async fn verbose(file: &[u8], level: &str) -> SttVerboseJson {
        let fields = [
            ("model", "asr-1.0"),
            ("response_format", "verbose_json"),
            ("timestamp_level", level),
        ];
        let (ct, body) = whole(&fields, file).await;
        assert_eq!(ct, "application/json");
        serde_json::from_slice(&body).unwrap()
    }

    async fn refused(fields: &[(&str, &str)], file: Option<&[u8]>) -> (u16, SttError) {
        match ask(fields, file).await {
            Answer::Refused(status, e) => (status, e),
            _ => panic!("expected a refusal"),
        }
    }

    fn assert_times(segments: &[SttSegment], duration: f64) {
        let mut last = 0.0;
        for s in segments {
            assert!(s.start >= last && s.end > s.start, "{segments:?}");
            last = s.end;
        }
        assert!(last <= duration, "{last} > {duration}");
    }

    #[tokio::test]
    async fn a_simulated_file_round_trips_its_text_exactly() {
        let wav = synth(ROUND_TRIP, AudioFormat::Wav);
        let (ct, body) = whole(&[("model", "asr-1.0")], &wav).await;
        assert_eq!(ct, "application/json");
        let r: SttJson = serde_json::from_slice(&body).unwrap();
        assert_eq!(r.text, ROUND_TRIP);
        let expected = audio::duration_for(ROUND_TRIP, 1.0).as_secs_f64();
        assert!(
            (r.duration - expected).abs() < 0.05,
            "{} vs {expected}",
            r.duration
        );
        assert!(r.trace_id.unwrap().starts_with("sim-"));

        let mp3 = synth("Ein MP3 Satz.", AudioFormat::Mp3);
        let (_, body) = whole(&[("model", "asr-1.0")], &mp3).await;
        let r: SttJson = serde_json::from_slice(&body).unwrap();
        assert_eq!(r.text, "Ein MP3 Satz.");
    }

    #[tokio::test]
    async fn verbose_json_has_sentences_spread_over_the_audio() {
        let wav = synth(ROUND_TRIP, AudioFormat::Wav);
        let r = verbose(&wav, "sentence").await;
        assert_eq!(r.text, ROUND_TRIP);
        assert_eq!(r.n_speakers, 1);
        let texts: Vec<&str> = r.segments.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["Hello there.", "This is a round trip test."]);
        assert_eq!(r.segments[1].id, 1);
        assert!(
            r.segments
                .iter()
                .all(|s| s.speaker == "0" && s.words.is_none())
        );
        assert_times(&r.segments, r.duration);
        // After the 0.15 s lead-in, at 15 characters a second.
        assert!(
            (r.segments[0].start - 0.15).abs() < 0.01,
            "{:?}",
            r.segments
        );
        assert!((r.segments[0].end - (0.15 + 12.0 / 15.0)).abs() < 0.01);
    }

    #[tokio::test]
    async fn word_level_gives_per_word_times() {
        let wav = synth(ROUND_TRIP, AudioFormat::Wav);
        let r = verbose(&wav, "word").await;
        let words: Vec<Vec<&str>> = r
            .segments
            .iter()
            .map(|s| {
                s.words
                    .as_ref()
                    .unwrap()
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect()
            })
            .collect();
        assert_eq!(
            words,
            [
                vec!["Hello", "there"],
                vec!["This", "is", "a", "round", "trip", "test"]
            ]
        );
        for s in &r.segments {
            let w = s.words.as_ref().unwrap();
            assert_eq!((w[0].start, w[w.len() - 1].end), (s.start, s.end));
            assert!(
                w.windows(2)
                    .all(|p| p[0].end <= p[1].start + 1e-9 && p[0].start < p[1].start)
            );
        }
    }

    #[tokio::test]
    async fn chinese_word_level_is_per_character() {
        let wav = synth("你好。世界。", AudioFormat::Flac);
        let r = verbose(&wav, "word").await;
        assert_eq!(r.text, "你好。世界。");
        let texts: Vec<&str> = r.segments.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["你好。", "世界。"]);
        let chars: Vec<&str> = r
            .segments
            .iter()
            .flat_map(|s| s.words.iter().flatten().map(|w| w.text.as_str()))
            .collect();
        assert_eq!(chars, ["你", "好", "世", "界"]);
        assert_times(&r.segments, r.duration);
    }

    #[tokio::test]
    async fn long_audio_has_two_speakers_taking_turns() {
        let text = (1..=8)
            .map(|i| format!("This is sentence number {i} of a rather long meeting."))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(audio::duration_for(&text, 1.0).as_secs_f64() > 20.0);
        let r = verbose(&synth(&text, AudioFormat::Wav), "sentence").await;
        assert_eq!(r.n_speakers, 2);
        assert_eq!(r.segments.len(), 8);
        let speakers: Vec<&str> = r.segments.iter().map(|s| s.speaker.as_str()).collect();
        assert_eq!(speakers, ["0", "1", "0", "1", "0", "1", "0", "1"]);
        assert_times(&r.segments, r.duration);
        assert!(r.segments[7].end > 20.0);
    }

    #[tokio::test]
    async fn srt_and_vtt_are_raw_subtitle_documents() {
        let wav = synth(ROUND_TRIP, AudioFormat::Wav);
        let fields = [("model", "asr-1.0"), ("response_format", "srt")];
        let (ct, body) = whole(&fields, &wav).await;
        assert_eq!(ct, "text/plain; charset=utf-8");
        let srt = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            srt.starts_with("1\n00:00:00,150 --> 00:00:00,950\nHello there.\n\n2\n00:00:"),
            "{srt}"
        );
        assert!(srt.contains("This is a round trip test."));

        let fields = [
            ("model", "asr-1.0"),
            ("response_format", "vtt"),
            ("timestamp_level", "word"),
        ];
        let (ct, body) = whole(&fields, &wav).await;
        assert_eq!(ct, "text/vtt; charset=utf-8");
        let vtt = String::from_utf8(body.to_vec()).unwrap();
        assert!(vtt.starts_with("WEBVTT\n\n00:00:00.150 --> "), "{vtt}");
        // Word cues: one per word.
        assert_eq!(vtt.matches(" --> ").count(), 8, "{vtt}");
    }

    #[tokio::test]
    async fn other_files_get_a_placeholder_naming_container_and_duration() {
        let opus = include_bytes!("../../probe/tests/fixtures/tone.opus");
        let (_, body) = whole(&[("model", "asr-1.0")], opus).await;
        let r: SttJson = serde_json::from_slice(&body).unwrap();
        assert!(r.duration > 0.0);
        assert_eq!(
            r.text,
            format!(
                "Simulated transcript of a {:.1} second opus recording.",
                r.duration
            )
        );
        let r = verbose(opus, "sentence").await;
        assert_eq!(r.segments.len(), 1, "{:?}", r.segments);
        assert_times(&r.segments, r.duration);
    }

    #[tokio::test]
    async fn pcm_text_and_missing_parts_are_400() {
        let pcm = synth(ROUND_TRIP, AudioFormat::Pcm);
        for file in [&pcm[..], b"just some text, not audio"] {
            let (status, e) = refused(&[("model", "asr-1.0")], Some(file)).await;
            assert_eq!(status, 400);
            assert!(e.message().starts_with("unsupported audio format"), "{e:?}");
            assert_eq!(e.error.kind.as_deref(), Some(INVALID_REQUEST_ERROR));
        }
        let (status, e) = refused(&[("model", "asr-1.0")], None).await;
        assert_eq!((status, e.error.param.as_deref()), (400, Some("file")));

        let wav = synth("Hi.", AudioFormat::Wav);
        let (status, e) = refused(&[], Some(&wav)).await;
        assert_eq!((status, e.error.param.as_deref()), (400, Some("model")));
        let fields = [
            ("model", "asr-1.0"),
            ("response_format", "srt"),
            ("stream", "true"),
        ];
        let (status, e) = refused(&fields, Some(&wav)).await;
        assert_eq!(
            (status, e.error.code.as_deref()),
            (400, Some("not_streamable"))
        );
        let fields = [("model", "asr-1.0"), ("response_format", "text")];
        assert_eq!(refused(&fields, Some(&wav)).await.0, 400);

        let Answer::Refused(400, e) = respond(Some("application/json"), None, Bytes::new()).await
        else {
            panic!("expected a 400")
        };
        assert!(e.message().contains("multipart"));
    }

    #[tokio::test]
    async fn long_and_large_files_are_refused() {
        // A real 8 kHz mono WAV of 501 seconds of silence.
        let wav = crate::audio::silent_wav(501, 8_000);
        let (status, e) = refused(&[("model", "asr-1.0")], Some(&wav)).await;
        assert_eq!(status, 400);
        assert_eq!(e.message(), "audio longer than 500 seconds; split it");

        let big = vec![0u8; MAX_FILE_BYTES as usize + 1];
        let (status, e) = refused(&[("model", "asr-1.0")], Some(&big)).await;
        assert_eq!((status, e.error.param.as_deref()), (413, Some("file")));
    }

    fn decode(frames: &[Bytes]) -> Vec<SttStreamFrame> {
        frames
            .iter()
            .map(|f| {
                let f = std::str::from_utf8(f).unwrap();
                assert!(f.starts_with("data: ") && f.ends_with("}\n\n"), "{f:?}");
                SttStreamFrame::parse(&f["data: ".len()..])
                    .unwrap()
                    .unwrap()
            })
            .collect()
    }

    #[tokio::test]
    async fn streams_send_sentences_then_the_duration() {
        let wav = synth(ROUND_TRIP, AudioFormat::Wav);
        let fields = [("model", "asr-1.0"), ("stream", "true")];
        let Answer::Stream(frames) = ask(&fields, Some(&wav)).await else {
            panic!("expected a stream")
        };
        let frames = decode(&frames);
        assert_eq!(
            frames[..2],
            [
                SttStreamFrame::delta(0, "Hello there."),
                SttStreamFrame::delta(1, " This is a round trip test.")
            ]
        );
        let last = &frames[2];
        assert!(last.is_final() && last.delta.is_empty() && last.index == 2);
        let expected = audio::duration_for(ROUND_TRIP, 1.0).as_secs_f64();
        assert!((last.duration.unwrap() - expected).abs() < 0.05);

        // One sentence: a few word groups, which add up to the text.
        let opus = include_bytes!("../../probe/tests/fixtures/tone.opus");
        let Answer::Stream(frames) = ask(&fields, Some(opus)).await else {
            panic!("expected a stream")
        };
        let frames = decode(&frames);
        assert!(frames.len() >= 3, "{frames:?}");
        let text: String = frames.iter().map(|f| f.delta.as_str()).collect();
        assert!(
            text.starts_with("Simulated transcript of a ") && text.ends_with(" opus recording.")
        );
        assert!(frames.last().unwrap().is_final());
        assert!(
            frames[..frames.len() - 1]
                .iter()
                .all(|f| !f.is_final() && f.duration.is_none())
        );
    }

    #[test]
    fn sentences_partition_the_text() {
        let cases: [(&str, &[&str]); 6] = [
            ("Hi. Ok!  Yes?", &["Hi.", " Ok!", "  Yes?"]),
            ("A 3.2 s file. Next... ", &["A 3.2 s file.", " Next... "]),
            ("你好。世界！好吗？", &["你好。", "世界！", "好吗？"]),
            ("no end at all", &["no end at all"]),
            ("Why?! Because", &["Why?!", " Because"]),
            ("  ", &[]),
        ];
        for (text, expected) in cases {
            assert_eq!(sentences(text), expected, "{text:?}");
        }
        assert_eq!(word_groups("a b c d e"), ["a ", "b ", "c ", "d e"]);
        assert_eq!(word_groups("你好"), ["你", "好"]);
        assert_eq!(word_groups("x"), ["x"]);
    }

    /// POSTs a form to a running simulator; the status, content type and whole body.
    async fn post(
        addr: std::net::SocketAddr,
        language: Option<&str>,
        body: Bytes,
    ) -> (StatusCode, String, Result<Bytes, String>) {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        let mut request = Request::post("/v1/speech_to_text")
            .header(header::HOST, "sim")
            .header(header::CONTENT_TYPE, content_type());
        if let Some(language) = language {
            request = request.header("language", language);
        }
        let response = sender
            .send_request(request.body(Full::new(body)).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let ct = response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        let body = response.into_body().collect().await;
        (
            status,
            ct,
            body.map(|b| b.to_bytes()).map_err(|e| e.to_string()),
        )
    }

    #[tokio::test]
    async fn the_route_serves_with_the_language_header_and_obeys_the_knobs() {
        let sim = start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
            .await
            .unwrap();
        let wav = synth(ROUND_TRIP, AudioFormat::Wav);
        let json_form = form(&[("model", "asr-1.0")], Some(&wav));
        let (status, ct, body) = post(sim.addr(), Some("en"), json_form.clone()).await;
        assert_eq!((status, ct.as_str()), (StatusCode::OK, "application/json"));
        let r: SttJson = serde_json::from_slice(&body.unwrap()).unwrap();
        assert_eq!(r.text, ROUND_TRIP);

        let srt_form = form(
            &[("model", "asr-1.0"), ("response_format", "srt")],
            Some(&wav),
        );
        let (status, ct, _) = post(sim.addr(), Some("zh"), srt_form).await;
        assert_eq!(
            (status, ct.as_str()),
            (StatusCode::OK, "text/plain; charset=utf-8")
        );

        let (status, _, body) = post(sim.addr(), None, form(&[("model", "asr-1.0")], None)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let e: SttError = serde_json::from_slice(&body.unwrap()).unwrap();
        assert_eq!(e.error.param.as_deref(), Some("file"));

        sim.knobs().set(KnobSettings {
            fail_status: Some(503),
            fail_times: Some(1),
            ..KnobSettings::default()
        });
        let (status, ct, body) = post(sim.addr(), None, json_form.clone()).await;
        assert_eq!(
            (status, ct.as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, "application/json")
        );
        let e: SttError = serde_json::from_slice(&body.unwrap()).unwrap();
        assert_eq!(e.error.kind.as_deref(), Some("server_error"));

        let stream_form = form(&[("model", "asr-1.0"), ("stream", "true")], Some(&wav));
        sim.knobs().set(KnobSettings {
            frame_interval_ms: Some(1),
            error_after_frames: Some(1),
            ..KnobSettings::default()
        });
        let (status, ct, body) = post(sim.addr(), None, stream_form.clone()).await;
        assert_eq!((status, ct.as_str()), (StatusCode::OK, "text/event-stream"));
        let body = String::from_utf8(body.unwrap().to_vec()).unwrap();
        let data: Vec<&str> = body.split("\n\n").filter(|f| !f.is_empty()).collect();
        assert_eq!(data.len(), 2, "{body}");
        assert_eq!(data[0], r#"data: {"index":0,"delta":"Hello there."}"#);
        let e: SttError = serde_json::from_str(&data[1]["data: ".len()..]).unwrap();
        assert_eq!(e.message(), "simulated failure mid-stream");

        sim.knobs().set(KnobSettings {
            frame_interval_ms: Some(1),
            cut_after_frames: Some(1),
            ..KnobSettings::default()
        });
        let (_, _, body) = post(sim.addr(), None, stream_form).await;
        assert!(body.is_err(), "a cut stream must not end cleanly");

        assert_eq!(sim.knobs().served("POST /v1/speech_to_text"), 6);
        sim.shutdown().await;
    }
}
