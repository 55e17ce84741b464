//! The `stt` channel format: MiniMax-style speech recognition, `POST {base}/v1/speech_to_text`
//! with `Authorization: Bearer`, a multipart form whose file part streams from the caller's
//! source, and the language hint as an HTTP header (wire-formats §4). Errors are OpenAI-style
//! bodies with a real HTTP status.

use crate::common::client::{HttpClient, bearer_request, sse_events};
use crate::common::multipart::{FilePart, form};
use crate::common::{Answer, openai_error_message, openai_refusal};
use crate::seams::recognition::{
    DeltaStream, Recognition, Recognizer, Segment, SttBody, TextDelta, Transcription, Word,
};
use crate::{Endpoint, UpstreamError};
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, Stream, StreamExt};
use http::{Method, header};
use std::pin::Pin;
use std::time::Instant;
use tollgate_vendor_audio::stt::LANGUAGE_HEADER;
use tollgate_vendor_audio::{SttFormat, SttParams, SttStreamFrame, TimestampLevel};

/// The `stt` format behind the recognition seam ([`Recognizer`]).
///
/// A [`Recognition`] becomes a `speech_to_text` form: a whole result is asked as
/// `verbose_json` (its sentences, times and speakers are enough for every format the gateway
/// renders), a stream as the vendor's json stream (its only streamable format); word times
/// become `timestamp_level=word`; the language goes as the vendor's header. A client's own
/// `speech_to_text` form goes as it is, with the channel's model id, and its answer is relayed
/// in the format it asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stt;

impl Stt {
    /// The form for `recognition`.
    pub fn params(recognition: &Recognition) -> SttParams {
        if let Some(own) = &recognition.stt {
            let mut params = own.clone();
            params.model = recognition.model.clone();
            return params;
        }
        let mut params = SttParams::new(recognition.model.clone());
        params.response_format = if recognition.stream {
            SttFormat::Json
        } else {
            SttFormat::VerboseJson
        };
        params.timestamp_level = if recognition.words {
            TimestampLevel::Word
        } else {
            TimestampLevel::Sentence
        };
        params.stream = recognition.stream;
        params.language = recognition.language.clone();
        params
    }
}

/// What a vendor body says, in the seam's terms.
fn transcription(body: &SttBody) -> Transcription {
    match body {
        SttBody::Json(json) => Transcription {
            text: json.text.clone(),
            duration: Some(json.duration),
            ..Transcription::default()
        },
        SttBody::Verbose(verbose) => Transcription {
            text: verbose.text.clone(),
            duration: Some(verbose.duration),
            language: None,
            segments: verbose
                .segments
                .iter()
                .map(|s| Segment {
                    id: s.id,
                    start: s.start,
                    end: s.end,
                    text: s.text.clone(),
                    speaker: Some(s.speaker.clone()),
                })
                .collect(),
            words: verbose
                .segments
                .iter()
                .flat_map(|s| s.words.iter().flatten())
                .map(|w| Word {
                    word: w.text.clone(),
                    start: w.start,
                    end: w.end,
                })
                .collect(),
            stt: None,
        },
        // Subtitles carry no duration: the gateway's probe bills them.
        SttBody::Subtitles(_) => Transcription::default(),
    }
}

impl Recognizer for Stt {
    fn transcribe<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Recognition,
        file: FilePart<'a>,
    ) -> BoxFuture<'a, Result<Answer<Transcription>, UpstreamError>> {
        async move {
            let params = Self::params(request);
            let answer = transcribe(client, endpoint, &params, file).await?;
            Ok(answer.map(|body| {
                let mut result = transcription(&body);
                if request.stt.is_some() {
                    result.stt = Some(body);
                }
                result
            }))
        }
        .boxed()
    }

    fn stream<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        request: &'a Recognition,
        file: FilePart<'a>,
    ) -> BoxFuture<'a, Result<DeltaStream, UpstreamError>> {
        async move {
            let params = Self::params(request);
            let frames = stream(client, endpoint, &params, file).await?;
            let deltas: DeltaStream = Box::pin(frames.map(|frame| {
                frame.map(|frame| TextDelta {
                    text: frame.delta.clone(),
                    last: frame.is_final(),
                    duration: frame.duration.filter(|_| frame.is_final()),
                    stt: Some(frame),
                })
            }));
            Ok(deltas)
        }
        .boxed()
    }
}

/// Bounds on a streamed answer (docs/decisions.md, "Upstream answers bounded"): recognition frames carry text.
const STREAM_LIMITS: tollgate_sse::Limits = tollgate_sse::Limits {
    max_event_bytes: 8 << 20,
    max_total_bytes: 64 << 20,
};

/// The largest answer read: a 500 s transcript with word timestamps is well under this.
const MAX_RESPONSE: usize = 16 << 20;

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
                Err(_) => Some(Err(UpstreamError::refused(
                    502,
                    event.data.as_bytes(),
                    openai_error_message,
                    None,
                ))),
            },
        }
    });
    Ok(Box::pin(crate::common::client::until_first_error(frames)))
}

async fn send(
    client: &HttpClient,
    endpoint: &Endpoint,
    params: &SttParams,
    file: FilePart<'_>,
) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
    let fields = params.to_fields();
    let form = form(&fields, file);
    let mut builder = bearer_request(endpoint, Method::POST, "/v1/speech_to_text")
        .header(header::CONTENT_TYPE, form.content_type)
        .header(header::CONTENT_LENGTH, form.content_length);
    if let Some(language) = params.language.as_deref().filter(|l| !l.is_empty()) {
        builder = builder.header(LANGUAGE_HEADER, language);
    }
    let request = builder
        .body(form.body)
        .map_err(|e| UpstreamError::Config(e.to_string()))?;
    let response = client.send(request, &endpoint.timeouts).await?;
    if response.status().is_success() {
        return Ok(response);
    }
    Err(openai_refusal(response, endpoint).await)
}
