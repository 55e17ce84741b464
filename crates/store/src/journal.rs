//! The ledger engine's journal (DESIGN §4, `docs/architecture.md` "The ledger engine"): charges
//! and lease operations written in batches, one transaction per batch, by the engine's writer.
//!
//! A lease is a row in `leases` and its remaining amount in `accounts.leased_nanos`. A charge
//! takes its amount off `balance_nanos` (one ledger row) and its `from_lease` share off the lease
//! and `leased_nanos` — unless the lease has meanwhile been expired by a sweeper, which already
//! returned what was left of it, and then the balance alone pays. Locks are taken lease first,
//! then account, everywhere, so that two replicas' batches and the expiry sweep cannot deadlock.

use crate::ids::new_id;
use crate::policy::PriceGroup;
use crate::sql::{Col, Param, Statements};
use crate::usage::{UsageRecord, usage_json, write_usage};
use crate::{Backend, Store, StoreError, now_millis};
use std::collections::BTreeMap;
use std::sync::Arc;
use tollgate_billing::Amount;

/// One charge for the ledger: a settled request hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    /// The price group it was priced in, and its multiplier; `None`: list prices. Shared, to
    /// keep a queued charge small.
    pub price_group: Option<Arc<PriceGroup>>,
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
    /// A record of the usage log, written with the batch (no transaction of its own).
    Usage(UsageRecord),
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

/// Rows per multi-row INSERT: 16 parameters each stays far below SQLite's and PostgreSQL's
/// limits on bound parameters.
const INSERT_CHUNK: usize = 256;

