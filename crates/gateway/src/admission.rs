//! Admission: whether a request may go ahead, and the hold it goes ahead under — decided in one
//! place (DESIGN §2 steps 2, 4 and 5; `docs/architecture.md`, "Admission, in one home"). This
//! module is the only caller of the key lookup, the access policies' rules, the quota store, the
//! upload slots and the ledger engine's holds; what it admits is kept in the request's
//! `Admission` (`ctx.admission`), beside — not in — its usage record:
//!
//! - [`authenticate`], called by the service once for every client route: the key, its access
//!   policies' expiry, endpoint and network rules, and the key's rate and concurrency limits on a
//!   metered route;
//! - [`admit_model`]: the model rule, asked wherever a model is named (a hold, a model read, a
//!   token count);
//! - [`admit`]: the model rule, the model's tariff as the caller pays it ([`priced`]) and the
//!   caller's units and budgets against the estimate ([`admit_spend`]) — what every hold starts
//!   from;
//! - [`place_hold`]: [`admit`], then the amount held on the ledger engine before the upstream
//!   call; settling or releasing it (step 8) is [`crate::hold`]. How a refusal reaches the
//!   client ([`hold_refused`], [`insufficient`], [`store_refused`]) is here too;
//! - [`open_stream`]: the only way to a [`StreamPermit`], against the open-streams limits;
//! - [`upload_slot`]: one of the key's upload slots while a multipart body is read.

use crate::hold::{HeldCharge, Holder, Priced};
use http::Request;
use std::sync::Arc;
use tollgate_billing::{Amount, Usage};
use tollgate_exchange::errors::{ApiError, ErrorKind, Family};
use tollgate_journal::clock::now_millis;
use tollgate_ledger::Refusal;
use tollgate_request::auth::{self, Lookup};
use tollgate_request::context::RequestCtx;
use tollgate_request::live::LiveSlot;
use tollgate_request::policy;
pub use tollgate_request::quotas::StreamPermit;
use tollgate_request::quotas::{Admitted, RateHeaders};
use tollgate_request::routes::{Credentials, Route};
use tollgate_request::slots::KeySlot;
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::prices::Price;
use tollgate_store::{Principal, Redeemed, StoreError, is_client_secret};

/// Authenticates a request: the key must exist and be enabled, with its account, and the
/// request must pass their access policies' expiry, endpoint and network rules (the model rule
/// is checked where the model is known: [`admit_model`]). On a metered route the request then
/// takes its place under the key's rate and concurrency limits, held in its `Admission` until
/// the request ends.
pub async fn authenticate<B>(
    ctx: &RequestCtx,
    request: &Request<B>,
) -> Result<Principal, ApiError> {
    let state = &ctx.state;
    // The row says how its clients present their key (docs/api.md §5).
    let Credentials::Key(family) = ctx.route.credentials else {
        return Err(ApiError::new(
            ErrorKind::Internal,
            "This route takes no client key",
        ));
    };
    let (headers, query) = (request.headers(), request.uri().query());
    let Some(secret) = auth::presented_secret(family, headers, query) else {
        return Err(ApiError::new(
            ErrorKind::MissingCredential,
            match family {
                Family::Google => {
                    "Method doesn't allow unregistered callers: pass your key in x-vendor-api-key, x-goog-api-key or ?key="
                }
                _ => "You didn't provide an API key: pass it as 'Authorization: Bearer YOUR_KEY'",
            },
        ));
    };
    // A live session may be opened with an ephemeral secret its key minted (docs/api.md §2.11,
    // §2.12).
    if matches!(ctx.route.route, Route::Realtime | Route::GeminiLive) && is_client_secret(&secret) {
        let principal = client_secret_principal(ctx, &secret).await?;
        return admit_principal(ctx, principal, family).await;
    }
    match auth::look_up(&state.keys, &state.store, &secret).await? {
        Lookup::Found(principal) => admit_principal(ctx, principal, family).await,
        Lookup::Unknown => Err(ApiError::new(
            ErrorKind::InvalidCredential,
            match family {
                // The vendor's own words; its SDK shows them as they are.
                Family::Google => "API key not valid. Please pass a valid API key.".to_owned(),
                _ => format!("Incorrect API key provided: {}", auth::redact(&secret)),
            },
        )),
        Lookup::Disabled => Err(ApiError::new(
            ErrorKind::Forbidden,
            "This API key or its account has been disabled",
        )),
    }
}

