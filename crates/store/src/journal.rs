//! The ledger engine's journal (DESIGN §4, `docs/architecture.md` "The ledger engine"): charges
//! and lease operations written in batches, one transaction per batch, by the engine's writer.
//!
//! A lease is a row in `leases` and its remaining amount in `accounts.leased_nanos`. A charge
//! takes its amount off `balance_nanos` (one ledger row) and its `from_lease` share off the lease
//! and `leased_nanos` — unless the lease has meanwhile been expired by a sweeper, which already
//! returned what was left of it, and then the balance alone pays. Locks are taken lease first,
//! then account, everywhere, so that two replicas' batches and the expiry sweep cannot deadlock.

use crate::chain::{INSERT_LINES, LINE_WIDTH, LineRef};
use crate::ids::new_id;
use crate::policy::PriceGroup;
use crate::sql::{Col, Param, Statements};
use crate::usage::{UsageRecord, usage_json, write_usage};
use crate::{Backend, Store, StoreError, now_millis};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tollgate_billing::Amount;

/// How long past its expiry a replica's own sweep leaves its own lease to it
/// ([`Store::expire_leases_but`]).
pub const OWN_LEASE_GRACE_MS: i64 = 30_000;

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
    /// The version of the model's price it was priced at (`crate::prices`); `None` for a
    /// price that has none (a gateway built without the price book, tests).
    pub price_version: Option<i64>,
    /// The most it could be (`tollgate_metering::Bound`): `tollgate audit --recompute` charges
    /// the recorded quantity at its price up to this.
    pub bound: Option<Amount>,
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
    /// Give `by` of a lease back (what its holds do not reserve) because an operator's
    /// correction recalled it (`Store::credit_once`), and clear the recall.
    Shrink {
        /// The lease.
        lease_id: String,
        /// What to give back.
        by: Amount,
    },
}

/// What a [`LeaseOp`] came to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// Shrunk by `amount` (zero when its holds reserve all of it, or it is no longer open).
    Shrunk {
        /// What went back to the balance.
        amount: Amount,
    },
}

/// A charge written for less than it asked (`docs/decisions.md`, "Fenced leases"): its lease
/// was no longer the writer's, or the part above the lease found too little available. The
/// ledger row says the same in `anomaly` and `loss_nanos`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChargeLoss {
    /// The hold the charge settled.
    pub hold_id: String,
    /// The account.
    pub account_id: String,
    /// What the row charged.
    pub charged: Amount,
    /// What it could not: the operator's loss.
    pub loss: Amount,
    /// The lease it named was expired, returned or another replica's (a late charge).
    pub fenced: bool,
}

/// What a written batch came to: one outcome per lease operation, in order, and the charges
/// that took less than they asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Written {
    /// The lease operations' outcomes.
    pub leases: Vec<LeaseOutcome>,
    /// Short charges.
    pub losses: Vec<ChargeLoss>,
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

impl Store {
    /// How this process's runs of charges on PostgreSQL were priced (all zero on SQLite):
    /// by the writer, checked by the database, or by the database because what the writer
    /// remembered was stale (`charge_batch_call`).
    pub fn charge_runs(&self) -> ChargeRuns {
        self.writer_books
            .lock()
            .map(|books| books.runs)
            .unwrap_or_default()
    }

    /// Writes `entries` in one transaction, in order: each run of consecutive charges together
    /// ([`write_charges`]), each lease operation as its own statements. Returns one outcome per
    /// lease operation, in order, and the charges that could take less than they asked. On
    /// error nothing is written; the caller retries the whole batch.
    ///
    /// On an SQLite file the batch is written by the journal thread
    /// ([`crate::sqlite_journal`]); otherwise through the writer pool.
    pub async fn write_journal(
        &self,
        writer: &JournalWriter,
        entries: impl Into<Arc<[JournalEntry]>>,
    ) -> Result<Written, StoreError> {
        self.write_journal_batch(writer, &new_id("batch"), entries)
            .await
    }

