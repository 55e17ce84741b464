//! Images, steps 4–8 of DESIGN §2 as `/v1/images/generations`, `/v1/images/edits` and
//! `/v1/images/variations` share them (docs/api.md §2.13; docs/decisions.md, "Images" and
//! "Images by the picture"): the model and its family's rules, the hold, the call through the
//! model's channels, and every image the vendor sends **vetted before a byte of it reaches the
//! client**: its base64 read, its bytes an image of a known type, its size decoded from its
//! header. Two ways of pricing ([`Bill`]):
//!
//! - by token class (gpt-image): the hold is `n` images of the asked size at the dearest
//!   quality, the prompt and the input images by their decoded sizes
//!   (`tollgate_metering::image::ImageCall`); the charge is the vendor's usage, never above the
//!   bound of what was relayed — each image at the vendor's published tokens for its decoded
//!   size (never above the size asked), each partial image at its documented tokens;
//! - by the picture (dall-e): `n` pictures of the size and quality asked, the charge the
//!   pictures relayed (`PictureCall`); a `url` answer keeps each vetted image in the store and
//!   answers the gateway's own signed link.
//!
//! Fewer images than asked pay for those delivered, and a refusal pays nothing. A whole answer
//! runs to completion even if the client goes away (the vendor bills the work); a stream is
//! relayed event by event through [`ImageMeter`] under the one pump.

use crate::hold::HeldCharge;
use crate::image_bytes;
use crate::pump::{Closing, End, Meter, Settlement};
use crate::relay;
use crate::spool::Spooled;
use crate::stream_body;
use base64::Engine;
use bytes::Bytes;
use http::{Response, StatusCode};
use std::sync::Arc;
use tollgate_billing::{Amount, Tariff, Usage};
use tollgate_exchange::errors::{ApiError, Family};
use tollgate_exchange::response::{ResponseBody, UpstreamTime, json_bytes_response, sse_response};
use tollgate_images::response::{EventKind, ImageUsage};
use tollgate_images::{
    Image, ImageRequest, ImagesResponse, InputRule, Operation, Pricing, ResponseFormat, Size,
    StreamEvent,
};
use tollgate_metering::image::{ImageCall, PictureCall};
use tollgate_metering::session::Claim;
use tollgate_metering::{Basis, Capped, Measure};
use tollgate_request::context::RequestCtx;
use tollgate_request::state::State;
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::config::ModelKind;
use tollgate_settings::media::Origin;
use tollgate_store::Principal;
use tollgate_upstream::UpstreamError;
use tollgate_upstream::common::Frame;
use tollgate_upstream::common::multipart::FilePart;
use tollgate_upstream::registry;
use tollgate_upstream::seams::images::ImageJob;

/// An uploaded image (or mask) of an edit, measured.
#[derive(Debug)]
pub struct InputImage {
    /// Its form field: `image`, `image[]` or `mask`.
    pub field: String,
    /// The file name sent upstream.
    pub filename: String,
    /// Its type, read from its bytes.
    pub mime: &'static str,
    /// Its size, read from its header.
    pub size: Size,
    /// Its bytes, spooled.
    pub data: Spooled,
}

/// What a client asked of an image model: the request, its uploaded images (an edit's or a
/// variation's, measured), which operation, and where it came by (for the links of a `url`
/// answer).
#[derive(Debug)]
pub struct ImageAsk {
    /// The body, or the form's text fields.
    pub request: ImageRequest,
    /// The uploaded images, the mask last.
    pub inputs: Vec<InputImage>,
    /// Generation, edit or variation.
    pub operation: Operation,
    /// The origin the request came by.
    pub origin: Origin,
}

