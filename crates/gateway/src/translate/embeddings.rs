//! Embeddings: the client's request → the channel's, and the channel's answer → the client's.
//!
//! Upstream, the gateway always asks for base64 (exact float32, a third of JSON's size) and
//! passes `dimensions` on. Back to the client, vectors longer than the asked `dimensions` (an
//! upstream that ignores it, like the simulator) are truncated and renormalised, and then
//! encoded in the format the client asked for (float by default; the OpenAI SDK asks base64).
//! A base64 vector the client takes as it is (base64, no shortening) is checked and passed on
//! without being decoded and encoded again.

use tollgate_embeddings::{
    Embedding, EmbeddingRequest, EmbeddingResponse, EmbeddingVector, EncodingFormat,
    base64_dimensions, shorten,
};
use tollgate_gateway_core::catalog::ModelEntry;
use tollgate_gateway_core::errors::ApiError;

/// The request sent upstream.
pub fn to_upstream(request: &EmbeddingRequest, entry: &ModelEntry) -> EmbeddingRequest {
    EmbeddingRequest {
        model: entry.upstream_model.clone(),
        input: request.input.clone(),
        encoding_format: Some(EncodingFormat::Base64),
        dimensions: request.dimensions,
        user: request.user.clone(),
    }
}

/// The response returned to the client. The upstream's answer must hold exactly one vector per
/// input, indices `0..n`; anything else is an upstream failure (never a silently short answer).
pub fn to_client(
    upstream: EmbeddingResponse,
    request: &EmbeddingRequest,
    entry: &ModelEntry,
) -> Result<EmbeddingResponse, String> {
    let expected = request.input.len();
    if upstream.data.len() != expected {
        return Err(format!(
            "{} embeddings for {expected} inputs",
            upstream.data.len()
        ));
    }
    let mut slots: Vec<Option<EmbeddingVector>> = vec![None; expected];
    let format = request.encoding_format.unwrap_or_default();
    let dims = request.dimensions.map(|d| d as usize);
    for item in upstream.data {
        let index = item.index as usize;
        let slot = slots
            .get_mut(index)
            .ok_or_else(|| format!("embedding index {index} out of range"))?;
        if slot.is_some() {
            return Err(format!("embedding index {index} repeated"));
        }
        // Base64 in and base64 out at the length asked: checked, then passed on as it came.
        if let EmbeddingVector::Base64(text) = &item.embedding
            && format == EncodingFormat::Base64
        {
            let n = base64_dimensions(text).map_err(|e| format!("embedding {index}: {e}"))?;
            if dims.is_none_or(|d| d == n) {
                *slot = Some(item.embedding);
                continue;
            }
        }
        let mut values = item
            .embedding
            .into_floats()
            .map_err(|e| format!("embedding {index}: {e}"))?;
        if let Some(d) = dims {
            if values.len() < d {
                return Err(format!(
                    "embedding {index} has {} dimensions, {d} were asked",
                    values.len()
                ));
            }
            shorten(&mut values, d);
        }
        *slot = Some(EmbeddingVector::encode(&values, format));
    }
    let data = slots
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            v.map(|embedding| Embedding::new(i as u32, embedding))
                .ok_or_else(|| format!("embedding index {i} missing"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EmbeddingResponse::new(
        entry.public.clone(),
        data,
        upstream.usage,
    ))
}

/// Turns a translation failure into the client's error.
pub fn broken_answer(reason: String) -> ApiError {
    tracing::error!(%reason, "upstream embeddings answer is inconsistent");
    ApiError::new(
        tollgate_gateway_core::errors::ErrorKind::UpstreamFailed,
        format!("The upstream's answer was inconsistent ({reason}); the request was not charged"),
    )
}
