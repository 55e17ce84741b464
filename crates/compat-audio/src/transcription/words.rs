//! Word timestamps from sentence timestamps.

use super::timing::{Segment, Word};

/// Splits a segment's text into words and spreads the segment's time over them.
///
/// docs/api.md §2.2: word granularity gives per-character timestamps for Chinese and per-word
/// timestamps for English. The gateway uses this when the upstream gives only sentence-level
/// timestamps.
///
/// - **Words** are the runs between whitespace, with punctuation trimmed from both ends
///   (`"Hello,"` → `"Hello"`, `"don't"` stays). A run of punctuation alone is no word.
/// - **CJK characters** (Han ideographs, hiragana, katakana) are each a word of their own, also
///   inside a run (`"用API调用"` → `用`, `API`, `调`, `用`). Hangul is written with spaces and
///   splits into words like Latin script.
/// - **Punctuation** is ASCII sentence punctuation (`!"'(),-.:;?[]{}`), general punctuation
///   (U+2010–U+205E: dashes, quotes, `…`), CJK punctuation (U+3000–U+303F) and full-width
///   punctuation; `#$%&*+/<=>@\^_|~` are kept, so `"100%"` stays whole.
/// - **Time** is shared in proportion to each word's length in characters: word *i* runs from
///   `start + span × (characters before it) / (all characters)` to the same for the characters
///   up to its end. The first word starts at `start` and the last ends at `end`, exactly; each
///   word ends where the next starts, so the times never decrease.
///
/// An `end` before `start` (or not a number) is taken as `start`. A text without words gives no
/// words.
///
/// ```
/// use tollgate_compat_audio::transcription::split_words;
///
/// let words = split_words("Hi, all!", 1.0, 2.0);
/// let spans: Vec<(&str, f64, f64)> =
///     words.iter().map(|w| (w.word.as_str(), w.start, w.end)).collect();
/// assert_eq!(spans, [("Hi", 1.0, 1.4), ("all", 1.4, 2.0)]);
///
/// let words = split_words("你好。", 0.0, 1.0);
/// assert_eq!(words.iter().map(|w| w.word.as_str()).collect::<Vec<_>>(), ["你", "好"]);
/// assert_eq!((words[1].start, words[1].end), (0.5, 1.0));
/// ```
pub fn split_words(text: &str, start: f64, end: f64) -> Vec<Word> {
    let tokens = tokens(text);
    let total: usize = tokens.iter().map(|t| t.chars().count()).sum();
    if total == 0 {
        return Vec::new();
    }
    let end = if end >= start { end } else { start };
    let span = end - start;
    // Precision loss is harmless: character counts are far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let at = |chars: usize| {
        if chars >= total {
            end
        } else {
            start + span * (chars as f64 / total as f64)
        }
    };
    let mut words = Vec::with_capacity(tokens.len());
    let mut before = 0;
    for token in tokens {
        let after = before + token.chars().count();
        words.push(Word {
            word: token.to_owned(),
            start: at(before),
            end: at(after),
        });
        before = after;
    }
    words
}

/// The words of every segment, in order: [`split_words`] applied to each segment's text and
/// times.
///
/// ```
/// use tollgate_compat_audio::transcription::{words_from_segments, Segment};
///
/// let segments = [
///     Segment::new(0, 0.0, 1.0, "Hello there."),
///     Segment::new(1, 1.5, 2.0, "Bye."),
/// ];
/// let words = words_from_segments(&segments);
/// assert_eq!(words.iter().map(|w| w.word.as_str()).collect::<Vec<_>>(), ["Hello", "there", "Bye"]);
/// assert_eq!((words[2].start, words[2].end), (1.5, 2.0));
/// ```
pub fn words_from_segments(segments: &[Segment]) -> Vec<Word> {
    segments
        .iter()
        .flat_map(|s| split_words(&s.text, s.start, s.end))
        .collect()
}

/// The words of `text`, as slices of it.
fn tokens(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut run_start = None;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            push_run(&mut tokens, text, run_start.take(), i);
        } else if is_cjk(c) {
            push_run(&mut tokens, text, run_start.take(), i);
            if let Some(character) = text.get(i..i + c.len_utf8()) {
                tokens.push(character);
            }
        } else if run_start.is_none() {
            run_start = Some(i);
        }
    }
    push_run(&mut tokens, text, run_start, text.len());
    tokens
}

/// Adds the run `text[from..to]`, trimmed of punctuation, unless nothing is left of it.
fn push_run<'a>(tokens: &mut Vec<&'a str>, text: &'a str, from: Option<usize>, to: usize) {
    if let Some(word) = from
        .and_then(|from| text.get(from..to))
        .map(|run| run.trim_matches(is_punctuation))
        .filter(|word| !word.is_empty())
    {
        tokens.push(word);
    }
}

/// Han ideographs, hiragana and katakana: scripts written without spaces, where every
/// character gets its own timestamp.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{309F}'   // Hiragana
        | '\u{30A0}'..='\u{30FF}' // Katakana
        | '\u{31F0}'..='\u{31FF}' // Katakana phonetic extensions
        | '\u{3400}'..='\u{4DBF}' // CJK unified ideographs extension A
        | '\u{4E00}'..='\u{9FFF}' // CJK unified ideographs
        | '\u{F900}'..='\u{FAFF}' // CJK compatibility ideographs
        | '\u{FF66}'..='\u{FF9F}' // Half-width katakana
        | '\u{20000}'..='\u{3134F}' // Extensions B to G
    ) && c != '\u{30FB}' // the katakana middle dot is punctuation
}

/// Punctuation trimmed from the ends of a word (see [`split_words`]).
fn is_punctuation(c: char) -> bool {
    if c.is_alphanumeric() {
        return false;
    }
    matches!(c,
        '!' | '"' | '\'' | '(' | ')' | ',' | '-' | '.' | ':' | ';' | '?' | '[' | ']' | '{' | '}'
        | '¡' | '¿' | '«' | '»' | '·'
        | '\u{2010}'..='\u{205E}' // General punctuation
        | '\u{3000}'..='\u{303F}' // CJK symbols and punctuation
        | '\u{30FB}'              // Katakana middle dot
        | '\u{FF01}'..='\u{FF0F}' // Full-width ! to /
        | '\u{FF1A}'..='\u{FF20}' // Full-width : to @
        | '\u{FF3B}'..='\u{FF40}' // Full-width [ to `
        | '\u{FF5B}'..='\u{FF65}' // Full-width { to the half-width middle dot
    )
}
