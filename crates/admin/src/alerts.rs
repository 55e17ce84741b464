//! The admin API's alerts (`docs/operations.md`, "Alerts"): the rules in force and what each
//! is firing on, rules added and removed at run time, the events, and the webhook deliveries
//! with every attempt — payload, answer — and redelivery.

use crate::ops::{Actor, OpError, OpErrorKind};
use crate::views::List;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tollgate_alerting::{check_webhook, rules_in_force, signing_secret};
use tollgate_alerts::{Rule, RuleConfig};
use tollgate_journal::clock::format_rfc3339;
use tollgate_request::context::RequestCtx;
use tollgate_store::Store;

/// A rule in force: where it comes from, and the subjects it fires on.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AlertRuleInForce")]
pub struct RuleInForce {
    /// The rule's name.
    pub name: String,
    /// `config` (the configuration file) or `admin` (added through the API).
    #[schemars(extend("enum" = ["config", "admin"]))]
    pub source: &'static str,
    /// The rule as written.
    pub rule: RuleConfig,
    /// The subjects it fires on now.
    pub firing: Vec<Firing>,
}

/// A subject a rule fires on.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Firing {
    /// An account, a key or a channel.
    pub subject: String,
    /// How far it has gone (a `budget_used` rule: the highest percentage passed).
    pub level: i64,
    /// Which firing of the rule on the subject this is.
    pub episode: i64,
}

/// `GET /alerts`: every rule in force, where it comes from, and the subjects it fires on.
pub async fn list(ctx: &RequestCtx) -> Result<List<RuleInForce>, OpError> {
    let store = &ctx.state.store;
    let mut data = Vec::new();
    for (rule, source) in rules_in_force(&ctx.settings.alerts, store).await {
        let mut firing: Vec<Firing> = store
            .alert_levels(&rule.name)
            .await?
            .into_iter()
            .filter(|(_, l)| l.level > 0)
            .map(|(subject, l)| Firing {
                subject,
                level: l.level,
                episode: l.episode,
            })
            .collect();
        firing.sort_by(|a, b| a.subject.cmp(&b.subject));
        data.push(RuleInForce {
            name: rule.name,
            source,
            rule: rule.written,
            firing,
        });
    }
    Ok(List { data })
}

/// `POST /alerts`: adds a rule, or replaces one added the same way; checked as the
/// configuration's are, its secret on this replica's environment.
pub async fn put(
    ctx: &RequestCtx,
    actor: &Actor,
    config: RuleConfig,
) -> Result<RuleInForce, OpError> {
    let rule = Rule::from_config(&config).map_err(|e| OpError::invalid(e.field, e.to_string()))?;
    if ctx.settings.alerts.iter().any(|r| r.name == rule.name) {
        return Err(OpError {
            kind: OpErrorKind::Conflict,
            field: Some("name"),
            message: format!(
                "the configuration file has a rule named {:?}; change it there",
                rule.name
            ),
        });
    }
    check_webhook(&rule, ctx.state.outbound.trusted_hosts())
        .map_err(|e| OpError::invalid("webhook_url", e))?;
    let env = |var: &str| std::env::var(var).ok();
    signing_secret(&rule, &env).map_err(|e| OpError::invalid("secret_env", e))?;
    let store = &ctx.state.store;
    if let Some(account) = &rule.scope.account {
        store
            .find_account(account)
            .await
            .map_err(|_| OpError::invalid("account", format!("no account {account:?}")))?;
    }
    if let Some(key) = &rule.scope.key
        && !matches!(
            store.policy_holder(key).await,
            Ok(tollgate_store::PolicyHolder::Key(_))
        )
    {
        return Err(OpError::invalid("key", format!("no key {key:?}")));
    }
    let definition = serde_json::to_value(&config).unwrap_or(Value::Null);
    ctx.state
        .store
        .put_alert_rule(&rule.name, &definition, &actor.name)
        .await?;
    Ok(RuleInForce {
        name: rule.name,
        source: "admin",
        rule: config,
        firing: Vec::new(),
    })
}

/// `DELETE /alerts/{name}`: removes a rule added through the API.
pub async fn delete(ctx: &RequestCtx, actor: &Actor, name: &str) -> Result<Value, OpError> {
    if ctx.settings.alerts.iter().any(|r| r.name == name) {
        return Err(OpError {
            kind: OpErrorKind::Conflict,
            field: Some("name"),
            message: format!(
                "the rule {name:?} is in the configuration file; remove it there and reload"
            ),
        });
    }
    ctx.state.store.delete_alert_rule(name, &actor.name).await?;
    Ok(json!({"name": name, "deleted": true}))
}

/// An alert event: a rule's subject fired or resolved.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AlertEvent")]
pub struct Event {
    /// `evt_…`
    pub id: String,
    /// RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// The rule.
    pub rule: String,
    /// What it fired on.
    pub subject: String,
    /// `alert.fired` or `alert.resolved`.
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["alert.fired", "alert.resolved"]))]
    pub event_type: String,
    /// Which firing of the rule on the subject.
    pub episode: i64,
    /// How far it had gone.
    pub level: i64,
    /// In a few words.
    pub summary: String,
    /// What the rule saw.
    pub facts: Value,
    /// What the gateway did (`disable`, `throttle`), if anything.
    pub action: Option<String>,
}

