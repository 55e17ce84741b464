//! The ledger engine's driver (DESIGN §4; `docs/architecture.md`, "The ledger engine"): the
//! sans-IO core (`tollgate_ledger::Engine`) behind one mutex, a writer task that owns the journal
//! and commits it in batches, and a ticker that renews, returns and expires leases.
//!
//! On the request path a hold is an in-memory decision; the database is only asked when an
//! account's lease runs short. Every exit of a [`Hold`] — [`Hold::settle`], [`Hold::release`],
//! drop (an early return, a panic, a cancelled future) — closes it synchronously, under the
//! mutex, before anything is awaited: there is no await point at which a hold can be lost.
//! What a settlement must make durable (its ledger row) is queued in the same step; awaiting the
//! returned [`Durable`] only waits for the batch that carries it.

use crate::clock::{monotonic_millis, now_millis};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tollgate_billing::Amount;
use tollgate_ledger::{
    CreditAnswer, CreditRequest, Engine, HoldId, HoldOutcome, LeaseCommand, LeaseId, LedgerError,
    Policy, Refusal, RenewAnswer, Resolved, Ticket,
};
pub use tollgate_store::ChargeMemo;
use tollgate_store::{
    ChargeLoss, ChargeRow, JournalEntry, JournalWriter, LeaseOp, LeaseOutcome, Store, UsageRecord,
    Written,
};

/// The most entries one transaction carries.
const MAX_BATCH: usize = 4096;
/// How often the engine's clock ticks.
const TICK: Duration = Duration::from_millis(250);
/// Under load, a batch is taken at most this soon after the previous one: while other requests
/// are in flight the writer first lets the runtime run one round, so that their settlements join
/// the batch instead of each paying for a transaction (and, on SQLite, a WAL frame per touched
/// page). A lone request (nothing else open) never waits.
const BATCH_INTERVAL: Duration = Duration::from_millis(1);
/// How many times the writer yields to the runtime before taking a batch under load.
const GATHER_YIELDS: usize = 4;
/// How often expired leases (of any replica) are swept back to their accounts.
const EXPIRY_SWEEP: Duration = Duration::from_secs(1);

/// The ledger engine of one replica. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Ledger {
    core: Arc<Core>,
}

#[derive(Debug)]
struct Core {
    inner: Mutex<Inner>,
    jobs: mpsc::UnboundedSender<Job>,
    stats: Stats,
}

#[derive(Debug)]
struct Inner {
    engine: Engine,
    /// Holds that wait for credit, by ticket.
    waiters: HashMap<Ticket, Waiter>,
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
struct Stats {
    batches: AtomicU64,
    charges: AtomicU64,
    usage_records: AtomicU64,
    lease_ops: AtomicU64,
    failed_batches: AtomicU64,
    expired_leases: AtomicU64,
    late_charges: AtomicU64,
    short_charges: AtomicU64,
    operator_loss_nanos: AtomicU64,
    stalls: AtomicU64,
    recalls: AtomicU64,
    /// Runs of charges on PostgreSQL priced by this writer and checked by the database, and
    /// priced by the database (`Store::charge_runs`), as of the last batch.
    runs_by_writer: AtomicU64,
    runs_by_database: AtomicU64,
    /// When (monotonic ms) the batch being written first failed; 0 while writes land. A
    /// writer that cannot make progress takes the replica out of `/readyz`.
    failing_since: AtomicU64,
    /// How long each journal transaction took to commit, and how many entries it carried: what
    /// every request of the batch waited for (docs/benchmarks.md, the tail at concurrency 1).
    commits: JournalHistograms,
}

/// The journal's histograms.
#[derive(Debug, Clone)]
struct JournalHistograms {
    seconds: prometheus_client::metrics::histogram::Histogram,
    entries: prometheus_client::metrics::histogram::Histogram,
}

impl Default for JournalHistograms {
    fn default() -> JournalHistograms {
        use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
        JournalHistograms {
            // 100 µs (a SQLite commit without fsync) to 2.5 s (a stalled disk or database).
            seconds: Histogram::new([
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                1.0, 2.5,
            ]),
            // 1 to 1,024 entries, doubling.
            entries: Histogram::new(exponential_buckets(1.0, 2.0, 11)),
        }
    }
}

/// What the writer task is asked to do.
#[derive(Debug)]
enum Job {
    /// A charge, with the request's usage record when it has one.
    Charge(
        Box<ChargeRow>,
        Option<Box<UsageRecord>>,
        Option<oneshot::Sender<()>>,
    ),
    /// A usage record of a request that was not charged.
    Usage(Box<UsageRecord>),
    Credit(CreditRequest),
    Renew {
        account: String,
        lease: LeaseId,
    },
    Return {
        lease: LeaseId,
    },
    Shrink {
        lease: LeaseId,
        by: Amount,
    },
    /// Answered once everything queued before it is written.
    Flush(oneshot::Sender<()>),
}

/// An open hold on an account's leased credit. Closes exactly once: by [`Hold::settle`],
/// [`Hold::release`], or when dropped (released).
#[derive(Debug)]
pub struct Hold {
    core: Arc<Core>,
    id: Option<HoldId>,
    ledger_id: String,
    amount: Amount,
}

/// The durability of a settlement: resolves when its ledger row is committed.
#[derive(Debug)]
pub struct Durable(Option<oneshot::Receiver<()>>);

impl Durable {
    /// Waits for the batch that carries the charge; false if the writer stopped first.
    pub async fn wait(self) -> bool {
        match self.0 {
            Some(rx) => rx.await.is_ok(),
            None => true,
        }
    }
}

/// A resolved waiting hold on its way to its request: the request's channel (gone if it was
/// never registered) and the hold with its amount, or the refusal.
type Delivery = (Option<Waiter>, Result<(HoldId, Amount), Refusal>);

/// Where a waiting request receives its hold.
type Waiter = oneshot::Sender<Result<Hold, Refusal>>;

impl Core {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn send(&self, job: Job) {
        if self.jobs.send(job).is_err() {
            tracing::error!("the ledger writer has stopped; a journal entry is lost");
        }
    }

