//! The `stt` channel format: MiniMax-style speech recognition, `POST {base}/v1/speech_to_text`
//! with `Authorization: Bearer`, a multipart form whose file part streams from the caller's
//! source, and the language hint as an HTTP header (wire-formats §4). Errors are OpenAI-style
//! bodies with a real HTTP status.

use crate::client::{HttpClient, sse_events};
use crate::embeddings::{Answer, openai_error_message, retry_after};
use crate::multipart::{FilePart, form};
use crate::{Endpoint, UpstreamError};
use futures_util::{Stream, StreamExt};
use http::{Method, Request, header};
use std::pin::Pin;
use std::time::Instant;
use tollgate_vendor_audio::stt::LANGUAGE_HEADER;
use tollgate_vendor_audio::{SttFormat, SttJson, SttParams, SttStreamFrame, SttVerboseJson};

/// Bounds on a streamed answer (docs/decisions.md, "Upstream answers bounded"): recognition frames carry text.
const STREAM_LIMITS: tollgate_sse::Limits = tollgate_sse::Limits {
    max_event_bytes: 8 << 20,
    max_total_bytes: 64 << 20,
};

/// The largest answer read: a 500 s transcript with word timestamps is well under this.
const MAX_RESPONSE: usize = 16 << 20;

/// A whole recognition result, in the format that was asked.
#[derive(Debug, Clone)]
pub enum SttBody {
    /// `response_format=json`.
    Json(SttJson),
    /// `response_format=verbose_json`.
    Verbose(SttVerboseJson),
    /// `srt` or `vtt`: the document itself.
    Subtitles(String),
}

/// Frames as they arrive; an `Err` is the last item.
pub type FrameStream = Pin<Box<dyn Stream<Item = Result<SttStreamFrame, UpstreamError>> + Send>>;

/// A non-streamed recognition (`params.stream` false).
pub async fn transcribe(
    client: &HttpClient,
    endpoint: &Endpoint,
    params: &SttParams,
    file: FilePart<'_>,
) -> Result<Answer<SttBody>, UpstreamError> {
    let started = Instant::now();
    let response = send(client, endpoint, params, file).await?;
    let bytes =
        HttpClient::read_body(response.into_body(), MAX_RESPONSE, &endpoint.timeouts).await?;
    let decode_error =
        |e: serde_json::Error| UpstreamError::Protocol(format!("speech_to_text response: {e}"));
    let body = match params.response_format {
        SttFormat::Json => SttBody::Json(serde_json::from_slice(&bytes).map_err(decode_error)?),
        SttFormat::VerboseJson => {
            SttBody::Verbose(serde_json::from_slice(&bytes).map_err(decode_error)?)
        }
        SttFormat::Srt | SttFormat::Vtt => SttBody::Subtitles(
            String::from_utf8(bytes.to_vec())
                .map_err(|e| UpstreamError::Protocol(format!("subtitles: {e}")))?,
        ),
    };
    Ok(Answer {
        body,
        upstream_time: started.elapsed(),
    })
}

/// A streamed recognition (`params.stream` true): returns once the response head has arrived.
pub async fn stream(
    client: &HttpClient,
    endpoint: &Endpoint,
    params: &SttParams,
    file: FilePart<'_>,
) -> Result<FrameStream, UpstreamError> {
    let response = send(client, endpoint, params, file).await?;
    let events = sse_events(response.into_body(), endpoint.timeouts.idle, STREAM_LIMITS);
    let frames = events.filter_map(|event| async move {
        match event {
            Err(e) => Some(Err(e)),
            Ok(event) => match SttStreamFrame::parse(&event.data) {
                Ok(Some(frame)) => Some(Ok(frame)),
                Ok(None) => None,
                Err(_) if event.data.trim().is_empty() => None,
                // An error object in the stream ends it with that error.
                Err(_) => Some(Err(UpstreamError::Status {
                    status: 502,
                    message: openai_error_message(event.data.as_bytes()),
                    retry_after: None,
                })),
            },
        }
    });
    Ok(Box::pin(crate::client::until_first_error(frames)))
}

async fn send(
    client: &HttpClient,
    endpoint: &Endpoint,
    params: &SttParams,
    file: FilePart<'_>,
) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
    let fields = params.to_fields();
    let form = form(&fields, file);
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(endpoint.url("/v1/speech_to_text"))
        .header(header::CONTENT_TYPE, form.content_type)
        .header(header::CONTENT_LENGTH, form.content_length);
    if let Some(key) = &endpoint.api_key {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    if let Some(language) = params.language.as_deref().filter(|l| !l.is_empty()) {
        builder = builder.header(LANGUAGE_HEADER, language);
    }
    let request = builder
        .body(form.body)
        .map_err(|e| UpstreamError::Config(e.to_string()))?;
    let response = client.send(request, &endpoint.timeouts).await?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let bytes = HttpClient::read_body(response.into_body(), 1 << 20, &endpoint.timeouts)
        .await
        .unwrap_or_default();
    Err(UpstreamError::Status {
        status: status.as_u16(),
        message: openai_error_message(&bytes),
        retry_after,
    })
}
