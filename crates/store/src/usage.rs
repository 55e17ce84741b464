//! The usage log (`docs/decisions.md`, "The usage log"): one record per billable request and
//! one per finished video task — who, what, which channel, how it ended, what it counted and
//! cost, how long it took. Request records ride in the ledger engine's journal batches
//! ([`crate::JournalEntry::Usage`]); a task's record is written in the transaction that
//! settles or refunds it. The ledger stays the money's truth: the log is for reading (the
//! `tollgate usage` report) and may be pruned ([`Store::prune_usage`]); ledger rows never are.

use crate::ids::{id_millis, new_id_at};
use crate::rollup::SUM_UNITS;
use crate::sql::{Param, Statements};
use crate::{Store, StoreError, as_bigint};
use serde::Serialize;
use sqlx::Row;
use tollgate_billing::{Amount, Total, Usage};

/// One record of the usage log.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UsageRecord {
    /// Time-ordered id (`use_…`), made with `created_at` ([`UsageRecord::stamp`]): a page's
    /// last id is the cursor of the next.
    pub id: String,
    /// When the request or task ended (its hold closed), Unix milliseconds.
    pub created_at: i64,
    /// `request` or `task`; a live session's `response`, `transcription` and `session`.
    pub kind: &'static str,
    /// The account.
    pub account_id: String,
    /// The key that was presented.
    pub key_id: Option<String>,
    /// The price group it was priced in; `None`: list prices.
    pub price_group: Option<String>,
    /// The endpoint, by its access-policy name (`embeddings`, `t2a`, `clip_tasks`, …).
    pub endpoint: String,
    /// The public model, once known.
    pub model: Option<String>,
    /// The upstream channel that served it (or was tried last).
    pub channel: Option<String>,
    /// The HTTP status of the answer (499: the client went away before it; a task: 200 when it
    /// succeeded, 502 when it failed, expired or was cancelled).
    pub status: u16,
    /// The meter the usage was counted on (`tokens`, `characters`, …).
    pub meter: Option<String>,
    /// The metered quantity as charged (the ledger row's `quantity`, JSON).
    pub quantity: Option<String>,
    /// Units of `meter` (text generation: input and output tokens together).
    pub units: u64,
    /// What was charged.
    pub charge: Amount,
    /// What was held for it.
    pub hold: Amount,
    /// From the request's arrival to its end (a stream's: to its last frame), milliseconds.
    pub latency_ms: u64,
    /// Until the upstream's answer began, milliseconds.
    pub upstream_ms: Option<u64>,
    /// The request id (a task's: the request that created it).
    pub request_id: Option<String>,
    /// The task, for a task's record.
    pub task_id: Option<String>,
    /// The charge rests on a local estimate, not on the upstream's figure.
    pub estimated: bool,
    /// Why, when it did not end the ordinary way.
    pub note: Option<String>,
    /// The hold its charge settled: the ledger row this record belongs to (none when nothing
    /// was charged). `tollgate audit` pairs them one to one.
    pub hold_id: Option<String>,
    /// The version of the model's price its charge was priced at (`crate::prices`).
    pub price_version: Option<i64>,
    /// How the charged quantity was measured.
    pub measured: Option<tollgate_billing::Measure>,
    /// Why the charge's bound is what it is.
    pub bound_basis: Option<String>,
}

impl UsageRecord {
    /// A record of `kind` for `account_id` on `endpoint`, stamped now.
    pub fn new(kind: &'static str, account_id: impl Into<String>, endpoint: &str) -> UsageRecord {
        let mut record = UsageRecord {
            kind,
            account_id: account_id.into(),
            endpoint: endpoint.to_owned(),
            ..UsageRecord::default()
        };
        record.stamp();
        record
    }

    /// Sets the record's time to now, with a new id made at the same millisecond.
    pub fn stamp(&mut self) {
        self.stamp_at(crate::now_millis());
    }

    /// Sets the record's time to `millis` (Unix ms), with a new id made at that millisecond.
    pub fn stamp_at(&mut self, millis: i64) {
        self.id = new_id_at("use", millis);
        self.created_at = millis;
    }

    /// Records what was counted; `quantity` is the usage as the ledger row writes it, when the
    /// caller has it already.
    pub fn set_usage(&mut self, usage: &Usage, quantity: Option<String>) {
        self.meter = Some(usage.meter().as_str().to_owned());
        self.units = usage.units().min(MAX_UNITS);
        self.quantity = quantity.or_else(|| serde_json::to_string(usage).ok());
    }
}