impl Store {
    /// Writes `entries` in one transaction, in order: each run of consecutive charges together
    /// ([`write_charges`]), each lease operation as its own statements. Returns one outcome per
    /// lease operation, in order. On error nothing is written; the caller retries the whole
    /// batch.
    ///
    /// On an SQLite file the batch is written by the journal thread
    /// ([`crate::sqlite_journal`]); otherwise through the writer pool.
    pub async fn write_journal(
        &self,
        writer: &JournalWriter,
        entries: impl Into<Arc<[JournalEntry]>>,
    ) -> Result<Vec<LeaseOutcome>, StoreError> {
        let entries = entries.into();
        if let Some(journal) = self.sqlite_journal()? {
            return journal.write(writer, entries).await;
        }
        let charges_only = entries.iter().all(|e| !matches!(e, JournalEntry::Lease(_)))
            && entries.iter().any(|e| matches!(e, JournalEntry::Charge(_)));
        if self.backend() == Backend::Postgres && charges_only {
            // One statement (the charges with the usage records) is its own transaction: no
            // BEGIN and COMMIT round trips.
            let mut conn = self.writer().acquire().await?;
            return write_entries(
                &mut *conn,
                writer,
                &entries,
                Backend::Postgres,
                now_millis(),
            )
            .await;
        }
        let mut tx = self.write_tx().await?;
        let outcomes =
            write_entries(&mut *tx, writer, &entries, self.backend(), now_millis()).await?;
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
            let mut tx = self.write_tx().await?;
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

/// Writes `entries` on `db`, inside the caller's transaction.
pub(crate) async fn write_entries<S: Statements>(
    db: &mut S,
    writer: &JournalWriter,
    entries: &[JournalEntry],
    backend: Backend,
    now: i64,
) -> Result<Vec<LeaseOutcome>, StoreError> {
    let lock = match backend {
        Backend::Postgres => " FOR UPDATE",
        Backend::Sqlite => "",
    };
    let mut outcomes = Vec::new();
    // Usage records go with the first run of charges (on PostgreSQL, in the same call), or on
    // their own at the end of the batch.
    let mut usage: Option<Vec<&UsageRecord>> = Some(
        entries
            .iter()
            .filter_map(|e| match e {
                JournalEntry::Usage(u) => Some(u),
                _ => None,
            })
            .collect(),
    );
    let mut start = 0;
    while start < entries.len() {
        let run = entries[start..]
            .iter()
            .take_while(|e| !matches!(e, JournalEntry::Lease(_)))
            .count();
        if run > 0 {
            let charges: Vec<&ChargeRow> = entries[start..start + run]
                .iter()
                .filter_map(|e| match e {
                    JournalEntry::Charge(c) => Some(c),
                    _ => None,
                })
                .collect();
            if !charges.is_empty() {
                let with = match backend {
                    Backend::Postgres => usage.take().unwrap_or_default(),
                    Backend::Sqlite => Vec::new(),
                };
                write_charges(db, &charges, &with, backend, now).await?;
            }
            start += run;
            continue;
        }
        if let JournalEntry::Lease(op) = &entries[start] {
            outcomes.push(lease_op(db, writer, op, lock, now).await?);
        }
        start += 1;
    }
    if let Some(usage) = usage.filter(|u| !u.is_empty()) {
        write_usage(db, &usage).await?;
    }
    Ok(outcomes)
}

/// Writes a run of charges: leases first (sorted), then accounts (sorted), then the rows. On
/// PostgreSQL that is one call of a stored function, so a batch of charges is one round trip —
/// and, written alone, one implicit transaction: the batch's commit wait is what each of its
/// clients waits for, and five statements in a transaction cost four more round trips
/// (docs/benchmarks.md). SQLite, in-process, runs the per-row statements, each prepared once.
async fn write_charges<S: Statements>(
    db: &mut S,
    charges: &[&ChargeRow],
    usage: &[&UsageRecord],
    backend: Backend,
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
    let mut per_account: BTreeMap<&str, i64> = BTreeMap::new();
    for c in charges {
        let total = per_account.entry(c.account_id.as_str()).or_default();
        *total = total.checked_add(c.amount.nanos()).ok_or_else(overflow)?;
    }
    let ids: Vec<String> = charges.iter().map(|_| new_id("led")).collect();
    let later = later_in_batch(charges)?;
    if backend == Backend::Postgres {
        let batch = ChargeBatch {
            charges,
            from_leases: &from_leases,
            per_account: &per_account,
            ids: &ids,
            later: &later,
            usage,
        };
        return charge_batch_call(db, batch, now).await;
    }
    let mut leased_off: BTreeMap<String, i64> = BTreeMap::new();
    for (lease, share) in &from_leases {
        let whole = db
            .fetch_optional(
                "UPDATE leases SET amount_nanos = amount_nanos - $1
                 WHERE id = $2 AND state = 'open' AND amount_nanos >= $1
                 RETURNING account_id",
                &[Param::Int(*share), Param::Text(lease)],
                &[Col::Text],
            )
            .await?;
        let (account, taken) = match whole {
            Some(mut row) => (row.text(0)?, *share),
            None => match take_short(db, lease, *share).await? {
                Some(taken) => taken,
                None => continue,
            },
        };
        let off = leased_off.entry(account).or_default();
        *off = off.checked_add(taken).ok_or_else(overflow)?;
    }
    // The account's final balance, from which each row's balance_after is worked out.
    let mut after: BTreeMap<&str, i64> = BTreeMap::new();
    for (account, total) in &per_account {
        let off = leased_off.get(*account).copied().unwrap_or(0);
        let row = db
            .fetch_optional(
                "UPDATE accounts SET balance_nanos = balance_nanos - $1, leased_nanos = leased_nanos - $2
                 WHERE id = $3 RETURNING balance_nanos",
                &[Param::Int(*total), Param::Int(off), Param::Text(account)],
                &[Col::Int],
            )
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("account {account}")))?;
        after.insert(account, row.int(0)?);
    }
    let mut balances_after = Vec::with_capacity(charges.len());
    for (c, later) in charges.iter().zip(&later) {
        let last = after.get(c.account_id.as_str()).copied().unwrap_or(0);
        balances_after.push(last.checked_add(*later).ok_or_else(overflow)?);
    }
    let multipliers: Vec<Option<String>> = charges
        .iter()
        .map(|c| {
            c.memo
                .price_group
                .as_ref()
                .map(|g| g.multiplier.to_string())
        })
        .collect();
    // Rows go in chunks of a power of two (256, 128, …, 1) so that only nine distinct INSERT
    // statements exist: each is prepared once per connection and then reused from the
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
        let mut params = Vec::with_capacity(chunk.len() * INSERT_COLUMNS);
        for (i, c) in chunk.iter().enumerate() {
            let group = c.memo.price_group.as_ref();
            let negated = c.amount.nanos().checked_neg().ok_or_else(overflow)?;
            params.extend([
                Param::Text(&ids[start + i]),
                Param::Text(&c.account_id),
                Param::Int(negated),
                Param::Int(balances_after[start + i]),
                Param::Text(&c.memo.model),
                Param::OptText(c.memo.quantity.as_deref()),
                Param::Text(&c.hold_id),
                Param::OptText(c.lease_id.as_deref()),
                Param::OptText(c.memo.key_id.as_deref()),
                Param::OptText(c.memo.request_id.as_deref()),
                Param::Int(i64::from(c.memo.estimated)),
                Param::OptText(c.memo.note.as_deref()),
                Param::OptText(c.memo.anomaly.as_deref()),
                Param::OptText(group.map(|g| g.name.as_str())),
                Param::OptText(multipliers[start + i].as_deref()),
                Param::Int(now),
            ]);
        }
        db.execute(&insert_charges_sql(chunk.len()), &params)
            .await?;
        start += size;
    }
    Ok(())
}

