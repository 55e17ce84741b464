//! The speech pipeline both speech endpoints run ([`serve`], DESIGN §2 steps 4–8: the model,
//! the hold on the text's characters, a whole synthesis settled or a stream relayed) and the
//! relay of a streamed synthesis: audio pieces from the channel's adapter (the speech seam,
//! whatever format the channel speaks) → the client's format, piece by piece (DESIGN §8), and
//! the settlement that follows. What differs between the endpoints is their wire format's: a
//! [`Format`] each (`translate::speech`).
//!
//! Billing of a stream is `tollgate_metering::speech`'s rule (whole: the upstream's characters;
//! a departed client: its share of them; a cut stream: a nominal rate, at most the local count),
//! fed what this relay measured: the bytes the client's connection took and the audio there was.
//!
//! The settlement is written before the stream's last piece, so a client that read the whole
//! stream was charged durably.
//! * it fails before the first byte — the handler releases the hold in full.

use crate::hold::HeldCharge;
use crate::pump::{Closing, End, Meter, Settlement};
use crate::stream_body;
use crate::stream_body::BodySender;
use bytes::Bytes;
use futures_util::StreamExt;
use http::Response;
use std::time::Instant;
use tollgate_billing::{Amount, Usage, speech_characters};
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::response::UpstreamTime;
pub use tollgate_metering::speech::AudioShape;
use tollgate_metering::{Basis, Measure};
use tollgate_request::context::RequestCtx;
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::config::{ModelKind, SpeechConfig};
use tollgate_store::Principal;
use tollgate_upstream::UpstreamError;
use tollgate_upstream::registry;
#[cfg(test)]
use tollgate_upstream::seams::speech::Audio;
use tollgate_upstream::seams::speech::{AudioChunk, ChunkStream, Synthesis, Synthesized};

/// A speech endpoint's wire format, as the pipeline ([`serve`]) asks it: the model and the text,
/// the seam's synthesis and whether it streams, the whole answer, the stream's events and its
/// head. One per inbound format (`translate::speech`).
pub trait Format: Send + Sync + 'static {
    /// The stream's events.
    type Events: Encoder;
    /// The model asked for (a public name or alias).
    fn model(&self) -> &str;
    /// The text to speak: its characters are the hold and the most a charge may count.
    fn text(&self) -> &str;
    /// The seam's synthesis, and whether it is streamed (else it is made whole).
    fn synthesis(&self, entry: &ModelEntry, settings: &SpeechConfig) -> (Synthesis, bool);
    /// The answer to a whole synthesis, `characters` charged.
    fn whole(
        &self,
        whole: Synthesized,
        characters: u64,
        synthesis: &Synthesis,
        settings: &SpeechConfig,
    ) -> Response<ResponseBody>;
    /// The stream's events and the shape of its audio.
    fn events(&self, synthesis: &Synthesis, settings: &SpeechConfig) -> (Self::Events, AudioShape);
    /// The streamed answer's head, over `body`.
    fn streamed(&self, body: ResponseBody, settings: &SpeechConfig) -> Response<ResponseBody>;
}

/// The request flow of DESIGN §2 from step 4, for both endpoints: `format` read and checked.
pub async fn serve<F: Format>(
    ctx: RequestCtx,
    principal: Principal,
    format: F,
) -> Result<Response<ResponseBody>, ApiError> {
    // 4. The model (aliases such as tts-1 resolve here).
    let entry = ctx
        .settings
        .catalog
        .require(format.model(), ModelKind::Speech)?;

    // 5. The hold: the local character count, CJK counting 2 (docs/api.md §8 rule 1).
    let characters = speech_characters(format.text());
    let held =
        crate::admission::place_hold(&ctx, &principal, &entry, &Usage::Characters(characters))
            .await?
            // The text is here: no upstream can justify more characters than it has.
            .bounded_by_estimate();

    // 6–8. Synthesize, relay, settle.
    let settings = &ctx.settings.speech;
    let (synthesis, streamed) = format.synthesis(&entry, settings);
    if !streamed {
        let (whole, charged, upstream_time) = synthesize_whole(
            ctx.state.clone(),
            entry,
            held,
            synthesis.clone(),
            characters,
        )
        .await?;
        let mut response = format.whole(whole, charged, &synthesis, settings);
        response
            .extensions_mut()
            .insert(UpstreamTime(upstream_time));
        return Ok(response);
    }
    let permit = crate::admission::open_stream(&ctx)?;
    let started = Instant::now();
    let (first, frames) = match open(&ctx.state, &entry, held.usage(), &synthesis).await {
        Ok(opened) => opened,
        Err(e) => {
            held.release(&format!("upstream failed before the first byte: {e}"));
            return Err(crate::relay::upstream_error(&e));
        }
    };
    let first_frame_time = started.elapsed();
    let (sender, body) = stream_body::channel(permit);
    let (events, shape) = format.events(&synthesis, settings);
    crate::trace::spawn_for_request(relay(
        held, first, frames, sender, events, characters, shape,
    ));
    let mut response = format.streamed(body, settings);
    response
        .extensions_mut()
        .insert(UpstreamTime(first_frame_time));
    Ok(response)
}

