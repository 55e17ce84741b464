//! The incremental `text/event-stream` decoder.

use bytes::{Buf, Bytes, BytesMut};
use bytestring::ByteString;

use crate::Event;

/// The UTF-8 encoding of U+FEFF, which a stream may start with.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Incremental, sans-IO event-stream decoder: [`push`](Decoder::push) bytes as they arrive,
/// split anywhere, and take complete events out with [`next_event`](Decoder::next_event).
///
/// It implements the WHATWG parsing rules described in the [crate documentation](crate),
/// including a stream-leading byte order mark and CRLF pairs split between chunks.
///
/// ```
/// use tollgate_sse::{Decoder, Event};
///
/// let mut decoder = Decoder::new();
/// decoder.push(b"event: delta\ndata: {\"text\":");
/// assert_eq!(decoder.next_event(), None); // the block is not finished yet
///
/// decoder.push(b"\"hi\"}\n\ndata: [DONE]\n\n");
/// assert_eq!(
///     decoder.next_event(),
///     Some(Event::data(r#"{"text":"hi"}"#).with_event("delta"))
/// );
/// assert!(decoder.next_event().is_some_and(|event| event.is_done()));
/// assert_eq!(decoder.next_event(), None);
/// assert_eq!(decoder.finish(), None);
/// ```
#[derive(Debug, Default)]
pub struct Decoder {
    /// Input not yet split into lines. Lines are parsed lazily, by `next_event`.
    buf: BytesMut,
    /// Length of the prefix of `buf` already searched for a line end without finding one, so
    /// that a long line arriving in many small chunks is scanned once, not once per chunk.
    scanned: usize,
    /// Whether the start of the stream has been checked for a byte order mark.
    bom_checked: bool,
    /// The previous line ended with a CR that was the last buffered byte: if the next byte is
    /// an LF, it completes that CRLF rather than ending an empty line.
    skip_lf: bool,
    /// The fields of the block being read.
    pending: Pending,
}

/// The WHATWG "data buffer", "event type buffer", and this block's `id` and `retry`.
#[derive(Debug, Default)]
struct Pending {
    data: DataLines,
    event: String,
    id: Option<String>,
    retry: Option<u64>,
}

/// The block's `data:` lines so far. The usual block has one, and its value is kept as a slice
/// of the input — no copy — until the block is dispatched.
#[derive(Debug, Default)]
enum DataLines {
    /// No `data:` line: the block dispatches nothing.
    #[default]
    None,
    /// One line's value, as it arrived (UTF-8 not yet checked).
    One(Bytes),
    /// Two or more lines, each decoded and followed by `'\n'`.
    Many(String),
}

