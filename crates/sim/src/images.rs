//! Simulated OpenAI Images (docs/api.md §2.13): `POST /v1/images/generations` (JSON),
//! `POST /v1/images/edits` (a form with `image[]` and `mask`) and `/v1/images/variations` (a
//! form with `image`, dall-e-2's). Each image is drawn for real —
//! PNG, JPEG or WebP at the size asked (`auto`: 1024 × 1024), a picture made from the prompt —
//! and a stream sends each image's partial images first, drawn in coarser blocks that sharpen.
//! Usage is honest, by OpenAI's rules (`tollgate_metering::image`): a text token for every four
//! bytes of the prompt, each input image by its decoded size, each image drawn by its size and
//! quality (`auto` is drawn `medium`), 100 tokens for each partial image. The dall-e models
//! (`dall-e-3`, `dall-e-2`) answer as the vendor's did: no usage (they are priced by the
//! picture), dall-e-3 a `revised_prompt`, and by link unless asked for `b64_json` — a link into
//! the vendor's storage (`https://images.sim.invalid/…`) that the gateway must never hand out.
//!
//! Faults beyond the common knobs: `report_usage` claims that many tokens for every figure;
//! `image_scale` draws every image that many times larger than asked (a vendor that returns a
//! larger image); a prompt containing `[refuse]` is refused as a content-policy violation.

use base64::Engine;
use bytes::Bytes;
use tollgate_images::response::{InputTokensDetails, OutputTokensDetails};
use tollgate_images::{
    Family, ImageRequest, ImageUsage, ImagesResponse, InputFidelity, Operation, OutputFormat,
    Pricing, Quality, ResponseFormat, Size, StreamEvent,
};
use tollgate_metering::image::{input_image_tokens, output_tokens};

use crate::knobs::KnobSettings;

