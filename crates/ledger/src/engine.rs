//! The engine: per-account books of leased credit and the holds served from them.

use crate::policy::Policy;
use std::collections::{HashMap, VecDeque};
use tollgate_billing::Amount;

/// Milliseconds on the driver's clock (Unix milliseconds in the gateway).
pub type Millis = u64;

/// A hold placed by this engine. Only the engine makes them, and each closes once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HoldId(u64);

/// A hold that waits for credit; [`Engine::credit_answered`] or [`Engine::tick`] resolves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(u64);

/// A lease as the database names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LeaseId(pub String);

/// Why a hold was not placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The balance, less what is held and leased elsewhere, does not cover the hold.
    #[error("insufficient balance: {requested} requested, {available} available")]
    Insufficient {
        /// What the database could still lease.
        available: Amount,
        /// What the hold needed.
        requested: Amount,
    },
    /// The account is disabled.
    #[error("the account is disabled")]
    Disabled,
    /// The database did not answer (in time); nothing was held.
    #[error("the ledger is unavailable: {0}")]
    Unavailable(String),
    /// The amount cannot be held (negative).
    #[error("invalid hold: {0}")]
    Invalid(&'static str),
}

/// Misuse of a hold id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    /// The hold is not open: it never existed or was already settled or released.
    #[error("hold {0:?} is not open")]
    NotOpen(HoldId),
    /// A charge cannot be negative; the hold stays open.
    #[error("a charge cannot be negative")]
    NegativeCharge,
}

/// Holds that waited for credit, as they were decided: placed, or refused and why.
pub type Resolved = Vec<(Ticket, Result<HoldId, Refusal>)>;

/// What [`Engine::hold`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldOutcome {
    /// Held from the lease, in memory. `top_up` asks for more credit ahead of need: send it,
    /// nobody waits for its answer.
    Placed {
        /// The hold.
        hold: HoldId,
        /// A credit request to send, if the lease runs low.
        top_up: Option<CreditRequest>,
    },
    /// The lease cannot cover it: the hold waits for credit. `request` is `Some` when this call
    /// opened the account's credit request (send it); `None` when one is already in flight.
    Pending {
        /// Resolved later by [`Engine::credit_answered`] or [`Engine::tick`].
        ticket: Ticket,
        /// The request to send, if any.
        request: Option<CreditRequest>,
    },
    /// Refused without asking the database (a fresh refusal, or an invalid amount).
    Refused(Refusal),
}

/// A request for credit: grow the lease `lease` (or open one when `None`, or when the database
/// no longer has it) by `want`, or by exactly `need` when the balance is near zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditRequest {
    /// Matches the answer to the request.
    pub id: u64,
    /// The account.
    pub account: String,
    /// The lease to grow.
    pub lease: Option<LeaseId>,
    /// The least that helps: the hold that waits (zero for a top-up ahead of need).
    pub need: Amount,
    /// What the recent spend suggests.
    pub want: Amount,
}

/// The database's answer to a [`CreditRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreditAnswer {
    /// `granted` was added to `lease` (a new lease when it differs from the engine's), which
    /// now lives until `expires_at`.
    Granted {
        /// The lease that holds the credit.
        lease: LeaseId,
        /// What was added to it.
        granted: Amount,
        /// Its new expiry.
        expires_at: Millis,
    },
    /// Nothing was granted.
    Refused(Refusal),
}

/// The database's answer to [`LeaseCommand::Renew`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenewAnswer {
    /// The lease lives until `expires_at`.
    Renewed {
        /// Its new expiry.
        expires_at: Millis,
    },
    /// The lease had expired (or was returned) in the database: serve nothing more from it.
    Lost,
    /// The account was disabled; the lease was returned.
    Disabled,
}

