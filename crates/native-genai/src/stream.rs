//! The non-SSE form of `streamGenerateContent` (wire-formats §6.3): without `alt=sse` the answer
//! is one JSON array, streamed element by element — `[{…}\r\n,\r\n{…}]` — and an error in this
//! mode arrives wrapped in an array too (`[{"error": {…}}]`).
//!
//! [`ArrayDecoder`] reads such a body incrementally: push the bytes as they arrive, in any splits,
//! and pop each element as soon as its closing byte is in. It tracks strings (with escapes) so
//! that brackets and quotes inside text do not confuse it, and refuses anything that is not a
//! JSON array of JSON values. [`ArrayEncoder`] (or [`array_open`], [`array_separator`],
//! [`array_close`]) writes one.
//!
//! With `alt=sse` the chunks are SSE events instead; that framing is `tollgate-sse`'s.

use std::collections::VecDeque;

use serde_json::Value;

use crate::error::GoogleError;
use crate::response::GenerateContentResponse;

/// What opens the array: `[`.
pub const ARRAY_OPEN: &[u8] = b"[";
/// What the vendor writes between two elements: `\r\n,\r\n`.
pub const ARRAY_SEPARATOR: &[u8] = b"\r\n,\r\n";
/// What closes the array: `]`.
pub const ARRAY_CLOSE: &[u8] = b"]";

/// [`ARRAY_OPEN`].
pub const fn array_open() -> &'static [u8] {
    ARRAY_OPEN
}

/// [`ARRAY_SEPARATOR`].
pub const fn array_separator() -> &'static [u8] {
    ARRAY_SEPARATOR
}

/// [`ARRAY_CLOSE`].
pub const fn array_close() -> &'static [u8] {
    ARRAY_CLOSE
}

/// Why a streamed array could not be read. Offsets count bytes from the start of the stream.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArrayError {
    /// A byte that has no place there (no `[` at the start, a missing `,`, a trailing comma,
    /// anything after the closing `]`).
    #[error("unexpected byte {byte:#04x} at offset {offset} of the streamed array")]
    Unexpected {
        /// The byte.
        byte: u8,
        /// Its offset.
        offset: u64,
    },
    /// An element is not valid JSON, or not the expected type.
    #[error("element at offset {offset} of the streamed array is not valid: {message}")]
    Element {
        /// The offset of the element's first byte.
        offset: u64,
        /// What the JSON parser said.
        message: String,
    },
    /// The input ended before the closing `]`.
    #[error("the streamed array ended before its closing ']'")]
    Incomplete,
    /// An element is the vendor's error body (`{"error": {...}}`).
    #[error("the upstream sent an error: {} {}", .0.error.status, .0.error.message)]
    Upstream(GoogleError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the `[`.
    Start,
    /// After the `[`: an element or `]`.
    First,
    /// After a `,`: an element.
    Next,
    /// Inside an element.
    Element,
    /// After an element: `,` or `]`.
    After,
    /// After the `]`: only whitespace.
    Done,
    /// An error was reported; nothing more is read.
    Failed,
}

/// Reads a streamed JSON array element by element.
///
/// ```
/// use tollgate_native_genai::stream::ArrayDecoder;
///
/// let mut decoder = ArrayDecoder::new();
/// // Split inside a string, between an escaping backslash and the quote it escapes.
/// decoder.push(br#"[{"candidates": [{"content": {"parts": [{"text": "a ]} \"#);
/// assert_eq!(decoder.next_response()?, None); // the first element is not complete yet
/// decoder.push(br#""b"}]}}]}"#);
/// decoder.push(b"\r\n,\r\n{\"usageMetadata\": {\"promptTokenCount\": 3}}]");
/// let first = decoder.next_response()?.ok_or("missing")?;
/// assert_eq!(first.text(), "a ]} \"b");
/// let second = decoder.next_response()?.ok_or("missing")?;
/// assert_eq!(second.usage_metadata.map(|u| u.input_tokens()), Some(3));
/// assert_eq!(decoder.next_response()?, None);
/// decoder.finish()?; // the array was closed
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ArrayDecoder {
    buf: Vec<u8>,
    /// The next byte of `buf` to scan.
    pos: usize,
    /// Bytes dropped from the front of `buf` so far.
    dropped: u64,
    state: State,
    /// Where the current element starts in `buf`.
    start: usize,
    depth: u32,
    in_string: bool,
    escape: bool,
    scalar: bool,
    /// Elements complete but not popped yet, with their offsets.
    ready: VecDeque<(u64, Value)>,
    /// The offset of the element popped last.
    last_offset: u64,
    error: Option<ArrayError>,
}

