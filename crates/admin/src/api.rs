//! The admin API's operations (`docs/operations.md`, "The admin API"): one function per
//! operation, each a row's handler in the admin route table (`crate::routes::ADMIN_ROUTES`), and
//! what they share. Every operation is handed a [`Call`]: the request's context, the request,
//! the one segment its path names, its query, who is acting and with which token.

use crate::alerts;
use crate::codes;
use crate::ops::{self, Actor, OpError, PolicyEdit, UsageQuery};
use crate::people;
use crate::views;
use http::{HeaderMap, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use schemars::JsonSchema;
use serde_json::{Value, json};
use std::sync::Arc;
use tollgate_billing::Amount;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_journal::clock::format_rfc3339;
use tollgate_request::auth::query_param;
use tollgate_request::context::RequestCtx;
use tollgate_settings::reload::Reload;
use tollgate_store::MAX_ADMIN_TEXT;
use tollgate_store::{AdminToken, TaskState, UsageGroup};

/// What an operation answers.
type Answer = Result<Response<ResponseBody>, ApiError>;

/// One call of the admin API, as its operation gets it (with the request, for an operation
/// that reads a body).
#[derive(Debug)]
pub struct Call {
    /// The request's context.
    pub ctx: RequestCtx,
    /// The one segment the path names (`{id}`, `{name}`), `""` when it names none.
    pub id: String,
    /// The query string, `""` without one.
    pub query: String,
    /// Who is acting, for the admin audit log.
    pub actor: Actor,
    /// The admin token it came with.
    pub token: AdminToken,
    /// What `POST /admin/v1/config/reload` calls, when the gateway has one.
    pub reload: Option<Arc<dyn Reload>>,
}

impl Call {
    /// The store.
    fn store(&self) -> &tollgate_store::Store {
        &self.ctx.state.store
    }

    /// The query parameter `name`, when present and not empty.
    fn q(&self, name: &str) -> Option<String> {
        query_param(&self.query, name).filter(|v| !v.is_empty())
    }
}

/// Whose access policy a policy route names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// `accounts/{id}/policy`: an account, by id or name.
    Account,
    /// `keys/{id}/policy`: a key, by id.
    Key,
}

/// The largest admin request body: a few fields, never a file.
const MAX_BODY: usize = 64 * 1024;
/// Page sizes: default and ceiling.
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 1000;

/// A 200 with `value`.
fn ok(value: impl serde::Serialize) -> Answer {
    Ok(body::json_response(StatusCode::OK, &value))
}

/// `AdminOp::ListAccounts`.
pub(crate) async fn list_accounts(call: Call) -> Answer {
    let store = call.store();
    let limit = limit(call.q("limit"))?;
    let before = call.q("before");
    let (total, accounts) = store
        .accounts_page(call.q("search").as_deref(), limit, before.as_deref())
        .await
        .map_err(OpError::from)?;
    let next = next_cursor(&accounts, limit, |a| a.id.clone());
    ok(views::AccountPage {
        data: accounts.iter().map(views::account).collect(),
        total,
        next_cursor: next,
    })
}

/// `AdminOp::CreateAccount`.
pub(crate) async fn create_account(call: Call, request: Request<Incoming>) -> Answer {
    let store = call.store();
    let input: NewAccount = read_json(&call.ctx, request).await?;
    let (account, key) = ops::create_account(
        store,
        &call.actor,
        &input.name,
        input.balance.as_deref().unwrap_or("0"),
    )
    .await?;
    Ok(body::json_response(
        StatusCode::CREATED,
        &views::CreatedAccount {
            account: views::account(&account),
            key: views::NewKey {
                id: key.id,
                secret: key.secret,
                ..Default::default()
            },
        },
    ))
}

/// `AdminOp::Account`.
pub(crate) async fn account(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    ok(account_detail(store, id).await?)
}

/// `AdminOp::DisableAccount` and `AdminOp::EnableAccount`.
pub(crate) async fn switch_account(call: Call, disable: bool) -> Answer {
    let id = call.id.as_str();
    let account = ops::set_account_disabled(call.store(), &call.actor, id, disable).await?;
    call.ctx.state.keys.clear();
    ok(views::account(&account))
}