/// The `settings` row that says before when usage records may have been pruned: the audit
/// pairs charges and records from then on.
pub(crate) const USAGE_PRUNED_BEFORE: &str = "usage_pruned_before";

/// The most units one record counts: no request measures four billion tokens, characters or
/// seconds, so a larger figure is an upstream's lie (the ledger row keeps it as reported, and
/// its charge was capped). Capped here, sums of millions of records stay far inside BIGINT.
pub const MAX_UNITS: u64 = u32::MAX as u64;

/// Which records a query covers; every field narrows.
#[derive(Debug, Clone, Default)]
pub struct UsageFilter {
    /// One account (its id).
    pub account_id: Option<String>,
    /// One key (its id).
    pub key_id: Option<String>,
    /// One public model.
    pub model: Option<String>,
    /// One endpoint.
    pub endpoint: Option<String>,
    /// From this time on (Unix ms, inclusive).
    pub since: Option<i64>,
    /// Before this time (Unix ms, exclusive).
    pub until: Option<i64>,
}

/// What a summary groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageGroup {
    /// UTC days.
    Day,
    /// UTC hours.
    Hour,
    /// Public models.
    Model,
    /// Keys.
    Key,
    /// Endpoints.
    Endpoint,
    /// Accounts.
    Account,
    /// HTTP statuses (the console's "by status").
    Status,
}

impl UsageGroup {
    /// From its command-line name.
    pub fn parse(name: &str) -> Option<UsageGroup> {
        Some(match name {
            "day" => UsageGroup::Day,
            "hour" => UsageGroup::Hour,
            "model" => UsageGroup::Model,
            "key" => UsageGroup::Key,
            "endpoint" => UsageGroup::Endpoint,
            "account" => UsageGroup::Account,
            "status" => UsageGroup::Status,
            _ => return None,
        })
    }

    /// Its name, as [`UsageGroup::parse`] takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            UsageGroup::Day => "day",
            UsageGroup::Hour => "hour",
            UsageGroup::Model => "model",
            UsageGroup::Key => "key",
            UsageGroup::Endpoint => "endpoint",
            UsageGroup::Account => "account",
            UsageGroup::Status => "status",
        }
    }

    /// The SQL expression of the group (a bucket's start in Unix ms for the time groups) over a
    /// table whose time column is `time`.
    fn expression(self, time: &str) -> String {
        match self {
            UsageGroup::Day => format!("CAST(({time} / 86400000) * 86400000 AS TEXT)"),
            UsageGroup::Hour => format!("CAST(({time} / 3600000) * 3600000 AS TEXT)"),
            group => group.column().to_owned(),
        }
    }

    fn column(self) -> &'static str {
        match self {
            UsageGroup::Day | UsageGroup::Hour => "",
            UsageGroup::Model => "COALESCE(model, '')",
            UsageGroup::Key => "COALESCE(key_id, '')",
            UsageGroup::Endpoint => "endpoint",
            UsageGroup::Account => "account_id",
            UsageGroup::Status => "CAST(status AS TEXT)",
        }
    }

    /// Whether the group is a time bucket (its value a Unix-ms start).
    pub fn is_time(self) -> bool {
        matches!(self, UsageGroup::Day | UsageGroup::Hour)
    }
}

/// One row of a summary: a group's records on one meter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UsageSummary {
    /// The group's value (for a time group, the bucket's start in Unix ms).
    pub group: String,
    /// The meter (`None`: records that counted nothing, such as refusals).
    pub meter: Option<String>,
    /// How many records.
    pub requests: u64,
    /// How many of them ended with a status of 400 or above.
    pub errors: u64,
    /// Units of the meter.
    pub units: u64,
    /// What was charged.
    pub charge: Total,
}

/// Columns of a usage record, in insert order.
const COLUMNS: &str = "id, created_at, kind, account_id, key_id, price_group, endpoint, model, \
    channel, status, meter, quantity, units, charge_nanos, hold_nanos, latency_ms, upstream_ms, \
    request_id, task_id, estimated, note, hold_id, price_version, measured, bound_basis";
/// How many.
const COLUMN_COUNT: usize = 25;
/// The INSERT of usage records, 128 a statement at most.
static INSERT: crate::sql::Insert =
    crate::sql::Insert::new("usage_log", &[COLUMNS], COLUMN_COUNT, 128);

