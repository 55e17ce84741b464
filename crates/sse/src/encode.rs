//! Encoding events and comments to the `text/event-stream` wire form.

use bytes::{Bytes, BytesMut};

use crate::Event;

impl Event {
    /// The wire form of this event: its field lines followed by the blank line that dispatches
    /// it.
    ///
    /// - `event:` and `id:` values lose any CR and LF (a line cannot carry them), and `id:` also
    ///   loses NUL, which would make a conforming client ignore the whole field. An event type
    ///   that is empty after this is not written: it would mean the default type anyway.
    /// - `data` is split at every `"\r\n"`, `"\r"` and `"\n"` into one `data:` line each, so a
    ///   decoder gives back the same text with every line end normalised to `'\n'`.
    /// - Empty `data` still produces one `data:` line, so that the event is dispatched (and
    ///   decodes with empty `data`) rather than silently dropped.
    ///
    /// ```
    /// use tollgate_sse::Event;
    ///
    /// let wire = Event::data("line one\nline two").with_event("delta").encode();
    /// assert_eq!(&wire[..], b"event: delta\ndata: line one\ndata: line two\n\n");
    ///
    /// assert_eq!(&Event::data("").encode()[..], b"data:\n\n");
    /// ```
    pub fn encode(&self) -> Bytes {
        let mut buf = BytesMut::with_capacity(self.encoded_len_hint());
        self.encode_into(&mut buf);
        buf.freeze()
    }

    /// Appends the wire form of this event (see [`Event::encode`]) to `buf`.
    pub fn encode_into(&self, buf: &mut BytesMut) {
        if let Some(name) = &self.event {
            let name = strip(name, &['\r', '\n']);
            if !name.is_empty() {
                write_field(buf, b"event", &name);
            }
        }
        if let Some(id) = &self.id {
            write_field(buf, b"id", &strip(id, &['\r', '\n', '\0']));
        }
        if let Some(retry) = self.retry {
            write_field(buf, b"retry", &retry.to_string());
        }
        for_each_line(&self.data, |line| write_field(buf, b"data", line));
        buf.extend_from_slice(b"\n");
    }

    /// Enough capacity for the common case, so that `encode` allocates once.
    fn encoded_len_hint(&self) -> usize {
        const FIELD_OVERHEAD: usize = "retry: \n".len();
        let optional = [self.event.as_ref(), self.id.as_ref()]
            .into_iter()
            .flatten()
            .map(|value| value.len() + FIELD_OVERHEAD)
            .sum::<usize>();
        // Each data line costs "data: " plus its terminator; count one line per '\n'.
        let data_lines = 1 + self.data.bytes().filter(|&b| b == b'\n').count();
        let retry = if self.retry.is_some() {
            FIELD_OVERHEAD + 20
        } else {
            0
        };
        optional + retry + self.data.len() + data_lines * FIELD_OVERHEAD + 1
    }
}

/// Encodes a comment: one `:` line per line of `text`, then a blank line.
///
/// Decoders ignore comments, and the blank line alone dispatches nothing, so this is the
/// conventional keep-alive that stops proxies from timing out an idle stream.
///
/// ```
/// use tollgate_sse::{Decoder, encode_comment};
///
/// let wire = encode_comment("keep-alive");
/// assert_eq!(&wire[..], b": keep-alive\n\n");
///
/// let mut decoder = Decoder::new();
/// decoder.push(&wire);
/// assert_eq!(decoder.next_event(), None);
/// ```
pub fn encode_comment(text: &str) -> Bytes {
    let mut buf = BytesMut::with_capacity(text.len() + 4);
    for_each_line(text, |line| write_field(&mut buf, b"", line));
    buf.extend_from_slice(b"\n");
    buf.freeze()
}

