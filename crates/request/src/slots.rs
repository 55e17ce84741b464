//! Per-key slots of long-held things (a leaf of the request path: it names no error, its callers
//! say what was refused to whom).

/// How many of one kind of long-held thing each key has open: multipart uploads against
/// `[server] max_uploads_per_key` (`docs/decisions.md`, "Connection hygiene"), live sessions
/// against `[realtime] max_sessions_per_key`. A key that opens many — each held by a
/// connection, a spool or a socket — is refused past the cap, at once, rather than let it hold
/// the gateway's memory, files and connections.
#[derive(Debug, Default)]
pub struct KeySlots {
    in_flight: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

/// One slot taken; given back when dropped.
#[derive(Debug)]
pub struct KeySlot {
    in_flight: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
    key: String,
}

impl KeySlots {
    /// A slot of `key`, or `None` when it already has `max` (the caller says what to whom).
    pub fn admit(&self, key: &str, max: usize) -> Option<KeySlot> {
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = in_flight.entry(key.to_owned()).or_default();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(KeySlot {
            in_flight: self.in_flight.clone(),
            key: key.to_owned(),
        })
    }
}

impl Drop for KeySlot {
    fn drop(&mut self) {
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = in_flight.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                in_flight.remove(&self.key);
            }
        }
    }
}
