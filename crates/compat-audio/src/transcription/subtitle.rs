//! SubRip and WebVTT rendering.

use std::fmt::Write as _;

/// One subtitle cue: times in seconds and the text.
pub(crate) struct Cue<'a> {
    pub start: f64,
    pub end: f64,
    pub text: &'a str,
}

/// A time in whole milliseconds: rounded to the nearest; negative or not a number is 0.
pub(crate) fn millis(seconds: f64) -> u64 {
    if seconds.is_nan() || seconds <= 0.0 {
        return 0;
    }
    // The float-to-int cast saturates, so a huge time cannot overflow.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ms = (seconds * 1000.0).round() as u64;
    ms
}

/// A time rounded to milliseconds, as the JSON bodies carry it; negative or not a number is 0.
pub(crate) fn round_ms(seconds: f64) -> f64 {
    if !seconds.is_finite() || seconds <= 0.0 {
        return 0.0;
    }
    (seconds * 1000.0).round() / 1000.0
}

/// `HH:MM:SS` followed by `separator` and the milliseconds (`,` for SRT, `.` for WebVTT).
fn timestamp(ms: u64, separator: char) -> String {
    let (hours, rest) = (ms / 3_600_000, ms % 3_600_000);
    let (minutes, rest) = (rest / 60_000, rest % 60_000);
    let (secs, millis) = (rest / 1000, rest % 1000);
    format!("{hours:02}:{minutes:02}:{secs:02}{separator}{millis:03}")
}

/// The cue's times in milliseconds, with the end never before the start.
fn span(cue: &Cue<'_>) -> (u64, u64) {
    let start = millis(cue.start);
    (start, millis(cue.end).max(start))
}

/// The text on one line: every run of whitespace (line breaks included) becomes one space, and
/// the ends are trimmed, so a cue never holds a blank line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// SubRip: cues numbered from 1, `HH:MM:SS,mmm --> HH:MM:SS,mmm`, each followed by a blank line.
///
/// A cue whose text is empty is left out (it would end the cue early). The text is put on one
/// line, and a `-->` inside it becomes `->` so that no text line reads as a timing line.
pub(crate) fn srt(cues: &[Cue<'_>]) -> String {
    let mut out = String::new();
    let mut number = 0u32;
    for cue in cues {
        let mut text = one_line(cue.text);
        while text.contains("-->") {
            text = text.replace("-->", "->");
        }
        if text.is_empty() {
            continue;
        }
        number += 1;
        let (start, end) = span(cue);
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "{number}\n{} --> {}\n{text}\n\n",
            timestamp(start, ','),
            timestamp(end, ',')
        );
    }
    out
}

/// WebVTT: the `WEBVTT` header and a blank line, then cues `HH:MM:SS.mmm --> HH:MM:SS.mmm`
/// without identifiers, each followed by a blank line.
///
/// A cue whose text is empty is left out. The text is put on one line and `&`, `<` and `>` are
/// escaped as `&amp;`, `&lt;` and `&gt;` (WebVTT cue text is markup; the escaping also rules out
/// `-->` in the text).
pub(crate) fn vtt(cues: &[Cue<'_>]) -> String {
    let mut out = String::from("WEBVTT\n\n");
    for cue in cues {
        let text = one_line(cue.text)
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        if text.is_empty() {
            continue;
        }
        let (start, end) = span(cue);
        let _ = write!(
            out,
            "{} --> {}\n{text}\n\n",
            timestamp(start, '.'),
            timestamp(end, '.')
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_zero_padded_and_rounded() {
        assert_eq!(timestamp(millis(0.0), ','), "00:00:00,000");
        assert_eq!(timestamp(millis(1.0005), ','), "00:00:01,001");
        assert_eq!(timestamp(millis(1.0004), '.'), "00:00:01.000");
        assert_eq!(timestamp(millis(61.25), ','), "00:01:01,250");
        assert_eq!(timestamp(millis(3_723.456), '.'), "01:02:03.456");
        assert_eq!(timestamp(millis(-3.0), ','), "00:00:00,000");
        assert_eq!(timestamp(millis(f64::NAN), ','), "00:00:00,000");
        assert_eq!(timestamp(millis(59.9999), ','), "00:01:00,000");
    }

    #[test]
    fn cue_text_is_one_line_without_an_arrow() {
        let cues = [Cue {
            start: 2.0,
            end: 1.0,
            text: "a\n\nb  --->c\r\n",
        }];
        assert_eq!(srt(&cues), "1\n00:00:02,000 --> 00:00:02,000\na b ->c\n\n");
        assert_eq!(
            vtt(&cues),
            "WEBVTT\n\n00:00:02.000 --> 00:00:02.000\na b ---&gt;c\n\n"
        );
    }

    #[test]
    fn empty_cues_are_left_out_and_numbering_stays_dense() {
        let cues = [
            Cue {
                start: 0.0,
                end: 1.0,
                text: " \n ",
            },
            Cue {
                start: 1.0,
                end: 2.0,
                text: "x",
            },
        ];
        assert_eq!(srt(&cues), "1\n00:00:01,000 --> 00:00:02,000\nx\n\n");
        assert_eq!(vtt(&[]), "WEBVTT\n\n");
    }
}
