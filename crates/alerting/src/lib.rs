//! # tollgate-alerting
//!
//! Alerts (`docs/decisions.md`, "Alerts"; `docs/operations.md`, "Alerts"): the I/O around the
//! sans-IO rules of `tollgate-alerts`, run beside requests, never on their path — a crate of its
//! own, so the crates every request stands on (`tollgate-request` and those under it) hold no loop. Every replica runs
//! two loops:
//!
//! The loops are started by the gateway's `Background` ([`spawn`]); the admin API lists the
//! rules ([`rules_in_force`]) and what they recorded.
//!
//! * the **judge** ([`judge_all`]), every `[alerting] evaluate_seconds`: reports this replica's
//!   circuits, gathers what each rule needs within its scope, lets the rule judge it, and
//!   records each change of a subject's level — by compare-and-swap, so that one replica of
//!   those that see a change records its event, delivery and action
//!   (`Store::record_alert`);
//! * the **courier** ([`deliver_due`]), every second: leases the deliveries due (one a receiver
//!   at a time), posts each signed the Standard Webhooks way by the one address rule
//!   (`tollgate_settings::outbound`), each in a task of its own within one deadline, and records the
//!   attempt — its status and timing, not the receiver's body — under the lease's fencing
//!   token (`Store::record_attempt`); a failure is tried again on the schedule.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tollgate_alerts::payload::{self, Event};
use tollgate_alerts::rule::{
    Action, Balance, BudgetUse, Circuit, Condition, KeySpend, RefundAfterSpend, Rule, RuleConfig,
    SignatureFailures, TaskOutcomes,
};
use tollgate_alerts::{Change, Format, Observed, RetrySchedule, Secret, Verdict};
use tollgate_billing::Amount;
use tollgate_journal::clock::{format_rfc3339, now_millis};
use tollgate_request::State;
use tollgate_request::quotas::QuotaName;
use tollgate_settings::config::{AlertingConfig, ConfigError};
use tollgate_store::{
    AlertAction, AlertDelivery, AlertLevel, AttemptOutcome, NewAlertEvent, PolicyHolder, Store,
    StoreError,
};

/// The configuration's rules, checked as a start or a reload checks them: each by
/// `Rule::from_config`, its `webhook_url` by the one address rule ([`check_webhook`]), no two
/// of one name, and each signing secret's variable set to a `whsec_…` secret — a rule whose
/// events could never be signed is refused now, not at its first event.
pub fn check_rules(
    configs: &[RuleConfig],
    env: &dyn Fn(&str) -> Option<String>,
    trusted_hosts: &[String],
) -> Result<Vec<Rule>, ConfigError> {
    let mut names = BTreeSet::new();
    let mut rules = Vec::with_capacity(configs.len());
    for config in configs {
        if !names.insert(config.name.as_str()) {
            return Err(ConfigError::Invalid(format!(
                "[[alerts]]: two rules are named {:?}",
                config.name
            )));
        }
        let rule = Rule::from_config(config)
            .map_err(|e| ConfigError::Invalid(format!("[[alerts]]: {e}")))?;
        check_webhook(&rule, trusted_hosts)
            .map_err(|e| ConfigError::Invalid(format!("[[alerts]]: {e}")))?;
        signing_secret(&rule, env).map_err(|e| ConfigError::Invalid(format!("[[alerts]]: {e}")))?;
        rules.push(rule);
    }
    Ok(rules)
}

/// Whether `rule`'s `webhook_url` may be posted to: the one address rule of every URL the
/// gateway posts to (`tollgate_settings::outbound`) — a public host, or one of `trusted_hosts`. An alert
/// rule is written by whoever holds an admin token; a receiver on the gateway's own network
/// must be listed by the operator.
pub fn check_webhook(rule: &Rule, trusted_hosts: &[String]) -> Result<(), String> {
    tollgate_settings::outbound::check_url(&rule.target.url, trusted_hosts).map_err(|e| {
        format!(
            "alert {:?}: webhook_url: {e} (list an internal receiver in [outbound] trusted_hosts)",
            rule.name
        )
    })
}