/// Writes `name: value\n`, or `name:\n` for an empty value.
///
/// The space after the colon is written only before a value: a decoder removes exactly one
/// leading space, so a value that itself starts with a space survives, and an empty value
/// needs no trailing whitespace.
fn write_field(buf: &mut BytesMut, name: &[u8], value: &str) {
    buf.reserve(name.len() + value.len() + 3);
    buf.extend_from_slice(name);
    buf.extend_from_slice(b":");
    if !value.is_empty() {
        buf.extend_from_slice(b" ");
        buf.extend_from_slice(value.as_bytes());
    }
    buf.extend_from_slice(b"\n");
}

/// `value` without any of `chars`, borrowed when there is nothing to remove.
fn strip<'a>(value: &'a str, chars: &[char]) -> std::borrow::Cow<'a, str> {
    if value.contains(chars) {
        value.replace(chars, "").into()
    } else {
        value.into()
    }
}

/// Calls `f` with each line of `text`, splitting at `"\r\n"`, `"\r"` and `"\n"` exactly as the
/// decoder does. There is always at least one line, and a trailing line end yields a final
/// empty line, so the split is lossless up to line-end normalisation.
fn for_each_line(text: &str, mut f: impl FnMut(&str)) {
    let mut rest = text;
    while let Some(end) = rest.find(['\r', '\n']) {
        f(&rest[..end]);
        let terminator = if rest[end..].starts_with("\r\n") {
            2
        } else {
            1
        };
        rest = &rest[end + terminator..];
    }
    f(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(event: &Event) -> String {
        String::from_utf8_lossy(&event.encode()).into_owned()
    }

    #[test]
    fn data_only() {
        assert_eq!(encoded(&Event::data("hi")), "data: hi\n\n");
    }

    #[test]
    fn all_fields_in_a_fixed_order() {
        let event = Event::data("x")
            .with_retry(1500)
            .with_id("42")
            .with_event("update");
        assert_eq!(
            encoded(&event),
            "event: update\nid: 42\nretry: 1500\ndata: x\n\n"
        );
    }

    #[test]
    fn data_is_split_on_every_line_end_style() {
        assert_eq!(
            encoded(&Event::data("a\nb\r\nc\rd")),
            "data: a\ndata: b\ndata: c\ndata: d\n\n"
        );
    }

    #[test]
    fn trailing_and_consecutive_newlines_become_empty_data_lines() {
        assert_eq!(encoded(&Event::data("a\n\n")), "data: a\ndata:\ndata:\n\n");
        assert_eq!(encoded(&Event::data("\n")), "data:\ndata:\n\n");
    }

    #[test]
    fn empty_data_still_writes_one_data_line() {
        assert_eq!(encoded(&Event::data("")), "data:\n\n");
        assert_eq!(encoded(&Event::default()), "data:\n\n");
    }

    #[test]
    fn leading_space_in_a_value_is_preserved_by_the_separator_space() {
        assert_eq!(encoded(&Event::data(" x")), "data:  x\n\n");
    }

    #[test]
    fn line_breaks_are_removed_from_event_and_id() {
        let event = Event::data("d").with_event("a\r\nb").with_id("1\n2\0");
        assert_eq!(encoded(&event), "event: ab\nid: 12\ndata: d\n\n");
    }

    #[test]
    fn an_event_type_that_strips_to_nothing_is_omitted() {
        assert_eq!(encoded(&Event::data("d").with_event("\r\n")), "data: d\n\n");
        assert_eq!(encoded(&Event::data("d").with_event("")), "data: d\n\n");
    }

    #[test]
    fn empty_id_is_still_written() {
        assert_eq!(encoded(&Event::data("d").with_id("")), "id:\ndata: d\n\n");
    }

    #[test]
    fn encode_into_appends() {
        let mut buf = BytesMut::from(&b"prefix\n"[..]);
        Event::data("a").encode_into(&mut buf);
        Event::data("b").encode_into(&mut buf);
        assert_eq!(&buf[..], b"prefix\ndata: a\n\ndata: b\n\n");
    }

    #[test]
    fn comments() {
        assert_eq!(&encode_comment("ping")[..], b": ping\n\n");
        assert_eq!(&encode_comment("")[..], b":\n\n");
        assert_eq!(&encode_comment("a\nb")[..], b": a\n: b\n\n");
    }
}
