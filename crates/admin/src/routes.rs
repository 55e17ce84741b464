//! The admin API's routes (`docs/operations.md`, "The admin API"): one table, read by the router
//! ([`route`]) and by the OpenAPI document (`crate::openapi`), as the client routes' table
//! (`tollgate_gateway::routes::TABLE`) is by the gateway.

use crate::about;
use crate::api::{self, Call, Holder};
use futures_util::future::BoxFuture;
use http::{Method, Request, Response};
use hyper::body::Incoming;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::About;

/// An operation of the admin API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminOp {
    ListAccounts,
    CreateAccount,
    Account,
    DisableAccount,
    EnableAccount,
    Credit,
    AccountKeys,
    AddKey,
    Ledger,
    Statement,
    Policy(Holder),
    SetPolicy(Holder),
    ClearPolicy(Holder),
    RevokeKey,
    EnableKey,
    RotateKey,
    Groups,
    SetGroup,
    Prices,
    PriceHistory,
    SetPrice,
    Request,
    Usage,
    UsageSummary,
    UsageCsv,
    Holds,
    Sessions,
    Leases,
    Audit,
    Tasks,
    Task,
    CancelTask,
    Channels,
    DisableChannel,
    Config,
    ReloadConfig,
    EnableChannel,
    Models,
    Changes,
    Overview,
    Alerts,
    PutAlert,
    DeleteAlert,
    AlertEvents,
    AlertDeliveries,
    AlertDelivery,
    Redeliver,
    CodeBatches,
    IssueCodes,
    CodeBatch,
    RevokeCodes,
    Payments,
    Payment,
    People,
    Invite,
    RemovePerson,
}

/// What an operation answers.
pub type Answer = BoxFuture<'static, Result<Response<ResponseBody>, ApiError>>;

/// An operation: the call, and the request for one that reads a body.
pub type Handler = fn(Call, Request<Incoming>) -> Answer;

/// A row: method, path under `/admin/v1` (`{id}` and `{name}` stand for one segment), the
/// operation's name, its handler (`crate::api`) and its description in the OpenAPI document
/// (`crate::about`).
pub struct AdminRoute {
    pub method: Method,
    pub path: &'static str,
    pub op: AdminOp,
    pub handler: Handler,
    pub about: fn() -> About,
}

impl std::fmt::Debug for AdminRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({:?})", self.method, self.path, self.op)
    }
}

const fn row(
    method: Method,
    path: &'static str,
    op: AdminOp,
    handler: Handler,
    about: fn() -> About,
) -> AdminRoute {
    AdminRoute {
        method,
        path,
        op,
        handler,
        about,
    }
}

/// The handler `api::f(call)`; `api::f(call, request)` for one that reads a body (`body`); with
/// an argument after them for an operation two rows share (an account's or a key's policy,
/// enable or disable).
macro_rules! op {
    ($f:ident) => {
        |call, _| Box::pin(api::$f(call))
    };
    ($f:ident, body) => {
        |call, request| Box::pin(api::$f(call, request))
    };
    ($f:ident, body, $arg:expr) => {
        |call, request| Box::pin(api::$f(call, request, $arg))
    };
    ($f:ident, $arg:expr) => {
        |call, _| Box::pin(api::$f(call, $arg))
    };
}

use AdminOp::*;
const GET: Method = Method::GET;
const POST: Method = Method::POST;
const PUT: Method = Method::PUT;
const PATCH: Method = Method::PATCH;
const DELETE: Method = Method::DELETE;

