//! What both recognition endpoints share: reading the upload, probing its duration (the hold,
//! the fallback charge and the 500-second limit, docs/api.md §2.2/§8), calling the channels
//! through the recognition seam (whatever format each speaks), and relaying a streamed result
//! while metering it.

use crate::charge::{Basis, HeldCharge};
use crate::errors::ApiError;
use crate::limits;
use crate::state::State;
use crate::stream_body::BodySender;
use crate::upload::{self, Upload, UploadLimits, UploadedFile};
use bytes::Bytes;
use futures_util::StreamExt;
use http::HeaderMap;
use hyper::body::Incoming;
use std::time::Duration;
use tollgate_billing::{Usage, audio_seconds};
use tollgate_probe::{Container, ProbeError};
use tollgate_upstream::UpstreamError;
use tollgate_upstream::embeddings::Answer;
use tollgate_upstream::multipart::FilePart;
use tollgate_upstream::recognition::{DeltaStream, Recognition, TextDelta, Transcription};

/// docs/api.md §2.2/§8: longer audio must be split before upload.
pub const MAX_SECONDS: u64 = 500;

/// Reads the form: the file under the endpoint's limit, at most 32 other fields of 64 KiB.
pub async fn read_form(
    state: &State,
    endpoint: limits::Endpoint,
    headers: &HeaderMap,
    body: Incoming,
) -> Result<Upload, ApiError> {
    upload::read(
        headers,
        body,
        UploadLimits {
            file_bytes: state.limits.of(endpoint) as u64,
            field_bytes: 64 << 10,
            max_fields: 32,
            body_pause: state.server.body_pause(),
        },
    )
    .await
}

/// The uploaded file, or a 400 naming `file`.
pub fn require_file(upload: &mut Upload) -> Result<UploadedFile, ApiError> {
    upload.file.take().ok_or_else(|| {
        ApiError::invalid(
            "file",
            "required",
            "'file' is required: attach the audio as the 'file' part",
        )
    })
}

/// The audio's container and duration, read from its bytes; refuses what is not one of the
/// accepted containers, and audio longer than [`MAX_SECONDS`].
pub async fn probe(file: &UploadedFile) -> Result<(Container, Duration), ApiError> {
    if file.data.is_empty() {
        return Err(ApiError::invalid("file", "empty", "'file' is empty"));
    }
    let reader = file
        .data
        .reader()
        .map_err(|e| ApiError::internal("reading the upload", e))?;
    let probed = tokio::task::spawn_blocking(move || tollgate_probe::probe(reader))
        .await
        .map_err(|e| ApiError::internal("probing the audio", e))?;
    let probe = match probed {
        Ok(p) => p,
        Err(ProbeError::Io(e)) => return Err(ApiError::internal("reading the upload", e)),
        Err(e) => {
            return Err(ApiError::invalid(
                "file",
                "unsupported_format",
                format!("'file': {e}"),
            ));
        }
    };
    let seconds = probe.duration.as_secs_f64();
    if seconds > MAX_SECONDS as f64 {
        return Err(ApiError::invalid(
            "file",
            "audio_too_long",
            format!(
                "'file' is {seconds:.1} seconds long; at most {MAX_SECONDS} seconds are accepted, so split the audio into shorter files"
            ),
        ));
    }
    Ok((probe.container, probe.duration))
}

/// The file part sent upstream: the client's name, or one the container suggests.
pub fn file_part<'a>(
    file: &'a UploadedFile,
    container: Container,
    fallback_name: &'a str,
) -> FilePart<'a> {
    FilePart {
        name: "file",
        filename: file
            .filename
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or(fallback_name),
        content_type: content_type(container),
        source: &file.data,
    }
}

/// A file name for a container, for clients that sent none.
pub fn default_name(container: Container) -> String {
    format!("audio.{}", container.as_str())
}

fn content_type(container: Container) -> &'static str {
    match container {
        Container::Wav => "audio/wav",
        Container::Aiff => "audio/aiff",
        Container::Flac => "audio/flac",
        Container::M4a => "audio/mp4",
        Container::Mp3 => "audio/mpeg",
        Container::Aac => "audio/aac",
        Container::Opus => "audio/opus",
        Container::Ogg => "audio/ogg",
    }
}

/// Seconds billed for a duration (docs/api.md §8 rule 2: rounded up).
pub fn billed_seconds(seconds: f64) -> Option<u64> {
    (seconds.is_finite() && seconds >= 0.0)
        .then(|| audio_seconds(Duration::from_secs_f64(seconds.min(1e9))))
}

/// Opens a streamed recognition on the model's channels — each through its own format's
/// adapter — and waits for its first piece.
pub async fn open_stream(
    state: &State,
    entry: &crate::catalog::ModelEntry,
    recognition: &Recognition,
    file: FilePart<'_>,
) -> Result<(TextDelta, DeltaStream), UpstreamError> {
    let (opened, _) = crate::relay::with_failover(entry, |channel| async move {
        let mut deltas = channel
            .recognizer()?
            .stream(&state.http, &channel.endpoint, recognition, file)
            .await?;
        match deltas.next().await {
            Some(Ok(first)) => Ok((first, deltas)),
            Some(Err(e)) => Err(e),
            None => Err(UpstreamError::Protocol(
                "the stream ended before any text".into(),
            )),
        }
    })
    .await?;
    Ok(opened)
}