/// The secret `rule`'s deliveries are signed with, read from its variable (`None`: the rule
/// names none, a Slack-format rule).
pub fn signing_secret(
    rule: &Rule,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Secret>, String> {
    secret_of(rule.target.secret_env.as_deref(), env)
        .map_err(|e| format!("alert {:?}: secret_env: {e}", rule.name))
}

fn secret_of(
    var: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Secret>, String> {
    let Some(var) = var else {
        return Ok(None);
    };
    let value = env(var).ok_or_else(|| format!("the environment variable {var} is not set"))?;
    value
        .parse::<Secret>()
        .map(Some)
        .map_err(|e| format!("{var}: {e}"))
}

/// The rules in force: the configuration's (`configured`), then those added through the admin
/// API, each with where it comes from (`config` or `admin`). A stored rule that no longer
/// checks, or takes a configuration rule's name, is skipped and said.
pub async fn rules_in_force(configured: &[Rule], store: &Store) -> Vec<(Rule, &'static str)> {
    let mut rules: Vec<(Rule, &'static str)> =
        configured.iter().map(|r| (r.clone(), "config")).collect();
    match store.stored_alert_rules().await {
        Ok(stored) => {
            for (name, definition) in stored {
                let rule = serde_json::from_str::<RuleConfig>(&definition)
                    .map_err(|e| e.to_string())
                    .and_then(|c| Rule::from_config(&c).map_err(|e| e.to_string()));
                match rule {
                    Ok(rule) if rules.iter().any(|(r, _)| r.name == rule.name) => {
                        tracing::warn!(rule = %name, "an alert rule of the admin API has a configuration rule's name: the configuration's is in force");
                    }
                    Ok(rule) => rules.push((rule, "admin")),
                    Err(e) => {
                        tracing::warn!(rule = %name, error = %e, "an alert rule of the admin API is skipped")
                    }
                }
            }
        }
        Err(e) => tracing::warn!(error = %e, "the admin API's alert rules could not be read"),
    }
    rules
}

/// The two loops, run as `replica` (the owner of its delivery leases).
pub fn spawn(
    state: &Arc<State>,
    config: &AlertingConfig,
    replica: String,
) -> Vec<tokio::task::JoinHandle<()>> {
    let every = Duration::from_secs(config.evaluate_seconds.max(1));
    let courier = Arc::new(Courier {
        schedule: RetrySchedule::new(config.retry_seconds.clone()),
        timeout: Duration::from_secs(config.timeout_seconds.max(1)),
        owner: replica.clone(),
    });
    let judge = {
        let state = state.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                judge_all(&state, &replica, every).await;
            }
        })
    };
    let state = state.clone();
    let deliver = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            deliver_due(&state, &courier).await;
        }
    });
    vec![judge, deliver]
}

/// One round of the judge: this replica's circuits reported, then every rule in force judged.
pub async fn judge_all(state: &State, replica: &str, every: Duration) {
    let circuits: Vec<(String, bool)> = state
        .settings
        .snapshot()
        .catalog
        .channels()
        .iter()
        .map(|c| {
            let open = c.health.circuit() != tollgate_settings::channels::CircuitState::Closed;
            (c.name.clone(), open)
        })
        .collect();
    if let Err(e) = state.store.report_circuits(replica, &circuits).await {
        tracing::warn!(error = %e, "circuits could not be reported for alerts");
    }
    let now = now_millis();
    // A replica's report counts while it is fresher than three rounds.
    let fresh_since = now - 3 * i64::try_from(every.as_millis()).unwrap_or(i64::MAX / 4);
    let configured = state.settings.snapshot().alerts.clone();
    for (rule, _) in rules_in_force(&configured, &state.store).await {
        if let Err(e) = judge(state, &rule, now, fresh_since).await {
            tracing::warn!(rule = %rule.name, error = %e, "an alert rule could not be judged");
        }
    }
    if let Err(e) = judge_balance_alerts(state, now).await {
        tracing::warn!(error = %e, "the customers' balance alerts could not be judged");
    }
}