    /// [`Store::write_journal`] of a batch named `batch`, which [`Store::journal_landed`] can
    /// answer for when the commit's answer was lost (issue 42: a replica retried a committed
    /// batch forever, refused by `ledger_hold_id_key`).
    pub async fn write_journal_batch(
        &self,
        writer: &JournalWriter,
        batch: &str,
        entries: impl Into<Arc<[JournalEntry]>>,
    ) -> Result<Written, StoreError> {
        let entries = entries.into();
        if let Some(journal) = self.sqlite_journal()? {
            // In-process: a commit's answer cannot be lost on the way.
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
                Writing::Postgres(&self.writer_books),
                now_millis(),
            )
            .await;
        }
        let mut tx = self.write_tx().await?;
        let now = now_millis();
        let writing = match self.backend() {
            Backend::Postgres => Writing::Postgres(&self.writer_books),
            Backend::Sqlite => Writing::Sqlite,
        };
        let written = write_entries(&mut *tx, writer, &entries, writing, now).await?;
        // The batch's name and what it came to, in its own transaction: the answer a writer
        // that lost the commit's reads back.
        let outcome =
            serde_json::to_string(&written).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        sqlx::query(
            "INSERT INTO journal_batches (id, owner, created_at, written) VALUES ($1, $2, $3, $4)",
        )
        .bind(batch)
        .bind(&writer.owner)
        .bind(now)
        .bind(outcome)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(written)
    }

    /// Whether the batch `batch` of `entries` was committed, and what it came to — asked after
    /// a write failed, since a commit whose answer was lost (a connection reset after the
    /// server committed) looks like a failure to the writer. A batch of charges only, written
    /// as one statement on PostgreSQL, is found by its holds (each is charged once: the ledger's
    /// `hold_id` is unique), and its short charges read back from their rows; any other by its
    /// row in `journal_batches`. `None`: not committed, write it again.
    pub async fn journal_landed(
        &self,
        batch: &str,
        entries: &[JournalEntry],
    ) -> Result<Option<Written>, StoreError> {
        if self.sqlite_journal()?.is_some() {
            return Ok(None);
        }
        let found: Option<(String,)> =
            sqlx::query_as("SELECT written FROM journal_batches WHERE id = $1")
                .bind(batch)
                .fetch_optional(self.pool())
                .await?;
        if let Some((written,)) = found {
            return serde_json::from_str(&written)
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("journal batch {batch}: {e}")));
        }
        let holds: Vec<&str> = entries
            .iter()
            .filter_map(|e| match e {
                JournalEntry::Charge(c) => Some(c.hold_id.as_str()),
                _ => None,
            })
            .collect();
        let charges_only = entries.iter().all(|e| !matches!(e, JournalEntry::Lease(_)));
        if holds.is_empty() || !charges_only || self.backend() != Backend::Postgres {
            return Ok(None);
        }
        let mut rows: Vec<(String, String, i64, i64, Option<String>)> = Vec::new();
        for chunk in holds.chunks(500) {
            let places: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
            let sql = format!(
                "SELECT hold_id, account_id, amount_nanos, loss_nanos, anomaly FROM ledger
                 WHERE kind = 'charge' AND hold_id IN ({})",
                places.join(", ")
            );
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql));
            for hold in chunk {
                query = query.bind(*hold);
            }
            rows.extend(query.fetch_all(self.pool()).await?);
        }
        match rows.len() {
            0 => Ok(None),
            n if n == holds.len() => Ok(Some(Written {
                leases: Vec::new(),
                losses: rows
                    .into_iter()
                    .filter(|(_, _, _, loss, _)| *loss > 0)
                    .map(|(hold_id, account_id, amount, loss, anomaly)| ChargeLoss {
                        hold_id,
                        account_id,
                        charged: Amount::from_nanos(amount.saturating_neg()),
                        loss: Amount::from_nanos(loss),
                        fenced: anomaly.is_some_and(|a| a.contains("late charge")),
                    })
                    .collect(),
            })),
            n => Err(StoreError::Corrupt(format!(
                "journal batch {batch}: {n} of its {} charges are in the ledger",
                holds.len()
            ))),
        }
    }

    /// Deletes the names of batches committed before `before` (Unix ms): a writer asks about
    /// its batch within seconds of writing it.
    pub async fn prune_journal_batches(&self, before: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM journal_batches WHERE created_at < $1")
            .bind(before)
            .execute(self.writer())
            .await?;
        Ok(done.rows_affected())
    }

    /// Expires every open lease past its expiry (a replica that died, or one that could not
    /// renew): what was left of each goes back to its account. Any replica may run it.
    /// Returns how many it expired.
    pub async fn expire_leases(&self) -> Result<u64, StoreError> {
        self.expire_leases_but(None).await
    }

    /// [`Store::expire_leases`], as the sweep of the replica named `own` runs it: its own
    /// leases only once they are [`OWN_LEASE_GRACE_MS`] past their expiry. A replica back from
    /// a pause writes the charges of the holds it served from a lease before it gives the lease
    /// back itself; its own sweep, waking with it, must not return that money first (issue 42
    /// item 11: the next request took it and a held charge was written at 0). Another replica's
    /// sweep expires it at once, as it must for a replica that died.
    pub async fn expire_leases_but(&self, own: Option<&str>) -> Result<u64, StoreError> {
        let now = now_millis();
        let due: Vec<(String,)> = sqlx::query_as(
            "SELECT id FROM leases WHERE state = 'open' AND expires_at < $1
                 AND NOT (owner = $2 AND expires_at >= $3)
             ORDER BY id",
        )
        .bind(now)
        .bind(own.unwrap_or_default())
        .bind(now.saturating_sub(OWN_LEASE_GRACE_MS))
        .fetch_all(self.pool())
        .await?;
        let mut expired = 0;
        for (id,) in due {
            let mut tx = self.write_tx().await?;
            // The compare-and-swap on `state` and `expires_at`: a renewal that came first wins.
            let won: Option<(String, i64)> = sqlx::query_as(
                "UPDATE leases SET state = 'expired', closed_at = $1,
                     returned_nanos = returned_nanos + amount_nanos
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

    /// The open leases of `owner` that an operator's correction recalled: (account, lease).
    /// Its ledger engine gives their unreserved part back ([`LeaseOp::Shrink`]).
    pub async fn recalled_leases(&self, owner: &str) -> Result<Vec<(String, String)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT account_id, id FROM leases
             WHERE state = 'open' AND recall = 1 AND owner = $1 ORDER BY id",
        )
        .bind(owner)
        .fetch_all(self.pool())
        .await?)
    }
}

