//! Embeddings, steps 4–8 of DESIGN §2 as `/v1/embeddings` and the native `:embedContent` /
//! `:batchEmbedContents` share them: the request (OpenAI's shape, which every embeddings
//! channel speaks) checked against the model, its tokens counted, held, sent through the
//! model's channels — run to completion even if the client goes away — and settled at the
//! upstream's count, the local one the fallback (DESIGN §4). The handlers read their own
//! formats and say how their answers are made from the upstream's ([`ReadAnswer`]).

use crate::relay;
use crate::translate::embeddings as translate;
use std::sync::Arc;
use std::time::Duration;
use tollgate_billing::Usage;
use tollgate_embeddings::{
    AnswerError, AnswerShape, EmbeddingRequest, EmbeddingUsage, model_family, validate,
    validate_input_token_counts,
};
use tollgate_exchange::errors::ApiError;
use tollgate_metering::tokens;
use tollgate_metering::{Basis, Measure};
use tollgate_request::context::RequestCtx;
use tollgate_settings::catalog::ModelEntry;
use tollgate_store::Principal;
use tollgate_upstream::UpstreamError;
use tollgate_upstream::registry;

/// How a handler's answer is made from the upstream's body (OpenAI's embeddings JSON) for the
/// shape its client asked: the answer and the usage the upstream reported. A body that cannot
/// be read is the channel's failure: not charged, and counted against the channel's health.
pub type ReadAnswer<T> =
    fn(&[u8], &AnswerShape, &ModelEntry) -> Result<(T, EmbeddingUsage), AnswerError>;

/// Embeds `request` (`size`: its body's bytes) with `entry`'s channels for `principal`: the
/// client's answer, made by `read`, and the upstream's time, after settling.
pub async fn embed<T: Send + 'static>(
    ctx: &RequestCtx,
    principal: &Principal,
    entry: Arc<ModelEntry>,
    request: EmbeddingRequest,
    size: usize,
    read: ReadAnswer<T>,
) -> Result<(T, Duration), ApiError> {
    // 4. The request against the model, and its tokens under the model's limits.
    validate(&request, model_family(&entry.upstream_model)).map_err(ApiError::from)?;
    let counts = if size > tollgate_metering::MEASURE_ON_BLOCKING_POOL {
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
    let held =
        crate::admission::place_hold(ctx, principal, &entry, &Usage::Tokens(local_tokens.max(1)))
            .await?;

    // 6–8 run to completion even if the client goes away.
    let state = ctx.state.clone();
    relay::to_completion(async move {
        let shape = translate::shape(&request);
        let upstream_request = translate::to_upstream(request, &entry);
        let called = relay::with_failover(&entry, held.usage(), |channel, endpoint| {
            let (state, upstream_request, shape, entry) =
                (state.clone(), &upstream_request, &shape, &entry);
            async move {
                let answer = registry::embedder(channel.format)?
                    .embed(&state.http, &endpoint, upstream_request)
                    .await?;
                let (response, usage) = read(&answer.body, shape, entry)
                    .map_err(|e| UpstreamError::Protocol(format!("embeddings answer: {e}")))?;
                Ok((response, usage, answer.upstream_time))
            }
        })
        .await;
        let ((response, usage, upstream_time), channel) = match called {
            Ok(ok) => ok,
            Err(e) => {
                tracing::warn!(error = %e, "embeddings upstream failed");
                held.release(&format!("upstream failed: {e}"));
                return Err(relay::upstream_error(&e));
            }
        };
        // The upstream's usage settles; the local count is the fallback (DESIGN §4). An
        // upstream that reports 0 tokens reported nothing.
        let reported = (usage.prompt_tokens > 0).then_some(usage.prompt_tokens);
        if reported.is_some_and(|tokens| tokens != local_tokens) {
            tracing::info!(local = local_tokens, upstream = usage.prompt_tokens, channel = %channel.name, "token counts differ");
        }
        let (tokens, basis) = Basis::reported_or_local(reported, local_tokens, Measure::LocalCount);
        held.settle(&Usage::Tokens(tokens), basis).await?;
        Ok((response, upstream_time))
    })
    .await
}
