//! The embeddings seam: what the gateway asks of an embeddings channel, whatever format the
//! channel speaks (docs/architecture.md, "Upstream seams"). One adapter per format implements
//! [`Embedder`]: `openai-embeddings` ([`crate::adapters::openai_embeddings::OpenAiEmbeddings`]).

use crate::common::Answer;
use crate::{Endpoint, HttpClient, UpstreamError};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use tollgate_embeddings::EmbeddingRequest;

/// The embeddings seam: what the gateway asks of an embeddings channel. Its request and answer
/// are OpenAI's embeddings format — the one every embeddings vendor copies — so the one format
/// today, `openai-embeddings` ([`crate::adapters::openai_embeddings::OpenAiEmbeddings`]), sends
/// the request as it is and hands back the answer's body unread; a vendor with another shape
/// translates to and from them in its adapter.
pub trait Embedder: Send + Sync {
    /// Embeds the request's inputs: the body of a successful answer, OpenAI's embeddings JSON,
    /// not yet read — the gateway reads it in place and passes its vectors on
    /// (`tollgate_embeddings::RelayedResponse`; docs/decisions.md, "Embeddings passed through").
    fn embed<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a EmbeddingRequest,
    ) -> BoxFuture<'a, Result<Answer<Bytes>, UpstreamError>>;
}