impl DataLines {
    fn push(&mut self, value: Bytes) {
        *self = match std::mem::take(self) {
            DataLines::None => DataLines::One(value),
            DataLines::One(first) => {
                let mut joined = String::from_utf8_lossy(&first).into_owned();
                joined.push('\n');
                joined.push_str(&String::from_utf8_lossy(&value));
                joined.push('\n');
                DataLines::Many(joined)
            }
            DataLines::Many(mut joined) => {
                joined.push_str(&String::from_utf8_lossy(&value));
                joined.push('\n');
                DataLines::Many(joined)
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            DataLines::None => 0,
            // Counted as the joined form holds it, with its line end.
            DataLines::One(value) => value.len() + 1,
            DataLines::Many(joined) => joined.len(),
        }
    }

    /// The event's data: the lines joined with `'\n'`, invalid UTF-8 replaced; `None` if the
    /// block had no `data:` line.
    fn joined(self) -> Option<ByteString> {
        match self {
            DataLines::None => None,
            DataLines::One(value) => Some(
                ByteString::try_from(value.clone())
                    .unwrap_or_else(|_| String::from_utf8_lossy(&value).into_owned().into()),
            ),
            DataLines::Many(mut joined) => {
                // Every line appended '\n'; the last one is not part of the payload.
                joined.pop();
                Some(joined.into())
            }
        }
    }
}

impl Decoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Appends a chunk of the stream.
    ///
    /// Chunks may be split at any byte: inside a line, inside a multi-byte UTF-8 character,
    /// inside the byte order mark, or between the CR and LF of a CRLF. Nothing is parsed here;
    /// call [`next_event`](Decoder::next_event) to take the events out.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete event, or `None` if more input is needed.
    ///
    /// An event is complete once the blank line ending its block has been pushed. Blocks with
    /// no `data:` field (comments only, or only `event:`/`id:`/`retry:`) dispatch nothing.
    pub fn next_event(&mut self) -> Option<Event> {
        if !self.strip_bom() {
            return None;
        }
        loop {
            if self.skip_lf {
                let first = *self.buf.first()?;
                if first == b'\n' {
                    self.buf.advance(1);
                }
                self.skip_lf = false;
            }
            let Some(offset) = self.buf[self.scanned..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')
            else {
                self.scanned = self.buf.len();
                return None;
            };
            let end = self.scanned + offset;
            let terminator = match self.buf.get(end..end + 2) {
                Some(b"\r\n") => 2,
                // A CR with nothing after it yet may be the first half of a CRLF.
                None if self.buf[end] == b'\r' => {
                    self.skip_lf = true;
                    1
                }
                _ => 1,
            };
            self.scanned = 0;
            if end == 0 {
                self.buf.advance(terminator);
                let event = self.pending.dispatch();
                if self.buf.is_empty() {
                    // The buffer's memory now belongs to the event, whose data is a slice of
                    // it: an idle stream holds nothing, and a vendor's 76 KB audio frame is
                    // freed once it is relayed (docs/benchmarks.md, "Lean streams").
                    self.buf = BytesMut::new();
                }
                if event.is_some() {
                    return event;
                }
            } else {
                // The line leaves the buffer whole: a `data:` value is a slice of it.
                let line = self.buf.split_to(end).freeze();
                self.buf.advance(terminator);
                self.pending.process_line(line);
            }
        }
    }

    /// Ends the stream, returning the event still being read if it has any data.
    ///
    /// **Deviation from WHATWG:** the standard discards a block that the stream ends before
    /// its blank line. This decoder instead treats the end of input as ending the last line
    /// and the block, because some upstreams omit the final blank line and their last frame
    /// often carries the usage figures that metering needs.
    ///
    /// Events still buffered are returned first, one per call as with
    /// [`next_event`](Decoder::next_event); call `finish` until it returns `None` to drain
    /// everything. Once it has returned `None` the decoder is back in its initial state and
    /// can decode a new stream.
    ///
    /// ```
    /// use tollgate_sse::{Decoder, Event};
    ///
    /// let mut decoder = Decoder::new();
    /// decoder.push(b"data: {\"usage\":{\"total_tokens\":9}}");
    /// assert_eq!(decoder.next_event(), None);
    /// assert_eq!(decoder.finish(), Some(Event::data(r#"{"usage":{"total_tokens":9}}"#)));
    /// assert_eq!(decoder.finish(), None);
    /// ```
    pub fn finish(&mut self) -> Option<Event> {
        if let Some(event) = self.next_event() {
            return Some(event);
        }
        // What is left is at most one unterminated line (possibly a partial BOM, which is
        // then simply content) and the fields of the block it belongs to.
        let tail = std::mem::take(&mut self.buf);
        if !tail.is_empty() {
            self.pending.process_line(tail.freeze());
        }
        let event = self.pending.dispatch();
        *self = Decoder::default();
        event
    }

    /// Memory held for input not yet dispatched, in bytes: buffered input not yet split into
    /// lines, plus the fields collected so far for the event being read.
    ///
    /// Callers that bound memory can check this after [`push`](Decoder::push) and
    /// [`next_event`](Decoder::next_event): it grows without limit only if the upstream
    /// sends an endless line or an endless block.
    pub fn buffered_len(&self) -> usize {
        let pending = &self.pending;
        self.buf.len()
            + pending.data.len()
            + pending.event.len()
            + pending.id.as_ref().map_or(0, String::len)
    }

    /// Removes a byte order mark from the start of the stream, once. Returns `false` while
    /// the buffered input is too short to tell whether it starts with one.
    fn strip_bom(&mut self) -> bool {
        if self.bom_checked {
            return true;
        }
        if self.buf.starts_with(BOM) {
            self.buf.advance(BOM.len());
        } else if BOM.starts_with(&self.buf) {
            // Empty, or a proper prefix of the BOM: wait for the bytes that decide it.
            return false;
        }
        self.bom_checked = true;
        true
    }
}

/// A `retry` value: ASCII digits only (no sign, no spaces), read in base ten. A value too
/// large for `u64` is ignored like any other invalid one rather than saturated.
fn parse_retry(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |ms, &byte| {
        let digit = byte.is_ascii_digit().then(|| u64::from(byte - b'0'))?;
        ms.checked_mul(10)?.checked_add(digit)
    })
}

