//! `tollgate audit`: every money invariant of DESIGN §4, recomputed from the rows.

use crate::wide_sum::{total, wide_sum};
use crate::{Store, StoreError, now_millis};
use serde::Serialize;
use tollgate_billing::{Amount, Total};

/// How long past its expiry an open lease may stay open before it is a violation: the sweep
/// runs every second, so anything older than this was missed.
pub const LEASE_EXPIRY_GRACE_MS: i64 = 10_000;

/// The most violations listed per rule (the count says how many there were in all).
const LISTED_PER_RULE: usize = 100;

/// How long after a usage record was stamped its charge may be written: the pairing of
/// charges and records starts this long after the last pruning.
const RECORD_TO_CHARGE_MS: i64 = 60_000;

/// One broken invariant.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    pub total_balance: Total,
    /// Sum of every credit and adjustment.
    pub total_credited: Total,
    /// Sum of every charge.
    pub total_charged: Total,
    /// Ledger rows with an anomaly: charges capped below the upstream's figure, charges that
    /// could take less than they asked, corrections beyond what was available
    /// (`docs/decisions.md`).
    pub anomalies: u64,
    /// What charges could not take (late charges of a stalled replica, settlements above
    /// what the account had available): the operator's loss.
    pub operator_losses: Total,
    /// Accounts below zero, each covered by recorded overdraws (an operator's correction with
    /// `allow_negative`; rows of earlier versions); listed.
    pub negative_accounts: Vec<String>,
    /// Ledger rows in a chain (`crate::chain`; rows of releases before it are not).
    pub chained_rows: u64,
    /// The checkpoint the chains were checked against, if any.
    pub checkpoint: Option<String>,
    /// The broken invariants; empty when the books are sound.
    pub violations: Vec<Violation>,
}

/// An account as stored and as its rows add up: id, name, balance, held, leased, then the
/// ledger's, the open holds' and the open leases' sums, each in two halves
/// ([`crate::wide_sum`]).
type AccountFigures = (String, String, i64, i64, i64, i64, i64, i64, i64, i64, i64);

impl Store {
    /// Checks every invariant: each balance equals the sum of its ledger rows; `held` equals the
    /// sum of open holds and `leased` the sum of open leases; every closed hold was closed once
    /// (a settled one has exactly its one charge row, a released one none); every finished task
    /// settled or refunded its hold exactly once, and a live one still holds; no lease is open
    /// past its expiry; credits minus charges equal the sum of balances. And what an outside
    /// checker of the rows would check ([`ledger_checks`]): one charge per hold, a usage record
    /// for every charge with its amount and none without one, each account's `balance_after`
    /// chain, and every negative balance covered by recorded overdraws.
    pub async fn audit(&self) -> Result<AuditReport, StoreError> {
        self.audit_with(&crate::checkpoint::Checkpoints::default())
            .await
    }

    /// [`Store::audit`], checking the chains against every checkpoint signed by one of
    /// `trusted` (public keys in hex): a checkpoint of another key — an intruder's — is not
    /// believed.
    pub async fn audit_trusting(
        &self,
        trusted: Option<&[String]>,
    ) -> Result<AuditReport, StoreError> {
        self.audit_with(&crate::checkpoint::Checkpoints {
            trusted: trusted.map(<[String]>::to_vec),
            ..crate::checkpoint::Checkpoints::default()
        })
        .await
    }

    /// [`Store::audit`], with the chains checked as `checkpoints` says: whose keys are
    /// believed, the checkpoints published outside the database, and how old an unsigned row
    /// may be (`crate::chain::audit_chains`).
    pub async fn audit_with(
        &self,
        checkpoints: &crate::checkpoint::Checkpoints,
    ) -> Result<AuditReport, StoreError> {
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

        let (accounts, negative_accounts, total_balance) =
            account_checks(&mut tx, &mut flag).await?;
        let holds = hold_checks(&mut tx, &mut flag).await?;
        let tasks = task_checks(&mut tx, &mut flag).await?;
        let leases = lease_checks(&mut tx, now_millis(), &mut flag).await?;
        let ledger = conservation(&mut tx, total_balance, &mut flag).await?;
        ledger_checks(&mut tx, &mut flag).await?;
        code_checks(&mut tx, &mut flag).await?;
        payment_checks(&mut tx, &mut flag).await?;
        let (chained_rows, checkpoint) =
            audit_chains(&mut tx, checkpoints, now_millis(), &mut flag).await?;
        let (losses_high, losses_low): (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM ledger",
            wide_sum("COALESCE(loss_nanos, 0)", "losses")
        )))
        .fetch_one(&mut *tx)
        .await?;

        tx.rollback().await?;

        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        Ok(AuditReport {
            accounts: count(accounts),
            ledger_rows: u64::try_from(ledger.rows).unwrap_or(0),
            holds: count(holds),
            leases: count(leases),
            tasks: count(tasks),
            total_balance,
            total_credited: ledger.credited,
            total_charged: ledger.charged,
            anomalies: u64::try_from(ledger.anomalies).unwrap_or(0),
            operator_losses: total(losses_high, losses_low),
            negative_accounts,
            chained_rows,
            checkpoint,
            violations,
        })
    }
}

/// The audit's one snapshot: the read-only transaction every check reads in.
type Snapshot = sqlx::Transaction<'static, sqlx::Any>;

