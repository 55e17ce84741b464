//! The recognition pipeline both recognition endpoints run ([`serve`], DESIGN §2 steps 4–8):
//! the uploaded file, its probed duration (the hold, the fallback charge and the 500-second
//! limit, docs/api.md §2.2/§8), the model, the hold, the channels through the recognition seam
//! (whatever format each speaks), and the answer — a stream relayed while metered, or a whole
//! result settled and rendered. What differs between the endpoints is their wire format's: a
//! [`Format`] each (`translate::transcription`).

use crate::hold::HeldCharge;
use crate::pump::{Closing, End, Meter, Settlement};
use crate::stream_body::BodySender;
use crate::upload::{self, Upload, UploadLimits, UploadedFile};
use bytes::Bytes;
use futures_util::StreamExt;
use http::HeaderMap;
use http::Response;
use hyper::body::Incoming;
use std::time::Duration;
use tollgate_billing::{Amount, Usage, audio_seconds};
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::response::UpstreamTime;
use tollgate_metering::recognition::billed_seconds;
use tollgate_metering::{Basis, Measure};
use tollgate_probe::{Container, ProbeError};
use tollgate_request::context::RequestCtx;
use tollgate_request::state::State;
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::config::ModelKind;
use tollgate_store::Principal;
use tollgate_upstream::Answer;
use tollgate_upstream::UpstreamError;
use tollgate_upstream::common::multipart::FilePart;
use tollgate_upstream::registry;
use tollgate_upstream::seams::recognition::{DeltaStream, Recognition, TextDelta, Transcription};

/// A recognition endpoint's wire format, as the pipeline ([`serve`]) asks it: the model, whether
/// to stream and in which events, the seam's request, the seconds a whole result is charged and
/// the whole answer. One per inbound format (`translate::transcription`).
pub trait Format: Send + Sync + 'static {
    /// The stream's events.
    type Events: Encoder;
    /// The model asked for (a public name or alias).
    fn model(&self) -> &str;
    /// Whether the result is streamed.
    fn streams(&self) -> bool;
    /// The stream's events, fresh.
    fn events(&self) -> Self::Events;
    /// The seam's request for `entry`.
    fn upstream(&self, entry: &ModelEntry) -> Recognition;
    /// The seconds a whole result is charged and how they were measured: the result's duration
    /// rounded up (docs/api.md §8 rule 2), or the probe when it reports none.
    fn seconds(&self, result: &Transcription, probed_seconds: u64) -> (u64, Basis) {
        whole_seconds(result, probed_seconds)
    }
    /// The whole answer for `result`, covering `covered` seconds of audio, `seconds` charged.
    fn answer(&self, result: Transcription, covered: f64, seconds: u64) -> Response<ResponseBody>;
}

/// The seconds a whole result is charged: its duration rounded up (docs/api.md §8 rule 2), or
/// the probed duration when it reports none.
pub fn whole_seconds(result: &Transcription, probed_seconds: u64) -> (u64, Basis) {
    let reported = result.duration.and_then(billed_seconds);
    Basis::reported_or_local(reported, probed_seconds, Measure::Probe)
}

/// The request flow of DESIGN §2 from step 3's end, for both endpoints: `form` read and its
/// fields checked as `format`.
pub async fn serve<F: Format>(
    ctx: RequestCtx,
    principal: Principal,
    mut form: Upload,
    format: F,
) -> Result<Response<ResponseBody>, ApiError> {
    let file = require_file(&mut form)?;

    // 4. The model (whisper-1 and the other OpenAI names are aliases).
    let entry = ctx
        .settings
        .catalog
        .require(format.model(), ModelKind::Transcription)?;

    // The audio's own duration: the hold, the fallback charge, the 500 s limit.
    let (container, duration) = probe(&file).await?;
    let probed_seconds = audio_seconds(duration);

    // 5. The hold.
    let held = crate::admission::place_hold(
        &ctx,
        &principal,
        &entry,
        &Usage::AudioSeconds(probed_seconds),
    )
    .await?
    // The gateway measured the file: the upstream's duration is charged up to it, with one
    // second for a different rounding of the same audio.
    .bounded_by(&Usage::AudioSeconds(probed_seconds.saturating_add(1)));

    // 6–8.
    let upstream = format.upstream(&entry);
    let name = default_name(container);
    if format.streams() {
        let events = format.events();
        return stream_response(
            &ctx,
            &entry,
            &upstream,
            file,
            &name,
            container,
            held,
            events,
            probed_seconds,
        )
        .await;
    }
    // 6–8 run to completion even if the client goes away: the file is uploaded, the upstream
    // recognises it either way.
    let state = ctx.state.clone();
    crate::relay::to_completion(async move {
        let part = file_part(&file, container, &name);
        let (answer, held) = transcribe_whole(&state, &entry, &upstream, part, held).await?;
        let result = answer.body;
        let (seconds, basis) = format.seconds(&result, probed_seconds);
        held.settle(&Usage::AudioSeconds(seconds), basis).await?;
        let covered = result.duration.unwrap_or(duration.as_secs_f64());
        let mut response = format.answer(result, covered, seconds);
        response
            .extensions_mut()
            .insert(UpstreamTime(answer.upstream_time));
        Ok(response)
    })
    .await
}

