//! The text-generation seam: what the gateway asks of a text channel, whatever format the
//! channel speaks (docs/architecture.md, "Upstream seams"). One adapter per format implements
//! [`TextGenerator`]: `genai` ([`crate::adapters::genai::Genai`]).

use crate::common::{Answer, FrameStream};
use crate::{Endpoint, HttpClient, UpstreamError};
use bytes::Bytes;
use futures_util::future::BoxFuture;

/// The text-generation seam: what the gateway asks of a text channel. Its requests and answers
/// are the native `generateContent` format, as bytes — the richest of the text formats (parts,
/// thinking, tools, safety), which the gateway relays without re-encoding and into which its
/// chat-completions and Responses bridges translate — so the one format today, `genai`
/// ([`crate::adapters::genai::Genai`]), sends them as they are; a vendor of another format translates in its adapter.
pub trait TextGenerator: Send + Sync {
    /// A whole answer.
    fn generate<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        model: &'a str,
        body: Bytes,
    ) -> BoxFuture<'a, Result<Answer<Bytes>, UpstreamError>>;

    /// The answer as events; returns once the response head has arrived.
    fn stream<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        model: &'a str,
        body: Bytes,
    ) -> BoxFuture<'a, Result<FrameStream, UpstreamError>>;

    /// The upstream's count of the request's tokens.
    fn count_tokens<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        model: &'a str,
        body: Bytes,
    ) -> BoxFuture<'a, Result<Answer<Bytes>, UpstreamError>>;

    /// An image model's pictures (Imagen's `:predict`): the whole answer, its images inline.
    fn predict<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        model: &'a str,
        body: Bytes,
    ) -> BoxFuture<'a, Result<Answer<Bytes>, UpstreamError>>;
}
