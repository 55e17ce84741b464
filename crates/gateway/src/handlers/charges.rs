//! `GET /v1/charges/{request_id}`: what one of the caller's requests was charged, and why
//! (docs/api.md, "What a request cost"). Only the key that made the request sees it; for any
//! other, the request does not exist.

use http::StatusCode;
use serde_json::json;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{About, ok, r};
use tollgate_request::context::RequestCtx;
use tollgate_store::{Principal, Viewer};

pub async fn get(
    ctx: RequestCtx,
    principal: Principal,
    request: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<ResponseBody>, ApiError> {
    let request_id = tollgate_request::routes::last_segment(request.uri().path());
    let viewer = Viewer {
        account_id: Some(&principal.account_id),
        key_id: Some(&principal.key_id),
    };
    let found = ctx
        .state
        .store
        .explain(request_id, viewer)
        .await
        .map_err(|e| ApiError::internal("reading the request's charges", e))?
        .ok_or_else(|| {
            ApiError::new(
                ErrorKind::NotFound,
                format!("No request {request_id:?} was made with this API key (or its record has been pruned and it was not charged)"),
            )
            .param("request_id")
            .code("request_not_found")
        })?;
    Ok(body::json_response(
        StatusCode::OK,
        &json!({
            "object": "tollgate.charges",
            "request_id": request_id,
            "charged": found.charged(),
            "data": found.charges,
        }),
    ))
}

/// `GET /v1/charges/{request_id}`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "What one of this key's requests was charged, and why",
        "billing",
        ok(r("RequestCharges")),
    )
    .param(
        "request_id",
        "The request's id (its x-request-id answer header)",
    )
}
