//! Imagen's `:predict` (`POST /v1beta/models/{model}:predict`, what the SDKs' `generate_images`
//! calls): a prompt in, pictures out, priced by the picture (docs/api.md §2.9, §8 rule 11).
//!
//! | Field | Rule |
//! |---|---|
//! | `instances` | exactly one ([`Rule::Required`], [`Rule::OutOfRange`]) |
//! | `instances[0].prompt` | a non-empty string ([`Rule::Required`]) |
//! | `parameters.sampleCount` | 1 to the model's most (4; Ultra 1), 4 when absent, as the vendor's default ([`Rule::OutOfRange`]) |
//! | `parameters.aspectRatio` | `1:1`, `3:4`, `4:3`, `9:16`, `16:9` ([`Rule::UnsupportedValue`]) |
//! | `parameters.imageSize` (`sampleImageSize` on the enterprise platform) | `1K` or `2K`, for a model that takes it ([`Rule::UnsupportedParameter`], [`Rule::UnsupportedValue`]) |
//! | `parameters.storageUri` | refused: the images come back inline, for the gateway to count ([`Rule::UnsupportedParameter`]) |
//! | `parameters.outputOptions.mimeType` | `image/png` or `image/jpeg` ([`Rule::UnsupportedValue`]) |
//!
//! Every other parameter (`personGeneration`, `seed`, `addWatermark`, `enhancePrompt`, …) is the
//! vendor's to judge, and passes through. The answer's `predictions` carry each image as
//! `bytesBase64Encoded` with its `mimeType`; an image the vendor filtered is a prediction with a
//! `raiFilteredReason` and no bytes, and is not charged.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{FieldError, Rule};

/// The aspect ratios Imagen draws, the first its default.
pub const ASPECT_RATIOS: [&str; 5] = ["1:1", "3:4", "4:3", "9:16", "16:9"];

/// The sides of a picture of each of [`ASPECT_RATIOS`] at 1K, by the vendor's published sizes;
/// 2K doubles them.
pub const SIDES_AT_1K: [(u32, u32); 5] = [
    (1024, 1024),
    (896, 1280),
    (1280, 896),
    (768, 1408),
    (1408, 768),
];

/// The sides Imagen draws a picture of `ratio` at `image_size` (`1K`, `2K`; 1K when absent);
/// `None` for a ratio it does not draw.
///
/// ```
/// use tollgate_native_genai::predict::sides;
/// assert_eq!(sides("16:9", None), Some((1408, 768)));
/// assert_eq!(sides("3:4", Some("2K")), Some((1792, 2560)));
/// assert_eq!(sides("2:1", None), None);
/// ```
pub fn sides(ratio: &str, image_size: Option<&str>) -> Option<(u32, u32)> {
    let i = ASPECT_RATIOS.iter().position(|r| *r == ratio)?;
    let (w, h) = SIDES_AT_1K[i];
    let times = if image_size == Some("2K") { 2 } else { 1 };
    Some((w * times, h * times))
}

/// What an Imagen model takes (a row of [`IMAGEN`], by the id's prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImagenModel {
    /// The prefix of the model ids.
    pub prefix: &'static str,
    /// The most images one request may ask for.
    pub max_images: u32,
    /// The `imageSize` values it takes; empty when it takes none (it draws at 1K).
    pub sizes: &'static [&'static str],
}

/// The Imagen models, by the vendor's published limits.
pub const IMAGEN: &[ImagenModel] = &[
    ImagenModel {
        prefix: "imagen-4.0-generate",
        max_images: 4,
        sizes: &["1K", "2K"],
    },
    ImagenModel {
        prefix: "imagen-4.0-ultra-generate",
        max_images: 1,
        sizes: &["1K", "2K"],
    },
    ImagenModel {
        prefix: "imagen-4.0-fast-generate",
        max_images: 4,
        sizes: &[],
    },
    ImagenModel {
        prefix: "imagen-3.0-generate",
        max_images: 4,
        sizes: &[],
    },
];

