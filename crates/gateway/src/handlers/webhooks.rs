//! `POST /webhooks/stripe`: the payment provider's signed events (docs/api.md §8.3;
//! docs/decisions.md, "Payments"). No key: the signature is the credential. The body is read
//! whole within its limit, exactly as sent, since the signature is over those bytes; what it
//! does is `tollgate_payments::webhook`.

use http::StatusCode;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::{About, r};
use tollgate_request::context::RequestCtx;

pub async fn stripe(
    ctx: RequestCtx,
    request: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<ResponseBody>, ApiError> {
    let (parts, incoming) = request.into_parts();
    let raw = body::read_limited(&parts.headers, incoming, ctx.body_bounds()).await?;
    let now = tollgate_journal::clock::now_millis().div_euclid(1_000);
    let receipt =
        tollgate_payments::webhook::receive(&ctx.state, &parts.headers, &raw, now).await?;
    Ok(body::json_response(StatusCode::OK, &receipt))
}

/// `POST /webhooks/stripe`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "Stripe's webhook deliveries: checkout.session.completed, payment_intent.succeeded, \
         charge.refunded, charge.dispute.created and .closed, verified by Stripe-Signature",
        "billing",
        serde_json::json!({
            "200": {"description": "Applied, applied before, or not about a payment of this gateway's",
                "content": {"application/json": {"schema": {"type": "object",
                    "required": ["event", "outcome"],
                    "properties": {"event": {"type": "string"}, "outcome": {"type": "string"},
                        "ledger_id": {"type": "string"}}}}}},
            "400": {"description": "The signature does not verify, or the event cannot be read",
                "content": {"application/json": {"schema": r("OpenAiError")}}},
            "404": {"description": "No payment provider is configured",
                "content": {"application/json": {"schema": r("OpenAiError")}}},
            "409": {"description": "The event contradicts the payment it names; nothing credited",
                "content": {"application/json": {"schema": r("OpenAiError")}}},
            "503": {"description": "Not now; the provider delivers it again",
                "content": {"application/json": {"schema": r("OpenAiError")}}}
        }),
    )
    .body(tollgate_exchange::route_doc::json_body(serde_json::json!({
        "type": "object", "description": "A Stripe event, as Stripe sends it"
    })))
}
