//! The ledger engine's journal (DESIGN §4, `docs/architecture.md` "The ledger engine"): charges
//! and lease operations written in batches, one transaction per batch, by the engine's writer.
//!
//! A lease is a row in `leases` and its remaining amount in `accounts.leased_nanos`. A charge
//! takes its amount off `balance_nanos` (one ledger row) and its `from_lease` share off the lease
//! and `leased_nanos` — unless the lease has meanwhile been expired by a sweeper, which already
//! returned what was left of it, and then the balance alone pays. Locks are taken lease first,
//! then account, everywhere, so that two replicas' batches and the expiry sweep cannot deadlock.

use crate::ids::new_id;
use crate::{Backend, Store, StoreError, now_millis};
use std::collections::BTreeMap;
use tollgate_billing::Amount;

/// One charge for the ledger: a settled request hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeRow {
    /// The hold's id (unique in the ledger: a hold is charged once).
    pub hold_id: String,
    /// The account.
    pub account_id: String,
    /// The lease the hold was served from, when it pays a share.
    pub lease_id: Option<String>,
    /// The charge.
    pub amount: Amount,
    /// The lease's share of it.
    pub from_lease: Amount,
    /// What else the row says.
    pub memo: ChargeMemo,
}

/// What the ledger row of a charge says besides the amounts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChargeMemo {
    /// Public model.
    pub model: String,
    /// The metered quantity (JSON).
    pub quantity: Option<String>,
    /// The key that was presented.
    pub key_id: Option<String>,
    /// The request id.
    pub request_id: Option<String>,
    /// Charged on a local estimate.
    pub estimated: bool,
    /// Why, when the settlement is not an ordinary one.
    pub note: Option<String>,
    /// What was refused of the upstream's figure.
    pub anomaly: Option<String>,
}

/// A lease operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseOp {
    /// Grow `lease` (or open a new lease when `None` or no longer open) by the grant rule.
    Grant {
        /// The account.
        account_id: String,
        /// The lease to grow.
        lease_id: Option<String>,
        /// The least that helps.
        need: Amount,
        /// What the recent spend suggests.
        want: Amount,
    },
    /// Extend an open lease.
    Renew {
        /// The account.
        account_id: String,
        /// The lease.
        lease_id: String,
    },
    /// Give an idle lease back.
    Return {
        /// The lease.
        lease_id: String,
    },
}

/// What a [`LeaseOp`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseOutcome {
    /// Credit was granted to `lease_id`, which lives until `expires_at`.
    Granted {
        /// The lease (new or grown).
        lease_id: String,
        /// What was added.
        granted: Amount,
        /// Unix milliseconds.
        expires_at: i64,
    },
    /// The balance does not cover `need`.
    Insufficient {
        /// What could still be leased.
        available: Amount,
    },
    /// The account is disabled (a renewed lease was returned).
    Disabled,
    /// The account does not exist.
    NoAccount,
    /// Renewed until `expires_at`.
    Renewed {
        /// Unix milliseconds.
        expires_at: i64,
    },
    /// The lease is no longer open (expired or returned).
    Lost,
    /// Returned; `amount` went back to the balance.
    Returned {
        /// What was left of it.
        amount: Amount,
    },
}

/// One item of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalEntry {
    /// A charge and its ledger row.
    Charge(ChargeRow),
    /// A lease operation.
    Lease(LeaseOp),
}

/// How the writer grants credit; the ledger engine's rule (`tollgate_ledger::grant`).
pub type GrantRule = fn(available: Amount, need: Amount, want: Amount) -> Option<Amount>;

/// Who writes, and for how long leases last.
#[derive(Debug, Clone)]
pub struct JournalWriter {
    /// This replica's name on its leases.
    pub owner: String,
    /// How long a granted or renewed lease lives, in milliseconds.
    pub lease_ttl_ms: i64,
    /// The grant rule.
    pub grant: GrantRule,
}

/// Rows per multi-row INSERT: 14 parameters each stays far below SQLite's and PostgreSQL's
/// limits on bound parameters.
const INSERT_CHUNK: usize = 256;