/// Every operation of the admin API.
#[rustfmt::skip]
pub static ADMIN_ROUTES: &[AdminRoute] = &[
    row(GET, "/accounts", ListAccounts, op!(list_accounts), about::list_accounts),
    row(POST, "/accounts", CreateAccount, op!(create_account, body), about::create_account),
    row(GET, "/accounts/{id}", Account, op!(account), about::account_detail),
    row(POST, "/accounts/{id}/disable", DisableAccount, op!(switch_account, true), about::disable_account),
    row(POST, "/accounts/{id}/enable", EnableAccount, op!(switch_account, false), about::enable_account),
    row(POST, "/accounts/{id}/credits", Credit, op!(credit, body), about::credit),
    row(GET, "/accounts/{id}/keys", AccountKeys, op!(account_keys), about::account_keys),
    row(POST, "/accounts/{id}/keys", AddKey, op!(add_key, body), about::add_key),
    row(GET, "/accounts/{id}/ledger", Ledger, op!(ledger_page), about::ledger),
    row(GET, "/accounts/{id}/statement", Statement, op!(statement), about::statement),
    row(GET, "/accounts/{id}/policy", Policy(Holder::Account), op!(policy, Holder::Account), about::account_policy),
    row(PATCH, "/accounts/{id}/policy", SetPolicy(Holder::Account), op!(set_policy, body, Holder::Account), about::set_account_policy),
    row(DELETE, "/accounts/{id}/policy", ClearPolicy(Holder::Account), op!(clear_policy, Holder::Account), about::clear_account_policy),
    row(GET, "/keys/{id}/policy", Policy(Holder::Key), op!(policy, Holder::Key), about::key_policy),
    row(PATCH, "/keys/{id}/policy", SetPolicy(Holder::Key), op!(set_policy, body, Holder::Key), about::set_key_policy),
    row(DELETE, "/keys/{id}/policy", ClearPolicy(Holder::Key), op!(clear_policy, Holder::Key), about::clear_key_policy),
    row(POST, "/keys/{id}/revoke", RevokeKey, op!(revoke_key), about::revoke_key),
    row(POST, "/keys/{id}/enable", EnableKey, op!(enable_key), about::enable_key),
    row(POST, "/keys/{id}/rotate", RotateKey, op!(rotate_key), about::rotate_key),
    row(GET, "/groups", Groups, op!(groups), about::groups),
    row(PUT, "/groups/{name}", SetGroup, op!(set_group, body), about::set_group),
    row(GET, "/prices", Prices, op!(prices), about::prices),
    row(GET, "/prices/{name}", PriceHistory, op!(price_history), about::price_history),
    row(POST, "/prices/{name}", SetPrice, op!(set_price, body), about::set_price),
    row(GET, "/requests/{id}", Request, op!(request_charges), about::request_charges),
    row(GET, "/usage", Usage, op!(usage), about::usage),
    row(GET, "/usage/summary", UsageSummary, op!(usage_summary), about::usage_summary),
    row(GET, "/usage.csv", UsageCsv, op!(usage_csv), about::usage_csv),
    row(GET, "/holds", Holds, op!(holds), about::holds),
    row(GET, "/sessions", Sessions, op!(sessions), about::sessions),
    row(GET, "/leases", Leases, op!(leases), about::leases),
    row(GET, "/audit", Audit, op!(audit), about::audit),
    row(GET, "/tasks", Tasks, op!(list_tasks), about::tasks),
    row(GET, "/tasks/{id}", Task, op!(task), about::task_detail),
    row(POST, "/tasks/{id}/cancel", CancelTask, op!(cancel_task), about::cancel_task),
    row(GET, "/channels", Channels, op!(list_channels), about::channels),
    row(POST, "/channels/{name}/disable", DisableChannel, op!(switch_channel, true), about::disable_channel),
    row(POST, "/channels/{name}/enable", EnableChannel, op!(switch_channel, false), about::enable_channel),
    row(GET, "/models", Models, op!(list_models), about::models),
    row(GET, "/config", Config, op!(show_config), about::config),
    row(POST, "/config/reload", ReloadConfig, op!(reload_config), about::reload_config),
    row(GET, "/changes", Changes, op!(changes), about::changes),
    row(GET, "/overview", Overview, op!(show_overview), about::overview),
    row(GET, "/alerts", Alerts, op!(list_alerts), about::alerts),
    row(POST, "/alerts", PutAlert, op!(put_alert, body), about::put_alert),
    row(DELETE, "/alerts/{name}", DeleteAlert, op!(delete_alert), about::delete_alert),
    row(GET, "/alerts/events", AlertEvents, op!(alert_events), about::alert_events),
    row(GET, "/alerts/deliveries", AlertDeliveries, op!(alert_deliveries), about::alert_deliveries),
    row(GET, "/alerts/deliveries/{id}", AlertDelivery, op!(alert_delivery), about::alert_delivery),
    row(POST, "/alerts/deliveries/{id}/redeliver", Redeliver, op!(redeliver), about::redeliver),
    row(GET, "/accounts/{id}/people", People, op!(people), about::people),
    row(POST, "/accounts/{id}/people", Invite, op!(invite, body), about::invite),
    row(DELETE, "/people/{id}", RemovePerson, op!(remove_person), about::remove_person),
    row(GET, "/code-batches", CodeBatches, op!(code_batches), about::code_batches),
    row(POST, "/code-batches", IssueCodes, op!(issue_codes, body), about::issue_codes),
    row(GET, "/code-batches/{id}", CodeBatch, op!(code_batch), about::code_batch),
    row(POST, "/code-batches/{id}/revoke", RevokeCodes, op!(revoke_codes), about::revoke_codes),
    row(GET, "/payments", Payments, op!(payments), about::payments),
    row(GET, "/payments/{id}", Payment, op!(payment), about::payment),
];

/// A request's operation, with the one segment its path names (`""` when it names none).
#[derive(Debug)]
pub struct Routed<'p> {
    pub row: &'static AdminRoute,
    pub param: &'p str,
}

/// The operation at `method` `path` (the path under `/admin/v1`; empty segments are ignored, so
/// `/accounts/` is `/accounts`).
pub fn route<'p>(method: &Method, path: &'p str) -> Option<Routed<'p>> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    ADMIN_ROUTES.iter().find_map(|row| {
        if row.method != *method {
            return None;
        }
        let pattern: Vec<&str> = row.path.split('/').filter(|s| !s.is_empty()).collect();
        if pattern.len() != segments.len() {
            return None;
        }
        let mut param = "";
        for (want, got) in pattern.iter().zip(&segments) {
            if want.starts_with('{') {
                param = got;
            } else if want != got {
                return None;
            }
        }
        Some(Routed { row, param })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_its_operation_and_its_segment() {
        assert_eq!(
            route(&Method::POST, "/accounts/acme/credits").map(|r| (r.row.op, r.param)),
            Some((Credit, "acme"))
        );
        assert_eq!(
            route(&Method::PATCH, "/keys/key_1/policy").map(|r| (r.row.op, r.param)),
            Some((SetPolicy(Holder::Key), "key_1"))
        );
        assert_eq!(
            route(&Method::GET, "/accounts/").map(|r| (r.row.op, r.param)),
            Some((ListAccounts, ""))
        );
        assert_eq!(
            route(&Method::GET, "/usage.csv").map(|r| r.row.op),
            Some(UsageCsv)
        );
        assert!(route(&Method::DELETE, "/accounts").is_none());
        assert!(route(&Method::GET, "/accounts/a/b/c").is_none());
        assert!(route(&Method::GET, "/nothing").is_none());
    }

    #[test]
    fn every_row_is_reachable() {
        for row in ADMIN_ROUTES {
            let concrete = row.path.replace("{id}", "x").replace("{name}", "x");
            assert_eq!(
                route(&row.method, &concrete).map(|r| r.row.op),
                Some(row.op),
                "{} {} is shadowed by an earlier row",
                row.method,
                row.path
            );
        }
    }
}
