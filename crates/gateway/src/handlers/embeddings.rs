//! `POST /v1/embeddings` (docs/api.md §2.6, §4.5; wire-formats §2).

use crate::body::{self, ResponseBody};
use crate::charge::{Basis, HeldCharge};
use crate::config::ModelKind;
use crate::context::RequestCtx;
use crate::errors::ApiError;
use crate::limits;
use crate::relay;
use crate::response::UpstreamTime;
use crate::tokens;
use crate::translate::embeddings as translate;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use tollgate_billing::Usage;
use tollgate_embeddings::{EmbeddingRequest, model_family, validate, validate_input_token_counts};
use tollgate_store::Principal;

/// Inputs larger than this are tokenized on the blocking pool, not on a runtime thread.
const INLINE_TOKENIZE_BYTES: usize = 64 << 10;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let state = ctx.state.clone();

    // 3. The body, under the endpoint's limit, decoded and checked.
    let (request, size): (EmbeddingRequest, _) = body::read_json(
        state.body_bounds(limits::Endpoint::Embeddings),
        &parts.headers,
        body,
    )
    .await?;

    // 4. The model.
    let entry = state
        .catalog
        .require(&request.model, ModelKind::Embeddings)?;
    validate(&request, model_family(&entry.upstream_model)).map_err(ApiError::from)?;
    let counts = if size > INLINE_TOKENIZE_BYTES {
        let input = request.input.clone();
        tokio::task::spawn_blocking(move || tokens::count_embedding_inputs(&input))
            .await
            .map_err(|e| ApiError::internal("counting tokens", e))?
    } else {
        tokens::count_embedding_inputs(&request.input)
    };
    validate_input_token_counts(&request.input, &counts).map_err(ApiError::from)?;
    let local_tokens: u64 = counts.iter().map(|c| *c as u64).sum();

    // 5. The hold: no hold, no upstream call. At least one token's worth, so that a lone empty
    // input (0 tokens here; an upstream may count one) settles within its bound.
    let held = HeldCharge::place(
        &ctx,
        &principal,
        &entry,
        &Usage::Tokens(local_tokens.max(1)),
    )
    .await?;

    // 6–8 run to completion even if the client goes away.
    let (response, upstream_time) = relay::to_completion(async move {
        let upstream_request = translate::to_upstream(&request, &entry);
        let called = relay::with_failover(&entry, held.usage(), |channel, endpoint| {
            let (state, upstream_request) = (state.clone(), &upstream_request);
            async move {
                channel
                    .embedder()?
                    .embed(&state.http, &endpoint, upstream_request)
                    .await
            }
        })
        .await;
        let (answer, channel) = match called {
            Ok(ok) => ok,
            Err(e) => {
                tracing::warn!(error = %e, "embeddings upstream failed");
                held.release(&format!("upstream failed: {e}"));
                return Err(relay::upstream_error(&e));
            }
        };
        let usage = answer.body.usage;
        let response = match translate::to_client(answer.body, &request, &entry) {
            Ok(r) => r,
            Err(reason) => {
                held.release("upstream answer inconsistent");
                return Err(translate::broken_answer(reason));
            }
        };
        // The upstream's usage settles; the local count is the fallback (DESIGN §4). An
        // upstream that reports 0 tokens reported nothing.
        let reported = (usage.prompt_tokens > 0).then_some(usage.prompt_tokens);
        if reported.is_some_and(|tokens| tokens != local_tokens) {
            tracing::info!(local = local_tokens, upstream = usage.prompt_tokens, channel = %channel.name, "token counts differ");
        }
        let (tokens, basis) = Basis::reported_or_local(reported, local_tokens);
        held.settle(&Usage::Tokens(tokens), basis).await?;
        Ok((response, answer.upstream_time))
    })
    .await?;

    let mut response = body::json_bytes_response(StatusCode::OK, response.to_json());
    response
        .extensions_mut()
        .insert(UpstreamTime(upstream_time));
    Ok(response)
}
