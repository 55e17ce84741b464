//! The rules of a create request against its model's row of the table (docs/api.md §2.8, §8).

use serde::{Deserialize, Serialize};

use crate::error::{FieldError, Rule};
use crate::models::ModelSpec;
use crate::request::CreateVideoRequest;

/// The most characters of `prompt` (and of `negative_prompt`).
///
/// docs/api.md §8 says the maximum prompt length for video is not shown; 4,000 characters is decided
/// here: above what the video models of the table take in practice, far below OpenAI's 32,000
/// (wire-formats §7.2), and short enough that a request can be refused before a hold is placed.
/// Characters are Unicode scalar values (Rust `char`s).
pub const MAX_PROMPT_CHARS: usize = 4_000;

/// The values of a valid request, with the model's defaults filled in: what to send upstream and
/// what to bill (docs/api.md §8 rule 6).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Validated {
    /// The length to generate in whole seconds, within the model's range: the asked duration
    /// rounded up, or [`ModelSpec::default_duration`].
    pub duration_seconds: u32,
    /// The resolution in the table's spelling, or [`ModelSpec::default_resolution`]; may be
    /// [`MODEL_DEFAULT`](crate::models::MODEL_DEFAULT) (the model's own choice).
    pub resolution: String,
    /// The aspect ratio in the table's spelling, or `None` when the request gives none (the
    /// model's own choice).
    pub aspect_ratio: Option<String>,
}