/// `AdminOp::Credit`.
pub(crate) async fn credit(call: Call, request: Request<Incoming>) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    let idempotency_key = header_text(request.headers(), "idempotency-key")?;
    let input: NewCredit = read_json(&call.ctx, request).await?;
    let credited = ops::credit(
        store,
        &call.actor,
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
        &views::Credited {
            ledger_id: credited.ledger_id,
            account: views::account(&credited.account),
            replayed: credited.replayed,
        },
    );
    if credited.replayed {
        response.headers_mut().insert(
            "idempotent-replayed",
            header::HeaderValue::from_static("true"),
        );
    }
    Ok(response)
}

/// `AdminOp::People`.
pub(crate) async fn people(call: Call) -> Answer {
    ok(views::List {
        data: people::people(call.store(), &call.id).await?,
    })
}

/// `AdminOp::Invite`: the link is built on `[portal] public_url`, or where the admin API was
/// asked at.
pub(crate) async fn invite(call: Call, request: Request<Incoming>) -> Answer {
    let portal = call.ctx.state.portal.clone();
    let base = portal
        .public_url
        .clone()
        .unwrap_or_else(|| call.ctx.origin(request.headers()).url());
    let asked: people::NewPerson = read_json(&call.ctx, request).await?;
    let invited =
        people::invite(call.store(), &call.actor, &call.id, &asked, &base, &portal).await?;
    Ok(body::json_response(StatusCode::CREATED, &invited))
}

/// `AdminOp::RemovePerson`.
pub(crate) async fn remove_person(call: Call) -> Answer {
    people::remove(call.store(), &call.actor, &call.id).await?;
    ok(json!({"removed": call.id}))
}

/// `AdminOp::CodeBatches`.
pub(crate) async fn code_batches(call: Call) -> Answer {
    ok(views::List {
        data: codes::batches(call.store()).await?,
    })
}

/// `AdminOp::IssueCodes`.
pub(crate) async fn issue_codes(call: Call, request: Request<Incoming>) -> Answer {
    let asked: codes::NewBatch = read_json(&call.ctx, request).await?;
    let issued = codes::issue(call.store(), &call.actor, &asked).await?;
    Ok(body::json_response(StatusCode::CREATED, &issued))
}

/// `AdminOp::CodeBatch`.
pub(crate) async fn code_batch(call: Call) -> Answer {
    ok(codes::report(call.store(), &call.id).await?)
}

/// `AdminOp::RevokeCodes`.
pub(crate) async fn revoke_codes(call: Call) -> Answer {
    ok(codes::revoke(call.store(), &call.actor, &call.id).await?)
}

/// `AdminOp::Payments`: every account's payments, or one's (`?account=`), newest first.
pub(crate) async fn payments(call: Call) -> Answer {
    let store = call.store();
    let account = match call.q("account") {
        Some(id) => Some(store.find_account(&id).await.map_err(OpError::from)?.id),
        None => None,
    };
    let limit = limit(call.q("limit"))?;
    let rows = store
        .payments(account.as_deref(), call.q("before").as_deref(), limit)
        .await
        .map_err(OpError::from)?;
    let next = next_cursor(&rows, limit, |p| p.id.clone());
    ok(views::Page {
        data: rows,
        next_cursor: next,
    })
}

/// `AdminOp::Payment`.
pub(crate) async fn payment(call: Call) -> Answer {
    ok(call
        .store()
        .payment(&call.id)
        .await
        .map_err(OpError::from)?)
}

/// `AdminOp::AccountKeys`.
pub(crate) async fn account_keys(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    let account = store.find_account(id).await.map_err(OpError::from)?;
    let keys = store
        .account_keys(&account.id)
        .await
        .map_err(OpError::from)?;
    ok(views::List { data: keys })
}

/// `AdminOp::AddKey`.
pub(crate) async fn add_key(call: Call, request: Request<Incoming>) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    let input: NewKeyInput = read_json(&call.ctx, request).await?;
    let name = input.name.as_deref().unwrap_or("default");
    let (account, key) = ops::add_key(store, &call.actor, id, name).await?;
    Ok(body::json_response(
        StatusCode::CREATED,
        &views::NewKey {
            id: key.id,
            secret: key.secret,
            account_id: Some(account.id),
            name: Some(name.to_owned()),
            replaces: None,
        },
    ))
}

