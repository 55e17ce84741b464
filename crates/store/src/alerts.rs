//! Alerts' durable state (`docs/decisions.md`, "Alerts"): each rule's level per subject, the
//! events, their webhook deliveries and every attempt, the replicas' circuit reports, and the
//! rules added through the admin API.
//!
//! Exactly one event per change, whatever the number of replicas: a level changes by
//! compare-and-swap ([`Store::record_alert`]), and only the winner writes the event, its
//! delivery and its action, in the same transaction. Deliveries are leased like tasks, with a
//! fencing token: a replica paused past its lease may still post (the receiver drops the repeat
//! by `webhook-id`), but what it records is refused ([`Store::record_attempt`]).

use crate::changes::insert_change;
use crate::{AdminChange, Backend, Store, StoreError, new_id, now_millis};
use serde::Serialize;
use sqlx::Row;
use std::collections::HashMap;

/// A subject's stored level and how many times it has fired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlertLevel {
    pub level: i64,
    pub episode: i64,
}

/// What the key or account of an event has done to it, in the event's transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlertAction {
    /// `disabled = 1` (the operator enables it again).
    Disable { holder: crate::PolicyHolder },
    /// The policy's `rpm` set.
    Throttle {
        holder: crate::PolicyHolder,
        rpm: u64,
    },
}

/// A change of level, its event and the event's delivery.
#[derive(Debug, Clone)]
pub struct NewAlertEvent<'a> {
    pub rule: &'a str,
    pub subject: &'a str,
    /// What the caller read; the change is made only if it is still so.
    pub from: Option<AlertLevel>,
    pub to: AlertLevel,
    /// `evt_…`, in the body too.
    pub id: &'a str,
    pub event_type: &'a str,
    pub summary: &'a str,
    pub facts: &'a serde_json::Value,
    pub action: Option<(AlertAction, String)>,
    pub created_at: i64,
    /// Where and how it is posted.
    pub url: &'a str,
    pub format: &'a str,
    pub secret_env: Option<&'a str>,
    /// A customer's alert: its own signing secret, and its account (whose deliveries go only
    /// to public hosts).
    pub secret: Option<&'a str>,
    pub owner_account: Option<&'a str>,
    pub body: &'a [u8],
}

/// An event as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlertEvent {
    pub id: String,
    pub created_at: i64,
    pub rule: String,
    pub subject: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub episode: i64,
    pub level: i64,
    pub summary: String,
    pub facts: serde_json::Value,
    pub action: Option<String>,
}

/// A webhook delivery: one per event, tried until it is answered 2xx or its schedule is spent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlertDelivery {
    /// `msg_…`: the `webhook-id`, the same on every attempt.
    pub id: String,
    pub event_id: String,
    pub rule: String,
    pub url: String,
    pub format: String,
    #[serde(skip)]
    pub secret_env: Option<String>,
    /// A customer's alert's own secret (never shown).
    #[serde(skip)]
    pub secret: Option<String>,
    /// The account of a customer's alert, whose deliveries go only to public hosts.
    pub owner_account: Option<String>,
    /// What is posted (JSON).
    pub payload: String,
    /// `pending`, `delivered` or `failed` (its schedule spent).
    pub state: String,
    pub attempts: i64,
    pub next_attempt_at: Option<i64>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
    /// The lease's fencing token (not shown).
    #[serde(skip)]
    pub lease_token: i64,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AlertAttempt {
    pub attempt: i64,
    pub started_at: i64,
    pub duration_ms: i64,
    /// The replica that made it.
    pub owner: String,
    /// The HTTP status of the answer, if there was one.
    pub status: Option<i64>,
    /// The first 4 KiB of the answer's body.
    pub answer: Option<String>,
    /// Why there was no answer (refused, timed out, …).
    pub error: Option<String>,
}

/// What an attempt came to, recorded by the lease holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptOutcome {
    pub started_at: i64,
    pub duration_ms: i64,
    pub status: Option<i64>,
    pub answer: Option<String>,
    pub error: Option<String>,
    /// 2xx: delivered.
    pub delivered: bool,
    /// When to try again; `None` with `delivered` false: given up.
    pub retry_at: Option<i64>,
}

/// The most of an answer's body kept.
pub const MAX_ANSWER: usize = 4096;

