//! The `openai-images` channel format: `POST {base}/v1/images/generations` (JSON),
//! `POST {base}/v1/images/edits` and `/v1/images/variations` (multipart forms: the text
//! fields, then each `image[]` and the `mask`, or the variation's `image`, streamed from the
//! gateway's spool) with `Authorization: Bearer`; a whole answer
//! as OpenAI's `ImagesResponse`, a stream as its server-sent events (docs/api.md §2.13),
//! errors in OpenAI's shape — a content-policy refusal among them, relayed as the vendor's 400.

use crate::common::client::{HttpClient, bearer_request, is_event_stream, sse_events};
use crate::common::multipart::form_of_files;
use crate::common::{Answer, Frame, FrameStream, openai_refusal};
use crate::seams::images::{ImageGenerator, ImageJob};
use crate::{Endpoint, UpstreamError};
use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use http::{Method, header};
use serde_json::Value;
use std::time::Instant;
use tollgate_images::Operation;

/// The largest whole answer read: ten images of 3840 × 2160 as PNG, base64 (docs/decisions.md,
/// "Upstream answers bounded").
const MAX_ANSWER: usize = 512 << 20;

/// Bounds on a streamed answer: an event is one image, base64.
const STREAM_LIMITS: tollgate_sse::Limits = tollgate_sse::Limits {
    max_event_bytes: 64 << 20,
    max_total_bytes: 1 << 30,
};

/// The `openai-images` format behind the images seam.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiImages;

impl ImageGenerator for OpenAiImages {
    fn create<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        job: ImageJob<'a>,
    ) -> BoxFuture<'a, Result<Answer<Bytes>, UpstreamError>> {
        async move {
            let started = Instant::now();
            let response = send(client, endpoint, job).await?;
            let body =
                HttpClient::read_body(response.into_body(), MAX_ANSWER, &endpoint.timeouts).await?;
            Ok(Answer {
                body,
                upstream_time: started.elapsed(),
            })
        }
        .boxed()
    }

    fn stream<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        job: ImageJob<'a>,
    ) -> BoxFuture<'a, Result<FrameStream, UpstreamError>> {
        async move {
            let response = send(client, endpoint, job).await?;
            if !is_event_stream(&response) {
                return Err(UpstreamError::Protocol(
                    "a streamed image call answered without text/event-stream".into(),
                ));
            }
            let events = sse_events(response.into_body(), endpoint.timeouts.idle, STREAM_LIMITS);
            let frames = events.filter_map(|event| async move {
                match event {
                    Err(e) => Some(Err(e)),
                    Ok(event) if event.data.trim().is_empty() || event.is_done() => None,
                    Ok(event) => Some(match stream_error(event.data.as_bytes()) {
                        Some(e) => Err(e),
                        None => Ok(Frame { data: event.data }),
                    }),
                }
            });
            let frames: FrameStream = Box::pin(crate::common::client::until_first_error(frames));
            Ok(frames)
        }
        .boxed()
    }
}

/// Sends `job`: a generation as JSON, an edit or a variation as a form.
async fn send(
    client: &HttpClient,
    endpoint: &Endpoint,
    job: ImageJob<'_>,
) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
    let path = job.operation.path();
    let request = if job.operation == Operation::Generation {
        let body =
            serde_json::to_vec(job.request).map_err(|e| UpstreamError::Protocol(e.to_string()))?;
        bearer_request(endpoint, Method::POST, path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(crate::common::client::full_body(body))
    } else {
        let fields = form_fields(job)?;
        let borrowed: Vec<(&str, String)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let form = form_of_files(&borrowed, job.files);
        bearer_request(endpoint, Method::POST, path)
            .header(header::CONTENT_TYPE, form.content_type)
            .header(header::CONTENT_LENGTH, form.content_length)
            .body(form.body)
    }
    .map_err(|e| UpstreamError::Config(e.to_string()))?;
    let response = client.send(request, &endpoint.timeouts).await?;
    if response.status().is_success() {
        return Ok(response);
    }
    Err(openai_refusal(response, endpoint).await)
}

/// An edit's text fields: the request's fields as the form writes them.
fn form_fields(job: ImageJob<'_>) -> Result<Vec<(String, String)>, UpstreamError> {
    let Value::Object(fields) =
        serde_json::to_value(job.request).map_err(|e| UpstreamError::Protocol(e.to_string()))?
    else {
        return Err(UpstreamError::Protocol("an edit is not an object".into()));
    };
    Ok(fields
        .into_iter()
        .filter_map(|(name, value)| match value {
            Value::Null => None,
            Value::String(text) => Some((name, text)),
            other => Some((name, other.to_string())),
        })
        .collect())
}

/// A stream's `error` event, as the error it is.
fn stream_error(data: &[u8]) -> Option<UpstreamError> {
    let value: Value = serde_json::from_slice(data).ok()?;
    if value.get("type").and_then(Value::as_str) != Some("error") {
        return None;
    }
    let message = value
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("the upstream sent an error event");
    Some(UpstreamError::Protocol(format!(
        "the upstream's stream failed: {message}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_images::ImageRequest;

    #[test]
    fn an_edits_fields_are_its_request_as_text() {
        let request: ImageRequest = serde_json::from_str(
            r#"{"model":"gpt-image-2","prompt":"a hat","n":2,"stream":true,"quality":"high"}"#,
        )
        .unwrap();
        let job = ImageJob {
            request: &request,
            files: &[],
            operation: Operation::Edit,
        };
        let fields = form_fields(job).unwrap();
        assert!(fields.contains(&("n".into(), "2".into())));
        assert!(fields.contains(&("stream".into(), "true".into())));
        assert!(fields.contains(&("quality".into(), "high".into())));
        assert!(stream_error(br#"{"type":"error","error":{"message":"no"}}"#).is_some());
        assert!(stream_error(br#"{"type":"image_generation.completed"}"#).is_none());
    }
}