/// Writes `records` inside the caller's transaction.
pub(crate) async fn write_usage<S: Statements>(
    db: &mut S,
    records: &[&UsageRecord],
) -> Result<(), StoreError> {
    for (chunk, sql) in INSERT.chunks(records.len()) {
        let mut params = Vec::with_capacity(chunk.len() * COLUMN_COUNT);
        for r in &records[chunk] {
            params.extend([
                Param::Text(&r.id),
                Param::Int(r.created_at),
                Param::Text(r.kind),
                Param::Text(&r.account_id),
                Param::OptText(r.key_id.as_deref()),
                Param::OptText(r.price_group.as_deref()),
                Param::Text(&r.endpoint),
                Param::OptText(r.model.as_deref()),
                Param::OptText(r.channel.as_deref()),
                Param::Int(i64::from(r.status)),
                Param::OptText(r.meter.as_deref()),
                Param::OptText(r.quantity.as_deref()),
                Param::Int(as_bigint(r.units)),
                Param::Int(r.charge.nanos()),
                Param::Int(r.hold.nanos()),
                Param::Int(as_bigint(r.latency_ms)),
                Param::OptInt(r.upstream_ms.map(as_bigint)),
                Param::OptText(r.request_id.as_deref()),
                Param::OptText(r.task_id.as_deref()),
                Param::Int(i64::from(r.estimated)),
                Param::OptText(r.note.as_deref()),
                Param::OptText(r.hold_id.as_deref()),
                Param::OptInt(r.price_version),
                Param::OptText(r.measured.map(tollgate_billing::Measure::as_str)),
                Param::OptText(r.bound_basis.as_deref()),
            ]);
        }
        db.execute(sql, &params).await?;
    }
    Ok(())
}

/// The records as the PostgreSQL charge batch takes them (`crate::schema`, `usage` argument).
pub(crate) fn usage_json(records: &[&UsageRecord]) -> String {
    let rows: Vec<serde_json::Value> = records
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id, "created_at": r.created_at, "kind": r.kind,
                "account_id": r.account_id, "key_id": r.key_id, "price_group": r.price_group,
                "endpoint": r.endpoint, "model": r.model, "channel": r.channel,
                "status": r.status, "meter": r.meter, "quantity": r.quantity,
                "units": as_bigint(r.units), "charge_nanos": r.charge.nanos(),
                "hold_nanos": r.hold.nanos(), "latency_ms": as_bigint(r.latency_ms),
                "upstream_ms": r.upstream_ms.map(as_bigint), "request_id": r.request_id,
                "task_id": r.task_id, "estimated": i64::from(r.estimated), "note": r.note,
                "hold_id": r.hold_id, "price_version": r.price_version,
                "measured": r.measured.map(tollgate_billing::Measure::as_str),
                "bound_basis": r.bound_basis,
            })
        })
        .collect();
    serde_json::Value::from(rows).to_string()
}

/// A WHERE clause and its arguments, built from a filter.
struct Where {
    sql: String,
    args: Vec<Arg>,
}

enum Arg {
    Text(String),
    Int(i64),
}

impl Where {
    fn from(filter: &UsageFilter) -> Where {
        Where::over(filter, "created_at")
    }

    /// The filter's clause over a table whose time column is `time` (`hour` in the rollup).
    fn over(filter: &UsageFilter, time: &str) -> Where {
        let mut w = Where {
            sql: String::from(" WHERE 1 = 1"),
            args: Vec::new(),
        };
        let texts = [
            ("account_id", &filter.account_id),
            ("key_id", &filter.key_id),
            ("model", &filter.model),
            ("endpoint", &filter.endpoint),
        ];
        for (column, value) in texts {
            if let Some(v) = value {
                w.args.push(Arg::Text(v.clone()));
                w.sql
                    .push_str(&format!(" AND {column} = ${}", w.args.len()));
            }
        }
        if let Some(since) = filter.since {
            w.args.push(Arg::Int(since));
            w.sql.push_str(&format!(" AND {time} >= ${}", w.args.len()));
        }
        if let Some(until) = filter.until {
            w.args.push(Arg::Int(until));
            w.sql.push_str(&format!(" AND {time} < ${}", w.args.len()));
        }
        w
    }

    fn bind<'q>(
        &self,
        mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
        for arg in &self.args {
            query = match arg {
                Arg::Text(v) => query.bind(v.clone()),
                Arg::Int(v) => query.bind(*v),
            };
        }
        query
    }
}

fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl Store {
    /// Records matching `filter`, newest first (by `created_at`, then id): at most `limit`, and
    /// only those after the record `before` (the last id of the previous page) when given.
    pub async fn usage_records(
        &self,
        filter: &UsageFilter,
        limit: u32,
        before: Option<&str>,
    ) -> Result<Vec<UsageRecord>, StoreError> {
        let mut w = Where::from(filter);
        if let Some(before) = before {
            // After the cursor in (created_at, id) order, newest first; the id says its time.
            let at = id_millis(before).ok_or_else(|| {
                StoreError::NotFound(format!("usage record {before:?} (not a usage id)"))
            })?;
            w.args.push(Arg::Int(at));
            w.args.push(Arg::Text(before.to_owned()));
            let n = w.args.len();
            // `created_at <= …` first: a bound the time indexes can start the scan at. With the
            // OR alone PostgreSQL read each page from the newest record (a million-record CSV
            // export took 102 s; docs/benchmarks.md, "The operator's side").
            w.sql.push_str(&format!(
                " AND created_at <= ${0} AND (created_at < ${0} OR id < ${n})",
                n - 1
            ));
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM usage_log{} ORDER BY created_at DESC, id DESC LIMIT {}",
            w.sql,
            limit.max(1)
        );
        let rows = w
            .bind(sqlx::query(sqlx::AssertSqlSafe(sql)))
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(record_from_row).collect()
    }

    /// Totals of the records matching `filter`, per `group` and meter, in group order.
    ///
    /// Whole hours the rollup has summed (`crate::rollup`) are read from `usage_hourly`; the
    /// edges of the period and the hours not rolled up yet from the records themselves. The two
    /// never overlap, so the totals are exact.
    pub async fn usage_summary(
        &self,
        filter: &UsageFilter,
        group: UsageGroup,
    ) -> Result<Vec<UsageSummary>, StoreError> {
        let rolled = self.usage_rolled_until().await?;
        let plan = crate::rollup::plan(filter.since, filter.until, rolled);
        let mut totals: std::collections::BTreeMap<(String, Option<String>), UsageSummary> =
            std::collections::BTreeMap::new();
        let mut add = |rows: Vec<UsageSummary>| {
            for row in rows {
                match totals.entry((row.group.clone(), row.meter.clone())) {
                    std::collections::btree_map::Entry::Vacant(slot) => {
                        slot.insert(row);
                    }
                    std::collections::btree_map::Entry::Occupied(mut slot) => {
                        let sum = slot.get_mut();
                        sum.requests = sum.requests.saturating_add(row.requests);
                        sum.errors = sum.errors.saturating_add(row.errors);
                        sum.units = sum.units.saturating_add(row.units);
                        sum.charge = sum.charge.plus(row.charge);
                    }
                }
            }
        };
        for (since, until) in plan.raw {
            let part = UsageFilter {
                since,
                until,
                ..filter.clone()
            };
            add(self
                .summary_of(&part, group, "usage_log", "created_at")
                .await?);
        }
        if let Some((since, until)) = plan.rolled {
            let part = UsageFilter {
                since: Some(since),
                until: Some(until),
                ..filter.clone()
            };
            add(self
                .summary_of(&part, group, "usage_hourly", "hour")
                .await?);
        }
        Ok(totals.into_values().collect())
    }

    /// [`Store::usage_summary`] of one table: the records (`usage_log`, one row a record) or
    /// the rollup (`usage_hourly`, one row a sum).
    async fn summary_of(
        &self,
        filter: &UsageFilter,
        group: UsageGroup,
        table: &str,
        time: &str,
    ) -> Result<Vec<UsageSummary>, StoreError> {
        let w = Where::over(filter, time);
        let expression = group.expression(time);
        let (requests, errors, units) = if table == "usage_log" {
            (
                "COUNT(*)",
                "SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END)",
                SUM_UNITS,
            )
        } else {
            ("SUM(requests)", "SUM(errors)", "SUM(units)")
        };
        // SUM of BIGINT is NUMERIC on PostgreSQL, which `sqlx::Any` cannot read: cast back;
        // charges are summed so that they overflow on neither database (`crate::wide_sum`).
        // The rollup keeps an absent meter as ''; it is read back as none.
        let sql = format!(
            "SELECT {expression} AS grp, NULLIF(meter, '') AS meter,
                    CAST({requests} AS BIGINT) AS requests,
                    CAST({errors} AS BIGINT) AS errors,
                    CAST({units} AS BIGINT) AS units,
                    {}
             FROM {table}{} GROUP BY {expression}, NULLIF(meter, '') ORDER BY 1, 2",
            crate::wide_sum::wide_sum("charge_nanos", "charge"),
            w.sql
        );
        let rows = w
            .bind(sqlx::query(sqlx::AssertSqlSafe(sql)))
            .fetch_all(self.pool())
            .await?;
        rows.iter()
            .map(|row| {
                Ok(UsageSummary {
                    group: row.try_get("grp")?,
                    meter: row.try_get("meter")?,
                    requests: unsigned(row.try_get("requests")?),
                    errors: unsigned(row.try_get("errors")?),
                    units: unsigned(row.try_get("units")?),
                    charge: crate::wide_sum::total(
                        row.try_get("charge_high")?,
                        row.try_get("charge_low")?,
                    ),
                })
            })
            .collect()
    }

    /// Deletes usage records older than `before` (Unix ms), at most `chunk` per statement so
    /// that no write waits long behind it, and the rollup's hours that ended by then. Ledger
    /// rows are never touched. Returns how many records went.
    pub async fn prune_usage(&self, before: i64, chunk: u32) -> Result<u64, StoreError> {
        sqlx::query("DELETE FROM usage_hourly WHERE hour <= $1")
            .bind(before.saturating_sub(crate::rollup::HOUR))
            .execute(self.writer())
            .await?;
        // The audit pairs charges with usage records only after this point.
        sqlx::query(
            "INSERT INTO settings (name, value, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET value = CASE
                 WHEN CAST(settings.value AS BIGINT) < CAST(excluded.value AS BIGINT)
                 THEN excluded.value ELSE settings.value END",
        )
        .bind(USAGE_PRUNED_BEFORE)
        .bind(before.to_string())
        .bind(crate::now_millis())
        .execute(self.writer())
        .await?;
        let mut pruned = 0;
        loop {
            let sql = format!(
                "DELETE FROM usage_log WHERE id IN
                     (SELECT id FROM usage_log WHERE created_at < $1 ORDER BY created_at LIMIT {})",
                chunk.max(1)
            );
            let done = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(before)
                .execute(self.writer())
                .await?
                .rows_affected();
            pruned += done;
            if done < u64::from(chunk.max(1)) {
                return Ok(pruned);
            }
        }
    }
}

