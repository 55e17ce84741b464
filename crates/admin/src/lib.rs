//! # tollgate-admin
//!
//! The operator's side: the admin API under `/admin/v1/` (`docs/decisions.md`, "The admin
//! API"; `docs/operations.md`), the OpenAPI document and the console — a crate of its own that
//! the request path (`tollgate-gateway`) does not depend on, standing on the floor
//! (`tollgate-gateway-core`) and the store alone. The binary mounts [`Admin`] on the
//! gateway (`Gateway::with_operator_side`); the CLI runs [`ops`] directly.
//!
//! Every request is authenticated by an admin token (`tga-…`, made with `tollgate admin token
//! create`): a read-only token may only read. Client API keys are refused here, as admin tokens
//! are on client routes. Changes go through [`ops`], the code the CLI runs too, and each is
//! recorded in the admin audit log. Errors take the OpenAI shape
//! (`{"error":{"message","type","param","code"}}`), with `param` naming the field.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod alerts;
pub mod console;
pub mod openapi;
pub mod ops;
pub mod routes;
pub mod views;

use futures_util::future::BoxFuture;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use ops::{Actor, OpError, OpErrorKind, PolicyEdit, UsageQuery};
use routes::{AdminOp, Holder, Routed};
use serde_json::{Value, json};
use std::sync::Arc;
use tollgate_gateway_core::auth::query_param;
use tollgate_gateway_core::body::{self, ResponseBody};
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::{ApiError, ErrorKind};
use tollgate_gateway_core::operator::OperatorSide;
use tollgate_gateway_core::reload::Reload;
use tollgate_gateway_core::routes::{Route, RouteSpec};
use tollgate_store::{AdminToken, TaskState, UsageGroup};

/// The operator's side, as mounted on a gateway: the admin API, the console and the OpenAPI
/// document, each on its route.
#[derive(Debug, Clone)]
pub struct Admin {
    /// What `POST /admin/v1/config/reload` calls; without one (a gateway assembled without a
    /// configuration file to read again) the route says so.
    reload: Option<Arc<dyn Reload>>,
    /// The OpenAPI document, built once.
    document: bytes::Bytes,
}

impl Admin {
    /// The operator's side of a gateway serving `routes` (every row of its route table,
    /// `tollgate_gateway::routes::specs`), reloading the configuration with `reload`.
    pub fn new(reload: Option<Arc<dyn Reload>>, routes: &[&RouteSpec]) -> Admin {
        Admin {
            reload,
            document: openapi::bytes(routes),
        }
    }
}

impl OperatorSide for Admin {
    fn serve(
        &self,
        ctx: RequestCtx,
        request: Request<Incoming>,
    ) -> BoxFuture<'static, Result<Response<ResponseBody>, ApiError>> {
        let reload = self.reload.clone();
        let document = self.document.clone();
        Box::pin(async move {
            match ctx.route.route {
                Route::OpenApi => Ok(openapi::response(document)),
                Route::Console => Ok(console::asset(request.uri().path())),
                _ => handle(ctx, request, reload.as_deref()).await,
            }
        })
    }
}

/// The largest admin request body: a few fields, never a file.
const MAX_BODY: usize = 64 * 1024;
/// Page sizes: default and ceiling.
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 1000;

impl From<OpError> for ApiError {
    fn from(e: OpError) -> ApiError {
        let kind = match e.kind {
            OpErrorKind::Invalid => ErrorKind::InvalidRequest,
            OpErrorKind::NotFound => ErrorKind::NotFound,
            OpErrorKind::Conflict => ErrorKind::Conflict,
            OpErrorKind::Internal => ErrorKind::Internal,
        };
        let mut error = ApiError::new(kind, e.to_string());
        if let Some(field) = e.field {
            error = error.param(field);
        }
        if kind == ErrorKind::InvalidRequest {
            error = error.code("invalid_value");
        }
        error
    }
}