/// Which database a batch is written on, and on PostgreSQL what the writer remembers.
#[derive(Clone, Copy)]
pub(crate) enum Writing<'a> {
    Sqlite,
    Postgres(&'a Mutex<WriterBooks>),
}

/// Writes `entries` on `db`, inside the caller's transaction.
pub(crate) async fn write_entries<S: Statements>(
    db: &mut S,
    writer: &JournalWriter,
    entries: &[JournalEntry],
    writing: Writing<'_>,
    now: i64,
) -> Result<Written, StoreError> {
    let lock = match writing {
        Writing::Postgres(_) => " FOR UPDATE",
        Writing::Sqlite => "",
    };
    let mut written = Written::default();
    // Usage records go with the run of charges on PostgreSQL (in the same call) when the batch
    // has one, or on their own at the end of the batch, carrying what their charge came to.
    let charge_runs = entries
        .iter()
        .zip(entries.iter().skip(1).map(Some).chain([None]))
        .filter(|(e, next)| {
            !matches!(e, JournalEntry::Lease(_))
                && next.is_none_or(|n| matches!(n, JournalEntry::Lease(_)))
        })
        .count();
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
                let losses = match writing {
                    Writing::Postgres(books) => {
                        let with = match charge_runs {
                            1 => usage.take().unwrap_or_default(),
                            _ => Vec::new(),
                        };
                        charge_batch_call(db, writer, books, &charges, &with, now).await?
                    }
                    Writing::Sqlite => write_charges(db, writer, &charges, now).await?,
                };
                written.losses.extend(losses);
            }
            start += run;
            continue;
        }
        if let JournalEntry::Lease(op) = &entries[start] {
            written
                .leases
                .push(lease_op(db, writer, op, lock, now).await?);
            if let Writing::Postgres(books) = writing
                && let Ok(mut books) = books.lock()
            {
                books.forget();
            }
        }
        start += 1;
    }
    if let Some(usage) = usage.filter(|u| !u.is_empty()) {
        // A record says what its charge came to: a short charge's record is corrected.
        let corrected: Vec<UsageRecord> = usage
            .iter()
            .filter_map(|u| {
                let loss = written
                    .losses
                    .iter()
                    .find(|l| u.hold_id.as_deref() == Some(l.hold_id.as_str()))?;
                let mut record = (*u).clone();
                record.charge = loss.charged;
                Some(record)
            })
            .collect();
        let records: Vec<&UsageRecord> = usage
            .iter()
            .map(|u| corrected.iter().find(|c| c.id == u.id).unwrap_or(u))
            .collect();
        write_usage(db, &records).await?;
    }
    Ok(written)
}

/// One charge as the database can pay it (`docs/decisions.md`, "Fenced leases").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Paid {
    /// From the lease it named, when that lease is still open and the writer's.
    pub from_lease: i64,
    /// From what the account has available beside every reservation.
    pub from_free: i64,
}

impl Paid {
    fn charged(self) -> i64 {
        self.from_lease.saturating_add(self.from_free)
    }
}

/// How a run of charges is paid, in batch order: each charge takes its share from its lease
/// while the lease has it — nothing from a lease that is no longer open and the writer's (a
/// late charge of a replica that stalled past its lease: the fence) — and the rest from what
/// its account has available (balance − held − leased, never below zero). What neither covers
/// is not charged: it is the operator's loss. So no charge can take money another replica or
/// request holds, and none takes a balance below zero.
///
/// `leases` is what each named lease can give (zero when fenced), `free` each account's
/// available money; both are used up as the charges are paid. PostgreSQL does the same in SQL
/// (`tollgate_charge_batch_v4`, `crate::schema`).
pub(crate) fn pay(
    charges: &[&ChargeRow],
    leases: &mut BTreeMap<String, i64>,
    free: &mut BTreeMap<String, i64>,
) -> Vec<Paid> {
    charges
        .iter()
        .map(|c| {
            let amount = c.amount.nanos().max(0);
            let mut paid = Paid::default();
            if let Some(pool) = c.lease_id.as_ref().and_then(|l| leases.get_mut(l)) {
                paid.from_lease = c.from_lease.nanos().clamp(0, amount).min(*pool);
                *pool -= paid.from_lease;
            }
            if let Some(pool) = free.get_mut(&c.account_id) {
                paid.from_free = (amount - paid.from_lease).min(*pool);
                *pool -= paid.from_free;
            }
            paid
        })
        .collect()
}

/// The note a short charge's ledger row carries in `anomaly` (after any other); PostgreSQL
/// writes the same words.
fn loss_note(fenced: bool, lease: Option<&str>, charged: i64, loss: i64) -> String {
    let why = if fenced {
        format!(
            "late charge: lease {} was no longer this replica's (expired, returned or another's)",
            lease.unwrap_or("?")
        )
    } else {
        "the account had too little available".to_owned()
    };
    format!(
        "{why}; charged {}, the operator's loss {}",
        Amount::from_nanos(charged),
        Amount::from_nanos(loss)
    )
}

