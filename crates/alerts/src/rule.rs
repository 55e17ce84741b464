//! Alert rules (`docs/decisions.md`, "Alerts"): an `[[alerts]]` table as written ([`RuleConfig`]),
//! checked into a [`Rule`], and what a rule judges of what the gateway observed
//! ([`Rule::judge`]): for each subject (an account, a key, a budget's period, a channel) a
//! level — 0 when all is well — and the facts that led to it.
//!
//! Whether a level is news is [`Change::between`]: the stored level and the observed one. The
//! gateway stores the level per rule and subject and changes it by compare-and-swap, so that of
//! the replicas that observe the same change only one reports it.

use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt::Write as _;
use tollgate_billing::Amount;

/// An `[[alerts]]` table, or the body of `POST /admin/v1/alerts`, as written. Which fields a
/// rule takes depends on its `when`; [`Rule::from_config`] refuses the others by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "AlertRule"))]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// The rule's name: letters, digits, `-`, `_` and `.`.
    #[cfg_attr(
        feature = "schema",
        schemars(regex(pattern = "^[A-Za-z0-9._-]{1,64}$"))
    )]
    pub name: String,
    /// `balance_below`, `budget_used`, `spend_velocity`, `channel_circuit`, `task_failures`,
    /// `payment_signature_failures` or `refund_after_spend`.
    #[cfg_attr(feature = "schema", schemars(extend("enum" = CONDITIONS)))]
    pub when: String,
    /// `balance_below`: the amount below which an account's balance fires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<Amount>,
    /// `budget_used`: the percentages of a daily or monthly budget that each fire once per
    /// period (default 50, 80, 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1), inner(range(min = 1, max = 1000)))
    )]
    pub percents: Option<Vec<u32>>,
    /// `spend_velocity`: how many times its own baseline a key must spend (default "5").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(description = "A decimal, at least 1"))]
    pub factor: Option<String>,
    /// `spend_velocity` (default 5), `task_failures` (default 15),
    /// `payment_signature_failures` (default 15) and `refund_after_spend` (default 60): the
    /// recent window, minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 1440)))]
    pub window_minutes: Option<u64>,
    /// `spend_velocity`: the baseline, in hours before the window (default 24).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 720)))]
    pub baseline_hours: Option<u64>,
    /// `spend_velocity`: the least spend in the window that may fire (default "1").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_spend: Option<Amount>,
    /// `task_failures`: the share of finished tasks that failed, 0 to 1, above which it fires
    /// (default "0.5").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// `task_failures`: the least finished tasks in the window that may fire (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_tasks: Option<u64>,
    /// `payment_signature_failures`: the least refused deliveries in the window that fire
    /// (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub min_failures: Option<u64>,
    /// `channel_circuit`, `task_failures`: only this channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// `balance_below`, `budget_used`, `spend_velocity`, `refund_after_spend`: only this
    /// account (id or name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `budget_used`, `spend_velocity`: only this key (id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Where events are posted (`http://` or `https://`).
    #[cfg_attr(feature = "schema", schemars(regex(pattern = "^https?://")))]
    pub webhook_url: String,
    /// The environment variable holding the `whsec_…` signing secret; required unless `format`
    /// is `slack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(regex(pattern = "^[A-Za-z0-9_]+$")))]
    pub secret_env: Option<String>,
    /// `standard` (the default: a Standard Webhooks JSON event) or `slack` (`{"text": …}`, for
    /// an incoming-webhook URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("enum" = ["standard", "slack"])))]
    pub format: Option<String>,
    /// `budget_used`, `spend_velocity`: what the gateway does when the rule fires — `disable`
    /// (the key, or the account of an account's budget) or `throttle` (sets its policy's `rpm`
    /// to `throttle_rpm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("enum" = ["disable", "throttle"])))]
    pub action: Option<String>,
    /// With `action = "throttle"`: the requests per minute left to the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub throttle_rpm: Option<u64>,
}

