//! # tollgate-ledger
//!
//! The sans-IO core of tollgate's ledger engine (`docs/architecture.md`, "The ledger engine").
//! It decides, in memory and without awaiting anything, whether a request may spend money, and
//! says what the database must learn about it. Commands go in, effects come out, and time is an
//! argument: the gateway's driver owns the clock, the database writer and the locks.
//!
//! - A replica serves per-request [`Engine::hold`]s from a **lease**: a durable reservation of a
//!   slice of an account's balance, granted by the database (RFC 4006's quota grant, TigerBeetle's
//!   pending transfer). While the lease has free credit a hold is one map insert.
//! - [`Engine::settle`] closes a hold and returns the [`Charge`] to journal (the ledger row);
//!   [`Engine::release`] closes it with no charge and no journal entry, since the balance does not
//!   change. A hold closes exactly once: its id leaves the table on the first close.
//! - When a lease runs short the engine asks for more credit ([`CreditRequest`]), sized from the
//!   account's recent spend; near a zero balance the database grants exactly one request's need,
//!   so replicas sharing an account can never overdraw it together.
//! - [`Engine::tick`] renews leases before they expire while they are in use, returns idle ones,
//!   and gives up on credit answers that never came.
//!
//! ```
//! use tollgate_billing::Amount;
//! use tollgate_ledger::{CreditAnswer, Engine, HoldOutcome, LeaseId, Policy};
//!
//! let mut engine = Engine::new(Policy::default());
//! let now = 1_000;
//! // No lease yet: the hold waits for credit.
//! let HoldOutcome::Pending { ticket, request: Some(request) } =
//!     engine.hold("acct_a", Amount::from_nanos(500), now)
//! else { unreachable!() };
//! // The driver asks the database, which grants what the request wanted.
//! let (resolved, follow_up) = engine.credit_answered(
//!     &request,
//!     CreditAnswer::Granted {
//!         lease: LeaseId("lease_1".into()),
//!         granted: request.want,
//!         expires_at: now + 15_000,
//!     },
//!     now,
//! );
//! let (waiting, Ok(hold)) = &resolved[0] else { unreachable!() };
//! assert_eq!(*waiting, ticket);
//! assert!(follow_up.is_empty());
//! // The charge is what the writer journals; the lease still has the rest.
//! let charge = engine.settle(*hold, Amount::from_nanos(420), now)?;
//! assert_eq!(charge.amount, Amount::from_nanos(420));
//! assert_eq!(charge.from_lease, Amount::from_nanos(420));
//! # Ok::<(), tollgate_ledger::LedgerError>(())
//! ```

mod engine;
mod policy;
pub mod quota;

pub use engine::{
    AccountView, Charge, CreditAnswer, CreditRequest, Engine, HoldId, HoldOutcome, LeaseCommand,
    LeaseId, LedgerError, Millis, Refusal, RenewAnswer, Resolved, Ticket,
};
pub use policy::{Policy, grant};
