//! Embeddings: the client's request → the channel's, and the channel's answer → the client's
//! (docs/decisions.md, "Embeddings passed through").
//!
//! Upstream, the gateway asks for the encoding the client asked for and passes `dimensions` on,
//! so that the channel's vectors are what the client wants: each is checked (an array of
//! numbers, or base64 of whole `float32` values; the right count) and copied as it came. A
//! vector in the other encoding, or longer than the asked `dimensions` (an upstream that
//! ignores it, like the simulator), is decoded, truncated and renormalised, and encoded as the
//! client asked (float by default; the OpenAI SDKs ask base64).

use tollgate_embeddings::{
    AnswerError, AnswerShape, EmbeddingRequest, EmbeddingUsage, RelayedResponse,
};
use tollgate_settings::catalog::ModelEntry;

/// What the client asked of the answer.
pub fn shape(request: &EmbeddingRequest) -> AnswerShape {
    AnswerShape {
        inputs: request.input.len(),
        format: request.encoding_format_or_default(),
        dimensions: request.dimensions.map(|d| d as usize),
    }
}

/// The request sent upstream: the client's, for the channel's model.
pub fn to_upstream(request: EmbeddingRequest, entry: &ModelEntry) -> EmbeddingRequest {
    EmbeddingRequest {
        model: entry.upstream_model.clone(),
        ..request
    }
}

/// The client's answer (`/v1/embeddings`) from the upstream's `body`, and the usage it
/// reported. The upstream's answer must hold exactly one vector per input, indices `0..n`;
/// anything else is an upstream failure (never a silently short answer).
pub fn to_client(
    body: &[u8],
    shape: &AnswerShape,
    entry: &ModelEntry,
) -> Result<(Vec<u8>, EmbeddingUsage), AnswerError> {
    let answer = RelayedResponse::read(body)?;
    Ok((answer.write(shape, &entry.public)?, answer.usage))
}

/// The vectors' values in input order (the native methods' answer), and the usage reported.
pub fn to_values(
    body: &[u8],
    shape: &AnswerShape,
    _entry: &ModelEntry,
) -> Result<(Vec<Vec<f32>>, EmbeddingUsage), AnswerError> {
    let answer = RelayedResponse::read(body)?;
    Ok((answer.floats(shape)?, answer.usage))
}
