//! The admin API's routes (`docs/operations.md`, "The admin API"): one table, read by the router
//! ([`route`]) and by the OpenAPI document (`crate::openapi`), as the client routes' table
//! (`tollgate_gateway_core::routes::ROUTES`) is by the gateway.

use http::Method;

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
}

/// Whose access policy a policy route names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// `accounts/{id}/policy`: an account, by id or name.
    Account,
    /// `keys/{id}/policy`: a key, by id.
    Key,
}

/// A row: method, path under `/admin/v1` (`{id}` and `{name}` stand for one segment) and the
/// operation.
#[derive(Debug)]
pub struct AdminRoute {
    pub method: Method,
    pub path: &'static str,
    pub op: AdminOp,
}

const fn row(method: Method, path: &'static str, op: AdminOp) -> AdminRoute {
    AdminRoute { method, path, op }
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
    row(GET,    "/accounts",                ListAccounts),
    row(POST,   "/accounts",                CreateAccount),
    row(GET,    "/accounts/{id}",           Account),
    row(POST,   "/accounts/{id}/disable",   DisableAccount),
    row(POST,   "/accounts/{id}/enable",    EnableAccount),
    row(POST,   "/accounts/{id}/credits",   Credit),
    row(GET,    "/accounts/{id}/keys",      AccountKeys),
    row(POST,   "/accounts/{id}/keys",      AddKey),
    row(GET,    "/accounts/{id}/ledger",    Ledger),
    row(GET,    "/accounts/{id}/statement", Statement),
    row(GET,    "/accounts/{id}/policy",    Policy(Holder::Account)),
    row(PATCH,  "/accounts/{id}/policy",    SetPolicy(Holder::Account)),
    row(DELETE, "/accounts/{id}/policy",    ClearPolicy(Holder::Account)),
    row(GET,    "/keys/{id}/policy",        Policy(Holder::Key)),
    row(PATCH,  "/keys/{id}/policy",        SetPolicy(Holder::Key)),
    row(DELETE, "/keys/{id}/policy",        ClearPolicy(Holder::Key)),
    row(POST,   "/keys/{id}/revoke",        RevokeKey),
    row(POST,   "/keys/{id}/enable",        EnableKey),
    row(POST,   "/keys/{id}/rotate",        RotateKey),
    row(GET,    "/groups",                  Groups),
    row(PUT,    "/groups/{name}",           SetGroup),
    row(GET,    "/prices",                  Prices),
    row(GET,    "/prices/{name}",           PriceHistory),
    row(POST,   "/prices/{name}",           SetPrice),
    row(GET,    "/requests/{id}",           Request),
    row(GET,    "/usage",                   Usage),
    row(GET,    "/usage/summary",           UsageSummary),
    row(GET,    "/usage.csv",               UsageCsv),
    row(GET,    "/holds",                   Holds),
    row(GET,    "/leases",                  Leases),
    row(GET,    "/audit",                   Audit),
    row(GET,    "/tasks",                   Tasks),
    row(GET,    "/tasks/{id}",              Task),
    row(POST,   "/tasks/{id}/cancel",       CancelTask),
    row(GET,    "/channels",                Channels),
    row(POST,   "/channels/{name}/disable", DisableChannel),
    row(POST,   "/channels/{name}/enable",  EnableChannel),
    row(GET,    "/models",                  Models),
    row(GET,    "/config",                  Config),
    row(POST,   "/config/reload",           ReloadConfig),
    row(GET,    "/changes",                 Changes),
    row(GET,    "/overview",                Overview),
    row(GET,    "/alerts",                  Alerts),
    row(POST,   "/alerts",                  PutAlert),
    row(DELETE, "/alerts/{name}",           DeleteAlert),
    row(GET,    "/alerts/events",           AlertEvents),
    row(GET,    "/alerts/deliveries",       AlertDeliveries),
    row(GET,    "/alerts/deliveries/{id}",  AlertDelivery),
    row(POST,   "/alerts/deliveries/{id}/redeliver", Redeliver),
];

/// A request's operation, with the one segment its path names (`""` when it names none).
#[derive(Debug, PartialEq, Eq)]
pub struct Routed<'p> {
    pub op: AdminOp,
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
        Some(Routed { op: row.op, param })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_its_operation_and_its_segment() {
        assert_eq!(
            route(&Method::POST, "/accounts/acme/credits"),
            Some(Routed {
                op: Credit,
                param: "acme"
            })
        );
        assert_eq!(
            route(&Method::PATCH, "/keys/key_1/policy"),
            Some(Routed {
                op: SetPolicy(Holder::Key),
                param: "key_1"
            })
        );
        assert_eq!(
            route(&Method::GET, "/accounts/"),
            Some(Routed {
                op: ListAccounts,
                param: ""
            })
        );
        assert_eq!(
            route(&Method::GET, "/usage.csv").map(|r| r.op),
            Some(UsageCsv)
        );
        assert_eq!(route(&Method::DELETE, "/accounts"), None);
        assert_eq!(route(&Method::GET, "/accounts/a/b/c"), None);
        assert_eq!(route(&Method::GET, "/nothing"), None);
    }

    #[test]
    fn every_row_is_reachable() {
        for row in ADMIN_ROUTES {
            let concrete = row.path.replace("{id}", "x").replace("{name}", "x");
            assert_eq!(
                route(&row.method, &concrete).map(|r| r.op),
                Some(row.op),
                "{} {} is shadowed by an earlier row",
                row.method,
                row.path
            );
        }
    }
}
