//! Relaying a streamed synthesis: audio pieces from the channel's adapter (the speech seam,
//! whatever format the channel speaks) → the client's format, piece by piece (DESIGN §8), and
//! the settlement that follows.
//!
//! Billing of a stream:
//! * it ends normally — the upstream's `usage_characters` settles it (the local count when the
//!   upstream reported none, marked estimated);
//! * the client goes away — the relay stops writing but keeps reading the upstream to its end (it
//!   synthesizes and bills the whole text anyway), then charges the share of the upstream's
//!   characters that was delivered, `ceil(usage × delivered bytes / total bytes)`, marked partial.
//!   "Delivered" is the audio the client's connection took (not what was queued for it), and a
//!   `t2a` final frame's repeat of the whole audio (`exclude_aggregated_audio: false`) counts in
//!   neither figure (the adapter leaves it out of the piece's new audio);
//! * the upstream cuts the stream — what was delivered is charged at a nominal speech rate
//!   ([`NOMINAL_CHARACTERS_PER_SECOND`] × speed × seconds of audio delivered, capped at the local
//!   count), marked partial and estimated, and the client sees the cut (an aborted body, or an
//!   error event that says what was charged);
//!
//! The settlement is written before the stream's last piece, so a client that read the whole
//! stream was charged durably.
//! * it fails before the first byte — the handler releases the hold in full.

use crate::charge::{Basis, HeldCharge};
use crate::errors::ApiError;
use crate::stream_body::BodySender;
use bytes::Bytes;
use futures_util::StreamExt;
use tollgate_billing::Usage;
use tollgate_compat_audio::AudioFormat;
use tollgate_upstream::UpstreamError;
use tollgate_upstream::speech::{AudioChunk, ChunkStream, Synthesis, Synthesized};

/// Characters of text a second of synthesized speech holds at speed 1.0, used only to price the
/// audio delivered by a stream the upstream cut before reporting its usage.
pub const NOMINAL_CHARACTERS_PER_SECOND: f64 = 15.0;

/// How the client's stream is written.
pub trait Encoder: Send + 'static {
    /// What to send for one piece from the upstream (`None`: nothing).
    fn frame(&mut self, frame: &AudioChunk) -> Option<Bytes>;
    /// What to send after the last frame, given the characters billed.
    fn done(&mut self, characters: u64) -> Option<Bytes>;
    /// What to send when the upstream cut the stream; `None` aborts the body instead.
    fn failed(&mut self, error: &ApiError) -> Option<Bytes>;
}

/// What the partial-stream rule needs to know about the audio.
#[derive(Debug, Clone, Copy)]
pub struct AudioShape {
    /// The format the upstream produces.
    pub format: AudioFormat,
    /// Samples a second.
    pub sample_rate: u32,
    /// MP3 bits a second.
    pub bitrate: u32,
    /// The speed asked.
    pub speed: f64,
}

impl AudioShape {
    /// Seconds of audio in `bytes` of this format (FLAC assumed to compress to 60 %).
    fn seconds(&self, bytes: usize) -> f64 {
        let pcm_bytes_per_second = f64::from(self.sample_rate) * 2.0;
        let per_second = match self.format {
            AudioFormat::Mp3 => f64::from(self.bitrate) / 8.0,
            AudioFormat::Pcm | AudioFormat::Wav => pcm_bytes_per_second,
            AudioFormat::Flac => pcm_bytes_per_second * 0.6,
        };
        if per_second > 0.0 {
            bytes as f64 / per_second
        } else {
            0.0
        }
    }
}