/// How the client's stream is written.
pub trait Encoder: Send + 'static {
    /// What to send for one piece from the upstream, in pieces written one after the other
    /// (none: nothing) — a frame relayed as it came goes as its own bytes around the vendor's
    /// audio, never copied whole (docs/benchmarks.md, "Lean streams").
    fn frame(&mut self, frame: &AudioChunk) -> Vec<Bytes>;
    /// What to send after the last frame, given the characters billed and what the stream was
    /// charged (for the final event, `crate::hold::with_charge`).
    fn done(&mut self, characters: u64, charged: Option<Amount>) -> Option<Bytes>;
    /// What to send when the upstream cut the stream; `None` aborts the body instead.
    fn failed(&mut self, error: &ApiError) -> Option<Bytes>;
}

/// Relays `first` and the rest of `frames` to `sender`, then settles `held`: the
/// [`SpeechMeter`] driven by the one pump ([`crate::pump`]).
pub async fn relay<E: Encoder>(
    held: HeldCharge,
    first: AudioChunk,
    frames: ChunkStream,
    sender: BodySender,
    encoder: E,
    local_characters: u64,
    shape: AudioShape,
) {
    let meter = SpeechMeter::new(encoder, local_characters, shape);
    crate::pump::pump(held, Some(first), frames, sender, meter).await;
}

/// The meter of a synthesis stream: the billing rules at the top of this module.
#[derive(Debug)]
pub struct SpeechMeter<E: Encoder> {
    encoder: E,
    local_characters: u64,
    shape: AudioShape,
    /// The upstream's characters, when it reported them.
    usage: Option<u64>,
    /// The characters charged, for the client's last event.
    charged_characters: u64,
}

impl<E: Encoder> SpeechMeter<E> {
    /// A meter writing through `encoder`; `local_characters` is the gateway's count of the text.
    pub fn new(encoder: E, local_characters: u64, shape: AudioShape) -> Self {
        SpeechMeter {
            encoder,
            local_characters,
            shape,
            usage: None,
            charged_characters: 0,
        }
    }
}

impl<E: Encoder> Meter for SpeechMeter<E> {
    type Piece = AudioChunk;
    // The upstream synthesizes (and bills) the whole text anyway.
    const DRAIN_AFTER_CLIENT_GONE: bool = true;
    const HAS_LAST_PIECE: bool = true;

    fn on_piece(&mut self, piece: &AudioChunk) -> Result<Vec<(Bytes, u64)>, UpstreamError> {
        if let Some(u) = piece.characters {
            self.usage = Some(u);
        }
        // The audio counts as delivered once the frame's last piece is taken.
        let audio = piece.audio.len() as u64;
        let pieces = self.encoder.frame(piece);
        let last = pieces.len().saturating_sub(1);
        Ok(pieces
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| (bytes, if i == last { audio } else { 0 }))
            .collect())
    }

    fn is_last(&self, piece: &AudioChunk) -> bool {
        piece.last
    }

    fn finish(&mut self, end: &End, delivered: u64, total: u64) -> Settlement {
        let (characters, basis) = tollgate_metering::speech::characters(
            &end.metered(),
            self.usage,
            self.local_characters,
            delivered,
            total,
            self.shape,
        );
        self.charged_characters = characters;
        Settlement::Charge(Usage::Characters(characters), basis)
    }

    fn closing(&mut self, end: &End, charged: Option<Amount>) -> Closing {
        match end {
            End::Complete => Closing::Send(
                self.encoder
                    .done(self.charged_characters, charged)
                    .into_iter()
                    .collect(),
            ),
            End::Cut(e) => Closing::cut(e, charged, |error| self.encoder.failed(error)),
            End::ClientGone => Closing::Nothing,
        }
    }
}

