//! The portal's balance alerts (docs/decisions.md, "Balance alerts a customer sets"; docs/api.md,
//! "The customer portal"): a person of an account sets a threshold of its balance, and the
//! gateway posts a signed event to the person's webhook when the balance falls below it (and
//! again when it comes back), judged beside the operator's rules (`tollgate-alerting`). The
//! portal shows a banner while the balance is below any of them.
//!
//! The webhook URL is the customer's, so it passes the address rule for customers
//! (`Outbound::check_customer`): a public host, never one the operator trusts for itself.
//! A `standard` alert is signed with a secret the gateway draws, shown once in the answer that
//! makes it.

use crate::api::{Answer, Visit, about, actor_change, answer, body_of, id_param, object};
use http::{Request, StatusCode};
use hyper::body::Incoming;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tollgate_alerts::{Format, Secret};
use tollgate_billing::Amount;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{About, described, ok, r};
use tollgate_store::{BalanceAlert, MAX_BALANCE_ALERTS, NewBalanceAlert};

/// The longest webhook URL taken.
const MAX_URL: usize = 2048;

/// An alert as the portal shows it: whether the balance is below it now.
#[derive(Debug, Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    alert: &'a BalanceAlert,
    /// The account's balance is below the threshold now.
    below: bool,
}

/// `GET /portal/v1/balance-alerts`: the account's alerts, the balance, and which are below.
pub async fn list(visit: Visit, _: Request<Incoming>) -> Answer {
    let account_id = visit.account_id()?;
    let store = visit.store();
    let account = store
        .find_account(account_id)
        .await
        .map_err(|e| ApiError::internal("reading the account", e))?;
    let alerts = store
        .balance_alerts(account_id)
        .await
        .map_err(|e| ApiError::internal("reading balance alerts", e))?;
    let shown: Vec<Shown> = alerts
        .iter()
        .map(|alert| Shown {
            alert,
            below: account.balance < alert.threshold,
        })
        .collect();
    answer(
        StatusCode::OK,
        &json!({"balance": account.balance, "data": shown, "most": MAX_BALANCE_ALERTS}),
    )
}

/// The body of `POST /portal/v1/balance-alerts`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AlertRequest {
    /// Fires when the balance falls below this (balance units, at least 0).
    threshold: Amount,
    /// Where events are posted; none: the portal's banner only.
    #[serde(default)]
    webhook_url: Option<String>,
    /// `standard` (the default; signed) or `slack` (an incoming webhook's URL).
    #[serde(default)]
    format: Option<String>,
}

/// `POST /portal/v1/balance-alerts`: a new alert; a `standard` one's signing secret is in this
/// answer only.
pub async fn create(visit: Visit, request: Request<Incoming>) -> Answer {
    let asked: AlertRequest = visit.read(request).await?;
    let refuse = |param: &str, why: String| {
        ApiError::new(ErrorKind::InvalidRequest, why)
            .param(param)
            .code("invalid_balance_alert")
    };
    if asked.threshold.is_negative() {
        return Err(refuse("threshold", "threshold must not be negative".into()));
    }
    let format = match asked.format.as_deref() {
        None => Format::Standard,
        Some(name) => Format::parse(name)
            .ok_or_else(|| refuse("format", "format must be \"standard\" or \"slack\"".into()))?,
    };
    let url = asked
        .webhook_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty());
    if let Some(url) = url {
        if url.len() > MAX_URL {
            return Err(refuse(
                "webhook_url",
                format!("webhook_url is at most {MAX_URL} characters"),
            ));
        }
        let state = &visit.ctx.state;
        state
            .outbound
            .check_customer(url, &state.portal.alert_hosts)
            .map_err(|e| refuse("webhook_url", format!("webhook_url: {e}")))?;
    } else if asked.format.is_some() {
        return Err(refuse(
            "format",
            "format is how events are posted: it needs a webhook_url".into(),
        ));
    }
    // Only what is posted is signed: a Slack URL carries its own secret.
    let secret = (url.is_some() && format == Format::Standard).then(|| {
        let mut random = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut random);
        Secret::from_random(random).reveal()
    });
    let person = &visit.session()?.person;
    let created_by = format!("portal:{}", person.email);
    let made = visit
        .store()
        .create_balance_alert(&NewBalanceAlert {
            account_id: &person.account_id,
            threshold: asked.threshold,
            webhook_url: url,
            format: format.as_str(),
            secret: secret.as_deref(),
            created_by: &created_by,
        })
        .await
        .map_err(|e| ApiError::internal("adding a balance alert", e))?
        .ok_or_else(|| {
            ApiError::new(
                ErrorKind::InvalidRequest,
                format!(
                    "An account has at most {MAX_BALANCE_ALERTS} balance alerts; delete one first"
                ),
            )
            .code("too_many_balance_alerts")
        })?;
    visit
        .store()
        .record_admin_change(&actor_change(&visit, "balance_alert.create", &made.id)?)
        .await
        .map_err(|e| ApiError::internal("recording the change", e))?;
    let mut shown = serde_json::to_value(&made)
        .map_err(|e| ApiError::internal("answering the balance alert", e))?;
    if let (Some(secret), Some(fields)) = (&secret, shown.as_object_mut()) {
        fields.insert("signing_secret".into(), json!(secret));
    }
    answer(StatusCode::CREATED, &shown)
}

/// `DELETE /portal/v1/balance-alerts/{id}`: one of the account's alerts, gone with its
/// deliveries not yet made; another account's is 404.
pub async fn delete(visit: Visit, _: Request<Incoming>) -> Answer {
    let deleted = visit
        .store()
        .delete_balance_alert(visit.account_id()?, &visit.param)
        .await
        .map_err(|e| ApiError::internal("deleting a balance alert", e))?;
    if !deleted {
        return Err(
            ApiError::new(ErrorKind::NotFound, "No such balance alert of this account")
                .param("id")
                .code("not_found"),
        );
    }
    visit
        .store()
        .record_admin_change(&actor_change(&visit, "balance_alert.delete", &visit.param)?)
        .await
        .map_err(|e| ApiError::internal("recording the change", e))?;
    answer(StatusCode::OK, &json!({"id": visit.param, "deleted": true}))
}

// ---- the OpenAPI document ----

pub fn about_list() -> About {
    let alert = json!({"allOf": [r("BalanceAlert"),
        {"type": "object", "required": ["below"], "properties": {"below": {"type": "boolean"}}}]});
    about(
        "The account's balance alerts, its balance, and which alerts it is below now",
        ok(
            json!({"type": "object", "required": ["balance", "data", "most"], "properties": {
            "balance": {"type": "string"}, "most": {"type": "integer"},
            "data": {"type": "array", "items": alert}}}),
        ),
    )
}

pub fn about_create() -> About {
    about(
        "A new balance alert: below threshold, a signed event to webhook_url (its signing_secret in this answer only) and a banner in the portal",
        json!({"201": described(json!({"allOf": [r("BalanceAlert"), {"type": "object",
            "properties": {"signing_secret": {"type": "string", "pattern": "^whsec_"}}}]}), "Created")}),
    )
    .body(body_of(
        json!({"threshold": {"type": "string", "description": "Balance units, at least 0"},
               "webhook_url": {"type": "string", "maxLength": MAX_URL},
               "format": {"type": "string", "enum": ["standard", "slack"]}}),
        &["threshold"],
    ))
}

pub fn about_delete() -> About {
    about("Delete one of the account's balance alerts", object())
        .parameter(id_param("The alert's id (bal_…)"))
}