/// Checks a create request against the row of its model and returns the first broken rule, in
/// field order; or, when none is broken, the values to use.
///
/// The caller looks the row up ([`spec`](crate::models::spec)`(&req.model)`) and answers a model
/// not in the table itself (404 `model_not_found`, see
/// [`ErrorBody::model_not_found`](crate::ErrorBody::model_not_found)); `req.model` is not compared
/// with [`ModelSpec::id`] here, so a public alias may be validated against its upstream model.
///
/// | Field | Rule | [`Rule`] |
/// |---|---|---|
/// | `model` | must not be empty | [`Required`](Rule::Required) |
/// | `prompt` | docs/api.md §2.8: required; not empty and not only whitespace | [`Required`](Rule::Required) |
/// | `prompt` | at most [`MAX_PROMPT_CHARS`] characters | [`TooLong`](Rule::TooLong) |
/// | `duration` | docs/api.md §2.8/§8: rounded up to whole seconds, within the model's range (`omni`: exactly 4); a value that is not finite and positive is refused | [`OutOfRange`](Rule::OutOfRange) |
/// | `resolution` | one of the model's resolutions, case-insensitively | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `aspect_ratio` | only for a model that takes it | [`UnsupportedParameter`](Rule::UnsupportedParameter) |
/// | `aspect_ratio` | one of the model's aspect ratios, case-insensitively | [`UnsupportedValue`](Rule::UnsupportedValue) |
/// | `seed` | only for a model that takes it | [`UnsupportedParameter`](Rule::UnsupportedParameter) |
/// | `negative_prompt` | only for a model that takes it | [`UnsupportedParameter`](Rule::UnsupportedParameter) |
/// | `negative_prompt` | at most [`MAX_PROMPT_CHARS`] characters | [`TooLong`](Rule::TooLong) |
/// | `sound`, `watermark` | only for a model that takes them (`wave-3-0-video`) | [`UnsupportedParameter`](Rule::UnsupportedParameter) |
///
/// **Fractional durations are rounded up.** Upstreams take whole seconds and docs/api.md §8 rule 6 bills
/// the seconds generated rounded up, so an asked 4.2 seconds is generated (and held) as 5; the
/// rounded value must lie within the range, so 15.2 is refused by a model of 1 to 15 seconds and
/// 0.5 is 1 second. A duration of 0 or less is refused.
///
/// **A parameter a model does not take is refused whatever its value**, `false` and `""`
/// included: only an absent or `null` field is "not given". An empty `resolution` or
/// `aspect_ratio` is refused too (it is not a default).
///
/// ```
/// use tollgate_generic_tasks::models::spec;
/// use tollgate_generic_tasks::{validate, CreateVideoRequest, Rule};
///
/// let horse = spec("horse-1.1-t2v").ok_or("unknown model")?;
/// let mut request = CreateVideoRequest::new("horse-1.1-t2v", "A horse on a beach");
/// request.duration = Some(7.5);
/// request.resolution = Some("720p".into());
/// let ok = validate(&request, horse)?;
/// assert_eq!((ok.duration_seconds, ok.resolution.as_str()), (8, "720P"));
///
/// let imagine = spec("imagine-video").ok_or("unknown model")?;
/// let mut request = CreateVideoRequest::new("imagine-video", "A cat");
/// request.sound = Some(true);
/// let err = validate(&request, imagine).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("sound", Rule::UnsupportedParameter));
/// assert_eq!(err.to_string(), "'sound' is not supported by imagine-video");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn validate(req: &CreateVideoRequest, spec: &ModelSpec) -> Result<Validated, FieldError> {
    if req.model.is_empty() {
        return Err(FieldError::new(
            "model",
            Rule::Required,
            "'model' is required and must not be empty",
        ));
    }
    if req.prompt.trim().is_empty() {
        return Err(FieldError::new(
            "prompt",
            Rule::Required,
            "'prompt' is required and must not be empty",
        ));
    }
    check_length("prompt", &req.prompt)?;
    let duration_seconds = match req.duration {
        Some(asked) => duration_seconds(asked, spec)?,
        None => spec.default_duration,
    };
    let resolution = match &req.resolution {
        Some(asked) => spec
            .resolution(asked)
            .ok_or_else(|| not_offered("resolution", asked, spec.resolutions, spec.id))?,
        None => spec.default_resolution,
    };
    let aspect_ratio = match &req.aspect_ratio {
        // A model of a few sizes: the first of its resolution's.
        None if !spec.sizes.is_empty() => spec
            .sizes
            .iter()
            .find(|(r, _)| *r == resolution)
            .map(|(_, ratio)| (*ratio).to_owned()),
        None => None,
        Some(_) if !spec.supports.aspect_ratio => return Err(unsupported("aspect_ratio", spec)),
        Some(asked) if spec.accepts_any_aspect_ratio() => Some(asked.clone()),
        Some(asked) => Some(
            spec.aspect_ratio(asked)
                .ok_or_else(|| not_offered("aspect_ratio", asked, spec.aspect_ratios, spec.id))?
                .to_owned(),
        ),
    };
    if let Some(ratio) = &aspect_ratio {
        check_size(spec, resolution, ratio)?;
    }
    if req.seed.is_some() && !spec.supports.seed {
        return Err(unsupported("seed", spec));
    }
    if let Some(negative) = &req.negative_prompt {
        if !spec.supports.negative_prompt {
            return Err(unsupported("negative_prompt", spec));
        }
        check_length("negative_prompt", negative)?;
    }
    if req.sound.is_some() && !spec.supports.sound {
        return Err(unsupported("sound", spec));
    }
    if req.watermark.is_some() && !spec.supports.watermark {
        return Err(unsupported("watermark", spec));
    }
    Ok(Validated {
        duration_seconds,
        resolution: resolution.to_owned(),
        aspect_ratio,
    })
}

/// The asked duration rounded up to whole seconds, if that lies within the model's range.
fn duration_seconds(asked: f64, spec: &ModelSpec) -> Result<u32, FieldError> {
    let (min, max) = (*spec.duration.start(), *spec.duration.end());
    let rounded = asked.ceil();
    // Comparisons with NaN are false, so a NaN is refused here too; the bounds check makes the
    // conversion below exact.
    if asked > 0.0 && rounded >= f64::from(min) && rounded <= f64::from(max) {
        // `rounded` is a whole number within `min..=max`, so the cast neither truncates nor
        // saturates.
        let seconds = rounded as u32;
        if spec.durations.is_empty() || spec.durations.contains(&seconds) {
            return Ok(seconds);
        }
    }
    let expected = if !spec.durations.is_empty() {
        let lengths: Vec<String> = spec.durations.iter().map(u32::to_string).collect();
        format!("one of {} seconds", lengths.join(", "))
    } else if spec.is_fixed_duration() {
        format!("{min} seconds")
    } else {
        format!("between {min} and {max} seconds")
    };
    Err(FieldError::new(
        "duration",
        Rule::OutOfRange,
        format!("'duration' must be {expected} for {}, got {asked}", spec.id),
    ))
}

