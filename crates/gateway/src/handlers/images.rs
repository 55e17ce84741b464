//! `POST /v1/images/generations`, `/v1/images/edits` and `/v1/images/variations` (docs/api.md
//! §2.13; wire types `tollgate_images`): OpenAI Images, served by the model's image channels and
//! billed by token class within the bound of the images relayed, or by the picture
//! (`crate::imaging`).

use crate::image_bytes::measure_image;
use crate::imaging::{self, ImageAsk, InputImage, bad_image};
use crate::spool::Spooled;
use crate::upload::{self, UploadLimits};
use http::{Request, Response};
use hyper::body::Incoming;
use serde_json::json;
use std::io::Read;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::route_doc::{About, r};
use tollgate_images::{ImageRequest, Operation, Size};
use tollgate_request::context::RequestCtx;
use tollgate_store::Principal;

/// The most images (and a mask) one edit may upload.
pub const MAX_EDIT_IMAGES: usize = 16;

/// The bytes of an upload's head read to find its type and size: a JPEG's size may follow
/// its metadata.
const HEAD_BYTES: u64 = 1 << 20;

/// `POST /v1/images/generations`: the request flow of DESIGN §2, top to bottom.
pub async fn generate(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The body, under the endpoint's limit, decoded.
    let (request, _): (ImageRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;

    // 4–8. The model, the hold, the vendor, every image vetted, the settlement.
    let ask = ImageAsk {
        request,
        inputs: Vec::new(),
        operation: Operation::Generation,
        origin: ctx.origin(&parts.headers),
    };
    imaging::serve(&ctx, &principal, ask).await
}

/// `POST /v1/images/edits`: the request flow of DESIGN §2, top to bottom.
pub async fn edit(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The form, its images spooled under the endpoint's limit, each measured from its
    // header (never decoded): a PNG, JPEG or WebP image, the mask a PNG of the first image's
    // size.
    let _slot = crate::admission::upload_slot(&ctx, &principal)?;
    let limits = form_limits(&ctx, "mask", &["image", "image[]"], MAX_EDIT_IMAGES);
    let form = upload::read(&parts.headers, body, limits).await?;
    let request = ImageRequest::from_fields(form.field_pairs()).map_err(ApiError::from)?;
    let mut inputs = Vec::with_capacity(form.more.len() + 1);
    for (field, file) in form.more {
        inputs.push(measured(field, file.filename, file.data).await?);
    }
    let Some(first) = inputs.first().map(|image| image.size) else {
        return Err(ApiError::invalid(
            "image",
            "missing_required_parameter",
            "Missing required parameter: 'image'. Send one or more images as 'image' or 'image[]'.",
        ));
    };
    if let Some(mask) = form.file {
        let mask = measured("mask".into(), mask.filename, mask.data).await?;
        if mask.mime != "image/png" {
            return Err(bad_image(
                "mask",
                "'mask' must be a PNG (its alpha marks what to edit)".into(),
            ));
        }
        if mask.size != first {
            return Err(bad_image(
                "mask",
                format!(
                    "'mask' is {}; it must be the size of the first image, {first}",
                    mask.size
                ),
            ));
        }
        inputs.push(mask);
    }

    // 4–8.
    let ask = ImageAsk {
        request,
        inputs,
        operation: Operation::Edit,
        origin: ctx.origin(&parts.headers),
    };
    imaging::serve(&ctx, &principal, ask).await
}

/// `POST /v1/images/variations`: the request flow of DESIGN §2, top to bottom. Variations
/// are dall-e-2's (retired at OpenAI, still served by the servers that speak its dialect); a
/// model of another family answers a 400 naming `model`, never a 404 an SDK would take for a
/// wrong path.
pub async fn variations(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The form, its image spooled and measured from its header.
    let _slot = crate::admission::upload_slot(&ctx, &principal)?;
    let form = upload::read(&parts.headers, body, form_limits(&ctx, "image", &[], 0)).await?;
    let mut request = ImageRequest::from_fields(form.field_pairs()).map_err(ApiError::from)?;
    request.model.get_or_insert_with(|| "dall-e-2".to_owned());
    let Some(image) = form.file else {
        return Err(ApiError::invalid(
            "image",
            "missing_required_parameter",
            "Missing required parameter: 'image'.",
        ));
    };
    let inputs = vec![measured("image".into(), image.filename, image.data).await?];

    // 4–8.
    let ask = ImageAsk {
        request,
        inputs,
        operation: Operation::Variation,
        origin: ctx.origin(&parts.headers),
    };
    imaging::serve(&ctx, &principal, ask).await
}

/// An image form's limits: the endpoint's body limit for each file and for the whole form, a
/// prompt's worth for each text field.
fn form_limits(
    ctx: &RequestCtx,
    file_field: &'static str,
    more_files: &'static [&'static str],
    max_more: usize,
) -> UploadLimits {
    let bounds = ctx.body_bounds();
    UploadLimits {
        file_field,
        file_bytes: bounds.limit as u64,
        more_files,
        max_more,
        whole_bytes: Some(bounds.limit as u64),
        field_bytes: 256 << 10,
        max_fields: 24,
        pace: bounds.pace,
    }
}

/// An uploaded image, its type and size read from its head (on the blocking pool when it went
/// to disk).
async fn measured(
    field: String,
    filename: Option<String>,
    data: Spooled,
) -> Result<InputImage, ApiError> {
    let reader = data
        .reader()
        .map_err(|e| ApiError::internal("reading an upload", e))?;
    let head = tokio::task::spawn_blocking(move || {
        let mut head = Vec::new();
        reader.take(HEAD_BYTES).read_to_end(&mut head).map(|_| head)
    })
    .await
    .map_err(|e| ApiError::internal("reading an upload", e))?
    .map_err(|e| ApiError::internal("reading an upload", e))?;
    let (mime, size): (&'static str, Size) =
        measure_image(&field, &head).map_err(|why| bad_image(&field, why))?;
    let filename = filename
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| format!("image.{}", mime.trim_start_matches("image/")));
    Ok(InputImage {
        field,
        filename,
        mime,
        size,
        data,
    })
}

/// `POST /v1/images/generations`, in the OpenAPI document.
pub fn about_generations() -> About {
    About::new(
        "Image generation (OpenAI format; billed by token class within the images relayed, or by the picture)",
        "images",
        json!({"200": {
            "description": "The images (or server-sent events with `stream: true`)",
            "content": images_or_events(),
        }}),
    )
    .posting("ImageRequest")
}

/// `POST /v1/images/variations`, in the OpenAPI document.
pub fn about_variations() -> About {
    About::new(
        "Image variations (dall-e-2 style models; billed by the picture)",
        "images",
        json!({
            "200": {
                "description": "The images",
                "content": {"application/json": {"schema": r("ImagesResponse")}},
            },
            "400": {"description": "The model makes no variations; use /v1/images/edits"},
        }),
    )
}

/// `POST /v1/images/edits`, in the OpenAPI document.
pub fn about_edits() -> About {
    About::new(
        "Image edits: one or more images (`image`, `image[]`) and a mask, as a form",
        "images",
        json!({"200": {
            "description": "The images (or server-sent events with `stream: true`)",
            "content": images_or_events(),
        }}),
    )
}

/// An images call's answer: the images, or (streamed) OpenAI's image events.
fn images_or_events() -> serde_json::Value {
    json!({
        "application/json": {"schema": r("ImagesResponse")},
        "text/event-stream": {"schema": {"type": "string"}},
    })
}
