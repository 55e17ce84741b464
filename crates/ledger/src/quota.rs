//! Windowed quotas — requests per minute, a meter's units per minute, money per day or month —
//! served in memory from **slices** the database grants, like money from a lease
//! (`docs/decisions.md`, "Rate limits and spend caps").
//!
//! The database holds, per holder, quota and window, how much all replicas have *taken* so far.
//! A replica asks for a slice (what one request needs, more when there is room: a tenth of the
//! limit), the database grants it only while the window has room, and the replica admits
//! requests from the slice with no round trip until it runs out. Units taken are never more than
//! the limit, so admissions never exceed it; the price is that a slice a replica took and did not
//! use is lost to the others for the rest of the window (at most one slice per replica).
//!
//! A quota counted on a figure known only at the end (tokens, money) admits on the estimate and
//! is trued up at settlement ([`Quota::settle`]): what was over-estimated goes back to the slice;
//! what the estimate missed comes out of the slice, and beyond it is *owed* — reported to the
//! database with the next slice request even past the limit, so the window's total stays true.
//!
//! ```
//! use tollgate_ledger::quota::{Admission, Quota, Window};
//!
//! let window = Window { start: 60_000, end: 120_000 };
//! let mut rpm = Quota::new(3);
//! // Nothing in hand: ask the database.
//! let Admission::Ask(ask) = rpm.admit(1, window) else { unreachable!() };
//! assert_eq!((ask.need, ask.want), (1, 1));
//! // It grants one slice; the window now has 1 of 3 taken.
//! rpm.granted(window, ask.want, 1);
//! assert!(matches!(rpm.admit(1, window), Admission::Admitted));
//! assert_eq!(rpm.remaining(window), 2);
//! ```

/// A window of time, in Unix milliseconds: `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// When it began.
    pub start: u64,
    /// When the next one begins.
    pub end: u64,
}

/// One quota of one holder on one replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quota {
    limit: u64,
    /// The window the figures below belong to.
    window_start: u64,
    /// Units this replica may still admit without asking: the unused part of its slices.
    in_hand: u64,
    /// What the database said all replicas had taken, at this replica's last ask.
    taken: u64,
    /// Units admitted beyond every slice (an estimate that fell short), to report.
    owed: u64,
    /// A slice request is out: others wait for its answer instead of asking again.
    asking: bool,
}

/// What [`Quota::admit`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Taken from the slice in hand.
    Admitted,
    /// Not enough in hand: the database must be asked (then [`Quota::granted`], and admit again).
    Ask(SliceAsk),
    /// A request of this replica is asking already: wait for its answer, then admit again.
    Wait,
    /// The window has no room for it: refused until `reset_at` (Unix ms).
    Refused {
        /// When the window ends.
        reset_at: u64,
    },
}

/// A slice request for the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceAsk {
    /// The window's start, its key in the database.
    pub window_start: u64,
    /// The least that helps (what the request needs beyond what is in hand).
    pub need: u64,
    /// What to take when there is room.
    pub want: u64,
    /// The limit the database checks against.
    pub limit: u64,
    /// Units admitted past every slice, added whatever the limit.
    pub owed: u64,
}

/// A slice is a tenth of the limit, at least what the request needs.
const SLICE_PARTS: u64 = 10;

impl Quota {
    /// A quota of `limit` units per window.
    pub fn new(limit: u64) -> Quota {
        Quota {
            limit,
            window_start: 0,
            in_hand: 0,
            taken: 0,
            owed: 0,
            asking: false,
        }
    }

    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// A changed limit takes effect at once (what was taken stays taken).
    pub fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
    }

    fn roll(&mut self, window: Window) {
        if self.window_start != window.start {
            self.window_start = window.start;
            self.in_hand = 0;
            self.taken = 0;
            self.owed = 0;
        }
    }

    /// Admits `n` units in `window`.
    pub fn admit(&mut self, n: u64, window: Window) -> Admission {
        self.roll(window);
        if self.in_hand >= n {
            self.in_hand -= n;
            return Admission::Admitted;
        }
        let need = n - self.in_hand;
        // Known to be full: refuse without asking (a flood of refusals costs no round trip).
        if self.taken.saturating_add(need) > self.limit {
            return Admission::Refused {
                reset_at: window.end,
            };
        }
        if self.asking {
            return Admission::Wait;
        }
        self.asking = true;
        Admission::Ask(SliceAsk {
            window_start: window.start,
            need,
            want: need.max(self.limit / SLICE_PARTS),
            limit: self.limit,
            owed: self.owed,
        })
    }

    /// The database's answer to an ask made in `window`: `granted` units (0: no room for the
    /// need), and what all replicas have taken now. The owed units it carried are reported.
    pub fn granted(&mut self, window: Window, granted: u64, taken: u64) {
        self.asking = false;
        if self.window_start != window.start {
            // The window rolled while asking: the grant belongs to a window that is over.
            return;
        }
        self.in_hand = self.in_hand.saturating_add(granted);
        self.taken = taken;
        self.owed = 0;
    }

    /// The ask failed (the database could not be reached): another request may ask.
    pub fn ask_failed(&mut self) {
        self.asking = false;
    }

    /// Gives `n` admitted units back (a request refused by another quota, or one that never
    /// reached the upstream), when still in the same window.
    pub fn give_back(&mut self, n: u64, window_start: u64) {
        if self.window_start == window_start {
            self.in_hand = self.in_hand.saturating_add(n);
        }
    }

    /// Trues up a request admitted on `estimate` units that used `actual`.
    pub fn settle(&mut self, estimate: u64, actual: u64, window_start: u64) {
        if self.window_start != window_start {
            return;
        }
        if actual <= estimate {
            self.in_hand = self.in_hand.saturating_add(estimate - actual);
            return;
        }
        let extra = actual - estimate;
        let from_hand = extra.min(self.in_hand);
        self.in_hand -= from_hand;
        self.owed = self.owed.saturating_add(extra - from_hand);
    }

    /// What the window still has for this replica: the rest of the limit as last known, plus
    /// what is in hand (for the `x-ratelimit-remaining-*` headers).
    pub fn remaining(&self, window: Window) -> u64 {
        if self.window_start != window.start {
            return self.limit;
        }
        self.limit
            .saturating_sub(self.taken)
            .saturating_add(self.in_hand)
            .saturating_sub(self.owed)
            .min(self.limit)
    }
}

