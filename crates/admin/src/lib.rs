//! # tollgate-admin
//!
//! The operator's side: the admin API under `/admin/v1/` (`docs/decisions.md`, "The admin
//! API"; `docs/operations.md`), the OpenAPI document and the console — a crate of its own that
//! the request path (`tollgate-gateway`) does not depend on, standing on the crates every
//! request stands on (the exchange's vocabulary, the settings, the books, the request's context:
//! `docs/architecture.md`, "Crates by concern") and the store alone. The binary mounts [`Admin`] on the
//! gateway (`Gateway::with_operator_side`); the CLI runs [`ops`] directly.
//!
//! Every request is authenticated by an admin token (`tga-…`, made with `tollgate admin token
//! create`): a read-only token may only read. Client API keys are refused here, as admin tokens
//! are on client routes. Changes go through [`ops`], the code the CLI runs too, and each is
//! recorded in the admin audit log. Errors take the OpenAI shape
//! (`{"error":{"message","type","param","code"}}`), with `param` naming the field.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod about;
pub mod alerts;
pub mod api;
pub mod codes;
pub mod console;
pub mod openapi;
pub mod ops;
pub mod people;
pub mod routes;
pub mod views;

use api::Call;
use futures_util::future::BoxFuture;
use http::{HeaderMap, Method, Request, Response};
use hyper::body::Incoming;
use ops::{Actor, OpError, OpErrorKind};
use routes::Routed;
use std::sync::Arc;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_request::context::RequestCtx;
use tollgate_request::routes::{Route, RouteSpec};
use tollgate_request::side::Side;
use tollgate_settings::reload::Reload;
use tollgate_store::AdminToken;

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
    /// `tollgate_gateway::routes::TABLE.specs()`), reloading the configuration with `reload`.
    pub fn new(reload: Option<Arc<dyn Reload>>, routes: &[&RouteSpec]) -> Admin {
        Admin {
            reload,
            document: openapi::bytes(routes),
        }
    }
}

impl Side for Admin {
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
                _ => handle(ctx, request, reload).await,
            }
        })
    }
}

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
    reload: Option<Arc<dyn Reload>>,
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
    let Some(Routed { row, param }) = routes::route(&method, rest) else {
        return Err(ApiError::new(
            ErrorKind::NotFound,
            format!("Unknown admin route: {method} {path}; see GET /openapi.json"),
        )
        .code("unknown_url"));
    };
    let call = Call {
        id: param.to_owned(),
        ctx,
        query,
        actor,
        token,
        reload,
    };
    (row.handler)(call, request).await
}

/// The admin token of a request: `Authorization: Bearer tga-…`.
async fn authenticate(ctx: &RequestCtx, headers: &HeaderMap) -> Result<AdminToken, ApiError> {
    let Some(secret) = tollgate_request::auth::presented_secret(
        tollgate_exchange::errors::Family::OpenAi,
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
