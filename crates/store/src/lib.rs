//! # tollgate-store
//!
//! The gateway's durable state: accounts and their balances, API keys (stored only as SHA-256
//! hashes), the append-only ledger, balance holds, and video tasks — on SQLite (the embedded
//! default) or PostgreSQL (several replicas sharing one database), through one code path
//! (`sqlx::Any`, `$n` placeholders, portable DDL).
//!
//! ## Money model (DESIGN §4)
//!
//! Every account row carries two integers in nano-units:
//!
//! * `balance_nanos` — credits minus captured charges. It always equals the sum of the account's
//!   ledger rows, and changes only in the same transaction as the ledger row that explains it.
//! * `held_nanos` — the sum of the account's **open** holds.
//!
//! What a request may spend is `balance − held`. A [`Hold`] is placed atomically
//! (`UPDATE … WHERE balance − held >= amount`), so concurrent requests can never overdraw the
//! account; it is then either **settled** (the actual charge is captured as one ledger row and the
//! rest released) or **released** in full, exactly once: the state change is a compare-and-swap on
//! the hold row, and only its winner touches the account.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tollgate_store::StoreError> {
//! use tollgate_billing::Amount;
//! use tollgate_store::{HoldRequest, Settlement, Store};
//!
//! let store = Store::connect("sqlite://tollgate-data/tollgate.db").await?;
//! let (account, key) = store.create_account("alice", "1".parse().unwrap()).await?;
//! println!("secret, shown once: {}", key.secret);
//! let hold = store
//!     .hold(HoldRequest::new(&account.id, "text-embedding-3-small", Amount::from_nanos(500)))
//!     .await?;
//! store.settle(&hold.id, Settlement::new(Amount::from_nanos(420))).await?;
//! # Ok(()) }
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod accounts;
mod admin;
mod alerts;
mod audit;
mod balance_alerts;
pub mod chain;
mod changes;
pub mod checkpoint;
mod client_secrets;
mod codes;
mod error;
mod explain;
mod holds;
mod ids;
mod journal;
mod media;
pub mod merkle;
mod payments;
mod policy;
mod portal;
mod prices;
mod quota;
mod recompute;
mod rollup;
mod schema;
mod sessions;
mod settings;
mod sql;
pub mod sqlite_journal;
pub mod statement;
mod tasks;
mod throttle;
mod usage;
mod wide_sum;

pub use accounts::{Account, AccountReport, KeySummary, LimitedBy, ModelUsage, NewKey, Principal};
pub use admin::{AdminChange, AdminChangeRecord, AdminToken, Credited, MAX_ADMIN_TEXT, OpenHold};
pub use alerts::{
    AlertAction, AlertAttempt, AlertDelivery, AlertEvent, AlertLevel, AttemptOutcome, MAX_ANSWER,
    NewAlertEvent,
};
pub use audit::{AuditReport, LEASE_EXPIRY_GRACE_MS, Violation};
pub use balance_alerts::{BalanceAlert, BalanceAlertToJudge, MAX_BALANCE_ALERTS, NewBalanceAlert};
pub use client_secrets::{
    AUTH_TOKENS, MintedSecret, Redeemed, SecretHeld, SecretTerms, is_client_secret,
};
pub use codes::{
    CODE_SYMBOLS, CodeBatch, CodeRedeemed, CodeRedemption, CodeTypo, MAX_BATCH as MAX_CODE_BATCH,
    NewCodeBatch, NotRedeemed, Redeemer, RedemptionCode,
};
pub use error::StoreError;
pub use explain::{RequestCharges, Viewer};
pub use holds::{Closed, Hold, HoldRequest, LedgerEntry, LedgerKind, Settlement};
pub use ids::{hash_secret, new_id};
pub use journal::{
    ChargeLoss, ChargeMemo, ChargeRow, ChargeRuns, GrantRule, JournalEntry, JournalWriter, LeaseOp,
    LeaseOutcome, Written,
};
pub use media::{MEDIA_CHUNK_BYTES, MediaDigest, MediaFile};
pub use payments::{
    AutoTopup, DisputeStatus, NewPayment, NotApplied, Payment, PaymentChange, PaymentStatus,
    Received,
};
pub use policy::{AccessPolicy, Cidr, PolicyChange, PolicyHolder, PriceGroup, glob_matches};
pub use portal::{Credentials as PersonCredentials, Person, PortalSession};
pub use prices::{PriceSync, SOURCES as PRICE_SOURCES, StoredPrice};
pub use recompute::{RecomputeReport, RecordedCharge, rederive};
pub use sessions::{
    JournalSeal, OpenSession, OpenedSession, ResponseSettled, SessionOpening, Step,
};
pub use tasks::{NewTask, Outcome, Poll, Task, TaskEvent, TaskFilter, TaskState};
pub use throttle::{Attempt, AttemptLimit};
pub use usage::{UsageFilter, UsageGroup, UsageRecord, UsageSummary};

