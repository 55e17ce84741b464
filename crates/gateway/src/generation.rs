//! Native text generation, steps 4–8 of DESIGN §2 as the native endpoint and its OpenAI-shaped
//! bridges (chat completions, Responses) share them: the model and its limits, the prompt
//! measured and held, the upstream's stream opened or its whole answer run to completion and
//! settled — a stream relayed frame by frame (DESIGN §8) through an [`Encoder`] (the native SSE
//! framing, [`NativeSse`], or a bridge's chunks) and settled by its [`NativeMeter`] under the one
//! pump (docs/api.md §8 rule 7). The handlers (`handlers::{native, chat, responses}`) read their
//! own formats and call these; none of them calls another handler.
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
use crate::relay;
use crate::stream_body;
use bytes::Bytes;
use http::{Response, StatusCode};
use std::sync::Arc;
use tollgate_billing::Tariff;
use tollgate_billing::{Amount, Usage};
use tollgate_exchange::body;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::response::{ResponseBody, UpstreamTime, sse_response};
use tollgate_metering::prompt;
use tollgate_metering::text::{Delivered, Generation};
use tollgate_metering::{Basis, Capped, Measure};
use tollgate_native_genai::models::ModelLimits;
use tollgate_native_genai::validate::Validated;
use tollgate_native_genai::{
    CountTokensResponse, FieldError, GenerateContentRequest, GenerateContentResponse,
    UsageMetadata, validate,
};
use tollgate_request::context::RequestCtx;
use tollgate_request::state::State;
use tollgate_settings::catalog::{Catalog, ModelEntry};
use tollgate_settings::config::ModelKind;
use tollgate_sse::ByteString;
use tollgate_store::Principal;
use tollgate_upstream::UpstreamError;
use tollgate_upstream::common::{Frame, FrameStream};
use tollgate_upstream::registry;

/// How a native answer is charged, decided at its hold: by text tokens (docs/api.md §8 rule 7),
/// or, for a model priced by token class (an image model), by class within the bound of what
/// the gateway measured ([`Generation`], docs/decisions.md "Images").
#[derive(Debug, Clone)]
pub enum NativeCharge {
    /// Input and output tokens; `local_input` is the prompt's local count.
    Text {
        /// The prompt's local count, for an answer without usage.
        local_input: u64,
    },
    /// Token classes at the model's class prices.
    ByClass {
        /// The request as measured.
        generation: Box<Generation>,
        /// The model's price.
        tariff: Tariff,
    },
}

impl NativeCharge {
    /// What an answer that `delivered` this is charged: the vendor's usage (`reported`) by
    /// the model's meter, else the local count, marked estimated.
    pub fn settlement(
        &self,
        reported: Option<&UsageMetadata>,
        delivered: &Delivered,
    ) -> Settlement {
        match self {
            NativeCharge::Text { local_input } => {
                let (usage, basis) =
                    tollgate_metering::text::settled_usage(reported, *local_input, &delivered.text);
                Settlement::Charge(usage, basis)
            }
            NativeCharge::ByClass { generation, tariff } => {
                Settlement::Within(generation.settle(tariff, reported, delivered))
            }
        }
    }
}

/// The images of one answer (or streamed event) the client is given, decoded from their
/// headers (`image_bytes::vet_b64`): every inline image is vetted, so a broken or lying image never
/// reaches the client; those not marked thoughts (a model's drafts, which the vendor does not
/// bill as images) are counted.
pub fn drawn_images(response: &GenerateContentResponse) -> Result<Vec<(u32, u32)>, UpstreamError> {
    let mut drawn = Vec::new();
    for candidate in response.candidates.iter().flatten() {
        for part in candidate.content.iter().flat_map(|c| c.parts.iter()) {
            let Some(blob) = &part.inline_data else {
                continue;
            };
            if !blob.mime_type.starts_with("image/") {
                continue;
            }
            let (_, size) = crate::image_bytes::vet_b64(&blob.data)?;
            if part.thought != Some(true) {
                drawn.push((size.width, size.height));
            }
        }
    }
    Ok(drawn)
}