/// A checked rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub name: String,
    pub condition: Condition,
    pub scope: Scope,
    pub target: Target,
    pub action: Option<Action>,
    /// The rule as written (what the admin API shows).
    pub written: RuleConfig,
}

/// What fires a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// An account's balance below `threshold`.
    BalanceBelow { threshold: Amount },
    /// A daily or monthly budget (an account's or a key's policy) used to each of `percents`
    /// (ascending).
    BudgetUsed { percents: Vec<u32> },
    /// A key spending, over the last `window_ms`, more than `factor` times what it spent per
    /// window over the `baseline_ms` before, and at least `min_spend`.
    SpendVelocity {
        factor: Decimal,
        window_ms: i64,
        baseline_ms: i64,
        min_spend: Amount,
    },
    /// A channel's circuit open (on any replica).
    ChannelCircuit,
    /// Of a channel's tasks finished in the last `window_ms`, at least `min_tasks`, and a
    /// share above `rate` failed.
    TaskFailures {
        rate: Decimal,
        window_ms: i64,
        min_tasks: u64,
    },
    /// The payment provider's webhook deliveries refused for their signature (a forger, or a
    /// secret rolled on one side only): at least `min_failures` in the last `window_ms`.
    PaymentSignatureFailures { window_ms: i64, min_failures: u64 },
    /// A refund or chargeback in the last `window_ms` that took more than the account had
    /// available: money already spent (docs/decisions.md, "Payments"). Each fires once.
    RefundAfterSpend { window_ms: i64 },
}

/// Which subjects a rule looks at; `None` is all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub account: Option<String>,
    pub key: Option<String>,
    pub channel: Option<String>,
}

/// Where a rule's events go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    pub secret_env: Option<String>,
    pub format: Format,
}

/// The body of a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A Standard Webhooks event: `{"type", "timestamp", "data"}`.
    Standard,
    /// A Slack incoming webhook's `{"text"}`.
    Slack,
}

impl Format {
    /// Its name in the configuration and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Standard => "standard",
            Format::Slack => "slack",
        }
    }

    /// From its name.
    pub fn parse(name: &str) -> Option<Format> {
        match name {
            "standard" => Some(Format::Standard),
            "slack" => Some(Format::Slack),
            _ => None,
        }
    }
}

/// What the gateway does to the subject when a rule fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Disables the key (or the account).
    Disable,
    /// Sets the key's (or the account's) policy `rpm`.
    Throttle { rpm: u64 },
}

/// A rule refused: the field and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("alert {rule:?}: {field}: {problem}")]
pub struct RuleError {
    pub rule: String,
    pub field: &'static str,
    pub problem: String,
}

/// The conditions' names, as `when` spells them.
pub const CONDITIONS: [&str; 7] = [
    "balance_below",
    "budget_used",
    "spend_velocity",
    "channel_circuit",
    "task_failures",
    "payment_signature_failures",
    "refund_after_spend",
];

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