/// The leases `charges` name, read for [`write_charges`]: what each has left to pay (0 for
/// one this replica no longer holds) and whether it is fenced (closed, or another's).
async fn read_leases<S: Statements>(
    db: &mut S,
    writer: &JournalWriter,
    charges: &[&ChargeRow],
) -> Result<(BTreeMap<String, i64>, BTreeMap<String, bool>), StoreError> {
    let mut pools: BTreeMap<String, i64> = BTreeMap::new();
    let mut fenced: BTreeMap<String, bool> = BTreeMap::new();
    for lease in charges.iter().filter_map(|c| c.lease_id.as_deref()) {
        if pools.contains_key(lease) {
            continue;
        }
        let row = db
            .fetch_optional(
                "SELECT amount_nanos, state, owner FROM leases WHERE id = $1",
                &[Param::Text(lease)],
                &[Col::Int, Col::Text, Col::Text],
            )
            .await?;
        let valid = match row {
            Some(mut row) => {
                let amount = row.int(0)?;
                let held = row.text(1)? == "open" && row.text(2)? == writer.owner;
                held.then_some(amount.max(0))
            }
            None => None,
        };
        pools.insert(lease.to_owned(), valid.unwrap_or(0));
        fenced.insert(lease.to_owned(), valid.is_none());
    }
    Ok((pools, fenced))
}

/// The accounts of a run of charges as [`write_charges`] reads them, by id.
struct Books {
    /// What each may still pay: balance less holds and leases, never below zero.
    free: BTreeMap<String, i64>,
    /// The last number of its chain.
    seqs: BTreeMap<String, i64>,
    /// Its chain's head.
    heads: BTreeMap<String, String>,
    /// Its balance.
    balances: BTreeMap<String, i64>,
}

/// Reads the accounts `charges` name, for [`write_charges`].
async fn read_books<S: Statements>(
    db: &mut S,
    charges: &[&ChargeRow],
) -> Result<Books, StoreError> {
    let mut free: BTreeMap<String, i64> = BTreeMap::new();
    let mut seqs: BTreeMap<String, i64> = BTreeMap::new();
    let mut heads: BTreeMap<String, String> = BTreeMap::new();
    let mut balances: BTreeMap<String, i64> = BTreeMap::new();
    for c in charges {
        if free.contains_key(&c.account_id) {
            continue;
        }
        let mut row = db
            .fetch_optional(
                "SELECT balance_nanos, held_nanos, leased_nanos, ledger_seq, ledger_head
                 FROM accounts WHERE id = $1",
                &[Param::Text(&c.account_id)],
                &[Col::Int, Col::Int, Col::Int, Col::Int, Col::OptText],
            )
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("account {}", c.account_id)))?;
        let available = row
            .int(0)?
            .saturating_sub(row.int(1)?)
            .saturating_sub(row.int(2)?);
        free.insert(c.account_id.clone(), available.max(0));
        seqs.insert(c.account_id.clone(), row.int(3)?);
        balances.insert(c.account_id.clone(), row.int(0)?);
        heads.insert(
            c.account_id.clone(),
            row.opt_text(4)?
                .unwrap_or_else(|| crate::chain::GENESIS.to_owned()),
        );
    }
    Ok(Books {
        free,
        seqs,
        heads,
        balances,
    })
}

/// Writes a run of charges on SQLite: reads the named leases and the accounts (in the lock
/// order: leases, then accounts, each sorted), prices them by [`ChargePlan::of`], then writes
/// the leases, the accounts and the rows. Returns the charges that took less than they asked.
async fn write_charges<S: Statements>(
    db: &mut S,
    writer: &JournalWriter,
    charges: &[&ChargeRow],
    now: i64,
) -> Result<Vec<ChargeLoss>, StoreError> {
    let (pools, fenced) = read_leases(db, writer, charges).await?;
    let books = read_books(db, charges).await?;
    let plan = ChargePlan::of(charges, pools, &fenced, books, now)?;
    for (lease, taken) in &plan.taken {
        db.execute(
            "UPDATE leases SET amount_nanos = amount_nanos - $1,
                 charged_nanos = charged_nanos + $1 WHERE id = $2",
            &[Param::Int(*taken), Param::Text(lease)],
        )
        .await?;
    }
    for (account, total) in &plan.totals {
        let written = db
            .execute(
                "UPDATE accounts SET balance_nanos = balance_nanos - $1,
                     leased_nanos = leased_nanos - $2, ledger_seq = ledger_seq + $3,
                     ledger_head = $4
                 WHERE id = $5",
                &[
                    Param::Int(total.charged),
                    Param::Int(total.from_leases),
                    Param::Int(total.rows),
                    Param::Text(&plan.heads[account]),
                    Param::Text(account),
                ],
            )
            .await?;
        if written != 1 {
            return Err(StoreError::NotFound(format!("account {account}")));
        }
    }
    let lines = plan.lines(charges);
    for (chunk, sql) in INSERT_LINES.chunks(charges.len()) {
        let mut params = Vec::with_capacity(chunk.len() * (LINE_WIDTH + 1));
        for (line, hash) in lines[chunk.clone()].iter().zip(&plan.hashes[chunk]) {
            params.extend(line.fields());
            params.push(Param::Text(hash));
        }
        db.execute(sql, &params).await?;
    }
    Ok(plan.losses)
}

