//! Relaying a streamed native generation frame by frame (DESIGN §8), to the native SSE framing or
//! to chat-completion chunks, and the settlement that follows (docs/api.md §8 rule 7).
//!
//! Billing of a stream:
//! * it ends normally — the last `usageMetadata` settles it (cumulative in a stream: the last one
//!   counts, never the sum); without any, the local count of the prompt and of the text
//!   delivered, marked estimated;
//! * the client goes away — the relay stops reading (dropping the upstream stream cancels the
//!   generation) and settles on the last usage seen, marked partial, or on the local count of
//!   what was delivered when none arrived, marked partial and estimated;
//! * the upstream fails mid-stream — the client gets an error event, and what was delivered is
//!   settled as above; nothing delivered releases the hold in full.

use crate::charge::{Basis, HeldCharge};
use crate::errors::ApiError;
use crate::stream_body::BodySender;
use crate::translate::native as translate;
use bytes::Bytes;
use futures_util::StreamExt;
use tollgate_native_genai::{GenerateContentResponse, UsageMetadata};
use tollgate_upstream::UpstreamError;
use tollgate_upstream::genai::FrameStream;

/// How the client's stream is written.
pub trait Encoder: Send + 'static {
    /// What to send for one upstream event (`raw` is its JSON as the vendor wrote it).
    fn frame(&mut self, response: &GenerateContentResponse, raw: &str) -> Vec<Bytes>;
    /// What to send after the last event.
    fn done(&mut self) -> Vec<Bytes>;
    /// What to send when the upstream failed mid-stream.
    fn failed(&mut self, error: &ApiError) -> Vec<Bytes>;
}

/// Relays `frames` to `sender` through `encoder`, then settles `held`. `local_input` is the
/// prompt's local token count (the fallback when no usage arrives).
pub async fn relay<E: Encoder>(
    mut frames: FrameStream,
    sender: BodySender,
    mut encoder: E,
    held: HeldCharge,
    local_input: u64,
) {
    let mut last_usage: Option<UsageMetadata> = None;
    let mut delivered = String::new();
    let mut relayed = 0usize;
    let mut ending = Ending::Complete;
    while let Some(item) = frames.next().await {
        let frame = match item {
            Ok(frame) => frame,
            Err(e) => {
                ending = Ending::UpstreamFailed(e);
                break;
            }
        };
        let response: GenerateContentResponse = match serde_json::from_str(&frame.data) {
            Ok(r) => r,
            Err(e) => {
                ending = Ending::UpstreamFailed(UpstreamError::Protocol(format!(
                    "a streamed event is not a generateContent response: {e}"
                )));
                break;
            }
        };
        if let Some(usage) = &response.usage_metadata {
            last_usage = Some(usage.clone());
        }
        delivered.push_str(&translate::delivered_text(&response));
        relayed += 1;
        if send_all(&sender, encoder.frame(&response, &frame.data))
            .await
            .is_err()
        {
            ending = Ending::ClientGone;
            break;
        }
    }
    // Stop the generation now if we are not reading on.
    drop(frames);
    // Settle before the stream's last piece: a client that read the whole stream was charged
    // durably, and an error event says what was charged.
    match ending {
        Ending::Complete => {
            let (usage, basis) =
                translate::settled_usage(last_usage.as_ref(), local_input, &delivered);
            if let Err(e) = held.settle(&usage, basis).await {
                tracing::error!(error = ?e, "settling a stream failed");
            }
            let _ = send_all(&sender, encoder.done()).await;
        }
        Ending::ClientGone => {
            tracing::info!(
                frames = relayed,
                "client left the stream; settling what was delivered"
            );
            settle_partial(
                held,
                last_usage.as_ref(),
                local_input,
                &delivered,
                "client disconnected",
            )
            .await;
        }
        Ending::UpstreamFailed(e) => {
            tracing::warn!(error = %e, frames = relayed, "the upstream stream failed");
            let error = if relayed == 0 {
                held.release(&format!("upstream failed before any output: {e}"));
                crate::relay::upstream_error(&e)
            } else {
                let charged = settle_partial(
                    held,
                    last_usage.as_ref(),
                    local_input,
                    &delivered,
                    "upstream cut the stream",
                )
                .await;
                crate::relay::stream_cut_error(&e, charged)
            };
            let _ = send_all(&sender, encoder.failed(&error)).await;
        }
    }
}

enum Ending {
    Complete,
    ClientGone,
    UpstreamFailed(UpstreamError),
}

async fn settle_partial(
    held: HeldCharge,
    last_usage: Option<&UsageMetadata>,
    local_input: u64,
    delivered: &str,
    why: &str,
) -> Option<tollgate_billing::Amount> {
    let (usage, basis) = translate::settled_usage(last_usage, local_input, delivered);
    let basis = Basis {
        estimated: basis.estimated,
        note: Some(match last_usage {
            Some(_) => format!("partial: {why}; settled on the last usage reported"),
            None => format!("partial: {why}; no usage reported, counted what was delivered"),
        }),
    };
    match held.settle(&usage, basis).await {
        Ok(amount) => Some(amount),
        Err(e) => {
            tracing::error!(error = ?e, "settling a partial stream failed");
            None
        }
    }
}

async fn send_all(
    sender: &BodySender,
    pieces: Vec<Bytes>,
) -> Result<(), crate::stream_body::ClientGone> {
    for piece in pieces {
        sender.send(piece).await?;
    }
    Ok(())
}

/// The native framing (wire-formats §6.3): `data: <json>\r\n\r\n` per event, the JSON relayed as
/// the vendor wrote it; an error as a `{"error":{…}}` event.
#[derive(Debug, Default)]
pub struct NativeSse;

impl Encoder for NativeSse {
    fn frame(&mut self, _: &GenerateContentResponse, raw: &str) -> Vec<Bytes> {
        vec![Bytes::from(format!("data: {raw}\r\n\r\n"))]
    }
    fn done(&mut self) -> Vec<Bytes> {
        Vec::new()
    }
    fn failed(&mut self, error: &ApiError) -> Vec<Bytes> {
        vec![Bytes::from(format!(
            "data: {}\r\n\r\n",
            google_error_json(error)
        ))]
    }
}

/// An error in the vendor's shape, as JSON text.
pub fn google_error_json(error: &ApiError) -> String {
    error.body(crate::errors::Family::Google).to_string()
}