use sqlite_journal::SqliteJournal;
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Executor};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Which database engine a [`Store`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file (the embedded default).
    Sqlite,
    /// A PostgreSQL server, possibly shared by several gateway replicas.
    Postgres,
}

/// A handle to the database; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    /// Reads.
    pool: AnyPool,
    /// Writes. On SQLite a pool of one connection: SQLite admits one writer at a time, and
    /// queueing writers here (first come, first served) beats letting them collide in SQLite's
    /// busy handler, which backs off by sleeping. On PostgreSQL the same pool as reads.
    writer: AnyPool,
    backend: Backend,
    /// The SQLite file, for the journal thread (none on PostgreSQL or in memory).
    sqlite_path: Option<Arc<str>>,
    /// The journal thread, started by the first journal write (the CLI never starts it).
    journal: Arc<OnceLock<SqliteJournal>>,
    /// The seal of live sessions' journals, when the operator has a ledger signing key
    /// ([`sessions::JournalSeal`]).
    session_seal: Arc<OnceLock<sessions::JournalSeal>>,
    /// What the journal's writer last knew of the accounts and leases it charged, on
    /// PostgreSQL (`journal::WriterBooks`).
    writer_books: Arc<std::sync::Mutex<journal::WriterBooks>>,
}

impl Store {
    /// Connects and brings the schema up to date.
    ///
    /// `url` is `sqlite://PATH` (the file and its directory are created when missing) or
    /// `postgres://…`.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        install_default_drivers();
        let (backend, url) = normalise_url(url)?;
        let sqlite_path = sqlite_file(&url).map(Arc::from);
        if let Some(path) = sqlite_path.as_deref()
            && url.contains("mode=rwc")
        {
            create_private(std::path::Path::new(path))?;
        }
        let (pool, writer) = match backend {
            Backend::Sqlite => {
                // WAL lets reads run beside the one writer. The writer does not checkpoint the
                // WAL itself (its commit would then wait for the checkpoint's fsync): the
                // journal's checkpointer thread does (`sqlite_journal`, "A bounded WAL").
                let writer = sqlite_pool(1)
                    .after_connect(|conn, _meta| {
                        Box::pin(async move {
                            conn.execute("PRAGMA journal_mode = WAL").await?;
                            conn.execute("PRAGMA busy_timeout = 30000").await?;
                            conn.execute("PRAGMA synchronous = NORMAL").await?;
                            conn.execute("PRAGMA wal_autocheckpoint = 0").await?;
                            conn.execute(sqlite_journal::JOURNAL_SIZE_LIMIT).await?;
                            Ok(())
                        })
                    })
                    .connect(&url)
                    .await?;
                let pool = sqlite_pool(8).connect(&url).await?;
                (pool, writer)
            }
            Backend::Postgres => {
                let pool = AnyPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(30))
                    .connect(&url)
                    .await?;
                (pool.clone(), pool)
            }
        };
        let store = Store {
            pool,
            writer,
            backend,
            sqlite_path,
            journal: Arc::default(),
            session_seal: Arc::default(),
            writer_books: Arc::default(),
        };
        schema::migrate(&store).await?;
        Ok(store)
    }

    /// Connects to a database that must already exist (what read-only and maintenance
    /// commands use): an SQLite URL whose file is missing is [`StoreError::NotFound`] instead of
    /// a new, empty database that would answer "no accounts".
    pub async fn connect_existing(url: &str) -> Result<Store, StoreError> {
        let (_, normalised) = normalise_url(url)?;
        if let Some(path) = sqlite_file(&normalised)
            && !std::path::Path::new(&path).exists()
        {
            return Err(StoreError::NotFound(format!("no database at {path}")));
        }
        Store::connect(url).await
    }

    /// The engine behind this store.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Checks that the database answers (used by `/readyz`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// The size of SQLite's write-ahead log now, in bytes, once the journal has started;
    /// `None` on PostgreSQL and before it (`docs/decisions.md`, "A bounded WAL").
    pub fn wal_bytes(&self) -> Option<u64> {
        self.journal.get().map(SqliteJournal::wal_bytes)
    }

    /// Closes the pool, waiting for connections in use to be returned; on an SQLite file, then
    /// resets the WAL (a last `TRUNCATE` checkpoint), so that a clean stop leaves none behind.
    pub async fn close(&self) {
        self.pool.close().await;
        self.writer.close().await;
        if let Some(checkpointer) = self
            .journal
            .get()
            .and_then(SqliteJournal::stop_checkpointer)
        {
            let _ = tokio::task::spawn_blocking(move || checkpointer.finish()).await;
        }
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub(crate) fn writer(&self) -> &AnyPool {
        &self.writer
    }

    /// A writing transaction. On SQLite it begins `IMMEDIATE`: the write lock is taken first,
    /// so a transaction that reads before it writes waits for the journal thread or the CLI in
    /// the busy handler instead of failing on a snapshot another writer made stale.
    pub(crate) async fn write_tx(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Any>, StoreError> {
        Ok(match self.backend {
            Backend::Sqlite => self.writer.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.writer.begin().await?,
        })
    }

    /// The SQLite journal thread, started on first use; `None` where the writer pool writes the
    /// journal (PostgreSQL, an in-memory SQLite database).
    pub(crate) fn sqlite_journal(&self) -> Result<Option<&SqliteJournal>, StoreError> {
        let Some(path) = &self.sqlite_path else {
            return Ok(None);
        };
        if let Some(journal) = self.journal.get() {
            return Ok(Some(journal));
        }
        let started = SqliteJournal::start(path)?;
        Ok(Some(self.journal.get_or_init(|| started)))
    }
}

/// The file behind a normalised `sqlite://PATH?…` URL, unless it is in memory.
fn sqlite_file(url: &str) -> Option<String> {
    let rest = url.strip_prefix("sqlite://")?;
    let path = rest.split_once('?').map_or(rest, |(p, _)| p);
    let in_memory = path == ":memory:" || rest.contains("mode=memory");
    (!in_memory).then(|| path.to_owned())
}

fn sqlite_pool(connections: u32) -> AnyPoolOptions {
    AnyPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(Duration::from_secs(30))
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                conn.execute("PRAGMA journal_mode = WAL").await?;
                conn.execute("PRAGMA busy_timeout = 30000").await?;
                conn.execute("PRAGMA synchronous = NORMAL").await?;
                Ok(())
            })
        })
}