/// What `response` delivered, added to `delivered`.
fn deliver(
    delivered: &mut Delivered,
    response: &GenerateContentResponse,
) -> Result<(), UpstreamError> {
    delivered.images.extend(drawn_images(response)?);
    delivered
        .text
        .push_str(&tollgate_metering::text::delivered_text(response));
    Ok(())
}

/// Step 5 of a native request (and of the chat and Responses bridges): the prompt measured
/// (`tollgate_metering::prompt::estimate_prompt`, on the blocking pool when the body it came
/// in — `size` bytes — passes `tollgate_metering::MEASURE_ON_BLOCKING_POOL`), refused when its
/// media alone pass the model's input limit, and held with the most the request can produce
/// (`valid`'s output cap, thinking and images included) — the model's whole input limit when a
/// part cannot be measured (`docs/decisions.md`, "Bounded settlement"). Hands the request
/// back, with the hold and how the answer will be charged.
pub async fn hold_prompt(
    ctx: &RequestCtx,
    principal: &Principal,
    entry: &Arc<tollgate_settings::catalog::ModelEntry>,
    limits: &ModelLimits,
    request: GenerateContentRequest,
    size: usize,
    valid: &Validated,
) -> Result<(GenerateContentRequest, HeldCharge, NativeCharge), ApiError> {
    let max_output = valid.max_total_output_tokens();
    let (request, prompt) = if size > tollgate_metering::MEASURE_ON_BLOCKING_POOL {
        tokio::task::spawn_blocking(move || {
            let prompt = prompt::estimate_prompt(&request);
            (request, prompt)
        })
        .await
        .map_err(|e| ApiError::internal("measuring the prompt", e))?
    } else {
        let prompt = prompt::estimate_prompt(&request);
        (request, prompt)
    };
    let input_limit = u64::from(limits.input_token_limit);
    if prompt.media > input_limit {
        return Err(ApiError::invalid(
            "contents",
            "too_long",
            format!(
                "The request's media measure {} tokens, more than the {input_limit} the model takes as input",
                prompt.media
            ),
        ));
    }
    if let Some(field) = &prompt.unmeasured {
        tracing::debug!(
            field,
            input_limit,
            "a prompt part cannot be measured: held up to the model's input limit"
        );
    }
    let (estimate, charge) = match entry.tariff {
        Tariff::TokenClasses { .. } => {
            let generation = Generation {
                prompt,
                input_limit,
                max_output,
                images: limits.images.zip(valid.image_size),
            };
            let estimate = generation.hold(&entry.tariff);
            let charge = NativeCharge::ByClass {
                generation: Box::new(generation),
                tariff: entry.tariff.clone(),
            };
            (estimate, charge)
        }
        _ => (
            Usage::TextTokens {
                input: prompt.hold_tokens(input_limit),
                output: max_output,
            },
            NativeCharge::Text {
                local_input: prompt.local(),
            },
        ),
    };
    let held = crate::admission::place_hold(ctx, principal, entry, &estimate).await?;
    Ok((request, held, charge))
}

/// Opens the upstream's event stream through the model's channels: the events, and the time the
/// response head took.
async fn open_stream(
    state: &Arc<State>,
    entry: &Arc<tollgate_settings::catalog::ModelEntry>,
    usage: Option<&tollgate_journal::usage::Recorder>,
    raw: Bytes,
) -> Result<(FrameStream, std::time::Duration), tollgate_upstream::UpstreamError> {
    let opened = relay::with_failover(entry, usage, |channel, endpoint| {
        let (state, raw, model) = (state.clone(), raw.clone(), entry.upstream_model.clone());
        async move {
            let started = std::time::Instant::now();
            registry::text_generator(channel.format)?
                .stream(&state.http, &endpoint, &model, raw)
                .await
                .map(|frames| (frames, started.elapsed()))
        }
    })
    .await?;
    Ok(opened.0)
}

