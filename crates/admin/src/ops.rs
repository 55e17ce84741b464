//! The operator's operations, shared by the admin API and the CLI (`docs/decisions.md`, "The
//! admin API"): one validation and one audit record per change, whichever door it came in by.
//! Inputs arrive as text or plain JSON values; every refusal names its field.

use serde_json::json;
use std::collections::BTreeMap;
use tollgate_billing::{Amount, Decimal, Meter};
use tollgate_store::{
    AccessPolicy, Account, AdminChange, Cidr, Credited, MAX_ADMIN_TEXT, NewKey, PolicyChange,
    PolicyHolder, Store, StoreError, UsageFilter, UsageGroup,
};

use super::views;
use tollgate_journal::clock::parse_rfc3339;
use tollgate_request::policy::ENDPOINTS as POLICY_ENDPOINTS;
use tollgate_settings::reload::{Reload, ReloadError, Reloaded};

/// Who made a change: `token:NAME` through the API, `cli:USER` on the command line.
#[derive(Debug, Clone)]
pub struct Actor {
    /// The audit log's `actor`.
    pub name: String,
    /// The admin request's id (API only).
    pub request_id: Option<String>,
}

impl Actor {
    /// The command line's actor: `cli:` and the login name.
    pub fn cli() -> Actor {
        let user = std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .unwrap_or_else(|_| "unknown".into());
        Actor {
            name: format!("cli:{user}"),
            request_id: None,
        }
    }

    pub(crate) fn change(&self, action: &str, target: &str) -> AdminChange {
        AdminChange {
            actor: self.name.clone(),
            action: action.to_owned(),
            target: target.to_owned(),
            before: None,
            after: None,
            request_id: self.request_id.clone(),
        }
    }
}

/// What went wrong with an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpErrorKind {
    /// An input broke a rule (400).
    Invalid,
    /// No such account, key, group, task or channel (404).
    NotFound,
    /// It conflicts with what exists (409): a taken name, a reused idempotency key.
    Conflict,
    /// The database failed (500).
    Internal,
}

/// A refused or failed operation: its kind, the field to blame, and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    /// What kind of failure.
    pub kind: OpErrorKind,
    /// The input field (JSON name; the CLI's flag is `--` and the name with dashes).
    pub field: Option<&'static str>,
    /// What was wrong.
    pub message: String,
}

impl OpError {
    /// An invalid `field`.
    pub fn invalid(field: &'static str, message: impl Into<String>) -> OpError {
        OpError {
            kind: OpErrorKind::Invalid,
            field: Some(field),
            message: message.into(),
        }
    }

    /// How the CLI says it: `--flag: message`.
    pub fn for_cli(&self) -> String {
        match self.field {
            Some(field) => format!("--{}: {}", field.replace('_', "-"), self.message),
            None => self.message.clone(),
        }
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.field {
            Some(field) => write!(f, "{field}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl From<StoreError> for OpError {
    fn from(e: StoreError) -> OpError {
        let kind = match &e {
            StoreError::NotFound(_) => OpErrorKind::NotFound,
            StoreError::AlreadyExists(_) | StoreError::Disabled(_) => OpErrorKind::Conflict,
            StoreError::InvalidName(_)
            | StoreError::InvalidAmount(_)
            | StoreError::InvalidPrice(_) => OpErrorKind::Invalid,
            _ => OpErrorKind::Internal,
        };
        OpError {
            kind,
            field: None,
            message: e.to_string(),
        }
    }
}

/// A decimal amount.
pub fn parse_amount(field: &'static str, text: &str) -> Result<Amount, OpError> {
    text.trim().parse().map_err(|e| {
        OpError::invalid(
            field,
            format!("{text:?} is not an amount ({e}); write a decimal such as 1 or 0.25"),
        )
    })
}

pub(crate) fn short_text(field: &'static str, text: &str, what: &str) -> Result<String, OpError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(OpError::invalid(
            field,
            format!("invalid {field}: {what} is required"),
        ));
    }
    if text.len() > MAX_ADMIN_TEXT {
        return Err(OpError::invalid(
            field,
            format!("{what} is longer than {MAX_ADMIN_TEXT} bytes"),
        ));
    }
    Ok(text.to_owned())
}