impl Rule {
    /// Checks a rule as written: its name, a known `when` with the fields it takes and none it
    /// does not, amounts and shares in range, a URL, a secret's variable unless the format
    /// needs none, an action only where there is a key or account to act on.
    pub fn from_config(c: &RuleConfig) -> Result<Rule, RuleError> {
        let fail = |field: &'static str, problem: &str| RuleError {
            rule: c.name.clone(),
            field,
            problem: problem.to_owned(),
        };
        if c.name.is_empty()
            || c.name.len() > 64
            || !c
                .name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
        {
            return Err(fail("name", "1 to 64 letters, digits, '-', '_' or '.'"));
        }
        // Each field and the conditions that take it.
        let given: [(&'static str, bool, &[&str]); 12] = [
            ("threshold", c.threshold.is_some(), &["balance_below"]),
            ("percents", c.percents.is_some(), &["budget_used"]),
            ("factor", c.factor.is_some(), &["spend_velocity"]),
            (
                "window_minutes",
                c.window_minutes.is_some(),
                &[
                    "spend_velocity",
                    "task_failures",
                    "payment_signature_failures",
                    "refund_after_spend",
                ],
            ),
            (
                "min_failures",
                c.min_failures.is_some(),
                &["payment_signature_failures"],
            ),
            (
                "baseline_hours",
                c.baseline_hours.is_some(),
                &["spend_velocity"],
            ),
            ("min_spend", c.min_spend.is_some(), &["spend_velocity"]),
            ("rate", c.rate.is_some(), &["task_failures"]),
            ("min_tasks", c.min_tasks.is_some(), &["task_failures"]),
            (
                "channel",
                c.channel.is_some(),
                &["channel_circuit", "task_failures"],
            ),
            (
                "account",
                c.account.is_some(),
                &[
                    "balance_below",
                    "budget_used",
                    "spend_velocity",
                    "refund_after_spend",
                ],
            ),
            ("key", c.key.is_some(), &["budget_used", "spend_velocity"]),
        ];
        if !CONDITIONS.contains(&c.when.as_str()) {
            return Err(fail("when", &format!("one of {}", CONDITIONS.join(", "))));
        }
        for (field, present, takes) in given {
            if present && !takes.contains(&c.when.as_str()) {
                return Err(fail(
                    field,
                    &format!("not a field of {} (it is of {})", c.when, takes.join(", ")),
                ));
            }
        }
        let window = |default: i64| -> Result<i64, RuleError> {
            match c.window_minutes {
                None => Ok(default * MINUTE),
                Some(m @ 1..=1440) => Ok(i64::try_from(m).unwrap_or(1440) * MINUTE),
                Some(_) => Err(fail("window_minutes", "1 to 1440")),
            }
        };
        let decimal = |field: &'static str, text: &Option<String>, default: &str| {
            text.as_deref()
                .unwrap_or(default)
                .parse::<Decimal>()
                .map_err(|_| fail(field, "a decimal number as a string, e.g. \"0.5\""))
        };
        let condition = match c.when.as_str() {
            "balance_below" => Condition::BalanceBelow {
                threshold: c
                    .threshold
                    .ok_or_else(|| fail("threshold", "required: the amount, e.g. \"5.00\""))?,
            },
            "budget_used" => {
                let mut percents = c.percents.clone().unwrap_or_else(|| vec![50, 80, 100]);
                percents.sort_unstable();
                percents.dedup();
                if percents.is_empty() || percents.iter().any(|p| !(1..=1000).contains(p)) {
                    return Err(fail("percents", "one or more whole percentages, 1 to 1000"));
                }
                Condition::BudgetUsed { percents }
            }
            "spend_velocity" => {
                let factor = decimal("factor", &c.factor, "5")?;
                if factor < Decimal::ONE {
                    return Err(fail("factor", "at least 1"));
                }
                let baseline_ms = match c.baseline_hours {
                    None => 24 * HOUR,
                    Some(h @ 1..=720) => i64::try_from(h).unwrap_or(720) * HOUR,
                    Some(_) => return Err(fail("baseline_hours", "1 to 720")),
                };
                let min_spend = c.min_spend.unwrap_or(Amount::from_nanos(1_000_000_000));
                if min_spend <= Amount::ZERO {
                    return Err(fail("min_spend", "above 0"));
                }
                Condition::SpendVelocity {
                    factor,
                    window_ms: window(5)?,
                    baseline_ms,
                    min_spend,
                }
            }
            "channel_circuit" => Condition::ChannelCircuit,
            "payment_signature_failures" => Condition::PaymentSignatureFailures {
                window_ms: window(15)?,
                min_failures: c.min_failures.unwrap_or(1).max(1),
            },
            "refund_after_spend" => Condition::RefundAfterSpend {
                window_ms: window(60)?,
            },
            _ => {
                let rate = decimal("rate", &c.rate, "0.5")?;
                if rate < Decimal::ZERO || rate >= Decimal::ONE {
                    return Err(fail("rate", "at least 0 and below 1"));
                }
                Condition::TaskFailures {
                    rate,
                    window_ms: window(15)?,
                    min_tasks: c.min_tasks.unwrap_or(5).max(1),
                }
            }
        };
        if !(c.webhook_url.starts_with("http://") || c.webhook_url.starts_with("https://"))
            || c.webhook_url.len() > 2048
            || c.webhook_url.chars().any(char::is_whitespace)
        {
            return Err(fail("webhook_url", "an http:// or https:// URL"));
        }
        let format = match c.format.as_deref() {
            None => Format::Standard,
            Some(name) => {
                Format::parse(name).ok_or_else(|| fail("format", "\"standard\" or \"slack\""))?
            }
        };
        match &c.secret_env {
            None if format == Format::Standard => {
                return Err(fail(
                    "secret_env",
                    "required: the environment variable holding the whsec_… signing secret",
                ));
            }
            Some(var)
                if var.is_empty()
                    || !var
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || ch == '_') =>
            {
                return Err(fail("secret_env", "an environment variable's name"));
            }
            _ => {}
        }
        let action = match (c.action.as_deref(), c.throttle_rpm) {
            (None, None) => None,
            (Some(_), _) if !matches!(c.when.as_str(), "budget_used" | "spend_velocity") => {
                return Err(fail(
                    "action",
                    "only budget_used and spend_velocity rules act (on their key or account)",
                ));
            }
            (Some("disable"), None) => Some(Action::Disable),
            (Some("throttle"), Some(rpm)) if rpm >= 1 => Some(Action::Throttle { rpm }),
            (Some("throttle"), _) => {
                return Err(fail(
                    "throttle_rpm",
                    "required with action \"throttle\": 1 or more",
                ));
            }
            (None, Some(_)) | (Some("disable"), Some(_)) => {
                return Err(fail("throttle_rpm", "only with action \"throttle\""));
            }
            (Some(_), _) => return Err(fail("action", "\"disable\" or \"throttle\"")),
        };
        Ok(Rule {
            name: c.name.clone(),
            condition,
            scope: Scope {
                account: c.account.clone(),
                key: c.key.clone(),
                channel: c.channel.clone(),
            },
            target: Target {
                url: c.webhook_url.clone(),
                secret_env: c.secret_env.clone(),
                format,
            },
            action,
            written: c.clone(),
        })
    }

    /// A balance alert a customer set in the portal (docs/decisions.md, "Balance alerts a
    /// customer sets"), as a rule: `balance_below` over its own account only, named by its id
    /// (`bal_…`), posted to `url` in `format`, never acting. It names no secret's variable: its
    /// deliveries carry the alert's own secret.
    pub fn customer_balance(
        id: &str,
        account_id: &str,
        threshold: Amount,
        url: &str,
        format: Format,
    ) -> Rule {
        Rule {
            name: id.to_owned(),
            condition: Condition::BalanceBelow { threshold },
            scope: Scope {
                account: Some(account_id.to_owned()),
                ..Scope::default()
            },
            target: Target {
                url: url.to_owned(),
                secret_env: None,
                format,
            },
            action: None,
            written: RuleConfig {
                name: id.to_owned(),
                when: "balance_below".to_owned(),
                threshold: Some(threshold),
                account: Some(account_id.to_owned()),
                webhook_url: url.to_owned(),
                format: Some(format.as_str().to_owned()),
                ..RuleConfig::default()
            },
        }
    }

    /// The condition's name.
    pub fn when(&self) -> &'static str {
        match self.condition {
            Condition::BalanceBelow { .. } => "balance_below",
            Condition::BudgetUsed { .. } => "budget_used",
            Condition::SpendVelocity { .. } => "spend_velocity",
            Condition::ChannelCircuit => "channel_circuit",
            Condition::TaskFailures { .. } => "task_failures",
            Condition::PaymentSignatureFailures { .. } => "payment_signature_failures",
            Condition::RefundAfterSpend { .. } => "refund_after_spend",
        }
    }

    /// Whether a subject's level falls back to 0 with a `resolved` event. A budget's period
    /// does not: its use only grows, and the next period is another subject; nor does a
    /// refund after spend: each is a subject of its own, told once.
    pub fn resolves(&self) -> bool {
        !matches!(
            self.condition,
            Condition::BudgetUsed { .. } | Condition::RefundAfterSpend { .. }
        )
    }

    /// What the rule makes of `observed` (the observations of its own condition, gathered by
    /// the caller within the rule's scope): one verdict per subject observed.
    pub fn judge(&self, observed: &Observed) -> Vec<Verdict> {
        match (&self.condition, observed) {
            (Condition::BalanceBelow { threshold }, Observed::Balances(accounts)) => accounts
                .iter()
                .map(|a| Verdict {
                    subject: format!("account:{}", a.account_id),
                    level: i64::from(a.balance < *threshold),
                    summary: format!(
                        "account {} has a balance of {}, {} {}",
                        a.account_name,
                        a.balance,
                        if a.balance < *threshold {
                            "below"
                        } else {
                            "back at or above"
                        },
                        threshold
                    ),
                    facts: json!({
                        "account_id": a.account_id,
                        "account_name": a.account_name,
                        "balance": a.balance.to_string(),
                        "threshold": threshold.to_string(),
                    }),
                    acts_on: None,
                })
                .collect(),
            (Condition::BudgetUsed { percents }, Observed::Budgets(budgets)) => budgets
                .iter()
                .map(|b| {
                    let reached = percents
                        .iter()
                        .rev()
                        .find(|p| {
                            b.spent.nanos().saturating_mul(100)
                                >= b.budget.nanos().saturating_mul(i64::from(**p))
                        })
                        .copied()
                        .unwrap_or(0);
                    let mut summary = format!(
                        "{} {} has spent {} of its {} budget of {} ({} period from {})",
                        b.holder_kind,
                        b.holder_id,
                        b.spent,
                        b.period,
                        b.budget,
                        b.period,
                        b.period_start
                    );
                    if reached > 0 {
                        let _ = write!(summary, ": {reached} % reached");
                    }
                    Verdict {
                        subject: format!(
                            "{}:{}:{}:{}",
                            b.holder_kind, b.holder_id, b.period, b.period_start
                        ),
                        level: i64::from(reached),
                        summary,
                        facts: json!({
                            "holder": b.holder_kind,
                            "holder_id": b.holder_id,
                            "account_id": b.account_id,
                            "period": b.period,
                            "period_start": b.period_start,
                            "spent": b.spent.to_string(),
                            "budget": b.budget.to_string(),
                            "percent": reached,
                        }),
                        acts_on: Some(Holder {
                            kind: b.holder_kind,
                            id: b.holder_id.clone(),
                        }),
                    }
                })
                .collect(),
            (
                Condition::SpendVelocity {
                    factor,
                    window_ms,
                    baseline_ms,
                    min_spend,
                },
                Observed::Spend(keys),
            ) => keys
                .iter()
                .map(|k| {
                    // What the key spent per window over the baseline: before × window ÷ baseline.
                    let per_window = Decimal::from(k.before.nanos()) * Decimal::from(*window_ms)
                        / Decimal::from((*baseline_ms).max(1));
                    let recent = Decimal::from(k.recent.nanos());
                    let fast = k.recent >= *min_spend && recent > *factor * per_window;
                    let per_window =
                        Amount::from_nanos(per_window.round().to_i64().unwrap_or(i64::MAX));
                    Verdict {
                        subject: format!("key:{}", k.key_id),
                        level: i64::from(fast),
                        summary: format!(
                            "key {} spent {} in the last {} min; its baseline is {} per {} min{}",
                            k.key_id,
                            k.recent,
                            window_ms / MINUTE,
                            per_window,
                            window_ms / MINUTE,
                            if fast {
                                format!(", over {factor} times that")
                            } else {
                                String::from(", back within bounds")
                            }
                        ),
                        facts: json!({
                            "key_id": k.key_id,
                            "account_id": k.account_id,
                            "recent": k.recent.to_string(),
                            "window_minutes": window_ms / MINUTE,
                            "baseline_per_window": per_window.to_string(),
                            "baseline_hours": baseline_ms / HOUR,
                            "factor": factor.to_string(),
                            "min_spend": min_spend.to_string(),
                        }),
                        acts_on: Some(Holder {
                            kind: "key",
                            id: k.key_id.clone(),
                        }),
                    }
                })
                .collect(),
            (Condition::ChannelCircuit, Observed::Circuits(channels)) => channels
                .iter()
                .map(|c| Verdict {
                    subject: format!("channel:{}", c.channel),
                    level: i64::from(!c.open_on.is_empty()),
                    summary: if c.open_on.is_empty() {
                        format!("channel {}'s circuit closed", c.channel)
                    } else {
                        format!(
                            "channel {}'s circuit opened (on {} of the replicas)",
                            c.channel,
                            c.open_on.len()
                        )
                    },
                    facts: json!({"channel": c.channel, "open_on": c.open_on}),
                    acts_on: None,
                })
                .collect(),
            (
                Condition::TaskFailures {
                    rate,
                    window_ms,
                    min_tasks,
                },
                Observed::Tasks(channels),
            ) => channels
                .iter()
                .map(|t| {
                    let high = t.finished >= *min_tasks
                        && Decimal::from(t.failed) > *rate * Decimal::from(t.finished);
                    Verdict {
                        subject: format!("channel:{}", t.channel),
                        level: i64::from(high),
                        summary: format!(
                            "channel {}: {} of {} tasks finished in the last {} min failed{}",
                            t.channel,
                            t.failed,
                            t.finished,
                            window_ms / MINUTE,
                            if high {
                                format!(", above {rate}")
                            } else {
                                String::from(", back within bounds")
                            }
                        ),
                        facts: json!({
                            "channel": t.channel,
                            "failed": t.failed,
                            "finished": t.finished,
                            "window_minutes": window_ms / MINUTE,
                            "rate": rate.to_string(),
                        }),
                        acts_on: None,
                    }
                })
                .collect(),
            (
                Condition::PaymentSignatureFailures {
                    window_ms,
                    min_failures,
                },
                Observed::SignatureFailures(providers),
            ) => providers
                .iter()
                .map(|p| {
                    let firing = p.failures >= *min_failures;
                    Verdict {
                        subject: format!("provider:{}", p.provider),
                        level: i64::from(firing),
                        summary: format!(
                            "{} webhook deliveries refused for their signature in the last {} min{}",
                            p.failures,
                            window_ms / MINUTE,
                            if firing {
                                " (forged, replayed, or a secret rolled on one side only)"
                            } else {
                                ", back within bounds"
                            }
                        ),
                        facts: json!({
                            "provider": p.provider,
                            "failures": p.failures,
                            "window_minutes": window_ms / MINUTE,
                            "min_failures": min_failures,
                        }),
                        acts_on: None,
                    }
                })
                .collect(),
            (Condition::RefundAfterSpend { .. }, Observed::RefundsAfterSpend(refunds)) => refunds
                .iter()
                .map(|r| Verdict {
                    subject: format!("ledger:{}", r.ledger_id),
                    level: 1,
                    summary: format!(
                        "a {} of payment {} took {} from account {}, {} of it money already spent; the balance is {}",
                        r.cause, r.payment_id, r.amount, r.account_id, r.overdraw, r.balance
                    ),
                    facts: json!({
                        "ledger_id": r.ledger_id,
                        "account_id": r.account_id,
                        "payment_id": r.payment_id,
                        "cause": r.cause,
                        "amount": r.amount.to_string(),
                        "overdraw": r.overdraw.to_string(),
                        "balance": r.balance.to_string(),
                    }),
                    acts_on: None,
                })
                .collect(),
            // Observations of another condition: nothing to judge.
            _ => Vec::new(),
        }
    }
}