/// The balance alerts customers set in the portal (docs/decisions.md, "Balance alerts a
/// customer sets"): each a `balance_below` rule over its own account, named by its id. One
/// query finds those that may change level ([`Store::balance_alerts_to_judge`]); the rest cost
/// nothing a round.
async fn judge_balance_alerts(state: &State, now: i64) -> Result<(), StoreError> {
    for due in state.store.balance_alerts_to_judge().await? {
        let alert = &due.alert;
        let Some(url) = alert.webhook_url.as_deref() else {
            continue;
        };
        let format = Format::parse(&alert.format).unwrap_or(Format::Standard);
        let rule =
            Rule::customer_balance(&alert.id, &alert.account_id, alert.threshold, url, format);
        let observed = Observed::Balances(vec![Balance {
            account_id: alert.account_id.clone(),
            account_name: due.account_name.clone(),
            balance: due.balance,
        }]);
        let owner = Owner {
            account_id: &alert.account_id,
            secret: alert.secret.as_deref(),
        };
        record_changes(state, &rule, &observed, |_| due.level, now, Some(owner)).await?;
    }
    Ok(())
}

/// Whose alert a customer's is: its account, and the secret its deliveries are signed with.
#[derive(Debug, Clone, Copy)]
struct Owner<'a> {
    account_id: &'a str,
    secret: Option<&'a str>,
}

/// Judges one rule at `now` and records what changed.
async fn judge(state: &State, rule: &Rule, now: i64, fresh_since: i64) -> Result<(), StoreError> {
    let store = &state.store;
    let levels = store.alert_levels(&rule.name).await?;
    let firing: Vec<&str> = levels
        .iter()
        .filter(|(_, l)| l.level > 0)
        .map(|(s, _)| s.as_str())
        .collect();
    let observed = observe(store, rule, now, fresh_since, &firing).await?;
    record_changes(
        state,
        rule,
        &observed,
        |subject| levels.get(subject).copied(),
        now,
        None,
    )
    .await
}

/// Lets `rule` judge `observed` and records each subject whose level changed from what
/// `stored` says it was.
async fn record_changes(
    state: &State,
    rule: &Rule,
    observed: &Observed,
    stored: impl Fn(&str) -> Option<AlertLevel>,
    now: i64,
    owner: Option<Owner<'_>>,
) -> Result<(), StoreError> {
    for verdict in rule.judge(observed) {
        let from = stored(&verdict.subject);
        let was = from.unwrap_or_default();
        let Some(change) = Change::between(was.level, verdict.level, rule.resolves()) else {
            continue;
        };
        let to = AlertLevel {
            level: verdict.level,
            episode: was.episode + i64::from(change == Change::Fired),
        };
        record(state, rule, &verdict, change, (from, to), now, owner).await?;
    }
    Ok(())
}

/// Records a change: its event, the event's body as it will be posted, and the rule's action
/// on a firing.
async fn record(
    state: &State,
    rule: &Rule,
    verdict: &Verdict,
    change: Change,
    (from, to): (Option<AlertLevel>, AlertLevel),
    now: i64,
    owner: Option<Owner<'_>>,
) -> Result<(), StoreError> {
    let id = tollgate_store::new_id("evt");
    let action = match (change, rule.action, &verdict.acts_on) {
        (Change::Fired, Some(action), Some(holder)) => {
            let policy_holder = if holder.kind == "key" {
                PolicyHolder::Key(holder.id.clone())
            } else {
                PolicyHolder::Account(holder.id.clone())
            };
            Some(match action {
                Action::Disable => (
                    AlertAction::Disable {
                        holder: policy_holder,
                    },
                    format!("{} {} disabled", holder.kind, holder.id),
                ),
                Action::Throttle { rpm } => (
                    AlertAction::Throttle {
                        holder: policy_holder,
                        rpm,
                    },
                    format!(
                        "{} {} throttled to {rpm} requests a minute",
                        holder.kind, holder.id
                    ),
                ),
            })
        }
        _ => None,
    };
    let timestamp = format_rfc3339(now);
    let body = payload::body(
        rule.target.format,
        &Event {
            id: &id,
            event_type: change.event_type(),
            timestamp: &timestamp,
            rule: &rule.name,
            when: rule.when(),
            subject: &verdict.subject,
            episode: to.episode,
            level: to.level,
            summary: &verdict.summary,
            facts: &verdict.facts,
            action: action.as_ref().map(|(_, text)| text.as_str()),
        },
    );
    let won = state
        .store
        .record_alert(&NewAlertEvent {
            rule: &rule.name,
            subject: &verdict.subject,
            from,
            to,
            id: &id,
            event_type: change.event_type(),
            summary: &verdict.summary,
            facts: &verdict.facts,
            action,
            created_at: now,
            url: &rule.target.url,
            format: rule.target.format.as_str(),
            secret_env: rule.target.secret_env.as_deref(),
            secret: owner.and_then(|o| o.secret),
            owner_account: owner.map(|o| o.account_id),
            body: &body,
        })
        .await?;
    if won {
        state.metrics.alert_event(&rule.name, change.event_type());
        tracing::info!(rule = %rule.name, subject = %verdict.subject, event = change.event_type(), summary = %verdict.summary, "alert");
    }
    Ok(())
}