impl Store {
    /// Writes `entries` in one transaction, in order: each run of consecutive charges as one
    /// multi-row INSERT with one UPDATE per lease and per account, each lease operation as its
    /// own statements. Returns one outcome per lease operation, in order. On error nothing is
    /// written; the caller retries the whole batch.
    pub async fn write_journal(
        &self,
        writer: &JournalWriter,
        entries: &[JournalEntry],
    ) -> Result<Vec<LeaseOutcome>, StoreError> {
        let lock = match self.backend() {
            Backend::Postgres => " FOR UPDATE",
            Backend::Sqlite => "",
        };
        let now = now_millis();
        let mut outcomes = Vec::new();
        let mut tx = self.writer().begin().await?;
        let mut start = 0;
        while start < entries.len() {
            let run = entries[start..]
                .iter()
                .take_while(|e| matches!(e, JournalEntry::Charge(_)))
                .count();
            if run > 0 {
                let charges: Vec<&ChargeRow> = entries[start..start + run]
                    .iter()
                    .filter_map(|e| match e {
                        JournalEntry::Charge(c) => Some(c),
                        JournalEntry::Lease(_) => None,
                    })
                    .collect();
                write_charges(&mut tx, &charges, lock, now).await?;
                start += run;
                continue;
            }
            if let JournalEntry::Lease(op) = &entries[start] {
                outcomes.push(lease_op(&mut tx, writer, op, lock, now).await?);
            }
            start += 1;
        }
        tx.commit().await?;
        Ok(outcomes)
    }

    /// Expires every open lease past its expiry (a replica that died, or one that could not
    /// renew): what was left of each goes back to its account. Any replica may run it.
    /// Returns how many it expired.
    pub async fn expire_leases(&self) -> Result<u64, StoreError> {
        let now = now_millis();
        let due: Vec<(String,)> = sqlx::query_as(
            "SELECT id FROM leases WHERE state = 'open' AND expires_at < $1 ORDER BY id",
        )
        .bind(now)
        .fetch_all(self.pool())
        .await?;
        let mut expired = 0;
        for (id,) in due {
            let mut tx = self.writer().begin().await?;
            // The compare-and-swap on `state` and `expires_at`: a renewal that came first wins.
            let won: Option<(String, i64)> = sqlx::query_as(
                "UPDATE leases SET state = 'expired', closed_at = $1
                 WHERE id = $2 AND state = 'open' AND expires_at < $1
                 RETURNING account_id, amount_nanos",
            )
            .bind(now)
            .bind(&id)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some((account_id, amount)) = won {
                sqlx::query("UPDATE accounts SET leased_nanos = leased_nanos - $1 WHERE id = $2")
                    .bind(amount)
                    .bind(&account_id)
                    .execute(&mut *tx)
                    .await?;
                tracing::info!(lease = %id, account = %account_id, amount, "expired a lease");
                expired += 1;
            }
            tx.commit().await?;
        }
        Ok(expired)
    }

    /// Open leases: (id, account, owner, remaining, expires_at).
    pub async fn open_leases(
        &self,
    ) -> Result<Vec<(String, String, String, Amount, i64)>, StoreError> {
        let rows: Vec<(String, String, String, i64, i64)> = sqlx::query_as(
            "SELECT id, account_id, owner, amount_nanos, expires_at FROM leases
             WHERE state = 'open' ORDER BY account_id, id",
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, account, owner, amount, expires)| {
                (id, account, owner, Amount::from_nanos(amount), expires)
            })
            .collect())
    }
}

