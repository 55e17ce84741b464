//! Vectors lifted out of an answer before its envelope is parsed (docs/decisions.md,
//! "Embeddings passed through").
//!
//! A JSON parser that only needs to know where a vector ends still reads every byte of it a
//! character at a time: serde_json's scan was a third of a float request's instructions, and
//! its scan of a base64 string (with the UTF-8 check of the borrowed text) a twelfth of a base64
//! request's (`docs/benchmarks.md`, "Instructions per request"). Here one pass over the answer
//! finds each vector at an `"embedding"` key of a `data` item (the objects at depth 3): an array
//! is checked against JSON's number grammar a number at a time, its digits eight bytes at a
//! step, counting its values as it goes; a string is found whole by `memchr` when it holds no
//! escape (base64 never does; its alphabet is checked when it is read). The vector's text is kept
//! where it is and, in a copy of the answer without the vectors (the envelope, a few hundred
//! bytes), replaced by its position in [`Lifted::vectors`]. The envelope is then parsed as usual.
//!
//! Nothing the upstream writes can pass for a lifted vector: an answer with a number already at
//! such a key is not lifted at all (read whole, where a number is no vector). A vector the
//! automaton refuses (a string inside an array, a nested array, a string with an escape) is left
//! in the envelope for the parser and the ordinary check.

/// An answer with its vectors lifted out.
#[derive(Debug)]
pub(crate) struct Lifted<'a> {
    /// The answer with each lifted vector replaced by its position in `vectors`.
    pub envelope: Vec<u8>,
    /// Each lifted vector, its text in the answer.
    pub vectors: Vec<LiftedVector<'a>>,
}

/// A vector as it was lifted out of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LiftedVector<'a> {
    /// An array of numbers, checked, and its number of values.
    Numbers(&'a str, usize),
    /// A string with no escape in it, its quotes included; not yet checked as base64.
    Text(&'a str),
}

/// Lifts the vectors out of `body`; `None` when there is none to lift, or when the answer holds
/// a number where a vector belongs (it is then read whole).
pub(crate) fn lift(body: &[u8]) -> Option<Lifted<'_>> {
    let mut envelope = Vec::new();
    let mut vectors = Vec::new();
    let (mut depth, mut copied, mut at) = (0usize, 0usize, 0usize);
    while let Some(&byte) = body.get(at) {
        match byte {
            b'"' => {
                let (end, _) = string_end(body, at + 1)?;
                if depth == 3 && &body[at + 1..end] == b"embedding" {
                    let colon = skip_white_space(body, end + 1);
                    if body.get(colon) == Some(&b':') {
                        let value = skip_white_space(body, colon + 1);
                        let found = match body.get(value) {
                            Some(b'[') => {
                                number_array(body, value).map(|(close, count)| (close, Some(count)))
                            }
                            Some(b'"') => string_end(body, value + 1)
                                .filter(|&(close, escaped)| {
                                    !escaped && no_control_character(&body[value + 1..close])
                                })
                                .map(|(close, _)| (close, None)),
                            Some(b'-' | b'0'..=b'9') => return None,
                            _ => None,
                        };
                        // Only a value that ends there: what follows a lifted vector must
                        // be what follows a value in an object, or its position number would
                        // run into the next bytes (`"…"9999` read as the number `19999`) and
                        // the envelope would parse where the body does not.
                        let found = found.filter(|&(close, _)| {
                            matches!(
                                body.get(skip_white_space(body, close + 1)),
                                Some(b',' | b'}')
                            )
                        });
                        if let Some((close, count)) = found {
                            let json = std::str::from_utf8(&body[value..=close]).ok()?;
                            envelope.extend_from_slice(&body[copied..value]);
                            envelope.extend_from_slice(vectors.len().to_string().as_bytes());
                            vectors.push(match count {
                                Some(count) => LiftedVector::Numbers(json, count),
                                None => LiftedVector::Text(json),
                            });
                            copied = close + 1;
                            at = close + 1;
                            continue;
                        }
                    }
                }
                at = end + 1;
            }
            b'{' | b'[' => {
                depth += 1;
                at += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                at += 1;
            }
            _ => at += 1,
        }
    }
    if vectors.is_empty() {
        return None;
    }
    envelope.extend_from_slice(&body[copied..]);
    Some(Lifted { envelope, vectors })
}

/// The position of the quote that ends the string whose text starts at `from`, and whether an
/// escape came before it: `memchr2` to the next quote or backslash, many bytes at a step (a
/// base64 vector is 8 KB), stepping over each escaped character.
fn string_end(body: &[u8], from: usize) -> Option<(usize, bool)> {
    let (mut at, mut escaped) = (from, false);
    loop {
        at += memchr::memchr2(b'"', b'\\', body.get(at..)?)?;
        if body.get(at) == Some(&b'"') {
            return Some((at, escaped));
        }
        escaped = true;
        at += 2;
    }
}