    /// Hands resolved waiting holds to their requests. Called without the lock: a request that
    /// went away drops its hold, which releases it (and takes the lock).
    fn deliver(self: &Arc<Core>, resolved: Vec<Delivery>) {
        for (waiter, result) in resolved {
            let result = result.map(|(id, amount)| Hold::new(self.clone(), id, amount));
            match waiter {
                Some(waiter) => {
                    let _ = waiter.send(result);
                }
                None => drop(result),
            }
        }
    }

    /// Takes the waiters of resolved tickets, under the lock.
    fn claim(inner: &mut Inner, resolved: Resolved) -> Vec<Delivery> {
        resolved
            .into_iter()
            .map(|(ticket, result)| {
                let result = result.map(|id| (id, inner.engine.held(id).unwrap_or(Amount::ZERO)));
                (inner.waiters.remove(&ticket), result)
            })
            .collect()
    }
}

impl Hold {
    fn new(core: Arc<Core>, id: HoldId, amount: Amount) -> Hold {
        Hold {
            core,
            id: Some(id),
            ledger_id: new_hold_id(),
            amount,
        }
    }

    /// What it reserves.
    pub fn amount(&self) -> Amount {
        self.amount
    }

    /// Its id on the ledger row.
    pub fn id(&self) -> &str {
        &self.ledger_id
    }

    /// Closes the hold with a charge of `amount` (the remainder returns to the lease) and queues
    /// the ledger row; the hold is closed when this returns, whatever happens to the future that
    /// awaits the [`Durable`]. The request's usage record, if any, is journaled with it.
    pub fn settle(
        mut self,
        amount: Amount,
        memo: ChargeMemo,
        usage: Option<UsageRecord>,
    ) -> Durable {
        let Some(id) = self.id.take() else {
            return Durable(None);
        };
        let settled = self
            .core
            .lock()
            .engine
            .settle(id, amount, monotonic_millis());
        let charge = match settled {
            Ok(charge) => charge,
            Err(LedgerError::NegativeCharge) => {
                tracing::error!(hold = %self.ledger_id, %amount, "a negative charge; releasing the hold");
                self.id = Some(id);
                return Durable(None);
            }
            Err(LedgerError::NotOpen(_)) => return Durable(None),
        };
        let row = ChargeRow {
            hold_id: self.ledger_id.clone(),
            account_id: charge.account,
            lease_id: charge.lease.map(|l| l.0),
            amount: charge.amount,
            from_lease: charge.from_lease,
            memo,
        };
        let (tx, rx) = oneshot::channel();
        self.core
            .send(Job::Charge(Box::new(row), usage.map(Box::new), Some(tx)));
        Durable(Some(rx))
    }