/// What a run of charges pays and writes, worked out from what its leases and accounts held
/// before it: the whole of [`write_charges`] but the statements, so that the same arithmetic
/// serves SQLite (which reads what it needs in its transaction) and PostgreSQL (where the writer
/// remembers it, and the database checks it: [`charge_batch_call`]).
struct ChargePlan {
    /// How each charge was paid, in batch order.
    paid: Vec<Paid>,
    /// What each lease gave (only leases that gave something).
    taken: BTreeMap<String, i64>,
    /// What each account pays, by id.
    totals: BTreeMap<String, AccountTotal>,
    /// Each row's id, `balance_after_nanos`, `seq` and `anomaly`, in batch order.
    ids: Vec<String>,
    balance_after: Vec<i64>,
    seqs: Vec<i64>,
    anomalies: Vec<Option<String>>,
    multipliers: Vec<Option<String>>,
    /// Each row's link in its account's chain, in batch order.
    hashes: Vec<String>,
    /// Each account's chain head after the run.
    heads: BTreeMap<String, String>,
    /// The charges that took less than they asked.
    losses: Vec<ChargeLoss>,
    now: i64,
}

/// What one account pays in a run of charges.
#[derive(Debug, Clone, Copy, Default)]
struct AccountTotal {
    /// Off its balance.
    charged: i64,
    /// The part its leases gave, off `leased_nanos`.
    from_leases: i64,
    /// Its rows.
    rows: i64,
}

impl ChargePlan {
    /// Pays `charges` by [`pay`] from `pools` (what each lease can give; `fenced` says which
    /// could not) and `books`, and places each row in its account's chain: its `seq` (the
    /// account's next numbers, in batch order), its `balance_after` (the account's final
    /// balance plus what the rows after it in the batch charge) and its link.
    fn of(
        charges: &[&ChargeRow],
        mut pools: BTreeMap<String, i64>,
        fenced: &BTreeMap<String, bool>,
        books: Books,
        now: i64,
    ) -> Result<ChargePlan, StoreError> {
        let Books {
            mut free,
            seqs: mut next_seq,
            mut heads,
            balances,
        } = books;
        let leases_before = pools.clone();
        let paid = pay(charges, &mut pools, &mut free);
        let taken: BTreeMap<String, i64> = leases_before
            .iter()
            .map(|(lease, before)| (lease.clone(), before - pools[lease]))
            .filter(|(_, taken)| *taken > 0)
            .collect();
        let mut totals: BTreeMap<String, AccountTotal> = BTreeMap::new();
        for (c, p) in charges.iter().zip(&paid) {
            let t = totals.entry(c.account_id.clone()).or_default();
            t.charged = t.charged.checked_add(p.charged()).ok_or_else(overflow)?;
            t.from_leases = t
                .from_leases
                .checked_add(p.from_lease)
                .ok_or_else(overflow)?;
            t.rows += 1;
        }
        // Each account's balance after the run: the one read (its writer is the only one)
        // less what its charges took.
        let mut after: BTreeMap<&str, i64> = BTreeMap::new();
        for (account, total) in &totals {
            let before = balances
                .get(account)
                .copied()
                .ok_or_else(|| StoreError::NotFound(format!("account {account}")))?;
            after.insert(
                account,
                before.checked_sub(total.charged).ok_or_else(overflow)?,
            );
        }
        let mut later: BTreeMap<&str, i64> = BTreeMap::new();
        let mut balance_after = vec![0i64; charges.len()];
        for (i, (c, p)) in charges.iter().zip(&paid).enumerate().rev() {
            let sum = later.entry(c.account_id.as_str()).or_default();
            balance_after[i] = after[c.account_id.as_str()]
                .checked_add(*sum)
                .ok_or_else(overflow)?;
            *sum = sum.checked_add(p.charged()).ok_or_else(overflow)?;
        }
        let mut seqs = vec![0i64; charges.len()];
        for (i, c) in charges.iter().enumerate() {
            let seq = next_seq.entry(c.account_id.clone()).or_default();
            *seq += 1;
            seqs[i] = *seq;
        }
        let mut losses = Vec::new();
        let mut anomalies: Vec<Option<String>> = Vec::with_capacity(charges.len());
        for (c, p) in charges.iter().zip(&paid) {
            let charged = p.charged();
            let loss = c.amount.nanos().max(0) - charged;
            if loss == 0 {
                anomalies.push(c.memo.anomaly.clone());
                continue;
            }
            let lease = c.lease_id.as_deref();
            let is_fenced = lease.is_some_and(|l| fenced.get(l).copied().unwrap_or(true));
            let note = loss_note(is_fenced, lease, charged, loss);
            anomalies.push(Some(match &c.memo.anomaly {
                Some(first) => format!("{first}; {note}"),
                None => note,
            }));
            losses.push(ChargeLoss {
                hold_id: c.hold_id.clone(),
                account_id: c.account_id.clone(),
                charged: Amount::from_nanos(charged),
                loss: Amount::from_nanos(loss),
                fenced: is_fenced,
            });
        }
        let mut plan = ChargePlan {
            paid,
            taken,
            totals,
            ids: charges.iter().map(|_| new_id("led")).collect(),
            balance_after,
            seqs,
            anomalies,
            multipliers: charges
                .iter()
                .map(|c| {
                    c.memo
                        .price_group
                        .as_ref()
                        .map(|g| g.multiplier.to_string())
                })
                .collect(),
            hashes: Vec::with_capacity(charges.len()),
            heads: BTreeMap::new(),
            losses,
            now,
        };
        // Each row's link in its account's chain, in batch order.
        let mut hashes = Vec::with_capacity(charges.len());
        for line in plan.lines(charges) {
            let head = heads.entry(line.account_id.to_owned()).or_default();
            *head = line.hash(head);
            hashes.push(head.clone());
        }
        plan.hashes = hashes;
        plan.heads = heads;
        Ok(plan)
    }

