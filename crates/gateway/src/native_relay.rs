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

use crate::hold::HeldCharge;
use crate::pump::{Closing, End, Meter, Settlement};
use bytes::Bytes;
use tollgate_billing::Amount;
use tollgate_gateway_core::errors::ApiError;
use tollgate_gateway_core::stream_body::BodySender;
use tollgate_metering::{Basis, Measure};
use tollgate_native_genai::{GenerateContentResponse, UsageMetadata};
use tollgate_sse::ByteString;
use tollgate_upstream::UpstreamError;
use tollgate_upstream::genai::{Frame, FrameStream};

/// How the client's stream is written.
pub trait Encoder: Send + 'static {
    /// What to send for one upstream event (`raw` is its JSON as the vendor wrote it, a slice
    /// of the bytes read).
    fn frame(&mut self, response: &GenerateContentResponse, raw: &ByteString) -> Vec<Bytes>;
    /// What to send after the last event, given what the stream was charged (for the final
    /// event, `crate::hold::with_charge`).
    fn done(&mut self, charged: Option<Amount>) -> Vec<Bytes>;
    /// What to send when the upstream failed mid-stream.
    fn failed(&mut self, error: &ApiError) -> Vec<Bytes>;
}

/// Relays `frames` to `sender` through `encoder`, then settles `held`: the [`NativeMeter`]
/// driven by the one pump ([`crate::pump`]). `local_input` is the prompt's local token count
/// (the fallback when no usage arrives).
pub async fn relay<E: Encoder>(
    frames: FrameStream,
    sender: BodySender,
    encoder: E,
    held: HeldCharge,
    local_input: u64,
) {
    let meter = NativeMeter::new(encoder, local_input);
    crate::pump::pump(held, None, frames, sender, meter).await;
}

/// The meter of a native generation stream: the billing rules at the top of this module.
#[derive(Debug)]
pub struct NativeMeter<E: Encoder> {
    encoder: E,
    local_input: u64,
    last_usage: Option<UsageMetadata>,
    delivered: String,
    relayed: usize,
}

impl<E: Encoder> NativeMeter<E> {
    /// A meter writing through `encoder`.
    pub fn new(encoder: E, local_input: u64) -> Self {
        NativeMeter {
            encoder,
            local_input,
            last_usage: None,
            delivered: String::new(),
            relayed: 0,
        }
    }

    fn partial(&self, why: &str) -> Settlement {
        let (usage, basis) = tollgate_metering::text::settled_usage(
            self.last_usage.as_ref(),
            self.local_input,
            &self.delivered,
        );
        let (note, measured) = match self.last_usage {
            Some(_) => (
                format!("partial: {why}; settled on the last usage reported"),
                basis.measured,
            ),
            None => (
                format!("partial: {why}; no usage reported, counted what was delivered"),
                Measure::DeliveredPart,
            ),
        };
        Settlement::Charge(
            usage,
            Basis {
                estimated: basis.estimated,
                note: Some(note),
                measured,
            },
        )
    }
}

impl<E: Encoder> Meter for NativeMeter<E> {
    type Piece = Frame;
    // A client that leaves stops the generation: dropping the upstream's stream cancels it.
    const DRAIN_AFTER_CLIENT_GONE: bool = false;
    // The stream's clean end is its end.
    const HAS_LAST_PIECE: bool = false;

    fn on_piece(&mut self, frame: &Frame) -> Result<Vec<(Bytes, u64)>, UpstreamError> {
        let response: GenerateContentResponse = serde_json::from_str(&frame.data).map_err(|e| {
            UpstreamError::Protocol(format!(
                "a streamed event is not a generateContent response: {e}"
            ))
        })?;
        if let Some(usage) = &response.usage_metadata {
            self.last_usage = Some(usage.clone());
        }
        self.delivered
            .push_str(&tollgate_metering::text::delivered_text(&response));
        self.relayed += 1;
        Ok(self
            .encoder
            .frame(&response, &frame.data)
            .into_iter()
            .map(|bytes| (bytes, 0))
            .collect())
    }

    fn is_last(&self, _: &Frame) -> bool {
        false
    }