    /// Closes the hold with no charge.
    pub fn release(mut self) {
        self.close();
    }

    fn close(&mut self) {
        if let Some(id) = self.id.take() {
            let _ = self.core.lock().engine.release(id, monotonic_millis());
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.close();
    }
}

fn new_hold_id() -> String {
    tollgate_store::new_id("hold")
}

impl Ledger {
    /// Starts the engine on `store`: its writer task and its ticker. Must be called inside a
    /// Tokio runtime.
    pub fn start(store: Store, policy: Policy) -> Ledger {
        let (jobs, rx) = mpsc::unbounded_channel();
        let writer = JournalWriter {
            owner: new_owner(),
            lease_ttl_ms: i64::try_from(policy.lease_ttl_ms).unwrap_or(i64::MAX),
            grant: tollgate_ledger::grant,
        };
        let core = Arc::new(Core {
            inner: Mutex::new(Inner {
                engine: Engine::new(policy),
                waiters: HashMap::new(),
            }),
            jobs,
            stats: Stats::default(),
        });
        let owner = writer.owner.clone();
        tokio::spawn(write_journal(
            Arc::downgrade(&core),
            store.clone(),
            rx,
            writer,
        ));
        tokio::spawn(tick(Arc::downgrade(&core)));
        tokio::spawn(sweep(Arc::downgrade(&core), store, owner));
        Ledger { core }
    }

    /// Holds `amount` of `account`'s credit: in memory when its lease covers it, otherwise once
    /// the database grants more. Cancel-safe: a hold granted after the caller went away is
    /// released.
    pub async fn hold(&self, account: &str, amount: Amount) -> Result<Hold, Refusal> {
        for attempt in 0..2 {
            let (outcome, waiting) = {
                let mut inner = self.core.lock();
                let outcome = inner.engine.hold(account, amount, monotonic_millis());
                let waiting = match &outcome {
                    HoldOutcome::Pending { ticket, .. } => {
                        let (tx, rx) = oneshot::channel();
                        inner.waiters.insert(*ticket, tx);
                        Some(rx)
                    }
                    _ => None,
                };
                (outcome, waiting)
            };
            match outcome {
                HoldOutcome::Placed { hold, top_up } => {
                    if let Some(request) = top_up {
                        self.core.send(Job::Credit(request));
                    }
                    return Ok(Hold::new(self.core.clone(), hold, amount));
                }
                HoldOutcome::Refused(refusal) => return Err(refusal),
                HoldOutcome::Pending { request, .. } => {
                    if let Some(request) = request {
                        self.core.send(Job::Credit(request));
                    }
                    let Some(waiting) = waiting else {
                        return Err(Refusal::Unavailable("no waiter".into()));
                    };
                    match waiting.await {
                        Ok(Ok(hold)) => return Ok(hold),
                        // Others took the grant first: ask once more.
                        Ok(Err(Refusal::Insufficient { .. })) if attempt == 0 => continue,
                        Ok(Err(refusal)) => return Err(refusal),
                        Err(_) => return Err(Refusal::Unavailable("the ledger stopped".into())),
                    }
                }
            }
        }
        Err(Refusal::Unavailable("no credit after two tries".into()))
    }

    /// Open holds of `account` on this replica.
    pub fn open_holds(&self, account: &str) -> u64 {
        self.core.lock().engine.account(account).open_holds
    }

    /// Open holds on this replica.
    pub fn open_holds_total(&self) -> usize {
        self.core.lock().engine.open_holds()
    }

    /// Queues a usage record for the next batch (no wait: it is not money).
    pub fn log_usage(&self, record: UsageRecord) {
        self.core.send(Job::Usage(Box::new(record)));
    }

    /// Waits until everything queued so far is written.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        self.core.send(Job::Flush(tx));
        let _ = rx.await;
    }

    /// Returns every lease and waits for the journal, for at most `within`: a replica that
    /// stops cleanly leaves nothing reserved behind, and one whose database does not take its
    /// writes still stops (its leases expire; what was not written is said in the log).
    pub async fn shutdown(&self, within: Duration) {
        let leases = self.core.lock().engine.leases();
        for (_, lease) in leases {
            self.core.send(Job::Return { lease });
        }
        if tokio::time::timeout(within, self.flush()).await.is_err() {
            tracing::error!(
                ?within,
                "the ledger's journal could not be written before the shutdown deadline; its leases expire in the database, and charges not yet written are lost"
            );
        }
    }