/// `GET /alerts/events`, `tollgate alerts events --json`.
pub async fn events(store: &Store, rule: Option<&str>, limit: u32) -> Result<List<Event>, OpError> {
    let events = store.alert_events(rule, i64::from(limit)).await?;
    let data = events
        .into_iter()
        .map(|e| Event {
            id: e.id,
            created_at: format_rfc3339(e.created_at),
            rule: e.rule,
            subject: e.subject,
            event_type: e.event_type,
            episode: e.episode,
            level: e.level,
            summary: e.summary,
            facts: e.facts,
            action: e.action,
        })
        .collect();
    Ok(List { data })
}

/// `GET /alerts/deliveries`, `tollgate alerts deliveries --json`.
pub async fn deliveries(
    store: &Store,
    rule: Option<&str>,
    state: Option<&str>,
    limit: u32,
) -> Result<List<Delivery>, OpError> {
    if let Some(s) = state
        && !["pending", "delivered", "failed"].contains(&s)
    {
        return Err(OpError::invalid(
            "state",
            format!("state is pending, delivered or failed, not {s:?}"),
        ));
    }
    let deliveries = store
        .alert_deliveries(rule, state, i64::from(limit))
        .await?;
    Ok(List {
        data: deliveries.iter().map(|d| delivery(d, None)).collect(),
    })
}

/// `GET /alerts/deliveries/{id}`, `tollgate alerts show`: with its attempts.
pub async fn one(store: &Store, id: &str) -> Result<Delivery, OpError> {
    let (d, attempts) = store.alert_delivery(id).await?;
    Ok(delivery(&d, Some(&attempts)))
}

/// `POST /alerts/deliveries/{id}/redeliver`, `tollgate alerts redeliver`: due now again, the
/// same `webhook-id`.
pub async fn redeliver(store: &Store, actor: &Actor, id: &str) -> Result<Delivery, OpError> {
    store.redeliver(id, &actor.name).await?;
    one(store, id).await
}

/// A webhook delivery: one per event, the same `webhook-id` on every attempt.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AlertDelivery")]
pub struct Delivery {
    /// The webhook-id, the same on every attempt.
    pub id: String,
    /// The event it delivers.
    pub event_id: String,
    /// The rule.
    pub rule: String,
    /// Where it is posted.
    pub url: String,
    /// The account whose person set the rule in the portal (a balance alert `bal_…`); none
    /// for the operator's rules.
    pub account: Option<String>,
    /// `standard` or `slack`.
    #[schemars(extend("enum" = ["standard", "slack"]))]
    pub format: String,
    /// `pending`, `delivered` or `failed` (its schedule spent).
    #[schemars(extend("enum" = ["pending", "delivered", "failed"]))]
    pub state: String,
    /// Attempts made.
    pub attempts: i64,
    /// When it is tried next, RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub next_attempt_at: Option<String>,
    /// RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// When a receiver answered 2xx, RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub delivered_at: Option<String>,
    /// What is posted.
    pub payload: Value,
    /// Every attempt (one delivery's answer only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Attempt>>,
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Attempt {
    /// 1, 2, …
    pub attempt: i64,
    /// RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub started_at: String,
    /// How long it took.
    pub duration_ms: i64,
    /// The replica that made it.
    pub replica: String,
    /// The HTTP status of the answer, if there was one.
    pub status: Option<i64>,
    /// Always null: a receiver's body is not kept (its status and timing say what happened).
    pub answer: Option<String>,
    /// Why there was no answer (refused, timed out, …).
    pub error: Option<String>,
}

fn delivery(
    d: &tollgate_store::AlertDelivery,
    attempts: Option<&[tollgate_store::AlertAttempt]>,
) -> Delivery {
    let time = |t: Option<i64>| t.map(format_rfc3339);
    Delivery {
        id: d.id.clone(),
        event_id: d.event_id.clone(),
        rule: d.rule.clone(),
        url: d.url.clone(),
        account: d.owner_account.clone(),
        format: d.format.clone(),
        state: d.state.clone(),
        attempts: d.attempts,
        next_attempt_at: time(d.next_attempt_at),
        created_at: format_rfc3339(d.created_at),
        delivered_at: time(d.delivered_at),
        payload: serde_json::from_str::<Value>(&d.payload)
            .unwrap_or(Value::String(d.payload.clone())),
        history: attempts.map(|attempts| {
            attempts
                .iter()
                .map(|a| Attempt {
                    attempt: a.attempt,
                    started_at: format_rfc3339(a.started_at),
                    duration_ms: a.duration_ms,
                    replica: a.owner.clone(),
                    status: a.status,
                    // Never a receiver's body (issue 42), not even one an earlier version
                    // kept: status and timing say what happened.
                    answer: None,
                    error: a.error.clone(),
                })
                .collect()
        }),
    }
}