impl ImagenModel {
    /// The limits used for a model of no known row: four images, any size the family takes.
    pub const UNKNOWN: ImagenModel = ImagenModel {
        prefix: "",
        max_images: 4,
        sizes: &["1K", "2K"],
    };

    /// The row of `model_id` (with or without `models/`), by its longest prefix.
    ///
    /// ```
    /// use tollgate_native_genai::predict::ImagenModel;
    /// assert_eq!(ImagenModel::of("imagen-4.0-ultra-generate-001").map(|m| m.max_images), Some(1));
    /// assert!(ImagenModel::of("gen-2.5-flash").is_none());
    /// ```
    pub fn of(model_id: &str) -> Option<ImagenModel> {
        let id = model_id.strip_prefix("models/").unwrap_or(model_id);
        IMAGEN
            .iter()
            .filter(|m| id.starts_with(m.prefix))
            .max_by_key(|m| m.prefix.len())
            .copied()
    }
}

/// A `:predict` request.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PredictRequest {
    /// The prompts; Imagen takes one.
    #[serde(default)]
    pub instances: Vec<Instance>,
    /// The settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Map<String, Value>>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One instance: the prompt.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Instance {
    /// What to draw.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a valid request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    /// Images asked (`sampleCount`).
    pub images: u32,
}

/// Checks `request` against `model`'s row (see the [module](self) documentation).
///
/// ```
/// use tollgate_native_genai::predict::{ImagenModel, PredictRequest, validate};
/// let request: PredictRequest = serde_json::from_str(
///     r#"{"instances":[{"prompt":"a fox"}],"parameters":{"sampleCount":2,"aspectRatio":"16:9"}}"#,
/// )?;
/// assert_eq!(validate(&request, &ImagenModel::UNKNOWN)?.images, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn validate(request: &PredictRequest, model: &ImagenModel) -> Result<Asked, FieldError> {
    let [instance] = request.instances.as_slice() else {
        return Err(match request.instances.len() {
            0 => crate::error::required("instances"),
            n => FieldError::new(
                "instances",
                Rule::OutOfRange,
                format!("'instances' holds {n} prompts; the model takes one"),
            ),
        });
    };
    if instance
        .prompt
        .as_deref()
        .is_none_or(|p| p.trim().is_empty())
    {
        return Err(crate::error::required("instances[0].prompt"));
    }
    let empty = Map::new();
    let parameters = request.parameters.as_ref().unwrap_or(&empty);
    let get = |name: &str| parameters.get(name).filter(|v| !v.is_null());
    const COUNT: &str = "parameters.sampleCount";
    let images = match get("sampleCount") {
        None => model.max_images.min(4),
        Some(count) => count
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=model.max_images).contains(n))
            .ok_or_else(|| {
                FieldError::new(
                    COUNT,
                    Rule::OutOfRange,
                    format!(
                        "'{COUNT}' must be between 1 and {} for this model, not {count}",
                        model.max_images
                    ),
                )
            })?,
    };
    if let Some(ratio) = get("aspectRatio")
        && !ratio.as_str().is_some_and(|r| ASPECT_RATIOS.contains(&r))
    {
        return Err(FieldError::new(
            "parameters.aspectRatio",
            Rule::UnsupportedValue,
            format!(
                "'parameters.aspectRatio' {ratio} is not accepted; use one of {}",
                ASPECT_RATIOS.join(", ")
            ),
        ));
    }
    // The developer API's name, and the enterprise platform's.
    for name in ["imageSize", "sampleImageSize"] {
        let Some(size) = get(name) else {
            continue;
        };
        let field = format!("parameters.{name}");
        if model.sizes.is_empty() {
            return Err(FieldError::new(
                field.clone(),
                Rule::UnsupportedParameter,
                format!("'{field}' is not supported by this model; it draws at one size"),
            ));
        }
        if !size.as_str().is_some_and(|s| model.sizes.contains(&s)) {
            return Err(FieldError::new(
                field.clone(),
                Rule::UnsupportedValue,
                format!(
                    "'{field}' {size} is not accepted; use one of {}",
                    model.sizes.join(", ")
                ),
            ));
        }
    }
    if get("storageUri").is_some() {
        const STORAGE: &str = "parameters.storageUri";
        return Err(FieldError::new(
            STORAGE,
            Rule::UnsupportedParameter,
            format!(
                "'{STORAGE}' is not supported: the images come back inline, through the gateway, \
                 which counts what it relays"
            ),
        ));
    }
    if let Some(mime) = get("outputOptions").and_then(|o| o.get("mimeType")) {
        const MIME: &str = "parameters.outputOptions.mimeType";
        if !mime
            .as_str()
            .is_some_and(|m| m == "image/png" || m == "image/jpeg")
        {
            return Err(FieldError::new(
                MIME,
                Rule::UnsupportedValue,
                format!("'{MIME}' {mime} is not accepted; use image/png or image/jpeg"),
            ));
        }
    }
    Ok(Asked { images })
}