/// `AdminOp::Ledger`.
pub(crate) async fn ledger_page(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    let account = store.find_account(id).await.map_err(OpError::from)?;
    let limit = limit(call.q("limit"))?;
    let rows = store
        .ledger_page(&account.id, limit, call.q("before").as_deref())
        .await
        .map_err(OpError::from)?;
    let next = next_cursor(&rows, limit, |r| r.id.clone());
    ok(views::Page {
        data: rows.iter().map(views::ledger_entry).collect(),
        next_cursor: next,
    })
}

/// `AdminOp::Policy`.
pub(crate) async fn policy(call: Call, kind: Holder) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    holder_is(store, kind, id).await?;
    let (holder, policy) = ops::policy(store, id).await?;
    ok(views::policy(&holder, &policy))
}

/// `AdminOp::SetPolicy`.
pub(crate) async fn set_policy(call: Call, request: Request<Incoming>, kind: Holder) -> Answer {
    let (id, store) = (call.id.as_str(), call.store());
    holder_is(store, kind, id).await?;
    let edit: PolicyEdit = read_json(&call.ctx, request).await?;
    let (holder, policy) = ops::set_policy(store, &call.actor, id, Some(&edit)).await?;
    call.ctx.state.keys.clear();
    ok(views::policy(&holder, &policy))
}

/// `AdminOp::ClearPolicy`.
pub(crate) async fn clear_policy(call: Call, kind: Holder) -> Answer {
    let (id, store) = (call.id.as_str(), call.store());
    holder_is(store, kind, id).await?;
    let (holder, policy) = ops::set_policy(store, &call.actor, id, None).await?;
    call.ctx.state.keys.clear();
    ok(views::policy(&holder, &policy))
}

/// `AdminOp::RevokeKey`.
pub(crate) async fn revoke_key(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    let account = ops::revoke_key(store, &call.actor, id).await?;
    call.ctx.state.keys.clear();
    ok(views::KeyState {
        id: id.to_owned(),
        account_id: Some(account),
        revoked: Some(true),
        disabled: None,
    })
}

/// `AdminOp::EnableKey`.
pub(crate) async fn enable_key(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    ops::enable_key(store, &call.actor, id).await?;
    call.ctx.state.keys.clear();
    ok(views::KeyState {
        id: id.to_owned(),
        account_id: None,
        revoked: None,
        disabled: Some(false),
    })
}

/// `AdminOp::RotateKey`.
pub(crate) async fn rotate_key(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    let (account, key) = ops::rotate_key(store, &call.actor, id).await?;
    call.ctx.state.keys.clear();
    Ok(body::json_response(
        StatusCode::CREATED,
        &views::NewKey {
            id: key.id,
            secret: key.secret,
            account_id: Some(account),
            name: None,
            replaces: Some(id.to_owned()),
        },
    ))
}

/// `AdminOp::Groups`.
pub(crate) async fn groups(call: Call) -> Answer {
    let store = call.store();
    let groups = store.price_groups().await.map_err(OpError::from)?;
    ok(views::List {
        data: groups.iter().map(views::group).collect(),
    })
}

/// `AdminOp::SetGroup`.
pub(crate) async fn set_group(call: Call, request: Request<Incoming>) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    let name = id;
    let input: GroupInput = read_json(&call.ctx, request).await?;
    let models: Vec<(String, String)> = input.models.into_iter().collect();
    let group = ops::set_group(
        store,
        &call.actor,
        name,
        input.multiplier.as_deref(),
        &models,
        &input.drop_models,
    )
    .await?;
    call.ctx.state.keys.clear();
    ok(views::group(&group))
}

/// `AdminOp::Prices`.
pub(crate) async fn prices(call: Call) -> Answer {
    let store = call.store();
    let schedule = store.price_versions(None).await.map_err(OpError::from)?;
    let models: Vec<&str> = call
        .ctx
        .settings
        .catalog
        .models()
        .iter()
        .map(|m| m.public.as_str())
        .collect();
    let data = models
        .iter()
        .map(|model| model_prices(model, &schedule))
        .collect();
    ok(views::List { data })
}