/// What `rule` needs, within its scope, at `now`; subjects `firing` that are no longer seen
/// are observed as quiet (so that they resolve).
async fn observe(
    store: &Store,
    rule: &Rule,
    now: i64,
    fresh_since: i64,
    firing: &[&str],
) -> Result<Observed, StoreError> {
    let account = match &rule.scope.account {
        Some(a) => Some(store.find_account(a).await?.id),
        None => None,
    };
    let in_account = |id: &str| account.as_deref().is_none_or(|a| a == id);
    let is_key = |id: &str| rule.scope.key.as_deref().is_none_or(|k| k == id);
    let on_channel = |c: &str| rule.scope.channel.as_deref().is_none_or(|s| s == c);
    let quiet = |prefix: &str| -> Vec<String> {
        firing
            .iter()
            .filter_map(|s| s.strip_prefix(prefix))
            .map(str::to_owned)
            .collect()
    };
    Ok(match &rule.condition {
        Condition::BalanceBelow { threshold } => Observed::Balances(
            // The accounts below, and those firing that may have come back.
            store
                .balances_below(threshold.nanos(), account.as_deref(), &quiet("account:"))
                .await?
                .into_iter()
                .map(|(account_id, account_name, nanos)| Balance {
                    account_id,
                    account_name,
                    balance: Amount::from_nanos(nanos),
                })
                .collect(),
        ),
        Condition::BudgetUsed { .. } => {
            let mut uses = Vec::new();
            for (holder, account_id, policy) in store.budget_holders().await? {
                let (kind, id) = match &holder {
                    PolicyHolder::Key(id) => ("key", id.clone()),
                    PolicyHolder::Account(id) => ("account", id.clone()),
                };
                if !in_account(&account_id) || (kind == "key" && !is_key(&id)) {
                    continue;
                }
                if kind == "account" && rule.scope.key.is_some() {
                    continue;
                }
                let periods = [
                    ("day", QuotaName::SpendDay, policy.daily_budget),
                    ("month", QuotaName::SpendMonth, policy.monthly_budget),
                ];
                for (period, quota, budget) in periods {
                    let Some(budget) = budget else { continue };
                    let window = quota.window(u64::try_from(now).unwrap_or(0));
                    let start = i64::try_from(window.start).unwrap_or(0);
                    let spent = store.spend_of(&id, start, now + 1).await?;
                    uses.push(BudgetUse {
                        holder_kind: kind,
                        holder_id: id.clone(),
                        account_id: account_id.clone(),
                        period,
                        period_start: format_rfc3339(start).chars().take(10).collect(),
                        spent: Amount::from_nanos(spent),
                        budget,
                    });
                }
            }
            Observed::Budgets(uses)
        }
        Condition::SpendVelocity {
            window_ms,
            baseline_ms,
            min_spend,
            ..
        } => {
            let since = now - window_ms;
            let mut spend = Vec::new();
            let mut seen = BTreeSet::new();
            for (key_id, account_id, recent) in store.spend_by_key(since, now + 1).await? {
                if !in_account(&account_id) || !is_key(&key_id) {
                    continue;
                }
                // The baseline is read only where it can matter: at or above the minimum.
                let before = if recent >= min_spend.nanos() {
                    store.spend_of(&key_id, since - baseline_ms, since).await?
                } else {
                    0
                };
                seen.insert(key_id.clone());
                spend.push(KeySpend {
                    key_id,
                    account_id,
                    recent: Amount::from_nanos(recent),
                    before: Amount::from_nanos(before),
                });
            }
            for key_id in quiet("key:") {
                if !seen.contains(&key_id) {
                    spend.push(KeySpend {
                        key_id,
                        account_id: String::new(),
                        recent: Amount::ZERO,
                        before: Amount::ZERO,
                    });
                }
            }
            Observed::Spend(spend)
        }
        Condition::ChannelCircuit => {
            let mut circuits: HashMap<String, Vec<String>> = store
                .circuits_reported(fresh_since)
                .await?
                .into_iter()
                .filter(|(c, _)| on_channel(c))
                .collect();
            for channel in quiet("channel:") {
                circuits.entry(channel).or_default();
            }
            let mut circuits: Vec<Circuit> = circuits
                .into_iter()
                .map(|(channel, open_on)| Circuit { channel, open_on })
                .collect();
            circuits.sort_by(|a, b| a.channel.cmp(&b.channel));
            Observed::Circuits(circuits)
        }
        Condition::TaskFailures { window_ms, .. } => {
            let mut tasks: HashMap<String, TaskOutcomes> = store
                .task_outcomes(now - window_ms)
                .await?
                .into_iter()
                .filter(|(c, _, _)| on_channel(c))
                .map(|(channel, failed, finished)| {
                    let outcomes = TaskOutcomes {
                        channel: channel.clone(),
                        failed: u64::try_from(failed).unwrap_or(0),
                        finished: u64::try_from(finished).unwrap_or(0),
                    };
                    (channel, outcomes)
                })
                .collect();
            for channel in quiet("channel:") {
                tasks.entry(channel.clone()).or_insert(TaskOutcomes {
                    channel,
                    failed: 0,
                    finished: 0,
                });
            }
            let mut tasks: Vec<TaskOutcomes> = tasks.into_values().collect();
            tasks.sort_by(|a, b| a.channel.cmp(&b.channel));
            Observed::Tasks(tasks)
        }
        Condition::PaymentSignatureFailures { window_ms, .. } => {
            Observed::SignatureFailures(vec![SignatureFailures {
                provider: "stripe".into(),
                failures: store.signature_failures_since(now - window_ms).await?,
            }])
        }
        Condition::RefundAfterSpend { window_ms } => Observed::RefundsAfterSpend(
            store
                .refunds_after_spend(now - window_ms)
                .await?
                .into_iter()
                .filter(|(_, account_id, ..)| in_account(account_id))
                .map(
                    |(ledger_id, account_id, payment_id, cause, amount, overdraw, balance)| {
                        RefundAfterSpend {
                            ledger_id,
                            account_id,
                            payment_id,
                            cause,
                            amount,
                            overdraw,
                            balance,
                        }
                    },
                )
                .collect(),
        ),
    })
}