/// What the simulator answers.
pub(crate) enum Answer {
    /// A whole `ImagesResponse`.
    Whole(ImagesResponse<'static>),
    /// SSE frames.
    Stream(Vec<Bytes>),
    /// An error: status, code, param, message.
    Refused(u16, &'static str, Option<String>, String),
}

/// A generation's JSON body.
pub(crate) fn generate(body: &[u8], knobs: &KnobSettings) -> Answer {
    match serde_json::from_slice::<ImageRequest>(body) {
        Ok(request) => draw(&request, &[], Operation::Generation, knobs),
        Err(e) => Answer::Refused(400, "invalid_value", None, e.to_string()),
    }
}

/// An edit's or a variation's form.
pub(crate) async fn edit(
    content_type: Option<&str>,
    body: Bytes,
    operation: Operation,
    knobs: &KnobSettings,
) -> Answer {
    let form = match crate::stt::read_form_files(content_type, body).await {
        Ok(form) => form,
        Err(message) => return Answer::Refused(400, "invalid_value", None, message),
    };
    let request = match ImageRequest::from_fields(
        form.fields.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    ) {
        Ok(request) => request,
        Err(e) => return Answer::Refused(400, e.rule.code(), Some(e.field), e.message),
    };
    let mut inputs = Vec::new();
    for (name, bytes) in &form.files {
        match tollgate_probe::media::measure("image/*", bytes) {
            Some(tollgate_probe::media::Measured::Image { width, height }) => {
                inputs.push(Size::new(width, height))
            }
            _ => {
                return Answer::Refused(
                    400,
                    "invalid_image",
                    Some(name.clone()),
                    format!("'{name}' is not an image"),
                );
            }
        }
    }
    if inputs.is_empty() {
        return Answer::Refused(
            400,
            "missing_required_parameter",
            Some("image".into()),
            "Missing required parameter: 'image'.".into(),
        );
    }
    draw(&request, &inputs, operation, knobs)
}

fn family_of(model: &str) -> Family {
    if model.starts_with("gpt-image-2") {
        Family::GptImage2
    } else if model.starts_with("dall-e-3") {
        Family::DallE3
    } else if model.starts_with("dall-e-2") {
        Family::DallE2
    } else {
        Family::GptImage1
    }
}

fn draw(
    request: &ImageRequest,
    inputs: &[Size],
    operation: Operation,
    knobs: &KnobSettings,
) -> Answer {
    let family = family_of(request.model_name());
    if !family.does(operation) {
        return Answer::Refused(
            400,
            "invalid_value",
            Some("model".into()),
            format!("The model does not serve {}.", operation.path()),
        );
    }
    let edit = operation == Operation::Edit;
    let checked = match request.check(family, family.max_n(), operation) {
        Ok(checked) => checked,
        Err(e) => return Answer::Refused(400, e.rule.code(), Some(e.field), e.message),
    };
    if checked.prompt.contains("[refuse]") {
        return Answer::Refused(
            400,
            "moderation_blocked",
            None,
            "Your request was rejected by the safety system.".into(),
        );
    }
    let asked = checked.size.unwrap_or(Size::new(1024, 1024));
    let scale = knobs.image_scale.unwrap_or(1).clamp(1, 8);
    let drawn = Size::new(asked.width * scale, asked.height * scale);
    let quality = match checked.quality {
        Quality::Auto => Quality::Medium,
        q => q,
    };
    let text_tokens = (checked.prompt.len() as u64).div_ceil(4);
    let image_tokens: u64 = inputs
        .iter()
        .map(|s| input_image_tokens(*s, checked.input_fidelity))
        .sum();
    let per_image = output_tokens(family, quality, drawn)
        + u64::from(checked.partial_images) * family.partial_image_tokens();
    let usage_of = |images: u64, with_input: bool| {
        let (text, image) = if with_input {
            (text_tokens, image_tokens)
        } else {
            (0, 0)
        };
        let mut usage = ImageUsage {
            input_tokens: text + image,
            input_tokens_details: InputTokensDetails {
                text_tokens: text,
                image_tokens: image,
                cached_tokens: None,
            },
            output_tokens: per_image * images,
            output_tokens_details: Some(OutputTokensDetails {
                image_tokens: per_image * images,
                text_tokens: 0,
            }),
            total_tokens: text + image + per_image * images,
        };
        if let Some(n) = knobs.report_usage {
            usage.input_tokens = n;
            usage.input_tokens_details.text_tokens = n;
            usage.output_tokens = n;
            usage.output_tokens_details = Some(OutputTokensDetails {
                image_tokens: n,
                text_tokens: 0,
            });
            usage.total_tokens = n.saturating_mul(2);
        }
        usage
    };
    let format = checked.output_format;
    let b64 = |bytes: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(bytes);
    let seed = checked
        .prompt
        .bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    let created = now();
    let words = (
        Some(drawn.to_string()),
        Some(quality.as_str().to_owned()),
        Some("opaque".to_owned()),
        Some(format.as_str().to_owned()),
    );
    if checked.stream {
        // One event: a partial image (its index) or the finished one (its usage).
        let frame = |bytes: Vec<u8>, partial: Option<u8>, usage: Option<ImageUsage>| {
            event(&StreamEvent {
                kind: tollgate_images::response::EventKind::of(edit, partial.is_some()),
                b64_json: b64(bytes).into(),
                created_at: created,
                size: words.0.clone(),
                quality: words.1.clone(),
                background: words.2.clone(),
                output_format: words.3.clone(),
                partial_image_index: partial.map(u32::from),
                usage,
            })
        };
        let mut frames = Vec::new();
        for i in 0..checked.n {
            let image_seed = seed.wrapping_add(i);
            // Blocks of 64, 32, 16 pixels for the partial images, each sharper than the last;
            // then the image itself.
            for p in 0..checked.partial_images {
                let Ok(bytes) = picture(drawn, image_seed, 64u32 >> p, format) else {
                    return failed();
                };
                frames.push(frame(bytes, Some(p), None));
            }
            let Ok(bytes) = picture(drawn, image_seed, 1, format) else {
                return failed();
            };
            frames.push(frame(bytes, None, Some(usage_of(1, i == 0))));
        }
        return Answer::Stream(frames);
    }
    let mut data = Vec::new();
    let by_picture = family.pricing() == Pricing::ByPicture;
    for i in 0..checked.n {
        let Ok(bytes) = picture(drawn, seed.wrapping_add(i), 1, format) else {
            return failed();
        };
        let (b64_json, url) = if checked.response_format == ResponseFormat::Url {
            (
                None,
                Some(format!("https://images.sim.invalid/{created}-{i}.png")),
            )
        } else {
            (Some(b64(bytes).into()), None)
        };
        data.push(tollgate_images::Image {
            b64_json,
            url,
            revised_prompt: (family == Family::DallE3)
                .then(|| format!("A detailed picture of {}", checked.prompt)),
        });
    }
    if by_picture {
        // dall-e answered its images alone: no usage, no words about them.
        return Answer::Whole(ImagesResponse {
            created,
            data,
            ..ImagesResponse::default()
        });
    }
    Answer::Whole(ImagesResponse {
        created,
        data,
        size: words.0,
        quality: words.1,
        background: words.2,
        output_format: words.3,
        usage: Some(usage_of(u64::from(checked.n), true)),
    })
}

fn failed() -> Answer {
    Answer::Refused(
        500,
        "server_error",
        None,
        "the image could not be drawn".into(),
    )
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn event(event: &StreamEvent) -> Bytes {
    let data = serde_json::to_string(event).unwrap_or_default();
    Bytes::from(format!("event: {}\ndata: {data}\n\n", event.kind.as_str()))
}

/// A picture of `size` from `seed`, in blocks of `block` pixels (1: sharp), encoded as
/// `format`.
pub(crate) fn picture(
    size: Size,
    seed: u32,
    block: u32,
    format: OutputFormat,
) -> Result<Vec<u8>, String> {
    let (w, h) = (size.width, size.height);
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    let (cx, cy) = ((seed % w.max(1)) as i64, ((seed / 7) % h.max(1)) as i64);
    let radius = i64::from(w.min(h) / 3).max(1);
    for y in 0..h {
        for x in 0..w {
            let (bx, by) = (x - x % block.max(1), y - y % block.max(1));
            let (dx, dy) = (i64::from(bx) - cx, i64::from(by) - cy);
            let inside = dx * dx + dy * dy < radius * radius;
            let i = (y as usize * w as usize + x as usize) * 3;
            let r = (bx * 255 / w.max(1)) as u8;
            let g = (by * 255 / h.max(1)) as u8;
            let b = (seed & 0xff) as u8;
            let pixel = if inside {
                [255 - r, 255 - g, b ^ 0x80]
            } else {
                [r, g, b]
            };
            // A little grain, as a photograph has (the same over a partial image's block): the
            // files come out about as large as a vendor's.
            let mut grain = bx.wrapping_mul(0x9E37_79B9) ^ by.wrapping_mul(0x85EB_CA6B) ^ seed;
            grain ^= grain >> 15;
            grain = grain.wrapping_mul(0x2C1B_3C6D);
            grain ^= grain >> 12;
            let noise = (grain & 7) as u8;
            rgb[i..i + 3].copy_from_slice(&pixel.map(|c| c.saturating_add(noise)));
        }
    }
    let mut out = Vec::new();
    match format {
        OutputFormat::Png => {
            let mut encoder = png::Encoder::new(&mut out, w, h);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_compression(png::Compression::Fast);
            let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
            writer.write_image_data(&rgb).map_err(|e| e.to_string())?;
            writer.finish().map_err(|e| e.to_string())?;
        }
        OutputFormat::Jpeg => {
            let side = |n: u32| u16::try_from(n).map_err(|_| "too large for JPEG".to_owned());
            jpeg_encoder::Encoder::new(&mut out, 85)
                .encode(&rgb, side(w)?, side(h)?, jpeg_encoder::ColorType::Rgb)
                .map_err(|e| e.to_string())?;
        }
        OutputFormat::Webp => {
            image_webp::WebPEncoder::new(&mut out)
                .encode(&rgb, w, h, image_webp::ColorType::Rgb8)
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(out)
}

/// The input fidelity is read by the request's check; named here so the module's rules show.
#[allow(dead_code)]
const FIDELITIES: [InputFidelity; 2] = [InputFidelity::Low, InputFidelity::High];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_decodes_to_the_size_drawn() {
        for format in [OutputFormat::Png, OutputFormat::Jpeg, OutputFormat::Webp] {
            let bytes = picture(Size::new(320, 200), 5, 1, format).unwrap();
            let size = imagesize::blob_size(&bytes).unwrap();
            assert_eq!((size.width, size.height), (320, 200), "{format:?}");
        }
    }

    #[test]
    fn usage_is_openais_rule() {
        let body = br#"{"model":"gpt-image-2","prompt":"abcdefgh","size":"1024x1024","quality":"high","n":2}"#;
        let Answer::Whole(answer) = generate(body, &KnobSettings::default()) else {
            panic!("not whole");
        };
        let usage = answer.usage.unwrap();
        assert_eq!(answer.data.len(), 2);
        assert_eq!((usage.input_tokens, usage.output_tokens), (2, 2 * 7_024));
    }
}
