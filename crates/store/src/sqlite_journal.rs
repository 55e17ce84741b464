//! The SQLite journal writer: one connection on a dedicated thread that writes each batch of the
//! ledger journal in one `BEGIN IMMEDIATE` transaction (`docs/architecture.md`, "The ledger
//! engine").
//!
//! Through sqlx every statement of a batch is a round trip to sqlx's SQLite worker thread and back
//! (two thread wake-ups each, about seven statements a batch); measured under load that was a
//! fifth of the gateway's CPU (`docs/benchmarks.md`). Here a batch crosses threads once each way,
//! its statements are prepared once and reused, and parameters are bound by position.
//!
//! The connection writes the same file as the store's sqlx writer (tasks, credits, the expiry
//! sweep) and the CLI; every writing transaction on SQLite begins `IMMEDIATE`, so the write lock
//! is taken before anything is read and a writer waits in SQLite's busy handler rather than
//! failing on a stale snapshot.

use crate::journal::{JournalEntry, JournalWriter, Written, write_entries};
use crate::sql::{Cell, Col, Param, Row, Statements};
use crate::{StoreError, now_millis};
use rusqlite::Connection;
use std::borrow::Cow;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::sync::oneshot;

/// A batch for the thread and where its result goes.
struct Batch {
    writer: JournalWriter,
    entries: Arc<[JournalEntry]>,
    done: oneshot::Sender<Result<Written, StoreError>>,
}

/// The handle to the journal thread and its checkpointer; the journal thread ends when the last
/// handle is dropped, the checkpointer when [`SqliteJournal::close`] stops it (after a last
/// `TRUNCATE`) or with the process.
#[derive(Debug)]
pub(crate) struct SqliteJournal {
    batches: mpsc::Sender<Batch>,
    checkpointer: std::sync::Mutex<Option<Checkpointer>>,
    wal: PathBuf,
}

/// How often the checkpointer copies the WAL into the database file: a passive checkpoint,
/// which never blocks the journal's commits.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

/// The WAL's bound (`docs/decisions.md`, "A bounded WAL"): past it the checkpointer resets the
/// log (`TRUNCATE`), and a log reset by any connection is cut back to it
/// (`journal_size_limit`).
pub(crate) const WAL_LIMIT: u64 = 64 << 20;

/// The backstop: past it the journal thread itself resets the log after its commit, before it
/// writes the next batch — when the checkpointer fell behind (starved of CPU, or readers kept
/// defeating its resets). The journal's commits wait for that reset; the log cannot grow
/// further while they do.
pub(crate) const WAL_BACKSTOP: u64 = 96 << 20;

/// How the journal's connection waits for the write lock, held by the checkpointer's reset or by
/// the sqlx writer for a moment (docs/decisions.md, "A bounded WAL"): SQLite's own busy
/// handler sleeps 1, 2, 5, 10, 15, 20, 25 … ms between tries, so a lock held for 2 ms kept a
/// commit — and the request waiting for it — 18 or 33 ms (p99.9 of 20 ms, slowest 37 ms at
/// one connection, `docs/benchmarks.md`). This one tries again every 50 µs for the first
/// 10 ms, then every millisecond, and gives up after 30 s, as the sqlx writer does. Whether to
/// try again after `tries` tries.
fn journal_busy(tries: i32) -> bool {
    busy_pause(tries, 30)
}

/// The checkpointer's wait for readers before a reset: as the journal's ([`journal_busy`]), for
/// at most 5 s. A reset waiting for readers already bars new writers, so its every idle
/// millisecond is one the journal's next commit waits too.
fn checkpointer_busy(tries: i32) -> bool {
    busy_pause(tries, 5)
}

/// Sleeps before the next try: 50 µs for the first 10 ms, then 1 ms; whether to try at all
/// (not once `seconds` have passed).
fn busy_pause(tries: i32, seconds: i32) -> bool {
    const FINE: i32 = 200;
    let pause = match tries {
        ..FINE => Duration::from_micros(50),
        _ if tries < FINE + seconds * 1000 - 10 => Duration::from_millis(1),
        _ => return false,
    };
    std::thread::sleep(pause);
    true
}

/// `journal_size_limit` at [`WAL_LIMIT`], for the sqlx writer's connection.
pub(crate) const JOURNAL_SIZE_LIMIT: &str = "PRAGMA journal_size_limit = 67108864";

/// A connection to the database file at `path` set as the journal's is: the same settings as
/// the sqlx writer (`Store::connect`: a WAL, `synchronous = NORMAL`, no automatic checkpoint,
/// the log's bound), sqlx's default of enforced foreign keys, and the journal's busy handler.
/// Public for a writer that must be exactly as durable as the journal — the billed floor of
/// `examples/relay_bench.rs` (docs/benchmarks.md, "The billed floor").
pub fn open_as_journal(path: &str) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    conn.busy_handler(Some(journal_busy))?;
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL;
         PRAGMA synchronous = NORMAL;
         PRAGMA wal_autocheckpoint = 0;
         PRAGMA journal_size_limit = {WAL_LIMIT};
         PRAGMA foreign_keys = ON;"
    ))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// The checkpointer thread: its stop signal and its handle. Public, with