    /// How long the journal's writer has been failing to commit the batch it holds (`None`
    /// while writes land): past a few seconds the replica is not ready (`/readyz`).
    pub fn writer_failing_for(&self) -> Option<Duration> {
        match self.core.stats.failing_since.load(Ordering::Relaxed) {
            0 => None,
            since => Some(Duration::from_millis(
                monotonic_millis().saturating_sub(since),
            )),
        }
    }

    /// The ledger's series for `/metrics`.
    pub fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        use prometheus_client::metrics::counter::ConstCounter;
        use prometheus_client::metrics::gauge::ConstGauge;
        let s = &self.core.stats;
        for (name, help, value) in [
            (
                "tollgate_ledger_batches",
                "Journal transactions committed",
                &s.batches,
            ),
            ("tollgate_ledger_charges", "Charges journaled", &s.charges),
            (
                "tollgate_usage_records",
                "Usage-log records journaled",
                &s.usage_records,
            ),
            (
                "tollgate_ledger_lease_operations",
                "Lease grants, renewals and returns journaled",
                &s.lease_ops,
            ),
            (
                "tollgate_ledger_failed_batches",
                "Journal transactions that failed and were retried",
                &s.failed_batches,
            ),
            (
                "tollgate_ledger_expired_leases",
                "Leases of dead or stalled replicas swept back to their accounts",
                &s.expired_leases,
            ),
            (
                "tollgate_ledger_late_charges",
                "Charges of this replica on a lease it no longer held, fenced by the database",
                &s.late_charges,
            ),
            (
                "tollgate_ledger_short_charges",
                "Charges written for less than they asked (late, or too little available)",
                &s.short_charges,
            ),
            (
                "tollgate_ledger_operator_loss_nanos",
                "What short charges could not take, in nano-units: the operator's loss",
                &s.operator_loss_nanos,
            ),
            (
                "tollgate_ledger_stalls",
                "Times this replica's ledger clock jumped by more than 2 s (a pause or freeze)",
                &s.stalls,
            ),
            (
                "tollgate_ledger_lease_recalls",
                "Leases an operator's correction recalled, given back by this replica",
                &s.recalls,
            ),
            (
                "tollgate_ledger_runs_priced_by_writer",
                "Runs of charges on PostgreSQL this replica priced and the database checked",
                &s.runs_by_writer,
            ),
            (
                "tollgate_ledger_runs_priced_by_database",
                "Runs of charges on PostgreSQL the database priced (what this replica remembered was stale)",
                &s.runs_by_database,
            ),
        ] {
            registry.register(name, help, ConstCounter::new(value.load(Ordering::Relaxed)));
        }
        registry.register(
            "tollgate_ledger_commit_seconds",
            "Time each journal transaction took to commit",
            s.commits.seconds.clone(),
        );
        registry.register(
            "tollgate_ledger_batch_entries",
            "Entries (charges, usage records, lease operations) per journal transaction",
            s.commits.entries.clone(),
        );
        registry.register(
            "tollgate_ledger_open_holds",
            "Holds open on this replica",
            ConstGauge::new(i64::try_from(self.open_holds_total()).unwrap_or(i64::MAX)),
        );
    }
}

fn new_owner() -> String {
    let mut bytes = [0u8; 6];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
    format!("replica_{}_{}", std::process::id(), hex::encode(bytes))
}

