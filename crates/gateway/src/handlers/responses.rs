//! `POST /v1/responses` for native models (the OpenAI Responses API; `docs/decisions.md`, "The
//! Responses bridge"): the request is translated to a native one, sent through the native
//! channel, and the answer translated back — whole, or as the Responses stream's events. Billing
//! is the native endpoint's, as for the chat bridge.

use crate::generation::bridge_to_native;
use crate::native_relay::Encoder;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use tollgate_gateway_core::body::{self, ResponseBody};
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::ApiError;
use tollgate_gateway_core::response::UpstreamTime;
use tollgate_native_genai::GenerateContentResponse;
use tollgate_native_genai::responses::{
    self, ResponseEvents, ResponseTemplate, ResponsesRequest, StreamEvent,
};
use tollgate_sse::ByteString;
use tollgate_store::Principal;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();

    // 3. The body.
    let (request, size): (ResponsesRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;

    // 4–5. The model (native models only), the translation, the native rules, the hold.
    let bridged = bridge_to_native(&ctx, &principal, &request.model, size, |limits| {
        responses::to_native(&request, limits)
    })
    .await?;

    // 6–8.
    let id = format!("resp_{}", ctx.request_id.trim_start_matches("req_"));
    let template = ResponseTemplate::new(&request, &id, tollgate_gateway_core::clock::unix_now());
    if request.stream == Some(true) {
        let encoder = ResponsesSse {
            events: ResponseEvents::new(template),
        };
        return bridged.stream(&ctx, encoder).await;
    }
    let (native, upstream_time) = bridged.whole(&state).await?;
    let answer = responses::to_response(&native, &template);
    let mut response = body::json_response(StatusCode::OK, &answer);
    response
        .extensions_mut()
        .insert(UpstreamTime(upstream_time));
    Ok(response)
}

/// The Responses stream: `event: <type>` / `data: <event>` pairs, ending in
/// `response.completed`, `response.incomplete` or `response.failed` (no `[DONE]`).
struct ResponsesSse {
    events: ResponseEvents,
}

impl Encoder for ResponsesSse {
    fn frame(&mut self, response: &GenerateContentResponse, _: &ByteString) -> Vec<Bytes> {
        sse(self.events.map(response))
    }

    fn done(&mut self, charged: Option<tollgate_billing::Amount>) -> Vec<Bytes> {
        // The last event (`response.completed`) says the charge.
        let mut out = sse(self.events.finish());
        if let Some(last) = out.pop() {
            let text = String::from_utf8_lossy(&last);
            out.push(Bytes::from(crate::hold::with_charge(&text, charged)));
        }
        out
    }

    fn failed(&mut self, error: &ApiError) -> Vec<Bytes> {
        sse(self.events.fail(&error.message))
    }
}

fn sse(events: Vec<StreamEvent>) -> Vec<Bytes> {
    events
        .iter()
        .map(|event| Bytes::from(event.to_sse()))
        .collect()
}