/// The request flow of DESIGN §2 from step 4.
pub async fn serve(
    ctx: &RequestCtx,
    principal: &Principal,
    ask: ImageAsk,
) -> Result<Response<ResponseBody>, ApiError> {
    let ImageAsk {
        request,
        inputs,
        operation,
        origin,
    } = ask;
    // 4. The model and its family's rules.
    let entry = ctx
        .settings
        .catalog
        .require(request.model_name(), ModelKind::Images)?;
    let settings = entry.images;
    let family = settings.family;
    if !family.does(operation) {
        return Err(ApiError::invalid(
            "model",
            "unsupported_operation",
            format!(
                "'{}' does not serve {} ({} draws; {})",
                entry.public,
                operation.path(),
                family.name(),
                if family.does(Operation::Edit) {
                    "change images with /v1/images/edits"
                } else {
                    "draw with /v1/images/generations"
                }
            ),
        ));
    }
    let checked = request
        .check(family, settings.max_n(), operation)
        .map_err(ApiError::from)?;
    check_inputs(family.inputs(), &inputs)?;

    // 5. The images asked, on the key's images per minute; the hold: every image asked at its
    // most — by token class, the prompt and the inputs measured; or by the picture.
    let images = crate::admission::admit_images(ctx, principal, u64::from(checked.n)).await?;
    let bill = match family.pricing() {
        Pricing::ByTokenClass => {
            let mut call = ImageCall::new(
                family,
                checked.quality,
                checked.size,
                checked.n,
                &checked.prompt,
            );
            call.partial_images = checked.partial_images;
            call.inputs = inputs.iter().map(|input| input.size).collect();
            call.fidelity = checked.input_fidelity;
            Bill::Tokens(call)
        }
        Pricing::ByPicture => Bill::Pictures(PictureCall::new(
            checked.size.unwrap_or(family.largest()),
            checked.quality,
            checked.n,
        )),
    };
    let held = crate::admission::place_hold(ctx, principal, &entry, &bill.hold(&entry.tariff))
        .await?
        .absorb(images);

    // 6. The vendor's request: its model, and the images inline for the gateway to vet (a
    // dall-e vendor is asked for them: its own default is its link).
    let mut upstream = request;
    upstream.model = Some(entry.upstream_model.clone());
    upstream.response_format = family.answers_by_link().then_some(ResponseFormat::B64Json);
    let job = Job {
        request: upstream,
        inputs,
        operation,
    };
    match bill {
        Bill::Tokens(call) if checked.stream => stream(ctx, entry, held, job, call).await,
        bill => {
            let links = (checked.response_format == ResponseFormat::Url).then(|| Links {
                origin,
                account_id: principal.account_id.clone(),
            });
            whole(ctx, entry, held, job, bill, links).await
        }
    }
}

/// How a call's images are priced (docs/api.md §8 rules 8 and 11).
#[derive(Debug)]
enum Bill {
    /// By token class, within the bound of what was relayed.
    Tokens(ImageCall),
    /// By the picture, of the size and quality asked.
    Pictures(PictureCall),
}

impl Bill {
    /// Images asked.
    const fn n(&self) -> u32 {
        match self {
            Bill::Tokens(call) => call.n,
            Bill::Pictures(call) => call.n,
        }
    }

    /// The most the call may come to.
    fn hold(&self, tariff: &Tariff) -> Usage {
        match self {
            Bill::Tokens(call) => Usage::TokenClasses(call.hold().dearest(tariff)),
            Bill::Pictures(call) => call.hold(),
        }
    }

    /// What a whole answer is charged: its images `drawn`, the text relayed, the vendor's
    /// usage.
    fn charge(
        &self,
        tariff: &Tariff,
        drawn: &[Size],
        text_bytes: u64,
        usage: Option<ImageUsage>,
    ) -> Capped {
        match self {
            Bill::Tokens(call) => charge(call, tariff, drawn, 0, text_bytes, usage),
            Bill::Pictures(call) => {
                let (usage, anomaly) = call.charge(drawn);
                Capped {
                    basis: Basis::counted(format!("images decoded: {}", sizes_in_words(drawn))),
                    bound: usage,
                    usage,
                    anomaly,
                }
            }
        }
    }
}

/// Where a `url` answer's links point: the request's origin, and whose images they are.
#[derive(Debug)]
struct Links {
    origin: Origin,
    account_id: String,
}

/// What is sent upstream: the request and the edit's images.
#[derive(Debug)]
struct Job {
    request: ImageRequest,
    inputs: Vec<InputImage>,
    operation: Operation,
}

impl Job {
    fn files(&self) -> Vec<FilePart<'_>> {
        self.inputs
            .iter()
            .map(|input| FilePart {
                name: &input.field,
                filename: &input.filename,
                content_type: input.mime,
                source: &input.data,
            })
            .collect()
    }
}