/// The writer: takes whatever is queued (group commit — while one batch is written the next
/// gathers), writes it in one transaction, retries a failed batch until it lands, then answers.
async fn write_journal(
    core: std::sync::Weak<Core>,
    store: Store,
    mut rx: mpsc::UnboundedReceiver<Job>,
    writer: JournalWriter,
) {
    let mut last_batch = tokio::time::Instant::now();
    while let Some(first) = rx.recv().await {
        let due = last_batch + BATCH_INTERVAL;
        let busy = core
            .upgrade()
            .is_some_and(|core| core.lock().engine.open_holds() > 0);
        if busy && tokio::time::Instant::now() < due {
            for _ in 0..GATHER_YIELDS {
                tokio::task::yield_now().await;
            }
        }
        last_batch = tokio::time::Instant::now();
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        // A lease given back goes after the batch's charges (a stable sort: everything else
        // keeps its order, and the entries follow the jobs, so the lease operations' answers
        // stay in the jobs' order): a charge of a hold on it pays from it, not from what the
        // return freed for whoever asks next (issue 42 item 11).
        jobs.sort_by_key(|job| matches!(job, Job::Return { .. }));
        let mut entries = Vec::with_capacity(jobs.len());
        for job in &mut jobs {
            journal_entries(job, &mut entries);
        }
        let entries: Arc<[JournalEntry]> = entries.into();
        let mut written = Written::default();
        let mut clocks = Clocks::now();
        let mut committed_in = None;
        if !entries.is_empty() {
            // The batch's name: after a failure the writer asks the database whether it landed
            // (a commit whose answer was lost looks like a failure) before writing it again.
            let batch = tollgate_store::new_id("batch");
            let mut backoff = Duration::from_millis(10);
            let mut failed = false;
            loop {
                clocks = Clocks::now();
                let started = std::time::Instant::now();
                let landed = if failed {
                    store.journal_landed(&batch, &entries).await
                } else {
                    Ok(None)
                };
                let attempt = match landed {
                    Ok(Some(landed)) => {
                        tracing::warn!(batch = %batch, entries = entries.len(), "a journal batch whose commit answer was lost had landed; going on");
                        Ok(landed)
                    }
                    Ok(None) => {
                        store
                            .write_journal_batch(&writer, &batch, entries.clone())
                            .await
                    }
                    Err(e) => Err(e),
                };
                match attempt {
                    Ok(done) => {
                        written = done;
                        committed_in = Some(started.elapsed());
                        break;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, batch = %batch, entries = entries.len(), "writing the ledger journal failed; retrying");
                        failed = true;
                        if let Some(core) = core.upgrade() {
                            core.stats.failed_batches.fetch_add(1, Ordering::Relaxed);
                            let _ = core.stats.failing_since.compare_exchange(
                                0,
                                monotonic_millis().max(1),
                                Ordering::Relaxed,
                                Ordering::Relaxed,
                            );
                        }
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                }
            }
        }
        let Some(core) = core.upgrade() else {
            // The gateway is gone; what was written is written.
            continue;
        };
        core.stats.failing_since.store(0, Ordering::Relaxed);
        if let Some(took) = committed_in {
            let commits = &core.stats.commits;
            commits.seconds.observe(took.as_secs_f64());
            commits.entries.observe(entries.len() as f64);
        }
        core.stats
            .batches
            .fetch_add(u64::from(!entries.is_empty()), Ordering::Relaxed);
        let runs = store.charge_runs();
        core.stats
            .runs_by_writer
            .store(runs.by_writer, Ordering::Relaxed);
        core.stats
            .runs_by_database
            .store(runs.by_database, Ordering::Relaxed);
        let records = entries
            .iter()
            .filter(|e| matches!(e, JournalEntry::Usage(_)))
            .count();
        core.stats
            .usage_records
            .fetch_add(records as u64, Ordering::Relaxed);
        for loss in &written.losses {
            report_loss(&core, loss);
        }
        answer(&core, jobs, written.leases, clocks, writer.lease_ttl_ms);
    }
}

/// The two clocks when a batch began to be written: a lease's expiry comes back on the wall
/// clock of the writer, and the engine keeps it on the monotonic one, counted from before the
/// write — so the engine's lease always ends before the database's.
#[derive(Debug, Clone, Copy)]
struct Clocks {
    monotonic: u64,
    wall: i64,
}

impl Clocks {
    fn now() -> Clocks {
        Clocks {
            monotonic: monotonic_millis(),
            wall: now_millis(),
        }
    }

    /// `expires_at` (the database's, Unix ms) on the monotonic clock: at most one lease life
    /// after the write began, whatever the wall clock did meanwhile.
    fn expiry(self, expires_at: i64, ttl_ms: i64) -> u64 {
        let left = expires_at.saturating_sub(self.wall).clamp(0, ttl_ms.max(0));
        self.monotonic
            .saturating_add(u64::try_from(left).unwrap_or(0))
    }
}