/// Per account: the stored figures against what the rows say (`balance_is_ledger_sum`,
/// `held_is_open_holds`, `leased_is_open_leases`, `reservations_not_negative`); returns the
/// accounts read, those below zero and the sum of every balance.
async fn account_checks(
    tx: &mut Snapshot,
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Result<(usize, Vec<String>, Total), StoreError> {
    // Per account: the stored figures against what the rows say, summed so that no sum
    // overflows on either database (`crate::wide_sum`).
    let accounts: Vec<AccountFigures> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT a.id, a.name, a.balance_nanos, a.held_nanos, a.leased_nanos,
            COALESCE(l.sum_high, 0), COALESCE(l.sum_low, 0),
            COALESCE(h.sum_high, 0), COALESCE(h.sum_low, 0),
            COALESCE(s.sum_high, 0), COALESCE(s.sum_low, 0)
         FROM accounts a
         LEFT JOIN (SELECT account_id, {} FROM ledger GROUP BY account_id) l
             ON l.account_id = a.id
         LEFT JOIN (SELECT account_id, {} FROM holds WHERE state = 'open' GROUP BY account_id) h
             ON h.account_id = a.id
         LEFT JOIN (SELECT account_id, {} FROM leases WHERE state = 'open' GROUP BY account_id) s
             ON s.account_id = a.id
         ORDER BY a.id",
        wide_sum("amount_nanos", "sum"),
        wide_sum("amount_nanos", "sum"),
        wide_sum("amount_nanos", "sum"),
    )))
    .fetch_all(&mut **tx)
    .await?;
    let mut negative_accounts = Vec::new();
    let mut total_balance = Total::ZERO;
    for (id, name, balance, held, leased, lh, ll, hh, hl, sh, sl) in &accounts {
        let subject = format!("{name} ({id})");
        let (ledger_sum, open_holds, open_leases) =
            (total(*lh, *ll), total(*hh, *hl), total(*sh, *sl));
        if Total::from(Amount::from_nanos(*balance)) != ledger_sum {
            flag(
                "balance_is_ledger_sum",
                &subject,
                format!(
                    "balance {} but the ledger sums to {ledger_sum}",
                    Amount::from_nanos(*balance),
                ),
            );
        }
        if Total::from(Amount::from_nanos(*held)) != open_holds {
            flag(
                "held_is_open_holds",
                &subject,
                format!(
                    "held {} but open holds sum to {open_holds}",
                    Amount::from_nanos(*held),
                ),
            );
        }
        if Total::from(Amount::from_nanos(*leased)) != open_leases {
            flag(
                "leased_is_open_leases",
                &subject,
                format!(
                    "leased {} but open leases sum to {open_leases}",
                    Amount::from_nanos(*leased),
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
        total_balance = total_balance.add(Amount::from_nanos(*balance));
    }
    Ok((accounts.len(), negative_accounts, total_balance))
}

/// Holds (`hold_charged_once`, `hold_state_known`, `charge_has_hold`); returns the holds read.
async fn hold_checks(
    tx: &mut Snapshot,
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Result<usize, StoreError> {
    // Holds: closed once, with exactly the ledger rows their state implies.
    let holds: Vec<(String, String, Option<i64>, i64, i64, i64)> =
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT h.id, h.state, h.captured_nanos, COALESCE(l.n, 0),
                    COALESCE(l.charged_high, 0), COALESCE(l.charged_low, 0)
             FROM holds h
             LEFT JOIN (SELECT hold_id, CAST(COUNT(*) AS BIGINT) AS n, {}
                        FROM ledger WHERE hold_id IS NOT NULL GROUP BY hold_id) l
                 ON l.hold_id = h.id
             ORDER BY h.id",
            wide_sum("amount_nanos", "charged")
        )))
        .fetch_all(&mut **tx)
        .await?;
    for (id, state, captured, rows, high, low) in &holds {
        // Charge rows are negative; negated once summed (no row's negation can overflow).
        let charged = Total::ZERO.minus(total(*high, *low));
        let captured_total = captured.map(|c| Total::from(Amount::from_nanos(c)));
        match state.as_str() {
            "open" | "released" if *rows != 0 => flag(
                "hold_charged_once",
                id,
                format!("{state} but has {rows} charge rows"),
            ),
            "settled" if *rows != 1 || Some(charged) != captured_total => flag(
                "hold_charged_once",
                id,
                format!("settled at {captured:?} with {rows} charge rows summing to {charged}"),
            ),
            "open" | "released" | "settled" => {}
            other => flag("hold_state_known", id, format!("state {other:?}")),
        }
    }
    let charge_without_hold: Vec<(String,)> = sqlx::query_as(
        "SELECT id FROM ledger WHERE kind = 'charge' AND hold_id IS NULL ORDER BY id",
    )
    .fetch_all(&mut **tx)
    .await?;
    for (id,) in &charge_without_hold {
        flag("charge_has_hold", id, "a charge row names no hold".into());
    }
    Ok(holds.len())
}

