//! The embeddings seam: what the gateway asks of an embeddings channel, whatever format the
//! channel speaks (docs/architecture.md, "Upstream seams"). One adapter per format implements
//! [`Embedder`]: `openai-embeddings` ([`crate::adapters::openai_embeddings::OpenAiEmbeddings`]).

use crate::common::Answer;
use crate::{Endpoint, HttpClient, UpstreamError};
use futures_util::future::BoxFuture;
use tollgate_embeddings::{EmbeddingRequest, EmbeddingResponse};

/// The embeddings seam: what the gateway asks of an embeddings channel. Its request and answer
/// are OpenAI's embeddings types — the format every embeddings vendor copies — so the one
/// format today, `openai-embeddings` ([`crate::adapters::openai_embeddings::OpenAiEmbeddings`]), sends them as they are; a vendor
/// with another shape translates to and from them in its adapter.
pub trait Embedder: Send + Sync {
    /// Embeds the request's inputs.
    fn embed<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a EmbeddingRequest,
    ) -> BoxFuture<'a, Result<Answer<EmbeddingResponse>, UpstreamError>>;
}