impl Default for ArrayDecoder {
    fn default() -> Self {
        Self::new()
    }
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

impl ArrayDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            dropped: 0,
            state: State::Start,
            start: 0,
            depth: 0,
            in_string: false,
            escape: false,
            scalar: false,
            ready: VecDeque::new(),
            last_offset: 0,
            error: None,
        }
    }

    /// Adds the next bytes of the stream (any split, down to one byte at a time).
    pub fn push(&mut self, bytes: &[u8]) {
        if self.state != State::Failed {
            self.buf.extend_from_slice(bytes);
        }
    }

    /// The next complete element as JSON, `None` when the bytes pushed so far hold no further
    /// complete element. An error is final: every later call returns it again.
    pub fn next_value(&mut self) -> Result<Option<Value>, ArrayError> {
        let next = match self.ready.pop_front() {
            Some(ready) => Some(ready),
            None => self.next_scanned()?,
        };
        Ok(next.map(|(offset, value)| {
            self.last_offset = offset;
            value
        }))
    }

    /// The next complete element as a [`GenerateContentResponse`]. An element that is the
    /// vendor's error body is [`ArrayError::Upstream`]; one that is not a response is
    /// [`ArrayError::Element`].
    pub fn next_response(&mut self) -> Result<Option<GenerateContentResponse>, ArrayError> {
        let Some(value) = self.next_value()? else {
            return Ok(None);
        };
        if let Some(error) = GoogleError::from_value(value.clone()) {
            return Err(self.fail(ArrayError::Upstream(error)));
        }
        match serde_json::from_value(value) {
            Ok(response) => Ok(Some(response)),
            Err(e) => Err(self.fail(ArrayError::Element {
                offset: self.last_offset,
                message: e.to_string(),
            })),
        }
    }

    /// Whether the closing `]` has been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// To be called when the input has ended: `Ok` when the array was closed (elements not yet
    /// popped stay available), [`ArrayError::Incomplete`] when it was not.
    pub fn finish(&mut self) -> Result<(), ArrayError> {
        // Scan what is buffered, keeping complete elements for later pops.
        while let Some(ready) = self.next_scanned()? {
            self.ready.push_back(ready);
        }
        match self.state {
            State::Done => Ok(()),
            _ => Err(self.error.clone().unwrap_or(ArrayError::Incomplete)),
        }
    }

    /// Decodes a whole array body at once.
    ///
    /// ```
    /// use tollgate_native_genai::stream::{ArrayDecoder, ArrayError};
    ///
    /// assert_eq!(ArrayDecoder::decode_all(b"[1, \"two\", {\"three\": [3]}]")?.len(), 3);
    /// assert_eq!(ArrayDecoder::decode_all(b"[1, 2"), Err(ArrayError::Incomplete));
    /// # Ok::<(), ArrayError>(())
    /// ```
    pub fn decode_all(body: &[u8]) -> Result<Vec<Value>, ArrayError> {
        let mut decoder = Self::new();
        decoder.push(body);
        decoder.finish()?;
        Ok(decoder.ready.into_iter().map(|(_, value)| value).collect())
    }

    /// The next element scanned from the buffer, with its offset.
    fn next_scanned(&mut self) -> Result<Option<(u64, Value)>, ArrayError> {
        if let Some(err) = &self.error {
            return Err(err.clone());
        }
        match self.scan() {
            Ok(value) => Ok(value),
            Err(err) => Err(self.fail(err)),
        }
    }

    fn fail(&mut self, err: ArrayError) -> ArrayError {
        self.state = State::Failed;
        self.buf = Vec::new();
        self.ready.clear();
        self.error = Some(err.clone());
        err
    }

    fn unexpected(&self, at: usize) -> ArrayError {
        ArrayError::Unexpected {
            byte: self.buf.get(at).copied().unwrap_or(0),
            offset: self.dropped + at as u64,
        }
    }

    /// Drops the scanned bytes that no element needs any more.
    fn compact(&mut self) {
        let keep_from = if self.state == State::Element {
            self.start
        } else {
            self.pos
        };
        if keep_from > 0 {
            self.buf.drain(..keep_from);
            self.dropped += keep_from as u64;
            self.pos -= keep_from;
            self.start -= keep_from.min(self.start);
        }
    }

    fn scan(&mut self) -> Result<Option<(u64, Value)>, ArrayError> {
        let found = self.scan_inner();
        self.compact();
        found
    }

    fn scan_inner(&mut self) -> Result<Option<(u64, Value)>, ArrayError> {
        while self.pos < self.buf.len() {
            let at = self.pos;
            let byte = self.buf[at];
            match self.state {
                State::Failed => return Ok(None),
                State::Start => {
                    if byte == b'[' {
                        self.state = State::First;
                    } else if !is_space(byte) {
                        return Err(self.unexpected(at));
                    }
                }
                State::First | State::Next => {
                    if is_space(byte) {
                    } else if byte == b']' && self.state == State::First {
                        self.state = State::Done;
                    } else {
                        self.begin_element(at)?;
                        if self.scalar {
                            // A scalar's first byte is scanned again as part of its run.
                            continue;
                        }
                    }
                }
                State::Element => {
                    if let Some(end) = self.element_byte(at, byte) {
                        self.pos = end;
                        self.state = State::After;
                        return self.parse(end).map(Some);
                    }
                }
                State::After => {
                    if byte == b',' {
                        self.state = State::Next;
                    } else if byte == b']' {
                        self.state = State::Done;
                    } else if !is_space(byte) {
                        return Err(self.unexpected(at));
                    }
                }
                State::Done => {
                    if !is_space(byte) {
                        return Err(self.unexpected(at));
                    }
                }
            }
            self.pos += 1;
        }
        Ok(None)
    }

    fn begin_element(&mut self, at: usize) -> Result<(), ArrayError> {
        let byte = self.buf[at];
        self.start = at;
        self.depth = 0;
        self.in_string = false;
        self.escape = false;
        self.scalar = false;
        match byte {
            b'{' | b'[' => self.depth = 1,
            b'"' => self.in_string = true,
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => self.scalar = true,
            _ => return Err(self.unexpected(at)),
        }
        self.state = State::Element;
        Ok(())
    }

    /// Scans one byte of the current element; `Some(end)` (exclusive) when the element ended.
    fn element_byte(&mut self, at: usize, byte: u8) -> Option<usize> {
        if self.scalar {
            return match byte {
                b',' | b']' | b'}' | b'[' | b'{' | b'"' => Some(at),
                _ if is_space(byte) => Some(at),
                _ => None,
            };
        }
        if self.in_string {
            if self.escape {
                self.escape = false;
            } else if byte == b'\\' {
                self.escape = true;
            } else if byte == b'"' {
                self.in_string = false;
                if self.depth == 0 {
                    return Some(at + 1);
                }
            }
            return None;
        }
        match byte {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        None
    }

    fn parse(&self, end: usize) -> Result<(u64, Value), ArrayError> {
        let offset = self.dropped + self.start as u64;
        serde_json::from_slice(&self.buf[self.start..end])
            .map(|value| (offset, value))
            .map_err(|e| ArrayError::Element {
                offset,
                message: e.to_string(),
            })
    }
}