    /// Each row as the chain hashes it and the INSERT writes it (`crate::chain`), borrowed.
    fn lines<'a>(&'a self, charges: &[&'a ChargeRow]) -> Vec<LineRef<'a>> {
        charges
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let charged = self.paid[i].charged();
                LineRef {
                    id: &self.ids[i],
                    account_id: &c.account_id,
                    seq: self.seqs[i],
                    kind: "charge",
                    amount_nanos: -charged,
                    balance_after_nanos: self.balance_after[i],
                    model: Some(&c.memo.model),
                    quantity: c.memo.quantity.as_deref(),
                    hold_id: Some(&c.hold_id),
                    task_id: None,
                    key_id: c.memo.key_id.as_deref(),
                    request_id: c.memo.request_id.as_deref(),
                    lease_id: c.lease_id.as_deref(),
                    estimated: i64::from(c.memo.estimated),
                    note: c.memo.note.as_deref(),
                    anomaly: self.anomalies[i].as_deref(),
                    price_group: c.memo.price_group.as_ref().map(|g| g.name.as_str()),
                    price_multiplier: self.multipliers[i].as_deref(),
                    price_version: c.memo.price_version,
                    bound_nanos: c.memo.bound.map(Amount::nanos),
                    loss_nanos: c.amount.nanos().max(0) - charged,
                    overdraw_nanos: 0,
                    created_at: self.now,
                }
            })
            .collect()
    }
}

/// A run of charges on PostgreSQL, in one round trip with the batch's usage records. When
/// the writer remembers every account and lease the run names ([`WriterBooks`]: what the
/// database answered after its last run), it prices the run itself ([`ChargePlan::of`], the
/// arithmetic SQLite uses) and the database only checks, under the rows' locks, that what it
/// remembered is still so, then writes the rows as given (`tollgate_charge_batch_v5`,
/// `crate::schema`). Otherwise — the first run of an account, a credit or another replica's
/// charge in between — the same call prices it in SQL (`tollgate_charge_batch_v4`). Either
/// way the answer says what the accounts and leases hold now, for the next run. It answers the
/// short charges.
async fn charge_batch_call<S: Statements>(
    db: &mut S,
    writer: &JournalWriter,
    books: &Mutex<WriterBooks>,
    charges: &[&ChargeRow],
    usage: &[&UsageRecord],
    now: i64,
) -> Result<Vec<ChargeLoss>, StoreError> {
    let remembered = books.lock().ok().and_then(|books| books.state_of(charges));
    let plan = remembered.and_then(|(pools, state)| {
        // Every lease remembered is open and the writer's: none is fenced.
        let fenced = pools.keys().map(|l| (l.clone(), false)).collect();
        ChargePlan::of(charges, pools, &fenced, state, now).ok()
    });
    let expected = expected_json(charges, books, plan.as_ref());
    let lines = plan.as_ref().map(|plan| lines_json(plan, charges));
    let usage = usage_json(usage);
    let answer = db
        .fetch_optional(
            "SELECT tollgate_charge_batch_v5($1, $2::jsonb, $3::jsonb, $4, $5::jsonb, $6)::text",
            &[
                Param::Text(&writer.owner),
                Param::Text(&expected),
                Param::OptText(lines.as_deref()),
                Param::Text(&charges_json(charges)),
                Param::Text(&usage),
                Param::Int(now),
            ],
            &[Col::Text],
        )
        .await?
        .map(|mut row| row.text(0))
        .transpose()?
        .unwrap_or_default();
    #[derive(serde::Deserialize)]
    struct Answer {
        /// Whether the writer's plan was written (else the database priced the run).
        priced: bool,
        written: Option<i64>,
        #[serde(default)]
        losses: Vec<Lost>,
        /// `[id, balance, held, leased, seq, head]` of each account the run named, after it
        /// (when the database priced it).
        #[serde(default)]
        accounts: Vec<(String, i64, i64, i64, i64, Option<String>)>,
        /// `[id, amount]` of each lease the run named that is still open and the writer's.
        #[serde(default)]
        leases: Vec<(String, i64)>,
    }
    #[derive(serde::Deserialize)]
    struct Lost {
        hold_id: String,
        account_id: String,
        charged: i64,
        loss: i64,
        fenced: bool,
    }
    let answer: Answer = serde_json::from_str(&answer)
        .map_err(|e| StoreError::Corrupt(format!("the charge batch answered {answer:?}: {e}")))?;
    if let Some(plan) = plan.filter(|_| answer.priced) {
        if let Ok(mut books) = books.lock() {
            books.applied(&plan);
            books.runs.by_writer += 1;
        }
        return Ok(plan.losses);
    }
    if let Ok(mut books) = books.lock() {
        books.learn(charges, answer.accounts, answer.leases);
        books.runs.by_database += 1;
    }
    if answer.written != i64::try_from(charges.len()).ok() {
        return Err(StoreError::Corrupt(format!(
            "the charge batch wrote {:?} of {} rows",
            answer.written,
            charges.len()
        )));
    }
    Ok(answer
        .losses
        .into_iter()
        .map(|l| ChargeLoss {
            hold_id: l.hold_id,
            account_id: l.account_id,
            charged: Amount::from_nanos(l.charged),
            loss: Amount::from_nanos(l.loss),
            fenced: l.fenced,
        })
        .collect())
}

