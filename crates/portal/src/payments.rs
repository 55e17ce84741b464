//! The portal's payment routes (docs/api.md, "The customer portal"; docs/decisions.md,
//! "Payments"): the terms a top-up is offered on, a top-up started on the provider's page, the
//! account's payments, and its automatic top-up. Every route reads and writes the session's
//! account only; what a payment does is `tollgate_payments`.

use crate::api::{Answer, Visit, about, answer, body_of, id_param, object, page, paged_of};
use http::{Request, StatusCode};
use hyper::body::Incoming;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tollgate_billing::Amount;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::About;
use tollgate_exchange::route_doc::{ok, r};
use tollgate_payments::topup::{self, Payer};
use tollgate_store::AutoTopup;

/// What top-ups are offered on (`GET /portal/v1/topups/terms`).
#[derive(Debug, Serialize)]
struct Terms {
    /// Whether top-ups are offered at all.
    offered: bool,
    currency: Option<String>,
    /// The currency's decimal places: payments' `amount_minor` ÷ 10^places is in the currency.
    places: Option<u32>,
    min_amount: Option<Decimal>,
    max_amount: Option<Decimal>,
    /// Balance units one unit of the currency buys.
    units_per_currency_unit: Option<Decimal>,
    /// The most automatic top-ups may charge in a day (0: not offered).
    max_automatic_per_day: Option<Decimal>,
    /// A card is saved for automatic top-ups.
    card_saved: bool,
}

/// `GET /portal/v1/topups/terms`.
pub async fn terms(visit: Visit, _: Request<Incoming>) -> Answer {
    let account_id = visit.account_id()?;
    let card_saved = visit
        .store()
        .payment_method(account_id)
        .await
        .map_err(|e| ApiError::internal("reading the saved card", e))?
        .is_some_and(|(_, card)| card.is_some());
    let terms = match visit.ctx.state.payments.as_deref() {
        Some(stripe) => Terms {
            offered: true,
            currency: Some(stripe.currency.code().to_owned()),
            places: Some(stripe.currency.places()),
            min_amount: Some(stripe.currency.from_minor(stripe.min_minor)),
            max_amount: Some(stripe.currency.from_minor(stripe.max_minor)),
            units_per_currency_unit: Some(stripe.rate),
            max_automatic_per_day: Some(stripe.currency.from_minor(stripe.max_automatic_minor)),
            card_saved,
        },
        None => Terms {
            offered: false,
            currency: None,
            places: None,
            min_amount: None,
            max_amount: None,
            units_per_currency_unit: None,
            max_automatic_per_day: None,
            card_saved,
        },
    };
    answer(StatusCode::OK, &terms)
}

/// The body of `POST /portal/v1/topups`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TopupRequest {
    /// In the currency's major unit, as a string (`"25.00"`).
    amount: Decimal,
    /// Keep the card for automatic top-ups.
    #[serde(default)]
    save_card: bool,
}

/// `POST /portal/v1/topups`: a payment, and the provider's page to pay it on.
pub async fn start(visit: Visit, request: Request<Incoming>) -> Answer {
    let origin = match &visit.ctx.state.portal.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => visit.ctx.origin(request.headers()).url(),
    };
    let asked: TopupRequest = visit.read(request).await?;
    let person = &visit.session()?.person;
    let payer = Payer {
        account_id: &person.account_id,
        person_id: &person.id,
        email: &person.email,
        origin: &origin,
    };
    let payment = topup::start(&visit.ctx.state, payer, asked.amount, asked.save_card).await?;
    answer(StatusCode::CREATED, &payment)
}

/// `GET /portal/v1/payments`: the account's payments, newest first.
pub async fn payments(visit: Visit, request: Request<Incoming>) -> Answer {
    let (limit, before) = page(request.uri().query());
    let rows = visit
        .store()
        .payments(Some(visit.account_id()?), before.as_deref(), limit)
        .await
        .map_err(|e| ApiError::internal("reading payments", e))?;
    let next = (rows.len() == limit as usize)
        .then(|| rows.last().map(|p| p.id.clone()))
        .flatten();
    answer(StatusCode::OK, &json!({"data": rows, "next_cursor": next}))
}

/// `GET /portal/v1/payments/{id}`: one of the account's payments; another account's is 404.
pub async fn payment(visit: Visit, _: Request<Incoming>) -> Answer {
    let not_found =
        || ApiError::new(ErrorKind::NotFound, "No such payment of this account").code("not_found");
    match visit.store().payment(&visit.param).await {
        Ok(payment) if payment.account_id == visit.account_id()? => {
            answer(StatusCode::OK, &payment)
        }
        Ok(_) | Err(tollgate_store::StoreError::NotFound(_)) => Err(not_found()),
        Err(e) => Err(ApiError::internal("reading a payment", e)),
    }
}