/// Whether `text` holds no control character (JSON allows none in a string: such a string is
/// left to the parser, whose refusal is the answer's). Branch-free, so the compiler vectorizes
/// it.
fn no_control_character(text: &[u8]) -> bool {
    text.iter()
        .fold(true, |clean, &byte| clean & (byte >= 0x20))
}

/// The first position from `from` that is not JSON white space.
fn skip_white_space(body: &[u8], from: usize) -> usize {
    from + body.get(from..).map_or(0, |rest| {
        rest.iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            .count()
    })
}

/// The array of numbers opening at `open` (a `[`): the position of its `]` and its number of
/// values; `None` when it is not a well-formed array of JSON numbers — each
/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, separated by commas, white space
/// around them. Read a number at a time, its runs of digits eight bytes at a step
/// ([`digits`]): a vector is mostly digits.
pub(crate) fn number_array(body: &[u8], open: usize) -> Option<(usize, usize)> {
    let mut at = skip_white_space(body, open + 1);
    if *body.get(at)? == b']' {
        return Some((at, 0));
    }
    let mut count = 0;
    loop {
        at = skip_white_space(body, at);
        // The integer part: `0`, or a digit 1–9 and any digits; a sign before it.
        if body.get(at) == Some(&b'-') {
            at += 1;
        }
        match *body.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => at += 1 + digits(body, at + 1),
            _ => return None,
        }
        // A fraction: a point and at least one digit.
        if body.get(at) == Some(&b'.') {
            let run = digits(body, at + 1);
            if run == 0 {
                return None;
            }
            at += 1 + run;
        }
        // An exponent: `e` or `E`, a sign, at least one digit.
        if matches!(body.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(body.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            let run = digits(body, at);
            if run == 0 {
                return None;
            }
            at += run;
        }
        count += 1;
        at = skip_white_space(body, at);
        match *body.get(at)? {
            b',' => at += 1,
            b']' => return Some((at, count)),
            _ => return None,
        }
    }
}