/// Steps 6–8 of a whole answer, run to completion even if the client goes away: the vendor's
/// images vetted, kept and linked where the client asked for links (`links`), the call
/// settled.
async fn whole(
    ctx: &RequestCtx,
    entry: Arc<ModelEntry>,
    held: HeldCharge,
    job: Job,
    bill: Bill,
    links: Option<Links>,
) -> Result<Response<ResponseBody>, ApiError> {
    let state = ctx.state.clone();
    let n = bill.n();
    let linked = links.is_some();
    let (answer, upstream_time) = relay::to_completion(async move {
        let called = relay::with_failover(&entry, held.usage(), |channel, endpoint| {
            let (state, job) = (state.clone(), &job);
            async move {
                let files = job.files();
                let answer = registry::image_generator(channel.format)?
                    .create(
                        &state.http,
                        &endpoint,
                        ImageJob {
                            request: &job.request,
                            files: &files,
                            operation: job.operation,
                        },
                    )
                    .await?;
                // The vendor's body is dropped once its vetted answer is written: the images
                // are held twice at most, never three times (once, when they are linked).
                let vetted = vet_answer(&answer.body, n, linked)?;
                Ok((vetted, answer.upstream_time))
            }
        })
        .await;
        let ((mut vetted, upstream_time), _) = match called {
            Ok(ok) => ok,
            Err(e) => {
                tracing::warn!(error = %e, "images upstream failed");
                held.release(&format!("upstream failed: {e}"));
                return Err(relay::upstream_error(&e));
            }
        };
        if let Some(links) = &links {
            vetted.answer = match link_images(&state, links, &vetted.answer, n).await {
                Ok(linked) => linked,
                Err(e) => {
                    // The client gets nothing usable, so it pays nothing.
                    held.release("the images could not be kept for their links");
                    return Err(e);
                }
            };
        }
        let charge = bill.charge(
            &entry.tariff,
            &vetted.drawn,
            vetted.text_bytes,
            vetted.usage,
        );
        held.settle_within(charge).await?;
        Ok((vetted.answer, upstream_time))
    })
    .await?;
    let mut response = json_bytes_response(StatusCode::OK, answer);
    response
        .extensions_mut()
        .insert(UpstreamTime(upstream_time));
    Ok(response)
}

/// The vendor's answer (`body`, vetted for `n` images) with each image kept in the store and
/// answered by the gateway's signed link (`url`) in place of its bytes — never the vendor's
/// link. The images are read from the vendor's body, one decoded at a time.
async fn link_images(state: &State, links: &Links, body: &[u8], n: u32) -> Result<Bytes, ApiError> {
    let failed = |e: &dyn std::fmt::Display| ApiError::internal("keeping the images", e);
    let (mut answer, _, _) = vetted(body, n).map_err(|e| failed(&e))?;
    let expires = state
        .media
        .image_expiry(tollgate_journal::clock::unix_now());
    for image in &mut answer.data {
        let Some(b64) = image.b64_json.take() else {
            continue;
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|e| failed(&e))?;
        let (mime, _) = image_bytes::measure_image("image", &bytes).map_err(|e| failed(&e))?;
        let id = state
            .store
            .keep_media(&links.account_id, mime, &bytes, expires)
            .await
            .map_err(|e| failed(&e))?;
        let digest = tollgate_store::MediaDigest::of(&bytes);
        image.url = Some(state.media.image_link(
            &links.origin,
            (&id, &format_of(mime)),
            &digest,
            expires,
        ));
    }
    serde_json::to_vec(&answer)
        .map(Bytes::from)
        .map_err(|e| failed(&e))
}

/// A vendor's whole answer, vetted: what the client gets (written; or the vendor's body, for
/// its images to be linked), the sizes drawn, the text relayed and the vendor's usage.
#[derive(Debug)]
struct Vetted {
    answer: Bytes,
    drawn: Vec<Size>,
    text_bytes: u64,
    usage: Option<ImageUsage>,
}

/// Vets a vendor's answer for `n` images: written for the client inline — or, where the client
/// asked for links (`linked`), the vendor's body kept as it is, for [`link_images`] to read its
/// images from one at a time (never a second copy of the answer).
fn vet_answer(body: &Bytes, n: u32, linked: bool) -> Result<Vetted, UpstreamError> {
    let (answer, drawn, text_bytes) = vetted(body, n)?;
    let usage = answer.usage;
    let answer = if linked {
        body.clone()
    } else {
        Bytes::from(
            serde_json::to_vec(&answer).map_err(|e| UpstreamError::Protocol(e.to_string()))?,
        )
    };
    Ok(Vetted {
        usage,
        answer,
        drawn,
        text_bytes,
    })
}