impl Pending {
    /// Applies one non-empty line: a comment or a field.
    fn process_line(&mut self, line: Bytes) {
        // ':' is ASCII, so splitting the bytes here agrees with splitting the decoded text,
        // and decoding name and value separately gives the same replacement characters as
        // decoding the line as a whole.
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return, // a comment
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &b""[..]),
        };
        match name {
            b"data" => self.data.push(line.slice_ref(value)),
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            // WHATWG ignores an id containing NUL (it falls through to the last arm).
            b"id" if !value.contains(&0) => {
                self.id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" => self.retry = parse_retry(value).or(self.retry),
            _ => {} // unknown fields are ignored
        }
    }

    /// Ends the block at a blank line: the event, if the block had data, and a fresh block.
    fn dispatch(&mut self) -> Option<Event> {
        let Pending {
            data,
            event,
            id,
            retry,
        } = std::mem::take(self);
        let data = data.joined()?;
        Some(Event {
            event: (!event.is_empty()).then_some(event),
            data,
            id,
            retry,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Pushes each chunk in turn and collects every event, including the one `finish` yields.
    fn decode_chunks(chunks: &[&[u8]]) -> Vec<Event> {
        let mut decoder = Decoder::new();
        let mut events = Vec::new();
        for chunk in chunks {
            decoder.push(chunk);
            events.extend(std::iter::from_fn(|| decoder.next_event()));
        }
        events.extend(std::iter::from_fn(|| decoder.finish()));
        events
    }

    fn decode(input: &str) -> Vec<Event> {
        decode_chunks(&[input.as_bytes()])
    }

    /// Decodes `input` pushed one byte at a time, asserting it matches decoding it whole.
    fn decode_bytewise(input: &[u8]) -> Vec<Event> {
        let whole = decode_chunks(&[input]);
        let chunks: Vec<&[u8]> = input.chunks(1).collect();
        let bytewise = decode_chunks(&chunks);
        assert_eq!(whole, bytewise, "byte-at-a-time decoding differs");
        whole
    }

    #[test]
    fn a_data_line_is_handed_over_without_a_copy_and_the_buffer_goes_with_it() {
        let payload = "0f".repeat(40_000);
        let mut decoder = Decoder::new();
        decoder.push(format!("event: frame\ndata: {payload}\n\n").as_bytes());
        let buffer = decoder.buf.as_ptr_range();
        let event = decoder.next_event().unwrap();
        assert!(buffer.contains(&event.data.as_bytes().as_ptr()), "a slice");
        assert_eq!(event.data, payload);
        assert_eq!(decoder.buf.capacity(), 0, "nothing kept for the next event");
        // Two lines are joined: a copy, as before.
        decoder.push(b"data: a\ndata: b\n\n");
        assert_eq!(decoder.next_event().unwrap().data, "a\nb");
    }

    #[test]
    fn lf_line_ends() {
        assert_eq!(
            decode_bytewise(b"data: a\n\ndata: b\n\n"),
            [Event::data("a"), Event::data("b")]
        );
    }

    #[test]
    fn crlf_line_ends() {
        assert_eq!(
            decode_bytewise(b"data: a\r\n\r\ndata: b\r\n\r\n"),
            [Event::data("a"), Event::data("b")]
        );
    }

    #[test]
    fn lone_cr_line_ends() {
        assert_eq!(
            decode_bytewise(b"data: a\r\rdata: b\r\r"),
            [Event::data("a"), Event::data("b")]
        );
    }

    #[test]
    fn crlf_split_between_pushes_is_one_line_end() {
        let mut decoder = Decoder::new();
        decoder.push(b"data: a\r");
        assert_eq!(decoder.next_event(), None);
        // Were the LF a second line end, this would be a blank line dispatching "a" now.
        decoder.push(b"\n");
        assert_eq!(decoder.next_event(), None);
        decoder.push(b"data: b\r");
        assert_eq!(decoder.next_event(), None);
        decoder.push(b"\n\r");
        // The CR of the blank line ends it at once: a live stream must not stall on it.
        assert_eq!(decoder.next_event(), Some(Event::data("a\nb")));
        // Its LF completes that CRLF; it is not a second blank line.
        decoder.push(b"\n");
        assert_eq!(decoder.next_event(), None);
        decoder.push(b"data: c\r\n\r\n");
        assert_eq!(decoder.next_event(), Some(Event::data("c")));
        assert_eq!(decoder.finish(), None);
    }

    #[test]
    fn cr_at_chunk_end_dispatches_without_waiting_for_more_input() {
        let mut decoder = Decoder::new();
        decoder.push(b"data: a\r\r");
        assert_eq!(decoder.next_event(), Some(Event::data("a")));
        decoder.push(b"data: b\n\n");
        assert_eq!(decoder.next_event(), Some(Event::data("b")));
    }

    #[test]
    fn cr_then_lf_in_later_push_after_empty_gap() {
        // The flag survives a next_event call made while nothing new was buffered.
        let mut decoder = Decoder::new();
        decoder.push(b"data: a\r");
        assert_eq!(decoder.next_event(), None);
        assert_eq!(decoder.next_event(), None);
        decoder.push(b"");
        assert_eq!(decoder.next_event(), None);
        decoder.push(b"\ndata: b\n\n");
        assert_eq!(decoder.next_event(), Some(Event::data("a\nb")));
    }

    #[test]
    fn mixed_line_ends() {
        assert_eq!(
            decode_bytewise(b"data: a\rdata: b\r\ndata: c\n\r\n"),
            [Event::data("a\nb\nc")]
        );
    }

    #[test]
    fn multi_line_data_is_joined_with_lf() {
        assert_eq!(
            decode("data: first\ndata: second\ndata: third\n\n"),
            [Event::data("first\nsecond\nthird")]
        );
    }

    #[test]
    fn empty_data_lines_are_kept() {
        assert_eq!(decode("data:\ndata:\n\n"), [Event::data("\n")]);
        assert_eq!(decode("data: a\ndata:\n\n"), [Event::data("a\n")]);
    }

    #[test]
    fn single_empty_data_line_dispatches_empty_data() {
        assert_eq!(decode("data:\n\n"), [Event::data("")]);
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(
            decode(": keep-alive\n\n:\ndata: a\n: inside a block\ndata: b\n\n"),
            [Event::data("a\nb")]
        );
    }

    #[test]
    fn event_id_and_retry() {
        assert_eq!(
            decode("event: delta\nid: 17\nretry: 2500\ndata: x\n\n"),
            [Event::data("x")
                .with_event("delta")
                .with_id("17")
                .with_retry(2500)]
        );
    }

    #[test]
    fn later_fields_overwrite_earlier_ones_in_a_block() {
        assert_eq!(
            decode("event: a\nevent: b\nid: 1\nid: 2\nretry: 1\nretry: 2\ndata: x\n\n"),
            [Event::data("x").with_event("b").with_id("2").with_retry(2)]
        );
    }

    #[test]
    fn fields_apply_only_to_their_own_block() {
        assert_eq!(
            decode("event: e\nid: 1\nretry: 5\ndata: a\n\ndata: b\n\n"),
            [
                Event::data("a").with_event("e").with_id("1").with_retry(5),
                Event::data("b"),
            ]
        );
    }

    #[test]
    fn a_block_without_data_dispatches_nothing_and_its_fields_are_dropped() {
        assert_eq!(
            decode("event: e\nid: 1\nretry: 5\n\ndata: a\n\n"),
            [Event::data("a")]
        );
    }

    #[test]
    fn empty_event_type_means_the_default() {
        assert_eq!(decode("event:\ndata: a\n\n"), [Event::data("a")]);
        assert_eq!(decode("event: a\nevent:\ndata: a\n\n"), [Event::data("a")]);
    }

    #[test]
    fn empty_id_is_kept() {
        assert_eq!(decode("id:\ndata: a\n\n"), [Event::data("a").with_id("")]);
    }

    #[test]
    fn retry_with_non_digits_is_ignored() {
        for value in [
            "1.5",
            "-1",
            "+1",
            "  1", // " 1" once the separator space is removed
            "1 ",
            "1a",
            "",
            "１",
            "99999999999999999999",
        ] {
            assert_eq!(
                decode(&format!("retry:{value}\ndata: a\n\n")),
                [Event::data("a")],
                "retry value {value:?}"
            );
        }
        // One space after the colon is the separator, not part of the value.
        assert_eq!(
            decode("retry: 0\ndata: a\n\n"),
            [Event::data("a").with_retry(0)]
        );
        assert_eq!(
            decode("retry:007\ndata: a\n\n"),
            [Event::data("a").with_retry(7)]
        );
    }

    #[test]
    fn id_with_nul_is_ignored() {
        assert_eq!(
            decode("id: 1\nid: 2\0\ndata: a\n\n"),
            [Event::data("a").with_id("1")]
        );
        assert_eq!(decode("id: \0\ndata: a\n\n"), [Event::data("a")]);
    }

    #[test]
    fn bom_at_start_is_stripped() {
        assert_eq!(decode("\u{FEFF}data: a\n\n"), [Event::data("a")]);
        // Without stripping, the first field name would be "\u{FEFF}data" and be ignored.
    }

    #[test]
    fn bom_split_over_pushes_is_stripped() {
        let input = "\u{FEFF}data: a\n\n".as_bytes();
        for split in 1..=3 {
            assert_eq!(
                decode_chunks(&[&input[..split], &input[split..]]),
                [Event::data("a")],
                "split at {split}"
            );
        }
        assert_eq!(
            decode_chunks(&[b"\xEF", b"\xBB", b"\xBF", b"data: a\n\n"]),
            [Event::data("a")]
        );
    }

    #[test]
    fn bom_is_stripped_only_once_and_only_at_the_start() {
        // A second BOM makes the first field name "\u{FEFF}data", an unknown field.
        assert_eq!(
            decode("\u{FEFF}\u{FEFF}data: a\n\ndata: b\n\n"),
            [Event::data("b")]
        );
        // A BOM at the start of a later line is not stripped either.
        assert_eq!(decode("data: a\n\n\u{FEFF}data: b\n\n"), [Event::data("a")]);
        // Inside a value it is content.
        assert_eq!(decode("data: \u{FEFF}a\n\n"), [Event::data("\u{FEFF}a")]);
    }

    #[test]
    fn bytes_that_only_start_like_a_bom_are_content() {
        assert_eq!(
            decode_bytewise(b"\xEFdata: a\n\ndata: b\n\n"),
            [Event::data("b")]
        );
        assert_eq!(decode_chunks(&[b"\xEF\xBB"]), []);
    }

    #[test]
    fn field_without_colon_has_empty_value() {
        assert_eq!(decode("data\n\n"), [Event::data("")]);
        assert_eq!(decode("data\ndata\n\n"), [Event::data("\n")]);
        assert_eq!(
            decode("data: a\nevent\n\n"),
            [Event::data("a")],
            "bare `event` sets the empty (default) type"
        );
        assert_eq!(decode("id\ndata: a\n\n"), [Event::data("a").with_id("")]);
    }

    #[test]
    fn value_without_space_after_colon() {
        assert_eq!(
            decode("event:e\ndata:a\nid:1\n\n"),
            [Event::data("a").with_event("e").with_id("1")]
        );
    }

    #[test]
    fn only_one_leading_space_is_removed() {
        assert_eq!(decode("data:  a \n\n"), [Event::data(" a ")]);
        assert_eq!(decode("data:\ta\n\n"), [Event::data("\ta")]);
    }

    #[test]
    fn only_the_first_colon_separates() {
        assert_eq!(decode("data: a: b:c\n\n"), [Event::data("a: b:c")]);
    }

    #[test]
    fn field_names_are_case_sensitive_and_unknown_ones_ignored() {
        assert_eq!(decode("Data: a\nfoo: b\ndata: c\n\n"), [Event::data("c")]);
    }

    #[test]
    fn done_sentinel() {
        let events = decode("data: {\"x\":1}\n\ndata: [DONE]\n\n");
        assert_eq!(events.len(), 2);
        assert!(!events[0].is_done());
        assert!(events[1].is_done());
    }

    #[test]
    fn finish_with_pending_unterminated_line() {
        let mut decoder = Decoder::new();
        decoder.push(b"event: usage\ndata: {\"tokens\":3}");
        assert_eq!(decoder.next_event(), None);
        assert_eq!(
            decoder.finish(),
            Some(Event::data("{\"tokens\":3}").with_event("usage"))
        );
        assert_eq!(decoder.finish(), None);
    }

    #[test]
    fn finish_with_pending_block_missing_only_the_blank_line() {
        for input in ["data: a\n", "data: a\r\n", "data: a\r"] {
            let mut decoder = Decoder::new();
            decoder.push(input.as_bytes());
            assert_eq!(decoder.next_event(), None, "{input:?}");
            assert_eq!(decoder.finish(), Some(Event::data("a")), "{input:?}");
        }
    }

    #[test]
    fn finish_without_pending_event() {
        let mut decoder = Decoder::new();
        assert_eq!(decoder.finish(), None);

        decoder.push(b"data: a\n\n");
        assert_eq!(decoder.next_event(), Some(Event::data("a")));
        assert_eq!(decoder.finish(), None);

        // Fields without data, and comments, are not an event.
        decoder.push(b"event: e\nid: 1\n: note");
        assert_eq!(decoder.finish(), None);
    }

    #[test]
    fn finish_drains_undrained_events_first() {
        let mut decoder = Decoder::new();
        decoder.push(b"data: a\n\ndata: b\n\ndata: c");
        assert_eq!(decoder.finish(), Some(Event::data("a")));
        assert_eq!(decoder.finish(), Some(Event::data("b")));
        assert_eq!(decoder.finish(), Some(Event::data("c")));
        assert_eq!(decoder.finish(), None);
    }

    #[test]
    fn finish_resets_for_a_new_stream() {
        let mut decoder = Decoder::new();
        decoder.push(b"data: a\r");
        assert_eq!(decoder.finish(), Some(Event::data("a")));
        assert_eq!(decoder.finish(), None);
        assert_eq!(decoder.buffered_len(), 0);
        // A new stream: its BOM is stripped and its leading LF is not eaten as half a CRLF.
        decoder.push(b"\xEF\xBB\xBF\n");
        decoder.push(b"data: b\n\n");
        assert_eq!(decoder.next_event(), Some(Event::data("b")));
    }

    #[test]
    fn multi_byte_utf8_split_across_pushes() {
        let input = "data: héllo → 世界 🦀\n\n".as_bytes();
        for split in 0..=input.len() {
            assert_eq!(
                decode_chunks(&[&input[..split], &input[split..]]),
                [Event::data("héllo → 世界 🦀")],
                "split at {split}"
            );
        }
        assert_eq!(decode_bytewise(input), [Event::data("héllo → 世界 🦀")]);
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(
            decode_bytewise(b"data: a\xFFb\xF0\x9F\n\n"),
            [Event::data("a\u{FFFD}b\u{FFFD}")]
        );
    }

    #[test]
    fn buffered_len_counts_unparsed_input_and_the_pending_block() {
        let mut decoder = Decoder::new();
        assert_eq!(decoder.buffered_len(), 0);
        decoder.push(b"data: abc\ndata: de");
        assert_eq!(decoder.buffered_len(), 18);
        assert_eq!(decoder.next_event(), None);
        // "abc\n" is now in the data buffer, "data: de" is still unparsed input.
        assert_eq!(decoder.buffered_len(), 4 + 8);
        decoder.push(b"\n\n");
        assert!(decoder.next_event().is_some());
        assert_eq!(decoder.buffered_len(), 0);
    }

    #[test]
    fn long_line_in_many_chunks() {
        let mut decoder = Decoder::new();
        decoder.push(b"data: ");
        for _ in 0..10_000 {
            decoder.push(b"x");
            assert_eq!(decoder.next_event(), None);
        }
        decoder.push(b"\n\n");
        assert_eq!(decoder.next_event().unwrap().data.len(), 10_000);
    }
}
