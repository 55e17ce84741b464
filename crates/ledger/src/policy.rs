//! How big leases are, how long they live, and how fresh a refusal must be.

use tollgate_billing::Amount;

/// The engine's tunables. The defaults are the ones `docs/decisions.md` argues for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// How long the database keeps a lease after its last renewal. A replica that dies loses
    /// its leases this long after its last renewal, so crash leftovers return within it.
    pub lease_ttl_ms: u64,
    /// A lease is renewed when less than this is left of it (and it is in use).
    pub renew_within_ms: u64,
    /// No hold is served from a lease with less than this left: the database may expire it
    /// before the request settles, and a second replica could spend the same money.
    pub expiry_margin_ms: u64,
    /// A lease with no open hold and no spend for this long is returned to the balance.
    pub idle_return_ms: u64,
    /// Recent spend is measured over this window; a lease is sized to cover one window.
    pub spend_window_ms: u64,
    /// A lease is at least this many times the hold that asked for it.
    pub need_multiple: i64,
    /// A refusal (no balance, disabled) is answered from memory for this long, then asked
    /// again: the freshness of a credit or a `keys disable` made elsewhere.
    pub refusal_ttl_ms: u64,
    /// A credit request with no answer for this long is given up: its holds are refused.
    pub pending_timeout_ms: u64,
    /// A lease is topped up ahead of need when its free credit falls below this share
    /// (per cent) of what a new lease would be.
    pub top_up_below_percent: i64,
    /// The smallest grant worth asking for, so that tiny holds do not ask the database often.
    pub min_want: Amount,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            lease_ttl_ms: 15_000,
            renew_within_ms: 10_000,
            expiry_margin_ms: 2_000,
            idle_return_ms: 5_000,
            spend_window_ms: 2_000,
            need_multiple: 8,
            refusal_ttl_ms: 1_000,
            pending_timeout_ms: 10_000,
            top_up_below_percent: 25,
            min_want: Amount::ZERO,
        }
    }
}

/// How much of a [`CreditRequest`](crate::CreditRequest) the database grants, given what the
/// account has `available` (balance less holds and every replica's leases): `want` while the
/// balance is comfortably above it, exactly `need` near zero — so that replicas sharing an
/// account cannot lease more than it has, nor starve each other by leasing it all — and
/// nothing when even `need` is not there. Both the writer and the tests use this one rule.
///
/// ```
/// use tollgate_billing::Amount;
/// use tollgate_ledger::grant;
/// let n = Amount::from_nanos;
/// assert_eq!(grant(n(1_000), n(10), n(80)), Some(n(80)));
/// assert_eq!(grant(n(100), n(10), n(80)), Some(n(10)));
/// assert_eq!(grant(n(5), n(10), n(80)), None);
/// assert_eq!(grant(n(100), n(0), n(80)), None); // a top-up ahead of need, near zero
/// ```
pub fn grant(available: Amount, need: Amount, want: Amount) -> Option<Amount> {
    let (available, need, want) = (available.nanos(), need.nanos().max(0), want.nanos().max(0));
    if want > 0 && available >= want.saturating_mul(2) {
        Some(Amount::from_nanos(want))
    } else if need > 0 && available >= need {
        Some(Amount::from_nanos(need))
    } else {
        None
    }
}
