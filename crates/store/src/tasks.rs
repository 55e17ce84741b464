//! Asynchronous video tasks (DESIGN §5): durable rows written before the upstream call, leased
//! by pollers in every replica, finished by a compare-and-swap whose winner alone settles or
//! releases the task's hold — in the same transaction.
//!
//! States (both inbound formats map onto them at the edge):
//! `submitting` → `queued` → `running` → `succeeded` | `failed`. A task whose submission was
//! interrupted (the process died between the row and the upstream's answer) cannot be known to
//! exist upstream and is never re-sent blindly: [`Store::fail_stale_submissions`] fails and
//! refunds it.

use crate::holds::{Closed, Hold, HoldRequest, Settlement, place_hold, release_hold, settle_hold};
use crate::ids::new_id;
use crate::usage::{UsageRecord, write_usage};
use crate::{Backend, Store, StoreError, now_millis};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use tollgate_billing::{Amount, Usage};

/// Where a task is.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// The row exists; the upstream call has not answered yet.
    Submitting,
    /// Accepted upstream, not started.
    Queued,
    /// Generating.
    Running,
    /// Done, with a result.
    Succeeded,
    /// Done, with an error (also cancelled and expired).
    Failed,
}

impl TaskState {
    /// Its column value.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitting => "submitting",
            TaskState::Queued => "queued",
            TaskState::Running => "running",
            TaskState::Succeeded => "succeeded",
            TaskState::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Result<TaskState, StoreError> {
        Ok(match s {
            "submitting" => TaskState::Submitting,
            "queued" => TaskState::Queued,
            "running" => TaskState::Running,
            "succeeded" => TaskState::Succeeded,
            "failed" => TaskState::Failed,
            other => return Err(StoreError::Corrupt(format!("task status {other:?}"))),
        })
    }

    /// `succeeded` or `failed`.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskState::Succeeded | TaskState::Failed)
    }
}

/// What a new task row holds.
#[derive(Debug, Clone)]
pub struct NewTask {
    /// Our public id (clip: `cgt-…`, generic: `video_…`).
    pub id: String,
    /// `clip` or `generic`.
    pub format: String,
    /// Who pays.
    pub account_id: String,
    /// The key that submitted it.
    pub key_id: String,
    /// Public model.
    pub model: String,
    /// The channel it is sent to.
    pub channel: String,
    /// The upstream's model id.
    pub upstream_model: String,
    /// The billing inputs at submit time (JSON), so a later price change never reprices it.
    pub pricing: serde_json::Value,
    /// The request as the client sent it (JSON).
    pub request: serde_json::Value,
    /// The id of the request that created it, for its hold, ledger row and usage record.
    pub request_id: Option<String>,
    /// The most tasks the account, and the key, may have in flight (`submitting`, `queued`,
    /// `running`) with this one.
    pub in_flight_limits: (Option<u32>, Option<u32>),
    /// How long it may take before the sweeper fails it.
    pub deadline: std::time::Duration,
    /// The submitting request's W3C `traceparent`, when traces are exported.
    pub traceparent: Option<String>,
}

/// A task row (serialized as the operator's side shows it: without its billing inputs and
/// trace).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Task {
    /// Public id.
    pub id: String,
    /// `clip` or `generic`.
    pub format: String,
    /// Who pays.
    pub account_id: String,
    /// The key that submitted it.
    pub key_id: String,
    /// Public model.
    pub model: String,
    /// Its channel.
    pub channel: String,
    /// The upstream's model id.
    pub upstream_model: String,
    /// The upstream's task id, once known.
    pub upstream_id: Option<String>,
    /// Where it is.
    pub state: TaskState,
    /// The upstream's own status word, last seen.
    pub upstream_status: Option<String>,
    /// 0–100.
    pub progress: i64,
    /// The hold that pays for it.
    pub hold_id: Option<String>,
    /// Billing inputs.
    #[serde(skip)]
    pub pricing: serde_json::Value,
    /// The client's request.
    pub request: serde_json::Value,
    /// The result on success (JSON).
    pub result: Option<serde_json::Value>,
    /// The error on failure (JSON).
    pub error: Option<serde_json::Value>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub updated_at: i64,
    /// Unix ms after which the sweeper fails it.
    pub deadline_at: i64,
    /// Unix ms of the next poll.
    pub next_poll_at: Option<i64>,
    /// Consecutive failed polls (for backoff).
    pub poll_failures: i64,
    /// The submitting request's W3C `traceparent`, when traces were exported.
    #[serde(skip)]
    pub traceparent: Option<String>,
}

