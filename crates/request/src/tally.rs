//! A count kept in memory and written to the database at most once a second
//! ([`Tally::add`]): for events an unauthenticated sender can make as often as it likes — a
//! forged payment webhook (docs/decisions.md, "Payments") — whose count every replica must
//! add up in the database for an alert, but whose writes must not let a flood of them queue
//! behind (or in front of) the ledger's. The first event after a quiet second is written at
//! once, so an alert sees it at its next round; the rest of a burst are written together.

use std::sync::Mutex;

/// Events not written yet, and when the last write was.
#[derive(Debug, Default)]
pub struct Tally {
    inner: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    count: u64,
    written_at: Option<i64>,
}

/// The least time between two writes, milliseconds.
pub const WRITE_EVERY_MS: i64 = 1_000;

impl Tally {
    /// Counts one event at `now` (Unix ms): the number to write now, if a write is due (the
    /// caller writes it), or `None` while the last write is under a second old.
    pub fn add(&self, now: i64) -> Option<u64> {
        let mut pending = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        pending.count += 1;
        pending.take_if_due(now)
    }

    /// What is left to write at `now`, if a write is due: for a periodic flush, so that the
    /// end of a burst is counted even if no event follows it.
    pub fn due(&self, now: i64) -> Option<u64> {
        let mut pending = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if pending.count == 0 {
            return None;
        }
        pending.take_if_due(now)
    }

    /// Gives back a count whose write failed: it is written with the next.
    pub fn restore(&self, count: u64) {
        let mut pending = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        pending.count += count;
    }
}

impl Pending {
    fn take_if_due(&mut self, now: i64) -> Option<u64> {
        if self
            .written_at
            .is_some_and(|at| now.saturating_sub(at) < WRITE_EVERY_MS)
        {
            return None;
        }
        self.written_at = Some(now);
        Some(std::mem::take(&mut self.count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_one_write_a_second_and_none_is_lost() {
        let tally = Tally::default();
        // The first at once.
        assert_eq!(tally.add(10_000), Some(1));
        // 999 more within the second: no write.
        for n in 1..1000 {
            assert_eq!(tally.add(10_000 + n), None);
        }
        assert_eq!(tally.due(10_999), None);
        // A second on: the 999 in one write.
        assert_eq!(tally.due(11_000), Some(999));
        assert_eq!(tally.due(12_000), None, "nothing left");
        // A failed write is given back and written with the next.
        assert_eq!(tally.add(13_000), Some(1));
        tally.restore(1);
        assert_eq!(tally.add(13_500), None);
        assert_eq!(tally.add(14_000), Some(3));
    }
}