/// Reads a vendor's `ImagesResponse`: each of the first `n` images read and measured, the
/// answer's words kept where they are the API's, its size and format what the images are.
/// Returns it (its images borrowed from `body`), the sizes drawn and the bytes of text.
fn vetted(body: &[u8], n: u32) -> Result<(ImagesResponse<'_>, Vec<Size>, u64), UpstreamError> {
    let answer: ImagesResponse = serde_json::from_slice(body)
        .map_err(|e| UpstreamError::Protocol(format!("an images answer: {e}")))?;
    if answer.data.len() > n as usize {
        tracing::warn!(
            asked = n,
            sent = answer.data.len(),
            "the vendor sent more images than asked; the rest are dropped"
        );
    }
    let mut data = Vec::new();
    let mut drawn = Vec::new();
    let mut text_bytes = 0u64;
    let mut mime = None;
    for image in answer.data.into_iter().take(n as usize) {
        let Some(b64) = image.b64_json else {
            return Err(UpstreamError::Protocol(
                "an image came without its bytes (b64_json)".into(),
            ));
        };
        let (kind, size) = image_bytes::vet_b64(&b64)?;
        mime.get_or_insert(kind);
        drawn.push(size);
        text_bytes += image.revised_prompt.as_ref().map_or(0, |t| t.len() as u64);
        data.push(Image {
            b64_json: Some(b64),
            url: None,
            revised_prompt: image.revised_prompt,
        });
    }
    if data.is_empty() {
        return Err(UpstreamError::Protocol("the vendor sent no image".into()));
    }
    let answer = ImagesResponse {
        created: answer.created,
        size: drawn.first().map(Size::to_string),
        output_format: mime.map(format_of),
        quality: known(answer.quality, &["low", "medium", "high", "standard", "hd"]),
        background: known(answer.background, &["transparent", "opaque"]),
        data,
        usage: answer.usage,
    };
    Ok((answer, drawn, text_bytes))
}

/// The sizes of the images decoded, in words (`1024x1024, 1024x1024`, or `none`).
fn sizes_in_words(drawn: &[Size]) -> String {
    if drawn.is_empty() {
        return "none".to_owned();
    }
    let sizes: Vec<String> = drawn.iter().map(Size::to_string).collect();
    sizes.join(", ")
}

/// The API's word for a file type.
fn format_of(mime: &str) -> String {
    mime.trim_start_matches("image/").to_owned()
}

/// `word` when it is one of `words`.
fn known(word: Option<String>, words: &[&str]) -> Option<String> {
    word.filter(|w| words.contains(&w.as_str()))
}

/// What a call is charged: the vendor's usage by class (the local estimate where it reported
/// none), cut class by class to the bound of what was relayed — `drawn` images, `partials`
/// partial images, `text_bytes` of text — and that bound, priced.
fn charge(
    call: &ImageCall,
    tariff: &Tariff,
    drawn: &[Size],
    partials: u64,
    text_bytes: u64,
    usage: Option<ImageUsage>,
) -> Capped {
    let bound = call.bound(drawn, partials, text_bytes);
    let measured = format!(
        "images decoded: {}{}",
        sizes_in_words(drawn),
        if partials > 0 {
            format!("; partial images: {partials}")
        } else {
            String::new()
        }
    );
    let (claimed, basis) = match usage {
        Some(usage) => (
            Claim::from(&usage).classes(tariff),
            Basis {
                estimated: false,
                note: Some(measured),
                measured: Measure::Vendor,
            },
        ),
        None => (
            call.estimate(drawn, partials),
            Basis::local(
                format!("upstream reported no usage; {measured}"),
                Measure::LocalCount,
            ),
        ),
    };
    let (usage, anomaly) = bound.cap(&claimed);
    Capped {
        usage: Usage::TokenClasses(usage),
        basis,
        bound: Usage::TokenClasses(bound.dearest(tariff)),
        anomaly,
    }
}