/// Creates an admin token; returns it with its secret (shown once).
pub async fn create_admin_token(
    store: &Store,
    actor: &Actor,
    name: &str,
    read_only: bool,
) -> Result<(tollgate_store::AdminToken, String), OpError> {
    let (token, secret) = store.create_admin_token(name, read_only).await?;
    let mut change = actor.change("admin_token.create", &token.id);
    change.after = Some(json!({"name": token.name, "read_only": read_only}));
    store.record_admin_change(&change).await?;
    Ok((token, secret))
}

/// Revokes an admin token (by id or name) for good.
pub async fn revoke_admin_token(
    store: &Store,
    actor: &Actor,
    token: &str,
) -> Result<tollgate_store::AdminToken, OpError> {
    let revoked = store.revoke_admin_token(token).await?;
    let mut change = actor.change("admin_token.revoke", &revoked.id);
    change.after = Some(json!({"name": revoked.name, "revoked": true}));
    store.record_admin_change(&change).await?;
    Ok(revoked)
}

/// Creates an account with an opening balance and its first key.
pub async fn create_account(
    store: &Store,
    actor: &Actor,
    name: &str,
    balance: &str,
) -> Result<(Account, NewKey), OpError> {
    let name = short_text("name", name, "a name")?;
    let balance = parse_amount("balance", balance)?;
    if balance.is_negative() {
        return Err(OpError::invalid(
            "balance",
            "an opening balance cannot be negative",
        ));
    }
    let (account, key) = store.create_account(&name, balance).await?;
    let mut change = actor.change("account.create", &account.id);
    change.after = Some(views::json(&views::account(&account)));
    store.record_admin_change(&change).await?;
    Ok((account, key))
}

/// Credits (or, negative, corrects) an account, once per idempotency key. A correction may
/// take only what the account has available — balance less what its tasks hold and what the
/// running gateways lease, which they are asked to give back first (`docs/decisions.md`,
/// "Corrections and leases") — unless `allow_negative`.
pub async fn credit(
    store: &Store,
    actor: &Actor,
    account: &str,
    amount: &str,
    reason: &str,
    allow_negative: bool,
    idempotency_key: Option<&str>,
) -> Result<Credited, OpError> {
    let amount = parse_amount("amount", amount)?;
    if amount == Amount::ZERO {
        return Err(OpError::invalid(
            "amount",
            "a credit of zero changes nothing",
        ));
    }
    let reason = short_text("reason", reason, "a reason")?;
    let key = idempotency_key
        .map(|k| short_text("idempotency_key", k, "an idempotency key"))
        .transpose()?;
    let found = store.find_account(account).await?;
    let fingerprint = format!("{}|{}|{reason}", found.id, amount.nanos());
    let mut change = actor.change(
        if amount.is_negative() {
            "account.correct"
        } else {
            "account.credit"
        },
        &found.id,
    );
    change.before = Some(json!({"balance": found.balance}));
    let idempotency = key.as_deref().map(|k| (k, fingerprint.as_str()));
    let credited = store
        .credit_once(
            &found.id,
            amount,
            &reason,
            allow_negative,
            idempotency,
            &change,
        )
        .await
        .map_err(|e| match e {
            StoreError::AlreadyExists(message) => OpError {
                kind: OpErrorKind::Conflict,
                field: Some("idempotency_key"),
                message,
            },
            StoreError::NotAvailable {
                available,
                held,
                leased,
                requested,
            } => OpError::invalid(
                "allow_negative",
                format!(
                    "{}: a correction of {amount} takes {requested}, but only {available} of the \
                     balance of {} is available ({held} held by video tasks, {leased} leased by \
                     running gateways for requests in flight); retry once they finish, or pass \
                     --allow-negative (\"allow_negative\": true) to take it anyway, even below \
                     zero",
                    found.name,
                    // The balance when it was refused: requests may have been charged since
                    // `found` was read.
                    Amount::from_nanos(
                        available
                            .nanos()
                            .saturating_add(held.nanos())
                            .saturating_add(leased.nanos())
                    )
                ),
            ),
            other => other.into(),
        })?;
    Ok(credited)
}