/// What the gateway observed for one rule, gathered within its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Balances(Vec<Balance>),
    Budgets(Vec<BudgetUse>),
    Spend(Vec<KeySpend>),
    Circuits(Vec<Circuit>),
    Tasks(Vec<TaskOutcomes>),
    SignatureFailures(Vec<SignatureFailures>),
    RefundsAfterSpend(Vec<RefundAfterSpend>),
}

/// A payment provider's webhook deliveries refused for their signature in the rule's window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureFailures {
    pub provider: String,
    pub failures: u64,
}

/// A refund or chargeback that took money already spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundAfterSpend {
    pub ledger_id: String,
    pub account_id: String,
    pub payment_id: String,
    /// `refund` or `dispute`.
    pub cause: String,
    /// What it took (negative).
    pub amount: Amount,
    /// What of it was beyond what the account had available.
    pub overdraw: Amount,
    /// The balance after it.
    pub balance: Amount,
}

/// An account's balance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Balance {
    pub account_id: String,
    pub account_name: String,
    pub balance: Amount,
}

/// What a holder with a budget spent of it in the current period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetUse {
    /// `account` or `key`.
    pub holder_kind: &'static str,
    pub holder_id: String,
    pub account_id: String,
    /// `day` or `month`.
    pub period: &'static str,
    /// The period's first day, `YYYY-MM-DD` (UTC).
    pub period_start: String,
    pub spent: Amount,
    pub budget: Amount,
}