/// Writes a streamed array: `[`, the elements with [`ARRAY_SEPARATOR`] between them, `]`.
///
/// ```
/// use tollgate_native_genai::stream::{ArrayDecoder, ArrayEncoder};
///
/// let mut encoder = ArrayEncoder::new();
/// let mut body = encoder.element(br#"{"a":1}"#);
/// body.extend(encoder.element(br#"{"b":2}"#));
/// body.extend(encoder.close());
/// assert_eq!(body, b"[{\"a\":1}\r\n,\r\n{\"b\":2}]");
/// assert_eq!(ArrayDecoder::decode_all(&body)?.len(), 2);
/// assert_eq!(ArrayEncoder::new().close(), b"[]");
/// # Ok::<(), tollgate_native_genai::stream::ArrayError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct ArrayEncoder {
    opened: bool,
}

impl ArrayEncoder {
    /// An encoder before the first element.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes that put `json` (one complete JSON value) into the array: preceded by `[` for the
    /// first element and by the separator for the others.
    pub fn element(&mut self, json: &[u8]) -> Vec<u8> {
        let lead = if self.opened {
            ARRAY_SEPARATOR
        } else {
            ARRAY_OPEN
        };
        self.opened = true;
        let mut out = Vec::with_capacity(lead.len() + json.len());
        out.extend_from_slice(lead);
        out.extend_from_slice(json);
        out
    }