/// Disables or enables an account (and so all its keys).
pub async fn set_account_disabled(
    store: &Store,
    actor: &Actor,
    account: &str,
    disabled: bool,
) -> Result<Account, OpError> {
    let found = store.find_account(account).await?;
    store.set_disabled(&found.id, disabled).await?;
    let after = store.find_account(&found.id).await?;
    let action = if disabled {
        "account.disable"
    } else {
        "account.enable"
    };
    let mut change = actor.change(action, &found.id);
    change.before = Some(json!({"disabled": found.disabled}));
    change.after = Some(json!({"disabled": after.disabled}));
    store.record_admin_change(&change).await?;
    Ok(after)
}

/// Adds a key to an account.
pub async fn add_key(
    store: &Store,
    actor: &Actor,
    account: &str,
    name: &str,
) -> Result<(Account, NewKey), OpError> {
    let name = short_text("name", name, "a key label")?;
    let found = store.find_account(account).await?;
    let key = store.create_key(&found.id, &name).await?;
    let mut change = actor.change("key.add", &key.id);
    change.after = Some(json!({"account": found.id, "name": name}));
    store.record_admin_change(&change).await?;
    Ok((found, key))
}

fn key_id(key: &str) -> Result<&str, OpError> {
    if key.starts_with("key_") {
        Ok(key)
    } else {
        Err(OpError::invalid(
            "key",
            format!(
                "{key:?} is not a key id: this names one key (key_…, as `keys show` lists them); \
                 disabling the account stops all its keys"
            ),
        ))
    }
}

/// Revokes a key for good.
pub async fn revoke_key(store: &Store, actor: &Actor, key: &str) -> Result<String, OpError> {
    let key = key_id(key)?;
    let account = store.revoke_key(key).await?;
    let mut change = actor.change("key.revoke", key);
    change.after = Some(json!({"account": account, "revoked": true}));
    store.record_admin_change(&change).await?;
    Ok(account)
}

/// Replaces a key by a new one of the same label and policy; the old one is revoked.
pub async fn rotate_key(
    store: &Store,
    actor: &Actor,
    key: &str,
) -> Result<(String, NewKey), OpError> {
    let key = key_id(key)?;
    let (account, new) = store.rotate_key(key).await?;
    let mut change = actor.change("key.rotate", key);
    change.after = Some(json!({"account": account, "revoked": true, "replaced_by": new.id}));
    store.record_admin_change(&change).await?;
    Ok((account, new))
}

/// Enables a disabled (not revoked) key.
pub async fn enable_key(store: &Store, actor: &Actor, key: &str) -> Result<(), OpError> {
    let key = key_id(key)?;
    store.enable_key(key).await?;
    let mut change = actor.change("key.enable", key);
    change.after = Some(json!({"disabled": false}));
    store.record_admin_change(&change).await?;
    Ok(())
}