/// Handles a request under `/admin/v1/`.
pub async fn handle(
    ctx: RequestCtx,
    request: Request<Incoming>,
    reload: Option<&dyn Reload>,
) -> Result<Response<ResponseBody>, ApiError> {
    let token = authenticate(&ctx, request.headers()).await?;
    let method = request.method().clone();
    if token.read_only && method != Method::GET {
        return Err(ApiError::new(
            ErrorKind::Forbidden,
            format!(
                "The admin token {:?} is read-only; {method} needs a full token",
                token.name
            ),
        )
        .code("read_only_token"));
    }
    let actor = Actor {
        name: format!("token:{}", token.name),
        request_id: Some(ctx.request_id.clone()),
    };
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or_default().to_owned();
    let rest = path.strip_prefix("/admin/v1").unwrap_or_default();
    let Some(Routed { op, param: id }) = routes::route(&method, rest) else {
        return Err(ApiError::new(
            ErrorKind::NotFound,
            format!("Unknown admin route: {method} {path}; see GET /openapi.json"),
        )
        .code("unknown_url"));
    };
    let store = &ctx.state.store;
    let q = |name: &str| query_param(&query, name).filter(|v| !v.is_empty());
    let ok = |value: Value| Ok(body::json_response(StatusCode::OK, &value));
    match op {
        AdminOp::ListAccounts => {
            let limit = limit(q("limit"))?;
            let before = q("before");
            let (total, accounts) = store
                .accounts_page(q("search").as_deref(), limit, before.as_deref())
                .await
                .map_err(OpError::from)?;
            let next = next_cursor(&accounts, limit, |a| a.id.clone());
            ok(json!({
                "data": accounts.iter().map(views::account).collect::<Vec<_>>(),
                "total": total,
                "next_cursor": next,
            }))
        }
        AdminOp::CreateAccount => {
            let input: NewAccount = read_json(&ctx, request).await?;
            let (account, key) = ops::create_account(
                store,
                &actor,
                &input.name,
                input.balance.as_deref().unwrap_or("0"),
            )
            .await?;
            Ok(body::json_response(
                StatusCode::CREATED,
                &json!({"account": views::account(&account), "key": {"id": key.id, "secret": key.secret}}),
            ))
        }
        AdminOp::Account => ok(account_detail(store, id).await?),
        AdminOp::DisableAccount | AdminOp::EnableAccount => {
            let disable = op == AdminOp::DisableAccount;
            let account = ops::set_account_disabled(store, &actor, id, disable).await?;
            ctx.state.keys.clear();
            ok(views::account(&account))
        }
        AdminOp::Credit => {
            let idempotency_key = header_text(request.headers(), "idempotency-key")?;
            let input: NewCredit = read_json(&ctx, request).await?;
            let credited = ops::credit(
                store,
                &actor,
                id,
                &input.amount,
                &input.reason,
                input.allow_negative,
                idempotency_key.as_deref(),
            )
            .await?;
            let status = if credited.replayed {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            let mut response = body::json_response(
                status,
                &json!({
                    "ledger_id": credited.ledger_id,
                    "account": views::account(&credited.account),
                    "replayed": credited.replayed,
                }),
            );
            if credited.replayed {
                response.headers_mut().insert(
                    "idempotent-replayed",
                    header::HeaderValue::from_static("true"),
                );
            }
            Ok(response)
        }
        AdminOp::AccountKeys => {
            let account = store.find_account(id).await.map_err(OpError::from)?;
            let keys = store
                .account_keys(&account.id)
                .await
                .map_err(OpError::from)?;
            ok(json!({"data": keys}))
        }
        AdminOp::AddKey => {
            let input: NewKeyInput = read_json(&ctx, request).await?;
            let name = input.name.as_deref().unwrap_or("default");
            let (account, key) = ops::add_key(store, &actor, id, name).await?;
            Ok(body::json_response(
                StatusCode::CREATED,
                &json!({"id": key.id, "secret": key.secret, "account_id": account.id, "name": name}),
            ))
        }
        AdminOp::Ledger => {
            let account = store.find_account(id).await.map_err(OpError::from)?;
            let limit = limit(q("limit"))?;
            let rows = store
                .ledger_page(&account.id, limit, q("before").as_deref())
                .await
                .map_err(OpError::from)?;
            let next = next_cursor(&rows, limit, |r| r.id.clone());
            ok(json!({
                "data": rows.iter().map(views::ledger_entry).collect::<Vec<_>>(),
                "next_cursor": next,
            }))
        }
        AdminOp::Policy(kind) => {
            holder_is(store, kind, id).await?;
            let (holder, policy) = ops::policy(store, id).await?;
            ok(views::policy(&holder, &policy))
        }
        AdminOp::SetPolicy(kind) => {
            holder_is(store, kind, id).await?;
            let edit: PolicyEdit = read_json(&ctx, request).await?;
            let (holder, policy) = ops::set_policy(store, &actor, id, Some(&edit)).await?;
            ctx.state.keys.clear();
            ok(views::policy(&holder, &policy))
        }
        AdminOp::ClearPolicy(kind) => {
            holder_is(store, kind, id).await?;
            let (holder, policy) = ops::set_policy(store, &actor, id, None).await?;
            ctx.state.keys.clear();
            ok(views::policy(&holder, &policy))
        }
        AdminOp::RevokeKey => {
            let account = ops::revoke_key(store, &actor, id).await?;
            ctx.state.keys.clear();
            ok(json!({"id": id, "account_id": account, "revoked": true}))
        }
        AdminOp::EnableKey => {
            ops::enable_key(store, &actor, id).await?;
            ctx.state.keys.clear();
            ok(json!({"id": id, "disabled": false}))
        }
        AdminOp::RotateKey => {
            let (account, key) = ops::rotate_key(store, &actor, id).await?;
            ctx.state.keys.clear();
            Ok(body::json_response(
                StatusCode::CREATED,
                &json!({"id": key.id, "secret": key.secret, "account_id": account, "replaces": id}),
            ))
        }
        AdminOp::Groups => {
            let groups = store.price_groups().await.map_err(OpError::from)?;
            ok(json!({"data": groups.iter().map(views::group).collect::<Vec<_>>()}))
        }
        AdminOp::SetGroup => {
            let name = id;
            let input: GroupInput = read_json(&ctx, request).await?;
            let models: Vec<(String, String)> = input.models.into_iter().collect();
            let group = ops::set_group(
                store,
                &actor,
                name,
                input.multiplier.as_deref(),
                &models,
                &input.drop_models,
            )
            .await?;
            ctx.state.keys.clear();
            ok(views::group(&group))
        }
        AdminOp::Prices => {
            let schedule = store.price_versions(None).await.map_err(OpError::from)?;
            let models: Vec<&str> = ctx
                .settings
                .catalog
                .models()
                .iter()
                .map(|m| m.public.as_str())
                .collect();
            let data: Vec<Value> = models
                .iter()
                .map(|model| model_prices(model, &schedule))
                .collect();
            ok(json!({"data": data}))
        }
        AdminOp::PriceHistory => {
            let versions = store
                .price_versions(Some(id))
                .await
                .map_err(OpError::from)?;
            if versions.is_empty() {
                return Err(OpError {
                    kind: ops::OpErrorKind::NotFound,
                    field: Some("name"),
                    message: format!("no price versions of {id:?}"),
                }
                .into());
            }
            ok(model_prices(id, &versions))
        }
        AdminOp::SetPrice => {
            let input: PriceInput = read_json(&ctx, request).await?;
            let effective_from = input
                .effective_from
                .as_deref()
                .map(|t| {
                    tollgate_gateway_core::clock::parse_rfc3339(t).map_err(|_| {
                        OpError::invalid(
                            "effective_from",
                            format!("{t:?} is not an RFC 3339 time such as 2027-01-31T00:00:00Z"),
                        )
                    })
                })
                .transpose()?;
            let models = ctx.settings.catalog.models();
            let known: Vec<&str> = models.iter().map(|m| m.public.as_str()).collect();
            let stored =
                ops::set_price(store, &actor, &known, id, &input.price, effective_from).await?;
            // This replica at once; the others when they next read the versions.
            if let Ok(schedule) = store.price_schedule().await {
                ctx.state.prices.replace(schedule);
            }
            Ok(body::json_response(
                StatusCode::CREATED,
                &views::price(&stored),
            ))
        }
        AdminOp::Statement => {
            let millis = |name: &'static str| -> Result<Option<i64>, OpError> {
                q(name)
                    .map(|v| {
                        v.parse::<i64>().map_err(|_| {
                            OpError::invalid(
                                name,
                                format!("{name} is Unix milliseconds, not {v:?}"),
                            )
                        })
                    })
                    .transpose()
            };
            let from = millis("from")?.unwrap_or(0);
            let until =
                millis("until")?.unwrap_or_else(|| tollgate_gateway_core::clock::now_millis() + 1);
            let made = store
                .statement(id, from, until, None, None)
                .await
                .map_err(OpError::from)?;
            ok(serde_json::to_value(&made).unwrap_or(Value::Null))
        }
        AdminOp::Request => {
            let found = store
                .explain(id, tollgate_store::Viewer::default())
                .await
                .map_err(OpError::from)?
                .ok_or_else(|| OpError {
                    kind: ops::OpErrorKind::NotFound,
                    field: Some("id"),
                    message: format!("no usage record or charge of a request {id:?}"),
                })?;
            ok(views::request_charges(id, &found))
        }
        AdminOp::Usage => {
            let (filter, _) = usage_query(&query).filter(store).await?;
            let limit = limit(q("limit"))?;
            let records = store
                .usage_records(&filter, limit, q("before").as_deref())
                .await
                .map_err(OpError::from)?;
            let next = next_cursor(&records, limit, |r| r.id.clone());
            ok(json!({
                "data": records.iter().map(views::usage_record).collect::<Vec<_>>(),
                "next_cursor": next,
            }))
        }
        AdminOp::UsageSummary => {
            let (filter, group) = usage_query(&query).filter(store).await?;
            let group = group.unwrap_or(UsageGroup::Day);
            let rows = store
                .usage_summary(&filter, group)
                .await
                .map_err(OpError::from)?;
            ok(json!({
                "group_by": group.as_str(),
                "data": rows.iter().map(|s| views::summary(group, s)).collect::<Vec<_>>(),
            }))
        }
        AdminOp::UsageCsv => {
            let (filter, _) = usage_query(&query).filter(store).await?;
            Ok(csv::usage_export(store.clone(), filter))
        }
        AdminOp::Holds => {
            let account = match q("account") {
                Some(a) => Some(store.find_account(&a).await.map_err(OpError::from)?.id),
                None => None,
            };
            let holds = store
                .open_holds(account.as_deref(), limit(q("limit"))?)
                .await
                .map_err(OpError::from)?;
            ok(json!({"data": holds}))
        }
        AdminOp::Leases => {
            let leases = store.open_leases().await.map_err(OpError::from)?;
            let data: Vec<Value> = leases
                .into_iter()
                .map(|(id, account_id, owner, remaining, expires_at)| {
                    json!({"id": id, "account_id": account_id, "owner": owner,
                           "remaining": remaining, "expires_at": expires_at})
                })
                .collect();
            ok(json!({"data": data}))
        }
        AdminOp::Audit => {
            // Re-deriving every charge is the most expensive read there is: a full token's
            // (issue 42: a read-only token could run it at will).
            if token.read_only && q("recompute").as_deref() == Some("true") {
                return Err(ApiError::new(
                    ErrorKind::Forbidden,
                    format!(
                        "The admin token {:?} is read-only; recompute=true re-derives every charge and needs a full token",
                        token.name
                    ),
                )
                .param("recompute")
                .code("read_only_token"));
            }
            let keys = &ctx.state.ledger_keys;
            let report = store
                .audit_trusting((!keys.is_empty()).then_some(keys.as_slice()))
                .await
                .map_err(OpError::from)?;
            let mut value = serde_json::to_value(&report).unwrap_or(Value::Null);
            match q("recompute").as_deref() {
                None | Some("false") => {}
                Some("true") => {
                    let recompute = store.recompute().await.map_err(OpError::from)?;
                    value["recompute"] = serde_json::to_value(&recompute).unwrap_or(Value::Null);
                }
                Some(other) => {
                    return Err(OpError::invalid(
                        "recompute",
                        format!("recompute must be true or false, not {other:?}"),
                    )
                    .into());
                }
            }
            ok(value)
        }
        AdminOp::Tasks => tasks::list(&ctx, &query).await,
        AdminOp::Task => tasks::get(&ctx, id).await,
        AdminOp::CancelTask => tasks::cancel(&ctx, &actor, id).await,
        AdminOp::Channels => ok(channels(&ctx)),
        AdminOp::DisableChannel | AdminOp::EnableChannel => {
            let name = id;
            let disabled = op == AdminOp::DisableChannel;
            let channels = ctx.settings.catalog.channels();
            let known: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
            ops::set_channel_disabled(store, &actor, &known, name, disabled).await?;
            // This replica at once; the others when they next read the switches.
            if let Some(channel) = ctx.settings.catalog.channel(name) {
                channel.health.set_disabled(disabled);
            }
            ok(json!({"name": name, "disabled": disabled}))
        }
        AdminOp::Models => ok(models(&ctx)),
        AdminOp::Config => ok(config_status(&ctx, reload)),
        AdminOp::Alerts => ok(alerts::list(&ctx).await?),
        AdminOp::PutAlert => {
            let input: tollgate_alerts::RuleConfig = read_json(&ctx, request).await?;
            Ok(body::json_response(
                StatusCode::CREATED,
                &alerts::put(&ctx, &actor, input).await?,
            ))
        }
        AdminOp::DeleteAlert => ok(alerts::delete(&ctx, &actor, id).await?),
        AdminOp::AlertEvents => {
            ok(alerts::events(store, q("rule").as_deref(), limit(q("limit"))?).await?)
        }
        AdminOp::AlertDeliveries => ok(alerts::deliveries(
            store,
            q("rule").as_deref(),
            q("state").as_deref(),
            limit(q("limit"))?,
        )
        .await?),
        AdminOp::AlertDelivery => ok(alerts::one(store, id).await?),
        AdminOp::Redeliver => ok(alerts::redeliver(store, &actor, id).await?),
        AdminOp::ReloadConfig => {
            let reloaded = ops::reload_config(store, &actor, reload).await?;
            ok(json!(reloaded))
        }
        AdminOp::Changes => {
            let limit = limit(q("limit"))?;
            let changes = store
                .admin_changes(q("target").as_deref(), limit, q("before").as_deref())
                .await
                .map_err(OpError::from)?;
            let next = next_cursor(&changes, limit, |c| c.id.clone());
            ok(json!({"data": changes, "next_cursor": next}))
        }
        AdminOp::Overview => overview(&ctx, &query)
            .await
            .map(|v| body::json_response(StatusCode::OK, &v)),
    }
}