/// Each row's `later`: what the rows after it in the batch charge its account. A row's
/// `balance_after` is its account's balance once the whole batch is paid, plus its `later`.
fn later_in_batch(charges: &[&ChargeRow]) -> Result<Vec<i64>, StoreError> {
    let mut sums: BTreeMap<&str, i64> = BTreeMap::new();
    let mut later = vec![0; charges.len()];
    for (i, c) in charges.iter().enumerate().rev() {
        let sum = sums.entry(c.account_id.as_str()).or_default();
        later[i] = *sum;
        *sum = sum.checked_add(c.amount.nanos()).ok_or_else(overflow)?;
    }
    Ok(later)
}

/// A run of charges on PostgreSQL, with everything worked out in Rust.
struct ChargeBatch<'a> {
    charges: &'a [&'a ChargeRow],
    from_leases: &'a BTreeMap<&'a str, i64>,
    per_account: &'a BTreeMap<&'a str, i64>,
    ids: &'a [String],
    later: &'a [i64],
    usage: &'a [&'a UsageRecord],
}

/// A run of charges on PostgreSQL: one call of `tollgate_charge_batch_v2` (`crate::schema` says
/// what it does), with the batch's usage records. Everything that needs no row of the database
/// is worked out here, where it is cheap — each account's total, each row's `later` — and
/// passed as JSON: sqlx's `Any` driver binds no arrays.
async fn charge_batch_call<S: Statements>(
    db: &mut S,
    batch: ChargeBatch<'_>,
    now: i64,
) -> Result<(), StoreError> {
    let ChargeBatch {
        charges,
        from_leases,
        per_account,
        ids,
        later,
        usage,
    } = batch;
    let shares: Vec<serde_json::Value> = from_leases
        .iter()
        .map(|(id, share)| serde_json::json!({"id": id, "share": share}))
        .collect();
    let totals: Vec<serde_json::Value> = per_account
        .iter()
        .map(|(id, total)| serde_json::json!({"id": id, "total": total}))
        .collect();
    let mut rows = Vec::with_capacity(charges.len());
    for ((c, id), later) in charges.iter().zip(ids).zip(later) {
        rows.push(serde_json::json!({
            "id": id,
            "account_id": c.account_id,
            "charge": c.amount.nanos(),
            "later": later,
            "model": c.memo.model,
            "quantity": c.memo.quantity,
            "hold_id": c.hold_id,
            "lease_id": c.lease_id,
            "key_id": c.memo.key_id,
            "request_id": c.memo.request_id,
            "estimated": i64::from(c.memo.estimated),
            "note": c.memo.note,
            "anomaly": c.memo.anomaly,
            "price_group": c.memo.price_group.as_ref().map(|g| &g.name),
            "price_multiplier": c.memo.price_group.as_ref().map(|g| g.multiplier.to_string()),
        }));
    }
    let [shares, totals, rows] =
        [shares, totals, rows].map(|v| serde_json::Value::from(v).to_string());
    let usage = usage_json(usage);
    let written = db
        .fetch_optional(
            "SELECT tollgate_charge_batch_v2($1::jsonb, $2::jsonb, $3::jsonb, $4::jsonb, $5)",
            &[
                Param::Text(&shares),
                Param::Text(&totals),
                Param::Text(&rows),
                Param::Text(&usage),
                Param::Int(now),
            ],
            &[Col::Int],
        )
        .await?;
    let written = written.map(|row| row.int(0)).transpose()?;
    if written != i64::try_from(charges.len()).ok() {
        return Err(StoreError::Corrupt(format!(
            "the charge batch wrote {written:?} of {} rows",
            charges.len()
        )));
    }
    Ok(())
}

