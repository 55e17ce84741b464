//! Server-sent events framing for tollgate: an encoder, an incremental decoder, and a
//! [`Stream`](futures_core::Stream) adapter. Sans-IO: no runtime, no HTTP; callers move the
//! bytes.
//!
//! # The format
//!
//! A `text/event-stream` body is UTF-8 text made of lines, each ended by LF, CRLF or a lone
//! CR. Lines group into blocks separated by blank lines, and each block is one event:
//!
//! ```text
//! : a comment, ignored (used as a keep-alive)
//! event: delta
//! id: 7
//! data: first line
//! data: second line
//!
//! ```
//!
//! Each line is `field: value` (the one space after the colon is optional and not part of
//! the value); a line starting with `:` is a comment; a line without a colon is a field with
//! an empty value. The fields are `data` (appended to the event's data, lines joined with
//! `'\n'`), `event` (the event type, `message` by default), `id` and `retry` (a reconnection
//! time in milliseconds, ASCII digits only). Unknown fields are ignored. The blank line
//! dispatches the block as an [`Event`] if it had any `data` line.
//!
//! # Standard
//!
//! The [`Decoder`] implements the parsing rules of the WHATWG HTML Standard, section
//! "Server-sent events": [Parsing an event stream][parsing] (line ends, the optional leading
//! byte order mark, comments, field/value splitting) and [Interpreting an event
//! stream][interpreting] (what each field does, when an event is dispatched). Input is
//! decoded as UTF-8 with replacement of invalid bytes, one complete line at a time, so chunks
//! may split a multi-byte character, the byte order mark, or a CRLF pair.
//!
//! It deliberately departs from the standard in three ways, all to serve a gateway that
//! relays and meters streams rather than a browser that reconnects:
//!
//! - **Unterminated last event.** [`Decoder::finish`] dispatches a block that the stream ends
//!   before its blank line, where the standard discards it: some upstreams omit the final
//!   blank line, and that last frame often carries the usage to bill.
//! - **Per-event `id` and `retry`.** A browser keeps the last event ID and the reconnection
//!   time as stream state that later events inherit. Here each [`Event`] carries only the
//!   `id` and `retry` fields of its own block, and a block without data (which dispatches
//!   nothing) has its `id` and `retry` dropped.
//! - **Event type.** An absent or empty `event` field gives `event: None` instead of the
//!   explicit type `message`; `Some("message")` is kept as written.
//!
//! [parsing]: https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-event-stream
//! [interpreting]: https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation
//!
//! # Example
//!
//! ```
//! use tollgate_sse::{Decoder, Event, encode_comment};
//!
//! let mut wire = Vec::new();
//! wire.extend_from_slice(&Event::data("Hello\nworld").with_event("delta").encode());
//! wire.extend_from_slice(&encode_comment("keep-alive"));
//! wire.extend_from_slice(&Event::data("[DONE]").encode());
//!
//! // The decoder accepts the bytes however they are split.
//! let mut decoder = Decoder::new();
//! let mut events = Vec::new();
//! for chunk in wire.chunks(5) {
//!     decoder.push(chunk);
//!     while let Some(event) = decoder.next_event() {
//!         events.push(event);
//!     }
//! }
//! events.extend(decoder.finish());
//!
//! assert_eq!(events, [Event::data("Hello\nworld").with_event("delta"), Event::data("[DONE]")]);
//! assert!(events[1].is_done());
//! ```

mod decode;
mod encode;
mod event;
mod stream;

pub use decode::Decoder;
pub use encode::encode_comment;
pub use event::{ByteString, Event};
pub use stream::{EventStream, Exceeded, Limits};
