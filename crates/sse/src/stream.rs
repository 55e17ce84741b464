//! [`EventStream`]: the [`Decoder`] driven by a stream of byte chunks.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_core::Stream;

use crate::{Decoder, Event};

pin_project_lite::pin_project! {
    /// Adapter from a stream of byte chunks (an HTTP response body, say) to a stream of
    /// [`Event`]s.
    ///
    /// Chunk errors are passed through unchanged, and the stream continues if polled again.
    /// When the inner stream ends, a last event left without its blank line is still yielded
    /// (see [`Decoder::finish`]), then the stream ends.
    ///
    /// ```
    /// use futures_util::{FutureExt, StreamExt, stream};
    /// use tollgate_sse::{Event, EventStream};
    ///
    /// let chunks = stream::iter([
    ///     Ok::<_, std::io::Error>(&b"data: hel"[..]),
    ///     Ok(&b"lo\n\nevent: usage\ndata: {}"[..]),
    /// ]);
    /// let events: Option<Vec<_>> = EventStream::new(chunks)
    ///     .map(Result::ok)
    ///     .collect::<Vec<_>>()
    ///     .now_or_never()
    ///     .map(|events| events.into_iter().flatten().collect());
    /// assert_eq!(
    ///     events,
    ///     Some(vec![Event::data("hello"), Event::data("{}").with_event("usage")])
    /// );
    /// ```
    #[derive(Debug)]
    pub struct EventStream<S> {
        #[pin]
        inner: S,
        decoder: Decoder,
        // The inner stream has ended; it must not be polled again.
        inner_done: bool,
        limits: Limits,
        read: u64,
        exceeded: Option<Exceeded>,
    }
}

/// Bounds on what an [`EventStream`] reads: an upstream that sends one endless event, or an
/// endless stream, must not take the reader's memory or time with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes one event may buffer before it is dispatched
    /// ([`Decoder::buffered_len`]).
    pub max_event_bytes: usize,
    /// The most bytes the whole stream may carry.
    pub max_total_bytes: u64,
}

impl Limits {
    /// No bounds.
    pub const NONE: Limits = Limits {
        max_event_bytes: usize::MAX,
        max_total_bytes: u64::MAX,
    };
}

/// Which bound of [`Limits`] ended a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// One event grew past `max_event_bytes`.
    Event(usize),
    /// The stream carried more than `max_total_bytes`.
    Total(u64),
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::Event(n) => write!(f, "an event larger than {n} bytes"),
            Exceeded::Total(n) => write!(f, "a stream longer than {n} bytes"),
        }
    }
}

impl std::error::Error for Exceeded {}

impl<S> EventStream<S> {
    /// Decodes the chunks of `inner`.
    pub fn new(inner: S) -> Self {
        EventStream {
            inner,
            decoder: Decoder::new(),
            inner_done: false,
            limits: Limits::NONE,
            read: 0,
            exceeded: None,
        }
    }

    /// Ends the stream — no further events, not even a partial one — once `limits` are
    /// passed; [`EventStream::exceeded`] then says which.
    ///
    /// ```
    /// use futures_util::{FutureExt, StreamExt, stream};
    /// use tollgate_sse::{EventStream, Exceeded, Limits};
    ///
    /// let chunks = stream::iter([Ok::<_, std::io::Error>(&b"data: ok\n\ndata: "[..]), Ok(&[b'x'; 64][..])]);
    /// let limits = Limits { max_event_bytes: 32, max_total_bytes: 1 << 20 };
    /// let mut events = EventStream::new(chunks).with_limits(limits);
    /// let read: Vec<_> = (&mut events).collect::<Vec<_>>().now_or_never().unwrap();
    /// assert_eq!(read.len(), 1, "the event before the bound, then the end");
    /// assert_eq!(events.exceeded(), Some(Exceeded::Event(32)));
    /// ```
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The bound that ended the stream, if one did.
    pub fn exceeded(&self) -> Option<Exceeded> {
        self.exceeded
    }

