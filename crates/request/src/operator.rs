//! The seam to the operator's side: the admin API, the console and the OpenAPI document live in a
//! crate of their own (`tollgate-admin`) that the request path does not depend on; the binary
//! mounts one on the gateway (`tollgate_gateway::Gateway::with_operator_side`), and the service hands it
//! the operator's routes once the client's network may reach them
//! (`docs/architecture.md`, "The operator's side").

use crate::context::RequestCtx;
use futures_util::future::BoxFuture;
use http::{Request, Response};
use hyper::body::Incoming;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::ApiError;

/// What serves the operator's routes (`Route::Admin`, `Route::Console`, `Route::OpenApi`;
/// `ctx.route` says which).
pub trait OperatorSide: Send + Sync + std::fmt::Debug {
    /// Answers one request on an operator's route.
    fn serve(
        &self,
        ctx: RequestCtx,
        request: Request<Incoming>,
    ) -> BoxFuture<'static, Result<Response<ResponseBody>, ApiError>>;
}