/// An account as the admin API shows it: balance, holds, keys, usage by model (from the usage
/// log's rollup, not a scan of the ledger: an account may have millions of rows) and policy.
async fn account_detail(store: &tollgate_store::Store, id: &str) -> Result<Value, ApiError> {
    let account = store.find_account(id).await.map_err(OpError::from)?;
    let keys = store
        .account_keys(&account.id)
        .await
        .map_err(OpError::from)?;
    let filter = tollgate_store::UsageFilter {
        account_id: Some(account.id.clone()),
        ..Default::default()
    };
    let by_model = store
        .usage_summary(&filter, UsageGroup::Model)
        .await
        .map_err(OpError::from)?;
    let holder = tollgate_store::PolicyHolder::Account(account.id.clone());
    let policy = store.policy(&holder).await.map_err(OpError::from)?;
    let (holds, _) = store
        .open_holds_count(Some(&account.id))
        .await
        .map_err(OpError::from)?;
    let mut v = views::account(&account);
    v["open_holds"] = json!(holds);
    v["keys"] = json!(keys);
    v["usage"] = json!(
        by_model
            .iter()
            .map(|s| views::summary(UsageGroup::Model, s))
            .collect::<Vec<_>>()
    );
    v["policy"] = views::policy(&holder, &policy);
    Ok(v)
}