/// Steps 6–8 of a whole answer, run to completion even if the client goes away (the upstream
/// bills the work once it has the request): the upstream's bytes and time, after settling.
pub async fn generate_whole(
    state: &Arc<State>,
    entry: &Arc<tollgate_settings::catalog::ModelEntry>,
    raw: Bytes,
    held: HeldCharge,
    charge: NativeCharge,
) -> Result<(Bytes, std::time::Duration), ApiError> {
    let (state, entry) = (state.clone(), entry.clone());
    crate::trace::spawn_for_request(async move {
        let called = relay::with_failover(&entry, held.usage(), |channel, endpoint| {
            let (state, raw, model) = (state.clone(), raw.clone(), entry.upstream_model.clone());
            async move {
                registry::text_generator(channel.format)?
                    .generate(&state.http, &endpoint, &model, raw)
                    .await
            }
        })
        .await;
        let answer = match called {
            Ok((answer, _)) => answer,
            Err(e) => {
                tracing::warn!(error = %e, "native upstream failed");
                held.release(&format!("upstream failed: {e}"));
                return Err(relay::upstream_error(&e));
            }
        };
        let response: GenerateContentResponse = match serde_json::from_slice(&answer.body) {
            Ok(r) => r,
            Err(e) => {
                // The client gets nothing usable, so it pays nothing.
                tracing::error!(error = %e, "the upstream's answer is not a generateContent response");
                held.release("upstream answer unreadable");
                return Err(ApiError::new(
                    ErrorKind::UpstreamFailed,
                    "The upstream's answer could not be read; the request was not charged",
                ));
            }
        };
        let mut delivered = Delivered::default();
        if let Err(e) = deliver(&mut delivered, &response) {
            // An image that does not decode never reaches the client, which pays nothing.
            tracing::error!(error = %e, "the upstream's answer holds a broken image");
            held.release("upstream answer unvetted");
            return Err(relay::upstream_error(&e));
        }
        charge
            .settlement(response.usage_metadata.as_ref(), &delivered)
            .settle(held)
            .await?;
        Ok((answer.body, answer.upstream_time))
    })
    .await
    .map_err(|e| ApiError::internal("relaying the request", e))?
}

/// A configured native model and its limits; an unknown one is the vendor's 404.
pub fn native_model(
    catalog: &Catalog,
    model: &str,
) -> Result<(Arc<tollgate_settings::catalog::ModelEntry>, ModelLimits), ApiError> {
    let model = model.strip_prefix("models/").unwrap_or(model);
    let entry = catalog
        .resolve(model, ModelKind::NativeText)
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                ErrorKind::NotFound,
                format!(
                    "models/{model} is not found, or is not a text-generation model served here"
                ),
            )
        })?;
    let mut model_limits = limits_of(&entry).unwrap_or_default();
    if let Some(max) = entry.max_input_tokens {
        model_limits.input_token_limit = u32::try_from(max).unwrap_or(u32::MAX);
    }
    Ok((entry, model_limits))
}

/// Step 4 of a bridged request (chat completions, Responses): a native model of the catalog —
/// another is the bridged format's own `model_not_found` — with its limits.
pub fn bridged_model(
    catalog: &Catalog,
    model: &str,
) -> Result<(Arc<tollgate_settings::catalog::ModelEntry>, ModelLimits), ApiError> {
    if catalog.resolve(model, ModelKind::NativeText).is_none() {
        return Err(ApiError::unknown_model(model));
    }
    native_model(catalog, model)
}

/// A prompt's tokens, counted by the model's channels in turn (`request` is a `countTokens`
/// body, the same bytes to each), for `:countTokens` and `POST /v1/responses/input_tokens`.
/// Free: nothing is held. The channel's answer is vetted like every answer: one that is not a
/// count is the channel's failure (502), and none of its bytes reach the client.
pub async fn count_tokens(
    ctx: &RequestCtx,
    entry: &ModelEntry,
    request: Bytes,
) -> Result<(CountTokensResponse, UpstreamTime), ApiError> {
    let (answer, _) = relay::with_failover(entry, ctx.usage.as_ref(), |channel, endpoint| {
        let (state, request) = (ctx.state.clone(), request.clone());
        let model = entry.upstream_model.clone();
        async move {
            registry::text_generator(channel.format)?
                .count_tokens(&state.http, &endpoint, &model, request)
                .await
        }
    })
    .await
    .map_err(|e| relay::upstream_error(&e))?;
    let counted = serde_json::from_slice(&answer.body).map_err(|e| {
        tracing::error!(error = %e, "the upstream's answer is not a countTokens response");
        ApiError::new(
            ErrorKind::UpstreamFailed,
            "The upstream's answer could not be read",
        )
    })?;
    Ok((counted, UpstreamTime(answer.upstream_time)))
}