/// docs/api.md §2.2/§8: longer audio must be split before upload.
pub const MAX_SECONDS: u64 = 500;

/// Reads the form: the file under the endpoint's limit, at most 32 other fields of 64 KiB,
/// while the caller's key holds one of its upload slots (`[server] max_uploads_per_key`).
pub async fn read_form(
    ctx: &tollgate_request::context::RequestCtx,
    principal: &tollgate_store::Principal,
    headers: &HeaderMap,
    body: Incoming,
) -> Result<Upload, ApiError> {
    let _slot = crate::admission::upload_slot(ctx, principal)?;
    let bounds = ctx.body_bounds();
    let limits = UploadLimits {
        file_field: "file",
        file_bytes: bounds.limit as u64,
        more_files: &[],
        max_more: 0,
        whole_bytes: None,
        field_bytes: 64 << 10,
        max_fields: 32,
        pace: bounds.pace,
    };
    upload::read(headers, body, limits).await
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

/// Opens a streamed recognition on the model's channels — each through its own format's
/// adapter — and waits for its first piece.
pub async fn open_stream(
    state: &State,
    entry: &tollgate_settings::catalog::ModelEntry,
    usage: Option<&tollgate_journal::usage::Recorder>,
    recognition: &Recognition,
    file: FilePart<'_>,
) -> Result<(TextDelta, DeltaStream), UpstreamError> {
    let (opened, _) = crate::relay::with_failover(entry, usage, |channel, endpoint| async move {
        let mut deltas = registry::recognizer(channel.format)?
            .stream(&state.http, &endpoint, recognition, file)
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
    /// After the last piece: the whole text, the seconds billed and what the stream was charged
    /// (for the final event, `crate::hold::with_charge`).
    fn done(&mut self, text: &str, seconds: u64, charged: Option<Amount>) -> Option<Bytes>;
    /// When the upstream cut the stream.
    fn failed(&mut self, error: &ApiError) -> Option<Bytes>;
}

/// Relays a recognition stream and settles: the [`RecognitionMeter`] driven by the one pump
/// ([`crate::pump`]).
pub async fn relay<E: Encoder>(
    held: HeldCharge,
    first: TextDelta,
    frames: DeltaStream,
    sender: BodySender,
    encoder: E,
    probed_seconds: u64,
) {
    let meter = RecognitionMeter::new(encoder, probed_seconds);
    crate::pump::pump(held, Some(first), frames, sender, meter).await;
}

/// The meter of a recognition stream: the last piece's duration (rounded up) is the charge; a
/// stream that ends without it — cut by the upstream, or left by the client after the upstream
/// failed — is charged the probed duration, marked partial and estimated. A client that leaves
/// does not stop the reading of the upstream: the whole file was uploaded and is recognised
/// either way.
#[derive(Debug)]
pub struct RecognitionMeter<E: Encoder> {
    encoder: E,
    probed_seconds: u64,
    text: String,
    final_duration: Option<f64>,
    charged_seconds: u64,
}

impl<E: Encoder> RecognitionMeter<E> {
    /// A meter writing through `encoder`; `probed_seconds` is the gateway's reading of the file.
    pub fn new(encoder: E, probed_seconds: u64) -> Self {
        RecognitionMeter {
            encoder,
            probed_seconds,
            text: String::new(),
            final_duration: None,
            charged_seconds: 0,
        }
    }
}

impl<E: Encoder> Meter for RecognitionMeter<E> {
    type Piece = TextDelta;
    const DRAIN_AFTER_CLIENT_GONE: bool = true;
    const HAS_LAST_PIECE: bool = true;

    fn on_piece(&mut self, piece: &TextDelta) -> Result<Vec<(Bytes, u64)>, UpstreamError> {
        self.text.push_str(&piece.text);
        if piece.last {
            self.final_duration = piece.duration;
        }
        Ok(self
            .encoder
            .frame(piece)
            .map(|bytes| (bytes, 0))
            .into_iter()
            .collect())
    }

    fn is_last(&self, piece: &TextDelta) -> bool {
        piece.last
    }

    fn finish(&mut self, end: &End, _delivered: u64, _offered: u64) -> Settlement {
        let (seconds, basis) = tollgate_metering::recognition::seconds(
            &end.metered(),
            self.final_duration,
            self.probed_seconds,
        );
        self.charged_seconds = seconds;
        Settlement::Charge(Usage::AudioSeconds(seconds), basis)
    }

    fn closing(&mut self, end: &End, charged: Option<Amount>) -> Closing {
        match end {
            End::Complete => Closing::Send(
                self.encoder
                    .done(&self.text, self.charged_seconds, charged)
                    .into_iter()
                    .collect(),
            ),
            End::Cut(e) => Closing::cut(e, charged, |error| self.encoder.failed(error)),
            End::ClientGone => Closing::Nothing,
        }
    }
}

/// The streamed branch of both endpoints: opens the stream and waits for its first frame (a
/// failure before it releases the hold in full), then relays the rest from a task that also
/// keeps the spooled upload alive, and answers with the event stream at once.
#[allow(clippy::too_many_arguments)]
pub async fn stream_response<E: Encoder>(
    ctx: &tollgate_request::context::RequestCtx,
    entry: &tollgate_settings::catalog::ModelEntry,
    upstream: &Recognition,
    file: UploadedFile,
    part_name: &str,
    container: Container,
    held: HeldCharge,
    encoder: E,
    probed_seconds: u64,
) -> Result<http::Response<tollgate_exchange::body::ResponseBody>, ApiError> {
    let permit = crate::admission::open_stream(ctx)?;
    let started = std::time::Instant::now();
    let opened = open_stream(
        &ctx.state,
        entry,
        held.usage(),
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
    let (sender, body) = crate::stream_body::channel(permit);
    crate::trace::spawn_for_request(async move {
        let _upload = file;
        relay(held, first, frames, sender, encoder, probed_seconds).await;
    });
    Ok(tollgate_exchange::response::sse_response(
        body,
        first_frame_time,
    ))
}

/// The whole-result branch of both endpoints: calls the channels with failover and, on
/// failure, releases the hold. On success the hold comes back with the answer, to be settled.
pub async fn transcribe_whole(
    state: &State,
    entry: &tollgate_settings::catalog::ModelEntry,
    recognition: &Recognition,
    part: FilePart<'_>,
    held: HeldCharge,
) -> Result<(Answer<Transcription>, HeldCharge), ApiError> {
    let called = crate::relay::with_failover(entry, held.usage(), |channel, endpoint| async move {
        registry::recognizer(channel.format)?
            .transcribe(&state.http, &endpoint, recognition, part)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::transcription::encoders::CompatEvents;

    fn delta(text: &str, last: bool, duration: Option<f64>) -> TextDelta {
        TextDelta {
            text: text.into(),
            last,
            duration,
            stt: None,
        }
    }

    #[test]
    fn the_last_pieces_duration_settles_else_the_probe() {
        let mut meter = RecognitionMeter::new(CompatEvents, 5);
        meter.on_piece(&delta("Hello ", false, None)).unwrap();
        meter.on_piece(&delta("there.", true, Some(3.2))).unwrap();
        let Settlement::Charge(Usage::AudioSeconds(4), basis) = meter.finish(&End::Complete, 0, 0)
        else {
            panic!("4 seconds");
        };
        assert!(!basis.estimated);
        let Closing::Send(done) = meter.closing(&End::Complete, None) else {
            panic!("the done event");
        };
        let done = String::from_utf8_lossy(&done[0]).into_owned();
        assert!(done.contains(r#""text":"Hello there.""#) && done.contains(r#""seconds":4"#));

        let mut cut = RecognitionMeter::new(CompatEvents, 5);
        cut.on_piece(&delta("Hel", false, None)).unwrap();
        let end = End::Cut(UpstreamError::Protocol("gone".into()));
        let Settlement::Charge(Usage::AudioSeconds(5), basis) = cut.finish(&end, 0, 0) else {
            panic!("the probed 5 seconds");
        };
        assert!(basis.estimated && basis.note.unwrap().contains("probed"));
        assert!(matches!(cut.closing(&end, None), Closing::Send(_)));
    }
}
