//! Holds, settlement and the ledger (DESIGN §2 steps 5 and 8, §4).

use crate::ids::new_id;
use crate::{Store, StoreError, now_millis};
use serde::Serialize;
use tollgate_billing::Amount;

/// What a request asks to reserve before it calls the upstream.
#[derive(Debug, Clone)]
pub struct HoldRequest {
    /// The account that pays.
    pub account_id: String,
    /// The key that was presented, for the ledger.
    pub key_id: Option<String>,
    /// The public model, for the ledger and the usage report.
    pub model: String,
    /// How much to reserve; must not be negative.
    pub amount: Amount,
    /// The request id, to find a hold from a log line.
    pub request_id: Option<String>,
    /// The task this hold pays for, if any.
    pub task_id: Option<String>,
}

impl HoldRequest {
    /// A hold of `amount` on `account_id` for `model`.
    pub fn new(account_id: &str, model: &str, amount: Amount) -> HoldRequest {
        HoldRequest {
            account_id: account_id.to_owned(),
            key_id: None,
            model: model.to_owned(),
            amount,
            request_id: None,
            task_id: None,
        }
    }

    /// Records the key that was presented.
    pub fn key(mut self, key_id: &str) -> HoldRequest {
        self.key_id = Some(key_id.to_owned());
        self
    }

    /// Records the request id.
    pub fn request(mut self, request_id: &str) -> HoldRequest {
        self.request_id = Some(request_id.to_owned());
        self
    }

    /// Ties the hold to a task.
    pub fn task(mut self, task_id: &str) -> HoldRequest {
        self.task_id = Some(task_id.to_owned());
        self
    }
}

/// A placed hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// `hold_…`
    pub id: String,
    /// The account it reserves from.
    pub account_id: String,
    /// What it reserves.
    pub amount: Amount,
}

/// How a hold is settled: the charge actually captured, and what to write on its ledger row.
#[derive(Debug, Clone, Default)]
pub struct Settlement {
    /// The charge; may exceed the hold (the balance then absorbs the difference).
    pub actual: Amount,
    /// The metered quantity, e.g. `"tokens=42"`.
    pub quantity: Option<String>,
    /// True when the charge rests on the local count, not on the upstream's usage figure.
    pub estimated: bool,
    /// Why, when the settlement is not an ordinary one (e.g. `"partial: client disconnected"`).
    pub note: Option<String>,
    /// What was refused of the upstream's figure, when the charge was capped.
    pub anomaly: Option<String>,
    /// The price group the charge was priced in; `None`: list prices.
    pub price_group: Option<crate::policy::PriceGroup>,
    /// The version of the model's price it was priced at (`crate::prices`).
    pub price_version: Option<i64>,
    /// The most it could be (a task's: its hold), for `tollgate audit --recompute`.
    pub bound: Option<Amount>,
    /// How the quantity was measured, and why the bound is what it is (the usage record's).
    pub measured: tollgate_billing::Measure,
    /// Why the bound is what it is.
    pub bound_basis: Option<String>,
    /// The model charged, when it is not the hold's: a live session's input transcription,
    /// charged on the session's hold at its own model's price.
    pub model: Option<String>,
}

impl Settlement {
    /// Charged as `model`, not as the hold's model.
    pub fn for_model(mut self, model: impl Into<String>) -> Settlement {
        self.model = Some(model.into());
        self
    }

    /// An ordinary settlement at `actual`.
    pub fn new(actual: Amount) -> Settlement {
        Settlement {
            actual,
            ..Settlement::default()
        }
    }

    /// Records the metered quantity.
    pub fn quantity(mut self, quantity: impl Into<String>) -> Settlement {
        self.quantity = Some(quantity.into());
        self
    }

    /// Marks the charge as resting on a local estimate.
    pub fn estimated(mut self) -> Settlement {
        self.estimated = true;
        self
    }

    /// Adds a note to the ledger row.
    pub fn note(mut self, note: impl Into<String>) -> Settlement {
        self.note = Some(note.into());
        self
    }

    /// Records that the charge was capped, and why.
    pub fn anomaly(mut self, anomaly: impl Into<String>) -> Settlement {
        self.anomaly = Some(anomaly.into());
        self
    }

    /// Records the price group the charge was priced in.
    pub fn price_group(mut self, group: Option<crate::policy::PriceGroup>) -> Settlement {
        self.price_group = group;
        self
    }

    /// Records the price version the charge was priced at, the most it could be and why.
    pub fn priced_at(
        mut self,
        version: Option<i64>,
        bound: Amount,
        bound_basis: impl Into<String>,
    ) -> Settlement {
        self.price_version = version;
        self.bound = Some(bound);
        self.bound_basis = Some(bound_basis.into());
        self
    }