/// A policy route names an account (id or name) under `accounts/` and a key under `keys/`.
async fn holder_is(store: &tollgate_store::Store, kind: Holder, id: &str) -> Result<(), ApiError> {
    let holder = store.policy_holder(id).await.map_err(OpError::from)?;
    let fits = matches!(
        (kind, &holder),
        (Holder::Account, tollgate_store::PolicyHolder::Account(_))
            | (Holder::Key, tollgate_store::PolicyHolder::Key(_))
    );
    if fits {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorKind::NotFound,
            format!(
                "No {} {id:?}",
                match kind {
                    Holder::Account => "account",
                    Holder::Key => "key",
                }
            ),
        )
        .param("id"))
    }
}

/// The admin token of a request: `Authorization: Bearer tga-…`.
async fn authenticate(ctx: &RequestCtx, headers: &HeaderMap) -> Result<AdminToken, ApiError> {
    let Some(secret) = tollgate_gateway_core::auth::presented_secret(
        tollgate_gateway_core::errors::Family::OpenAi,
        headers,
        None,
    ) else {
        return Err(ApiError::new(
            ErrorKind::MissingCredential,
            "The admin API needs an admin token: 'Authorization: Bearer tga-…' \
             (make one with `tollgate admin token create --name NAME`)",
        ));
    };
    if !secret.starts_with("tga-") {
        return Err(ApiError::new(
            ErrorKind::InvalidCredential,
            "Client API keys are not accepted on the admin API; use an admin token (tga-…)",
        ));
    }
    match ctx.state.store.admin_token(&secret).await {
        Ok(Some(token)) => Ok(token),
        Ok(None) => Err(ApiError::new(
            ErrorKind::InvalidCredential,
            "Unknown or revoked admin token",
        )),
        Err(e) => Err(ApiError::internal("checking the admin token", e)),
    }
}

