//! The `openai-embeddings` channel format: `POST {base}/v1/embeddings` with
//! `Authorization: Bearer`, JSON in and out (wire-formats §2), errors in OpenAI's
//! `{error:{message,type,param,code}}` shape (§1.3).

use crate::common::client::{HttpClient, json_post};
use crate::common::{Answer, openai_error_message, retry_after};
use crate::seams::embeddings::Embedder;
use crate::{Endpoint, UpstreamError};
use bytes::Bytes;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::header;
use std::time::Instant;
use tollgate_embeddings::EmbeddingRequest;

/// The most an answer may hold beside its vectors.
const MAX_ENVELOPE: usize = 64 << 10;

/// The most an answer may spend on one vector: 8,192 values as JSON numbers of up to 31
/// characters (a `float64` spelled out with its sign, exponent and comma), so any model's vector
/// in either encoding — base64 takes 5.3 characters a value.
const MAX_PER_VECTOR: usize = 8192 * 32;

/// The most any answer may hold: 2,048 inputs of 3,072 values as JSON numbers is about 70 MB
/// in `float32`'s shortest spelling, 130 MB spelled as `float64`.
const MAX_ANSWER: usize = 256 << 20;

/// The largest answer read for `request`: one vector per input, so a one-input request never
/// makes the gateway read more than 320 KiB.
fn max_response(request: &EmbeddingRequest) -> usize {
    (MAX_ENVELOPE + request.input.len().max(1) * MAX_PER_VECTOR).min(MAX_ANSWER)
}

/// The `openai-embeddings` format behind the embeddings seam.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiEmbeddings;

impl Embedder for OpenAiEmbeddings {
    fn embed<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a EmbeddingRequest,
    ) -> BoxFuture<'a, Result<Answer<Bytes>, UpstreamError>> {
        create(client, endpoint, request).boxed()
    }
}

/// Calls `POST /v1/embeddings` on `endpoint`: the body of its answer, unread.
pub async fn create(
    client: &HttpClient,
    endpoint: &Endpoint,
    request: &EmbeddingRequest,
) -> Result<Answer<Bytes>, UpstreamError> {
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
    let bytes = HttpClient::read_body(
        response.into_body(),
        max_response(request),
        &endpoint.timeouts,
    )
    .await?;
    let upstream_time = started.elapsed();
    if !status.is_success() {
        return Err(UpstreamError::refused(
            status.as_u16(),
            &bytes,
            openai_error_message,
            retry_after,
        ));
    }
    Ok(Answer {
        body: bytes,
        upstream_time,
    })
}