/// The database's rule for a slice: `want` when the window has room for it, else what is left
/// if that covers `need`, else nothing. Returns the units granted.
pub fn slice_grant(taken: u64, ask: &SliceAsk) -> u64 {
    let left = ask.limit.saturating_sub(taken);
    if left < ask.need {
        0
    } else {
        ask.want.min(left)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const W: Window = Window {
        start: 0,
        end: 60_000,
    };

    /// Drives replicas against one shared "database" total, as the gateway does.
    fn ask_and_grant(q: &mut Quota, db: &mut u64, n: u64, w: Window) -> bool {
        loop {
            match q.admit(n, w) {
                Admission::Admitted => return true,
                Admission::Refused { .. } => return false,
                Admission::Wait => unreachable!("one request at a time here"),
                Admission::Ask(ask) => {
                    let g = slice_grant(*db, &ask);
                    *db += g + ask.owed;
                    q.granted(w, g, *db);
                    if g == 0 {
                        return matches!(q.admit(n, w), Admission::Admitted);
                    }
                }
            }
        }
    }

    #[test]
    fn a_window_admits_its_limit_and_then_refuses_until_it_ends() {
        let (mut q, mut db) = (Quota::new(20), 0);
        let admitted = (0..30)
            .filter(|_| ask_and_grant(&mut q, &mut db, 1, W))
            .count();
        assert_eq!(admitted, 20);
        assert_eq!(q.remaining(W), 0);
        assert_eq!(
            q.admit(1, W),
            Admission::Refused { reset_at: 60_000 },
            "no ask once known full"
        );
        let next = Window {
            start: 60_000,
            end: 120_000,
        };
        assert!(matches!(q.admit(1, next), Admission::Ask(_)));
    }

    #[test]
    fn one_asks_while_the_others_wait() {
        let mut q = Quota::new(100);
        assert!(matches!(q.admit(1, W), Admission::Ask(_)));
        assert_eq!(q.admit(1, W), Admission::Wait);
        q.ask_failed();
        assert!(matches!(q.admit(1, W), Admission::Ask(_)));
    }

    #[test]
    fn an_estimate_is_trued_up_and_a_shortfall_is_owed_to_the_window() {
        let (mut q, mut db) = (Quota::new(1_000), 0);
        assert!(ask_and_grant(&mut q, &mut db, 100, W));
        assert_eq!(db, 100, "a slice of a tenth, at least the need");
        // Used 40 of the 100 admitted: 60 back in hand.
        q.settle(100, 40, W.start);
        assert!(matches!(q.admit(60, W), Admission::Admitted));
        // Used 300 on an estimate of 60: 240 owed, reported with the next ask.
        q.settle(60, 300, W.start);
        let Admission::Ask(ask) = q.admit(1, W) else {
            panic!()
        };
        assert_eq!(ask.owed, 240);
    }

    proptest! {
        /// However requests interleave over replicas, what the replicas admit on estimates that
        /// hold never exceeds the limit, and a replica refuses only when the window, counting
        /// the slices the others hold unused, has no room.
        #[test]
        fn replicas_never_admit_more_than_the_limit(
            limit in 1u64..200,
            requests in proptest::collection::vec((0usize..3, 1u64..20), 1..300),
        ) {
            let mut replicas = vec![Quota::new(limit); 3];
            let mut db = 0u64;
            let mut admitted = 0u64;
            for (r, n) in requests {
                if ask_and_grant(&mut replicas[r], &mut db, n, W) {
                    admitted += n;
                } else {
                    let unused: u64 = replicas.iter().map(|q| q.in_hand).sum();
                    prop_assert!(admitted + unused + n > limit, "refused with room");
                }
                prop_assert!(admitted <= limit);
                prop_assert!(db <= limit);
            }
        }
    }
}