/// Writes a run of charges: leases first (sorted), then accounts (sorted), then the rows.
async fn write_charges(
    tx: &mut sqlx::AnyConnection,
    charges: &[&ChargeRow],
    lock: &str,
    now: i64,
) -> Result<(), StoreError> {
    // What each lease should give, and what it can: a lease the sweeper expired gives nothing.
    let mut from_leases: BTreeMap<&str, i64> = BTreeMap::new();
    for c in charges {
        if let Some(lease) = c.lease_id.as_deref().filter(|_| c.from_lease.is_positive()) {
            let share = from_leases.entry(lease).or_default();
            *share = share
                .checked_add(c.from_lease.nanos())
                .ok_or_else(overflow)?;
        }
    }
    let mut leased_off: BTreeMap<String, i64> = BTreeMap::new();
    for (lease, share) in &from_leases {
        // The common case in one statement: the lease is open and covers its share (the
        // engine never lets it go below zero). A row lock on PostgreSQL, like FOR UPDATE.
        let taken_whole: Option<(String,)> = sqlx::query_as(
            "UPDATE leases SET amount_nanos = amount_nanos - $1
             WHERE id = $2 AND state = 'open' AND amount_nanos >= $1 RETURNING account_id",
        )
        .bind(*share)
        .bind(*lease)
        .fetch_optional(&mut *tx)
        .await?;
        let (account, taken) = match taken_whole {
            Some((account,)) => (account, *share),
            None => {
                // Expired (it pays nothing: the sweep returned what was left) or short.
                let row: Option<(String, i64, String)> =
                    sqlx::query_as(sqlx::AssertSqlSafe(format!(
                        "SELECT account_id, amount_nanos, state FROM leases WHERE id = $1{lock}"
                    )))
                    .bind(*lease)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some((account, amount, state)) = row else {
                    continue;
                };
                if state != "open" {
                    continue;
                }
                let taken = (*share).min(amount.max(0));
                sqlx::query("UPDATE leases SET amount_nanos = amount_nanos - $1 WHERE id = $2")
                    .bind(taken)
                    .bind(*lease)
                    .execute(&mut *tx)
                    .await?;
                (account, taken)
            }
        };
        let off = leased_off.entry(account).or_default();
        *off = off.checked_add(taken).ok_or_else(overflow)?;
    }
    let mut per_account: BTreeMap<&str, i64> = BTreeMap::new();
    for c in charges {
        let total = per_account.entry(c.account_id.as_str()).or_default();
        *total = total.checked_add(c.amount.nanos()).ok_or_else(overflow)?;
    }
    // The balance after each row: the account's final balance, walked back over later rows.
    let mut after: BTreeMap<&str, i64> = BTreeMap::new();
    for (account, total) in &per_account {
        let off = leased_off.get(*account).copied().unwrap_or(0);
        let (balance,): (i64,) = sqlx::query_as(
            "UPDATE accounts SET balance_nanos = balance_nanos - $1, leased_nanos = leased_nanos - $2
             WHERE id = $3 RETURNING balance_nanos",
        )
        .bind(*total)
        .bind(off)
        .bind(*account)
        .fetch_one(&mut *tx)
        .await?;
        after.insert(account, balance);
    }
    let mut balances_after = vec![0i64; charges.len()];
    for (i, c) in charges.iter().enumerate().rev() {
        let balance = after.entry(c.account_id.as_str()).or_default();
        balances_after[i] = *balance;
        *balance = balance.checked_add(c.amount.nanos()).ok_or_else(overflow)?;
    }
    // Rows go in chunks of a power of two (256, 128, …, 1) so that only nine distinct INSERT
    // statements exist: each is prepared once per connection and then reused from sqlx's
    // statement cache, where a statement of every batch size would be parsed anew each time.
    let mut start = 0;
    while start < charges.len() {
        let left = charges.len() - start;
        let size = if left >= INSERT_CHUNK {
            INSERT_CHUNK
        } else {
            1 << (usize::BITS - 1 - left.leading_zeros())
        };
        let chunk = &charges[start..start + size];
        let mut sql = String::from(
            "INSERT INTO ledger (id, account_id, kind, amount_nanos, balance_after_nanos, model,
                 quantity, hold_id, lease_id, key_id, request_id, estimated, note, anomaly, created_at)
             VALUES ",
        );
        for i in 0..chunk.len() {
            let p = i * 14;
            if i > 0 {
                sql.push(',');
            }
            sql.push_str(&format!(
                "(${}, ${}, 'charge', ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5,
                p + 6,
                p + 7,
                p + 8,
                p + 9,
                p + 10,
                p + 11,
                p + 12,
                p + 13,
                p + 14
            ));
        }
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (i, c) in chunk.iter().enumerate() {
            let negated = c.amount.nanos().checked_neg().ok_or_else(overflow)?;
            query = query
                .bind(new_id("led"))
                .bind(c.account_id.clone())
                .bind(negated)
                .bind(balances_after[start + i])
                .bind(c.memo.model.clone())
                .bind(c.memo.quantity.clone())
                .bind(c.hold_id.clone())
                .bind(c.lease_id.clone())
                .bind(c.memo.key_id.clone())
                .bind(c.memo.request_id.clone())
                .bind(i64::from(c.memo.estimated))
                .bind(c.memo.note.clone())
                .bind(c.memo.anomaly.clone())
                .bind(now);
        }
        query.execute(&mut *tx).await?;
        start += size;
    }
    Ok(())
}