/// The key a client secret stands for, one of the secret's sessions taken now (whatever comes
/// of the rest of the request): refused like a wrong key when it is unknown, expired or spent,
/// or when its key is gone; a disabled key's secret is refused as the key is.
async fn client_secret_principal(ctx: &RequestCtx, secret: &str) -> Result<Principal, ApiError> {
    let refused = |message: &str| {
        ApiError::new(ErrorKind::InvalidCredential, message).code("invalid_client_secret")
    };
    let store = &ctx.state.store;
    let redeemed = store
        .redeem_client_secret(secret)
        .await
        .map_err(|e| ApiError::internal("reading a client secret", e))?;
    let key_id = match redeemed {
        Redeemed::Opened { key_id, .. } => key_id,
        Redeemed::Unknown => return Err(refused("Incorrect client secret provided")),
        Redeemed::Expired => return Err(refused("The client secret has expired")),
        Redeemed::Spent => {
            return Err(refused(
                "The client secret has opened all the sessions it may",
            ));
        }
    };
    match store.principal_of_key(&key_id).await {
        Ok(Some(principal)) => Ok(principal),
        Ok(None) | Err(StoreError::Revoked(_)) => Err(refused(
            "The key that minted this client secret no longer exists",
        )),
        Err(StoreError::Disabled(_)) => Err(disabled()),
        Err(e) => Err(ApiError::internal("reading the key of a client secret", e)),
    }
}

/// Admits an authenticated `principal` presenting its key as `family` says: its access
/// policies' expiry, endpoint and network rules, then — on a metered route — its place under
/// the key's rate and concurrency limits, held in the request's `Admission`.
pub async fn admit_principal(
    ctx: &RequestCtx,
    principal: Principal,
    family: Family,
) -> Result<Principal, ApiError> {
    let span = tracing::Span::current();
    span.record("tollgate.account", principal.account_name.as_str());
    span.record("tollgate.key", principal.key_id.as_str());
    ctx.note_principal(&principal);
    policy::admit(
        &principal,
        ctx.route.policy,
        ctx.client,
        family,
        now_millis(),
    )?;
    // Rate limits, concurrency and open streams count metered requests (the ones logged; a
    // video's download or a media link holds no slot); what the admission holds lives as long
    // as the request, in its `Admission`.
    if ctx.route.metered {
        ctx.admission.note_caller(&principal.limited_by);
        let mut headers = RateHeaders::default();
        let admitted = ctx
            .state
            .quotas
            .admit_request(&principal, &mut headers)
            .await;
        ctx.admission.note_rate_headers(&headers);
        if let Some(admitted) = admitted? {
            ctx.admission.keep(admitted);
        }
    }
    Ok(principal)
}

/// Admits the client stream the request is about to open, against the open-streams limits of
/// its account and key: the permit — which the stream's sender owns — holds the slot until the
/// stream's last frame. Called before the upstream call.
pub fn open_stream(ctx: &RequestCtx) -> Result<StreamPermit, ApiError> {
    let limited_by = ctx.admission.limited_by();
    ctx.state.quotas.admit_stream(limited_by.as_deref())
}

/// The model rule of the caller's access policies, for `model` (the public name, aliases
/// resolved): a 403 naming the model, before any hold or upstream call.
pub fn admit_model(principal: &Principal, model: &str) -> Result<(), ApiError> {
    policy::admit_model(principal, model)
}