    /// The bytes that close the array (`[]` when it had no element).
    pub fn close(&mut self) -> Vec<u8> {
        let out = if self.opened {
            ARRAY_CLOSE.to_vec()
        } else {
            [ARRAY_OPEN, ARRAY_CLOSE].concat()
        };
        self.opened = true;
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const BODY: &str = "[{\n  \"candidates\": [{\"content\": {\"role\": \"model\", \"parts\": [{\"text\": \"brackets ]}[{ and \\\"quotes\\\" and \\\\\"}]}, \"index\": 0}],\n  \"modelVersion\": \"gen-2.5-flash\"\n}\r\n,\r\n{\"candidates\": [{\"content\": {\"role\": \"model\", \"parts\": [{\"text\": \"caf\\u00e9 ☕ \\\\\"}]}, \"finishReason\": \"STOP\", \"index\": 0}], \"usageMetadata\": {\"promptTokenCount\": 5, \"candidatesTokenCount\": 7, \"thoughtsTokenCount\": 11, \"totalTokenCount\": 23}}\r\n,\r\n[1, \"]\", {\"x\": null}]\r\n,\r\n-12.5e3\r\n,\r\ntrue\r\n,\r\n\"a \\\"string\\\" ]\"\n]\r\n";

    fn all_at_once() -> Vec<Value> {
        ArrayDecoder::decode_all(BODY.as_bytes()).unwrap()
    }

    fn drain(decoder: &mut ArrayDecoder, out: &mut Vec<Value>) {
        while let Some(value) = decoder.next_value().unwrap() {
            out.push(value);
        }
    }

    #[test]
    fn reads_every_kind_of_element() {
        let values = all_at_once();
        assert_eq!(values.len(), 6);
        assert_eq!(
            values[0]["candidates"][0]["content"]["parts"][0]["text"],
            "brackets ]}[{ and \"quotes\" and \\"
        );
        assert_eq!(
            values[1]["candidates"][0]["content"]["parts"][0]["text"],
            "café ☕ \\"
        );
        assert_eq!(values[2], json!([1, "]", {"x": null}]));
        assert_eq!(values[3], json!(-12.5e3));
        assert_eq!(values[4], json!(true));
        assert_eq!(values[5], json!("a \"string\" ]"));
    }

    #[test]
    fn every_split_decodes_identically() {
        let whole = all_at_once();
        let bytes = BODY.as_bytes();
        for split in 0..=bytes.len() {
            let mut decoder = ArrayDecoder::new();
            let mut out = Vec::new();
            decoder.push(&bytes[..split]);
            drain(&mut decoder, &mut out);
            decoder.push(&bytes[split..]);
            drain(&mut decoder, &mut out);
            decoder.finish().unwrap();
            drain(&mut decoder, &mut out);
            assert_eq!(out, whole, "split at {split}");
        }
    }

    #[test]
    fn byte_by_byte_and_three_way_splits() {
        let whole = all_at_once();
        let bytes = BODY.as_bytes();
        let mut decoder = ArrayDecoder::new();
        let mut out = Vec::new();
        for byte in bytes {
            decoder.push(std::slice::from_ref(byte));
            drain(&mut decoder, &mut out);
        }
        assert!(decoder.is_done());
        assert_eq!(out, whole);
        for a in (0..bytes.len()).step_by(7) {
            for b in (a..=bytes.len()).step_by(5) {
                let mut decoder = ArrayDecoder::new();
                let mut out = Vec::new();
                for piece in [&bytes[..a], &bytes[a..b], &bytes[b..]] {
                    decoder.push(piece);
                    drain(&mut decoder, &mut out);
                }
                assert_eq!(out, whole, "splits at {a}, {b}");
            }
        }
    }

    #[test]
    fn responses_and_wrapped_errors() {
        let mut decoder = ArrayDecoder::new();
        decoder.push(BODY.split("\r\n,\r\n[1").next().unwrap().as_bytes());
        let first = decoder.next_response().unwrap().unwrap();
        assert_eq!(first.model_version.as_deref(), Some("gen-2.5-flash"));
        let second = decoder.next_response().unwrap().unwrap();
        assert_eq!(second.usage_metadata.unwrap().output_tokens(), 18);

        let mut decoder = ArrayDecoder::new();
        decoder.push(br#"[{"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}]"#);
        match decoder.next_response() {
            Err(ArrayError::Upstream(e)) => assert_eq!(e.error.code, 429),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decoder.next_response(),
            Err(ArrayError::Upstream(_))
        ));

        let mut decoder = ArrayDecoder::new();
        decoder.push(br#"[{"candidates": 5}]"#);
        assert!(matches!(
            decoder.next_response(),
            Err(ArrayError::Element { offset: 1, .. })
        ));
    }

    #[test]
    fn empty_array() {
        assert!(
            ArrayDecoder::decode_all(b"  [ \r\n ] \r\n")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn malformed_input_is_refused() {
        let cases: [(&[u8], ArrayError); 8] = [
            (
                b"{\"a\":1}",
                ArrayError::Unexpected {
                    byte: b'{',
                    offset: 0,
                },
            ),
            (
                b"[{\"a\":1} {\"b\":2}]",
                ArrayError::Unexpected {
                    byte: b'{',
                    offset: 9,
                },
            ),
            (
                b"[{\"a\":1},]",
                ArrayError::Unexpected {
                    byte: b']',
                    offset: 9,
                },
            ),
            (
                b"[,1]",
                ArrayError::Unexpected {
                    byte: b',',
                    offset: 1,
                },
            ),
            (
                b"[1] x",
                ArrayError::Unexpected {
                    byte: b'x',
                    offset: 4,
                },
            ),
            (
                b"[}]",
                ArrayError::Unexpected {
                    byte: b'}',
                    offset: 1,
                },
            ),
            (b"[{\"a\":1}", ArrayError::Incomplete),
            (b"", ArrayError::Incomplete),
        ];
        for (body, expected) in cases {
            assert_eq!(
                ArrayDecoder::decode_all(body),
                Err(expected),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        for body in [&b"[{\"a\" 1}]"[..], b"[tru]", b"[01]", b"[{\"a\":1}}]"] {
            let result = ArrayDecoder::decode_all(body);
            assert!(result.is_err(), "{}", String::from_utf8_lossy(body));
        }
        let mut decoder = ArrayDecoder::new();
        decoder.push(b"[{\"a\" 1}");
        let err = decoder.next_value().unwrap_err();
        assert!(
            matches!(err, ArrayError::Element { offset: 1, .. }),
            "{err:?}"
        );
        decoder.push(b",{}]");
        assert_eq!(decoder.next_value().unwrap_err(), err);
    }

    #[test]
    fn buffer_does_not_grow_with_the_stream() {
        let mut decoder = ArrayDecoder::new();
        decoder.push(b"[");
        for i in 0..1000 {
            let element = format!("{{\"i\": {i}, \"pad\": \"{}\"}}\r\n,\r\n", "x".repeat(100));
            decoder.push(element.as_bytes());
            assert_eq!(
                decoder.next_value().unwrap(),
                Some(json!({"i": i, "pad": "x".repeat(100)}))
            );
            assert!(decoder.buf.len() < 16, "{}", decoder.buf.len());
        }
    }
}
