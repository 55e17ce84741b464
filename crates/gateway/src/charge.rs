//! A hold placed as the request flow places it (DESIGN §2 step 5): the model rule, the model's
//! tariff as the caller pays it, the caller's units and budgets admitted, and the amount held on
//! the ledger engine before the upstream call. Settling or releasing it (step 8) is
//! [`crate::hold`]; how a refusal reaches the client is here.

use crate::hold::{HeldCharge, Holder, Priced};
use std::sync::Arc;
use tollgate_billing::{Amount, Tariff, Usage};
use tollgate_gateway_core::catalog::ModelEntry;
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::{ApiError, ErrorKind};
use tollgate_gateway_core::prices::Price;
use tollgate_ledger::Refusal;
use tollgate_store::{PriceGroup, Principal};

/// `model`'s tariff as `principal` pays it — the list tariff scaled by its price group's
/// multiplier for that model (`docs/decisions.md`, "Price groups") — and the group as priced
/// (its name and that one multiplier, for the ledger row); the list tariff without a group.
pub fn priced(
    principal: &Principal,
    model: &str,
    list: &Tariff,
) -> Result<(Tariff, Option<Arc<PriceGroup>>), ApiError> {
    let Some(group) = &principal.price_group else {
        return Ok((list.clone(), None));
    };
    let tariff = list
        .scaled(group.multiplier_for(model))
        .map_err(|e| ApiError::internal("pricing the request in its price group", e))?;
    // The common case (no model of its own) shares the group; an override is its own.
    let as_priced = if group.models.contains_key(model) {
        Arc::new(group.for_model(model))
    } else {
        group.clone()
    };
    Ok((tariff, Some(as_priced)))
}

/// Prices `estimate` of `model` (a public name) for the caller at `price` (the version in
/// effect, `Prices::at`) and admits it against the caller's units and budgets, noting the
/// model, the hold and the rate headers on the request's record: what every hold — a
/// request's in memory, a task's with its row — starts from. The model rule of the access
/// policies comes first: no hold, so no upstream call, for a model the key may not use.
pub async fn admit(
    ctx: &RequestCtx,
    principal: &Principal,
    model: &str,
    price: &Price,
    estimate: &Usage,
) -> Result<Priced, ApiError> {
    tracing::Span::current().record("gen_ai.request.model", model);
    ctx.note(|record| {
        record.model = Some(model.to_owned());
        record.price_version = price.version;
    });
    crate::admission::admit_model(principal, model)?;
    let (tariff, price_group) = priced(principal, model, &price.tariff)?;
    let amount = tariff
        .charge(estimate)
        .map_err(|e| ApiError::internal("pricing the request", e))?;
    ctx.note(|record| record.hold = amount);
    let spend = crate::admission::admit_spend(ctx, principal, estimate, amount).await?;
    Ok(Priced {
        tariff,
        price_group,
        price_version: price.version,
        amount,
        spend,
    })
}

/// Prices `estimate` with the model's tariff and holds that much of the caller's balance
/// ([`admit`] first). A balance that does not cover it is a 429 `insufficient_quota`, before
/// any upstream call.
pub async fn place(
    ctx: &RequestCtx,
    principal: &Principal,
    entry: &Arc<ModelEntry>,
    estimate: &Usage,
) -> Result<HeldCharge, ApiError> {
    let price = ctx.state.prices.at(
        &entry.public,
        &entry.tariff,
        tollgate_gateway_core::clock::now_millis(),
    );
    let priced = admit(ctx, principal, &entry.public, &price, estimate).await?;
    let hold = ctx
        .state
        .ledger
        .hold(&principal.account_id, priced.amount)
        .await
        .map_err(hold_refused)?;
    let holder = Holder {
        key_id: principal.key_id.clone(),
        request_id: ctx.request_id.clone(),
        usage: ctx.usage.clone(),
        admission: ctx.admission.clone(),
    };
    Ok(HeldCharge::new(
        ctx.state.clone(),
        hold,
        entry.clone(),
        priced,
        holder,
    ))
}

/// How a hold the ledger refused reaches the client: a balance that does not cover it is a 429
/// `insufficient_quota` (before any upstream call), a disabled account 403, and a database that
/// did not answer in time (a partition, an overloaded server) 503 with `Retry-After`: nothing
/// was held or sent upstream, and another replica may well serve it.
pub fn hold_refused(refusal: Refusal) -> ApiError {
    match refusal {
        Refusal::Insufficient {
            available,
            requested,
        } => insufficient(available, requested),
        Refusal::Disabled => disabled(),
        Refusal::Unavailable(why) => {
            tracing::warn!(reason = %why, "no credit: the ledger database did not answer");
            ApiError::new(
                ErrorKind::Unavailable,
                "The gateway could not reach its ledger database in time; nothing was charged. Retry shortly",
            )
            .retry_after(1)
        }
        other => ApiError::internal("placing a hold on the balance", other),
    }
}

/// The 429 for a balance that does not cover a hold.
pub fn insufficient(available: Amount, requested: Amount) -> ApiError {
    ApiError::new(
        ErrorKind::InsufficientBalance,
        format!(
            "You exceeded your current quota: this request needs {requested} and the balance has {available} available. Please add credit to your account."
        ),
    )
    .code("insufficient_quota")
}

/// The 403 for a disabled account or key.
pub fn disabled() -> ApiError {
    ApiError::new(
        ErrorKind::Forbidden,
        "This API key or its account has been disabled",
    )
}

/// How a hold the store refused (a video task's, placed with its row) reaches the client.
pub fn store_refused(e: tollgate_store::StoreError) -> ApiError {
    match e {
        tollgate_store::StoreError::InsufficientBalance {
            available,
            requested,
        } => insufficient(available, requested),
        tollgate_store::StoreError::Disabled(_) => disabled(),
        tollgate_store::StoreError::TooManyTasks { holder, limit } => ApiError::too_many(
            "video tasks in flight",
            holder,
            limit,
            "; retry when one finishes",
            10,
        ),
        e => ApiError::internal("placing a hold on the balance", e),
    }
}