/// Admits a priced estimate (`amount` for `estimate`) against the caller's units and budgets;
/// the rate figures go to the answer's headers. What it takes is settled with the charge (the
/// hold keeps it).
pub async fn admit_spend(
    ctx: &RequestCtx,
    principal: &Principal,
    estimate: &Usage,
    amount: Amount,
) -> Result<Option<Admitted>, ApiError> {
    let mut headers = RateHeaders::default();
    let spend = ctx
        .state
        .quotas
        .admit_spend(principal, estimate, amount, &mut headers)
        .await;
    ctx.admission.note_rate_headers(&headers);
    spend
}

/// Admits `usage` on its meter's per-minute quotas alone (a live session's audio seconds,
/// `Quotas::admit_units`).
pub async fn admit_units(
    ctx: &RequestCtx,
    principal: &Principal,
    usage: &Usage,
) -> Result<Option<Admitted>, ApiError> {
    let mut headers = RateHeaders::default();
    let admitted = ctx
        .state
        .quotas
        .admit_units(principal, usage, &mut headers)
        .await;
    ctx.admission.note_rate_headers(&headers);
    admitted
}

/// Admits a request for `images` images on the caller's images-per-minute quotas
/// (`Quotas::admit_images`), before its hold: a refusal is `rate_limit_exceeded`.
pub async fn admit_images(
    ctx: &RequestCtx,
    principal: &Principal,
    images: u64,
) -> Result<Option<Admitted>, ApiError> {
    let mut headers = RateHeaders::default();
    let admitted = ctx
        .state
        .quotas
        .admit_images(principal, images, &mut headers)
        .await;
    ctx.admission.note_rate_headers(&headers);
    admitted
}

/// One of the caller's key's upload slots (`[server] max_uploads_per_key`), held while a
/// multipart body is read.
pub fn upload_slot(ctx: &RequestCtx, principal: &Principal) -> Result<KeySlot, ApiError> {
    let max = ctx.state.server.max_uploads_per_key;
    ctx.state
        .uploads
        .admit(&principal.key_id, max)
        .ok_or_else(|| too_many("uploads in flight", max))
}

/// A live session's place among the key's (`[realtime] max_sessions_per_key`), counted for
/// `/metrics` and told when the replica drains.
pub fn live_slot(ctx: &RequestCtx, principal: &Principal) -> Result<LiveSlot, ApiError> {
    let max = ctx.state.realtime.max_sessions_per_key;
    ctx.state
        .live
        .enter(&principal.key_id, max)
        .ok_or_else(|| too_many("live sessions open", max))
}

/// The 429 of a key at its cap of `what`.
fn too_many(what: &str, max: usize) -> ApiError {
    ApiError::too_many(
        what,
        "key",
        u32::try_from(max).unwrap_or(u32::MAX),
        "; retry when one finishes",
        1,
    )
}

/// Whether the request's client may reach the operator's side at all (`[server]
/// admin_networks`): the admin API, the console, `/metrics` and `/openapi.json`. Checked before
/// any token, so that a network that may not administer learns nothing about tokens.
pub fn operator_reachable(ctx: &RequestCtx) -> Result<(), ApiError> {
    let allowed = &ctx.state.server.admin_networks;
    if allowed.is_empty()
        || ctx
            .client
            .is_some_and(|ip| allowed.iter().any(|n| n.contains(ip)))
    {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorKind::Forbidden,
        "The operator's side (the admin API, the console, /metrics and /openapi.json) is not reachable from this network",
    )
    .code("network_not_allowed"))
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
    admit_model(principal, model)?;
    let (tariff, price_group) = crate::hold::priced(principal, model, &price.tariff)?;
    let amount = tariff
        .charge(estimate)
        .map_err(|e| ApiError::internal("pricing the request", e))?;
    ctx.note(|record| record.hold = amount);
    let spend = admit_spend(ctx, principal, estimate, amount).await?;
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
pub async fn place_hold(
    ctx: &RequestCtx,
    principal: &Principal,
    entry: &Arc<ModelEntry>,
    estimate: &Usage,
) -> Result<HeldCharge, ApiError> {
    let price = ctx.state.prices.at(
        &entry.public,
        &entry.tariff,
        tollgate_journal::clock::now_millis(),
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