/// A charge the database wrote for less than it asked: loudly, because the operator lost the
/// rest (`docs/decisions.md`, "Fenced leases").
fn report_loss(core: &Core, loss: &ChargeLoss) {
    let stats = &core.stats;
    stats.short_charges.fetch_add(1, Ordering::Relaxed);
    stats.operator_loss_nanos.fetch_add(
        u64::try_from(loss.loss.nanos()).unwrap_or(0),
        Ordering::Relaxed,
    );
    let why = if loss.fenced {
        stats.late_charges.fetch_add(1, Ordering::Relaxed);
        "late charge refused by the lease fence: this replica settled a hold on a lease it no \
         longer held (it stalled or lost its database past the lease's life)"
    } else {
        "a charge found too little available"
    };
    tracing::error!(
        hold = %loss.hold_id,
        account = %loss.account_id,
        charged = %loss.charged,
        lost = %loss.loss,
        "{why}; the account paid what it had available, the rest is the operator's loss"
    );
}

/// What the writer does for an engine command.
fn job_for(command: LeaseCommand) -> Job {
    match command {
        LeaseCommand::Renew { account, lease } => Job::Renew { account, lease },
        LeaseCommand::Return { lease, .. } => Job::Return { lease },
        LeaseCommand::Credit(request) => Job::Credit(request),
        LeaseCommand::Shrink { lease, by, .. } => Job::Shrink { lease, by },
    }
}

/// The journal entries of a job, onto `out`; a charge's row and a usage record move into them
/// (the job keeps its waiter).
fn journal_entries(job: &mut Job, out: &mut Vec<JournalEntry>) {
    let entry = match job {
        Job::Charge(row, usage, _) => {
            out.push(JournalEntry::Charge(std::mem::take(&mut **row)));
            match usage.take() {
                Some(record) => JournalEntry::Usage(*record),
                None => return,
            }
        }
        Job::Usage(record) => JournalEntry::Usage(std::mem::take(&mut **record)),
        Job::Credit(request) => JournalEntry::Lease(LeaseOp::Grant {
            account_id: request.account.clone(),
            lease_id: request.lease.as_ref().map(|l| l.0.clone()),
            need: request.need,
            want: request.want,
        }),
        Job::Renew { account, lease } => JournalEntry::Lease(LeaseOp::Renew {
            account_id: account.clone(),
            lease_id: lease.0.clone(),
        }),
        Job::Return { lease } => JournalEntry::Lease(LeaseOp::Return {
            lease_id: lease.0.clone(),
        }),
        Job::Shrink { lease, by } => JournalEntry::Lease(LeaseOp::Shrink {
            lease_id: lease.0.clone(),
            by: *by,
        }),
        Job::Flush(_) => return,
    };
    out.push(entry);
}

/// Applies a written batch's outcomes to the engine and answers whoever waits.
fn answer(core: &Arc<Core>, jobs: Vec<Job>, outcomes: Vec<LeaseOutcome>, clocks: Clocks, ttl: i64) {
    let mut outcomes = outcomes.into_iter();
    let mut deliveries = Vec::new();
    let mut done = Vec::new();
    {
        let mut inner = core.lock();
        let now = monotonic_millis();
        for job in jobs {
            match job {
                Job::Usage(_) => {}
                Job::Charge(_, _, tx) => {
                    core.stats.charges.fetch_add(1, Ordering::Relaxed);
                    done.extend(tx);
                }
                Job::Flush(tx) => done.push(tx),
                Job::Credit(request) => {
                    core.stats.lease_ops.fetch_add(1, Ordering::Relaxed);
                    let answer = credit_answer(&request, outcomes.next(), clocks, ttl);
                    let (resolved, commands) = inner.engine.credit_answered(&request, answer, now);
                    deliveries.extend(Core::claim(&mut inner, resolved));
                    for command in commands {
                        core.send(job_for(command));
                    }
                }
                Job::Renew { account, lease } => {
                    core.stats.lease_ops.fetch_add(1, Ordering::Relaxed);
                    let answer = match outcomes.next() {
                        Some(LeaseOutcome::Renewed { expires_at }) => RenewAnswer::Renewed {
                            expires_at: clocks.expiry(expires_at, ttl),
                        },
                        Some(LeaseOutcome::Disabled) => RenewAnswer::Disabled,
                        _ => RenewAnswer::Lost,
                    };
                    inner.engine.renewed(&account, &lease, answer, now);
                }
                Job::Return { .. } | Job::Shrink { .. } => {
                    core.stats.lease_ops.fetch_add(1, Ordering::Relaxed);
                    let _ = outcomes.next();
                }
            }
        }
    }
    core.deliver(deliveries);
    for tx in done {
        let _ = tx.send(());
    }
}

