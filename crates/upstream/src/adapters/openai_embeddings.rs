//! The `openai-embeddings` channel format: `POST {base}/v1/embeddings` with
//! `Authorization: Bearer`, JSON in and out (wire-formats §2), errors in OpenAI's
//! `{error:{message,type,param,code}}` shape (§1.3).

use crate::common::client::{HttpClient, json_post};
use crate::common::{Answer, openai_error_message, retry_after};
use crate::seams::embeddings::Embedder;
use crate::{Endpoint, UpstreamError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::header;
use std::time::Instant;
use tollgate_embeddings::{EmbeddingRequest, EmbeddingResponse};

/// The largest embeddings response read: 2048 inputs × 3072 floats as JSON is about 130 MB; the
/// gateway asks for base64 (4 bytes a float, ×4/3), so 64 MiB is ample.
const MAX_RESPONSE: usize = 64 << 20;

/// The `openai-embeddings` format behind the embeddings seam.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiEmbeddings;

impl Embedder for OpenAiEmbeddings {
    fn embed<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a EmbeddingRequest,
    ) -> BoxFuture<'a, Result<Answer<EmbeddingResponse>, UpstreamError>> {
        create(client, endpoint, request).boxed()
    }
}

/// Calls `POST /v1/embeddings` on `endpoint`.
pub async fn create(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &EmbeddingRequest,
) -> Result<Answer<EmbeddingResponse>, UpstreamError> {
    let body = serde_json::to_vec(request).map_err(|e| UpstreamError::Protocol(e.to_string()))?;
    let mut http_request = json_post(endpoint, "/v1/embeddings", body)?;
    http_request.headers_mut().insert(
        header::ACCEPT,
        header::HeaderValue::from_static("application/json"),
    );
    let started = Instant::now();
    let response = client.send(http_request, &endpoint.timeouts).await?;
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let bytes =
        HttpClient::read_body(response.into_body(), MAX_RESPONSE, &endpoint.timeouts).await?;
    let upstream_time = started.elapsed();
    if !status.is_success() {
        return Err(UpstreamError::refused(
            status.as_u16(),
            &bytes,
            openai_error_message,
            retry_after,
        ));
    }
    let body: EmbeddingResponse = serde_json::from_slice(&bytes)
        .map_err(|e| UpstreamError::Protocol(format!("embeddings response: {e}")))?;
    Ok(Answer {
        body,
        upstream_time,
    })
}