/// `AdminOp::PriceHistory`.
pub(crate) async fn price_history(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
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

/// `AdminOp::SetPrice`.
pub(crate) async fn set_price(call: Call, request: Request<Incoming>) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    let input: PriceInput = read_json(&call.ctx, request).await?;
    let effective_from = input
        .effective_from
        .as_deref()
        .map(|t| {
            tollgate_journal::clock::parse_rfc3339(t).map_err(|_| {
                OpError::invalid(
                    "effective_from",
                    format!("{t:?} is not an RFC 3339 time such as 2027-01-31T00:00:00Z"),
                )
            })
        })
        .transpose()?;
    let models = call.ctx.settings.catalog.models();
    let known: Vec<&str> = models.iter().map(|m| m.public.as_str()).collect();
    let stored =
        ops::set_price(store, &call.actor, &known, id, &input.price, effective_from).await?;
    // This replica at once; the others when they next read the versions.
    if let Ok(schedule) = store.price_schedule().await {
        call.ctx.state.prices.replace(schedule);
    }
    Ok(body::json_response(
        StatusCode::CREATED,
        &views::price(&stored),
    ))
}

/// `AdminOp::Statement`.
pub(crate) async fn statement(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    let millis = |name: &'static str| -> Result<Option<i64>, OpError> {
        call.q(name)
            .map(|v| {
                v.parse::<i64>().map_err(|_| {
                    OpError::invalid(name, format!("{name} is Unix milliseconds, not {v:?}"))
                })
            })
            .transpose()
    };
    let from = millis("from")?.unwrap_or(0);
    let until = millis("until")?.unwrap_or_else(|| tollgate_journal::clock::now_millis() + 1);
    let made = store
        .statement(id, from, until, None, None)
        .await
        .map_err(OpError::from)?;
    ok(serde_json::to_value(&made).unwrap_or(Value::Null))
}