/// Picks the backend and, for SQLite, creates the file's directory and asks for the file to be
/// created (`mode=rwc`), so that `sqlite://tollgate-data/tollgate.db` works on a fresh checkout.
fn normalise_url(url: &str) -> Result<(Backend, String), StoreError> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok((Backend::Postgres, url.to_owned()));
    }
    let Some(rest) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        return Err(StoreError::UnsupportedUrl(url.to_owned()));
    };
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    if path.is_empty() {
        return Err(StoreError::UnsupportedUrl(url.to_owned()));
    }
    let dir = std::path::Path::new(path).parent();
    if let Some(dir) = dir.filter(|d| path != ":memory:" && !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Io(e.to_string()))?;
    }
    let query = match query {
        Some(q) if q.contains("mode=") => q.to_owned(),
        Some(q) => format!("{q}&mode=rwc"),
        None => "mode=rwc".to_owned(),
    };
    Ok((Backend::Sqlite, format!("sqlite://{path}?{query}")))
}

/// Creates the SQLite file `path`, when it is not there yet, readable and writable by its owner
/// only: it holds every account's balance and the secret that signs media links (issue 42: it
/// was created 0644, and a link forged with the key read from it was accepted). SQLite gives
/// its `-wal` and `-shm` files the database file's permissions.
/// A file made by an earlier version that others can read is made private, and said.
fn create_private(path: &std::path::Path) -> Result<(), StoreError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            #[cfg(unix)]
            for file in ["", "-wal", "-shm"].map(|s| format!("{}{s}", path.display())) {
                use std::os::unix::fs::PermissionsExt as _;
                let Ok(meta) = std::fs::metadata(&file) else {
                    continue;
                };
                if meta.permissions().mode() & 0o077 != 0 {
                    match std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)) {
                        Ok(()) => tracing::warn!(
                            file,
                            "the database file was readable by others: made private (0600)"
                        ),
                        Err(e) => {
                            tracing::warn!(file, error = %e, "the database file is readable by others and could not be made private")
                        }
                    }
                }
            }
            Ok(())
        }
        Err(e) => Err(StoreError::Io(format!("{}: {e}", path.display()))),
    }
}

/// Milliseconds since the Unix epoch: the one clock every table uses.
/// A count for a BIGINT column: u64 saturated to i64.
pub(crate) fn as_bigint(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_gain_create_mode() {
        let (b, u) = normalise_url("sqlite::memory:").unwrap();
        assert_eq!(b, Backend::Sqlite);
        assert_eq!(u, "sqlite://:memory:?mode=rwc");
        let (_, u) = normalise_url("sqlite:///tmp/x.db?cache=shared").unwrap();
        assert_eq!(u, "sqlite:///tmp/x.db?cache=shared&mode=rwc");
        assert!(normalise_url("mysql://x").is_err());
        assert_eq!(
            normalise_url("postgres://h/db").unwrap().0,
            Backend::Postgres
        );
    }
}
