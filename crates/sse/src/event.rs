//! The [`Event`] value shared by the encoder and the decoder.

pub use bytestring::ByteString;

/// The `data` payload that OpenAI-style streaming APIs send as their last event.
const DONE_SENTINEL: &str = "[DONE]";

/// One dispatched event: the fields of one block of lines ended by a blank line.
///
/// The field meanings follow the WHATWG event-stream interpretation, with one simplification:
/// `id` and `retry` describe only the block they were read from (a browser instead keeps the
/// last event ID and the reconnection time as stream-wide state; see the crate documentation).
///
/// ```
/// use tollgate_sse::Event;
///
/// let event = Event::data("hello").with_event("greeting").with_id("7").with_retry(3000);
/// assert_eq!(event.event.as_deref(), Some("greeting"));
/// assert_eq!(event.data, "hello");
/// assert_eq!(event.id.as_deref(), Some("7"));
/// assert_eq!(event.retry, Some(3000));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// The `event:` field, the event type. `None` means the default type, `message`.
    ///
    /// The decoder never produces `Some("")`: an empty `event:` value also means the default.
    pub event: Option<String>,
    /// The `data:` lines of the block joined with `'\n'` (no trailing newline).
    ///
    /// Decoded, a block's one valid UTF-8 `data:` line is a slice of the decoder's own buffer,
    /// not a copy (docs/benchmarks.md, "Lean streams").
    pub data: ByteString,
    /// The `id:` field of this block, if it had one (possibly empty).
    pub id: Option<String>,
    /// The `retry:` field of this block: the reconnection time in milliseconds.
    pub retry: Option<u64>,
}

impl Event {
    /// An event of the default type carrying only `data`.
    ///
    /// `data` may contain newlines; each line is sent as its own `data:` line.
    pub fn data(data: impl Into<ByteString>) -> Event {
        Event {
            data: data.into(),
            ..Event::default()
        }
    }

    /// Sets the event type (the `event:` field).
    pub fn with_event(self, name: impl Into<String>) -> Event {
        Event {
            event: Some(name.into()),
            ..self
        }
    }

    /// Sets the event ID (the `id:` field).
    pub fn with_id(self, id: impl Into<String>) -> Event {
        Event {
            id: Some(id.into()),
            ..self
        }
    }

    /// Sets the reconnection time in milliseconds (the `retry:` field).
    pub fn with_retry(self, ms: u64) -> Event {
        Event {
            retry: Some(ms),
            ..self
        }
    }

    /// Whether this is the `data: [DONE]` end-of-stream sentinel of OpenAI-style APIs.
    ///
    /// The comparison is exact: the sentinel is a fixed string, not JSON.
    ///
    /// ```
    /// use tollgate_sse::Event;
    ///
    /// assert!(Event::data("[DONE]").is_done());
    /// assert!(!Event::data(r#"{"done":true}"#).is_done());
    /// ```
    pub fn is_done(&self) -> bool {
        &*self.data == DONE_SENTINEL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_set_each_field() {
        let event = Event::data("d").with_event("e").with_id("i").with_retry(5);
        assert_eq!(
            event,
            Event {
                event: Some("e".into()),
                data: "d".into(),
                id: Some("i".into()),
                retry: Some(5),
            }
        );
    }

    #[test]
    fn done_sentinel_is_exact() {
        assert!(Event::data("[DONE]").is_done());
        assert!(!Event::data("[DONE] ").is_done());
        assert!(!Event::data("[done]").is_done());
        assert!(!Event::default().is_done());
    }
}