/// The charges as `tollgate_charge_batch_v4` prices them: `[{ord, id, account_id, charge,
/// share, lease_id, …the row's memo}]`.
fn charges_json(charges: &[&ChargeRow]) -> String {
    let mut rows = Vec::with_capacity(charges.len());
    for (ord, c) in charges.iter().enumerate() {
        rows.push(serde_json::json!({
            "ord": ord,
            "id": new_id("led"),
            "account_id": c.account_id,
            "charge": c.amount.nanos().max(0),
            "share": if c.lease_id.is_some() { c.from_lease.nanos().max(0) } else { 0 },
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
            "price_version": c.memo.price_version,
            "bound_nanos": c.memo.bound.map(Amount::nanos),
        }));
    }
    serde_json::Value::from(rows).to_string()
}

/// What `tollgate_charge_batch_v5` checks and applies: each account the run names with what
/// the writer remembers of it and what the plan takes off it, each lease likewise, and the
/// short charges (their usage records carry what they came to). Without a plan, the names.
fn expected_json(
    charges: &[&ChargeRow],
    books: &Mutex<WriterBooks>,
    plan: Option<&ChargePlan>,
) -> String {
    let mut accounts: BTreeMap<&str, serde_json::Value> = BTreeMap::new();
    let mut leases: BTreeMap<&str, serde_json::Value> = BTreeMap::new();
    let remembered = books.lock().ok();
    for c in charges {
        let id = c.account_id.as_str();
        let value = match (plan, remembered.as_ref().and_then(|b| b.accounts.get(id))) {
            (Some(plan), Some(book)) => {
                let total = plan.totals.get(id).copied().unwrap_or_default();
                serde_json::json!({
                    "id": id, "balance": book.balance, "held": book.held,
                    "leased": book.leased, "seq": book.seq, "head": book.head,
                    "charged": total.charged, "taken": total.from_leases, "rows": total.rows,
                    "new_head": plan.heads.get(id),
                })
            }
            _ => serde_json::json!({ "id": id }),
        };
        accounts.insert(id, value);
        if let Some(lease) = c.lease_id.as_deref() {
            let value = match (plan, remembered.as_ref().and_then(|b| b.leases.get(lease))) {
                (Some(plan), Some(amount)) => serde_json::json!({
                    "id": lease, "amount": amount,
                    "taken": plan.taken.get(lease).copied().unwrap_or(0),
                }),
                _ => serde_json::json!({ "id": lease }),
            };
            leases.insert(lease, value);
        }
    }
    let losses: Vec<serde_json::Value> = plan
        .map(|plan| {
            plan.losses
                .iter()
                .map(|l| serde_json::json!({"hold_id": l.hold_id, "charged": l.charged.nanos()}))
                .collect()
        })
        .unwrap_or_default();
    serde_json::json!({
        "accounts": accounts.into_values().collect::<Vec<_>>(),
        "leases": leases.into_values().collect::<Vec<_>>(),
        "losses": losses,
    })
    .to_string()
}

/// The plan's rows as `tollgate_charge_batch_v5` writes them: each an array of its columns in
/// `chain::LINE_COLUMNS` order, then its hash.
fn lines_json(plan: &ChargePlan, charges: &[&ChargeRow]) -> String {
    let rows: Vec<serde_json::Value> = plan
        .lines(charges)
        .iter()
        .zip(&plan.hashes)
        .map(|(line, hash)| {
            let mut row: Vec<serde_json::Value> = line
                .fields()
                .iter()
                .map(|field| match field {
                    Param::Text(v) | Param::OptText(Some(v)) => serde_json::Value::from(*v),
                    Param::Int(v) | Param::OptInt(Some(v)) => serde_json::Value::from(*v),
                    Param::OptText(None) | Param::OptInt(None) => serde_json::Value::Null,
                })
                .collect();
            row.push(serde_json::Value::from(hash.as_str()));
            serde_json::Value::from(row)
        })
        .collect();
    serde_json::Value::from(rows).to_string()
}

/// What the journal's writer on PostgreSQL remembers of the accounts and leases it charged:
/// what the database answered after its last run of charges (`charge_batch_call`). Only a
/// guess at what holds now — the database checks it under the rows' locks before it writes
/// a plan made from it — so a stale entry costs the database's own pricing, never money.
#[derive(Debug, Default)]
pub(crate) struct WriterBooks {
    accounts: std::collections::HashMap<String, AccountBook>,
    /// Leases open and the writer's, by id: what each has left.
    leases: std::collections::HashMap<String, i64>,
    /// The runs of charges written so far, by who priced them.
    runs: ChargeRuns,
}

/// How the runs of charges on PostgreSQL were priced ([`Store::charge_runs`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChargeRuns {
    /// By the writer, from what it remembered, checked by the database.
    pub by_writer: u64,
    /// By the database: nothing remembered yet, or what was remembered no longer held.
    pub by_database: u64,
}

/// An account as [`WriterBooks`] remembers it.
#[derive(Debug, Clone)]
struct AccountBook {
    balance: i64,
    held: i64,
    leased: i64,
    seq: i64,
    head: String,
}

/// More accounts or leases than this and [`WriterBooks`] starts again: it is a cache of the
/// busy ones, not a copy of the database.
const BOOKS_REMEMBERED: usize = 10_000;