/// How a client's recognition stream is written.
pub trait Encoder: Send + 'static {
    /// For one piece from the upstream (the last one included).
    fn frame(&mut self, frame: &TextDelta) -> Option<Bytes>;
    /// After the last piece: the whole text and the seconds billed.
    fn done(&mut self, text: &str, seconds: u64) -> Option<Bytes>;
    /// When the upstream cut the stream.
    fn failed(&mut self, error: &ApiError) -> Option<Bytes>;
}

/// Relays a recognition stream and settles: the final frame's duration (rounded up) is the
/// charge; a stream that ends without it — cut by the upstream, or left by the client after the
/// upstream failed — is charged the probed duration, marked partial and estimated. A client that
/// leaves does not stop the relay reading the upstream to its end: the whole file was uploaded
/// and is recognised either way.
pub async fn relay<E: Encoder>(
    held: HeldCharge,
    first: TextDelta,
    mut frames: DeltaStream,
    sender: BodySender,
    mut encoder: E,
    probed_seconds: u64,
) {
    let mut text = String::new();
    let mut final_duration = None;
    let mut client_gone = false;
    let mut cut = None;
    let mut next = Some(Ok(first));
    loop {
        let item = match next.take() {
            Some(item) => item,
            None => match frames.next().await {
                Some(item) => item,
                None => break,
            },
        };
        let frame = match item {
            Ok(frame) => frame,
            Err(e) => {
                cut = Some(e);
                break;
            }
        };
        text.push_str(&frame.text);
        if !client_gone
            && let Some(bytes) = encoder.frame(&frame)
            && sender.send(bytes).await.is_err()
        {
            client_gone = true;
        }
        if frame.last {
            final_duration = frame.duration;
            break;
        }
    }
    let reported = final_duration.and_then(billed_seconds);
    let (seconds, mut basis) = Basis::reported_or_local(reported, probed_seconds);
    if reported.is_none() {
        basis.note = Some(match &cut {
            Some(e) => format!("partial: upstream cut ({e}); charged the probed duration"),
            None => {
                "partial: the stream ended without its duration; charged the probed duration".into()
            }
        });
    } else if client_gone {
        basis.note = Some("client disconnected before the end of the stream".into());
    }
    // Settle first: the last piece then says what was charged, and a client that read the
    // whole stream was charged durably.
    let charged = match held.settle(&Usage::AudioSeconds(seconds), basis).await {
        Ok(amount) => Some(amount),
        Err(e) => {
            tracing::error!(error = ?e, "settling a recognition stream failed");
            None
        }
    };
    if !client_gone {
        match &cut {
            None => {
                if let Some(bytes) = encoder.done(&text, seconds) {
                    let _ = sender.send(bytes).await;
                }
            }
            Some(e) => {
                let error = crate::relay::stream_cut_error(e, charged);
                match encoder.failed(&error) {
                    Some(bytes) => {
                        let _ = sender.send(bytes).await;
                    }
                    None => sender.abort(error.message).await,
                }
            }
        }
    }
}

/// The streamed branch of both endpoints: opens the stream and waits for its first frame (a
/// failure before it releases the hold in full), then relays the rest from a task that also
/// keeps the spooled upload alive, and answers with the event stream at once.
#[allow(clippy::too_many_arguments)]
pub async fn stream_response<E: Encoder>(
    state: &State,
    entry: &crate::catalog::ModelEntry,
    upstream: &Recognition,
    file: UploadedFile,
    part_name: &str,
    container: Container,
    held: HeldCharge,
    encoder: E,
    probed_seconds: u64,
) -> Result<http::Response<crate::body::ResponseBody>, ApiError> {
    crate::quotas::open_stream(state)?;
    let started = std::time::Instant::now();
    let opened = open_stream(
        state,
        entry,
        upstream,
        file_part(&file, container, part_name),
    )
    .await;
    let (first, frames) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            held.release(&format!("upstream failed before the first byte: {e}"));
            return Err(crate::relay::upstream_error(&e));
        }
    };
    let first_frame_time = started.elapsed();
    let (sender, body) = crate::stream_body::channel();
    crate::spawn_for_request(async move {
        let _upload = file;
        relay(held, first, frames, sender, encoder, probed_seconds).await;
    });
    Ok(crate::handlers::sse_response(body, first_frame_time))
}

/// The whole-result branch of both endpoints: calls the channels with failover and, on
/// failure, releases the hold. On success the hold comes back with the answer, to be settled.
pub async fn transcribe_whole(
    state: &State,
    entry: &crate::catalog::ModelEntry,
    recognition: &Recognition,
    part: FilePart<'_>,
    held: HeldCharge,
) -> Result<(Answer<Transcription>, HeldCharge), ApiError> {
    let called = crate::relay::with_failover(entry, |channel| async move {
        channel
            .recognizer()?
            .transcribe(&state.http, &channel.endpoint, recognition, part)
            .await
    })
    .await;
    match called {
        Ok((answer, _)) => Ok((answer, held)),
        Err(e) => {
            held.release(&format!("upstream failed: {e}"));
            Err(crate::relay::upstream_error(&e))
        }
    }
}
