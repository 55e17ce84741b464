//! `POST /v1beta/models/{model}:predict` (also under `/v1/models/`; docs/api.md §2.9, §8 rule
//! 11): Imagen's pictures, what the SDKs' `generate_images` calls, served by the model's
//! text-generation channels and billed by the picture. The vendor reports no usage: the gateway
//! counts the images it relayed, each vetted and decoded from its header first, and an image
//! the vendor filtered (`raiFilteredReason`) is relayed and not charged.

use crate::image_bytes;
use crate::relay;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use tollgate_billing::Usage;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::response::UpstreamTime;
use tollgate_exchange::route_doc::{About, ok, r};
use tollgate_metering::Basis;
use tollgate_native_genai::predict::{self, ImagenModel, PredictRequest, PredictResponse};
use tollgate_request::context::RequestCtx;
use tollgate_request::routes;
use tollgate_settings::config::ModelKind;
use tollgate_store::Principal;
use tollgate_upstream::UpstreamError;
use tollgate_upstream::registry;

/// The request flow of DESIGN §2, top to bottom.
pub async fn predict(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The body, kept as sent, and decoded to be checked.
    body::require_json(&parts.headers)?;
    let raw = body::read_limited(&parts.headers, body, ctx.body_bounds()).await?;
    let request: PredictRequest = body::decode_json(&raw)?;

    // 4. The model from the path (an image model priced by the picture), and the request
    // against its row.
    let (model, _) = routes::native_model(parts.uri.path());
    let model = model.strip_prefix("models/").unwrap_or(model);
    let entry = ctx
        .settings
        .catalog
        .resolve(model, ModelKind::NativeImages)
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                ErrorKind::NotFound,
                format!("models/{model} is not found, or is not an image model served here"),
            )
        })?;
    let imagen = ImagenModel::of(&entry.upstream_model)
        .or_else(|| ImagenModel::of(&entry.public))
        .unwrap_or(ImagenModel::UNKNOWN);
    let asked = predict::validate(&request, &imagen)?;

    // 5. The images asked, on the key's images per minute; the hold: each at its price.
    let images = crate::admission::admit_images(&ctx, &principal, u64::from(asked.images)).await?;
    let held = crate::admission::place_hold(
        &ctx,
        &principal,
        &entry,
        &Usage::Images(u64::from(asked.images)),
    )
    .await?
    .absorb(images);

    // 6–8. The vendor's pictures, vetted; each relayed image paid, run to completion even if
    // the client goes away (the vendor bills the work).
    let state = ctx.state.clone();
    let (answer, upstream_time) = crate::trace::spawn_for_request(async move {
        let called = relay::with_failover(&entry, held.usage(), |channel, endpoint| {
            let (state, raw, model) = (state.clone(), raw.clone(), entry.upstream_model.clone());
            async move {
                registry::text_generator(channel.format)?
                    .predict(&state.http, &endpoint, &model, raw)
                    .await
            }
        })
        .await;
        let answer = match called {
            Ok((answer, _)) => answer,
            Err(e) => {
                held.release(&format!("upstream failed: {e}"));
                return Err(relay::upstream_error(&e));
            }
        };
        let (vetted, drawn) = match vet(&answer.body, asked.images) {
            Ok(vetted) => vetted,
            Err(e) => {
                // The client gets nothing usable, so it pays nothing.
                tracing::error!(error = %e, "the upstream's pictures are not ones it may relay");
                held.release("upstream answer unvetted");
                return Err(relay::upstream_error(&e));
            }
        };
        if drawn.is_empty() {
            held.release("every image filtered by the vendor");
        } else {
            let usage = Usage::Images(drawn.len() as u64);
            let basis = Basis::counted(format!("images decoded: {}", drawn.join(", ")));
            held.bounded_exactly(&usage).settle(&usage, basis).await?;
        }
        Ok((vetted, answer.upstream_time))
    })
    .await
    .map_err(|e| ApiError::internal("relaying the request", e))??;

    let mut response = body::json_response(StatusCode::OK, &answer);
    response
        .extensions_mut()
        .insert(UpstreamTime(upstream_time));
    Ok(response)
}

/// The vendor's answer as the client gets it: each image decoded from its header (its
/// `mimeType` what its bytes are), at most `asked` of them, a filtered one kept with its
/// reason. Returns it with the sides of each image relayed.
fn vet(body: &Bytes, asked: u32) -> Result<(PredictResponse, Vec<String>), UpstreamError> {
    let mut answer: PredictResponse = serde_json::from_slice(body).map_err(|e| {
        UpstreamError::Protocol(format!("the answer is not a predict response: {e}"))
    })?;
    let mut drawn = Vec::new();
    let mut kept = Vec::with_capacity(answer.predictions.len());
    for mut prediction in answer.predictions.drain(..) {
        match &prediction.bytes_base64_encoded {
            Some(b64) => {
                if drawn.len() >= asked as usize {
                    continue;
                }
                let (mime, size) = image_bytes::vet_b64(b64)?;
                prediction.mime_type = Some(mime.to_owned());
                drawn.push(size.to_string());
            }
            None if prediction.rai_filtered_reason.is_none() => {
                return Err(UpstreamError::Protocol(
                    "a prediction holds neither an image nor why it was filtered".into(),
                ));
            }
            None => {}
        }
        kept.push(prediction);
    }
    answer.predictions = kept;
    Ok((answer, drawn))
}

/// `POST /v1beta/models/{model}:predict`, in the OpenAPI document.
pub fn about() -> About {
    About::native_model(
        "Imagen: pictures from a prompt (billed by the picture relayed)",
        ok(r("PredictResponse")),
        r("PredictRequest"),
    )
    .tag("images")
    .param("model", "An image model priced by the picture")
}