/// A lease that could not give its whole share: expired (it pays nothing — the sweep returned
/// what was left) or short (it gives what it has). The account and what was taken, or `None`.
async fn take_short<S: Statements>(
    db: &mut S,
    lease: &str,
    share: i64,
) -> Result<Option<(String, i64)>, StoreError> {
    let Some((account_id, amount)) = open_lease(db, lease, "").await? else {
        return Ok(None);
    };
    let taken = share.min(amount.max(0));
    db.execute(
        "UPDATE leases SET amount_nanos = amount_nanos - $1 WHERE id = $2",
        &[Param::Int(taken), Param::Text(lease)],
    )
    .await?;
    Ok(Some((account_id, taken)))
}

/// A lease's account and remaining amount, locked on PostgreSQL; `None` unless it is open.
async fn open_lease<S: Statements>(
    db: &mut S,
    lease_id: &str,
    lock: &str,
) -> Result<Option<(String, i64)>, StoreError> {
    let row = db
        .fetch_optional(
            &format!("SELECT account_id, amount_nanos, state FROM leases WHERE id = $1{lock}"),
            &[Param::Text(lease_id)],
            &[Col::Text, Col::Int, Col::Text],
        )
        .await?;
    let Some(mut row) = row else {
        return Ok(None);
    };
    if row.text(2)? != "open" {
        return Ok(None);
    }
    Ok(Some((row.text(0)?, row.int(1)?)))
}

/// Parameters per ledger row of [`insert_charges_sql`].
const INSERT_COLUMNS: usize = 16;

/// The INSERT of `rows` charge rows.
fn insert_charges_sql(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO ledger (id, account_id, kind, amount_nanos, balance_after_nanos, model,
             quantity, hold_id, lease_id, key_id, request_id, estimated, note, anomaly,
             price_group, price_multiplier, created_at)
         VALUES ",
    );
    for i in 0..rows {
        let p = i * INSERT_COLUMNS;
        if i > 0 {
            sql.push(',');
        }
        sql.push_str(&format!("(${}, ${}, 'charge'", p + 1, p + 2));
        for k in 3..=INSERT_COLUMNS {
            sql.push_str(&format!(", ${}", p + k));
        }
        sql.push(')');
    }
    sql
}