/// Payments (`crate::payments`; `payment_row_has_payment`, `payment_credited_once`,
/// `reversal_matches_ledger`): every ledger row of kind `payment` is the one credit of one
/// paid payment (its account, its amount) or a chargeback won back, every `refund` row is a
/// recorded refund or chargeback, each with its amount; every paid payment has its credit and
/// no other payment has one; a payment's refunds add up to its running total and never to more
/// than it. An insider who marks a paid payment open to have its webhook credit it again leaves
/// a credit no paid payment names.
async fn payment_checks(
    tx: &mut Snapshot,
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Result<(), StoreError> {
    let orphans: Vec<(String, String)> = sqlx::query_as(
        "SELECT l.id, l.kind FROM ledger l WHERE l.kind IN ('payment', 'refund')
           AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.ledger_id = l.id
               AND p.status = 'paid' AND l.kind = 'payment')
           AND NOT EXISTS (SELECT 1 FROM payment_reversals r WHERE r.ledger_id = l.id)
         ORDER BY l.id",
    )
    .fetch_all(&mut **tx)
    .await?;
    for (id, kind) in &orphans {
        flag(
            "payment_row_has_payment",
            id,
            format!("a {kind} row no paid payment, refund or chargeback names"),
        );
    }
    type Row = (
        String,
        String,
        Option<String>,
        Option<String>,
        Option<i64>,
        i64,
    );
    let wrong: Vec<Row> = sqlx::query_as(
        "SELECT p.id, p.status, p.ledger_id, l.kind, l.amount_nanos, p.amount_nanos
         FROM payments p LEFT JOIN ledger l ON l.id = p.ledger_id
         WHERE (p.status = 'paid' AND (l.id IS NULL OR l.kind <> 'payment'
                OR l.amount_nanos <> p.amount_nanos OR l.account_id <> p.account_id))
            OR (p.status <> 'paid' AND p.ledger_id IS NOT NULL)
         ORDER BY p.id",
    )
    .fetch_all(&mut **tx)
    .await?;
    for (id, status, ledger_id, kind, amount, worth) in &wrong {
        flag(
            "payment_credited_once",
            id,
            format!(
                "{status}, worth {}, but its credit {ledger_id:?} is {kind:?} of {:?} \
                 (or for another account)",
                Amount::from_nanos(*worth),
                amount.map(Amount::from_nanos)
            ),
        );
    }
    type Reversed = (String, String, Option<i64>, i64, Option<String>, String);
    let mismatched: Vec<Reversed> = sqlx::query_as(
        "SELECT r.ledger_id, r.cause, l.amount_nanos, r.amount_nanos, l.account_id, p.account_id
         FROM payment_reversals r JOIN payments p ON p.id = r.payment_id
         LEFT JOIN ledger l ON l.id = r.ledger_id
         WHERE l.id IS NULL OR l.amount_nanos <> -r.amount_nanos OR l.account_id <> p.account_id
            OR l.kind <> CASE WHEN r.amount_nanos > 0 THEN 'refund' ELSE 'payment' END
         ORDER BY r.ledger_id",
    )
    .fetch_all(&mut **tx)
    .await?;
    for (ledger_id, cause, amount, took, _, _) in &mismatched {
        flag(
            "reversal_matches_ledger",
            ledger_id,
            format!(
                "a {cause} that took {} has a ledger row of {:?} (or none, or another account's)",
                Amount::from_nanos(*took),
                amount.map(Amount::from_nanos)
            ),
        );
    }
    let totals: Vec<(String, i64, i64, i64, i64)> = sqlx::query_as(
        "SELECT p.id, p.refunded_minor, p.amount_minor,
            COALESCE((SELECT CAST(SUM(r.amount_minor) AS BIGINT) FROM payment_reversals r
                      WHERE r.payment_id = p.id AND r.cause = 'refund'), 0),
            COALESCE((SELECT CAST(SUM(r.amount_nanos) AS BIGINT) FROM payment_reversals r
                      WHERE r.payment_id = p.id), 0) - p.amount_nanos
         FROM payments p WHERE p.refunded_minor > 0 OR p.dispute IS NOT NULL ORDER BY p.id",
    )
    .fetch_all(&mut **tx)
    .await?;
    for (id, refunded, whole, rows, beyond) in &totals {
        if refunded != rows || refunded > whole || *beyond > 0 {
            flag(
                "reversal_matches_ledger",
                id,
                format!(
                    "refunded {refunded} of {whole} minor units, its refund rows say {rows}, \
                     and its reversals take {} more than it credited",
                    Amount::from_nanos((*beyond).max(0))
                ),
            );
        }
    }
    Ok(())
}