/// A model of a few sizes makes `resolution` only at some ratios.
fn check_size(spec: &ModelSpec, resolution: &str, ratio: &str) -> Result<(), FieldError> {
    if spec.sizes.is_empty() || spec.sizes.contains(&(resolution, ratio)) {
        return Ok(());
    }
    let offered: Vec<String> = spec
        .sizes
        .iter()
        .map(|(r, q)| format!("{r} at {q}"))
        .collect();
    Err(FieldError::new(
        "aspect_ratio",
        Rule::UnsupportedValue,
        format!(
            "{} does not make {resolution} at {ratio}; it makes {}",
            spec.id,
            offered.join(", ")
        ),
    ))
}

fn check_length(field: &str, text: &str) -> Result<(), FieldError> {
    let chars = text.chars().count();
    if chars > MAX_PROMPT_CHARS {
        return Err(FieldError::new(
            field,
            Rule::TooLong,
            format!("'{field}' has {chars} characters; at most {MAX_PROMPT_CHARS} are allowed"),
        ));
    }
    Ok(())
}

fn unsupported(field: &str, spec: &ModelSpec) -> FieldError {
    FieldError::new(
        field,
        Rule::UnsupportedParameter,
        format!("'{field}' is not supported by {}", spec.id),
    )
}

fn not_offered(field: &str, asked: &str, offered: &[&str], model: &str) -> FieldError {
    let expected = match offered {
        [one] => one.to_string(),
        many => format!("one of {}", many.join(", ")),
    };
    FieldError::new(
        field,
        Rule::UnsupportedValue,
        format!("'{field}' must be {expected} for {model}, got '{asked}'"),
    )
}

/// The request's schema, written by hand as its decoder is (`crate::request`), beside the rules
/// it states: `seconds` is `duration`'s alias, and `model` and `prompt` are required by these
/// rules, not by the decoder. A test holds it to the fields the type has.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for CreateVideoRequest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "VideoRequest".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let seconds = schemars::json_schema!({
            "type": ["number", "string"],
            "description": "The length in seconds: a number or a numeric string; the model's range.",
        });
        schemars::json_schema!({
            "type": "object",
            "description": "The body of `POST /v1/video/generations` (docs/api.md §2.8). Fields of neighbouring formats are kept and passed on.",
            "required": ["model", "prompt"],
            "properties": {
                "model": {"type": "string", "examples": ["wave-2-7-video"]},
                "prompt": {"type": "string", "minLength": 1, "maxLength": MAX_PROMPT_CHARS},
                "duration": seconds,
                "seconds": seconds,
                "resolution": {"type": "string", "description": "The model's resolutions."},
                "aspect_ratio": {"type": "string", "description": "The model's aspect ratios."},
                "seed": {"type": "integer"},
                "negative_prompt": {"type": "string"},
                "sound": {"type": "boolean"},
                "watermark": {"type": "boolean"},
            },
        })
    }
}

#[cfg(all(test, feature = "schema"))]
#[allow(clippy::unwrap_used)]
mod schema_tests {
    use super::*;

    /// The hand-written schema names every field the type carries.
    #[test]
    fn the_schema_names_every_field() {
        let mut full = CreateVideoRequest::new("omni", "x");
        full.duration = Some(4.0);
        full.resolution = Some("720p".into());
        full.aspect_ratio = Some("16:9".into());
        full.seed = Some(1);
        full.negative_prompt = Some("rain".into());
        full.sound = Some(true);
        full.watermark = Some(false);
        let schema = schemars::schema_for!(CreateVideoRequest);
        let properties = schema.get("properties").unwrap().as_object().unwrap();
        for key in serde_json::to_value(&full)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
        {
            assert!(
                properties.contains_key(key),
                "{key} is missing from the schema"
            );
        }
    }
}
