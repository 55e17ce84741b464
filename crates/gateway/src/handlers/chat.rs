//! `POST /v1/chat/completions` for native models (docs/api.md §4 rule 4; wire-formats §8): the chat
//! request is translated to a native one, sent through the native channel, and the answer
//! translated back — whole, or as `chat.completion.chunk` events ending in `[DONE]`. Billing is
//! the native endpoint's: thinking tokens are output tokens, shown as
//! `completion_tokens_details.reasoning_tokens`.

use crate::generation;
use http::{Request, Response};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::{About, r};
use tollgate_native_genai::chat::ChatCompletionRequest;
use tollgate_request::context::RequestCtx;
use tollgate_store::Principal;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The body.
    let (chat, size): (ChatCompletionRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;

    // 4–8: the bridge onto native generation, in the chat format (`translate::chat`).
    generation::bridge(ctx, principal, chat, size).await
}

/// `POST /v1/chat/completions`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "Chat completions with a native model (docs/api.md §4 rule 4)",
        "native",
        json!({"200": {"description": "A completion, or SSE chunks with stream", "content": {
            "application/json": {"schema": r("ChatResponse")},
        }}}),
    )
    .posting("ChatRequest")
}