const DELIVERY_COLUMNS: &str = "id, event_id, rule, url, format, secret_env, secret, owner_account, \
     body, state, attempts, next_attempt_at, created_at, delivered_at, lease_token";

fn delivery_from_row(row: &sqlx::any::AnyRow) -> Result<AlertDelivery, StoreError> {
    Ok(AlertDelivery {
        id: row.try_get("id")?,
        event_id: row.try_get("event_id")?,
        rule: row.try_get("rule")?,
        url: row.try_get("url")?,
        format: row.try_get("format")?,
        secret_env: row.try_get("secret_env")?,
        secret: row.try_get("secret")?,
        owner_account: row.try_get("owner_account")?,
        payload: row.try_get("body")?,
        state: row.try_get("state")?,
        attempts: row.try_get("attempts")?,
        next_attempt_at: row.try_get("next_attempt_at")?,
        created_at: row.try_get("created_at")?,
        delivered_at: row.try_get("delivered_at")?,
        lease_token: row.try_get("lease_token")?,
    })
}

const EVENT_COLUMNS: &str =
    "id, created_at, rule, subject, event_type, episode, level, summary, facts, action";

fn event_from_row(row: &sqlx::any::AnyRow) -> Result<AlertEvent, StoreError> {
    let facts: String = row.try_get("facts")?;
    Ok(AlertEvent {
        id: row.try_get("id")?,
        created_at: row.try_get("created_at")?,
        rule: row.try_get("rule")?,
        subject: row.try_get("subject")?,
        event_type: row.try_get("event_type")?,
        episode: row.try_get("episode")?,
        level: row.try_get("level")?,
        summary: row.try_get("summary")?,
        facts: serde_json::from_str(&facts).unwrap_or(serde_json::Value::Null),
        action: row.try_get("action")?,
    })
}

impl Store {
    /// Each subject's stored level under `rule`.
    pub async fn alert_levels(
        &self,
        rule: &str,
    ) -> Result<HashMap<String, AlertLevel>, StoreError> {
        let rows: Vec<(String, i64, i64)> =
            sqlx::query_as("SELECT subject, level, episode FROM alert_levels WHERE rule = $1")
                .bind(rule)
                .fetch_all(self.pool())
                .await?;
        Ok(rows
            .into_iter()
            .map(|(subject, level, episode)| (subject, AlertLevel { level, episode }))
            .collect())
    }