/// One entry of a task's history.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TaskEvent {
    /// Unix ms.
    pub at: i64,
    /// The state it was left in.
    pub state: TaskState,
    /// The upstream's status word, when it gave one.
    pub upstream_status: Option<String>,
    /// 0–100, when polled.
    pub progress: Option<i64>,
    /// What happened, in a few words.
    pub detail: Option<String>,
}

impl TaskEvent {
    fn new(
        state: TaskState,
        upstream_status: Option<&str>,
        progress: Option<i64>,
        detail: Option<String>,
    ) -> TaskEvent {
        TaskEvent {
            at: 0,
            state,
            upstream_status: upstream_status.map(str::to_owned),
            progress,
            detail,
        }
    }
}

async fn record_event(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    task_id: &str,
    event: &TaskEvent,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO task_events (task_id, created_at, state, upstream_status, progress, detail)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(task_id)
    .bind(now)
    .bind(event.state.as_str())
    .bind(event.upstream_status.clone())
    .bind(event.progress)
    .bind(event.detail.clone())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// How a task ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Succeeded: the result, and the charge that settles the hold.
    Succeeded {
        /// The result (video URL, usage, …).
        result: serde_json::Value,
        /// The actual charge.
        settlement: Box<Settlement>,
    },
    /// Failed, cancelled or expired: the error; the hold is released in full.
    Failed {
        /// The error (code, message).
        error: serde_json::Value,
    },
}

/// What a client's poll may do.
#[derive(Debug, Clone, PartialEq)]
pub enum Poll {
    /// Here it is.
    Task(Box<Task>),
    /// Polled again within the minimum interval.
    TooSoon,
    /// No such task for this account.
    NotFound,
}

/// Filters of a task listing.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    /// Only these states.
    pub states: Vec<TaskState>,
    /// Only these ids.
    pub ids: Vec<String>,
    /// Only this public model.
    pub model: Option<String>,
    /// Only this format.
    pub format: Option<String>,
    /// Only tasks whose last upstream status word is one of these (`cancelled`, `expired`).
    pub upstream_statuses: Vec<String>,
    /// No task whose last upstream status word is one of these (a task without one passes).
    pub not_upstream_statuses: Vec<String>,
    /// Only the tasks after this one in the listing's order: a cursor (the id of the previous
    /// page's last task).
    pub after: Option<String>,
    /// Oldest first; newest first by default.
    pub oldest_first: bool,
}

/// The states a task can still leave, as an SQL list.
const LIVE_STATES: &str = "'submitting', 'queued', 'running'";

pub(crate) const TASK_COLUMNS: &str = "id, format, account_id, key_id, model, channel, upstream_model, upstream_id, status, upstream_status, progress, hold_id, pricing, request, result, error, created_at, updated_at, deadline_at, next_poll_at, poll_failures, traceparent";

pub(crate) fn task_from_row(row: &sqlx::any::AnyRow) -> Result<Task, StoreError> {
    let json = |name: &str| -> Result<Option<serde_json::Value>, StoreError> {
        let text: Option<String> = row.try_get(name)?;
        text.map(|t| {
            serde_json::from_str(&t).map_err(|e| StoreError::Corrupt(format!("{name}: {e}")))
        })
        .transpose()
    };
    Ok(Task {
        id: row.try_get("id")?,
        format: row.try_get("format")?,
        account_id: row.try_get("account_id")?,
        key_id: row.try_get("key_id")?,
        model: row.try_get("model")?,
        channel: row.try_get("channel")?,
        upstream_model: row.try_get("upstream_model")?,
        upstream_id: row.try_get("upstream_id")?,
        state: TaskState::parse(&row.try_get::<String, _>("status")?)?,
        upstream_status: row.try_get("upstream_status")?,
        progress: row.try_get("progress")?,
        hold_id: row.try_get("hold_id")?,
        pricing: json("pricing")?.unwrap_or_default(),
        request: json("request")?.unwrap_or_default(),
        result: json("result")?,
        error: json("error")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        deadline_at: row.try_get("deadline_at")?,
        next_poll_at: row.try_get("next_poll_at")?,
        poll_failures: row.try_get("poll_failures")?,
        traceparent: row.try_get("traceparent")?,
    })
}

fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Store {
    /// Writes the task row (state `submitting`) and places its hold, in one transaction: there
    /// is never a task without its hold, nor a hold without its task.
    pub async fn create_task(
        &self,
        task: NewTask,
        amount: tollgate_billing::Amount,
    ) -> Result<(Task, Hold), StoreError> {
        let mut request = HoldRequest::new(&task.account_id, &task.model, amount)
            .key(&task.key_id)
            .task(&task.id);
        if let Some(id) = &task.request_id {
            request = request.request(id);
        }
        let now = now_millis();
        let mut tx = self.write_tx().await?;
        let Some(hold) = place_hold(&mut tx, &request).await? else {
            drop(tx);
            return Err(self.refusal(&request).await);
        };
        // Counted after the hold: its UPDATE holds the account row's lock until the commit, so
        // two creates of one account (on any replica) count one after the other.
        let (account_limit, key_limit) = task.in_flight_limits;
        for (holder, column, id, limit) in [
            ("account", "account_id", &task.account_id, account_limit),
            ("key", "key_id", &task.key_id, key_limit),
        ] {
            let Some(limit) = limit else { continue };
            let (live,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT COUNT(*) FROM tasks WHERE {column} = $1 AND status IN ({LIVE_STATES})"
            )))
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
            if live >= i64::from(limit) {
                drop(tx);
                return Err(StoreError::TooManyTasks { holder, limit });
            }
        }
        sqlx::query(
            "INSERT INTO tasks (id, format, account_id, key_id, model, channel, upstream_model, status,
                                progress, hold_id, pricing, request, created_at, updated_at, deadline_at,
                                traceparent)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'submitting', 0, $8, $9, $10, $11, $11, $12, $13)",
        )
        .bind(&task.id)
        .bind(&task.format)
        .bind(&task.account_id)
        .bind(&task.key_id)
        .bind(&task.model)
        .bind(&task.channel)
        .bind(&task.upstream_model)
        .bind(&hold.id)
        .bind(task.pricing.to_string())
        .bind(task.request.to_string())
        .bind(now)
        .bind(now.saturating_add(millis(task.deadline)))
        .bind(task.traceparent.clone())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let row = self
            .task(&task.id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("task {:?}", task.id)))?;
        Ok((row, hold))
    }

    /// The upstream accepted the task: `submitting` → `queued`, with its upstream id and the
    /// first poll time. False if the task had already moved on (e.g. swept).
    pub async fn task_submitted(
        &self,
        id: &str,
        channel: &str,
        upstream_id: &str,
        first_poll_in: std::time::Duration,
    ) -> Result<bool, StoreError> {
        let now = now_millis();
        let mut tx = self.write_tx().await?;
        let done = sqlx::query(
            "UPDATE tasks SET status = 'queued', channel = $5, upstream_id = $1, next_poll_at = $2, updated_at = $3
             WHERE id = $4 AND status = 'submitting'",
        )
        .bind(upstream_id)
        .bind(now.saturating_add(millis(first_poll_in)))
        .bind(now)
        .bind(id)
        .bind(channel)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        let detail = format!("submitted to {channel} as {upstream_id}");
        let event = TaskEvent::new(TaskState::Queued, None, None, Some(detail));
        record_event(&mut tx, id, &event, now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// One task by id.
    pub async fn task(&self, id: &str) -> Result<Option<Task>, StoreError> {
        let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(task_from_row).transpose()
    }

    /// Task `id` unless it was deleted (hidden): what a signed media link serves — a video
    /// its owner deleted is gone for every link to it too (issue 42).
    pub async fn shown_task(&self, id: &str) -> Result<Option<Task>, StoreError> {
        let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1 AND hidden = 0");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(task_from_row).transpose()
    }

    /// A client's poll through the API of `format`: only the owner sees the task, and only
    /// through the API that made it (others get `NotFound`, and their reads count as no poll);
    /// hidden tasks are gone, and a second poll within `min_interval` is `TooSoon` (docs/api.md
    /// §4 rule 6).
    pub async fn poll_task(
        &self,
        id: &str,
        account_id: &str,
        format: &str,
        min_interval: std::time::Duration,
    ) -> Result<Poll, StoreError> {
        let now = now_millis();
        let admitted = sqlx::query(
            "UPDATE tasks SET last_client_poll_at = $1
             WHERE id = $2 AND account_id = $3 AND format = $5 AND hidden = 0
               AND (last_client_poll_at IS NULL OR last_client_poll_at <= $4)",
        )
        .bind(now)
        .bind(id)
        .bind(account_id)
        .bind(now.saturating_sub(millis(min_interval)))
        .bind(format)
        .execute(self.writer())
        .await?;
        let mine = |task: &Task| task.account_id == account_id && task.format == format;
        match self.task(id).await? {
            Some(task) if mine(&task) && admitted.rows_affected() == 1 => {
                Ok(Poll::Task(Box::new(task)))
            }
            Some(task) if mine(&task) && !self.is_hidden(id).await? => {
                // A finished task costs nothing to read: an SDK's retrieve right after its
                // own poll saw the end is served (docs/decisions.md, "Video tasks").
                if task.state.is_terminal() {
                    Ok(Poll::Task(Box::new(task)))
                } else {
                    Ok(Poll::TooSoon)
                }
            }
            _ => Ok(Poll::NotFound),
        }
    }

    async fn is_hidden(&self, id: &str) -> Result<bool, StoreError> {
        let (hidden,): (i64,) = sqlx::query_as("SELECT hidden FROM tasks WHERE id = $1")
            .bind(id)
            .fetch_one(self.pool())
            .await?;
        Ok(hidden != 0)
    }

    /// Leases up to `limit` of `channel`'s tasks due for a poll to `owner` for `lease`: every
    /// replica's workers call this (per channel, so each channel's concurrency limit holds), and
    /// no task is leased to two of them at once (`FOR UPDATE SKIP LOCKED` on PostgreSQL;
    /// SQLite's single writer serializes the same statement).
    pub async fn lease_due_tasks(
        &self,
        owner: &str,
        channel: &str,
        limit: i64,
        lease: std::time::Duration,
    ) -> Result<Vec<Task>, StoreError> {
        let now = now_millis();
        let lock = match self.backend() {
            Backend::Postgres => "FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE tasks SET lease_owner = $1, lease_until = $2
             WHERE id IN (
                 SELECT id FROM tasks
                 WHERE channel = $5 AND status IN ('queued', 'running') AND next_poll_at <= $3
                   AND (lease_until IS NULL OR lease_until < $3)
                 ORDER BY next_poll_at LIMIT $4 {lock})
             RETURNING {TASK_COLUMNS}"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(owner)
            .bind(now.saturating_add(millis(lease)))
            .bind(now)
            .bind(limit)
            .bind(channel)
            .fetch_all(self.writer())
            .await?;
        rows.iter().map(task_from_row).collect()
    }

    /// Records a non-terminal poll by the lease holder: the state (queued or running), the
    /// upstream's word, progress, the next poll time and the failure count; frees the lease.
    /// False when the lease was lost or the task already ended.
    #[allow(clippy::too_many_arguments)]
    pub async fn record_poll(
        &self,
        id: &str,
        owner: &str,
        state: TaskState,
        upstream_status: Option<&str>,
        progress: i64,
        next_poll_in: std::time::Duration,
        poll_failures: i64,
    ) -> Result<bool, StoreError> {
        if state.is_terminal() || state == TaskState::Submitting {
            return Err(StoreError::InvalidAmount(format!(
                "record_poll cannot set {}",
                state.as_str()
            )));
        }
        let now = now_millis();
        let mut tx = self.write_tx().await?;
        let done = sqlx::query(
            "UPDATE tasks SET status = $1, upstream_status = $2, progress = $3, next_poll_at = $4,
                              poll_failures = $5, updated_at = $6, lease_owner = NULL, lease_until = NULL
             WHERE id = $7 AND lease_owner = $8 AND status IN ('queued', 'running')",
        )
        .bind(state.as_str())
        .bind(upstream_status.map(str::to_owned))
        .bind(progress.clamp(0, 100))
        .bind(now.saturating_add(millis(next_poll_in)))
        .bind(poll_failures)
        .bind(now)
        .bind(id)
        .bind(owner)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        let detail = (poll_failures > 0).then(|| format!("{poll_failures} failed polls in a row"));
        let event = TaskEvent::new(state, upstream_status, Some(progress.clamp(0, 100)), detail);
        record_event(&mut tx, id, &event, now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Ends a task: a compare-and-swap from any live state to `succeeded` or `failed`, and — in
    /// the same transaction, only for the winner — the settlement or the full release of its
    /// hold. Returns false when another worker (or the sweeper) ended it first.
    pub async fn finish_task(
        &self,
        id: &str,
        outcome: Outcome,
        upstream_status: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.finish_task_from(id, outcome, upstream_status, LIVE_STATES)
            .await
    }

    /// Cancels a task the caller saw queued: the compare-and-swap is from `queued` alone, so a
    /// task that meanwhile started running, or ended, is left as it is (false) — the state the
    /// caller decided on is the one the database checks (`docs/decisions.md`, "Video tasks").
    /// The winner's hold is released in the same transaction.
    pub async fn cancel_queued_task(
        &self,
        id: &str,
        error: serde_json::Value,
    ) -> Result<bool, StoreError> {
        self.finish_task_from(id, Outcome::Failed { error }, Some("cancelled"), "'queued'")
            .await
    }

    /// [`Store::finish_task`], but only from the states in `from` (an SQL list of quoted
    /// states): the compare-and-swap must check the very state the caller decided on.
    async fn finish_task_from(
        &self,
        id: &str,
        outcome: Outcome,
        upstream_status: Option<&str>,
        from: &str,
    ) -> Result<bool, StoreError> {
        let now = now_millis();
        let (state, result, error) = match &outcome {
            Outcome::Succeeded { result, .. } => {
                (TaskState::Succeeded, Some(result.to_string()), None)
            }
            Outcome::Failed { error } => (TaskState::Failed, None, Some(error.to_string())),
        };
        let mut tx = self.write_tx().await?;
        let won: Option<FinishedTaskRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "UPDATE tasks SET status = $1, result = $2, error = $3, upstream_status = COALESCE($4, upstream_status),
                              progress = CASE WHEN $1 = 'succeeded' THEN 100 ELSE progress END,
                              updated_at = $5, lease_owner = NULL, lease_until = NULL, next_poll_at = NULL
             WHERE id = $6 AND status IN ({from})
             RETURNING hold_id, account_id, key_id, model, channel, format, created_at"
        )))
        .bind(state.as_str())
        .bind(result)
        .bind(error)
        .bind(upstream_status.map(str::to_owned))
        .bind(now)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((hold_id, account_id, key_id, model, channel, format, created_at)) = won else {
            return Ok(false);
        };
        // The task's usage record (`crate::usage`), in the same transaction as its money.
        let mut record = UsageRecord::new("task", account_id, task_endpoint(&format));
        record.key_id = Some(key_id);
        record.model = Some(model);
        record.channel = Some(channel);
        record.task_id = Some(id.to_owned());
        record.latency_ms = u64::try_from(now.saturating_sub(created_at)).unwrap_or(0);
        if let Some(hold_id) = &hold_id {
            let hold: Option<(i64, Option<String>)> =
                sqlx::query_as("SELECT amount_nanos, request_id FROM holds WHERE id = $1")
                    .bind(hold_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            if let Some((held, request_id)) = hold {
                record.hold = Amount::from_nanos(held);
                record.request_id = request_id;
            }
        }
        match outcome {
            Outcome::Succeeded { settlement, .. } => {
                record.status = 200;
                record.charge = settlement.actual;
                record.estimated = settlement.estimated;
                record.note.clone_from(&settlement.note);
                record.price_group = settlement.price_group.as_ref().map(|g| g.name.clone());
                record.price_version = settlement.price_version;
                record.measured = Some(settlement.measured);
                record.bound_basis.clone_from(&settlement.bound_basis);
                if let Some(usage) = settlement
                    .quantity
                    .as_deref()
                    .and_then(|q| serde_json::from_str::<Usage>(q).ok())
                {
                    record.set_usage(&usage, settlement.quantity.clone());
                }
                if let Some(hold_id) = &hold_id {
                    if settle_hold(&mut tx, hold_id, *settlement).await? == Closed::Already {
                        record.charge = Amount::ZERO;
                    } else {
                        record.hold_id = Some(hold_id.clone());
                    }
                }
            }
            Outcome::Failed { error } => {
                record.status = 502;
                record.note = Some(format!("refunded: {}", failure_reason(&error)));
                if let Some(hold_id) = &hold_id {
                    release_hold(&mut tx, hold_id, &format!("task {id} failed")).await?;
                }
            }
        }
        write_usage(&mut *tx, &[&record]).await?;
        let event = TaskEvent::new(
            state,
            upstream_status,
            None,
            record
                .note
                .clone()
                .or_else(|| Some(format!("charged {}", record.charge))),
        );
        record_event(&mut tx, id, &event, now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// A task's history, oldest first: its submission, every poll the workers recorded, and
    /// its end (`docs/decisions.md`, "The admin API").
    pub async fn task_events(&self, id: &str) -> Result<Vec<TaskEvent>, StoreError> {
        type Row = (i64, String, Option<String>, Option<i64>, Option<String>);
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT created_at, state, upstream_status, progress, detail FROM task_events
                 WHERE task_id = $1 ORDER BY created_at",
        )
        .bind(id)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|(at, state, upstream_status, progress, detail)| {
                Ok(TaskEvent {
                    at,
                    state: TaskState::parse(&state)?,
                    upstream_status,
                    progress,
                    detail,
                })
            })
            .collect()
    }

    /// Fails (and refunds) tasks past their deadline that are still live. Returns their ids.
    pub async fn expire_overdue_tasks(&self) -> Result<Vec<String>, StoreError> {
        let overdue: Vec<(String,)> = sqlx::query_as(
            "SELECT id FROM tasks WHERE status IN ('submitting', 'queued', 'running') AND deadline_at < $1",
        )
        .bind(now_millis())
        .fetch_all(self.pool())
        .await?;
        let mut expired = Vec::new();
        for (id,) in overdue {
            let error = serde_json::json!({"code": "expired", "message": "the task did not finish before its deadline; it was refunded"});
            if self
                .finish_task(&id, Outcome::Failed { error }, Some("expired"))
                .await?
            {
                expired.push(id);
            }
        }
        Ok(expired)
    }

    /// Fails (and refunds) tasks stuck in `submitting` for longer than `age`: the process died
    /// between writing the row and hearing the upstream, so whether the upstream has the task is
    /// unknown, and a video submit is never re-sent blindly (DESIGN §6).
    pub async fn fail_stale_submissions(
        &self,
        age: std::time::Duration,
    ) -> Result<Vec<String>, StoreError> {
        let stale: Vec<(String,)> =
            sqlx::query_as("SELECT id FROM tasks WHERE status = 'submitting' AND created_at < $1")
                .bind(now_millis().saturating_sub(millis(age)))
                .fetch_all(self.pool())
                .await?;
        let mut failed = Vec::new();
        for (id,) in stale {
            let error = serde_json::json!({"code": "submission_interrupted", "message": "the gateway stopped while submitting the task; it was refunded"});
            // Only from `submitting`: the submit may have recorded the upstream's id since the
            // SELECT above, and then the task is the upstream's, not an orphan.
            if self
                .finish_task_from(&id, Outcome::Failed { error }, None, "'submitting'")
                .await?
            {
                failed.push(id);
            }
        }
        Ok(failed)
    }

    /// The account's tasks, newest first, with the total before paging.
    pub async fn list_tasks(
        &self,
        account_id: &str,
        filter: &TaskFilter,
        offset: i64,
        limit: i64,
    ) -> Result<(i64, Vec<Task>), StoreError> {
        // Placeholders only; the values are bound.
        let mut conditions = vec!["account_id = $1".to_owned(), "hidden = 0".to_owned()];
        let mut binds: Vec<String> = vec![account_id.to_owned()];
        let placeholder = |value: String, binds: &mut Vec<String>| {
            binds.push(value);
            format!("${}", binds.len())
        };
        if !filter.states.is_empty() {
            let list: Vec<String> = filter
                .states
                .iter()
                .map(|s| placeholder(s.as_str().to_owned(), &mut binds))
                .collect();
            conditions.push(format!("status IN ({})", list.join(", ")));
        }
        if !filter.ids.is_empty() {
            let list: Vec<String> = filter
                .ids
                .iter()
                .map(|i| placeholder(i.clone(), &mut binds))
                .collect();
            conditions.push(format!("id IN ({})", list.join(", ")));
        }
        if let Some(model) = &filter.model {
            let p = placeholder(model.clone(), &mut binds);
            conditions.push(format!("model = {p}"));
        }
        if let Some(format) = &filter.format {
            let p = placeholder(format.clone(), &mut binds);
            conditions.push(format!("format = {p}"));
        }
        if !filter.upstream_statuses.is_empty() {
            let list: Vec<String> = filter
                .upstream_statuses
                .iter()
                .map(|w| placeholder(w.clone(), &mut binds))
                .collect();
            conditions.push(format!("upstream_status IN ({})", list.join(", ")));
        }
        if !filter.not_upstream_statuses.is_empty() {
            let list: Vec<String> = filter
                .not_upstream_statuses
                .iter()
                .map(|w| placeholder(w.clone(), &mut binds))
                .collect();
            conditions.push(format!(
                "(upstream_status IS NULL OR upstream_status NOT IN ({}))",
                list.join(", ")
            ));
        }
        let (direction, beyond) = if filter.oldest_first {
            ("ASC", ">")
        } else {
            ("DESC", "<")
        };
        if let Some(after) = &filter.after {
            // A cursor the account cannot see gives no rows (the sub-select is NULL).
            let p = placeholder(after.clone(), &mut binds);
            conditions.push(format!(
                "(created_at, id) {beyond} (SELECT created_at, id FROM tasks WHERE id = {p} AND account_id = $1)"
            ));
        }
        let condition = conditions.join(" AND ");
        let count_sql = format!("SELECT COUNT(*) AS n FROM tasks WHERE {condition}");
        let mut count = sqlx::query(sqlx::AssertSqlSafe(count_sql));
        for b in &binds {
            count = count.bind(b.clone());
        }
        let total: i64 = count.fetch_one(self.pool()).await?.try_get("n")?;
        let page_sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE {condition} ORDER BY created_at {direction}, id {direction} LIMIT {} OFFSET {}",
            limit.clamp(0, 1000),
            offset.max(0)
        );
        let mut page = sqlx::query(sqlx::AssertSqlSafe(page_sql));
        for b in &binds {
            page = page.bind(b.clone());
        }
        let rows = page.fetch_all(self.pool()).await?;
        Ok((
            total,
            rows.iter().map(task_from_row).collect::<Result<_, _>>()?,
        ))
    }

    /// Removes a finished task from its owner's view (the vendor's DELETE of a finished task).
    pub async fn hide_task(&self, id: &str, account_id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE tasks SET hidden = 1, updated_at = $1
             WHERE id = $2 AND account_id = $3 AND hidden = 0 AND status IN ('succeeded', 'failed')",
        )
        .bind(now_millis())
        .bind(id)
        .bind(account_id)
        .execute(self.writer())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A new public task id with `prefix` (`cgt` for the clip format, shaped like the vendor's
    /// `cgt-20260101123456-abcde`; `video` for the generic one).
    pub fn new_task_id(prefix: &str) -> String {
        let id = new_id("x");
        // `new_id` is time first, random last: keep the random tail.
        let random = id.trim_start_matches("x_");
        let secs = now_millis() / 1000;
        format!(
            "{prefix}-{secs}-{}",
            &random[random.len().saturating_sub(10)..]
        )
    }
}

/// What `finish_task` reads back from the task it ended.
type FinishedTaskRow = (Option<String>, String, String, String, String, String, i64);

/// The endpoint a task format is created on, by its access-policy name (the usage log's
/// `endpoint`, as for requests).
fn task_endpoint(format: &str) -> &str {
    match format {
        "clip" => "clip_tasks",
        "generic" => "video_generations",
        "openai" => "videos",
        other => other,
    }
}

/// A failed task's error in a few words: its `code`, else its `message`, else the JSON.
fn failure_reason(error: &serde_json::Value) -> String {
    let text = error
        .get("code")
        .or_else(|| error.get("message"))
        .and_then(serde_json::Value::as_str)
        .map_or_else(|| error.to_string(), str::to_owned);
    text.chars().take(200).collect()
}