/// What [`Engine::tick`] asks the driver to tell the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseCommand {
    /// Extend the lease by a TTL; answer with [`Engine::renewed`].
    Renew {
        /// The account.
        account: String,
        /// The lease.
        lease: LeaseId,
    },
    /// Give what is left of an idle lease back to the balance. No answer is needed.
    Return {
        /// The account.
        account: String,
        /// The lease.
        lease: LeaseId,
    },
    /// Send this credit request (a waiting hold still needs credit).
    Credit(CreditRequest),
    /// Give `by` of the lease back — what its holds do not reserve — because an operator's
    /// correction recalled it ([`Engine::recall`]). No answer is needed.
    Shrink {
        /// The account.
        account: String,
        /// The lease.
        lease: LeaseId,
        /// What goes back to the balance.
        by: Amount,
    },
}

/// A settled hold, for the journal: one ledger row that takes `amount` off the balance, of which
/// `from_lease` comes out of `lease` — the lease its hold was served from — and the rest from
/// what the account has available. The database pays the lease's part only while that lease is
/// still open and this replica's (the fence: `tollgate_store`'s `pay`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// The account.
    pub account: String,
    /// The lease the hold was served from (none for a hold that waited on no lease).
    pub lease: Option<LeaseId>,
    /// The charge.
    pub amount: Amount,
    /// The part of it the lease pays.
    pub from_lease: Amount,
    /// What the hold reserved.
    pub held: Amount,
}

/// One account as the engine sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AccountView {
    /// The current lease and what is left of it.
    pub lease: Option<(LeaseId, Amount)>,
    /// Sum of the open holds on the current lease.
    pub reserved: Amount,
    /// Open holds, on any lease.
    pub open_holds: u64,
    /// Holds waiting for credit.
    pub waiting: u64,
}

/// The ledger engine's state: one book per account with activity on this replica.
#[derive(Debug)]
pub struct Engine {
    policy: Policy,
    books: HashMap<String, Book>,
    holds: HashMap<HoldId, OpenHold>,
    next_id: u64,
}

#[derive(Debug)]
struct OpenHold {
    account: String,
    amount: i64,
    lease: Option<LeaseId>,
}

#[derive(Debug, Default)]
struct Book {
    lease: Option<Lease>,
    /// Sum of the open holds served from `lease`.
    reserved: i64,
    /// Open holds of this account, on any lease.
    open: u64,
    pending: Option<Pending>,
    refused: Option<(Millis, Refusal)>,
    last_active: Millis,
    /// The latest hold's amount: sizes top-ups before any spend is seen.
    last_need: i64,
    /// Leases this book gave up (returned, lost, expired, disabled). A grant that names one
    /// arrives after the engine stopped trusting it: it is returned, never installed again, so
    /// a lease's remaining and its holds' reservations always start from the database's word.
    retired: VecDeque<LeaseId>,
    spend: SpendWindow,
}

#[derive(Debug)]
struct Lease {
    id: LeaseId,
    /// Granted minus what charges have taken: equals the lease row's amount once the journal
    /// is written.
    remaining: i64,
    expires_at: Millis,
    renewing: bool,
}

#[derive(Debug)]
struct Pending {
    request: u64,
    asked_at: Millis,
    waiters: VecDeque<(Ticket, i64)>,
}

/// Spend in the current and the previous window.
#[derive(Debug, Default)]
struct SpendWindow {
    start: Millis,
    current: i64,
    previous: i64,
}

impl SpendWindow {
    fn roll(&mut self, now: Millis, window: Millis) {
        let window = window.max(1);
        if now >= self.start.saturating_add(window.saturating_mul(2)) {
            *self = SpendWindow {
                start: now,
                ..SpendWindow::default()
            };
        } else if now >= self.start.saturating_add(window) {
            self.previous = self.current;
            self.current = 0;
            self.start = self.start.saturating_add(window);
        }
    }

    fn recent(&self) -> i64 {
        self.current.saturating_add(self.previous)
    }
}

impl Lease {
    fn usable(&self, now: Millis, policy: &Policy) -> bool {
        self.expires_at > now.saturating_add(policy.expiry_margin_ms)
    }
}

/// How many retired lease ids a book remembers; answers older than that are long timed out.
const RETIRED_REMEMBERED: usize = 16;