/// The limits of a model's row in the table (by its upstream id, then its public one).
pub fn limits_of(entry: &tollgate_settings::catalog::ModelEntry) -> Option<ModelLimits> {
    tollgate_native_genai::models::limits(&entry.upstream_model)
        .or_else(|| tollgate_native_genai::models::limits(&entry.public))
}

/// Steps 6–8 streamed, for the native endpoint and both bridges: the client stream admitted,
/// the upstream's event stream opened (the hold released in full if it cannot be), then relayed
/// through `encoder` and settled in the background by the pump ([`NativeMeter`]).
pub async fn stream_events<E: Encoder>(
    ctx: &RequestCtx,
    entry: &Arc<ModelEntry>,
    raw: Bytes,
    held: HeldCharge,
    charge: NativeCharge,
    encoder: E,
) -> Result<Response<ResponseBody>, ApiError> {
    let permit = crate::admission::open_stream(ctx)?;
    let (frames, first_frame) = match open_stream(&ctx.state, entry, held.usage(), raw).await {
        Ok(opened) => opened,
        Err(e) => {
            held.release(&format!("upstream failed: {e}"));
            return Err(relay::upstream_error(&e));
        }
    };
    let (sender, body) = stream_body::channel(permit);
    let meter = NativeMeter::new(encoder, charge);
    crate::trace::spawn_for_request(crate::pump::pump(held, None, frames, sender, meter));
    Ok(sse_response(body, first_frame))
}

/// A client format bridged onto native generation (docs/api.md §4 rule 4), as its request type:
/// the Chat Completions bridge (`translate::chat`) and the Responses bridge
/// (`translate::responses`). [`bridge`] runs the steps for either; the format says only what
/// differs.
pub trait Bridge: Send + 'static {
    /// The stream's events.
    type Events: Encoder;
    /// The whole answer.
    type Answer: serde::Serialize;
    /// What the answer's id starts with (`chatcmpl-`, `resp_`); the request's id follows.
    const ID_PREFIX: &'static str;
    /// The model asked for (a public name or alias).
    fn model(&self) -> &str;
    /// Whether the answer is streamed.
    fn streams(&self) -> bool;
    /// The native request, for the model's limits.
    fn to_native(&self, limits: &ModelLimits) -> Result<GenerateContentRequest, FieldError>;
    /// The stream's events, fresh, for the answer `answering`.
    fn events(&self, answering: &Answering) -> Self::Events;
    /// The whole answer `answering` for the upstream's native one.
    fn answer(&self, native: &GenerateContentResponse, answering: &Answering) -> Self::Answer;
}

/// Who a bridged answer is: its id (the format's prefix and the request's id) and when it was
/// made.
#[derive(Debug, Clone)]
pub struct Answering {
    /// `chatcmpl-…`, `resp_…`.
    pub id: String,
    /// Unix seconds.
    pub created: i64,
}