async fn lease_op<S: Statements>(
    db: &mut S,
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
                let row = db
                    .fetch_optional(
                        &format!("SELECT state FROM leases WHERE id = $1{lock}"),
                        &[Param::Text(id)],
                        &[Col::Text],
                    )
                    .await?;
                if let Some(mut row) = row
                    && row.text(0)? == "open"
                {
                    open_lease = Some(id.clone());
                }
            }
            let row = db
                .fetch_optional(
                    &format!(
                        "SELECT balance_nanos, held_nanos, leased_nanos, disabled FROM accounts
                         WHERE id = $1{lock}"
                    ),
                    &[Param::Text(account_id)],
                    &[Col::Int, Col::Int, Col::Int, Col::Int],
                )
                .await?;
            let Some(row) = row else {
                return Ok(LeaseOutcome::NoAccount);
            };
            let (balance, held, leased, disabled) =
                (row.int(0)?, row.int(1)?, row.int(2)?, row.int(3)?);
            if disabled != 0 {
                return Ok(LeaseOutcome::Disabled);
            }
            let available = Amount::from_nanos(balance.saturating_sub(held).saturating_sub(leased));
            let Some(granted) = (writer.grant)(available, *need, *want) else {
                return Ok(LeaseOutcome::Insufficient { available });
            };
            let id = match open_lease {
                Some(id) => {
                    db.execute(
                        "UPDATE leases SET amount_nanos = amount_nanos + $1,
                             granted_nanos = granted_nanos + $1, expires_at = $2 WHERE id = $3",
                        &[
                            Param::Int(granted.nanos()),
                            Param::Int(expires_at),
                            Param::Text(&id),
                        ],
                    )
                    .await?;
                    id
                }
                None => {
                    let id = new_id("lease");
                    db.execute(
                        "INSERT INTO leases (id, account_id, owner, amount_nanos, granted_nanos,
                             state, expires_at, created_at)
                         VALUES ($1, $2, $3, $4, $4, 'open', $5, $6)",
                        &[
                            Param::Text(&id),
                            Param::Text(account_id),
                            Param::Text(&writer.owner),
                            Param::Int(granted.nanos()),
                            Param::Int(expires_at),
                            Param::Int(now),
                        ],
                    )
                    .await?;
                    id
                }
            };
            db.execute(
                "UPDATE accounts SET leased_nanos = leased_nanos + $1 WHERE id = $2",
                &[Param::Int(granted.nanos()), Param::Text(account_id)],
            )
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
            let renewed = db
                .execute(
                    "UPDATE leases SET expires_at = $1 WHERE id = $2 AND state = 'open'",
                    &[Param::Int(expires_at), Param::Text(lease_id)],
                )
                .await?;
            if renewed == 0 {
                return Ok(LeaseOutcome::Lost);
            }
            let disabled = db
                .fetch_optional(
                    "SELECT disabled FROM accounts WHERE id = $1",
                    &[Param::Text(account_id)],
                    &[Col::Int],
                )
                .await?;
            let disabled = match disabled {
                Some(row) => row.int(0)? != 0,
                None => true,
            };
            if disabled {
                close_lease(db, lease_id, "returned", lock, now).await?;
                return Ok(LeaseOutcome::Disabled);
            }
            Ok(LeaseOutcome::Renewed { expires_at })
        }
        LeaseOp::Return { lease_id } => Ok(
            match close_lease(db, lease_id, "returned", lock, now).await? {
                Some(amount) => LeaseOutcome::Returned { amount },
                None => LeaseOutcome::Lost,
            },
        ),
    }
}

/// Closes an open lease and gives what is left of it back; `None` when it was not open.
async fn close_lease<S: Statements>(
    db: &mut S,
    lease_id: &str,
    state: &str,
    lock: &str,
    now: i64,
) -> Result<Option<Amount>, StoreError> {
    let Some((account_id, amount)) = open_lease(db, lease_id, lock).await? else {
        return Ok(None);
    };
    db.execute(
        "UPDATE leases SET state = $1, closed_at = $2 WHERE id = $3",
        &[Param::Text(state), Param::Int(now), Param::Text(lease_id)],
    )
    .await?;
    db.execute(
        "UPDATE accounts SET leased_nanos = leased_nanos - $1 WHERE id = $2",
        &[Param::Int(amount), Param::Text(&account_id)],
    )
    .await?;
    Ok(Some(Amount::from_nanos(amount)))
}

fn overflow() -> StoreError {
    StoreError::InvalidAmount("a batch's sums overflow".into())
}