/// `AdminOp::Request`.
pub(crate) async fn request_charges(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
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

/// `AdminOp::Usage`.
pub(crate) async fn usage(call: Call) -> Answer {
    let store = call.store();
    let (filter, _) = usage_query(&call.query).filter(store).await?;
    let limit = limit(call.q("limit"))?;
    let records = store
        .usage_records(&filter, limit, call.q("before").as_deref())
        .await
        .map_err(OpError::from)?;
    let next = next_cursor(&records, limit, |r| r.id.clone());
    ok(views::Page {
        data: records.iter().map(views::usage_record).collect(),
        next_cursor: next,
    })
}

/// `AdminOp::UsageSummary`.
pub(crate) async fn usage_summary(call: Call) -> Answer {
    let store = call.store();
    let (filter, group) = usage_query(&call.query).filter(store).await?;
    let group = group.unwrap_or(UsageGroup::Day);
    let rows = store
        .usage_summary(&filter, group)
        .await
        .map_err(OpError::from)?;
    ok(views::UsageTotals {
        group_by: group.as_str(),
        data: rows.iter().map(|s| views::summary(group, s)).collect(),
    })
}

/// `AdminOp::UsageCsv`.
pub(crate) async fn usage_csv(call: Call) -> Answer {
    let store = call.store();
    let (filter, _) = usage_query(&call.query).filter(store).await?;
    Ok(csv::usage_export(store.clone(), filter))
}

/// `AdminOp::Holds`.
pub(crate) async fn holds(call: Call) -> Answer {
    let store = call.store();
    let account = match call.q("account") {
        Some(a) => Some(store.find_account(&a).await.map_err(OpError::from)?.id),
        None => None,
    };
    let holds = store
        .open_holds(account.as_deref(), limit(call.q("limit"))?)
        .await
        .map_err(OpError::from)?;
    ok(views::List { data: holds })
}

/// `AdminOp::Sessions`.
pub(crate) async fn sessions(call: Call) -> Answer {
    let store = call.store();
    let account = match call.q("account") {
        Some(a) => Some(store.find_account(&a).await.map_err(OpError::from)?.id),
        None => None,
    };
    let sessions = store
        .open_sessions(account.as_deref(), limit(call.q("limit"))?.into())
        .await
        .map_err(OpError::from)?;
    ok(views::Sessions {
        data: sessions,
        stale_after_seconds: call.ctx.state.realtime.stale_session_seconds,
    })
}

/// `AdminOp::Leases`.
pub(crate) async fn leases(call: Call) -> Answer {
    let store = call.store();
    let leases = store.open_leases().await.map_err(OpError::from)?;
    let data: Vec<views::Lease> = leases
        .into_iter()
        .map(
            |(id, account_id, owner, remaining, expires_at)| views::Lease {
                id,
                account_id,
                owner,
                remaining,
                expires_at,
            },
        )
        .collect();
    ok(views::List { data })
}

/// `AdminOp::Audit`.
pub(crate) async fn audit(call: Call) -> Answer {
    let store = call.store();
    // Re-deriving every charge is the most expensive read there is: a full token's
    // (issue 42: a read-only token could run it at will).
    if call.token.read_only && call.q("recompute").as_deref() == Some("true") {
        return Err(ApiError::new(
            ErrorKind::Forbidden,
            format!(
                "The admin token {:?} is read-only; recompute=true re-derives every charge and needs a full token",
                call.token.name
            ),
        )
        .param("recompute")
        .code("read_only_token"));
    }
    let keys = &call.ctx.state.ledger_keys;
    let report = store
        .audit_trusting((!keys.is_empty()).then_some(keys.as_slice()))
        .await
        .map_err(OpError::from)?;
    let recompute = match call.q("recompute").as_deref() {
        None | Some("false") => None,
        Some("true") => Some(store.recompute().await.map_err(OpError::from)?),
        Some(other) => {
            return Err(OpError::invalid(
                "recompute",
                format!("recompute must be true or false, not {other:?}"),
            )
            .into());
        }
    };
    ok(views::Audit { report, recompute })
}

/// `AdminOp::Tasks`.
pub(crate) async fn list_tasks(call: Call) -> Answer {
    tasks::list(&call.ctx, &call.query).await
}

/// `AdminOp::Task`.
pub(crate) async fn task(call: Call) -> Answer {
    let id = call.id.as_str();
    tasks::get(&call.ctx, id).await
}

/// `AdminOp::CancelTask`.
pub(crate) async fn cancel_task(call: Call) -> Answer {
    let id = call.id.as_str();
    tasks::cancel(&call.ctx, &call.actor, id).await
}

/// `AdminOp::Channels`.
pub(crate) async fn list_channels(call: Call) -> Answer {
    ok(channels(&call.ctx))
}

/// `AdminOp::DisableChannel` and `AdminOp::EnableChannel`.
pub(crate) async fn switch_channel(call: Call, disabled: bool) -> Answer {
    let name = call.id.as_str();
    let catalog = &call.ctx.settings.catalog;
    let channels = catalog.channels();
    let known: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
    ops::set_channel_disabled(call.store(), &call.actor, &known, name, disabled).await?;
    // This replica at once; the others when they next read the switches.
    if let Some(channel) = catalog.channel(name) {
        channel.health.set_disabled(disabled);
    }
    ok(json!({"name": name, "disabled": disabled}))
}

/// `AdminOp::Models`.
pub(crate) async fn list_models(call: Call) -> Answer {
    ok(models(&call.ctx))
}

/// `AdminOp::Config`.
pub(crate) async fn show_config(call: Call) -> Answer {
    ok(config_status(&call.ctx, call.reload.as_deref()))
}

/// `AdminOp::Alerts`.
pub(crate) async fn list_alerts(call: Call) -> Answer {
    ok(alerts::list(&call.ctx).await?)
}

/// `AdminOp::PutAlert`.
pub(crate) async fn put_alert(call: Call, request: Request<Incoming>) -> Answer {
    let input: tollgate_alerts::RuleConfig = read_json(&call.ctx, request).await?;
    Ok(body::json_response(
        StatusCode::CREATED,
        &alerts::put(&call.ctx, &call.actor, input).await?,
    ))
}

/// `AdminOp::DeleteAlert`.
pub(crate) async fn delete_alert(call: Call) -> Answer {
    let id = call.id.as_str();
    ok(alerts::delete(&call.ctx, &call.actor, id).await?)
}

/// `AdminOp::AlertEvents`.
pub(crate) async fn alert_events(call: Call) -> Answer {
    let store = call.store();
    ok(alerts::events(store, call.q("rule").as_deref(), limit(call.q("limit"))?).await?)
}

/// `AdminOp::AlertDeliveries`.
pub(crate) async fn alert_deliveries(call: Call) -> Answer {
    let store = call.store();
    ok(alerts::deliveries(
        store,
        call.q("rule").as_deref(),
        call.q("state").as_deref(),
        limit(call.q("limit"))?,
    )
    .await?)
}

/// `AdminOp::AlertDelivery`.
pub(crate) async fn alert_delivery(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    ok(alerts::one(store, id).await?)
}

/// `AdminOp::Redeliver`.
pub(crate) async fn redeliver(call: Call) -> Answer {
    let id = call.id.as_str();
    let store = call.store();
    ok(alerts::redeliver(store, &call.actor, id).await?)
}

/// `AdminOp::ReloadConfig`.
pub(crate) async fn reload_config(call: Call) -> Answer {
    let store = call.store();
    let reloaded = ops::reload_config(store, &call.actor, call.reload.as_deref()).await?;
    ok(reloaded)
}

/// `AdminOp::Changes`.
pub(crate) async fn changes(call: Call) -> Answer {
    let store = call.store();
    let limit = limit(call.q("limit"))?;
    let changes = store
        .admin_changes(
            call.q("target").as_deref(),
            limit,
            call.q("before").as_deref(),
        )
        .await
        .map_err(OpError::from)?;
    let next = next_cursor(&changes, limit, |c| c.id.clone());
    ok(views::Page {
        data: changes,
        next_cursor: next,
    })
}

/// `AdminOp::Overview`.
pub(crate) async fn show_overview(call: Call) -> Answer {
    overview(&call.ctx, &call.query)
        .await
        .map(|v| body::json_response(StatusCode::OK, &v))
}

/// An account as the admin API shows it: balance, holds, keys, usage by model (from the usage
/// log's rollup, not a scan of the ledger: an account may have millions of rows) and policy.
async fn account_detail(
    store: &tollgate_store::Store,
    id: &str,
) -> Result<views::AccountDetail, ApiError> {
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
    Ok(views::AccountDetail {
        account: views::account(&account),
        open_holds: holds,
        keys,
        usage: by_model
            .iter()
            .map(|s| views::summary(UsageGroup::Model, s))
            .collect(),
        policy: views::policy(&holder, &policy),
    })
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
        pace: ctx.body_pace(),
    };
    let bytes = body::read_limited(&parts.headers, incoming, bounds).await?;
    // An empty body stands for `{}` (a POST with no options).
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return body::decode_json(b"{}");
    }
    body::decode_json(&bytes)
}

