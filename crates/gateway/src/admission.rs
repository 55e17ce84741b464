//! Admission: whether a request may go ahead, decided in one place (DESIGN §2 step 2 and the
//! model rule of step 4; `docs/architecture.md`, "Admission, in one home"). This module is the
//! only caller of the key lookup, the access policies' rules, the quota store and the upload
//! slots; what it admits is kept in the request's `Admission` (`ctx.admission`), beside — not
//! in — its usage record:
//!
//! - [`authenticate`], called by the service once for every client route: the key, its access
//!   policies' expiry, endpoint and network rules, and the key's rate and concurrency limits on a
//!   metered route;
//! - [`admit_model`]: the model rule, asked wherever a model is named (a hold, a model read, a
//!   token count);
//! - [`admit_spend`]: the caller's units and budgets against a priced estimate (for a hold);
//! - [`open_stream`]: the only way to a [`StreamPermit`], against the open-streams limits;
//! - [`upload_slot`]: one of the key's upload slots while a multipart body is read.

use http::Request;
use tollgate_billing::{Amount, Usage};
use tollgate_gateway_core::auth::{self, Lookup};
use tollgate_gateway_core::clock::now_millis;
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::{ApiError, ErrorKind, Family};
use tollgate_gateway_core::policy;
pub use tollgate_gateway_core::quotas::StreamPermit;
use tollgate_gateway_core::quotas::{Admitted, RateHeaders, UploadSlot};
use tollgate_gateway_core::routes::Credentials;
use tollgate_store::Principal;

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
    match auth::look_up(&state.keys, &state.store, &secret).await? {
        Lookup::Found(principal) => {
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
            // Rate limits, concurrency and open streams count metered requests (the ones
            // logged; a video's download or a media link holds no slot); what the admission
            // holds lives as long as the request, in its `Admission`.
            if ctx.route.metered {
                ctx.admission.note_caller(&principal.limited_by);
                let mut headers = RateHeaders::default();
                let admitted = state.quotas.admit_request(&principal, &mut headers).await;
                ctx.admission.note_rate_headers(&headers);
                if let Some(admitted) = admitted? {
                    ctx.admission.keep(admitted);
                }
            }
            Ok(principal)
        }
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

/// One of the caller's key's upload slots (`[server] max_uploads_per_key`), held while a
/// multipart body is read.
pub fn upload_slot(ctx: &RequestCtx, principal: &Principal) -> Result<UploadSlot, ApiError> {
    let state = &ctx.state;
    state
        .uploads
        .admit(&principal.key_id, state.server.max_uploads_per_key)
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