/// `GET /portal/v1/auto-topup`: the account's automatic top-up, `null` when never set.
pub async fn auto_topup(visit: Visit, _: Request<Incoming>) -> Answer {
    let topup = visit
        .store()
        .auto_topup(visit.account_id()?)
        .await
        .map_err(|e| ApiError::internal("reading the automatic top-up", e))?;
    answer(StatusCode::OK, &json!({"auto_topup": topup}))
}

/// The body of `PUT /portal/v1/auto-topup`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AutoTopupRequest {
    enabled: bool,
    /// Top up when the available balance falls below this (balance units).
    threshold: Amount,
    /// What each top-up charges, in the currency (`"20.00"`).
    amount: Decimal,
    /// The most charged in a day (UTC), in the currency.
    daily_cap: Decimal,
}

/// `PUT /portal/v1/auto-topup`: sets it, within the operator's limits (a pause ends).
pub async fn set_auto_topup(visit: Visit, request: Request<Incoming>) -> Answer {
    let asked: AutoTopupRequest = visit.read(request).await?;
    let stripe = topup::configured(&visit.ctx.state)?;
    let refuse = |param: &str, why: String| {
        ApiError::new(ErrorKind::InvalidRequest, why)
            .param(param)
            .code("invalid_auto_topup")
    };
    if stripe.max_automatic_minor == 0 {
        return Err(refuse(
            "enabled",
            "The operator does not offer automatic top-ups".into(),
        ));
    }
    // Refused as a top-up's amount is, naming `amount`.
    let amount_minor = topup::checked_amount(stripe, asked.amount)?;
    let daily_cap_minor = stripe
        .currency
        .to_minor(asked.daily_cap)
        .map_err(|e| refuse("daily_cap", format!("daily_cap: {e}")))?;
    if daily_cap_minor < amount_minor || daily_cap_minor > stripe.max_automatic_minor {
        return Err(refuse(
            "daily_cap",
            format!(
                "daily_cap must be at least amount and at most {} {}",
                stripe.currency.from_minor(stripe.max_automatic_minor),
                stripe.currency
            ),
        ));
    }
    if asked.threshold.is_negative() {
        return Err(refuse("threshold", "threshold must not be negative".into()));
    }
    let person = &visit.session()?.person;
    let set = visit
        .store()
        .set_auto_topup(&AutoTopup {
            account_id: person.account_id.clone(),
            threshold: asked.threshold,
            amount_minor,
            daily_cap_minor,
            enabled: asked.enabled,
            paused: None,
            updated_at: 0,
            updated_by: format!("portal:{}", person.email),
        })
        .await
        .map_err(|e| ApiError::internal("setting the automatic top-up", e))?;
    answer(StatusCode::OK, &json!({"auto_topup": set}))
}

// ---- the OpenAPI document ----

pub fn about_terms() -> About {
    about(
        "What top-ups are offered on: the currency, the least and most, the rate to balance units",
        object(),
    )
}

pub fn about_start() -> About {
    about(
        "Start a top-up: the payment, open, and checkout_url, the provider's page to pay it on",
        json!({"201": {"description": "Started", "content": {"application/json": {"schema": {"type": "object"}}}},
               "502": {"description": "The payment provider refused or could not be reached",
                   "content": {"application/json": {"schema": {"type": "object"}}}}}),
    )
    .body(body_of(
        json!({"amount": {"type": "string", "description": "In the currency, \"25.00\""},
               "save_card": {"type": "boolean", "description": "Keep the card for automatic top-ups"}}),
        &["amount"],
    ))
}

pub fn about_payments() -> About {
    paged_of("The account's payments, newest first", ok(r("PaymentPage")))
}

pub fn about_payment() -> About {
    about("One of the account's payments", ok(r("Payment")))
        .parameter(id_param("The payment's id (pay_…)"))
}

pub fn about_auto_topup() -> About {
    about("The account's automatic top-up", object())
}

pub fn about_set_auto_topup() -> About {
    about(
        "Set the automatic top-up: below threshold (balance units), amount is charged to the saved card, at most daily_cap a day",
        object(),
    )
    .body(body_of(
        json!({"enabled": {"type": "boolean"},
               "threshold": {"type": "string"}, "amount": {"type": "string"},
               "daily_cap": {"type": "string"}}),
        &["enabled", "threshold", "amount", "daily_cap"],
    ))
}