/// A `:predict` answer.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PredictResponse {
    /// One per image drawn (or filtered).
    #[serde(default)]
    pub predictions: Vec<Prediction>,
    /// Fields this crate does not model, kept so they pass through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One image of an answer, or why the vendor filtered it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prediction {
    /// The image, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_base64_encoded: Option<String>,
    /// Its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Why the vendor filtered the image, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rai_filtered_reason: Option<String>,
    /// Fields this crate does not model (`prompt`, `safetyAttributes`), kept so they pass
    /// through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(body: Value, model: &str) -> (String, Rule) {
        let request: PredictRequest = serde_json::from_value(body).unwrap();
        let err = validate(&request, &ImagenModel::of(model).unwrap()).unwrap_err();
        assert!(err.message.contains(&err.field), "{}", err.message);
        (err.field, err.rule)
    }

    #[test]
    fn each_rule_names_its_field() {
        let prompt = |parameters: Value| json!({"instances": [{"prompt": "a fox"}], "parameters": parameters});
        let standard = "imagen-4.0-generate-001";
        assert_eq!(refused(json!({"instances": []}), standard).0, "instances");
        assert_eq!(
            refused(json!({"instances": [{"prompt": " "}]}), standard).0,
            "instances[0].prompt"
        );
        assert_eq!(
            refused(prompt(json!({"sampleCount": 5})), standard),
            ("parameters.sampleCount".into(), Rule::OutOfRange)
        );
        assert_eq!(
            refused(
                prompt(json!({"sampleCount": 2})),
                "imagen-4.0-ultra-generate-001"
            )
            .1,
            Rule::OutOfRange
        );
        assert_eq!(
            refused(prompt(json!({"aspectRatio": "21:9"})), standard).0,
            "parameters.aspectRatio"
        );
        assert_eq!(
            refused(
                prompt(json!({"imageSize": "2K"})),
                "imagen-4.0-fast-generate-001"
            ),
            ("parameters.imageSize".into(), Rule::UnsupportedParameter)
        );
        assert_eq!(
            refused(prompt(json!({"imageSize": "4K"})), standard).1,
            Rule::UnsupportedValue
        );
        assert_eq!(
            refused(
                prompt(json!({"sampleImageSize": "2K"})),
                "imagen-4.0-fast-generate-001"
            )
            .0,
            "parameters.sampleImageSize"
        );
        assert_eq!(
            refused(prompt(json!({"storageUri": "gs://b/x"})), standard).0,
            "parameters.storageUri"
        );
        assert_eq!(
            refused(
                prompt(json!({"outputOptions": {"mimeType": "image/gif"}})),
                standard
            )
            .0,
            "parameters.outputOptions.mimeType"
        );
        let ok: PredictRequest = serde_json::from_value(prompt(json!({}))).unwrap();
        assert_eq!(
            validate(&ok, &ImagenModel::of(standard).unwrap())
                .unwrap()
                .images,
            4
        );
    }
}