impl Book {
    /// Gives up the current lease: nothing more is served from it, and a late grant naming it
    /// is returned (see `retired`). Its open holds keep their reservation on it only.
    fn retire_lease(&mut self) -> Option<LeaseId> {
        let lease = self.lease.take()?;
        self.reserved = 0;
        if self.retired.len() >= RETIRED_REMEMBERED {
            self.retired.pop_front();
        }
        self.retired.push_back(lease.id.clone());
        Some(lease.id)
    }

    fn free(&self, now: Millis, policy: &Policy) -> i64 {
        match &self.lease {
            Some(lease) if lease.usable(now, policy) => {
                lease.remaining.saturating_sub(self.reserved)
            }
            _ => 0,
        }
    }

    fn usable_lease(&self, now: Millis, policy: &Policy) -> Option<LeaseId> {
        self.lease
            .as_ref()
            .filter(|l| l.usable(now, policy))
            .map(|l| l.id.clone())
    }

    fn want(&self, need: i64, policy: &Policy) -> i64 {
        need.saturating_mul(policy.need_multiple.max(1))
            .max(self.spend.recent())
            .max(policy.min_want.nanos())
    }

    fn is_idle(&self, now: Millis) -> bool {
        self.open == 0
            && self.lease.is_none()
            && self.pending.is_none()
            && self.refused.as_ref().is_none_or(|(until, _)| *until <= now)
    }
}