/// Fields of a policy to change, as the CLI's flags and the API's JSON give them; a field
/// left out stays as it is.
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
pub struct PolicyEdit {
    /// Models or globs.
    #[schemars(length(min = 1))]
    pub models: Option<Vec<String>>,
    /// Endpoint names (the access policies' names of the routes).
    #[schemars(length(min = 1), with = "Option<Vec<EndpointName>>")]
    pub endpoints: Option<Vec<String>>,
    /// Expiry, RFC 3339.
    pub expires: Option<String>,
    /// Client networks.
    #[schemars(length(min = 1))]
    pub ips: Option<Vec<String>>,
    /// A price group's name.
    pub group: Option<String>,
    /// Requests per minute.
    #[schemars(range(min = 1))]
    pub rpm: Option<u64>,
    /// Units of meters per minute.
    #[schemars(extend("additionalProperties" = {"type": "integer", "minimum": 1}))]
    pub per_minute: Option<BTreeMap<String, u64>>,
    /// Requests in flight.
    #[schemars(range(min = 1))]
    pub concurrency: Option<u32>,
    /// Open streams.
    #[schemars(range(min = 1))]
    pub streams: Option<u32>,
    /// Money per UTC day, a decimal string above 0.
    #[schemars(with = "Option<Amount>")]
    pub daily_budget: Option<String>,
    /// Money per UTC month, a decimal string above 0.
    #[schemars(with = "Option<Amount>")]
    pub monthly_budget: Option<String>,
    /// Video tasks in flight.
    #[schemars(range(min = 1))]
    pub tasks_in_flight: Option<u32>,
}

/// An endpoint's name in an access policy, as the document shows it: one of
/// `policy::ENDPOINTS`.
struct EndpointName;

impl schemars::JsonSchema for EndpointName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EndpointName".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "enum": tollgate_request::policy::ENDPOINTS,
        })
    }
}

/// A limit of 0 would refuse everything; disabling a key does that.
fn positive(field: &'static str, n: u64) -> Result<u64, OpError> {
    if n == 0 {
        return Err(OpError::invalid(
            field,
            "must be at least 1 (to refuse every request, disable the key)",
        ));
    }
    Ok(n)
}

fn budget(field: &'static str, text: &str) -> Result<Amount, OpError> {
    let amount: Amount = text
        .trim()
        .parse()
        .map_err(|e| OpError::invalid(field, format!("{text:?} is not a decimal amount ({e})")))?;
    if !amount.is_positive() {
        return Err(OpError::invalid(field, "must be above 0"));
    }
    Ok(amount)
}

/// A list trimmed of blanks; at least one item.
fn list(field: &'static str, items: &[String]) -> Result<Vec<String>, OpError> {
    let items: Vec<String> = items
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if items.is_empty() {
        return Err(OpError::invalid(
            field,
            "needs at least one item (clearing the policy removes it)",
        ));
    }
    Ok(items)
}