/// Steps 6–8 streamed: the upstream's events opened (the hold released in full if they cannot
/// be), then relayed and settled by [`ImageMeter`].
async fn stream(
    ctx: &RequestCtx,
    entry: Arc<ModelEntry>,
    held: HeldCharge,
    job: Job,
    call: ImageCall,
) -> Result<Response<ResponseBody>, ApiError> {
    let permit = crate::admission::open_stream(ctx)?;
    let state = ctx.state.clone();
    let opened = relay::with_failover(&entry, held.usage(), |channel, endpoint| {
        let (state, job) = (state.clone(), &job);
        async move {
            let started = std::time::Instant::now();
            let files = job.files();
            registry::image_generator(channel.format)?
                .stream(
                    &state.http,
                    &endpoint,
                    ImageJob {
                        request: &job.request,
                        files: &files,
                        operation: job.operation,
                    },
                )
                .await
                .map(|frames| (frames, started.elapsed()))
        }
    })
    .await;
    let (frames, first_frame) = match opened {
        Ok((opened, _)) => opened,
        Err(e) => {
            held.release(&format!("upstream failed: {e}"));
            return Err(relay::upstream_error(&e));
        }
    };
    // The edit's spooled images are no longer needed once the vendor has them.
    let edit = job.operation == Operation::Edit;
    drop(job);
    let (sender, body) = stream_body::channel(permit);
    let meter = ImageMeter::new(call, entry.tariff.clone(), edit);
    crate::trace::spawn_for_request(crate::pump::pump(held, None, frames, sender, meter));
    Ok(sse_response(body, first_frame))
}

/// The meter of a streamed image call: each event read and its image vetted before it is
/// relayed, the images and partial images counted, and the charge the vendor's usage (summed
/// over its finished images) within the bound of what was relayed.
///
/// * it ends after the `n`th image, or the vendor ends it after fewer — charged for the images
///   delivered;
/// * the vendor cuts it, or sends what is not an image — charged for what was relayed before
///   (the vendor's usage when each finished image carried it, else the local count), the client
///   told by an `error` event; nothing relayed releases the hold;
/// * the client goes away — the vendor's stream is dropped (its work stops) and what it had
///   sent is charged, as above.
#[derive(Debug)]
pub struct ImageMeter {
    call: ImageCall,
    tariff: Tariff,
    edit: bool,
    drawn: Vec<Size>,
    partials: u64,
    partials_of_this_image: u8,
    usage: Option<ImageUsage>,
    claimed_images: u32,
}

impl ImageMeter {
    /// A meter of `call`'s images, priced at `tariff` (an edit's: `edit`).
    pub fn new(call: ImageCall, tariff: Tariff, edit: bool) -> ImageMeter {
        ImageMeter {
            call,
            tariff,
            edit,
            drawn: Vec::new(),
            partials: 0,
            partials_of_this_image: 0,
            usage: None,
            claimed_images: 0,
        }
    }

    /// The event's own words, vetted: a kind of this call's, an image read and measured.
    fn vet<'a>(&mut self, frame: &'a Frame) -> Result<StreamEvent<'a>, UpstreamError> {
        let event: StreamEvent = serde_json::from_str(&frame.data)
            .map_err(|e| UpstreamError::Protocol(format!("an image event: {e}")))?;
        let partial = event.kind.is_partial();
        if event.kind != EventKind::of(self.edit, partial) {
            return Err(UpstreamError::Protocol(format!(
                "an event of another call: {}",
                event.kind.as_str()
            )));
        }
        if partial && self.partials_of_this_image >= self.call.partial_images {
            return Err(UpstreamError::Protocol(
                "more partial images than asked".into(),
            ));
        }
        if !partial && self.drawn.len() >= self.call.n as usize {
            return Err(UpstreamError::Protocol("more images than asked".into()));
        }
        let (mime, size) = image_bytes::vet_b64(&event.b64_json)?;
        Ok(StreamEvent {
            kind: event.kind,
            b64_json: event.b64_json,
            created_at: event.created_at,
            size: Some(size.to_string()),
            quality: known(event.quality, &["low", "medium", "high"]),
            background: known(event.background, &["transparent", "opaque"]),
            output_format: Some(format_of(mime)),
            partial_image_index: event.partial_image_index.filter(|_| partial),
            usage: event.usage.filter(|_| !partial),
        })
    }
}

/// An SSE event as OpenAI frames it: its type as the event's name.
fn sse(kind: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
}

impl Meter for ImageMeter {
    type Piece = Frame;
    const DRAIN_AFTER_CLIENT_GONE: bool = false;
    const HAS_LAST_PIECE: bool = false;

    fn on_piece(&mut self, frame: &Frame) -> Result<Vec<(Bytes, u64)>, UpstreamError> {
        let event = self.vet(frame)?;
        if event.kind.is_partial() {
            self.partials += 1;
            self.partials_of_this_image += 1;
        } else {
            self.drawn.push(
                event
                    .size
                    .as_deref()
                    .and_then(Size::parse)
                    .unwrap_or(Size::new(1, 1)),
            );
            self.partials_of_this_image = 0;
            if let Some(usage) = event.usage {
                self.claimed_images += 1;
                let sum = self.usage.get_or_insert_with(ImageUsage::default);
                add_usage(sum, &usage);
            }
        }
        let data =
            serde_json::to_string(&event).map_err(|e| UpstreamError::Protocol(e.to_string()))?;
        let bytes = sse(event.kind.as_str(), &data);
        let weight = bytes.len() as u64;
        Ok(vec![(bytes, weight)])
    }

