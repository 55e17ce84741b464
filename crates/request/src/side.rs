//! The seam to the parts served beside the request path, each a crate of its own that the
//! request path does not depend on (`docs/architecture.md`, "The operator's side"): the
//! operator's (`tollgate-admin`: the admin API, the console, the OpenAPI document), reachable
//! only from `[server] admin_networks`, and the customer's (`tollgate-portal`: the portal),
//! reachable from anywhere with its own sessions. The binary mounts them on the gateway
//! (`tollgate_gateway::Gateway::with_operator_side`, `with_customer_side`), and the service
//! hands each its routes.

use crate::context::RequestCtx;
use futures_util::future::BoxFuture;
use http::{Request, Response};
use hyper::body::Incoming;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::ApiError;

/// What serves one side's routes (`ctx.route` says which).
pub trait Side: Send + Sync + std::fmt::Debug {
    /// Answers one request on one of the side's routes.
    fn serve(
        &self,
        ctx: RequestCtx,
        request: Request<Incoming>,
    ) -> BoxFuture<'static, Result<Response<ResponseBody>, ApiError>>;
}
