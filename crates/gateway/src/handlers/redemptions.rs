//! `POST /v1/redemptions`: a redemption code redeemed for the calling key's account
//! (docs/api.md §8.2; the sequence and its throttle are `tollgate_request::codes`, shared with
//! the customer portal).

use http::StatusCode;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::{About, json_body, r};
use tollgate_request::context::RequestCtx;
use tollgate_store::Principal;

/// The request: one code, as the person typed it.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RedeemRequest {
    code: String,
}

pub async fn redeem(
    ctx: RequestCtx,
    principal: Principal,
    request: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let raw = body::read_limited(&parts.headers, body, ctx.body_bounds()).await?;
    let asked: RedeemRequest = body::decode_json(&raw)?;
    let redeemed =
        tollgate_request::codes::redeem(&ctx, &principal.account_id, &asked.code).await?;
    Ok(body::json_response(StatusCode::CREATED, &redeemed))
}

/// `POST /v1/redemptions`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "Redeem a redemption code for this key's account: its amount is added to the balance",
        "billing",
        serde_json::json!({"201": {"description": "Redeemed", "content": {"application/json":
            {"schema": r("CodeRedeemed")}}}}),
    )
    .body(json_body(serde_json::json!({
        "type": "object", "required": ["code"], "additionalProperties": false,
        "properties": {"code": {"type": "string", "minLength": 1, "maxLength": 200,
            "description": "The code as printed: 28 letters and digits, dashes and spaces ignored"}},
    })))
}