/// Opens a streamed synthesis on the model's channels — each through its own format's adapter
/// — and waits for its first piece, so that a failure before the first byte is an ordinary
/// error (and a full release), not a cut stream.
pub async fn open(
    state: &std::sync::Arc<tollgate_request::state::State>,
    entry: &tollgate_settings::catalog::ModelEntry,
    usage: Option<&tollgate_journal::usage::Recorder>,
    synthesis: &Synthesis,
) -> Result<(AudioChunk, ChunkStream), UpstreamError> {
    let (opened, _channel) =
        crate::relay::with_failover(entry, usage, |channel, endpoint| async move {
            let mut chunks = registry::synthesizer(channel.format)?
                .stream(&state.http, &endpoint, synthesis)
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
    state: std::sync::Arc<tollgate_request::state::State>,
    entry: std::sync::Arc<tollgate_settings::catalog::ModelEntry>,
    held: HeldCharge,
    synthesis: Synthesis,
    local_characters: u64,
) -> Result<(Synthesized, u64, std::time::Duration), ApiError> {
    crate::relay::to_completion(async move {
        let called = crate::relay::with_failover(&entry, held.usage(), |channel, endpoint| {
            let (state, synthesis) = (state.clone(), &synthesis);
            async move {
                registry::synthesizer(channel.format)?
                    .synthesize(&state.http, &endpoint, synthesis)
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
        let (characters, basis) = Basis::reported_or_local(
            answer.body.characters,
            local_characters,
            Measure::LocalCount,
        );
        held.settle(&Usage::Characters(characters), basis).await?;
        Ok((answer.body, characters, answer.upstream_time))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::speech::encoders::{CompatSse, RawAudio};
    use tollgate_compat_audio::AudioFormat;

    const SHAPE: AudioShape = AudioShape {
        format: AudioFormat::Pcm,
        sample_rate: 24_000,
        bitrate: 128_000,
        speed: 1.0,
    };

    fn chunk(audio: &'static [u8], characters: Option<u64>, last: bool) -> AudioChunk {
        AudioChunk {
            audio: Audio::Bytes(Bytes::from_static(audio)),
            characters,
            last,
            t2a: None,
        }
    }

    fn charged(settlement: Settlement) -> (u64, Basis) {
        match settlement {
            Settlement::Charge(Usage::Characters(n), basis) => (n, basis),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_complete_stream_is_charged_the_upstreams_count_else_the_local_one() {
        let mut meter = SpeechMeter::new(CompatSse, 40, SHAPE);
        assert_eq!(
            meter.on_piece(&chunk(b"abcd", None, false)).unwrap()[0].1,
            4
        );
        meter.on_piece(&chunk(b"", Some(38), true)).unwrap();
        let (n, basis) = charged(meter.finish(&End::Complete, 4, 4));
        assert_eq!((n, basis.estimated), (38, false));
        let Closing::Send(done) = meter.closing(&End::Complete, None) else {
            panic!("the done event");
        };
        assert!(String::from_utf8_lossy(&done[0]).contains(r#""input_tokens":38"#));

        let mut local = SpeechMeter::new(RawAudio, 40, SHAPE);
        local.on_piece(&chunk(b"ab", None, true)).unwrap();
        let (n, basis) = charged(local.finish(&End::Complete, 2, 2));
        assert_eq!((n, basis.estimated), (40, true));
    }

    #[test]
    fn a_client_that_leaves_pays_the_share_delivered_and_a_cut_the_audio_delivered() {
        let mut meter = SpeechMeter::new(RawAudio, 40, SHAPE);
        meter.on_piece(&chunk(b"abcdefgh", Some(30), true)).unwrap();
        let (n, basis) = charged(meter.finish(&End::ClientGone, 3, 8));
        assert_eq!(n, 12, "ceil(30 × 3 / 8)");
        assert!(basis.note.unwrap().contains("3 of 8"));
        assert!(matches!(
            meter.closing(&End::ClientGone, None),
            Closing::Nothing
        ));

        // One second of 24 kHz pcm delivered: 15 characters at speed 1.
        let mut cut = SpeechMeter::new(RawAudio, 40, SHAPE);
        let end = End::Cut(UpstreamError::Protocol("gone".into()));
        let (n, basis) = charged(cut.finish(&end, 48_000, 96_000));
        assert_eq!((n, basis.estimated), (15, true));
        // Raw audio has no error event: the body is aborted, saying what was charged.
        let Closing::Abort(why) = cut.closing(&end, Some(Amount::from_nanos(1_500))) else {
            panic!("an aborted body");
        };
        assert!(why.contains("was charged"), "{why}");
    }
}