/// Steps 4–8 of a bridged request (docs/api.md §4 rule 4), for either bridge: the model must
/// be a native model (others are `model_not_found`); `format` translates for its limits, the
/// native rules check the result, and the hold covers the prompt estimate and the output cap
/// (`size` is the client's body in bytes, as read: it decides where the prompt is measured,
/// [`hold_prompt`]). Then the upstream's stream relayed as the format's events, or its whole
/// answer translated back.
pub async fn bridge<B: Bridge>(
    ctx: RequestCtx,
    principal: Principal,
    format: B,
    size: usize,
) -> Result<Response<ResponseBody>, ApiError> {
    // 4. The model: native models only.
    let (entry, model_limits) = bridged_model(&ctx.settings.catalog, format.model())?;

    // 5. The translation, the native rules, the hold.
    let native = format.to_native(&model_limits)?;
    let valid = validate(&native, &model_limits)?;
    if valid.image_size.is_some() {
        // A bridge relays text: images it cannot give the client would still be billed.
        return Err(ApiError::invalid(
            "model",
            "unsupported_value",
            format!(
                "The model '{}' draws images, which this endpoint cannot return; call \
                 generateContent on /v1beta/models, or /v1/images/generations",
                format.model()
            ),
        ));
    }
    let (native, held, charge) = hold_prompt(
        &ctx,
        &principal,
        &entry,
        &model_limits,
        native,
        size,
        &valid,
    )
    .await?;
    let raw = Bytes::from(
        serde_json::to_vec(&native)
            .map_err(|e| ApiError::internal("translating the request", e))?,
    );

    // 6–8. Streamed, or whole and translated back.
    let answering = Answering {
        id: format!(
            "{}{}",
            B::ID_PREFIX,
            ctx.request_id.trim_start_matches("req_")
        ),
        created: tollgate_journal::clock::unix_now(),
    };
    if format.streams() {
        let events = format.events(&answering);
        return stream_events(&ctx, &entry, raw, held, charge, events).await;
    }
    let (bytes, upstream_time) = generate_whole(&ctx.state, &entry, raw, held, charge).await?;
    let native: GenerateContentResponse = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            ErrorKind::UpstreamFailed,
            format!("The upstream's answer could not be read: {e}"),
        )
    })?;
    let mut response = body::json_response(StatusCode::OK, &format.answer(&native, &answering));
    response
        .extensions_mut()
        .insert(UpstreamTime(upstream_time));
    Ok(response)
}

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

/// The meter of a native generation stream: the billing rules of a stream at the top of this
/// module.
#[derive(Debug)]
pub struct NativeMeter<E: Encoder> {
    encoder: E,
    charge: NativeCharge,
    last_usage: Option<UsageMetadata>,
    delivered: Delivered,
    relayed: usize,
}

impl<E: Encoder> NativeMeter<E> {
    /// A meter writing through `encoder`, charging by `charge`.
    pub fn new(encoder: E, charge: NativeCharge) -> Self {
        NativeMeter {
            encoder,
            charge,
            last_usage: None,
            delivered: Delivered::default(),
            relayed: 0,
        }
    }

    fn settlement(&self) -> Settlement {
        self.charge
            .settlement(self.last_usage.as_ref(), &self.delivered)
    }

    fn partial(&self, why: &str) -> Settlement {
        let (note, measured) = match self.last_usage {
            Some(_) => (
                format!("partial: {why}; settled on the last usage reported"),
                None,
            ),
            None => (
                format!("partial: {why}; no usage reported, counted what was delivered"),
                Some(Measure::DeliveredPart),
            ),
        };
        let partial = |basis: Basis| Basis {
            estimated: basis.estimated,
            note: Some(match &basis.note {
                Some(drawn) if !drawn.starts_with("upstream reported no usage") => {
                    format!("{note}; {drawn}")
                }
                _ => note.clone(),
            }),
            measured: measured.unwrap_or(basis.measured),
        };
        match self.settlement() {
            Settlement::Charge(usage, basis) => Settlement::Charge(usage, partial(basis)),
            Settlement::Within(capped) => Settlement::Within(Capped {
                basis: partial(capped.basis),
                ..capped
            }),
            release @ Settlement::Release(_) => release,
        }
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
        deliver(&mut self.delivered, &response)?;
        if let Some(usage) = &response.usage_metadata {
            self.last_usage = Some(usage.clone());
        }
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
            End::Complete => self.settlement(),
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
        .body(tollgate_exchange::errors::Family::Google)
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
        let mut meter = NativeMeter::new(NativeSse, NativeCharge::Text { local_input: 10 });
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

        let mut failed = NativeMeter::new(NativeSse, NativeCharge::Text { local_input: 10 });
        assert!(failed.on_piece(&frame("not json")).is_err());
        let end = End::Cut(UpstreamError::Protocol("broken".into()));
        assert!(matches!(failed.finish(&end, 0, 0), Settlement::Release(_)));
        let Closing::Send(error) = failed.closing(&end, None) else {
            panic!("an error event");
        };
        assert!(String::from_utf8_lossy(&error[0]).contains("error"));
    }
}