/// How deliveries are made.
#[derive(Debug, Clone)]
pub struct Courier {
    pub schedule: RetrySchedule,
    pub timeout: Duration,
    /// This replica, the leases' owner.
    pub owner: String,
}

/// The most deliveries one round leases.
const BATCH: i64 = 16;

/// One round of the courier: the deliveries due, leased to this replica, each attempted once
/// in a task of its own — an attempt never waits for another, and the round does not wait for
/// them (`docs/decisions.md`, "Alerts": a slow receiver holds up only its own deliveries). A
/// receiver gets one attempt at a time: the store leases no delivery to a URL with one in
/// flight, and of this round's, the first to each URL goes and the others are given back.
pub async fn deliver_due(state: &Arc<State>, courier: &Arc<Courier>) {
    // The lease outlives an attempt's whole deadline with room to record it.
    let lease_ms = i64::try_from(courier.timeout.as_millis()).unwrap_or(60_000) * 2 + 10_000;
    let due = match state
        .store
        .lease_due_deliveries(&courier.owner, lease_ms, BATCH)
        .await
    {
        Ok(due) => due,
        Err(e) => {
            tracing::warn!(error = %e, "alert deliveries could not be leased");
            return;
        }
    };
    let mut receivers = std::collections::HashSet::new();
    for delivery in due {
        if !receivers.insert(delivery.url.clone()) {
            if let Err(e) = state
                .store
                .release_delivery(&delivery.id, delivery.lease_token)
                .await
            {
                tracing::warn!(delivery = %delivery.id, error = %e, "an alert delivery's lease could not be given back; it is tried when it expires");
            }
            continue;
        }
        let (state, courier) = (state.clone(), courier.clone());
        tokio::spawn(async move { attempt(&state, &courier, &delivery).await });
    }
}