fn limit(text: Option<String>) -> Result<u32, ApiError> {
    let Some(text) = text else {
        return Ok(DEFAULT_LIMIT);
    };
    match text.parse::<u32>() {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(ApiError::invalid(
            "limit",
            "invalid_value",
            format!("limit must be a whole number from 1 to {MAX_LIMIT}, not {text:?}"),
        )),
    }
}

/// The cursor of the next page: the last id, when the page was full.
fn next_cursor<T>(page: &[T], limit: u32, id: impl Fn(&T) -> String) -> Option<String> {
    (page.len() == limit as usize)
        .then(|| page.last().map(id))
        .flatten()
}

fn header_text(headers: &HeaderMap, name: &'static str) -> Result<Option<String>, ApiError> {
    headers
        .get(name)
        .map(|v| {
            v.to_str().map(str::to_owned).map_err(|_| {
                ApiError::invalid(
                    name,
                    "invalid_value",
                    format!("{name} must be printable text"),
                )
            })
        })
        .transpose()
}

fn usage_query(query: &str) -> UsageQuery {
    let q = |name: &str| query_param(query, name).filter(|v| !v.is_empty());
    UsageQuery {
        account: q("account"),
        key: q("key"),
        model: q("model"),
        endpoint: q("endpoint"),
        since: q("since"),
        until: q("until"),
        group_by: q("group_by"),
    }
}