impl WriterBooks {
    /// What [`ChargePlan::of`] needs to price `charges`, when every account and lease they
    /// name is remembered.
    fn state_of(&self, charges: &[&ChargeRow]) -> Option<(BTreeMap<String, i64>, Books)> {
        let mut pools = BTreeMap::new();
        let mut books = Books {
            free: BTreeMap::new(),
            seqs: BTreeMap::new(),
            heads: BTreeMap::new(),
            balances: BTreeMap::new(),
        };
        for c in charges {
            if let Some(lease) = c.lease_id.as_deref() {
                pools.insert(lease.to_owned(), (*self.leases.get(lease)?).max(0));
            }
            let book = self.accounts.get(&c.account_id)?;
            let available = book
                .balance
                .saturating_sub(book.held)
                .saturating_sub(book.leased);
            books.free.insert(c.account_id.clone(), available.max(0));
            books.seqs.insert(c.account_id.clone(), book.seq);
            books.heads.insert(c.account_id.clone(), book.head.clone());
            books.balances.insert(c.account_id.clone(), book.balance);
        }
        Some((pools, books))
    }

    /// Takes the database's word on the accounts and leases a run named.
    fn learn(
        &mut self,
        charges: &[&ChargeRow],
        accounts: Vec<(String, i64, i64, i64, i64, Option<String>)>,
        leases: Vec<(String, i64)>,
    ) {
        if self.accounts.len() + self.leases.len() > BOOKS_REMEMBERED {
            self.forget();
        }
        for c in charges {
            if let Some(lease) = c.lease_id.as_deref() {
                self.leases.remove(lease);
            }
            self.accounts.remove(&c.account_id);
        }
        for (id, balance, held, leased, seq, head) in accounts {
            let head = head.unwrap_or_else(|| crate::chain::GENESIS.to_owned());
            self.accounts.insert(
                id,
                AccountBook {
                    balance,
                    held,
                    leased,
                    seq,
                    head,
                },
            );
        }
        self.leases.extend(leases);
    }

    /// Moves what it remembers on by a plan the database wrote as given.
    fn applied(&mut self, plan: &ChargePlan) {
        for (lease, taken) in &plan.taken {
            if let Some(amount) = self.leases.get_mut(lease) {
                *amount -= taken;
            }
        }
        for (account, total) in &plan.totals {
            if let Some(book) = self.accounts.get_mut(account) {
                book.balance -= total.charged;
                book.leased -= total.from_leases;
                book.seq += total.rows;
                if let Some(head) = plan.heads.get(account) {
                    book.head.clone_from(head);
                }
            }
        }
    }

    /// Forgets everything: a lease operation changed what the leases and accounts hold.
    fn forget(&mut self) {
        self.accounts.clear();
        self.leases.clear();
    }
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
            // Only the writer's own open lease grows; any other request opens a new one.
            let mut open_lease = None;
            if let Some(id) = lease_id {
                let row = db
                    .fetch_optional(
                        &format!("SELECT state, owner FROM leases WHERE id = $1{lock}"),
                        &[Param::Text(id)],
                        &[Col::Text, Col::Text],
                    )
                    .await?;
                if let Some(mut row) = row
                    && row.text(0)? == "open"
                    && row.text(1)? == writer.owner
                {
                    open_lease = Some(id.clone());
                }
            }
            let row = db
                .fetch_optional(
                    &format!(
                        "SELECT balance_nanos, held_nanos, leased_nanos, disabled, recall_nanos,
                             recall_until
                         FROM accounts WHERE id = $1{lock}"
                    ),
                    &[Param::Text(account_id)],
                    &[Col::Int, Col::Int, Col::Int, Col::Int, Col::Int, Col::Int],
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
            // A correction waiting for leases to shrink keeps what it needs out of new ones.
            let recalled = if row.int(5)? > now { row.int(4)? } else { 0 };
            let available = Amount::from_nanos(
                balance
                    .saturating_sub(held)
                    .saturating_sub(leased)
                    .saturating_sub(recalled),
            );
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
                             state, expires_at, created_at, charged_nanos, returned_nanos)
                         VALUES ($1, $2, $3, $4, $4, 'open', $5, $6, 0, 0)",
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
        LeaseOp::Shrink { lease_id, by } => {
            let Some((account_id, amount)) = open_lease(db, lease_id, lock).await? else {
                return Ok(LeaseOutcome::Shrunk {
                    amount: Amount::ZERO,
                });
            };
            // Never more than the row has: what the engine thinks free may include charges
            // not yet written, never the other way round.
            let by = by.nanos().clamp(0, amount.max(0));
            db.execute(
                "UPDATE leases SET amount_nanos = amount_nanos - $1,
                     returned_nanos = returned_nanos + $1, recall = 0 WHERE id = $2",
                &[Param::Int(by), Param::Text(lease_id)],
            )
            .await?;
            db.execute(
                "UPDATE accounts SET leased_nanos = leased_nanos - $1 WHERE id = $2",
                &[Param::Int(by), Param::Text(&account_id)],
            )
            .await?;
            Ok(LeaseOutcome::Shrunk {
                amount: Amount::from_nanos(by),
            })
        }
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
        "UPDATE leases SET state = $1, closed_at = $2,
             returned_nanos = returned_nanos + amount_nanos WHERE id = $3",
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
