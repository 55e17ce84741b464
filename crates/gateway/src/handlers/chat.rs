//! `POST /v1/chat/completions` for native models (docs/api.md §4 rule 4; wire-formats §8): the chat
//! request is translated to a native one, sent through the native channel, and the answer
//! translated back — whole, or as `chat.completion.chunk` events ending in `[DONE]`. Billing is
//! the native endpoint's: thinking tokens are output tokens, shown as
//! `completion_tokens_details.reasoning_tokens`.

use crate::generation::bridge_to_native;
use crate::native_relay::Encoder;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use tollgate_gateway_core::body::{self, ResponseBody};
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::{ApiError, Family};
use tollgate_gateway_core::response::UpstreamTime;
use tollgate_native_genai::GenerateContentResponse;
use tollgate_native_genai::bridge::{self, ChunkMapper};
use tollgate_native_genai::chat::ChatCompletionRequest;
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
    let (chat, size): (ChatCompletionRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;

    // 4–5. The model (native models only), the translation, the native rules, the hold.
    let bridged = bridge_to_native(&ctx, &principal, &chat.model, size, |limits| {
        bridge::to_native(&chat, limits)
    })
    .await?;

    // 6–8.
    let id = format!("chatcmpl-{}", ctx.request_id.trim_start_matches("req_"));
    let created = tollgate_gateway_core::clock::unix_now();
    if chat.stream == Some(true) {
        let include_usage = chat
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        let encoder = ChatSse {
            mapper: ChunkMapper::new(&chat.model, &id, created, include_usage),
        };
        return bridged.stream(&ctx, encoder).await;
    }
    let (native, upstream_time) = bridged.whole(&state).await?;
    let answer = bridge::to_chat(&native, &chat.model, &id, created);
    let mut response = body::json_response(StatusCode::OK, &answer);
    response
        .extensions_mut()
        .insert(UpstreamTime(upstream_time));
    Ok(response)
}

/// Chat-completion chunks as OpenAI streams them: `data: {chunk}\n\n`, then `data: [DONE]`.
struct ChatSse {
    mapper: ChunkMapper,
}

impl Encoder for ChatSse {
    fn frame(&mut self, response: &GenerateContentResponse, _: &ByteString) -> Vec<Bytes> {
        self.mapper.map(response).iter().map(event).collect()
    }

    fn done(&mut self, charged: Option<tollgate_billing::Amount>) -> Vec<Bytes> {
        // The usage chunk (`include_usage`) is the final event with a body: it says the charge.
        let chunks = self.mapper.finish();
        let last = chunks.len().saturating_sub(1);
        let mut out: Vec<Bytes> = chunks
            .iter()
            .enumerate()
            .map(|(i, chunk)| {
                let json = serde_json::to_string(chunk).unwrap_or_default();
                let json = if i == last {
                    crate::hold::with_charge(&json, charged)
                } else {
                    json
                };
                Bytes::from(format!("data: {json}\n\n"))
            })
            .collect();
        out.push(Bytes::from_static(b"data: [DONE]\n\n"));
        out
    }

    fn failed(&mut self, error: &ApiError) -> Vec<Bytes> {
        vec![
            Bytes::from(format!("data: {}\n\n", error.body(Family::OpenAi))),
            Bytes::from_static(b"data: [DONE]\n\n"),
        ]
    }
}

fn event<T: serde::Serialize>(chunk: &T) -> Bytes {
    Bytes::from(format!(
        "data: {}\n\n",
        serde_json::to_string(chunk).unwrap_or_default()
    ))
}