async fn read_json<T: serde::de::DeserializeOwned>(
    ctx: &RequestCtx,
    request: Request<Incoming>,
) -> Result<T, ApiError> {
    let (parts, incoming) = request.into_parts();
    body::require_json(&parts.headers)?;
    let bounds = body::Bounds {
        limit: MAX_BODY,
        pace: body::Pace::of(&ctx.state.server),
    };
    let bytes = body::read_limited(&parts.headers, incoming, bounds).await?;
    // An empty body stands for `{}` (a POST with no options).
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return body::decode_json(b"{}");
    }
    body::decode_json(&bytes)
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NewAccount {
    name: String,
    balance: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NewCredit {
    amount: String,
    reason: String,
    #[serde(default)]
    allow_negative: bool,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NewKeyInput {
    name: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupInput {
    multiplier: Option<String>,
    #[serde(default)]
    models: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    drop_models: Vec<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceInput {
    price: tollgate_billing::Tariff,
    effective_from: Option<String>,
}

/// A model's versions (of `versions`, every model's) and the one in effect now.
/// `model`'s versions among `versions`, and the one in effect now.
fn model_prices(model: &str, versions: &[tollgate_store::StoredPrice]) -> Value {
    let mine: Vec<tollgate_store::StoredPrice> = versions
        .iter()
        .filter(|p| p.model == model)
        .cloned()
        .collect();
    let now = tollgate_gateway_core::clock::now_millis();
    let current = tollgate_store::StoredPrice::in_effect(&mine, now)
        .first()
        .map(|p| p.version);
    json!({
        "model": model,
        "current": current,
        "versions": mine.iter().map(views::price).collect::<Vec<_>>(),
    })
}

/// `GET /config`: the settings' generation in force, since when, where they are read from, and
/// the last reload refused (`docs/operations.md`, "Reloading the configuration").
fn config_status(ctx: &RequestCtx, reload: Option<&dyn Reload>) -> Value {
    let live = &ctx.state.settings;
    let last_refusal = live.last_refusal().map(
        |(at, error)| json!({"at": tollgate_gateway_core::clock::format_rfc3339(at), "error": error}),
    );
    json!({
        "generation": live.generation(),
        "installed_at": tollgate_gateway_core::clock::format_rfc3339(live.installed_at()),
        "source": reload.map(Reload::source),
        "reloads_refused": live.refused(),
        "last_refusal": last_refusal,
    })
}

fn channels(ctx: &RequestCtx) -> Value {
    let data: Vec<Value> = ctx
        .settings
        .catalog
        .channels()
        .iter()
        .map(|c| {
            let in_flight = c
                .max_concurrency
                .saturating_sub(c.permits.available_permits());
            let mut v = serde_json::to_value(c.health.report()).unwrap_or(Value::Null);
            v["name"] = json!(c.name);
            v["format"] = json!(c.format.name());
            v["base_url"] = json!(c.endpoint.base_url);
            v["in_flight"] = json!(in_flight);
            v["max_concurrency"] = json!(c.max_concurrency);
            v
        })
        .collect();
    json!({"data": data})
}

fn models(ctx: &RequestCtx) -> Value {
    let catalog = &ctx.settings.catalog;
    let now = tollgate_gateway_core::clock::now_millis();
    let data: Vec<Value> = catalog
        .models()
        .iter()
        .map(|m| {
            json!({
                "model": m.public,
                "kind": m.kind,
                "upstream_model": m.upstream_model,
                "channels": m.channels.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
                "price": ctx.state.prices.at(&m.public, &m.tariff, now).tariff,
                "price_version": ctx.state.prices.at(&m.public, &m.tariff, now).version,
                "aliases": catalog.aliases_of(&m.public),
            })
        })
        .collect();
    json!({"data": data})
}

/// What the console's overview shows: spend and requests per hour (or day) over a period, by
/// model and by status, the error rate, open holds and leases, tasks in flight.
async fn overview(ctx: &RequestCtx, query: &str) -> Result<Value, ApiError> {
    let store = &ctx.state.store;
    let hours: i64 = match query_param(query, "hours").filter(|h| !h.is_empty()) {
        None => 24,
        Some(h) => h
            .parse()
            .ok()
            .filter(|h| (1..=24 * 90).contains(h))
            .ok_or_else(|| {
                ApiError::invalid("hours", "invalid_value", "hours must be from 1 to 2160")
            })?,
    };
    let now = tollgate_gateway_core::clock::now_millis();
    let filter = tollgate_store::UsageFilter {
        since: Some(now - hours * 3_600_000),
        ..Default::default()
    };
    let bucket = if hours <= 72 {
        UsageGroup::Hour
    } else {
        UsageGroup::Day
    };
    let summary = |group| store.usage_summary(&filter, group);
    let over_time = summary(bucket).await.map_err(OpError::from)?;
    let by_model = summary(UsageGroup::Model).await.map_err(OpError::from)?;
    let by_status = summary(UsageGroup::Status).await.map_err(OpError::from)?;
    let (requests, errors) = by_status
        .iter()
        .fold((0, 0), |(r, e), s| (r + s.requests, e + s.errors));
    let (holds, held) = store.open_holds_count(None).await.map_err(OpError::from)?;
    let leases = store.open_leases().await.map_err(OpError::from)?;
    let leased = leases
        .iter()
        .fold(0i64, |sum, lease| sum.saturating_add(lease.3.nanos()));
    let tasks_in_flight = store.tasks_in_flight().await.map_err(OpError::from)?;
    Ok(json!({
        "hours": hours,
        "bucket": bucket.as_str(),
        "over_time": over_time.iter().map(|s| views::summary(bucket, s)).collect::<Vec<_>>(),
        "by_model": by_model.iter().map(|s| views::summary(UsageGroup::Model, s)).collect::<Vec<_>>(),
        "by_status": by_status.iter().map(|s| views::summary(UsageGroup::Status, s)).collect::<Vec<_>>(),
        "requests": requests,
        "errors": errors,
        "open_holds": {"count": holds, "amount": held},
        "open_leases": {"count": leases.len(), "amount": tollgate_billing::Amount::from_nanos(leased)},
        "tasks_in_flight": tasks_in_flight,
    }))
}

mod tasks {
    //! Tasks of every account: list, inspect with history, cancel and refund.

    use super::*;

    pub async fn list(ctx: &RequestCtx, query: &str) -> Result<Response<ResponseBody>, ApiError> {
        let store = &ctx.state.store;
        let q = |name: &str| query_param(query, name).filter(|v| !v.is_empty());
        let account = match q("account") {
            Some(a) => Some(store.find_account(&a).await.map_err(OpError::from)?.id),
            None => None,
        };
        let state = q("state")
            .map(|s| {
                serde_json::from_value::<TaskState>(json!(s)).map_err(|_| {
                    ApiError::invalid(
                        "state",
                        "invalid_value",
                        "state must be submitting, queued, running, succeeded or failed",
                    )
                })
            })
            .transpose()?;
        let limit = limit(q("limit"))?;
        let before = q("before");
        let cursor = match &before {
            Some(c) => Some(parse_task_cursor(c)?),
            None => None,
        };
        let tasks = store
            .admin_tasks(account.as_deref(), state, limit, cursor)
            .await
            .map_err(OpError::from)?;
        let next = next_cursor(&tasks, limit, |t| format!("{}:{}", t.created_at, t.id));
        Ok(body::json_response(
            StatusCode::OK,
            &json!({"data": tasks.iter().map(views::task).collect::<Vec<_>>(), "next_cursor": next}),
        ))
    }

    fn parse_task_cursor(cursor: &str) -> Result<(i64, &str), ApiError> {
        cursor
            .split_once(':')
            .and_then(|(at, id)| Some((at.parse().ok()?, id)))
            .ok_or_else(|| {
                ApiError::invalid(
                    "before",
                    "invalid_value",
                    "before must be a next_cursor of an earlier page",
                )
            })
    }

    async fn find(ctx: &RequestCtx, id: &str) -> Result<tollgate_store::Task, ApiError> {
        ctx.state
            .store
            .task(id)
            .await
            .map_err(OpError::from)?
            .ok_or_else(|| {
                ApiError::new(ErrorKind::NotFound, format!("No task {id:?}")).param("id")
            })
    }

    pub async fn get(ctx: &RequestCtx, id: &str) -> Result<Response<ResponseBody>, ApiError> {
        let task = find(ctx, id).await?;
        let events = ctx
            .state
            .store
            .task_events(id)
            .await
            .map_err(OpError::from)?;
        let mut v = views::task(&task);
        v["history"] = json!(events);
        Ok(body::json_response(StatusCode::OK, &v))
    }

    pub async fn cancel(
        ctx: &RequestCtx,
        actor: &Actor,
        id: &str,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let state = &ctx.state;
        let channel = match state.store.task(id).await.map_err(OpError::from)? {
            Some(task) => ctx.settings.catalog.channel(&task.channel).cloned(),
            None => None,
        };
        let upstream = channel.as_ref().map(|c| (&state.http, &c.endpoint));
        ops::cancel_task(&state.store, actor, id, upstream).await?;
        state.metrics.task_event("cancelled");
        state.metrics.hold_closed("released");
        get(ctx, id).await
    }
}

mod csv {
    //! `GET /admin/v1/usage.csv`: the matching records, streamed a page at a time, never
    //! built in memory.

    use super::*;
    use bytes::Bytes;
    use http_body_util::BodyExt;
    use tollgate_store::{Store, UsageFilter};

    const PAGE: u32 = 1000;

    pub fn usage_export(store: Store, filter: UsageFilter) -> Response<ResponseBody> {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        tokio::spawn(async move {
            let mut chunk = views::RECORD_COLUMNS.join(",");
            chunk.push_str("\r\n");
            if tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                return;
            }
            let mut before: Option<String> = None;
            loop {
                let page = match store.usage_records(&filter, PAGE, before.as_deref()).await {
                    Ok(page) => page,
                    Err(e) => {
                        // The header is sent: the error can only cut the body short.
                        let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                        return;
                    }
                };
                let mut chunk = String::new();
                for record in &page {
                    chunk.push_str(&views::csv_line(&views::record_cells(record)));
                    chunk.push_str("\r\n");
                }
                if !chunk.is_empty() && tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                    return; // the client left
                }
                if page.len() < PAGE as usize {
                    return;
                }
                before = page.last().map(|r| r.id.clone());
            }
        });
        let stream = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv()
                .await
                .map(|item| (item.map(hyper::body::Frame::data), rx))
        });
        let body = http_body_util::StreamBody::new(stream)
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
            .boxed();
        let mut response = Response::new(body);
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/csv; charset=utf-8"),
        );
        headers.insert(
            header::CONTENT_DISPOSITION,
            header::HeaderValue::from_static("attachment; filename=\"usage.csv\""),
        );
        response
    }
}