    fn is_last(&self, frame: &Frame) -> bool {
        // The `n`th finished image ends the stream; its event's kind is its first field.
        let head = frame.data.get(..64).unwrap_or(&frame.data);
        head.contains(".completed\"") && self.drawn.len() + 1 >= self.call.n as usize
    }

    fn finish(&mut self, end: &End, _delivered: u64, _offered: u64) -> Settlement {
        if self.drawn.is_empty() && self.partials == 0 {
            return Settlement::Release(format!("no image was relayed ({})", end_words(end)));
        }
        // The vendor's figure counts only when every finished image carried its part of it.
        let usage = self
            .usage
            .filter(|_| self.claimed_images as usize == self.drawn.len() && !self.drawn.is_empty());
        let mut capped = charge(
            &self.call,
            &self.tariff,
            &self.drawn,
            self.partials,
            0,
            usage,
        );
        if !matches!(end, End::Complete) {
            capped.basis.note = Some(format!(
                "{}; {}",
                end_words(end),
                capped.basis.note.unwrap_or_default()
            ));
        }
        Settlement::Within(capped)
    }

    fn closing(&mut self, end: &End, charged: Option<Amount>) -> Closing {
        match end {
            End::Complete | End::ClientGone => Closing::Nothing,
            End::Cut(e) => {
                let error = if self.drawn.is_empty() && self.partials == 0 {
                    relay::upstream_error(e)
                } else {
                    relay::stream_cut_error(e, charged)
                };
                let body = serde_json::json!({"type": "error", "error": error.body(Family::OpenAi)["error"]});
                Closing::Send(vec![sse("error", &body.to_string())])
            }
        }
    }
}

fn end_words(end: &End) -> String {
    match end {
        End::Complete => "the vendor ended the stream".into(),
        End::ClientGone => "the client went away".into(),
        End::Cut(e) => format!("the stream was cut: {e}"),
    }
}

/// `more` added to `sum`, field by field.
fn add_usage(sum: &mut ImageUsage, more: &ImageUsage) {
    let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
    add(&mut sum.input_tokens, more.input_tokens);
    add(
        &mut sum.input_tokens_details.text_tokens,
        more.input_tokens_details.text_tokens,
    );
    add(
        &mut sum.input_tokens_details.image_tokens,
        more.input_tokens_details.image_tokens,
    );
    add(&mut sum.output_tokens, more.output_tokens);
    add(&mut sum.total_tokens, more.total_tokens);
    let (text, image) = more.output_split();
    let details = sum
        .output_tokens_details
        .get_or_insert_with(Default::default);
    add(&mut details.text_tokens, text);
    add(&mut details.image_tokens, image);
}

/// An edit's image (or mask) whose bytes are not an image it takes, naming the field.
/// The uploaded images against the family's rule (dall-e-2: one square PNG under 4 MB); the
/// mask, last, the size of the first image (checked as it was read).
fn check_inputs(rule: InputRule, inputs: &[InputImage]) -> Result<(), ApiError> {
    let images = inputs.iter().filter(|input| input.field != "mask");
    if images.clone().count() > rule.max_images {
        return Err(bad_image(
            "image",
            format!("This model takes at most {} image", rule.max_images)
                + if rule.max_images == 1 { "" } else { "s" },
        ));
    }
    for input in inputs {
        if rule.square_png && (input.mime != "image/png" || input.size.width != input.size.height) {
            return Err(bad_image(
                &input.field,
                format!(
                    "'{}' must be a square PNG for this model; it is a {} {}",
                    input.field, input.size, input.mime
                ),
            ));
        }
        if let Some(most) = rule.max_bytes.filter(|most| input.data.len() > *most) {
            return Err(bad_image(
                &input.field,
                format!(
                    "'{}' is {} bytes; this model takes at most {most}",
                    input.field,
                    input.data.len()
                ),
            ));
        }
    }
    Ok(())
}

pub fn bad_image(field: &str, why: String) -> ApiError {
    ApiError::invalid(field, "invalid_image", why)
}