/// The body of `POST /admin/v1/accounts`.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewAccount {
    /// Unique.
    #[schemars(length(min = 1, max = MAX_ADMIN_TEXT))]
    name: String,
    /// The opening balance; 0 when left out, never negative.
    #[schemars(with = "Option<Amount>")]
    balance: Option<String>,
}

/// The body of `POST /admin/v1/accounts/{id}/credits`.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewCredit {
    /// What to add; negative corrects.
    #[schemars(with = "Amount")]
    amount: String,
    /// Why, on the ledger row.
    #[schemars(length(min = 1, max = MAX_ADMIN_TEXT))]
    reason: String,
    /// A correction may take the balance below zero.
    #[serde(default)]
    allow_negative: bool,
}

/// The body of `POST /admin/v1/accounts/{id}/keys`.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "KeyName")]
pub(crate) struct NewKeyInput {
    /// Its label; `default` when left out.
    #[schemars(length(min = 1, max = MAX_ADMIN_TEXT))]
    name: Option<String>,
}

/// The body of `PUT /admin/v1/groups/{name}`: what to change of a price group.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "GroupEdit")]
pub(crate) struct GroupInput {
    /// The multiplier of every model's list price, a decimal string.
    multiplier: Option<String>,
    /// Models' own multipliers to set, decimal strings.
    #[serde(default)]
    models: std::collections::BTreeMap<String, String>,
    /// Models whose own multipliers to remove.
    #[serde(default)]
    drop_models: Vec<String>,
}

/// The body of `POST /admin/v1/prices/{name}`: a new version of a model's price.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PriceEdit")]
pub(crate) struct PriceInput {
    /// The list tariff.
    price: tollgate_billing::Tariff,
    /// RFC 3339; now when left out, never in the past.
    effective_from: Option<String>,
}

