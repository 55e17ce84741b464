//! The portal's routes: one table, read by the router ([`handle`]) and by the OpenAPI
//! document (`tollgate_admin::openapi`, through [`PORTAL_ROUTES`]), as the admin API's is.

use crate::api::{self, Visit};
use crate::auth::Door;
use crate::balance_alerts;
use crate::page;
use crate::payments;
use futures_util::future::BoxFuture;
use http::{Method, Request, Response};
use hyper::body::Incoming;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::About;
use tollgate_request::context::RequestCtx;

/// What a route answers.
pub type Answer = BoxFuture<'static, Result<Response<ResponseBody>, ApiError>>;

/// A route: method, path under `/portal/v1`, who may call it, its handler and its
/// description in the OpenAPI document.
pub struct PortalRoute {
    pub method: Method,
    pub path: &'static str,
    pub door: Door,
    pub handler: fn(Visit, Request<Incoming>) -> Answer,
    pub about: fn() -> About,
}

impl std::fmt::Debug for PortalRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} /portal/v1{}", self.method, self.path)
    }
}

macro_rules! op {
    ($f:ident) => {
        |visit, request| Box::pin(api::$f(visit, request))
    };
    ($module:ident :: $f:ident) => {
        |visit, request| Box::pin(crate::$module::$f(visit, request))
    };
}

const fn row(
    method: Method,
    path: &'static str,
    door: Door,
    handler: fn(Visit, Request<Incoming>) -> Answer,
    about: fn() -> About,
) -> PortalRoute {
    PortalRoute {
        method,
        path,
        door,
        handler,
        about,
    }
}

use Door::{Open, Session};
const GET: Method = Method::GET;
const POST: Method = Method::POST;
const PUT: Method = Method::PUT;
const DELETE: Method = Method::DELETE;

/// Every route of the portal's JSON API.
#[rustfmt::skip]
pub static PORTAL_ROUTES: &[PortalRoute] = &[
    row(POST, "/invitations/accept", Open, op!(accept_invitation), api::about_accept),
    row(POST, "/sessions", Open, op!(sign_in), api::about_sign_in),
    row(GET, "/session", Session, op!(session), api::about_session),
    row(DELETE, "/session", Session, op!(sign_out), api::about_sign_out),
    row(GET, "/account", Session, op!(account), api::about_account),
    row(GET, "/ledger", Session, op!(ledger), api::about_ledger),
    row(POST, "/redemptions", Session, op!(redeem), api::about_redeem),
    row(POST, "/totp", Session, op!(begin_totp), api::about_begin_totp),
    row(POST, "/totp/confirm", Session, op!(confirm_totp), api::about_confirm_totp),
    row(GET, "/keys", Session, op!(keys), api::about_keys),
    row(POST, "/keys", Session, op!(create_key), api::about_create_key),
    row(POST, "/keys/{id}/revoke", Session, op!(revoke_key), api::about_revoke_key),
    row(GET, "/usage", Session, op!(usage), api::about_usage),
    row(GET, "/charges/{id}", Session, op!(charges), api::about_charges),
    row(GET, "/statement", Session, op!(statement), api::about_statement),
    row(GET, "/topups/terms", Session, op!(payments::terms), payments::about_terms),
    row(POST, "/topups", Session, op!(payments::start), payments::about_start),
    row(GET, "/payments", Session, op!(payments::payments), payments::about_payments),
    row(GET, "/payments/{id}", Session, op!(payments::payment), payments::about_payment),
    row(GET, "/auto-topup", Session, op!(payments::auto_topup), payments::about_auto_topup),
    row(PUT, "/auto-topup", Session, op!(payments::set_auto_topup), payments::about_set_auto_topup),
    row(GET, "/balance-alerts", Session, op!(balance_alerts::list), balance_alerts::about_list),
    row(POST, "/balance-alerts", Session, op!(balance_alerts::create), balance_alerts::about_create),
    row(DELETE, "/balance-alerts/{id}", Session, op!(balance_alerts::delete), balance_alerts::about_delete),
];

/// Whether `path` (under `/portal/v1`) is `pattern`'s, `{id}` standing for one segment; the
/// segment when it is.
fn matches<'p>(pattern: &str, path: &'p str) -> Option<&'p str> {
    let (mut want, mut have) = (pattern.split('/'), path.split('/'));
    let mut param = "";
    loop {
        match (want.next(), have.next()) {
            (None, None) => return Some(param),
            (Some("{id}"), Some(segment)) if !segment.is_empty() => param = segment,
            (Some(w), Some(h)) if w == h => {}
            _ => return None,
        }
    }
}

/// Answers a request under `/portal`.
pub async fn handle(
    ctx: RequestCtx,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let path = request.uri().path().to_owned();
    let Some(rest) = path.strip_prefix("/portal/v1") else {
        return Ok(page::asset(&path));
    };
    let method = request.method().clone();
    let Some((row, param)) = PORTAL_ROUTES
        .iter()
        .filter(|r| r.method == method)
        .find_map(|r| matches(r.path, rest).map(|p| (r, p.to_owned())))
    else {
        let known = PORTAL_ROUTES
            .iter()
            .any(|r| matches(r.path, rest).is_some());
        return Err(if known {
            ApiError::new(
                ErrorKind::MethodNotAllowed,
                format!("{method} is not allowed on {path}"),
            )
        } else {
            ApiError::new(ErrorKind::NotFound, format!("Unknown portal route: {path}"))
                .code("unknown_url")
        });
    };
    let mut visit = Visit::begin(ctx, &request, row.door).await?;
    visit.param = param;
    (row.handler)(visit, request).await
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn a_pattern_names_one_segment() {
        assert_eq!(
            matches("/keys/{id}/revoke", "/keys/key_1/revoke"),
            Some("key_1")
        );
        assert_eq!(matches("/keys/{id}/revoke", "/keys//revoke"), None);
        assert_eq!(matches("/keys/{id}/revoke", "/keys/a/b/revoke"), None);
        assert_eq!(matches("/keys", "/keys"), Some(""));
        assert_eq!(matches("/keys", "/keys/"), None);
    }
}
