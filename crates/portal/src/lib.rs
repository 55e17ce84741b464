//! # tollgate-portal
//!
//! The customer's side (docs/operations.md, "The customer portal"; docs/decisions.md, "The
//! customer portal"): `/portal`, where the people of one account sign in to see their balance
//! and ledger, redeem codes and turn on TOTP — a crate of its own beside the request path, as
//! the operator's side is (`tollgate-admin`), mounted by the binary
//! (`Gateway::with_customer_side`).
//!
//! A person is invited by the operator (`tollgate accounts invite`, the admin API, the
//! console) with a one-time link, sets a password (argon2id) and signs in to a server-side
//! session held in the store: an `HttpOnly; SameSite=Strict` cookie (`Secure` over TLS), a
//! CSRF token on every write, sign-ins throttled per person and per address. Every route
//! serves the session's account and no other: nothing a request names can reach another
//! account's rows.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
pub mod auth;
pub mod balance_alerts;
pub mod page;
pub mod payments;
pub mod routes;

use futures_util::future::BoxFuture;
use http::{Request, Response};
use hyper::body::Incoming;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::ApiError;
use tollgate_request::context::RequestCtx;
use tollgate_request::side::Side;

/// The customer's side, as mounted on a gateway.
#[derive(Debug, Clone, Default)]
pub struct Portal;

impl Side for Portal {
    fn serve(
        &self,
        ctx: RequestCtx,
        request: Request<Incoming>,
    ) -> BoxFuture<'static, Result<Response<ResponseBody>, ApiError>> {
        Box::pin(routes::handle(ctx, request))
    }
}
