//! `POST /v1/chat/completions` for native models (SPEC §4 rule 4; wire-formats §8): the chat
//! request is translated to a native one, sent through the native channel, and the answer
//! translated back — whole, or as `chat.completion.chunk` events ending in `[DONE]`. Billing is
//! the native endpoint's: thinking tokens are output tokens, shown as
//! `completion_tokens_details.reasoning_tokens`.

use crate::auth;
use crate::body::{self, ResponseBody};
use crate::charge::HeldCharge;
use crate::config::ModelKind;
use crate::errors::{ApiError, ErrorKind, Family};
use crate::handlers::native::{generate_whole, native_model, open_stream};
use crate::handlers::{Context, UpstreamTime, sse_response};
use crate::limits;
use crate::native_relay::{self, Encoder};
use crate::relay;
use crate::stream_body;
use crate::translate::native as translate;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use tollgate_billing::Usage;
use tollgate_native_genai::bridge::{self, ChunkMapper};
use tollgate_native_genai::chat::ChatCompletionRequest;
use tollgate_native_genai::{GenerateContentResponse, validate};

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: Context,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();

    // 2. Who is calling.
    let principal = auth::authenticate(&state, Family::OpenAi, &parts.headers, None).await?;

    // 3. The body.
    let (chat, _): (ChatCompletionRequest, _) =
        body::read_json(&state, limits::Endpoint::Chat, &parts.headers, body).await?;

    // 4. The model (native models only), the translation, and the native rules.
    if state
        .catalog
        .resolve(&chat.model, ModelKind::NativeText)
        .is_none()
    {
        return Err(ApiError::unknown_model(&chat.model));
    }
    let (entry, model_limits) = native_model(&state, &chat.model)?;
    let native = bridge::to_native(&chat, &model_limits)?;
    let valid = validate(&native, &model_limits)?;
    let local_input = translate::estimate_prompt_tokens(&native);
    let raw = Bytes::from(
        serde_json::to_vec(&native)
            .map_err(|e| ApiError::internal("translating the request", e))?,
    );

    // 5. The hold.
    let estimate = Usage::TextTokens {
        input: local_input,
        output: valid.max_total_output_tokens(),
    };
    let held = HeldCharge::place(&state, &principal, &entry, &estimate, &ctx.request_id).await?;

    // 6–8.
    let id = format!("chatcmpl-{}", ctx.request_id.trim_start_matches("req_"));
    let created = crate::clock::unix_now();
    if chat.stream == Some(true) {
        let include_usage = chat
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false);
        let (frames, first_frame) = match open_stream(&state, &entry, raw).await {
            Ok(opened) => opened,
            Err(e) => {
                held.release(&format!("upstream failed: {e}"));
                return Err(relay::upstream_error(&e));
            }
        };
        let encoder = ChatSse {
            mapper: ChunkMapper::new(&chat.model, &id, created, include_usage),
        };
        let (sender, body) = stream_body::channel();
        crate::spawn_for_request(native_relay::relay(
            frames,
            sender,
            encoder,
            held,
            local_input,
        ));
        return Ok(sse_response(body, first_frame));
    }
    let (bytes, upstream_time) = generate_whole(&state, &entry, raw, held, local_input).await?;
    let native: GenerateContentResponse = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            ErrorKind::UpstreamFailed,
            format!("The upstream's answer could not be read: {e}"),
        )
    })?;
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