/// Redemption codes (`crate::codes`; `redemption_has_code`, `code_redeemed_once`): every
/// redemption row is the one row of exactly one redeemed code, for that code's account and its
/// batch's amount, and every redeemed code has its row. An insider who marks a redeemed code
/// unredeemed to have it redeemed again leaves a row no code names.
async fn code_checks(
    tx: &mut Snapshot,
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Result<(), StoreError> {
    let orphans: Vec<(String,)> = sqlx::query_as(
        "SELECT l.id FROM ledger l WHERE l.kind = 'redemption'
           AND NOT EXISTS (SELECT 1 FROM codes c WHERE c.ledger_id = l.id) ORDER BY l.id",
    )
    .fetch_all(&mut **tx)
    .await?;
    for (id,) in &orphans {
        flag(
            "redemption_has_code",
            id,
            "a redemption row no redeemed code names".into(),
        );
    }
    type Row = (
        i64,
        String,
        Option<String>,
        Option<String>,
        Option<i64>,
        i64,
    );
    let wrong: Vec<Row> = sqlx::query_as(
        "SELECT c.number, c.batch_id, c.ledger_id, l.kind, l.amount_nanos, b.amount_nanos
         FROM codes c JOIN code_batches b ON b.id = c.batch_id
         LEFT JOIN ledger l ON l.id = c.ledger_id
         WHERE c.redeemed_at IS NOT NULL AND (l.id IS NULL OR l.kind <> 'redemption'
            OR l.amount_nanos <> b.amount_nanos OR l.account_id <> c.account_id)
         ORDER BY c.batch_id, c.number",
    )
    .fetch_all(&mut **tx)
    .await?;
    for (number, batch, ledger_id, kind, amount, worth) in &wrong {
        flag(
            "code_redeemed_once",
            &format!("{batch}#{number}"),
            format!(
                "redeemed, worth {}, but its ledger row {ledger_id:?} is {kind:?} of {:?} \
                 (or for another account)",
                Amount::from_nanos(*worth),
                amount.map(Amount::from_nanos)
            ),
        );
    }
    Ok(())
}

/// Tasks (`task_has_hold`, `task_settled_once`); returns the tasks read.
async fn task_checks(
    tx: &mut Snapshot,
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Result<usize, StoreError> {
    // Tasks: a finished task's hold is closed the matching way; a live one's is open.
    let tasks: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT t.id, t.status, t.hold_id, h.state FROM tasks t
         LEFT JOIN holds h ON h.id = t.hold_id ORDER BY t.id",
    )
    .fetch_all(&mut **tx)
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
    Ok(tasks.len())
}

/// Leases (`lease_not_past_expiry`, `lease_not_negative`, `lease_arithmetic`) at `now`; returns
/// the leases read.
async fn lease_checks(
    tx: &mut Snapshot,
    now: i64,
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Result<usize, StoreError> {
    // Leases: none open long past its expiry; none below zero.
    let leases: Vec<(String, String, i64, i64)> =
        sqlx::query_as("SELECT id, state, amount_nanos, expires_at FROM leases ORDER BY id")
            .fetch_all(&mut **tx)
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

    // A lease's arithmetic (issue 42): what it was granted went to charges, back to the
    // balance, or is still in it; and it paid no more than the charge rows that name it —
    // rows in the account's chain — came to. Leases made before the counters are not
    // checked.
    type LeaseBooks = (String, String, i64, i64, i64, i64, i64, i64);
    let books: Vec<LeaseBooks> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT s.id, s.state, s.granted_nanos, s.amount_nanos, s.charged_nanos,
                s.returned_nanos, COALESCE(r.named_high, 0), COALESCE(r.named_low, 0)
         FROM leases s
         LEFT JOIN (SELECT lease_id, {} FROM ledger
                    WHERE kind = 'charge' AND lease_id IS NOT NULL GROUP BY lease_id) r
             ON r.lease_id = s.id
         WHERE s.charged_nanos IS NOT NULL AND s.returned_nanos IS NOT NULL
         ORDER BY s.id",
        wide_sum("amount_nanos", "named")
    )))
    .fetch_all(&mut **tx)
    .await?;
    for (id, state, granted, amount, charged, returned, high, low) in &books {
        let left = if state == "open" { *amount } else { 0 };
        let accounted = i128::from(*charged) + i128::from(*returned) + i128::from(left);
        if i128::from(*granted) != accounted {
            flag(
                "lease_arithmetic",
                id,
                format!(
                    "granted {} but charged {} + returned {} + left {} = {}",
                    Amount::from_nanos(*granted),
                    Amount::from_nanos(*charged),
                    Amount::from_nanos(*returned),
                    Amount::from_nanos(left),
                    Total::from_nanos(accounted)
                ),
            );
        }
        // Charge rows are negative: what they came to is the negated sum.
        let named = Total::ZERO.minus(total(*high, *low));
        if Total::from(Amount::from_nanos(*charged)) > named {
            flag(
                "lease_arithmetic",
                id,
                format!(
                    "paid {} of charges, more than the {named} its charge rows came to",
                    Amount::from_nanos(*charged)
                ),
            );
        }
    }
    Ok(leases.len())
}

/// What the ledger's credits and charges come to.
struct LedgerTotals {
    credited: Total,
    charged: Total,
    rows: i64,
    anomalies: i64,
}

/// Conservation (`money_is_conserved`): what came in minus what was charged is what the
/// accounts hold, `total_balance`.
async fn conservation(
    tx: &mut Snapshot,
    total_balance: Total,
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Result<LedgerTotals, StoreError> {
    // Conservation: what came in minus what was charged is what the accounts hold.
    let (credited_high, credited_low, charged_high, charged_low, ledger_rows, anomalies): (
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
    ) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {}, {},
                CAST(COUNT(*) AS BIGINT),
                CAST(COALESCE(SUM(CASE WHEN anomaly IS NOT NULL THEN 1 ELSE 0 END), 0) AS BIGINT)
         FROM ledger",
        wide_sum(
            "CASE WHEN kind <> 'charge' THEN amount_nanos ELSE 0 END",
            "credited"
        ),
        wide_sum(
            "CASE WHEN kind = 'charge' THEN amount_nanos ELSE 0 END",
            "charged"
        ),
    )))
    .fetch_one(&mut **tx)
    .await?;
    let (credited, charged) = (
        total(credited_high, credited_low),
        Total::ZERO.minus(total(charged_high, charged_low)),
    );
    if credited.minus(charged) != total_balance {
        flag(
            "money_is_conserved",
            "all accounts",
            format!("credited {credited} − charged {charged} ≠ balances {total_balance}"),
        );
    }
    Ok(LedgerTotals {
        credited,
        charged,
        rows: ledger_rows,
        anomalies,
    })
}