async fn lease_op(
    tx: &mut sqlx::AnyConnection,
    writer: &JournalWriter,
    op: &LeaseOp,
    lock: &str,
    now: i64,
) -> Result<LeaseOutcome, StoreError> {
    let expires_at = now.saturating_add(writer.lease_ttl_ms);
    match op {
        LeaseOp::Grant {
            account_id,
            lease_id,
            need,
            want,
        } => {
            // Lease first, then account (the lock order).
            let mut open_lease = None;
            if let Some(id) = lease_id {
                let row: Option<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT state FROM leases WHERE id = $1{lock}"
                )))
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
                if row.is_some_and(|(state,)| state == "open") {
                    open_lease = Some(id.clone());
                }
            }
            let row: Option<(i64, i64, i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT balance_nanos, held_nanos, leased_nanos, disabled FROM accounts
                 WHERE id = $1{lock}"
            )))
            .bind(account_id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some((balance, held, leased, disabled)) = row else {
                return Ok(LeaseOutcome::NoAccount);
            };
            if disabled != 0 {
                return Ok(LeaseOutcome::Disabled);
            }
            let available = Amount::from_nanos(balance.saturating_sub(held).saturating_sub(leased));
            let Some(granted) = (writer.grant)(available, *need, *want) else {
                return Ok(LeaseOutcome::Insufficient { available });
            };
            let id = match open_lease {
                Some(id) => {
                    sqlx::query(
                        "UPDATE leases SET amount_nanos = amount_nanos + $1,
                             granted_nanos = granted_nanos + $1, expires_at = $2 WHERE id = $3",
                    )
                    .bind(granted.nanos())
                    .bind(expires_at)
                    .bind(&id)
                    .execute(&mut *tx)
                    .await?;
                    id
                }
                None => {
                    let id = new_id("lease");
                    sqlx::query(
                        "INSERT INTO leases (id, account_id, owner, amount_nanos, granted_nanos,
                             state, expires_at, created_at)
                         VALUES ($1, $2, $3, $4, $4, 'open', $5, $6)",
                    )
                    .bind(&id)
                    .bind(account_id)
                    .bind(&writer.owner)
                    .bind(granted.nanos())
                    .bind(expires_at)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                    id
                }
            };
            sqlx::query("UPDATE accounts SET leased_nanos = leased_nanos + $1 WHERE id = $2")
                .bind(granted.nanos())
                .bind(account_id)
                .execute(&mut *tx)
                .await?;
            Ok(LeaseOutcome::Granted {
                lease_id: id,
                granted,
                expires_at,
            })
        }
        LeaseOp::Renew {
            account_id,
            lease_id,
        } => {
            let renewed =
                sqlx::query("UPDATE leases SET expires_at = $1 WHERE id = $2 AND state = 'open'")
                    .bind(expires_at)
                    .bind(lease_id)
                    .execute(&mut *tx)
                    .await?;
            if renewed.rows_affected() == 0 {
                return Ok(LeaseOutcome::Lost);
            }
            let disabled: Option<(i64,)> =
                sqlx::query_as("SELECT disabled FROM accounts WHERE id = $1")
                    .bind(account_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            if disabled.is_none_or(|(d,)| d != 0) {
                close_lease(tx, lease_id, "returned", lock, now).await?;
                return Ok(LeaseOutcome::Disabled);
            }
            Ok(LeaseOutcome::Renewed { expires_at })
        }
        LeaseOp::Return { lease_id } => Ok(
            match close_lease(tx, lease_id, "returned", lock, now).await? {
                Some(amount) => LeaseOutcome::Returned { amount },
                None => LeaseOutcome::Lost,
            },
        ),
    }
}

/// Closes an open lease and gives what is left of it back; `None` when it was not open.
async fn close_lease(
    tx: &mut sqlx::AnyConnection,
    lease_id: &str,
    state: &str,
    lock: &str,
    now: i64,
) -> Result<Option<Amount>, StoreError> {
    let row: Option<(String, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT account_id, amount_nanos, state FROM leases WHERE id = $1{lock}"
    )))
    .bind(lease_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((account_id, amount, current)) = row else {
        return Ok(None);
    };
    if current != "open" {
        return Ok(None);
    }
    sqlx::query("UPDATE leases SET state = $1, closed_at = $2 WHERE id = $3")
        .bind(state)
        .bind(now)
        .bind(lease_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE accounts SET leased_nanos = leased_nanos - $1 WHERE id = $2")
        .bind(amount)
        .bind(&account_id)
        .execute(&mut *tx)
        .await?;
    Ok(Some(Amount::from_nanos(amount)))
}

fn overflow() -> StoreError {
    StoreError::InvalidAmount("a batch's sums overflow".into())
}
