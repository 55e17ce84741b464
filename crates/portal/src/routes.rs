//! The portal's routes: one table, read by the router ([`handle`]) and by the OpenAPI
//! document (`tollgate_admin::openapi`, through [`PORTAL_ROUTES`]), as the admin API's is.

use crate::api::{self, Visit};
use crate::auth::Door;
use crate::page;
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
];

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
    let Some(row) = PORTAL_ROUTES
        .iter()
        .find(|r| r.path == rest && r.method == method)
    else {
        let known = PORTAL_ROUTES.iter().any(|r| r.path == rest);
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
    let visit = Visit::begin(ctx, &request, row.door).await?;
    (row.handler)(visit, request).await
}