    /// Records how the quantity was measured.
    pub fn measured(mut self, measured: tollgate_billing::Measure) -> Settlement {
        self.measured = measured;
        self
    }
}

/// Whether a settle or release call was the one that closed the hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// This call closed it.
    Now,
    /// It had already been settled or released; nothing changed.
    Already,
}

/// Kinds of ledger row.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerKind {
    /// Money added by the operator.
    Credit,
    /// Money removed by the operator.
    Adjustment,
    /// A settled hold: usage captured.
    Charge,
    /// A redemption code redeemed by the account: its note names the code's batch
    /// (`crate::codes`).
    Redemption,
    /// A payment received through a payment provider, or a chargeback reversed: its note names
    /// the payment (`crate::payments`).
    Payment,
    /// A refund or a chargeback of a payment, negative: its note names the payment
    /// (`crate::payments`).
    Refund,
}

impl LedgerKind {
    /// Its column value (and JSON name).
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerKind::Credit => "credit",
            LedgerKind::Adjustment => "adjustment",
            LedgerKind::Charge => "charge",
            LedgerKind::Redemption => "redemption",
            LedgerKind::Payment => "payment",
            LedgerKind::Refund => "refund",
        }
    }

    fn parse(s: &str) -> Result<LedgerKind, StoreError> {
        match s {
            "credit" => Ok(LedgerKind::Credit),
            "adjustment" => Ok(LedgerKind::Adjustment),
            "charge" => Ok(LedgerKind::Charge),
            "redemption" => Ok(LedgerKind::Redemption),
            "payment" => Ok(LedgerKind::Payment),
            "refund" => Ok(LedgerKind::Refund),
            other => Err(StoreError::Corrupt(format!("ledger kind {other:?}"))),
        }
    }
}

/// One ledger row.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LedgerEntry {
    /// `led_…`
    pub id: String,
    /// What kind of change.
    pub kind: LedgerKind,
    /// Signed change of the balance.
    pub amount: Amount,
    /// The balance right after this row.
    pub balance_after: Amount,
    /// Public model, for charges.
    pub model: Option<String>,
    /// Metered quantity, for charges.
    pub quantity: Option<String>,
    /// The settled hold, for charges.
    pub hold_id: Option<String>,
    /// The task, for task charges.
    pub task_id: Option<String>,
    /// The request id.
    pub request_id: Option<String>,
    /// Charged on a local estimate rather than the upstream's usage.
    pub estimated: bool,
    /// Free text.
    pub note: Option<String>,
    /// Set when the gateway charged less than the upstream reported (`docs/decisions.md`,
    /// bounded settlement): what was reported and what it was capped at.
    pub anomaly: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
    /// The price group the charge was priced in (`None`: list prices).
    pub price_group: Option<String>,
    /// That group's multiplier, a decimal string.
    pub price_multiplier: Option<String>,
    /// The version of the model's price it was priced at (`crate::prices`).
    pub price_version: Option<i64>,
}

/// The columns a [`LedgerRow`] reads, in order.
pub(crate) const LEDGER_COLUMNS: &str = "id, kind, amount_nanos, balance_after_nanos, model, quantity, hold_id, task_id, request_id, estimated, note, created_at, anomaly, price_group, price_multiplier, price_version";