impl PolicyEdit {
    /// Checks every field and turns the edit into a change of the store's policy.
    pub async fn validate(&self, store: &Store) -> Result<PolicyChange, OpError> {
        if let Some(group) = &self.group {
            // A key must never point at a group that prices nothing.
            store.price_group(group).await.map_err(|_| {
                OpError::invalid(
                    "group",
                    format!("no price group {group:?}; make it with `groups set`"),
                )
            })?;
        }
        let endpoints = self
            .endpoints
            .as_deref()
            .map(|e| list("endpoints", e))
            .transpose()?;
        if let Some(unknown) = endpoints
            .iter()
            .flatten()
            .find(|e| !POLICY_ENDPOINTS.contains(&e.as_str()))
        {
            return Err(OpError::invalid(
                "endpoints",
                format!(
                    "{unknown:?} is not an endpoint; use {}",
                    POLICY_ENDPOINTS.join(", ")
                ),
            ));
        }
        let networks = self
            .ips
            .as_deref()
            .map(|ips| {
                list("ips", ips)?
                    .iter()
                    .map(|n| n.parse::<Cidr>().map_err(|e| OpError::invalid("ips", e)))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let per_minute = match &self.per_minute {
            None => None,
            Some(map) if map.is_empty() => {
                return Err(OpError::invalid("per_minute", "needs at least one meter"));
            }
            Some(map) => {
                let meters: Vec<&str> = Meter::ALL
                    .map(Meter::as_str)
                    .into_iter()
                    .filter(|m| *m != tollgate_request::quotas::IMAGES)
                    .chain([tollgate_request::quotas::IMAGES])
                    .collect();
                let mut out = BTreeMap::new();
                for (meter, n) in map {
                    let meter = meter.trim();
                    if !meters.contains(&meter) {
                        return Err(OpError::invalid(
                            "per_minute",
                            format!("{meter:?} is not a meter; use one of {}", meters.join(", ")),
                        ));
                    }
                    out.insert(meter.to_owned(), positive("per_minute", *n)?);
                }
                Some(out)
            }
        };
        let change = PolicyChange {
            models: self
                .models
                .as_deref()
                .map(|m| list("models", m))
                .transpose()?,
            endpoints,
            expires_at: self
                .expires
                .as_deref()
                .map(|t| parse_rfc3339(t).map_err(|e| OpError::invalid("expires", e)))
                .transpose()?,
            networks,
            group: self.group.clone(),
            rpm: self.rpm.map(|n| positive("rpm", n)).transpose()?,
            per_minute,
            concurrency: self
                .concurrency
                .map(|n| positive("concurrency", u64::from(n)).map(|_| n))
                .transpose()?,
            streams: self
                .streams
                .map(|n| positive("streams", u64::from(n)).map(|_| n))
                .transpose()?,
            daily_budget: self
                .daily_budget
                .as_deref()
                .map(|a| budget("daily_budget", a))
                .transpose()?,
            monthly_budget: self
                .monthly_budget
                .as_deref()
                .map(|a| budget("monthly_budget", a))
                .transpose()?,
            tasks_in_flight: self
                .tasks_in_flight
                .map(|n| positive("tasks_in_flight", u64::from(n)).map(|_| n))
                .transpose()?,
        };
        if change == PolicyChange::default() {
            return Err(OpError {
                kind: OpErrorKind::Invalid,
                field: None,
                message: "nothing to set: give models, endpoints, expires, ips, group, rpm, \
                          per_minute, concurrency, streams, daily_budget, monthly_budget or \
                          tasks_in_flight"
                    .into(),
            });
        }
        Ok(change)
    }
}

/// The policy of an account (id or name) or a key (id).
pub async fn policy(store: &Store, target: &str) -> Result<(PolicyHolder, AccessPolicy), OpError> {
    let holder = store.policy_holder(target).await?;
    let policy = store.policy(&holder).await?;
    Ok((holder, policy))
}

/// Sets fields of a policy (the others stay); `None` clears the whole policy.
pub async fn set_policy(
    store: &Store,
    actor: &Actor,
    target: &str,
    edit: Option<&PolicyEdit>,
) -> Result<(PolicyHolder, AccessPolicy), OpError> {
    let change = match edit {
        Some(edit) => Some(edit.validate(store).await?),
        None => None,
    };
    let (holder, before) = policy(store, target).await?;
    let after = match &change {
        Some(change) => {
            let mut policy = before.clone();
            policy.apply(change);
            policy
        }
        None => AccessPolicy::default(),
    };
    store.set_policy(&holder, &after).await?;
    let action = if change.is_some() {
        "policy.set"
    } else {
        "policy.clear"
    };
    let mut record = actor.change(action, views::holder_id(&holder));
    record.before = Some(views::json(&views::policy(&holder, &before)));
    record.after = Some(views::json(&views::policy(&holder, &after)));
    store.record_admin_change(&record).await?;
    Ok((holder, after))
}

fn multiplier(field: &'static str, text: &str) -> Result<Decimal, OpError> {
    let m: Decimal = text.trim().parse().map_err(|_| {
        OpError::invalid(
            field,
            format!("{text:?} is not a decimal number such as 0.8 or 1.5"),
        )
    })?;
    if m.is_sign_negative() {
        return Err(OpError::invalid(field, "a multiplier cannot be negative"));
    }
    Ok(m)
}

/// Creates or changes a price group: its multiplier, models' own multipliers (`model=x`
/// pairs), and models to drop back to the group's.
pub async fn set_group(
    store: &Store,
    actor: &Actor,
    name: &str,
    group_multiplier: Option<&str>,
    models: &[(String, String)],
    drop_models: &[String],
) -> Result<tollgate_store::PriceGroup, OpError> {
    if group_multiplier.is_none() && models.is_empty() && drop_models.is_empty() {
        return Err(OpError {
            kind: OpErrorKind::Invalid,
            field: None,
            message: "nothing to set: give a multiplier, a model's multiplier or a model to drop"
                .into(),
        });
    }
    let name = short_text("name", name, "a group name")?;
    let mut overrides = Vec::new();
    for (model, m) in models {
        overrides.push((model.trim().to_owned(), multiplier("model", m)?));
    }
    let before = store.price_group(&name).await.ok();
    match group_multiplier {
        Some(m) => {
            store
                .set_price_group(&name, multiplier("multiplier", m)?)
                .await?
        }
        None if before.is_none() => {
            return Err(OpError::invalid(
                "multiplier",
                format!("no price group {name:?}: create it with a multiplier"),
            ));
        }
        None => {}
    }
    for (model, m) in overrides {
        store.set_model_multiplier(&name, &model, Some(m)).await?;
    }
    for model in drop_models {
        store.set_model_multiplier(&name, model, None).await?;
    }
    let after = store.price_group(&name).await?;
    let mut change = actor.change("group.set", &name);
    change.before = before.as_ref().map(|g| views::json(&views::group(g)));
    change.after = Some(views::json(&views::group(&after)));
    store.record_admin_change(&change).await?;
    Ok(after)
}

/// Adds a version of `model`'s price (docs/architecture.md, "Prices"), effective from
/// `effective_from` (Unix milliseconds; now when `None`). Versions are never edited: this is
/// the only way a price changes besides the configuration. `known` are the configured models.
pub async fn set_price(
    store: &Store,
    actor: &Actor,
    known: &[&str],
    model: &str,
    tariff: &tollgate_billing::Tariff,
    effective_from: Option<i64>,
) -> Result<tollgate_store::StoredPrice, OpError> {
    if !known.contains(&model) {
        return Err(OpError {
            kind: OpErrorKind::NotFound,
            field: Some("model"),
            message: format!(
                "no model named {model:?} (prices are set for configured public models, not aliases)"
            ),
        });
    }
    let source = if actor.request_id.is_some() {
        "admin"
    } else {
        "cli"
    };
    let effective_from = effective_from.unwrap_or_else(tollgate_journal::clock::now_millis);
    let Some(before) = store.price_versions(Some(model)).await?.pop() else {
        // The first version is the configuration's, made when a gateway first starts with it.
        return Err(OpError {
            kind: OpErrorKind::Conflict,
            field: Some("model"),
            message: format!(
                "{model} has no price versions yet: start the gateway once, and its configuration's price becomes version 1"
            ),
        });
    };
    let stored = store
        .add_price_version(model, tariff, effective_from, source, Some(&actor.name))
        .await
        .map_err(|e| match e {
            StoreError::InvalidPrice(_) => OpError {
                field: Some("price"),
                ..OpError::from(e)
            },
            e => OpError::from(e),
        })?;
    let mut change = actor.change("price.set", model);
    change.before = Some(views::json(&views::price(&before)));
    change.after = Some(views::json(&views::price(&stored)));
    store.record_admin_change(&change).await?;
    Ok(stored)
}

/// Switches a channel off or on for every replica (they read the switch within
/// `tollgate_settings::channels::SWITCHES_EVERY`). `known` are the configured channels' names.
pub async fn set_channel_disabled(
    store: &Store,
    actor: &Actor,
    known: &[&str],
    name: &str,
    disabled: bool,
) -> Result<(), OpError> {
    if !known.contains(&name) {
        return Err(OpError {
            kind: OpErrorKind::NotFound,
            field: Some("name"),
            message: format!(
                "no channel named {name:?}; configured: {}",
                known.join(", ")
            ),
        });
    }
    store.set_channel_disabled(name, disabled).await?;
    let action = if disabled {
        "channel.disable"
    } else {
        "channel.enable"
    };
    let mut change = actor.change(action, name);
    change.after = Some(json!({"disabled": disabled}));
    store.record_admin_change(&change).await?;
    Ok(())
}

/// Reloads the configuration with `reload` (`docs/operations.md`, "Reloading the
/// configuration") and records a reload that changed something in the admin audit log, with
/// what it changed. A refusal names its reason; the settings in force keep serving.
pub async fn reload_config(
    store: &Store,
    actor: &Actor,
    reload: Option<&dyn Reload>,
) -> Result<Reloaded, OpError> {
    let Some(reload) = reload else {
        return Err(OpError {
            kind: OpErrorKind::Conflict,
            field: None,
            message: "this gateway was not started by `tollgate serve`: it has no configuration to read again".into(),
        });
    };
    let reloaded = reload.reload().await.map_err(|e| OpError {
        kind: match e {
            ReloadError::Prices(_) => OpErrorKind::Internal,
            _ => OpErrorKind::Invalid,
        },
        field: Some("config"),
        message: e.to_string(),
    })?;
    if !reloaded.changes.is_empty() {
        let mut change = actor.change("config.reload", &reloaded.source);
        change.after =
            Some(json!({"generation": reloaded.generation, "changes": reloaded.changes}));
        store.record_admin_change(&change).await.map_err(|e| OpError {
            kind: OpErrorKind::Internal,
            field: None,
            message: format!(
                "the configuration was reloaded (generation {}), but the admin audit log could not record it: {e}",
                reloaded.generation
            ),
        })?;
    }
    Ok(reloaded)
}

/// Cancels a live task and refunds its hold. `upstream` is the task's channel, asked to cancel
/// a queued task it has (clip format); whatever it answers — or when it cannot be asked — the
/// task ends here as failed and refunded: the operator decided the customer does not pay.
pub async fn cancel_task(
    store: &Store,
    actor: &Actor,
    id: &str,
    upstream: Option<(&tollgate_upstream::HttpClient, &tollgate_upstream::Endpoint)>,
) -> Result<tollgate_store::Task, OpError> {
    let not_found = || OpError {
        kind: OpErrorKind::NotFound,
        field: Some("id"),
        message: format!("no task {id:?}"),
    };
    let task = store.task(id).await?.ok_or_else(not_found)?;
    if task.state.is_terminal() {
        return Err(OpError {
            kind: OpErrorKind::Conflict,
            field: Some("id"),
            message: format!(
                "task {id} has ended ({}); there is nothing to cancel",
                task.state.as_str()
            ),
        });
    }
    let upstream_note = match (task.upstream_id.as_deref(), upstream, task.format.as_str()) {
        (Some(upstream_id), Some((http, endpoint)), "clip") => {
            match tollgate_upstream::adapters::ark::ark_delete(http, endpoint, upstream_id).await {
                Ok(()) => "the upstream cancelled it".to_owned(),
                Err(e) => format!("the upstream refused the cancel: {e}"),
            }
        }
        (None, _, _) => "not submitted upstream yet".to_owned(),
        _ => "the upstream was not asked (its format has no cancel, or it is out of reach)"
            .to_owned(),
    };
    let error = json!({
        "code": "cancelled",
        "message": "the task was cancelled by the operator and refunded",
    });
    if !store
        .finish_task(
            id,
            tollgate_store::Outcome::Failed { error },
            Some("cancelled"),
        )
        .await?
    {
        return Err(OpError {
            kind: OpErrorKind::Conflict,
            field: Some("id"),
            message: format!("task {id} ended while it was being cancelled"),
        });
    }
    let mut change = actor.change("task.cancel", id);
    change.before = Some(json!({"state": task.state}));
    change.after = Some(json!({"state": "failed", "refunded": true, "upstream": upstream_note}));
    store.record_admin_change(&change).await?;
    store.task(id).await?.ok_or_else(not_found)
}

/// A usage query as the CLI's flags and the API's query string give it.
#[derive(Debug, Clone, Default)]
pub struct UsageQuery {
    /// An account's id or name, or one of its keys' ids.
    pub account: Option<String>,
    /// A key's id.
    pub key: Option<String>,
    /// A public model.
    pub model: Option<String>,
    /// An endpoint name.
    pub endpoint: Option<String>,
    /// RFC 3339, or a UTC date.
    pub since: Option<String>,
    /// RFC 3339, or a UTC date.
    pub until: Option<String>,
    /// day, hour, model, key, endpoint or account.
    pub group_by: Option<String>,
}

impl UsageQuery {
    /// Checks the query and resolves its account.
    pub async fn filter(
        &self,
        store: &Store,
    ) -> Result<(UsageFilter, Option<UsageGroup>), OpError> {
        let group = self
            .group_by
            .as_deref()
            .map(|g| {
                UsageGroup::parse(g).ok_or_else(|| {
                    OpError::invalid(
                        "group_by",
                        format!("{g:?} is not one of day, hour, model, key, endpoint, account"),
                    )
                })
            })
            .transpose()?;
        if let Some(endpoint) = &self.endpoint
            && !POLICY_ENDPOINTS.contains(&endpoint.as_str())
        {
            return Err(OpError::invalid(
                "endpoint",
                format!("{endpoint:?} is not one of {}", POLICY_ENDPOINTS.join(", ")),
            ));
        }
        let account_id = match &self.account {
            Some(account) => Some(store.find_account(account).await.map_err(|e| OpError {
                field: Some("account"),
                ..OpError::from(e)
            })?),
            None => None,
        }
        .map(|a| a.id);
        let filter = UsageFilter {
            account_id,
            key_id: self.key.clone(),
            model: self.model.clone(),
            endpoint: self.endpoint.clone(),
            since: self
                .since
                .as_deref()
                .map(|t| parse_time("since", t))
                .transpose()?,
            until: self
                .until
                .as_deref()
                .map(|t| parse_time("until", t))
                .transpose()?,
        };
        Ok((filter, group))
    }
}

/// An RFC 3339 time, or a UTC date standing for its midnight.
pub fn parse_time(field: &'static str, text: &str) -> Result<i64, OpError> {
    let text = text.trim();
    let full = if text.len() == 10 {
        format!("{text}T00:00:00Z")
    } else {
        text.to_owned()
    };
    parse_rfc3339(&full).map_err(|_| {
        OpError::invalid(
            field,
            format!(
                "{text:?} is not an RFC 3339 time (2026-11-24T08:00:00Z) or a date (2026-11-24)"
            ),
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_or_a_date() {
        assert_eq!(parse_time("since", "1970-01-02").unwrap(), 86_400_000);
        assert_eq!(parse_time("since", "1970-01-01T00:00:01Z").unwrap(), 1_000);
        assert!(parse_time("since", "yesterday").is_err());
    }

    #[test]
    fn cli_errors_name_the_flag() {
        let e = OpError::invalid("daily_budget", "must be above 0");
        assert_eq!(e.for_cli(), "--daily-budget: must be above 0");
        assert_eq!(e.to_string(), "daily_budget: must be above 0");
    }

    #[test]
    fn lists_are_trimmed_and_not_empty() {
        let items = vec![" a ".to_owned(), "".to_owned(), "b*".to_owned()];
        assert_eq!(list("models", &items).unwrap(), vec!["a", "b*"]);
        assert!(list("models", &[" ".to_owned()]).is_err());
    }
}
