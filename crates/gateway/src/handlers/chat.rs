//! `POST /v1/chat/completions` for native models (docs/api.md §4 rule 4; wire-formats §8): the chat
//! request is translated to a native one, sent through the native channel, and the answer
//! translated back — whole, or as `chat.completion.chunk` events ending in `[DONE]`. Billing is
//! the native endpoint's: thinking tokens are output tokens, shown as
//! `completion_tokens_details.reasoning_tokens`.

use crate::body::{self, ResponseBody};
use crate::catalog::ModelEntry;
use crate::charge::HeldCharge;
use crate::config::ModelKind;
use crate::errors::{ApiError, ErrorKind, Family};
use crate::handlers::native::{generate_whole, hold_prompt, native_model, open_stream};
use crate::handlers::{Context, UpstreamTime, sse_response};
use crate::limits;
use crate::native_relay::{self, Encoder};
use crate::relay;
use crate::state::State;
use crate::stream_body;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use std::sync::Arc;
use std::time::Duration;
use tollgate_native_genai::bridge::{self, ChunkMapper};
use tollgate_native_genai::chat::ChatCompletionRequest;
use tollgate_native_genai::{
    FieldError, GenerateContentRequest, GenerateContentResponse, ModelLimits, validate,
};
use tollgate_store::Principal;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: Context,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();

    // 3. The body.
    let (chat, _): (ChatCompletionRequest, _) = body::read_json(
        state.body_bounds(limits::Endpoint::Chat),
        &parts.headers,
        body,
    )
    .await?;

    // 4–5. The model (native models only), the translation, the native rules, the hold.
    let bridged = bridge_to_native(&ctx, &principal, &chat.model, |limits| {
        bridge::to_native(&chat, limits)
    })
    .await?;

    // 6–8.
    let id = format!("chatcmpl-{}", ctx.request_id.trim_start_matches("req_"));
    let created = crate::clock::unix_now();
    if chat.stream == Some(true) {
        let include_usage = chat
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        let encoder = ChatSse {
            mapper: ChunkMapper::new(&chat.model, &id, created, include_usage),
        };
        return bridged.stream(&state, encoder).await;
    }
    let (native, upstream_time) = bridged.whole(&state).await?;
    let answer = bridge::to_chat(&native, &chat.model, &id, created);
    let mut response = body::json_response(StatusCode::OK, &answer);
    response
        .extensions_mut()
        .insert(UpstreamTime(upstream_time));
    Ok(response)
}

/// A request of an OpenAI-shaped endpoint bridged to a native model, held and ready to send.
pub(super) struct Bridged {
    entry: Arc<ModelEntry>,
    /// The native request's JSON.
    raw: Bytes,
    /// The prompt's local token estimate (the fallback when no usage arrives).
    local_input: u64,
    held: HeldCharge,
}

impl Bridged {
    /// Steps 6–8 streamed: the native stream opened (the hold released if it cannot be), then
    /// relayed through `encoder` and settled in the background.
    pub(super) async fn stream<E: Encoder>(
        self,
        state: &Arc<State>,
        encoder: E,
    ) -> Result<Response<ResponseBody>, ApiError> {
        crate::quotas::open_stream(state)?;
        let (frames, first_frame) = match open_stream(state, &self.entry, self.raw).await {
            Ok(opened) => opened,
            Err(e) => {
                self.held.release(&format!("upstream failed: {e}"));
                return Err(relay::upstream_error(&e));
            }
        };
        let (sender, body) = stream_body::channel();
        crate::spawn_for_request(native_relay::relay(
            frames,
            sender,
            encoder,
            self.held,
            self.local_input,
        ));
        Ok(sse_response(body, first_frame))
    }

    /// Steps 6–8 whole: the native answer, settled, and how long the upstream took.
    pub(super) async fn whole(
        self,
        state: &Arc<State>,
    ) -> Result<(GenerateContentResponse, Duration), ApiError> {
        let (bytes, upstream_time) =
            generate_whole(state, &self.entry, self.raw, self.held, self.local_input).await?;
        let native = serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::new(
                ErrorKind::UpstreamFailed,
                format!("The upstream's answer could not be read: {e}"),
            )
        })?;
        Ok((native, upstream_time))
    }
}

/// Steps 4–5 of a bridged request (docs/api.md §4 rule 4): `model` must be a native model (others are
/// `model_not_found`); `to_native` translates for its limits, the native rules check the
/// result, and the hold covers the prompt estimate and the output cap.
pub(super) async fn bridge_to_native(
    ctx: &Context,
    principal: &Principal,
    model: &str,
    to_native: impl FnOnce(&ModelLimits) -> Result<GenerateContentRequest, FieldError>,
) -> Result<Bridged, ApiError> {
    let state = &ctx.state;
    if state
        .catalog
        .resolve(model, ModelKind::NativeText)
        .is_none()
    {
        return Err(ApiError::unknown_model(model));
    }
    let (entry, model_limits) = native_model(state, model)?;
    let native = to_native(&model_limits)?;
    let max_output = validate(&native, &model_limits)?.max_total_output_tokens();
    let (native, held, local_input) =
        hold_prompt(ctx, principal, &entry, &model_limits, native, max_output).await?;
    let raw = Bytes::from(
        serde_json::to_vec(&native)
            .map_err(|e| ApiError::internal("translating the request", e))?,
    );
    Ok(Bridged {
        entry,
        raw,
        local_input,
        held,
    })
}

/// Chat-completion chunks as OpenAI streams them: `data: {chunk}\n\n`, then `data: [DONE]`.
struct ChatSse {
    mapper: ChunkMapper,
}

impl Encoder for ChatSse {
    fn frame(&mut self, response: &GenerateContentResponse, _: &str) -> Vec<Bytes> {
        self.mapper.map(response).iter().map(event).collect()
    }

    fn done(&mut self) -> Vec<Bytes> {
        let mut out: Vec<Bytes> = self.mapper.finish().iter().map(event).collect();
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