pub(crate) type LedgerRow = (
    String,
    String,
    i64,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    Option<String>,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

pub(crate) fn ledger_from_row(r: LedgerRow) -> Result<LedgerEntry, StoreError> {
    Ok(LedgerEntry {
        id: r.0,
        kind: LedgerKind::parse(&r.1)?,
        amount: Amount::from_nanos(r.2),
        balance_after: Amount::from_nanos(r.3),
        model: r.4,
        quantity: r.5,
        hold_id: r.6,
        task_id: r.7,
        request_id: r.8,
        estimated: r.9 != 0,
        note: r.10,
        created_at: r.11,
        anomaly: r.12,
        price_group: r.13,
        price_multiplier: r.14,
        price_version: r.15,
    })
}

/// What settling learns about the hold it closed: account, amount, model, key, request, task.
type ClosedHoldRow = (
    String,
    i64,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

impl Store {
    /// Reserves `request.amount` of the account's balance, atomically: the hold is refused with
    /// [`StoreError::InsufficientBalance`] when balance minus open holds does not cover it, or
    /// [`StoreError::Disabled`] for a disabled account. No hold, no upstream call.
    pub async fn hold(&self, request: HoldRequest) -> Result<Hold, StoreError> {
        let mut tx = self.write_tx().await?;
        let placed = place_hold(&mut tx, &request).await?;
        match placed {
            Some(hold) => {
                tx.commit().await?;
                Ok(hold)
            }
            None => {
                drop(tx);
                Err(self.refusal(&request).await)
            }
        }
    }

    /// Why a hold was refused.
    pub(crate) async fn refusal(&self, request: &HoldRequest) -> StoreError {
        match self.find_account(&request.account_id).await {
            Ok(account) if account.disabled => {
                StoreError::Disabled(format!("account {}", account.name))
            }
            Ok(account) => StoreError::InsufficientBalance {
                available: account.available(),
                requested: request.amount,
            },
            Err(e) => e,
        }
    }

    /// Captures `settlement.actual` and releases the rest of the hold, writing one `charge`
    /// ledger row. Exactly once: a second call, or one racing with [`Store::release`], changes
    /// nothing and answers [`Closed::Already`].
    pub async fn settle(
        &self,
        hold_id: &str,
        settlement: Settlement,
    ) -> Result<Closed, StoreError> {
        let mut tx = self.write_tx().await?;
        let closed = settle_hold(&mut tx, hold_id, settlement).await?;
        tx.commit().await?;
        Ok(closed)
    }

    /// Returns the whole hold to the account (nothing is charged, so no ledger row). Exactly
    /// once, like [`Store::settle`].
    pub async fn release(&self, hold_id: &str, reason: &str) -> Result<Closed, StoreError> {
        let mut tx = self.write_tx().await?;
        let closed = release_hold(&mut tx, hold_id, reason).await?;
        tx.commit().await?;
        Ok(closed)
    }

    /// The state of one hold: `open`, `settled` or `released`, with the captured amount.
    pub async fn hold_state(&self, hold_id: &str) -> Result<(String, Option<Amount>), StoreError> {
        let row: Option<(String, Option<i64>)> =
            sqlx::query_as("SELECT state, captured_nanos FROM holds WHERE id = $1")
                .bind(hold_id)
                .fetch_optional(self.pool())
                .await?;
        row.map(|(state, captured)| (state, captured.map(Amount::from_nanos)))
            .ok_or_else(|| StoreError::NotFound(format!("hold {hold_id:?}")))
    }

    /// The account's ledger, oldest first.
    pub async fn ledger(&self, account_id: &str) -> Result<Vec<LedgerEntry>, StoreError> {
        let rows: Vec<LedgerRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {LEDGER_COLUMNS} FROM ledger WHERE account_id = $1 ORDER BY created_at, id"
        )))
        .bind(account_id)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter().map(ledger_from_row).collect()
    }

    /// Sum of the account's open holds, from the holds table (to check against `held`).
    pub async fn open_holds_total(&self, account_id: &str) -> Result<Amount, StoreError> {
        let (sum,): (i64,) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(amount_nanos), 0) AS BIGINT) FROM holds
             WHERE account_id = $1 AND state = 'open'",
        )
        .bind(account_id)
        .fetch_one(self.pool())
        .await?;
        Ok(Amount::from_nanos(sum))
    }

    /// Releases open holds of ordinary requests (not tasks, not sessions) placed more than `age` ago. No
    /// synchronous request lives that long, so such a hold was orphaned by a crash or a failed
    /// settlement; releasing it returns the money rather than keeping it held forever.
    /// Returns how many were released.
    pub async fn release_stale_holds(&self, age: std::time::Duration) -> Result<u64, StoreError> {
        let cutoff =
            now_millis().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
        let stale: Vec<(String,)> = sqlx::query_as(
            "SELECT id FROM holds
             WHERE state = 'open' AND task_id IS NULL AND session_id IS NULL AND created_at < $1",
        )
        .bind(cutoff)
        .fetch_all(self.pool())
        .await?;
        let mut released = 0;
        for (id,) in stale {
            if self.release(&id, "stale: never settled").await? == Closed::Now {
                tracing::warn!(hold = %id, "released a stale hold");
                released += 1;
            }
        }
        Ok(released)
    }
}

