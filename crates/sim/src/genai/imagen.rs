//! Simulated Imagen (`:predict`): the pictures of a prompt, drawn (PNG or JPEG) at the sides of
//! the aspect ratio and size asked, times the `image_scale` knob. `[refuse]` in the prompt has
//! the vendor filter the last image: a prediction with a `raiFilteredReason` and no bytes.
//! The vendor reports no usage for pictures.

use base64::Engine as _;
use serde_json::{Value, json};
use tollgate_images::{OutputFormat, Size};
use tollgate_native_genai::predict::{self, ImagenModel};

use super::Reply;

/// The answer of `model` to `body`.
pub(crate) fn predict(model: &str, body: &[u8], scale: u32) -> Reply {
    let Some(row) = ImagenModel::of(model) else {
        return super::refuse(
            super::Mode::Whole,
            404,
            &format!(
                "models/{model} is not found for API version v1beta, or is not supported for predict."
            ),
        );
    };
    let request: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return super::refuse(
                super::Mode::Whole,
                400,
                &format!("Invalid JSON payload received. {e}"),
            );
        }
    };
    let Some(prompt) = request["instances"][0]["prompt"].as_str() else {
        return super::refuse(super::Mode::Whole, 400, "instances[0].prompt is required");
    };
    let parameters = &request["parameters"];
    let count = parameters["sampleCount"]
        .as_u64()
        .unwrap_or(u64::from(row.max_images.min(4)));
    if count == 0 || count > u64::from(row.max_images) {
        return super::refuse(super::Mode::Whole, 400, "sampleCount is out of range");
    }
    let ratio = parameters["aspectRatio"].as_str().unwrap_or("1:1");
    let Some((w, h)) = predict::sides(ratio, parameters["imageSize"].as_str()) else {
        return super::refuse(
            super::Mode::Whole,
            400,
            &format!("Unsupported aspect ratio {ratio}"),
        );
    };
    let size = Size::new(w * scale.max(1), h * scale.max(1));
    let (format, mime) = match parameters["outputOptions"]["mimeType"].as_str() {
        Some("image/jpeg") => (OutputFormat::Jpeg, "image/jpeg"),
        _ => (OutputFormat::Png, "image/png"),
    };
    let refuse = prompt.contains("[refuse]");
    let mut predictions = Vec::new();
    for n in 0..count {
        if refuse && n + 1 == count {
            predictions.push(json!({"raiFilteredReason": "The image was filtered by the simulated safety filter."}));
            continue;
        }
        let seed = prompt.bytes().fold(n as u32 + 11, |a, b| {
            a.wrapping_mul(31).wrapping_add(u32::from(b))
        });
        match crate::images::picture(size, seed, 1, format) {
            Ok(bytes) => predictions.push(json!({
                "bytesBase64Encoded": base64::engine::general_purpose::STANDARD.encode(bytes),
                "mimeType": mime,
            })),
            Err(e) => return super::refuse(super::Mode::Whole, 500, &e),
        }
    }
    Reply::Json(200, json!({ "predictions": predictions }))
}