/// A model's versions (of `versions`, every model's) and the one in effect now.
/// `model`'s versions among `versions`, and the one in effect now.
fn model_prices(model: &str, versions: &[tollgate_store::StoredPrice]) -> views::ModelPrices {
    let mine: Vec<tollgate_store::StoredPrice> = versions
        .iter()
        .filter(|p| p.model == model)
        .cloned()
        .collect();
    let now = tollgate_journal::clock::now_millis();
    let current = tollgate_store::StoredPrice::in_effect(&mine, now)
        .first()
        .map(|p| p.version);
    views::ModelPrices {
        model: model.to_owned(),
        current,
        versions: mine.iter().map(views::price).collect(),
    }
}

/// `GET /config`: the settings' generation in force, since when, where they are read from, and
/// the last reload refused (`docs/operations.md`, "Reloading the configuration").
fn config_status(ctx: &RequestCtx, reload: Option<&dyn Reload>) -> views::ConfigStatus {
    let live = &ctx.state.settings;
    views::ConfigStatus {
        generation: live.generation(),
        installed_at: format_rfc3339(live.installed_at()),
        source: reload.map(Reload::source),
        reloads_refused: live.refused(),
        last_refusal: live.last_refusal().map(|(at, error)| views::Refusal {
            at: format_rfc3339(at),
            error,
        }),
    }
}

fn channels(ctx: &RequestCtx) -> views::List<views::Channel> {
    let data = ctx
        .settings
        .catalog
        .channels()
        .iter()
        .map(|c| views::Channel {
            name: c.name.clone(),
            format: c.format.name(),
            base_url: c.endpoint.base_url.clone(),
            health: c.health.report(),
            in_flight: c
                .max_concurrency
                .saturating_sub(c.permits.available_permits()),
            max_concurrency: c.max_concurrency,
        })
        .collect();
    views::List { data }
}

fn models(ctx: &RequestCtx) -> views::List<views::CatalogModel> {
    let catalog = &ctx.settings.catalog;
    let now = tollgate_journal::clock::now_millis();
    let data = catalog
        .models()
        .iter()
        .map(|m| {
            let price = ctx.state.prices.at(&m.public, &m.tariff, now);
            views::CatalogModel {
                model: m.public.clone(),
                kind: m.kind,
                upstream_model: m.upstream_model.clone(),
                channels: m.channels.iter().map(|c| c.name.clone()).collect(),
                price: price.tariff,
                price_version: price.version,
                aliases: catalog
                    .aliases_of(&m.public)
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            }
        })
        .collect();
    views::List { data }
}

/// What the console's overview shows: spend and requests per hour (or day) over a period, by
/// model and by status, the error rate, open holds and leases, tasks in flight.
async fn overview(ctx: &RequestCtx, query: &str) -> Result<views::Overview, ApiError> {
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
    let now = tollgate_journal::clock::now_millis();
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
    let totals = |group: UsageGroup, rows: &[tollgate_store::UsageSummary]| {
        rows.iter().map(|s| views::summary(group, s)).collect()
    };
    Ok(views::Overview {
        hours,
        bucket: bucket.as_str(),
        over_time: totals(bucket, &over_time),
        by_model: totals(UsageGroup::Model, &by_model),
        by_status: totals(UsageGroup::Status, &by_status),
        requests,
        errors,
        open_holds: views::Open {
            count: u64::try_from(holds).unwrap_or(0),
            amount: held,
        },
        open_leases: views::Open {
            count: leases.len() as u64,
            amount: tollgate_billing::Amount::from_nanos(leased),
        },
        tasks_in_flight,
    })
}

mod tasks {
    //! Tasks of every account: list, inspect with history, cancel and refund.

    use super::*;

    pub async fn list(ctx: &RequestCtx, query: &str) -> Answer {
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
            &views::Page {
                data: tasks.iter().map(views::task).collect(),
                next_cursor: next,
            },
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

    pub async fn get(ctx: &RequestCtx, id: &str) -> Answer {
        let task = find(ctx, id).await?;
        let events = ctx
            .state
            .store
            .task_events(id)
            .await
            .map_err(OpError::from)?;
        let view = views::TaskView {
            history: Some(events),
            ..views::task(&task)
        };
        Ok(body::json_response(StatusCode::OK, &view))
    }

    pub async fn cancel(ctx: &RequestCtx, actor: &Actor, id: &str) -> Answer {
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
    use tollgate_store::{Store, UsageFilter};

    const PAGE: u32 = 1000;

    pub fn usage_export(store: Store, filter: UsageFilter) -> Response<ResponseBody> {
        let (tx, body) = tollgate_exchange::body::channel_body();
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