    /// Changes a subject's level from what the caller read to `to`, and — only if this call
    /// made the change — writes the event, its delivery (due now) and its action, all in one
    /// transaction. False when another replica (or an earlier tick) changed it first.
    pub async fn record_alert(&self, e: &NewAlertEvent<'_>) -> Result<bool, StoreError> {
        let mut tx = self.write_tx().await?;
        let won = match e.from {
            None => sqlx::query(
                "INSERT INTO alert_levels (rule, subject, level, episode, changed_at)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (rule, subject) DO NOTHING",
            )
            .bind(e.rule)
            .bind(e.subject)
            .bind(e.to.level)
            .bind(e.to.episode)
            .bind(e.created_at)
            .execute(&mut *tx)
            .await?
            .rows_affected(),
            Some(from) => sqlx::query(
                "UPDATE alert_levels SET level = $1, episode = $2, changed_at = $3
                 WHERE rule = $4 AND subject = $5 AND level = $6 AND episode = $7",
            )
            .bind(e.to.level)
            .bind(e.to.episode)
            .bind(e.created_at)
            .bind(e.rule)
            .bind(e.subject)
            .bind(from.level)
            .bind(from.episode)
            .execute(&mut *tx)
            .await?
            .rows_affected(),
        } == 1;
        if !won {
            return Ok(false);
        }
        let action_text = e.action.as_ref().map(|(_, text)| text.clone());
        sqlx::query(
            "INSERT INTO alert_events (id, created_at, rule, subject, event_type, episode, level,
                                       summary, facts, action)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(e.id)
        .bind(e.created_at)
        .bind(e.rule)
        .bind(e.subject)
        .bind(e.event_type)
        .bind(e.to.episode)
        .bind(e.to.level)
        .bind(e.summary)
        .bind(e.facts.to_string())
        .bind(action_text)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO alert_deliveries (id, event_id, rule, url, format, secret_env, body, state,
                                           attempts, next_attempt_at, created_at, updated_at,
                                           lease_token, secret, owner_account)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 0, $8, $8, $8, 0, $9, $10)",
        )
        .bind(new_id("msg"))
        .bind(e.id)
        .bind(e.rule)
        .bind(e.url)
        .bind(e.format)
        .bind(e.secret_env)
        .bind(String::from_utf8_lossy(e.body).into_owned())
        .bind(e.created_at)
        .bind(e.secret)
        .bind(e.owner_account)
        .execute(&mut *tx)
        .await?;
        if let Some((action, _)) = &e.action {
            act(&mut tx, e.rule, action).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Leases up to `limit` deliveries due now to `owner` for `lease_ms`, each with a new
    /// fencing token (`FOR UPDATE SKIP LOCKED` on PostgreSQL; SQLite's one writer serializes).
    pub async fn lease_due_deliveries(
        &self,
        owner: &str,
        lease_ms: i64,
        limit: i64,
    ) -> Result<Vec<AlertDelivery>, StoreError> {
        let now = now_millis();
        let lock = match self.backend() {
            Backend::Postgres => "FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        // A receiver with an attempt in flight (a delivery to its URL leased, by any replica)
        // gets no second one: a slow receiver holds up its own deliveries, no one else's.
        let sql = format!(
            "UPDATE alert_deliveries SET lease_owner = $1, lease_until = $2,
                                         lease_token = lease_token + 1
             WHERE id IN (
                 SELECT d.id FROM alert_deliveries d
                 WHERE d.state = 'pending' AND d.next_attempt_at <= $3
                   AND (d.lease_until IS NULL OR d.lease_until < $3)
                   AND NOT EXISTS (SELECT 1 FROM alert_deliveries busy
                                   WHERE busy.url = d.url AND busy.state = 'pending'
                                     AND busy.lease_until >= $3)
                 ORDER BY d.next_attempt_at LIMIT $4 {lock})
             RETURNING {DELIVERY_COLUMNS}"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(owner)
            .bind(now.saturating_add(lease_ms))
            .bind(now)
            .bind(limit)
            .fetch_all(self.writer())
            .await?;
        rows.iter().map(delivery_from_row).collect()
    }

    /// Gives up the lease `token` of a delivery without an attempt (another delivery to its
    /// receiver goes first): it is due again at once, for whoever leases it next.
    pub async fn release_delivery(&self, delivery_id: &str, token: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE alert_deliveries SET lease_owner = NULL, lease_until = NULL
             WHERE id = $1 AND lease_token = $2 AND state = 'pending'",
        )
        .bind(delivery_id)
        .bind(token)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Records an attempt by the holder of lease `token`, and what follows (delivered, due
    /// again at `retry_at`, or given up); frees the lease. False — nothing written — when the
    /// lease is no longer the caller's (it expired and another replica took it: the fence).
    pub async fn record_attempt(
        &self,
        delivery_id: &str,
        token: i64,
        owner: &str,
        outcome: &AttemptOutcome,
    ) -> Result<bool, StoreError> {
        let now = now_millis();
        let state = match (outcome.delivered, outcome.retry_at) {
            (true, _) => "delivered",
            (false, Some(_)) => "pending",
            (false, None) => "failed",
        };
        let mut tx = self.write_tx().await?;
        let row: Option<(i64,)> = sqlx::query_as(
            "UPDATE alert_deliveries SET state = $1, attempts = attempts + 1, next_attempt_at = $2,
                    delivered_at = $3, updated_at = $4, lease_owner = NULL, lease_until = NULL
             WHERE id = $5 AND lease_token = $6 AND lease_owner = $7 AND state = 'pending'
             RETURNING attempts",
        )
        .bind(state)
        .bind(if outcome.delivered {
            None
        } else {
            outcome.retry_at
        })
        .bind(outcome.delivered.then_some(now))
        .bind(now)
        .bind(delivery_id)
        .bind(token)
        .bind(owner)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((attempt,)) = row else {
            return Ok(false);
        };
        sqlx::query(
            "INSERT INTO alert_attempts (delivery_id, attempt, started_at, duration_ms, owner,
                                         status, answer, error)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(delivery_id)
        .bind(attempt)
        .bind(outcome.started_at)
        .bind(outcome.duration_ms)
        .bind(owner)
        .bind(outcome.status)
        .bind(outcome.answer.clone())
        .bind(outcome.error.clone())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Makes a delivery due now again, whatever its state (the operator's redeliver): the same
    /// `webhook-id`, a new attempt. Audited as `actor`'s change.
    pub async fn redeliver(&self, delivery_id: &str, actor: &str) -> Result<(), StoreError> {
        let now = now_millis();
        let mut tx = self.write_tx().await?;
        let done = sqlx::query(
            "UPDATE alert_deliveries SET state = 'pending', next_attempt_at = $1, updated_at = $1,
                    lease_owner = NULL, lease_until = NULL, lease_token = lease_token + 1
             WHERE id = $2",
        )
        .bind(now)
        .bind(delivery_id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("delivery {delivery_id:?}")));
        }
        insert_change(
            &mut tx,
            &AdminChange {
                actor: actor.to_owned(),
                action: "alert.redeliver".into(),
                target: delivery_id.to_owned(),
                before: None,
                after: None,
                request_id: None,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The newest events first, at most `limit`, of `rule` if given.
    pub async fn alert_events(
        &self,
        rule: Option<&str>,
        limit: i64,
    ) -> Result<Vec<AlertEvent>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM alert_events WHERE ($1 = '' OR rule = $1)
             ORDER BY created_at DESC, id DESC LIMIT $2"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(rule.unwrap_or(""))
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(event_from_row).collect()
    }

    /// The newest deliveries first, at most `limit`, of `rule` and in `state` if given.
    pub async fn alert_deliveries(
        &self,
        rule: Option<&str>,
        state: Option<&str>,
        limit: i64,
    ) -> Result<Vec<AlertDelivery>, StoreError> {
        let sql = format!(
            "SELECT {DELIVERY_COLUMNS} FROM alert_deliveries
             WHERE ($1 = '' OR rule = $1) AND ($2 = '' OR state = $2)
             ORDER BY created_at DESC, id DESC LIMIT $3"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(rule.unwrap_or(""))
            .bind(state.unwrap_or(""))
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(delivery_from_row).collect()
    }

    /// One delivery and its attempts, oldest first.
    pub async fn alert_delivery(
        &self,
        id: &str,
    ) -> Result<(AlertDelivery, Vec<AlertAttempt>), StoreError> {
        let sql = format!("SELECT {DELIVERY_COLUMNS} FROM alert_deliveries WHERE id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(self.pool())
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("delivery {id:?}")))?;
        let delivery = delivery_from_row(&row)?;
        let rows = sqlx::query(
            "SELECT attempt, started_at, duration_ms, owner, status, answer, error
             FROM alert_attempts WHERE delivery_id = $1 ORDER BY attempt",
        )
        .bind(id)
        .fetch_all(self.pool())
        .await?;
        let attempts = rows
            .iter()
            .map(|row| {
                Ok(AlertAttempt {
                    attempt: row.try_get("attempt")?,
                    started_at: row.try_get("started_at")?,
                    duration_ms: row.try_get("duration_ms")?,
                    owner: row.try_get("owner")?,
                    status: row.try_get("status")?,
                    answer: row.try_get("answer")?,
                    error: row.try_get("error")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok((delivery, attempts))
    }

    /// This replica's circuits now: one row per channel, so that an alert on a channel's circuit
    /// is about every replica's (`open` on any).
    pub async fn report_circuits(
        &self,
        replica: &str,
        circuits: &[(String, bool)],
    ) -> Result<(), StoreError> {
        if circuits.is_empty() {
            return Ok(());
        }
        let now = now_millis();
        let mut tx = self.write_tx().await?;
        for (channel, open) in circuits {
            sqlx::query(
                "INSERT INTO circuit_reports (channel, replica, open, updated_at)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (channel, replica) DO UPDATE SET open = $3, updated_at = $4",
            )
            .bind(channel)
            .bind(replica)
            .bind(i64::from(*open))
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Per channel reported since `since` (Unix ms), the replicas its circuit is open on.
    pub async fn circuits_reported(
        &self,
        since: i64,
    ) -> Result<Vec<(String, Vec<String>)>, StoreError> {
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT channel, replica, open FROM circuit_reports WHERE updated_at >= $1
             ORDER BY channel, replica",
        )
        .bind(since)
        .fetch_all(self.pool())
        .await?;
        let mut channels: Vec<(String, Vec<String>)> = Vec::new();
        for (channel, replica, open) in rows {
            if channels.last().is_none_or(|(c, _)| *c != channel) {
                channels.push((channel, Vec::new()));
            }
            if let Some((_, open_on)) = channels.last_mut()
                && open != 0
            {
                open_on.push(replica);
            }
        }
        Ok(channels)
    }

    /// The id, name and balance (nano-units) of each account whose balance is below `below`,
    /// and of each account of `also` whatever its balance; only `account` when given.
    pub async fn balances_below(
        &self,
        below: i64,
        account: Option<&str>,
        also: &[String],
    ) -> Result<Vec<(String, String, i64)>, StoreError> {
        let mut rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT id, name, balance_nanos FROM accounts
             WHERE balance_nanos < $1 AND ($2 = '' OR id = $2) ORDER BY id",
        )
        .bind(below)
        .bind(account.unwrap_or(""))
        .fetch_all(self.pool())
        .await?;
        for id in also {
            if rows.iter().any(|(seen, _, _)| seen == id)
                || account.is_some_and(|a| a != id.as_str())
            {
                continue;
            }
            let row: Option<(String, String, i64)> =
                sqlx::query_as("SELECT id, name, balance_nanos FROM accounts WHERE id = $1")
                    .bind(id)
                    .fetch_optional(self.pool())
                    .await?;
            rows.extend(row);
        }
        Ok(rows)
    }

    /// Each key's id, account and charges (nano-units) recorded in `[since, until)`, of the
    /// keys that have any.
    pub async fn spend_by_key(
        &self,
        since: i64,
        until: i64,
    ) -> Result<Vec<(String, String, i64)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT key_id, account_id, CAST(SUM(charge_nanos) AS BIGINT) FROM usage_log
             WHERE created_at >= $1 AND created_at < $2 AND key_id IS NOT NULL
             GROUP BY key_id, account_id",
        )
        .bind(since)
        .bind(until)
        .fetch_all(self.pool())
        .await?)
    }

    /// What `holder` (`acct_…` or `key_…`) was charged in `[since, until)`.
    pub async fn spend_of(&self, holder: &str, since: i64, until: i64) -> Result<i64, StoreError> {
        let column = if holder.starts_with("key_") {
            "key_id"
        } else {
            "account_id"
        };
        let sql = format!(
            "SELECT CAST(COALESCE(SUM(charge_nanos), 0) AS BIGINT) FROM usage_log
             WHERE {column} = $1 AND created_at >= $2 AND created_at < $3"
        );
        let (spent,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(holder)
            .bind(since)
            .bind(until)
            .fetch_one(self.pool())
            .await?;
        Ok(spent)
    }

    /// The accounts and keys whose policy sets a daily or monthly budget: holder, its account,
    /// and the policy.
    pub async fn budget_holders(
        &self,
    ) -> Result<Vec<(crate::PolicyHolder, String, crate::AccessPolicy)>, StoreError> {
        let rows: Vec<(String, String, Option<String>, i64)> = sqlx::query_as(
            "SELECT id, id, policy, 0 FROM accounts WHERE policy LIKE '%budget%'
             UNION ALL
             SELECT id, account_id, policy, 1 FROM api_keys WHERE policy LIKE '%budget%'",
        )
        .fetch_all(self.pool())
        .await?;
        let mut holders = Vec::new();
        for (id, account, policy, is_key) in rows {
            let policy = crate::AccessPolicy::from_column(policy.as_deref())?;
            let holder = if is_key != 0 {
                crate::PolicyHolder::Key(id)
            } else {
                crate::PolicyHolder::Account(id)
            };
            holders.push((holder, account, policy));
        }
        Ok(holders)
    }

    /// Per channel, the tasks that finished (succeeded or failed) in `[since, now)` and how
    /// many of them failed.
    pub async fn task_outcomes(&self, since: i64) -> Result<Vec<(String, i64, i64)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT channel,
                    CAST(SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS BIGINT),
                    CAST(COUNT(*) AS BIGINT)
             FROM tasks WHERE status IN ('succeeded', 'failed') AND updated_at >= $1
             GROUP BY channel ORDER BY channel",
        )
        .bind(since)
        .fetch_all(self.pool())
        .await?)
    }

    /// The rules added through the admin API: name and definition (JSON), oldest first.
    pub async fn stored_alert_rules(&self) -> Result<Vec<(String, String)>, StoreError> {
        Ok(
            sqlx::query_as("SELECT name, definition FROM alert_rules ORDER BY created_at, name")
                .fetch_all(self.pool())
                .await?,
        )
    }

    /// Adds or replaces a rule (its definition, JSON), audited as `actor`'s.
    pub async fn put_alert_rule(
        &self,
        name: &str,
        definition: &serde_json::Value,
        actor: &str,
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        let before: Option<(String,)> =
            sqlx::query_as("SELECT definition FROM alert_rules WHERE name = $1")
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?;
        sqlx::query(
            "INSERT INTO alert_rules (name, definition, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET definition = $2",
        )
        .bind(name)
        .bind(definition.to_string())
        .bind(now_millis())
        .execute(&mut *tx)
        .await?;
        insert_change(
            &mut tx,
            &AdminChange {
                actor: actor.to_owned(),
                action: "alert.rule.put".into(),
                target: name.to_owned(),
                before: before.and_then(|(d,)| serde_json::from_str(&d).ok()),
                after: Some(definition.clone()),
                request_id: None,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Removes a rule added through the admin API, audited as `actor`'s.
    pub async fn delete_alert_rule(&self, name: &str, actor: &str) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        let before: Option<(String,)> =
            sqlx::query_as("DELETE FROM alert_rules WHERE name = $1 RETURNING definition")
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?;
        let Some((definition,)) = before else {
            return Err(StoreError::NotFound(format!("alert rule {name:?}")));
        };
        insert_change(
            &mut tx,
            &AdminChange {
                actor: actor.to_owned(),
                action: "alert.rule.delete".into(),
                target: name.to_owned(),
                before: serde_json::from_str(&definition).ok(),
                after: None,
                request_id: None,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// An event's action, in its transaction, audited as the rule's (`alert:NAME`).
async fn act(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    rule: &str,
    action: &AlertAction,
) -> Result<(), StoreError> {
    use crate::PolicyHolder::{Account, Key};
    let (what, target, after) = match action {
        AlertAction::Disable { holder } => {
            let (sql, id) = match holder {
                Key(id) => (
                    "UPDATE api_keys SET disabled = 1 WHERE id = $1 AND disabled = 0",
                    id,
                ),
                Account(id) => ("UPDATE accounts SET disabled = 1 WHERE id = $1", id),
            };
            sqlx::query(sql).bind(id).execute(&mut **tx).await?;
            ("alert.disable", id, serde_json::json!({"disabled": true}))
        }
        AlertAction::Throttle { holder, rpm } => {
            let (read, write, id) = match holder {
                Key(id) => (
                    "SELECT policy FROM api_keys WHERE id = $1",
                    "UPDATE api_keys SET policy = $1 WHERE id = $2",
                    id,
                ),
                Account(id) => (
                    "SELECT policy FROM accounts WHERE id = $1",
                    "UPDATE accounts SET policy = $1 WHERE id = $2",
                    id,
                ),
            };
            let column: Option<(Option<String>,)> = sqlx::query_as(read)
                .bind(id)
                .fetch_optional(&mut **tx)
                .await?;
            let mut policy =
                crate::AccessPolicy::from_column(column.and_then(|(c,)| c).as_deref())?;
            policy.rpm = Some(policy.rpm.map_or(*rpm, |old| old.min(*rpm)));
            sqlx::query(write)
                .bind(policy.to_column()?)
                .bind(id)
                .execute(&mut **tx)
                .await?;
            ("alert.throttle", id, serde_json::json!({"rpm": policy.rpm}))
        }
    };
    insert_change(
        tx,
        &AdminChange {
            actor: format!("alert:{rule}"),
            action: what.into(),
            target: target.clone(),
            before: None,
            after: Some(after),
            request_id: None,
        },
    )
    .await
}