fn credit_answer(
    request: &CreditRequest,
    outcome: Option<LeaseOutcome>,
    clocks: Clocks,
    ttl: i64,
) -> CreditAnswer {
    match outcome {
        Some(LeaseOutcome::Granted {
            lease_id,
            granted,
            expires_at,
        }) => CreditAnswer::Granted {
            lease: LeaseId(lease_id),
            granted,
            expires_at: clocks.expiry(expires_at, ttl),
        },
        Some(LeaseOutcome::Insufficient { available }) => {
            CreditAnswer::Refused(Refusal::Insufficient {
                available,
                requested: request.need,
            })
        }
        Some(LeaseOutcome::Disabled) => CreditAnswer::Refused(Refusal::Disabled),
        Some(LeaseOutcome::NoAccount) => {
            CreditAnswer::Refused(Refusal::Unavailable("no such account".into()))
        }
        other => {
            CreditAnswer::Refused(Refusal::Unavailable(format!("unexpected answer {other:?}")))
        }
    }
}

/// A gap between two ticks longer than this means the replica stalled (it was stopped,
/// frozen, starved of CPU): said loudly, counted.
const STALL: Duration = Duration::from_secs(2);

/// The clock: ticks the engine (renewals, returns, timed-out credit requests). It never waits
/// on the database — a replica cut off from it must still see its leases run out and its
/// credit requests time out (`docs/decisions.md`, "Fenced leases"); the database's side of
/// time runs in [`sweep`].
///
/// After a stall the engine's monotonic clock has moved on with the world's: leases past
/// their life here are given up at this tick, and any charge still naming one is fenced by the
/// database.
async fn tick(core: std::sync::Weak<Core>) {
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_tick = std::time::Instant::now();
    loop {
        interval.tick().await;
        let Some(core) = core.upgrade() else {
            return;
        };
        let gap = last_tick.elapsed();
        last_tick = std::time::Instant::now();
        if gap > STALL {
            core.stats.stalls.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                stalled_ms = u64::try_from(gap.as_millis()).unwrap_or(u64::MAX),
                "the ledger's clock jumped: this replica stalled; leases past their life are given up"
            );
        }
        let deliveries = {
            let mut inner = core.lock();
            let (commands, resolved) = inner.engine.tick(monotonic_millis());
            for command in commands {
                core.send(job_for(command));
            }
            Core::claim(&mut inner, resolved)
        };
        core.deliver(deliveries);
    }
}

/// The database's side of time, every [`EXPIRY_SWEEP`]: sweeps expired leases of any replica
/// back to their accounts, and gives back what operators' corrections recalled. (SQLite's WAL
/// has a checkpointer of its own: `tollgate_store`'s journal.) Apart from [`tick`], so that a
/// database that does not answer stalls only this.
async fn sweep(core: std::sync::Weak<Core>, store: Store, owner: String) {
    let mut interval = tokio::time::interval(EXPIRY_SWEEP);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut rounds: u64 = 0;
    loop {
        interval.tick().await;
        if core.strong_count() == 0 {
            return;
        }
        rounds += 1;
        // The names of committed batches are asked about within seconds; an hour is plenty.
        if rounds % 600 == 1
            && let Err(e) = store
                .prune_journal_batches(now_millis().saturating_sub(3_600_000))
                .await
        {
            tracing::warn!(error = %e, "pruning the journal's batch names failed");
        }
        let expired = store.expire_leases_but(Some(&owner)).await;
        let recalled = store.recalled_leases(&owner).await;
        let Some(core) = core.upgrade() else {
            return;
        };
        match expired {
            Ok(n) => {
                core.stats.expired_leases.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "sweeping expired leases failed"),
        }
        match recalled {
            Ok(recalled) => {
                let mut inner = core.lock();
                for (account, lease) in recalled {
                    core.stats.recalls.fetch_add(1, Ordering::Relaxed);
                    let command = inner.engine.recall(&account, &LeaseId(lease));
                    core.send(job_for(command));
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading recalled leases failed"),
        }
    }
}