impl Engine {
    /// An engine with no accounts.
    pub fn new(policy: Policy) -> Engine {
        Engine {
            policy,
            books: HashMap::new(),
            holds: HashMap::new(),
            next_id: 1,
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    fn next(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Reserves `amount` of `account`'s credit: from its lease when that covers it, otherwise
    /// after the database grants more (the hold then waits).
    pub fn hold(&mut self, account: &str, amount: Amount, now: Millis) -> HoldOutcome {
        if amount.is_negative() {
            return HoldOutcome::Refused(Refusal::Invalid("a hold cannot be negative"));
        }
        let need = amount.nanos();
        let ticket = Ticket(self.next());
        let policy = self.policy.clone();
        let book = self.books.entry(account.to_owned()).or_default();
        book.last_active = now;
        book.last_need = need;
        // Served from the lease when it covers the hold — also while a top-up is in flight —
        // unless earlier holds already wait for credit (first come, first served).
        let queue_empty = book.pending.as_ref().is_none_or(|p| p.waiters.is_empty());
        if queue_empty && book.free(now, &policy) >= need {
            let hold = self.place(account, need);
            let top_up = self.top_up_if_low(account, now);
            return HoldOutcome::Placed { hold, top_up };
        }
        if let Some(pending) = &mut book.pending {
            // Queue behind the request in flight.
            pending.waiters.push_back((ticket, need));
            return HoldOutcome::Pending {
                ticket,
                request: None,
            };
        }
        if let Some((until, refusal)) = &book.refused {
            let still = *until > now
                && match refusal {
                    Refusal::Insufficient { available, .. } => need > available.nanos(),
                    _ => true,
                };
            if still {
                return HoldOutcome::Refused(match refusal {
                    Refusal::Insufficient { available, .. } => Refusal::Insufficient {
                        available: *available,
                        requested: amount,
                    },
                    other => other.clone(),
                });
            }
        }
        let request = self.open_request(account, need, [(ticket, need)].into(), now);
        HoldOutcome::Pending {
            ticket,
            request: Some(request),
        }
    }

    fn place(&mut self, account: &str, need: i64) -> HoldId {
        let id = HoldId(self.next());
        let book = self.books.entry(account.to_owned()).or_default();
        book.reserved = book.reserved.saturating_add(need);
        book.open += 1;
        let lease = book.lease.as_ref().map(|l| l.id.clone());
        self.holds.insert(
            id,
            OpenHold {
                account: account.to_owned(),
                amount: need,
                lease,
            },
        );
        id
    }

    fn open_request(
        &mut self,
        account: &str,
        need: i64,
        waiters: VecDeque<(Ticket, i64)>,
        now: Millis,
    ) -> CreditRequest {
        let id = self.next();
        let policy = self.policy.clone();
        let book = self.books.entry(account.to_owned()).or_default();
        book.pending = Some(Pending {
            request: id,
            asked_at: now,
            waiters,
        });
        CreditRequest {
            id,
            account: account.to_owned(),
            lease: book.usable_lease(now, &policy),
            need: Amount::from_nanos(need),
            want: Amount::from_nanos(book.want(need, &policy)),
        }
    }

    /// Asks for more credit ahead of need when the lease's free part runs low.
    fn top_up_if_low(&mut self, account: &str, now: Millis) -> Option<CreditRequest> {
        let policy = &self.policy;
        let book = self.books.get(account)?;
        if book.pending.is_some() {
            return None;
        }
        let want = book.want(book.last_need, policy);
        let threshold = want.saturating_mul(policy.top_up_below_percent) / 100;
        if book.free(now, policy) >= threshold {
            return None;
        }
        let mut request = self.open_request(account, 0, VecDeque::new(), now);
        request.want = Amount::from_nanos(want);
        Some(request)
    }

    /// Applies the database's answer to `request` and resolves the holds that waited for it, in
    /// order. Holds a grant did not cover (a burst larger than the lease) keep waiting on a
    /// follow-up request for what they need together, returned here to be sent; a refusal
    /// refuses them all.
    pub fn credit_answered(
        &mut self,
        request: &CreditRequest,
        answer: CreditAnswer,
        now: Millis,
    ) -> (Resolved, Vec<LeaseCommand>) {
        let policy = self.policy.clone();
        let account = request.account.as_str();
        let mut commands = Vec::new();
        let book = self.books.entry(account.to_owned()).or_default();
        // A grant always lands in the book, even one that comes after its request timed out:
        // the database holds that credit, and only a lease the engine knows is renewed or
        // returned. A grant on a lease the engine gave up goes back at once.
        let refusal = match answer {
            CreditAnswer::Granted { lease, .. } if book.retired.contains(&lease) => {
                commands.push(LeaseCommand::Return {
                    account: account.to_owned(),
                    lease,
                });
                None
            }
            CreditAnswer::Granted {
                lease,
                granted,
                expires_at,
            } => {
                if book.lease.as_ref().is_some_and(|l| l.id != lease) {
                    // Replaced (the database no longer had the old one open): give it up.
                    if let Some(old) = book.retire_lease() {
                        commands.push(LeaseCommand::Return {
                            account: account.to_owned(),
                            lease: old,
                        });
                    }
                }
                match &mut book.lease {
                    Some(current) if current.id == lease => {
                        current.remaining = current.remaining.saturating_add(granted.nanos());
                        current.expires_at = current.expires_at.max(expires_at);
                    }
                    _ => {
                        // A new lease: holds on the old one no longer count against it.
                        book.lease = Some(Lease {
                            id: lease,
                            remaining: granted.nanos(),
                            expires_at,
                            renewing: false,
                        });
                        book.reserved = 0;
                    }
                }
                book.refused = None;
                None
            }
            CreditAnswer::Refused(refusal) => {
                if matches!(refusal, Refusal::Insufficient { .. } | Refusal::Disabled) {
                    book.refused =
                        Some((now.saturating_add(policy.refusal_ttl_ms), refusal.clone()));
                }
                if refusal == Refusal::Disabled
                    && let Some(old) = book.retire_lease()
                {
                    commands.push(LeaseCommand::Return {
                        account: account.to_owned(),
                        lease: old,
                    });
                }
                Some(refusal)
            }
        };
        let Some(pending) = book.pending.take_if(|p| p.request == request.id) else {
            return (Vec::new(), commands);
        };
        let mut resolved = Vec::new();
        let mut still_waiting = VecDeque::new();
        for (ticket, need) in pending.waiters {
            let book = self.books.entry(account.to_owned()).or_default();
            if still_waiting.is_empty() && book.free(now, &policy) >= need {
                resolved.push((ticket, Ok(self.place(account, need))));
                continue;
            }
            match &refusal {
                Some(Refusal::Insufficient { available, .. }) => resolved.push((
                    ticket,
                    Err(Refusal::Insufficient {
                        available: *available,
                        requested: Amount::from_nanos(need),
                    }),
                )),
                Some(other) => resolved.push((ticket, Err(other.clone()))),
                None => still_waiting.push_back((ticket, need)),
            }
        }
        if !still_waiting.is_empty() {
            let total = still_waiting
                .iter()
                .fold(0i64, |sum, (_, need)| sum.saturating_add(*need));
            let follow_up = self.open_request(account, total, still_waiting, now);
            commands.push(LeaseCommand::Credit(follow_up));
        }
        (resolved, commands)
    }

    /// Closes `hold` with a charge of `amount` (which may differ from what was held) and returns
    /// the journal entry. The hold cannot be closed again.
    pub fn settle(
        &mut self,
        hold: HoldId,
        amount: Amount,
        now: Millis,
    ) -> Result<Charge, LedgerError> {
        if amount.is_negative() {
            return Err(LedgerError::NegativeCharge);
        }
        let open = self.holds.remove(&hold).ok_or(LedgerError::NotOpen(hold))?;
        let window = self.policy.spend_window_ms;
        let book = self.books.entry(open.account.clone()).or_default();
        book.open = book.open.saturating_sub(1);
        book.last_active = now;
        book.spend.roll(now, window);
        book.spend.current = book.spend.current.saturating_add(amount.nanos());
        let (lease, from_lease) = match &mut book.lease {
            Some(current) if Some(&current.id) == open.lease.as_ref() => {
                book.reserved = book.reserved.saturating_sub(open.amount);
                // Its own reservation and whatever no other hold reserves: a settlement above
                // its hold never takes what the lease holds for other requests.
                let unreserved = current.remaining.saturating_sub(book.reserved).max(0);
                let taken = amount.nanos().min(unreserved);
                current.remaining -= taken;
                (Some(current.id.clone()), taken)
            }
            // The hold's lease is gone (lost, expired, replaced): the lease pays nothing, and
            // the charge still names it, so that the database can tell a late charge.
            _ => (open.lease.clone(), 0),
        };
        Ok(Charge {
            account: open.account,
            lease,
            amount,
            from_lease: Amount::from_nanos(from_lease),
            held: Amount::from_nanos(open.amount),
        })
    }

    /// Closes `hold` with no charge; returns what it held.
    pub fn release(&mut self, hold: HoldId, now: Millis) -> Result<Amount, LedgerError> {
        let open = self.holds.remove(&hold).ok_or(LedgerError::NotOpen(hold))?;
        let book = self.books.entry(open.account.clone()).or_default();
        book.open = book.open.saturating_sub(1);
        book.last_active = now;
        if book.lease.as_ref().map(|l| &l.id) == open.lease.as_ref() {
            book.reserved = book.reserved.saturating_sub(open.amount);
        }
        Ok(Amount::from_nanos(open.amount))
    }

    /// Applies the answer to a [`LeaseCommand::Renew`].
    pub fn renewed(&mut self, account: &str, lease: &LeaseId, answer: RenewAnswer, now: Millis) {
        let refusal_ttl = self.policy.refusal_ttl_ms;
        let Some(book) = self.books.get_mut(account) else {
            return;
        };
        let Some(current) = book.lease.as_mut().filter(|l| &l.id == lease) else {
            return;
        };
        current.renewing = false;
        match answer {
            RenewAnswer::Renewed { expires_at } => {
                current.expires_at = current.expires_at.max(expires_at)
            }
            // The database closed it already: nothing to return.
            RenewAnswer::Lost => {
                book.retire_lease();
            }
            RenewAnswer::Disabled => {
                book.retire_lease();
                book.refused = Some((now.saturating_add(refusal_ttl), Refusal::Disabled));
            }
        }
    }

    /// Time passes: renews leases in use that near their expiry, returns idle ones, forgets
    /// expired ones, and refuses holds whose credit request went unanswered. Returns the
    /// commands to send and the holds it resolved.
    pub fn tick(&mut self, now: Millis) -> (Vec<LeaseCommand>, Resolved) {
        let policy = self.policy.clone();
        let mut commands = Vec::new();
        let mut resolved = Vec::new();
        for (account, book) in &mut self.books {
            if let Some(pending) = book
                .pending
                .take_if(|p| now.saturating_sub(p.asked_at) >= policy.pending_timeout_ms)
            {
                for (ticket, _) in pending.waiters {
                    resolved.push((
                        ticket,
                        Err(Refusal::Unavailable("no answer from the database".into())),
                    ));
                }
            }
            let idle = now.saturating_sub(book.last_active) >= policy.idle_return_ms;
            let Some(lease) = &mut book.lease else {
                continue;
            };
            if lease.expires_at <= now && book.reserved > 0 {
                // Expired here while holds on it are still open — a replica back from a pause,
                // or one whose renewals failed. Their charges go first and the lease is given
                // back after them: returned before, the charges would find its money gone to
                // whoever asked next (issue 42 item 11). No new hold is placed on it (it is not
                // valid), and the database's sweep still expires it if this takes too long.
                continue;
            }
            if lease.expires_at <= now || (book.reserved == 0 && idle && book.pending.is_none()) {
                // Idle, or its renewals failed and the database has (or will have) expired it:
                // give back whatever is left (a no-op for an expired lease).
                if let Some(lease) = book.retire_lease() {
                    commands.push(LeaseCommand::Return {
                        account: account.clone(),
                        lease,
                    });
                }
            } else if !lease.renewing
                && lease.expires_at.saturating_sub(now) <= policy.renew_within_ms
            {
                lease.renewing = true;
                commands.push(LeaseCommand::Renew {
                    account: account.clone(),
                    lease: lease.id.clone(),
                });
            }
        }
        self.books.retain(|_, book| !book.is_idle(now));
        (commands, resolved)
    }

    /// The database says an operator's correction recalled `lease` of `account`: what its
    /// holds do not reserve goes back at once (the lease keeps exactly its holds' reservation;
    /// the next hold asks for credit again, which the database weighs against the correction).
    /// A lease the engine no longer serves from is returned whole.
    pub fn recall(&mut self, account: &str, lease: &LeaseId) -> LeaseCommand {
        let current = self
            .books
            .get_mut(account)
            .and_then(|book| match &mut book.lease {
                Some(current) if &current.id == lease => Some((current, book.reserved)),
                _ => None,
            });
        match current {
            Some((current, reserved)) => {
                let by = current.remaining.saturating_sub(reserved).max(0);
                current.remaining -= by;
                LeaseCommand::Shrink {
                    account: account.to_owned(),
                    lease: lease.clone(),
                    by: Amount::from_nanos(by),
                }
            }
            None => LeaseCommand::Return {
                account: account.to_owned(),
                lease: lease.clone(),
            },
        }
    }

    /// Forgets a renewal in flight whose answer will not come (the driver's send failed).
    pub fn renewal_failed(&mut self, account: &str, lease: &LeaseId) {
        if let Some(current) = self
            .books
            .get_mut(account)
            .and_then(|b| b.lease.as_mut())
            .filter(|l| &l.id == lease)
        {
            current.renewing = false;
        }
    }

    /// What the engine knows of `account`.
    pub fn account(&self, account: &str) -> AccountView {
        let Some(book) = self.books.get(account) else {
            return AccountView::default();
        };
        AccountView {
            lease: book
                .lease
                .as_ref()
                .map(|l| (l.id.clone(), Amount::from_nanos(l.remaining))),
            reserved: Amount::from_nanos(book.reserved),
            open_holds: book.open,
            waiting: book.pending.as_ref().map_or(0, |p| p.waiters.len() as u64),
        }
    }

    /// Every lease the engine holds, with its account: returned on shutdown.
    pub fn leases(&self) -> Vec<(String, LeaseId)> {
        self.books
            .iter()
            .filter_map(|(a, b)| b.lease.as_ref().map(|l| (a.clone(), l.id.clone())))
            .collect()
    }

    /// What an open hold reserves.
    pub fn held(&self, hold: HoldId) -> Option<Amount> {
        self.holds.get(&hold).map(|h| Amount::from_nanos(h.amount))
    }

    /// Open holds on every account.
    pub fn open_holds(&self) -> usize {
        self.holds.len()
    }
}