    /// The decoder, for example to check [`Decoder::buffered_len`] against a memory bound.
    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }

    /// Gives back the inner stream, discarding any input buffered but not yet yielded.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, B, E> Stream for EventStream<S>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    type Item = Result<Event, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            // Events already buffered go out before more input is read.
            if let Some(event) = this.decoder.next_event() {
                return Poll::Ready(Some(Ok(event)));
            }
            if this.exceeded.is_some() {
                return Poll::Ready(None);
            }
            // Checked before reading more: one event never holds more than the bound plus a
            // chunk, even when the inner stream is always ready.
            if this.decoder.buffered_len() > this.limits.max_event_bytes {
                *this.exceeded = Some(Exceeded::Event(this.limits.max_event_bytes));
                return Poll::Ready(None);
            }
            if *this.inner_done {
                // `finish` yields the unterminated last event once, then `None` for good.
                return Poll::Ready(this.decoder.finish().map(Ok));
            }
            match ready!(this.inner.as_mut().poll_next(cx)) {
                Some(Ok(chunk)) => {
                    let chunk = chunk.as_ref();
                    *this.read = this.read.saturating_add(chunk.len() as u64);
                    if *this.read > this.limits.max_total_bytes {
                        *this.exceeded = Some(Exceeded::Total(this.limits.max_total_bytes));
                        return Poll::Ready(None);
                    }
                    this.decoder.push(chunk);
                }
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                None => *this.inner_done = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::VecDeque;
    use std::task::Waker;

    use futures_util::{FutureExt, StreamExt, stream};

    use super::*;

    /// Collects a stream that never returns `Pending`.
    fn collect_ready<S: Stream + Unpin>(stream: S) -> Vec<S::Item> {
        stream.collect::<Vec<_>>().now_or_never().unwrap()
    }

    #[test]
    fn events_across_chunk_boundaries() {
        let chunks = [
            "data: a",
            "\n",
            "\nevent: e\r",
            "\ndata: b\r\n\r",
            "\n",
            "data: [DONE]\n\n",
        ];
        let events = collect_ready(EventStream::new(stream::iter(chunks.map(Ok::<_, ()>))));
        assert_eq!(
            events,
            [
                Ok(Event::data("a")),
                Ok(Event::data("b").with_event("e")),
                Ok(Event::data("[DONE]")),
            ]
        );
    }

    #[test]
    fn several_events_in_one_chunk_are_all_yielded() {
        let chunk = b"data: 1\n\ndata: 2\n\ndata: 3\n\n".to_vec();
        let events = collect_ready(EventStream::new(stream::iter([Ok::<_, ()>(chunk)])));
        assert_eq!(
            events,
            [
                Ok(Event::data("1")),
                Ok(Event::data("2")),
                Ok(Event::data("3"))
            ]
        );
    }

    #[test]
    fn unterminated_last_event_is_yielded_at_the_end() {
        let chunks = [Ok::<_, ()>(&b"data: a\n\n"[..]), Ok(b"data: usage")];
        let events = collect_ready(EventStream::new(stream::iter(chunks)));
        assert_eq!(events, [Ok(Event::data("a")), Ok(Event::data("usage"))]);
    }

    #[test]
    fn empty_input_yields_nothing() {
        let events = collect_ready(EventStream::new(stream::iter(
            Vec::<Result<&[u8], ()>>::new(),
        )));
        assert!(events.is_empty());
    }

    #[test]
    fn an_endless_event_from_an_always_ready_stream_stops_at_the_bound() {
        // `repeat` never ends and is always ready: without the bound this would never return.
        let endless = stream::iter([Ok::<_, ()>(&b"data: ok\n\ndata: "[..])])
            .chain(stream::repeat(Ok(&[b'x'; 1024][..])));
        let mut events = EventStream::new(endless).with_limits(Limits {
            max_event_bytes: 1 << 20,
            max_total_bytes: u64::MAX,
        });
        let read = collect_ready(&mut events);
        assert_eq!(read, [Ok(Event::data("ok"))]);
        assert_eq!(events.exceeded(), Some(Exceeded::Event(1 << 20)));
        assert!(events.decoder().buffered_len() <= (1 << 20) + 1024);
    }

    #[test]
    fn a_stream_past_its_total_ends_after_the_events_within_it() {
        let events_of_10_bytes = stream::repeat(Ok::<_, ()>(&b"data: ab\n\n"[..]));
        let mut events = EventStream::new(events_of_10_bytes).with_limits(Limits {
            max_event_bytes: 64,
            max_total_bytes: 100,
        });
        let read = collect_ready(&mut events);
        assert_eq!(read.len(), 10, "100 bytes hold ten events");
        assert_eq!(events.exceeded(), Some(Exceeded::Total(100)));
        // Within the bounds nothing changes.
        let chunks = [Ok::<_, ()>(&b"data: a\n\n"[..])];
        let mut events = EventStream::new(stream::iter(chunks)).with_limits(Limits {
            max_event_bytes: 64,
            max_total_bytes: 100,
        });
        assert_eq!(collect_ready(&mut events), [Ok(Event::data("a"))]);
        assert_eq!(events.exceeded(), None);
    }

    #[test]
    fn errors_pass_through_and_decoding_continues() {
        let chunks = [Ok(&b"data: a"[..]), Err("reset"), Ok(b"\n\n")];
        let events = collect_ready(EventStream::new(stream::iter(chunks)));
        assert_eq!(events, [Err("reset"), Ok(Event::data("a"))]);
    }

    #[test]
    fn ends_for_good_after_the_inner_stream_ends() {
        let mut events = EventStream::new(stream::iter([Ok::<_, ()>(&b"data: a"[..])]));
        let mut cx = Context::from_waker(Waker::noop());
        let mut poll = || Pin::new(&mut events).poll_next(&mut cx);
        assert_eq!(poll(), Poll::Ready(Some(Ok(Event::data("a")))));
        assert_eq!(poll(), Poll::Ready(None));
        assert_eq!(poll(), Poll::Ready(None));
    }

    /// A chunk source that is not ready before each chunk, like a socket.
    struct Trickle {
        chunks: VecDeque<&'static [u8]>,
        ready: bool,
    }

    impl Stream for Trickle {
        type Item = Result<&'static [u8], ()>;

        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            if !std::mem::replace(&mut self.ready, false) {
                self.ready = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Poll::Ready(self.chunks.pop_front().map(Ok))
        }
    }

    #[test]
    fn pending_inner_stream_is_pending_until_an_event_completes() {
        let trickle = Trickle {
            chunks: VecDeque::from([&b"data: a\n"[..], b"\n", b"data: b"]),
            ready: false,
        };
        let mut events = EventStream::new(trickle);
        let mut cx = Context::from_waker(Waker::noop());
        let mut polls = Vec::new();
        loop {
            let poll = Pin::new(&mut events).poll_next(&mut cx);
            let end = poll == Poll::Ready(None);
            polls.push(poll);
            if end {
                break;
            }
        }
        assert_eq!(
            polls,
            [
                Poll::Pending, // nothing read yet
                Poll::Pending, // "data: a\n" read, the blank line not yet
                Poll::Ready(Some(Ok(Event::data("a")))),
                Poll::Pending, // nothing more read yet
                Poll::Pending, // "data: b" read, the end of input not yet
                Poll::Ready(Some(Ok(Event::data("b")))),
                Poll::Ready(None),
            ]
        );
    }

    #[test]
    fn into_inner_and_decoder() {
        let mut events = EventStream::new(stream::iter([Ok::<_, ()>(&b"data: abc"[..])]));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut events).poll_next(&mut cx).is_ready());
        assert_eq!(events.decoder().buffered_len(), 0);
        let mut inner = events.into_inner();
        assert_eq!(Pin::new(&mut inner).poll_next(&mut cx), Poll::Ready(None));
    }
}
