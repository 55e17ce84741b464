//! `tollgate audit`: every money invariant of DESIGN §4, recomputed from the rows.

use crate::{Store, StoreError, now_millis};
use serde::Serialize;
use tollgate_billing::Amount;

/// How long past its expiry an open lease may stay open before it is a violation: the sweep
/// runs every second, so anything older than this was missed.
pub const LEASE_EXPIRY_GRACE_MS: i64 = 10_000;

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Which invariant (`balance_is_ledger_sum`, `held_is_open_holds`, …).
    pub rule: &'static str,
    /// What it concerns (an account, a hold, a task, a lease).
    pub subject: String,
    /// What was found.
    pub detail: String,
}

/// What the audit found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditReport {
    /// Accounts checked.
    pub accounts: u64,
    /// Ledger rows read.
    pub ledger_rows: u64,
    /// Holds read.
    pub holds: u64,
    /// Leases read.
    pub leases: u64,
    /// Tasks read.
    pub tasks: u64,
    /// Sum of every balance.
    pub total_balance: Amount,
    /// Sum of every credit and adjustment.
    pub total_credited: Amount,
    /// Sum of every charge.
    pub total_charged: Amount,
    /// Charges capped below the upstream's figure (`docs/decisions.md`).
    pub anomalies: u64,
    /// Accounts below zero (allowed only through a settlement above its hold; listed).
    pub negative_accounts: Vec<String>,
    /// The broken invariants; empty when the books are sound.
    pub violations: Vec<Violation>,
}

/// An account as stored and as its rows add up: id, name, balance, held, leased, the ledger's
/// sum, the open holds' sum, the open leases' sum.
type AccountFigures = (String, String, i64, i64, i64, i64, i64, i64);

impl Store {
    /// Checks every invariant: each balance equals the sum of its ledger rows; `held` equals the
    /// sum of open holds and `leased` the sum of open leases; every closed hold was closed once
    /// (a settled one has exactly its one charge row, a released one none); every finished task
    /// settled or refunded its hold exactly once, and a live one still holds; no lease is open
    /// past its expiry; credits minus charges equal the sum of balances.
    pub async fn audit(&self) -> Result<AuditReport, StoreError> {
        let mut violations = Vec::new();
        let mut flag = |rule: &'static str, subject: &str, detail: String| {
            violations.push(Violation {
                rule,
                subject: subject.to_owned(),
                detail,
            });
        };

        // One snapshot for every read: on a live database, a charge written between two reads
        // would otherwise show as money created or lost.
        let mut tx = self.pool().begin().await?;
        if self.backend() == crate::Backend::Postgres {
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .execute(&mut *tx)
                .await?;
        }

        // Per account: the stored figures against what the rows say. SUM over BIGINT is NUMERIC
        // on PostgreSQL, which `Any` cannot read: cast it back.
        let accounts: Vec<AccountFigures> = sqlx::query_as(
            "SELECT a.id, a.name, a.balance_nanos, a.held_nanos, a.leased_nanos,
                CAST(COALESCE((SELECT SUM(l.amount_nanos) FROM ledger l WHERE l.account_id = a.id), 0) AS BIGINT),
                CAST(COALESCE((SELECT SUM(h.amount_nanos) FROM holds h WHERE h.account_id = a.id AND h.state = 'open'), 0) AS BIGINT),
                CAST(COALESCE((SELECT SUM(s.amount_nanos) FROM leases s WHERE s.account_id = a.id AND s.state = 'open'), 0) AS BIGINT)
             FROM accounts a ORDER BY a.id",
        )
        .fetch_all(&mut *tx)
        .await?;
        let mut negative_accounts = Vec::new();
        let mut total_balance: i64 = 0;
        for (id, name, balance, held, leased, ledger_sum, open_holds, open_leases) in &accounts {
            let subject = format!("{name} ({id})");
            if balance != ledger_sum {
                flag(
                    "balance_is_ledger_sum",
                    &subject,
                    format!(
                        "balance {} but the ledger sums to {}",
                        Amount::from_nanos(*balance),
                        Amount::from_nanos(*ledger_sum)
                    ),
                );
            }
            if held != open_holds {
                flag(
                    "held_is_open_holds",
                    &subject,
                    format!(
                        "held {} but open holds sum to {}",
                        Amount::from_nanos(*held),
                        Amount::from_nanos(*open_holds)
                    ),
                );
            }
            if leased != open_leases {
                flag(
                    "leased_is_open_leases",
                    &subject,
                    format!(
                        "leased {} but open leases sum to {}",
                        Amount::from_nanos(*leased),
                        Amount::from_nanos(*open_leases)
                    ),
                );
            }
            if *held < 0 || *leased < 0 {
                flag(
                    "reservations_not_negative",
                    &subject,
                    format!("held {held}, leased {leased} nano-units"),
                );
            }
            if *balance < 0 {
                negative_accounts.push(format!("{name} ({id}): {}", Amount::from_nanos(*balance)));
            }
            total_balance = total_balance.saturating_add(*balance);
        }