/// The number of ASCII digits at `from`, eight bytes at a step: for each byte `b`, `b ^ 0x30`
/// is below 10 exactly for a digit, so adding `0x76` sets its high bit exactly for a
/// non-digit (or the byte had it already); the lowest such byte ends the run. A carry out of a
/// non-digit byte can only mark bytes above it, which come after the run's end anyway.
fn digits(body: &[u8], from: usize) -> usize {
    const LANES: u64 = 0x0101_0101_0101_0101;
    let mut run = 0;
    while let Some(word) = body.get(from + run..from + run + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let word = u64::from_le_bytes(bytes) ^ (0x30 * LANES);
        let stops = (word.wrapping_add(0x76 * LANES) | word) & (0x80 * LANES);
        if stops != 0 {
            return run + (stops.trailing_zeros() / 8) as usize;
        }
        run += 8;
    }
    run + body.get(from + run..).map_or(0, |rest| {
        rest.iter().take_while(|b| b.is_ascii_digit()).count()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn array(text: &str) -> Option<usize> {
        number_array(text.as_bytes(), 0).map(|(close, count)| {
            assert_eq!(close, text.len() - 1, "{text}");
            count
        })
    }

    /// Found by `fuzz/fuzz_targets/upstream_answers.rs` (its input is kept in
    /// fuzz/corpus/upstream_answers): a vector followed by digits. Lifted, its position number
    /// ran into them (`"…"9999` became `19999`) and the answer parsed where the body does not.
    #[test]
    fn a_vector_run_into_what_follows_it_is_not_lifted() {
        for body in [
            r#"{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":"AACAPw=="9999}]}"#,
            r#"{"data":[{"index":0,"embedding":[1,2]9},{"index":1,"embedding":"AACAPw=="}]}"#,
        ] {
            let lifted = lift(body.as_bytes());
            let envelope = lifted.map(|l| l.envelope).unwrap_or_default();
            assert!(
                serde_json::from_slice::<serde_json::Value>(&envelope).is_err(),
                "{body}: {}",
                String::from_utf8_lossy(&envelope)
            );
        }
        let fine =
            r#"{"data":[{"index":0,"embedding":[1,2] },{"index":1,"embedding":"AACAPw=="}]}"#;
        assert_eq!(lift(fine.as_bytes()).map(|l| l.vectors.len()), Some(2));
    }

    #[test]
    fn a_string_ends_at_its_first_unescaped_quote() {
        // The text after the opening quote: where the closing quote is, and whether an escape
        // came before it.
        for (text, end) in [
            (r#"""#, Some((0, false))),
            (r#"AACAPw==""#, Some((8, false))),
            (r#"a\"b""#, Some((4, true))),
            (r#"a\\""#, Some((3, true))),
            (r#"a\\\"""#, Some((5, true))),
            (r#"\/\/"x"#, Some((4, true))),
            ("no end", None),
            (r#"ends in \"#, None),
            (r#"ends in \""#, None),
        ] {
            assert_eq!(string_end(text.as_bytes(), 0), end, "{text}");
        }
        assert_eq!(string_end(br#"{"a":"b"}"#, 2), Some((3, false)));
        assert_eq!(string_end(b"x", 5), None, "past the end");
    }

    #[test]
    fn digit_runs_end_at_the_first_other_byte() {
        for text in [
            "",
            "7",
            "0123456789",
            "12345678x",
            "1234567",
            "123456789012345678.5",
            "9/",
            "9:",
        ] {
            let expected = text.bytes().take_while(u8::is_ascii_digit).count();
            assert_eq!(digits(text.as_bytes(), 0), expected, "{text}");
        }
        // Every byte after a run of every length.
        for length in 0..20 {
            for stop in 0..=255u8 {
                let mut text = vec![b'5'; length];
                text.push(stop);
                text.extend_from_slice(b"99999999");
                let expected = length + if stop.is_ascii_digit() { 9 } else { 0 };
                assert_eq!(digits(&text, 0), expected, "{length} then {stop}");
            }
        }
    }

    #[test]
    fn the_scanner_reads_json_numbers_and_nothing_else() {
        for (text, count) in [
            ("[]", Some(0)),
            ("[ \n]", Some(0)),
            ("[0]", Some(1)),
            ("[-0.5e-3, 1E+9 ,2]", Some(3)),
            ("[ 1 , 2 ]", Some(2)),
            ("[1.0,-0,0.25e10]", Some(3)),
            ("[01]", None),
            ("[1.]", None),
            ("[.5]", None),
            ("[+1]", None),
            ("[1e]", None),
            ("[1,]", None),
            ("[,1]", None),
            ("[1 2]", None),
            ("[--1]", None),
            ("[1,null]", None),
            ("[[1]]", None),
            ("[\"1\"]", None),
            ("[1", None),
        ] {
            assert_eq!(array(text), count, "{text}");
        }
    }

    #[test]
    fn only_the_vectors_of_data_items_are_lifted() {
        let body = br#"{"data":[{"index":0,"embedding":[0.5, 1]},{"embedding":"AACAPw==","index":1}],"usage":{"embedding":[1]},"model":"m"}"#;
        let lifted = lift(body).unwrap();
        assert_eq!(
            lifted.vectors,
            vec![
                LiftedVector::Numbers("[0.5, 1]", 2),
                LiftedVector::Text(r#""AACAPw==""#)
            ]
        );
        assert_eq!(
            String::from_utf8(lifted.envelope).unwrap(),
            r#"{"data":[{"index":0,"embedding":0},{"embedding":1,"index":1}],"usage":{"embedding":[1]},"model":"m"}"#
        );
        // A number where a vector belongs: read whole, so that it cannot pass for a lifted one.
        assert!(
            lift(br#"{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":0}]}"#).is_none()
        );
        // A string with an escape is left to the parser; an unterminated one too.
        assert!(lift(br#"{"data":[{"index":0,"embedding":"AAC\/Pw=="}]}"#).is_none());
        assert!(lift(br#"{"data":[{"index":0,"embedding":"AACAPw==}]}"#).is_none());
        // A control character in it (which JSON refuses), too: found by the fuzz target.
        assert!(lift(b"{\"data\":[{\"index\":0,\"embedding\":\"AACA\0Pw==\"}]}").is_none());
        assert!(lift(b"{\"data\":[{\"index\":0,\"embedding\":\"AACA\x1fPw==\"}]}").is_none());
        let lifted = lift(br#"{"data":[{"index":0,"embedding":"AAC\/Pw=="},{"index":1,"embedding" : "AACAPw=="}]}"#).unwrap();
        assert_eq!(lifted.vectors, vec![LiftedVector::Text(r#""AACAPw==""#)]);
        assert_eq!(
            String::from_utf8(lifted.envelope).unwrap(),
            r#"{"data":[{"index":0,"embedding":"AAC\/Pw=="},{"index":1,"embedding" : 0}]}"#
        );
        // Nothing to lift.
        assert!(lift(br#"{"data":[{"index":0,"embedding":null}]}"#).is_none());
        // A key inside a string is no key.
        assert!(lift(br#"{"data":[{"index":0,"x":"\"embedding\":[1]"}]}"#).is_none());
    }
}