    fn finish(&mut self, end: &End, _delivered: u64, _offered: u64) -> Settlement {
        match end {
            End::Complete => {
                let (usage, basis) = tollgate_metering::text::settled_usage(
                    self.last_usage.as_ref(),
                    self.local_input,
                    &self.delivered,
                );
                Settlement::Charge(usage, basis)
            }
            End::ClientGone => {
                tracing::info!(
                    frames = self.relayed,
                    "client left the stream; settling what was delivered"
                );
                self.partial("client disconnected")
            }
            End::Cut(e) if self.relayed == 0 => {
                Settlement::Release(format!("upstream failed before any output: {e}"))
            }
            End::Cut(_) => self.partial("upstream cut the stream"),
        }
    }

    fn closing(&mut self, end: &End, charged: Option<Amount>) -> Closing {
        match end {
            End::Complete => Closing::Send(self.encoder.done(charged)),
            End::Cut(e) => {
                let error = if self.relayed == 0 {
                    crate::relay::upstream_error(e)
                } else {
                    crate::relay::stream_cut_error(e, charged)
                };
                Closing::Send(self.encoder.failed(&error))
            }
            End::ClientGone => Closing::Nothing,
        }
    }
}

/// The native framing (wire-formats §6.3): `data: <json>\r\n\r\n` per event, the JSON relayed as
/// the vendor wrote it; an error as a `{"error":{…}}` event.
#[derive(Debug, Default)]
pub struct NativeSse;

impl Encoder for NativeSse {
    fn frame(&mut self, _: &GenerateContentResponse, raw: &ByteString) -> Vec<Bytes> {
        if raw.contains('\n') {
            // An event the vendor wrote over several `data:` lines goes out as several.
            let mut event = String::with_capacity(raw.len() + 16);
            for line in raw.split('\n') {
                event.push_str("data: ");
                event.push_str(line);
                event.push_str("\r\n");
            }
            event.push_str("\r\n");
            return vec![Bytes::from(event)];
        }
        // The vendor's bytes themselves, between the line's opening and its end: no copy.
        vec![
            Bytes::from_static(b"data: "),
            raw.as_bytes().clone(),
            Bytes::from_static(b"\r\n\r\n"),
        ]
    }
    fn done(&mut self, _charged: Option<Amount>) -> Vec<Bytes> {
        // The vendor's last event was relayed as it came, before the charge existed; a native
        // stream's charge is at `GET /v1/charges/{request_id}`.
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
    error
        .body(tollgate_gateway_core::errors::Family::Google)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(json: &str) -> Frame {
        Frame { data: json.into() }
    }

    #[test]
    fn usage_settles_a_complete_stream_and_a_failure_before_output_releases() {
        let mut meter = NativeMeter::new(NativeSse, 10);
        let out = meter
            .on_piece(&frame(
                r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"thoughtsTokenCount":5}}"#,
            ))
            .unwrap();
        let event: Vec<u8> = out.iter().flat_map(|(piece, _)| piece.to_vec()).collect();
        assert!(event.starts_with(b"data: {\"candidates\""));
        assert!(event.ends_with(b"}\r\n\r\n"));
        // An event the vendor wrote over two lines goes out as two.
        let two_lines = NativeSse.frame(
            &GenerateContentResponse::default(),
            &ByteString::from_static("{\n}"),
        );
        assert_eq!(&two_lines.concat()[..], b"data: {\r\ndata: }\r\n\r\n");
        let Settlement::Charge(usage, basis) = meter.finish(&End::Complete, 0, 0) else {
            panic!("charged");
        };
        assert_eq!(
            usage,
            tollgate_billing::Usage::TextTokens {
                input: 7,
                output: 7
            },
            "thinking is output"
        );
        assert!(!basis.estimated);

        let mut failed = NativeMeter::new(NativeSse, 10);
        assert!(failed.on_piece(&frame("not json")).is_err());
        let end = End::Cut(UpstreamError::Protocol("broken".into()));
        assert!(matches!(failed.finish(&end, 0, 0), Settlement::Release(_)));
        let Closing::Send(error) = failed.closing(&end, None) else {
            panic!("an error event");
        };
        assert!(String::from_utf8_lossy(&error[0]).contains("error"));
    }
}