/// Rows read at a time when the audit walks a chain: an account of millions of rows is walked
/// in bounded memory.
const WALK_PAGE: i64 = 10_000;

/// The chain checks of `tollgate audit` (docs/decisions.md, "What the audit checks"), inside
/// its snapshot; returns the chained rows read and the newest checkpoint believed:
///
/// - `ledger_chain`: each account's chained rows, in `seq` order, link from the first to the
///   last (the first broken link is named);
/// - `ledger_head`: `accounts.ledger_head` is the last link;
/// - `checkpoint_signature`: every checkpoint of a trusted key (of the table and of the
///   published log) verifies;
/// - `checkpoint_heads`: every head every believed checkpoint signed is still there: its
///   account exists, its chain reaches the signed `seq` and passes through the signed hash;
/// - `checkpoint_deleted`: every published checkpoint is still in the table;
/// - `checkpoint_missing`, `checkpoint_stale` (with a key configured): no chained row older
///   than `stale_after_ms` goes unsigned.
async fn audit_chains(
    db: &mut sqlx::AnyConnection,
    checkpoints: &crate::checkpoint::Checkpoints,
    now: i64,
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Result<(u64, Option<String>), crate::StoreError> {
    use std::collections::{BTreeMap, BTreeSet};
    let accounts: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT id, name, ledger_head FROM accounts ORDER BY id")
            .fetch_all(&mut *db)
            .await?;
    let stored = crate::checkpoint::newest_first(db).await?;
    let believed = believed(checkpoints, &stored, flag);
    // What each account's chain must pass through: (seq, hash, the first checkpoint that
    // signed it), each once however many checkpoints signed an unchanged head — bounded by
    // the rows, not by the checkpoints.
    let mut by_account: BTreeMap<&str, BTreeMap<(i64, &str), &str>> = BTreeMap::new();
    for c in &believed {
        for (account, (seq, hash)) in &c.heads {
            by_account
                .entry(account.as_str())
                .or_default()
                .entry((*seq, hash.as_str()))
                .or_insert(c.id.as_str());
        }
    }
    let signed: BTreeMap<&str, Vec<(i64, &str, &str)>> = by_account
        .into_iter()
        .map(|(account, heads)| {
            let heads = heads
                .into_iter()
                .map(|((seq, hash), checkpoint)| (seq, hash, checkpoint))
                .collect();
            (account, heads)
        })
        .collect();
    let known: BTreeSet<&str> = accounts.iter().map(|(id, _, _)| id.as_str()).collect();
    for (account, heads) in &signed {
        if !known.contains(account)
            && let Some((seq, _, id)) = heads.iter().max()
        {
            flag(
                "checkpoint_heads",
                account,
                format!(
                    "checkpoint {id} signed the account's chain up to seq {seq}; the account is gone"
                ),
            );
        }
    }
    let coverage = checkpoints.trusted.is_some() && checkpoints.stale_after_ms.is_some();
    let stale_before = now.saturating_sub(checkpoints.stale_after_ms.unwrap_or(i64::MAX));
    let mut chained = 0u64;
    for (id, name, head) in &accounts {
        let subject = format!("{name} ({id})");
        let expected: &[(i64, &str, &str)] = signed.get(id.as_str()).map_or(&[], Vec::as_slice);
        let covered = expected.iter().map(|(seq, _, _)| *seq).max();
        // The oldest chained row no believed checkpoint covers.
        let mut unsigned: Option<(i64, i64)> = None;
        let mut passed: BTreeSet<(i64, &str)> = BTreeSet::new();
        let (mut prev, mut last_seq, mut broken) = (crate::chain::GENESIS.to_owned(), None, None);
        let mut from = i64::MIN;
        loop {
            let lines = crate::chain::read_lines(db, id, from, i64::MAX, WALK_PAGE).await?;
            chained += lines.len() as u64;
            for (line, stored) in &lines {
                if broken.is_none() {
                    match crate::chain::step(&prev, last_seq, line, stored.as_deref()) {
                        Ok(link) => {
                            prev = link;
                            last_seq = Some(line.seq);
                        }
                        Err(b) => broken = Some(b),
                    }
                }
                // The link at this seq: recomputed while the chain holds, stored after.
                let link = if broken.is_none() {
                    prev.as_str()
                } else {
                    stored.as_deref().unwrap_or_default()
                };
                let from = expected.partition_point(|(seq, _, _)| *seq < line.seq);
                for (seq, hash, _) in expected[from..]
                    .iter()
                    .take_while(|(s, _, _)| *s == line.seq)
                {
                    if *hash == link {
                        passed.insert((*seq, hash));
                    }
                }
                if covered.is_none_or(|c| line.seq > c)
                    && line.created_at < stale_before
                    && unsigned.is_none()
                {
                    unsigned = Some((line.seq, line.created_at));
                }
            }
            match lines.last() {
                Some((last, _)) if lines.len() as i64 == WALK_PAGE => from = last.seq + 1,
                _ => break,
            }
        }
        match broken {
            Some(broken) => flag(
                "ledger_chain",
                &subject,
                format!("row {} (seq {}): {}", broken.id, broken.seq, broken.why),
            ),
            None if last_seq.is_none() && head.is_none() => {}
            None if head.as_deref() != Some(prev.as_str()) => flag(
                "ledger_head",
                &subject,
                format!(
                    "the account's head is {} but its chain ends at {prev}: its last row was dropped, or the head edited",
                    head.as_deref().unwrap_or("none")
                ),
            ),
            None => {}
        }
        for (seq, hash, checkpoint) in expected {
            if !passed.contains(&(*seq, *hash)) {
                flag(
                    "checkpoint_heads",
                    &subject,
                    format!(
                        "checkpoint {checkpoint} signed seq {seq} with hash {hash}; the chain no longer passes through it (rewritten or cut)"
                    ),
                );
            }
        }
        if coverage && let Some((seq, at)) = unsigned {
            match covered {
                None if believed.is_empty() => {}
                None => flag(
                    "checkpoint_stale",
                    &subject,
                    format!(
                        "no checkpoint signs the account's chain; its row at seq {seq} was written {} s ago",
                        (now - at) / 1000
                    ),
                ),
                Some(c) => flag(
                    "checkpoint_stale",
                    &subject,
                    format!(
                        "the newest checkpoint signs the chain up to seq {c}; the row at seq {seq}, written {} s ago, is signed by none",
                        (now - at) / 1000
                    ),
                ),
            }
        }
    }
    if coverage && believed.is_empty() && chained > 0 {
        // Rows older than the staleness bound, with nothing signed at all.
        let (oldest,): (Option<i64>,) =
            sqlx::query_as("SELECT MIN(created_at) FROM ledger WHERE hash IS NOT NULL")
                .fetch_one(&mut *db)
                .await?;
        if oldest.is_some_and(|at| at < stale_before) {
            flag(
                "checkpoint_missing",
                "all accounts",
                "a signing key is configured but no checkpoint of it is in the database or the published log".into(),
            );
        }
    }
    let newest = believed
        .iter()
        .max_by_key(|c| (c.created_at, c.id.clone()))
        .map(|c| c.id.clone());
    Ok((chained, newest))
}

/// The checkpoints the audit believes: every one of a trusted key, from the published log and
/// the database, once, whose signature verifies (`checkpoint_signature` names the others); a
/// published one missing from the database, or changed there, is `checkpoint_deleted`.
fn believed<'a>(
    checkpoints: &'a crate::checkpoint::Checkpoints,
    stored: &'a [crate::checkpoint::Checkpoint],
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Vec<&'a crate::checkpoint::Checkpoint> {
    for c in &checkpoints.published {
        match stored.iter().find(|s| s.id == c.id) {
            None => flag(
                "checkpoint_deleted",
                &c.id,
                "published, but no longer in the database's ledger_checkpoints".into(),
            ),
            Some(s) if s.signature != c.signature || s.heads != c.heads => flag(
                "checkpoint_deleted",
                &c.id,
                "the database's copy differs from the published one".into(),
            ),
            Some(_) => {}
        }
    }
    let mut believed: Vec<&crate::checkpoint::Checkpoint> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for c in checkpoints.published.iter().chain(stored.iter()) {
        if !seen.insert(c.id.as_str()) {
            continue;
        }
        if let Some(keys) = &checkpoints.trusted
            && !c.signed_by(keys)
        {
            continue;
        }
        match c.verify() {
            Ok(()) => believed.push(c),
            Err(why) => flag("checkpoint_signature", &c.id, why),
        }
    }
    believed
}