/// One attempt of `delivery`, recorded under its lease.
async fn attempt(state: &State, courier: &Courier, delivery: &AlertDelivery) {
    let started_at = now_millis();
    let clock = Instant::now();
    let env = |var: &str| std::env::var(var).ok();
    // The whole attempt — connecting, sending, the answer's head — within one deadline, well
    // inside the lease: a receiver that trickles cannot hold it past the lease (another replica
    // would deliver it again).
    let answer = match delivery_secret(state, delivery, &env) {
        Err(e) => Err(format!("not sent: {e}")),
        Ok(secret) => tokio::time::timeout(
            courier.timeout,
            post(state, courier, delivery, secret.as_ref(), started_at),
        )
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "no answer within {} s",
                courier.timeout.as_secs_f64()
            ))
        }),
    };
    let number = u32::try_from(delivery.attempts + 1).unwrap_or(u32::MAX);
    let (status, error) = match answer {
        Ok(status) => (Some(i64::from(status)), None),
        Err(e) => (None, Some(e)),
    };
    let delivered = status.is_some_and(|s| (200..300).contains(&s));
    let retry_at = if delivered {
        None
    } else {
        courier
            .schedule
            .after_failure(number)
            .map(|wait| now_millis().saturating_add(wait))
    };
    let outcome = AttemptOutcome {
        started_at,
        duration_ms: i64::try_from(clock.elapsed().as_millis()).unwrap_or(i64::MAX),
        status,
        // The receiver's answer is not kept: its status and timing say what happened, and its
        // body could be anything the receiver's network holds (`docs/decisions.md`, "Alerts").
        answer: None,
        error,
        delivered,
        retry_at,
    };
    state.metrics.alert_attempt(if delivered {
        "delivered"
    } else if retry_at.is_some() {
        "retry"
    } else {
        "given_up"
    });
    match state
        .store
        .record_attempt(&delivery.id, delivery.lease_token, &courier.owner, &outcome)
        .await
    {
        Ok(true) => {
            if !delivered {
                tracing::warn!(delivery = %delivery.id, rule = %delivery.rule, attempt = number, status = ?outcome.status, error = ?outcome.error, will_retry = retry_at.is_some(), "an alert delivery failed");
            }
        }
        Ok(false) => {
            tracing::warn!(delivery = %delivery.id, attempt = number, "an alert delivery's attempt was not recorded: its lease passed to another replica (the receiver may see webhook-id {} twice)", delivery.id);
        }
        Err(e) => {
            tracing::warn!(delivery = %delivery.id, error = %e, "an alert delivery's attempt could not be recorded");
        }
    }
}

/// What `delivery` is signed with, checking first that a customer's may go where it would:
/// its own secret and only a public host (or one the operator opened to customers); an
/// operator's rule's, its variable's secret.
fn delivery_secret(
    state: &State,
    delivery: &AlertDelivery,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Secret>, String> {
    if delivery.owner_account.is_some() {
        state
            .outbound
            .check_customer(&delivery.url, &state.portal.alert_hosts)
            .map_err(|e| format!("webhook_url: {e}"))?;
    }
    match &delivery.secret {
        Some(secret) => secret
            .parse::<Secret>()
            .map(Some)
            .map_err(|e| format!("the alert's secret: {e}")),
        None => {
            secret_of(delivery.secret_env.as_deref(), env).map_err(|e| format!("secret_env: {e}"))
        }
    }
}

/// Posts the delivery's body, signed, by the one address rule (`tollgate_settings::outbound`): the
/// answer's status, or why there was none. The answer's body is not read.
async fn post(
    state: &State,
    courier: &Courier,
    delivery: &AlertDelivery,
    secret: Option<&Secret>,
    at_millis: i64,
) -> Result<u16, String> {
    let body = delivery.payload.clone().into_bytes();
    let mut request = http::Request::post(&delivery.url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(
            http::header::USER_AGENT,
            concat!("tollgate/", env!("CARGO_PKG_VERSION")),
        );
    if let Some(secret) = secret {
        for (name, value) in secret.headers(&delivery.id, at_millis / 1000, &body) {
            request = request.header(name, value);
        }
    }
    let request = request
        .body(tollgate_upstream::full_body(body))
        .map_err(|e| format!("not sent: {e}"))?;
    let timeouts = tollgate_upstream::Timeouts {
        connect: courier.timeout,
        first_byte: courier.timeout,
        idle: courier.timeout,
    };
    let response = state
        .outbound
        .send(request, &timeouts)
        .await
        .map_err(|e| e.to_string())?;
    Ok(response.status().as_u16())
}