/// [`open_as_journal`], for the billed floor's writer: the same checkpoint policy as the
/// journal's.
#[derive(Debug)]
pub struct Checkpointer {
    stop: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl SqliteJournal {
    /// Opens the connection to the database file at `path` and starts the thread, and the
    /// checkpointer beside it.
    pub(crate) fn start(path: &str) -> Result<SqliteJournal, StoreError> {
        let conn = open_as_journal(path)?;
        let (batches, rx) = mpsc::channel::<Batch>();
        let wal = PathBuf::from(format!("{path}-wal"));
        std::thread::Builder::new()
            .name("tollgate-journal".into())
            .spawn(move || {
                let mut backstops = 0u64;
                while let Ok(batch) = rx.recv() {
                    let result = write_batch(&conn, &batch.writer, &batch.entries);
                    let _ = batch.done.send(result);
                    let size = std::fs::metadata(&wal).map_or(0, |m| m.len());
                    if size > WAL_BACKSTOP {
                        backstops += 1;
                        let reset = backstop(&conn);
                        if backstops % 20 == 1 || !reset {
                            tracing::warn!(
                                wal_bytes = size,
                                times = backstops,
                                reset,
                                "the WAL outgrew its checkpointer: the journal resets it itself"
                            );
                        }
                    }
                }
            })
            .map_err(|e| StoreError::Io(e.to_string()))?;
        let checkpointer = Checkpointer::start(path)?;
        Ok(SqliteJournal {
            batches,
            checkpointer: std::sync::Mutex::new(Some(checkpointer)),
            wal: PathBuf::from(format!("{path}-wal")),
        })
    }

    /// The WAL file's size now, in bytes.
    pub(crate) fn wal_bytes(&self) -> u64 {
        std::fs::metadata(&self.wal).map_or(0, |m| m.len())
    }

    /// The checkpointer, taken out to be stopped ([`Checkpointer::finish`]); `None` once it was.
    pub(crate) fn stop_checkpointer(&self) -> Option<Checkpointer> {
        self.checkpointer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Writes `entries` in one transaction on the journal thread.
    pub(crate) async fn write(
        &self,
        writer: &JournalWriter,
        entries: Arc<[JournalEntry]>,
    ) -> Result<Written, StoreError> {
        let (done, rx) = oneshot::channel();
        let batch = Batch {
            writer: writer.clone(),
            entries,
            done,
        };
        self.batches
            .send(batch)
            .map_err(|_| StoreError::Io("the journal thread has stopped".into()))?;
        rx.await
            .map_err(|_| StoreError::Io("the journal thread has stopped".into()))?
    }
}

impl Checkpointer {
    /// The checkpointer (`docs/decisions.md`, "A bounded WAL"): a connection of its own on a
    /// thread of its own, so that it never waits for the async runtime or the readers' pool, and
    /// never makes a commit wait for its copying.
    ///
    /// Every [`CHECKPOINT_EVERY`] it copies what the WAL holds into the database (`PASSIVE`).
    /// Under sustained writes that alone never lets the log restart — a new frame is always
    /// appended before the copy ends — so the WAL would grow without bound (714 MB after
    /// 164,000 requests, issue 22). When the WAL is past [`WAL_LIMIT`] it resets it
    /// (`TRUNCATE`): that waits for the journal's current batch, copies the little the last
    /// passive copy left, and truncates the file; the next commit starts the log again at its
    /// beginning. When a passive copy caught up with the log, it restarts it (`RESTART`): the
    /// same without truncating the file, which the next commits then overwrite rather than
    /// grow — a truncation there, several times a second at one connection, held the write lock
    /// through freeing the file's blocks and was the slowest requests' wait (issue 27;
    /// docs/benchmarks.md, "The tail at one connection"). A log that stayed caught up for a
    /// whole round (nothing written: the gateway is idle) is truncated.
    pub fn start(path: &str) -> Result<Checkpointer, StoreError> {
        let conn = Connection::open(path)?;
        conn.busy_handler(Some(checkpointer_busy))?;
        conn.execute_batch(&format!("PRAGMA journal_size_limit = {WAL_LIMIT};"))?;
        let wal = PathBuf::from(format!("{path}-wal"));
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("tollgate-checkpoint".into())
            .spawn(move || {
                let (mut refused, mut last_log) = (0u32, 0i64);
                loop {
                    let last = !matches!(
                        stopped.recv_timeout(CHECKPOINT_EVERY),
                        Err(mpsc::RecvTimeoutError::Timeout)
                    );
                    let (caught_up, idle) = match checkpoint(&conn, "PASSIVE") {
                        Ok((_, log, copied)) => {
                            let caught_up = log > 0 && log == copied;
                            // Nothing written since the last round, all of it copied.
                            let idle = caught_up && log == std::mem::replace(&mut last_log, log);
                            (caught_up, idle)
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "a passive checkpoint failed");
                            (false, false)
                        }
                    };
                    let size = std::fs::metadata(&wal).map_or(0, |m| m.len());
                    let reset = if last || idle || size > WAL_LIMIT {
                        Some("TRUNCATE")
                    } else {
                        caught_up.then_some("RESTART")
                    };
                    if let Some(mode) = reset {
                        match checkpoint(&conn, mode) {
                            Ok((0, _, _)) => refused = 0,
                            Ok(_) | Err(_) => {
                                // Readers kept it from finishing; the next round tries again.
                                refused += 1;
                                if refused % 20 == 1 {
                                    tracing::warn!(
                                        wal_bytes = size,
                                        "the WAL could not be reset: readers held it"
                                    );
                                }
                            }
                        }
                    }
                    if last {
                        return;
                    }
                }
            })
            .map_err(|e| StoreError::Io(e.to_string()))?;
        Ok(Checkpointer { stop, thread })
    }
}

impl Checkpointer {
    /// Stops it after a last `TRUNCATE` and waits for it (a blocking wait).
    pub fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

/// How long the journal thread keeps trying to reset an oversized WAL before it writes its
/// next batch anyway (and tries again after it).
const BACKSTOP_WAIT: Duration = Duration::from_secs(1);

/// The journal thread's reset of an oversized WAL ([`WAL_BACKSTOP`]): `TRUNCATE`, tried again
/// until it succeeds or [`BACKSTOP_WAIT`] passes. A try fails at once while the checkpointer
/// is copying (SQLite lets one checkpoint run at a time) and waits in the busy handler for
/// readers still on old frames; nothing is appended meanwhile, so both soon let it through.
/// A reader that keeps its snapshot longer than the wait lets the log grow by a batch at a
/// time, as it must: its frames cannot be dropped under it. Whether it reset the log.
fn backstop(conn: &Connection) -> bool {
    let deadline = std::time::Instant::now() + BACKSTOP_WAIT;
    let _ = conn.busy_timeout(Duration::from_millis(250));
    let reset = loop {
        match checkpoint(conn, "TRUNCATE") {
            Ok((0, _, _)) => break true,
            _ if std::time::Instant::now() >= deadline => break false,
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let _ = conn.busy_handler(Some(journal_busy));
    reset
}

/// `PRAGMA wal_checkpoint(mode)`: (busy, frames in the log, frames copied).
fn checkpoint(conn: &Connection, mode: &str) -> Result<(i64, i64, i64), rusqlite::Error> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
    })
}

fn write_batch(
    conn: &Connection,
    writer: &JournalWriter,
    entries: &[JournalEntry],
) -> Result<Written, StoreError> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let mut statements = Thread { conn };
    let written = run_ready(write_entries(
        &mut statements,
        writer,
        entries,
        crate::journal::Writing::Sqlite,
        now_millis(),
    ));
    match written {
        Ok(outcomes) => {
            if let Err(e) = conn.execute_batch("COMMIT") {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(e.into());
            }
            Ok(outcomes)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Runs a future whose every await is on [`Thread`], which never waits: it completes on its
/// first poll.
fn run_ready<T>(future: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(result) => result,
        Poll::Pending => Err(StoreError::Io(
            "a journal statement waited on the journal thread".into(),
        )),
    }
}

/// The thread's connection as [`Statements`].
struct Thread<'c> {
    conn: &'c Connection,
}

/// `$n` → `?n`: SQLite binds `?n` to position n, where `$n` would be a named parameter. The
/// text between placeholders is copied a run at a time (`str::find` is a `memchr`).
fn positional(sql: &str) -> Cow<'_, str> {
    if !sql.contains('$') {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let numbered = from.as_bytes().get(1).is_some_and(u8::is_ascii_digit);
        out.push(if numbered { '?' } else { '$' });
        rest = &from[1..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

fn prepare<'c>(
    conn: &'c Connection,
    sql: &str,
    params: &[Param<'_>],
) -> Result<rusqlite::CachedStatement<'c>, StoreError> {
    let mut statement = conn.prepare_cached(&positional(sql))?;
    for (i, p) in params.iter().enumerate() {
        match *p {
            Param::Int(v) => statement.raw_bind_parameter(i + 1, v)?,
            Param::Text(v) => statement.raw_bind_parameter(i + 1, v)?,
            Param::OptText(v) => statement.raw_bind_parameter(i + 1, v)?,
            Param::OptInt(v) => statement.raw_bind_parameter(i + 1, v)?,
        }
    }
    Ok(statement)
}

impl Statements for Thread<'_> {
    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, StoreError> {
        let mut statement = prepare(self.conn, sql, params)?;
        let changed = statement.raw_execute()?;
        Ok(u64::try_from(changed).unwrap_or(u64::MAX))
    }

    async fn fetch_optional(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        columns: &[Col],
    ) -> Result<Option<Row>, StoreError> {
        let mut statement = prepare(self.conn, sql, params)?;
        let mut rows = statement.raw_query();
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        let read = Row::read(columns, |i, col| -> Result<Cell, rusqlite::Error> {
            Ok(match col {
                Col::Int => Cell::Int(row.get::<_, i64>(i)?),
                Col::Text => Cell::Text(row.get::<_, String>(i)?),
                Col::OptText => Cell::OptText(row.get::<_, Option<String>>(i)?),
            })
        })?;
        // A `RETURNING` statement has done its work on the first step; the rest is dropped.
        Ok(Some(read))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::journal::{ChargeMemo, ChargeRow, LeaseOp, LeaseOutcome};
    use crate::{Store, new_id};
    use tollgate_billing::Amount;

    /// The checkpointer stopped, as if starved of CPU for good: sustained journal writes beside
    /// a reader take the WAL past the checkpointer's bound, and the journal's backstop resets it
    /// before it passes the backstop by more than a batch.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_backstop_bounds_the_wal_when_the_checkpointer_does_not_run() {
        let dir = std::env::temp_dir().join(format!("tollgate-backstop-{}", new_id("t")));
        let path = dir.join("t.db");
        let store = Store::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        let (account, _) = store
            .create_account("backstop", Amount::from_nanos(1 << 50))
            .await
            .unwrap();
        let writer = JournalWriter {
            owner: "backstop".into(),
            lease_ttl_ms: 600_000,
            grant: |available, _, want| (available >= want).then_some(want),
        };
        let granted = store
            .write_journal(
                &writer,
                vec![JournalEntry::Lease(LeaseOp::Grant {
                    account_id: account.id.clone(),
                    lease_id: None,
                    need: Amount::from_nanos(1 << 40),
                    want: Amount::from_nanos(1 << 40),
                })],
            )
            .await
            .unwrap();
        let LeaseOutcome::Granted { lease_id, .. } = &granted.leases[0] else {
            panic!("{granted:?}");
        };
        store
            .journal
            .get()
            .and_then(SqliteJournal::stop_checkpointer)
            .expect("the journal started, with its checkpointer")
            .finish();
        let reading = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let reader = {
            let (store, id, reading) = (store.clone(), account.id.clone(), reading.clone());
            tokio::spawn(async move {
                while reading.load(std::sync::atomic::Ordering::Relaxed) {
                    store.find_account(&id).await.unwrap();
                }
            })
        };
        let wal = dir.join("t.db-wal");
        let size = || std::fs::metadata(&wal).map_or(0, |m| m.len());
        let mut largest = 0;
        for _ in 0..6_000 {
            let batch: Vec<JournalEntry> = (0..8)
                .map(|_| {
                    JournalEntry::Charge(ChargeRow {
                        hold_id: new_id("hold"),
                        account_id: account.id.clone(),
                        lease_id: Some(lease_id.clone()),
                        amount: Amount::from_nanos(7),
                        from_lease: Amount::from_nanos(7),
                        memo: ChargeMemo::default(),
                    })
                })
                .collect();
            store.write_journal(&writer, batch).await.unwrap();
            largest = largest.max(size());
        }
        reading.store(false, std::sync::atomic::Ordering::Relaxed);
        reader.await.unwrap();
        assert!(
            largest > WAL_LIMIT,
            "the WAL never reached the checkpointer's bound ({largest} bytes): the backstop was not tried"
        );
        // The backstop (96 MiB) and a batch; without it the log reached 377 MB here.
        assert!(
            largest < 100 << 20,
            "the WAL grew to {largest} bytes past the backstop"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_size_limit_pragma_says_the_bound() {
        assert_eq!(
            JOURNAL_SIZE_LIMIT,
            format!("PRAGMA journal_size_limit = {WAL_LIMIT}")
        );
    }

    #[test]
    fn placeholders_become_positional() {
        assert_eq!(
            positional("UPDATE a SET x = x - $1 WHERE id = $2 AND y >= $1 AND z = '$'"),
            "UPDATE a SET x = x - ?1 WHERE id = ?2 AND y >= ?1 AND z = '$'"
        );
        assert_eq!(positional("VALUES ($13, $14)"), "VALUES (?13, ?14)");
    }
}
