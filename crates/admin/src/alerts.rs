//! The admin API's alerts (`docs/operations.md`, "Alerts"): the rules in force and what each
//! is firing on, rules added and removed at run time, the events, and the webhook deliveries
//! with every attempt — payload, answer — and redelivery.

use crate::ops::{Actor, OpError, OpErrorKind};
use serde_json::{Value, json};
use tollgate_alerting::{check_webhook, rules_in_force, signing_secret};
use tollgate_alerts::{Rule, RuleConfig};
use tollgate_gateway_core::clock::format_rfc3339;
use tollgate_gateway_core::context::RequestCtx;
use tollgate_store::Store;

/// `GET /alerts`: every rule in force, where it comes from, and the subjects it fires on.
pub async fn list(ctx: &RequestCtx) -> Result<Value, OpError> {
    let store = &ctx.state.store;
    let mut data = Vec::new();
    for (rule, source) in rules_in_force(&ctx.settings.alerts, store).await {
        let mut firing: Vec<Value> = store
            .alert_levels(&rule.name)
            .await?
            .into_iter()
            .filter(|(_, l)| l.level > 0)
            .map(|(subject, l)| json!({"subject": subject, "level": l.level, "episode": l.episode}))
            .collect();
        firing.sort_by(|a, b| a["subject"].as_str().cmp(&b["subject"].as_str()));
        data.push(json!({
            "name": rule.name,
            "source": source,
            "rule": rule.written,
            "firing": firing,
        }));
    }
    Ok(json!({ "data": data }))
}

/// `POST /alerts`: adds a rule, or replaces one added the same way; checked as the
/// configuration's are, its secret on this replica's environment.
pub async fn put(ctx: &RequestCtx, actor: &Actor, config: RuleConfig) -> Result<Value, OpError> {
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
    Ok(json!({"name": rule.name, "source": "admin", "rule": definition, "firing": []}))
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

/// `GET /alerts/events`, `tollgate alerts events --json`.
pub async fn events(store: &Store, rule: Option<&str>, limit: u32) -> Result<Value, OpError> {
    let events = store.alert_events(rule, i64::from(limit)).await?;
    let data: Vec<Value> = events
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
            v["created_at"] = json!(format_rfc3339(e.created_at));
            v
        })
        .collect();
    Ok(json!({ "data": data }))
}

/// `GET /alerts/deliveries`, `tollgate alerts deliveries --json`.
pub async fn deliveries(
    store: &Store,
    rule: Option<&str>,
    state: Option<&str>,
    limit: u32,
) -> Result<Value, OpError> {
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
    Ok(json!({ "data": deliveries.iter().map(|d| delivery(d, None)).collect::<Vec<_>>() }))
}

/// `GET /alerts/deliveries/{id}`, `tollgate alerts show`: with its attempts.
pub async fn one(store: &Store, id: &str) -> Result<Value, OpError> {
    let (d, attempts) = store.alert_delivery(id).await?;
    Ok(delivery(&d, Some(&attempts)))
}

/// `POST /alerts/deliveries/{id}/redeliver`, `tollgate alerts redeliver`: due now again, the
/// same `webhook-id`.
pub async fn redeliver(store: &Store, actor: &Actor, id: &str) -> Result<Value, OpError> {
    store.redeliver(id, &actor.name).await?;
    one(store, id).await
}

fn delivery(
    d: &tollgate_store::AlertDelivery,
    attempts: Option<&[tollgate_store::AlertAttempt]>,
) -> Value {
    let time = |t: Option<i64>| t.map(format_rfc3339);
    let mut v = json!({
        "id": d.id,
        "event_id": d.event_id,
        "rule": d.rule,
        "url": d.url,
        "format": d.format,
        "state": d.state,
        "attempts": d.attempts,
        "next_attempt_at": time(d.next_attempt_at),
        "created_at": format_rfc3339(d.created_at),
        "delivered_at": time(d.delivered_at),
        "payload": serde_json::from_str::<Value>(&d.payload).unwrap_or(Value::String(d.payload.clone())),
    });
    if let Some(attempts) = attempts {
        v["history"] = attempts
            .iter()
            .map(|a| {
                json!({
                    "attempt": a.attempt,
                    "started_at": format_rfc3339(a.started_at),
                    "duration_ms": a.duration_ms,
                    "replica": a.owner,
                    "status": a.status,
                    // Never a receiver's body (issue 42), not even one an earlier version
                    // kept: status and timing say what happened.
                    "answer": Value::Null,
                    "error": a.error,
                })
            })
            .collect();
    }
    v
}