        // Holds: closed once, with exactly the ledger rows their state implies.
        let holds: Vec<(String, String, Option<i64>, i64, i64)> = sqlx::query_as(
            "SELECT h.id, h.state, h.captured_nanos,
                CAST((SELECT COUNT(*) FROM ledger l WHERE l.hold_id = h.id) AS BIGINT),
                CAST(COALESCE((SELECT SUM(-l.amount_nanos) FROM ledger l WHERE l.hold_id = h.id), 0) AS BIGINT)
             FROM holds h ORDER BY h.id",
        )
        .fetch_all(&mut *tx)
        .await?;
        for (id, state, captured, rows, charged) in &holds {
            match state.as_str() {
                "open" | "released" if *rows != 0 => flag(
                    "hold_charged_once",
                    id,
                    format!("{state} but has {rows} charge rows"),
                ),
                "settled" if *rows != 1 || Some(*charged) != *captured => flag(
                    "hold_charged_once",
                    id,
                    format!("settled at {captured:?} with {rows} charge rows summing to {charged}"),
                ),
                "open" | "released" | "settled" => {}
                other => flag("hold_state_known", id, format!("state {other:?}")),
            }
        }

        // Tasks: a finished task's hold is closed the matching way; a live one's is open.
        let tasks: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT t.id, t.status, t.hold_id, h.state FROM tasks t
             LEFT JOIN holds h ON h.id = t.hold_id ORDER BY t.id",
        )
        .fetch_all(&mut *tx)
        .await?;
        for (id, status, hold, hold_state) in &tasks {
            let expected = match status.as_str() {
                "succeeded" => "settled",
                "failed" | "cancelled" | "expired" => "released",
                _ => "open",
            };
            match (hold, hold_state.as_deref()) {
                (None, _) => flag("task_has_hold", id, format!("{status} without a hold")),
                (Some(h), state) if state != Some(expected) => flag(
                    "task_settled_once",
                    id,
                    format!("{status} but hold {h} is {state:?}, expected {expected}"),
                ),
                _ => {}
            }
        }

        // Leases: none open long past its expiry; none below zero.
        let now = now_millis();
        let leases: Vec<(String, String, i64, i64)> =
            sqlx::query_as("SELECT id, state, amount_nanos, expires_at FROM leases ORDER BY id")
                .fetch_all(&mut *tx)
                .await?;
        for (id, state, amount, expires_at) in &leases {
            if state == "open" && *expires_at < now - LEASE_EXPIRY_GRACE_MS {
                flag(
                    "lease_not_past_expiry",
                    id,
                    format!("open {} ms past its expiry", now - expires_at),
                );
            }
            if *amount < 0 {
                flag("lease_not_negative", id, format!("{amount} nano-units"));
            }
        }

        // Conservation: what came in minus what was charged is what the accounts hold.
        let (credited, charged, ledger_rows, anomalies): (i64, i64, i64, i64) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(CASE WHEN kind <> 'charge' THEN amount_nanos ELSE 0 END), 0) AS BIGINT),
                    CAST(COALESCE(SUM(CASE WHEN kind = 'charge' THEN -amount_nanos ELSE 0 END), 0) AS BIGINT),
                    CAST(COUNT(*) AS BIGINT),
                    CAST(COALESCE(SUM(CASE WHEN anomaly IS NOT NULL THEN 1 ELSE 0 END), 0) AS BIGINT)
             FROM ledger",
        )
        .fetch_one(&mut *tx)
        .await?;
        if credited.checked_sub(charged) != Some(total_balance) {
            flag(
                "money_is_conserved",
                "all accounts",
                format!(
                    "credited {} − charged {} ≠ balances {}",
                    Amount::from_nanos(credited),
                    Amount::from_nanos(charged),
                    Amount::from_nanos(total_balance)
                ),
            );
        }
        let charge_without_hold: Vec<(String,)> = sqlx::query_as(
            "SELECT id FROM ledger WHERE kind = 'charge' AND hold_id IS NULL ORDER BY id",
        )
        .fetch_all(&mut *tx)
        .await?;
        for (id,) in &charge_without_hold {
            flag("charge_has_hold", id, "a charge row names no hold".into());
        }

        tx.rollback().await?;

        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        Ok(AuditReport {
            accounts: count(accounts.len()),
            ledger_rows: u64::try_from(ledger_rows).unwrap_or(0),
            holds: count(holds.len()),
            leases: count(leases.len()),
            tasks: count(tasks.len()),
            total_balance: Amount::from_nanos(total_balance),
            total_credited: Amount::from_nanos(credited),
            total_charged: Amount::from_nanos(charged),
            anomalies: u64::try_from(anomalies).unwrap_or(0),
            negative_accounts,
            violations,
        })
    }
}