fn record_from_row(row: &sqlx::any::AnyRow) -> Result<UsageRecord, StoreError> {
    let kind: String = row.try_get("kind")?;
    let status: i64 = row.try_get("status")?;
    let upstream: Option<i64> = row.try_get("upstream_ms")?;
    let estimated: i64 = row.try_get("estimated")?;
    Ok(UsageRecord {
        id: row.try_get("id")?,
        created_at: row.try_get("created_at")?,
        kind: match kind.as_str() {
            "task" => "task",
            // A live session's: its responses, its input transcriptions, the session itself.
            "response" => "response",
            "transcription" => "transcription",
            "session" => "session",
            _ => "request",
        },
        account_id: row.try_get("account_id")?,
        key_id: row.try_get("key_id")?,
        price_group: row.try_get("price_group")?,
        endpoint: row.try_get("endpoint")?,
        model: row.try_get("model")?,
        channel: row.try_get("channel")?,
        status: u16::try_from(status).unwrap_or(0),
        meter: row.try_get("meter")?,
        quantity: row.try_get("quantity")?,
        units: unsigned(row.try_get("units")?),
        charge: Amount::from_nanos(row.try_get("charge_nanos")?),
        hold: Amount::from_nanos(row.try_get("hold_nanos")?),
        latency_ms: unsigned(row.try_get("latency_ms")?),
        upstream_ms: upstream.map(unsigned),
        request_id: row.try_get("request_id")?,
        task_id: row.try_get("task_id")?,
        estimated: estimated != 0,
        note: row.try_get("note")?,
        hold_id: row.try_get("hold_id")?,
        price_version: row.try_get("price_version")?,
        measured: row
            .try_get::<Option<String>, _>("measured")?
            .as_deref()
            .and_then(tollgate_billing::Measure::parse),
        bound_basis: row.try_get("bound_basis")?,
    })
}