/// A charge and its usage records: id, account, hold, amount, records, their lowest and highest
/// charge.
type UnpairedCharge = (String, String, Option<String>, i64, i64, i64, i64);

/// A ledger row beside the one before it in its account's chain: account, id, seq, amount,
/// balance after, the previous row's seq and balance after, and the sum of the rows before
/// the chain began.
type ChainLink = (String, String, i64, i64, i64, Option<i64>, Option<i64>, i64);

/// The checks an outside reader of the tables makes (`docs/decisions.md`, "What the audit
/// checks"), run inside the audit's snapshot:
///
/// - `one_charge_per_hold`: no hold has two charge rows (a request has one hold, so this is also
///   one charge per request).
/// - `charge_has_usage_record`: every charge written by this version has exactly one usage
///   record, naming its hold, with the same amount; `usage_record_has_charge`: every record
///   that names a hold has that charge, and none charges without naming one. Records pruned
///   by `[usage] retention_days` are not expected.
/// - `balance_after_chain`: an account's rows, in `seq` order, number 1, 2, 3, …; each row's
///   `balance_after` is the previous one's plus its amount (the first one's: the rows before
///   the chain began, plus its amount); `accounts.ledger_seq` is the last number.
/// - `negative_balance_explained`: a balance below zero is covered by the overdraws the ledger
///   recorded (an operator's correction with `allow_negative`), and every overdraw and every
///   loss says why in `anomaly`.
async fn ledger_checks(
    tx: &mut Snapshot,
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Result<(), StoreError> {
    listed(flag, "one_charge_per_hold", doubled_charges(tx).await?);
    let (unpaired, orphans) = usage_pairing(tx).await?;
    listed(flag, "charge_has_usage_record", unpaired);
    listed(flag, "usage_record_has_charge", orphans);
    listed(flag, "balance_after_chain", chain_breaks(tx).await?);
    listed(
        flag,
        "negative_balance_explained",
        unexplained_overdraws(tx).await?,
    );
    Ok(())
}

/// What a check found: (subject, detail), one per violation.
type Findings = Vec<(String, String)>;

/// Flags `rows` under `rule`, at most [`LISTED_PER_RULE`] of them and a count of the rest.
fn listed(flag: &mut impl FnMut(&'static str, &str, String), rule: &'static str, rows: Findings) {
    let total = rows.len();
    for (subject, detail) in rows.into_iter().take(LISTED_PER_RULE) {
        flag(rule, &subject, detail);
    }
    if total > LISTED_PER_RULE {
        flag(
            rule,
            "more",
            format!("{} more not listed", total - LISTED_PER_RULE),
        );
    }
}

/// `one_charge_per_hold`: the holds with two charge rows or more.
async fn doubled_charges(tx: &mut Snapshot) -> Result<Findings, StoreError> {
    let doubled: Vec<(String, i64)> = sqlx::query_as(
        "SELECT hold_id, CAST(COUNT(*) AS BIGINT) FROM ledger
         WHERE kind = 'charge' AND hold_id IS NOT NULL
         GROUP BY hold_id HAVING COUNT(*) > 1 ORDER BY hold_id",
    )
    .fetch_all(&mut **tx)
    .await?;
    Ok(doubled
        .into_iter()
        .map(|(hold, n)| (hold, format!("{n} charge rows")))
        .collect())
}

/// `charge_has_usage_record` and `usage_record_has_charge`: the charges without their one usage
/// record, and the records without their charge.
async fn usage_pairing(tx: &mut Snapshot) -> Result<(Findings, Findings), StoreError> {
    // Charges and usage records are paired from when this version began writing them (the
    // first row of a chain) and after any pruning of the usage log.
    let (since, pruned): (i64, i64) = sqlx::query_as(
        "SELECT CAST(COALESCE((SELECT MIN(created_at) FROM ledger WHERE seq IS NOT NULL), 0) AS BIGINT),
                CAST(COALESCE((SELECT MAX(CAST(value AS BIGINT)) FROM settings WHERE name = $1), 0) AS BIGINT)",
    )
    .bind(crate::usage::USAGE_PRUNED_BEFORE)
    .fetch_one(&mut **tx)
    .await?;
    let from = if pruned > 0 {
        since.max(pruned.saturating_add(RECORD_TO_CHARGE_MS))
    } else {
        since
    };
    let unpaired: Vec<UnpairedCharge> = sqlx::query_as(
        "SELECT l.id, l.account_id, l.hold_id, CAST(-l.amount_nanos AS BIGINT), CAST(COUNT(u.id) AS BIGINT),
                CAST(COALESCE(MIN(u.charge_nanos), 0) AS BIGINT),
                CAST(COALESCE(MAX(u.charge_nanos), 0) AS BIGINT)
         FROM ledger l LEFT JOIN usage_log u ON u.hold_id = l.hold_id
         WHERE l.kind = 'charge' AND l.seq IS NOT NULL AND l.created_at >= $1
         GROUP BY l.id, l.account_id, l.hold_id, l.amount_nanos
         HAVING COUNT(u.id) <> 1 OR MIN(u.charge_nanos) <> -l.amount_nanos
             OR MAX(u.charge_nanos) <> -l.amount_nanos
         ORDER BY l.id",
    )
    .bind(from)
    .fetch_all(&mut **tx)
    .await?;
    let unpaired = unpaired
        .into_iter()
        .map(|(id, account, hold, amount, n, low, high)| {
            let detail = match n {
                0 => format!(
                    "a charge of {} (hold {}) has no usage record",
                    Amount::from_nanos(amount),
                    hold.as_deref().unwrap_or("none")
                ),
                1 => format!(
                    "a charge of {} but its usage record says {}",
                    Amount::from_nanos(amount),
                    Amount::from_nanos(low)
                ),
                n => format!(
                    "a charge of {} has {n} usage records ({} … {})",
                    Amount::from_nanos(amount),
                    Amount::from_nanos(low),
                    Amount::from_nanos(high)
                ),
            };
            (format!("{id} of {account}"), detail)
        })
        .collect();
    let orphans: Vec<(String, String, Option<String>, i64)> = sqlx::query_as(
        "SELECT u.id, u.account_id, u.hold_id, u.charge_nanos FROM usage_log u
         LEFT JOIN ledger l ON l.hold_id = u.hold_id AND l.kind = 'charge'
         WHERE u.created_at >= $1 AND l.id IS NULL
           AND (u.hold_id IS NOT NULL OR u.charge_nanos <> 0)
         ORDER BY u.id",
    )
    .bind(from)
    .fetch_all(&mut **tx)
    .await?;
    let orphans = orphans
        .into_iter()
        .map(|(id, account, hold, charge)| {
            let detail = match hold {
                Some(hold) => format!(
                    "a record of a charge of {} on hold {hold}, which has no charge row",
                    Amount::from_nanos(charge)
                ),
                None => format!(
                    "a record of a charge of {} that names no hold",
                    Amount::from_nanos(charge)
                ),
            };
            (format!("{id} of {account}"), detail)
        })
        .collect();
    Ok((unpaired, orphans))
}

/// `balance_after_chain`: the rows whose number or `balance_after` break their account's chain,
/// and the accounts whose `ledger_seq` is not their last row's.
async fn chain_breaks(tx: &mut Snapshot) -> Result<Findings, StoreError> {
    let broken: Vec<ChainLink> = sqlx::query_as(
        "SELECT x.account_id, x.id, x.seq, x.amount_nanos, x.balance_after_nanos, x.prev_seq,
                    x.prev_after, x.before_chain
             FROM (SELECT l.account_id, l.id, l.seq, l.amount_nanos, l.balance_after_nanos,
                          LAG(l.seq) OVER w AS prev_seq,
                          LAG(l.balance_after_nanos) OVER w AS prev_after,
                          CAST(COALESCE((SELECT SUM(o.amount_nanos) FROM ledger o
                                         WHERE o.account_id = l.account_id AND o.seq IS NULL), 0)
                               AS BIGINT) AS before_chain
                   FROM ledger l WHERE l.seq IS NOT NULL
                   WINDOW w AS (PARTITION BY l.account_id ORDER BY l.seq)) x
             WHERE (x.prev_seq IS NULL AND (x.seq <> 1
                        OR x.balance_after_nanos <> x.before_chain + x.amount_nanos))
                OR (x.prev_seq IS NOT NULL AND (x.seq <> x.prev_seq + 1
                        OR x.balance_after_nanos <> x.prev_after + x.amount_nanos))
             ORDER BY x.account_id, x.seq",
    )
    .fetch_all(&mut **tx)
    .await?;
    let mut chain: Vec<(String, String)> = broken
        .into_iter()
        .map(|(account, id, seq, amount, after, prev_seq, prev_after, before)| {
            let detail = match (prev_seq, prev_after) {
                (Some(prev), _) if seq != prev + 1 => {
                    format!("row {id} is number {seq}, after number {prev}")
                }
                (Some(_), Some(prev_after)) => format!(
                    "row {id} (number {seq}) says {} after {}, but the row before it left {}",
                    Amount::from_nanos(after),
                    Amount::from_nanos(amount),
                    Amount::from_nanos(prev_after)
                ),
                _ if seq != 1 => format!("the chain starts at number {seq} (row {id})"),
                _ => format!(
                    "row {id} (number 1) says {} after {}, but the rows before the chain sum to {}",
                    Amount::from_nanos(after),
                    Amount::from_nanos(amount),
                    Amount::from_nanos(before)
                ),
            };
            (account, detail)
        })
        .collect();
    let tails: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT a.id, a.ledger_seq,
                CAST(COALESCE((SELECT MAX(l.seq) FROM ledger l WHERE l.account_id = a.id), 0) AS BIGINT)
         FROM accounts a
         WHERE a.ledger_seq <> COALESCE((SELECT MAX(l.seq) FROM ledger l WHERE l.account_id = a.id), 0)
         ORDER BY a.id",
    )
    .fetch_all(&mut **tx)
    .await?;
    chain.extend(tails.into_iter().map(|(account, last, found)| {
        (
            account,
            format!("the account's chain ends at number {last}, its last row is number {found}"),
        )
    }));
    Ok(chain)
}

/// `negative_balance_explained`: the balances below zero that recorded overdraws do not cover,
/// and the overdraws and losses that do not say why.
async fn unexplained_overdraws(tx: &mut Snapshot) -> Result<Findings, StoreError> {
    let negative: Vec<(String, i64, i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT a.id, a.balance_nanos, COALESCE(o.covered_high, 0), COALESCE(o.covered_low, 0)
         FROM accounts a
         LEFT JOIN (SELECT account_id, {} FROM ledger WHERE anomaly IS NOT NULL
                    GROUP BY account_id) o ON o.account_id = a.id
         WHERE a.balance_nanos < 0 ORDER BY a.id",
        wide_sum("COALESCE(overdraw_nanos, 0)", "covered")
    )))
    .fetch_all(&mut **tx)
    .await?;
    let mut unexplained: Vec<(String, String)> = negative
        .into_iter()
        .map(|(account, balance, high, low)| (account, balance, total(high, low)))
        .filter(|(_, balance, covered)| {
            Total::ZERO.minus(Total::from(Amount::from_nanos(*balance))) > *covered
        })
        .map(|(account, balance, covered)| {
            (
                account,
                format!(
                    "the balance is {} but the ledger records overdraws of only {covered}",
                    Amount::from_nanos(balance),
                ),
            )
        })
        .collect();
    let silent: Vec<(String, String, i64, i64)> = sqlx::query_as(
        "SELECT id, account_id, overdraw_nanos, loss_nanos FROM ledger
         WHERE seq IS NOT NULL AND (overdraw_nanos > 0 OR loss_nanos > 0) AND anomaly IS NULL
         ORDER BY id",
    )
    .fetch_all(&mut **tx)
    .await?;
    unexplained.extend(silent.into_iter().map(|(id, account, overdraw, loss)| {
        (
            format!("{id} of {account}"),
            format!(
                "an overdraw of {} and a loss of {} with no anomaly saying why",
                Amount::from_nanos(overdraw),
                Amount::from_nanos(loss)
            ),
        )
    }));
    Ok(unexplained)
}