/// What a key spent in the rule's window and in the baseline before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpend {
    pub key_id: String,
    pub account_id: String,
    pub recent: Amount,
    pub before: Amount,
}

/// A channel and the replicas its circuit is open on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circuit {
    pub channel: String,
    pub open_on: Vec<String>,
}

/// A channel's tasks finished in the rule's window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOutcomes {
    pub channel: String,
    pub failed: u64,
    pub finished: u64,
}

/// A key or an account an action applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// `account` or `key`.
    pub kind: &'static str,
    pub id: String,
}

/// What a rule makes of one subject.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// What the level is of: `account:…`, `key:…`, `channel:…`, or a budget's
    /// `key:…:day:2026-11-27`.
    pub subject: String,
    /// 0: all is well; above: firing (a budget's: the highest percentage reached).
    pub level: i64,
    /// One line for people.
    pub summary: String,
    /// The numbers behind it, in the event's `data.facts`.
    pub facts: Value,
    /// What the rule's action would apply to.
    pub acts_on: Option<Holder>,
}

/// What a verdict changes of a subject's stored level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The level rose: an `alert.fired` event.
    Fired,
    /// The level fell to 0 (rules that resolve): an `alert.resolved` event.
    Resolved,
}

impl Change {
    /// The change from `stored` to `observed`, if it is news. A level that falls but stays
    /// above 0 is none, nor is any fall of a rule that does not resolve.
    pub fn between(stored: i64, observed: i64, resolves: bool) -> Option<Change> {
        if observed > stored {
            Some(Change::Fired)
        } else if observed == 0 && stored > 0 && resolves {
            Some(Change::Resolved)
        } else {
            None
        }
    }

    /// The event's `type`.
    pub fn event_type(self) -> &'static str {
        match self {
            Change::Fired => "alert.fired",
            Change::Resolved => "alert.resolved",
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