/// Relays `first` and the rest of `frames` to `sender`, then settles `held`.
pub async fn relay<E: Encoder>(
    held: HeldCharge,
    first: AudioChunk,
    mut frames: ChunkStream,
    sender: BodySender,
    mut encoder: E,
    local_characters: u64,
    shape: AudioShape,
) {
    let mut total = 0usize;
    let mut usage: Option<u64> = None;
    let mut client_gone = false;
    let mut finished = false;
    let mut cut: Option<UpstreamError> = None;
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
        let audio = frame.audio.len();
        total += audio;
        if let Some(u) = frame.characters {
            usage = Some(u);
        }
        if !client_gone
            && let Some(bytes) = encoder.frame(&frame)
            && sender.send_weighed(bytes, audio as u64).await.is_err()
        {
            client_gone = true;
            tracing::info!(
                delivered = sender.taken(),
                "client went away; draining the upstream"
            );
        }
        if frame.last {
            finished = true;
            break;
        }
    }
    if cut.is_none() && !finished && !client_gone {
        // The stream ended without its final frame: a cut as far as billing is concerned.
        cut = Some(UpstreamError::Protocol(
            "the stream ended without its last piece".into(),
        ));
    }
    let delivered = usize::try_from(sender.taken())
        .unwrap_or(usize::MAX)
        .min(total);
    // A client that left before the end: `sender.is_closed()` also catches one that left while
    // its last pieces were still queued.
    let client_gone = client_gone || (sender.is_closed() && cut.is_none() && delivered < total);

    let (characters, basis) = match (&cut, client_gone) {
        (None, false) => Basis::reported_or_local(usage, local_characters),
        (None, true) => {
            let billed = usage.unwrap_or(local_characters);
            let share = if total == 0 {
                0
            } else {
                u64::try_from((u128::from(billed) * delivered as u128).div_ceil(total as u128))
                    .unwrap_or(u64::MAX)
            };
            (
                share,
                Basis {
                    estimated: usage.is_none(),
                    note: Some(format!(
                        "partial: client disconnected after {delivered} of {total} audio bytes"
                    )),
                },
            )
        }
        (Some(e), _) => {
            let seconds = shape.seconds(delivered);
            let nominal = (seconds * NOMINAL_CHARACTERS_PER_SECOND * shape.speed).ceil();
            let characters = if nominal.is_finite() && nominal > 0.0 {
                (nominal as u64).min(local_characters)
            } else {
                0
            };
            (
                characters,
                Basis {
                    estimated: true,
                    note: Some(format!(
                        "partial: upstream cut after {delivered} audio bytes ({e})"
                    )),
                },
            )
        }
    };

    // Settle first: the client's last piece then says what was charged, and a client that read
    // the whole stream was charged durably.
    let charged = match held.settle(&Usage::Characters(characters), basis).await {
        Ok(amount) => Some(amount),
        Err(e) => {
            tracing::error!(error = ?e, "settling a speech stream failed");
            None
        }
    };
    match (&cut, client_gone) {
        (None, false) => {
            if let Some(bytes) = encoder.done(characters) {
                let _ = sender.send(bytes).await;
            }
        }
        (Some(e), false) => {
            tracing::warn!(error = %e, delivered, "upstream cut the stream");
            let error = crate::relay::stream_cut_error(e, charged);
            match encoder.failed(&error) {
                Some(bytes) => {
                    let _ = sender.send(bytes).await;
                }
                None => sender.abort(error.message).await,
            }
        }
        _ => {}
    }
}

/// Opens a streamed synthesis on the model's channels — each through its own format's adapter
/// — and waits for its first piece, so that a failure before the first byte is an ordinary
/// error (and a full release), not a cut stream.
pub async fn open(
    state: &std::sync::Arc<crate::state::State>,
    entry: &crate::catalog::ModelEntry,
    synthesis: &Synthesis,
) -> Result<(AudioChunk, ChunkStream), UpstreamError> {
    let (opened, _channel) = crate::relay::with_failover(entry, |channel| async move {
        let mut chunks = channel
            .synthesizer()?
            .stream(&state.http, &channel.endpoint, synthesis)
            .await?;
        match chunks.next().await {
            Some(Ok(first)) => Ok((first, chunks)),
            Some(Err(e)) => Err(e),
            None => Err(UpstreamError::Protocol(
                "the stream ended before any audio".into(),
            )),
        }
    })
    .await?;
    Ok(opened)
}

/// A whole (non-streamed) synthesis, billed: runs in its own task so that a client that leaves
/// cannot skip the charge for work the upstream did. Returns the audio (with the vendor's own
/// answer when the channel speaks `t2a`), the characters charged and the upstream's time.
pub async fn synthesize_whole(
    state: std::sync::Arc<crate::state::State>,
    entry: std::sync::Arc<crate::catalog::ModelEntry>,
    held: HeldCharge,
    synthesis: Synthesis,
    local_characters: u64,
) -> Result<(Synthesized, u64, std::time::Duration), ApiError> {
    crate::relay::to_completion(async move {
        let called = crate::relay::with_failover(&entry, |channel| {
            let (state, synthesis) = (state.clone(), &synthesis);
            async move {
                channel
                    .synthesizer()?
                    .synthesize(&state.http, &channel.endpoint, synthesis)
                    .await
            }
        })
        .await;
        let answer = match called {
            Ok((answer, _)) => answer,
            Err(e) => {
                held.release(&format!("upstream failed: {e}"));
                return Err(crate::relay::upstream_error(&e));
            }
        };
        let (characters, basis) =
            Basis::reported_or_local(answer.body.characters, local_characters);
        held.settle(&Usage::Characters(characters), basis).await?;
        Ok((answer.body, characters, answer.upstream_time))
    })
    .await
}