/// Places a hold inside the caller's transaction; `None` when the balance (or a disabled
/// account) refuses it. The conditional UPDATE is the whole concurrency story: it takes the
/// account row's write lock and checks the balance under it, so two holds can never both pass.
pub(crate) async fn place_hold(
    tx: &mut sqlx::AnyConnection,
    request: &HoldRequest,
) -> Result<Option<Hold>, StoreError> {
    if request.amount.is_negative() {
        return Err(StoreError::InvalidAmount(
            "a hold cannot be negative".into(),
        ));
    }
    let amount = request.amount.nanos();
    let done = sqlx::query(
        "UPDATE accounts SET held_nanos = held_nanos + $1
         WHERE id = $2 AND disabled = 0 AND balance_nanos - held_nanos - leased_nanos >= $1",
    )
    .bind(amount)
    .bind(&request.account_id)
    .execute(&mut *tx)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(None);
    }
    let id = new_id("hold");
    sqlx::query(
        "INSERT INTO holds (id, account_id, key_id, model, amount_nanos, state, request_id, task_id, created_at)
         VALUES ($1, $2, $3, $4, $5, 'open', $6, $7, $8)",
    )
    .bind(&id)
    .bind(&request.account_id)
    .bind(request.key_id.clone())
    .bind(&request.model)
    .bind(amount)
    .bind(request.request_id.clone())
    .bind(request.task_id.clone())
    .bind(now_millis())
    .execute(&mut *tx)
    .await?;
    Ok(Some(Hold {
        id,
        account_id: request.account_id.clone(),
        amount: request.amount,
    }))
}

/// Settles a hold inside the caller's transaction (see [`Store::settle`]).
pub(crate) async fn settle_hold(
    tx: &mut sqlx::AnyConnection,
    hold_id: &str,
    settlement: Settlement,
) -> Result<Closed, StoreError> {
    if settlement.actual.is_negative() {
        return Err(StoreError::InvalidAmount(
            "a charge cannot be negative".into(),
        ));
    }
    let now = now_millis();
    // Compare-and-swap on the hold's state: only the caller that moves it from `open` goes on.
    let won: Option<ClosedHoldRow> = sqlx::query_as(
        "UPDATE holds SET state = 'settled', captured_nanos = $1, closed_at = $2, close_reason = $3
         WHERE id = $4 AND state = 'open'
         RETURNING account_id, amount_nanos, model, key_id, request_id, task_id",
    )
    .bind(settlement.actual.nanos())
    .bind(now)
    .bind(settlement.note.clone())
    .bind(hold_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((account_id, held, model, key_id, request_id, task_id)) = won else {
        return Ok(Closed::Already);
    };
    // The charge comes out of what the hold reserved (a task's settlement is bounded by its
    // hold), so it never takes money another request holds or leases.
    let (balance_after, seq, head): (i64, i64, Option<String>) = sqlx::query_as(
        "UPDATE accounts SET held_nanos = held_nanos - $1, balance_nanos = balance_nanos - $2,
             ledger_seq = ledger_seq + 1
         WHERE id = $3 RETURNING balance_nanos, ledger_seq, ledger_head",
    )
    .bind(held)
    .bind(settlement.actual.nanos())
    .bind(&account_id)
    .fetch_one(&mut *tx)
    .await?;
    let line = crate::chain::LedgerLine {
        id: new_id("led"),
        account_id: account_id.clone(),
        seq,
        kind: "charge".into(),
        amount_nanos: -settlement.actual.nanos(),
        balance_after_nanos: balance_after,
        model: Some(settlement.model.unwrap_or(model)),
        quantity: settlement.quantity,
        hold_id: Some(hold_id.to_owned()),
        task_id,
        key_id,
        request_id,
        estimated: i64::from(settlement.estimated),
        note: settlement.note,
        anomaly: settlement.anomaly,
        price_group: settlement.price_group.as_ref().map(|g| g.name.clone()),
        price_multiplier: settlement
            .price_group
            .as_ref()
            .map(|g| g.multiplier.to_string()),
        price_version: settlement.price_version,
        bound_nanos: settlement.bound.map(Amount::nanos),
        created_at: now,
        ..crate::chain::LedgerLine::default()
    };
    crate::chain::append(&mut *tx, &line, head.as_deref()).await?;
    Ok(Closed::Now)
}

/// Releases a hold inside the caller's transaction (see [`Store::release`]).
pub(crate) async fn release_hold(
    tx: &mut sqlx::AnyConnection,
    hold_id: &str,
    reason: &str,
) -> Result<Closed, StoreError> {
    let won: Option<(String, i64)> = sqlx::query_as(
        "UPDATE holds SET state = 'released', captured_nanos = 0, closed_at = $1, close_reason = $2
         WHERE id = $3 AND state = 'open'
         RETURNING account_id, amount_nanos",
    )
    .bind(now_millis())
    .bind(reason)
    .bind(hold_id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((account_id, held)) = won else {
        return Ok(Closed::Already);
    };
    sqlx::query("UPDATE accounts SET held_nanos = held_nanos - $1 WHERE id = $2")
        .bind(held)
        .bind(&account_id)
        .execute(&mut *tx)
        .await?;
    Ok(Closed::Now)
}
