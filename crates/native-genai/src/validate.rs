//! The rules of a `generateContent` request, checked against the model's
//! [`ModelLimits`] before anything is held or sent (DESIGN §7).
//!
//! | Field | Rule |
//! |---|---|
//! | `contents` | present, at least one turn ([`Rule::Required`]) |
//! | `contents[i].role` | absent, `user` or `model` ([`Rule::UnsupportedValue`]); which role comes last is the upstream's business (a function-response turn is a `user` turn) |
//! | `contents[i].parts`, `systemInstruction.parts` | at least one part ([`Rule::Required`]) |
//! | `contents[i].parts[j]` | some data: `text`, `inlineData`, `fileData`, `functionCall`, `functionResponse`, a `thoughtSignature`, or a part kind this crate does not model (`executableCode`, ...); `{}` is refused ([`Rule::Required`]) |
//! | `...inlineData.mimeType`, `...inlineData.data`, `...fileData.fileUri`, `...functionCall.name`, `...functionResponse.name` | not empty ([`Rule::Required`]) |
//! | `generationConfig.thinkingConfig` | only for a model that thinks ([`Rule::UnsupportedParameter`]) |
//! | `generationConfig.thinkingConfig.thinkingBudget` | −1, 0 where the model can turn thinking off, or the model's range ([`Rule::OutOfRange`]) |
//! | `generationConfig.thinkingConfig.thinkingLevel` | not with a budget ([`Rule::NotCombinable`]); only for a model that takes levels ([`Rule::UnsupportedParameter`]); one of the model's levels, case-insensitive ([`Rule::UnsupportedValue`]) |
//! | `generationConfig.maxOutputTokens` | 1 to the model's output cap ([`Rule::OutOfRange`]) |
//! | `generationConfig.candidateCount` | 1 to 8 ([`Rule::OutOfRange`]) |
//! | `generationConfig.responseModalities` | a list of `TEXT`, `IMAGE`, `AUDIO` ([`Rule::Malformed`], [`Rule::UnsupportedValue`]); `IMAGE` only of a model that draws ([`Rule::UnsupportedValue`]) |
//! | `generationConfig.imageConfig` | only of a model that draws ([`Rule::UnsupportedParameter`]); `aspectRatio` one of [`ASPECT_RATIOS`], `imageSize` one of the model's sizes ([`Rule::UnsupportedValue`]) |
//!
//! Everything else (sampling values, safety settings, tools) is the upstream's to judge. The first
//! broken rule is reported, in the order of the table.

use crate::error::{FieldError, Rule};
use crate::models::{ASPECT_RATIOS, ModelLimits, THINKING_LEVELS, Thinking};
use crate::request::{
    Content, GenerateContentRequest, GenerationConfig, Part, ROLE_MODEL, ROLE_USER,
};

/// The largest `candidateCount`.
pub const MAX_CANDIDATE_COUNT: i64 = 8;

/// What a valid request asks for, as the gateway needs it to hold and relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Validated {
    /// The most tokens one candidate can produce, thinking included: `maxOutputTokens`, or the
    /// model's cap when the request gives none.
    pub max_output_tokens: u32,
    /// How many candidates are asked (`candidateCount`, 1 when absent). Each may produce
    /// [`max_output_tokens`](Self::max_output_tokens): see
    /// [`max_total_output_tokens`](Self::max_total_output_tokens).
    pub candidate_count: u32,
    /// Whether the model will think: its default (docs/api.md §2.9: generation 2.5 on) unless the
    /// budget is 0; a positive or −1 budget or a level turns it on.
    pub thinks: bool,
    /// Whether thoughts are returned as parts (`includeThoughts` on a request that thinks).
    pub include_thoughts: bool,
    /// The size asked of the images the answer may hold (a position in the model's
    /// [`ImageOutput::sizes`](crate::models::ImageOutput::sizes)); `None` when it holds none:
    /// the model draws nothing, or the request asks for no `IMAGE` (an image model draws by
    /// default).
    pub image_size: Option<usize>,
}

impl Validated {
    /// The most output tokens the whole request can produce: every candidate at its cap.
    pub fn max_total_output_tokens(&self) -> u64 {
        u64::from(self.max_output_tokens) * u64::from(self.candidate_count)
    }
}

/// Checks `request` against the model's `limits` (see the [module](self) documentation).
///
/// ```
/// use tollgate_native_genai::models::limits;
/// use tollgate_native_genai::{validate, GenerateContentRequest, Rule};
///
/// let flash = limits("gen-2.5-flash").ok_or("unknown model")?;
/// let request: GenerateContentRequest = serde_json::from_str(
///     r#"{"contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
///         "generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}}"#,
/// )?;
/// let ok = validate(&request, &flash)?;
/// assert_eq!((ok.max_output_tokens, ok.thinks), (65_536, false));
///
/// let pro = limits("gen-2.5-pro").ok_or("unknown model")?;
/// let err = validate(&request, &pro).unwrap_err(); // pro cannot turn thinking off
/// assert_eq!(err.field, "generationConfig.thinkingConfig.thinkingBudget");
/// assert_eq!(err.rule, Rule::OutOfRange);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn validate(
    request: &GenerateContentRequest,
    limits: &ModelLimits,
) -> Result<Validated, FieldError> {
    if request.contents.is_empty() {
        return Err(FieldError::new(
            "contents",
            Rule::Required,
            "'contents' is required and must have at least one turn",
        ));
    }
    for (i, content) in request.contents.iter().enumerate() {
        check_content(&format!("contents[{i}]"), content, true)?;
    }
    if let Some(system) = &request.system_instruction {
        check_content("systemInstruction", system, false)?;
    }
    let default = GenerationConfig::default();
    let config = request.generation_config.as_ref().unwrap_or(&default);
    let (thinks, include_thoughts) = check_thinking(config, limits)?;
    let max_output_tokens = check_max_output_tokens(config, limits)?;
    let candidate_count = check_candidate_count(config)?;
    let image_size = check_images(config, limits)?;
    Ok(Validated {
        max_output_tokens,
        candidate_count,
        thinks,
        include_thoughts,
        image_size,
    })
}

fn check_content(path: &str, content: &Content, check_role: bool) -> Result<(), FieldError> {
    if check_role
        && let Some(role) = content.role.as_deref()
        && role != ROLE_USER
        && role != ROLE_MODEL
    {
        let field = format!("{path}.role");
        let message = format!("'{field}' {role:?} is not accepted; use \"user\" or \"model\"");
        return Err(FieldError::new(field, Rule::UnsupportedValue, message));
    }
    if content.parts.is_empty() {
        let field = format!("{path}.parts");
        let message = format!("'{field}' is required and must have at least one part");
        return Err(FieldError::new(field, Rule::Required, message));
    }
    for (j, part) in content.parts.iter().enumerate() {
        check_part(&format!("{path}.parts[{j}]"), part)?;
    }
    Ok(())
}

fn check_part(path: &str, part: &Part) -> Result<(), FieldError> {
    if !part.has_data() {
        return Err(FieldError::new(
            path,
            Rule::Required,
            format!(
                "'{path}' is empty; a part needs one of text, inlineData, fileData, \
                 functionCall or functionResponse"
            ),
        ));
    }
    if let Some(blob) = &part.inline_data {
        if blob.mime_type.is_empty() {
            return Err(crate::error::required(format!(
                "{path}.inlineData.mimeType"
            )));
        }
        if blob.data.is_empty() {
            return Err(crate::error::required(format!("{path}.inlineData.data")));
        }
    }
    if let Some(file) = &part.file_data
        && file.file_uri.is_empty()
    {
        return Err(crate::error::required(format!("{path}.fileData.fileUri")));
    }
    if let Some(call) = &part.function_call
        && call.name.is_empty()
    {
        return Err(crate::error::required(format!("{path}.functionCall.name")));
    }
    if let Some(response) = &part.function_response
        && response.name.is_empty()
    {
        return Err(crate::error::required(format!(
            "{path}.functionResponse.name"
        )));
    }
    Ok(())
}

const THINKING_CONFIG: &str = "generationConfig.thinkingConfig";
const THINKING_BUDGET: &str = "generationConfig.thinkingConfig.thinkingBudget";
const THINKING_LEVEL: &str = "generationConfig.thinkingConfig.thinkingLevel";

/// Returns (thinks, include_thoughts).
fn check_thinking(
    config: &GenerationConfig,
    limits: &ModelLimits,
) -> Result<(bool, bool), FieldError> {
    let Some(thinking) = &config.thinking_config else {
        return Ok((limits.thinks(), false));
    };
    let Thinking::Budget {
        min,
        max,
        can_disable,
        by_default,
    } = limits.thinking
    else {
        return Err(FieldError::new(
            THINKING_CONFIG,
            Rule::UnsupportedParameter,
            format!("'{THINKING_CONFIG}' is not supported: the model does not think"),
        ));
    };
    if let Some(budget) = thinking.thinking_budget
        && !limits.accepts_budget(budget)
    {
        let off = if can_disable { ", 0 (off)" } else { "" };
        return Err(FieldError::new(
            THINKING_BUDGET,
            Rule::OutOfRange,
            format!(
                "'{THINKING_BUDGET}' must be -1 (dynamic){off} or between {min} and {max} \
                     for this model, not {budget}"
            ),
        ));
    }
    if let Some(level) = &thinking.thinking_level {
        if thinking.thinking_budget.is_some() {
            return Err(FieldError::new(
                THINKING_LEVEL,
                Rule::NotCombinable,
                format!("'{THINKING_LEVEL}' cannot be combined with '{THINKING_BUDGET}'; give one"),
            ));
        }
        if !limits.accepts_thinking_level() {
            return Err(FieldError::new(
                THINKING_LEVEL,
                Rule::UnsupportedParameter,
                format!(
                    "'{THINKING_LEVEL}' is not supported by this model; use '{THINKING_BUDGET}'"
                ),
            ));
        }
        let known = THINKING_LEVELS
            .iter()
            .any(|l| l.eq_ignore_ascii_case(level));
        if !known || limits.thinking_level(level).is_none() {
            return Err(FieldError::new(
                THINKING_LEVEL,
                Rule::UnsupportedValue,
                format!(
                    "'{THINKING_LEVEL}' {level:?} is not accepted; this model takes one of {}",
                    limits.thinking_levels.join(", ")
                ),
            ));
        }
    }
    let thinks = match (thinking.thinking_budget, &thinking.thinking_level) {
        (Some(0), _) => false,
        (Some(_), _) | (None, Some(_)) => true,
        (None, None) => by_default,
    };
    let include_thoughts = thinks && thinking.include_thoughts == Some(true);
    Ok((thinks, include_thoughts))
}

fn check_max_output_tokens(
    config: &GenerationConfig,
    limits: &ModelLimits,
) -> Result<u32, FieldError> {
    const FIELD: &str = "generationConfig.maxOutputTokens";
    let cap = limits.max_output_tokens;
    match config.max_output_tokens {
        None => Ok(cap),
        Some(asked) => match u32::try_from(asked) {
            Ok(tokens) if (1..=cap).contains(&tokens) => Ok(tokens),
            _ => Err(FieldError::new(
                FIELD,
                Rule::OutOfRange,
                format!("'{FIELD}' must be between 1 and {cap} for this model, not {asked}"),
            )),
        },
    }
}

fn check_candidate_count(config: &GenerationConfig) -> Result<u32, FieldError> {
    const FIELD: &str = "generationConfig.candidateCount";
    match config.candidate_count {
        None => Ok(1),
        Some(count) => match u32::try_from(count) {
            Ok(n) if (1..=MAX_CANDIDATE_COUNT).contains(&count) => Ok(n),
            _ => Err(FieldError::new(
                FIELD,
                Rule::OutOfRange,
                format!("'{FIELD}' must be between 1 and {MAX_CANDIDATE_COUNT}, not {count}"),
            )),
        },
    }
}

const MODALITIES: &str = "generationConfig.responseModalities";
const IMAGE_CONFIG: &str = "generationConfig.imageConfig";

/// The image size asked, when the answer may hold images (see [`Validated::image_size`]).
fn check_images(
    config: &GenerationConfig,
    limits: &ModelLimits,
) -> Result<Option<usize>, FieldError> {
    let asks_images = match config
        .extra
        .get("responseModalities")
        .or_else(|| config.extra.get("response_modalities"))
    {
        None | Some(serde_json::Value::Null) => limits.images.is_some(),
        Some(serde_json::Value::Array(modalities)) => {
            let mut images = false;
            for (i, modality) in modalities.iter().enumerate() {
                let word = modality.as_str().unwrap_or_default().to_ascii_uppercase();
                match word.as_str() {
                    "TEXT" | "AUDIO" => {}
                    "IMAGE" if limits.images.is_some() => images = true,
                    "IMAGE" => {
                        return Err(FieldError::new(
                            format!("{MODALITIES}[{i}]"),
                            Rule::UnsupportedValue,
                            format!(
                                "'{MODALITIES}[{i}]' asks for IMAGE, but this model does not draw images; use an image model"
                            ),
                        ));
                    }
                    _ => {
                        return Err(FieldError::new(
                            format!("{MODALITIES}[{i}]"),
                            Rule::UnsupportedValue,
                            format!(
                                "'{MODALITIES}[{i}]' {modality} is not accepted; use TEXT, IMAGE or AUDIO"
                            ),
                        ));
                    }
                }
            }
            images
        }
        Some(other) => {
            return Err(FieldError::new(
                MODALITIES,
                Rule::Malformed,
                format!("'{MODALITIES}' must be a list of modalities, not {other}"),
            ));
        }
    };
    let image_config = config
        .extra
        .get("imageConfig")
        .or_else(|| config.extra.get("image_config"));
    let Some(images) = limits.images else {
        return match image_config {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(_) => Err(FieldError::new(
                IMAGE_CONFIG,
                Rule::UnsupportedParameter,
                format!("'{IMAGE_CONFIG}' is not supported: this model does not draw images"),
            )),
        };
    };
    let setting = |camel: &str, snake: &str| {
        image_config
            .and_then(|c| c.get(camel).or_else(|| c.get(snake)))
            .filter(|v| !v.is_null())
    };
    if let Some(aspect) = setting("aspectRatio", "aspect_ratio")
        && !aspect.as_str().is_some_and(|a| ASPECT_RATIOS.contains(&a))
    {
        let field = format!("{IMAGE_CONFIG}.aspectRatio");
        return Err(FieldError::new(
            field.clone(),
            Rule::UnsupportedValue,
            format!(
                "'{field}' {aspect} is not accepted; use one of {}",
                ASPECT_RATIOS.join(", ")
            ),
        ));
    }
    let size = match setting("imageSize", "image_size") {
        None => 0,
        Some(size) => size
            .as_str()
            .and_then(|s| images.size_index(s))
            .ok_or_else(|| {
                let field = format!("{IMAGE_CONFIG}.imageSize");
                FieldError::new(
                    field.clone(),
                    Rule::UnsupportedValue,
                    format!(
                        "'{field}' {size} is not accepted; this model draws {}",
                        images.sizes.join(", ")
                    ),
                )
            })?,
    };
    Ok(asks_images.then_some(size))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::models::limits;
    use serde_json::{Value, json};

    fn request(value: Value) -> GenerateContentRequest {
        serde_json::from_value(value).unwrap()
    }

    fn with_config(config: Value) -> GenerateContentRequest {
        request(
            json!({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
            "generationConfig": config}),
        )
    }

    fn model(id: &str) -> ModelLimits {
        limits(id).unwrap()
    }

    fn refused(request: &GenerateContentRequest, id: &str) -> (String, Rule) {
        let err = validate(request, &model(id)).unwrap_err();
        assert!(err.message.contains(&err.field), "{}", err.message);
        (err.field, err.rule)
    }

    #[test]
    fn accepts_a_plain_request() {
        let ok = validate(&GenerateContentRequest::text("Hi"), &model("gen-2.5-flash")).unwrap();
        assert_eq!(
            ok,
            Validated {
                max_output_tokens: 65_536,
                candidate_count: 1,
                thinks: true,
                include_thoughts: false,
                image_size: None,
            }
        );
        let ok = validate(&GenerateContentRequest::text("Hi"), &model("gen-2.0-flash")).unwrap();
        assert_eq!((ok.max_output_tokens, ok.thinks), (8_192, false));
    }

    #[test]
    fn contents_rules() {
        let flash = "gen-2.5-flash";
        assert_eq!(
            refused(&request(json!({})), flash),
            ("contents".into(), Rule::Required)
        );
        assert_eq!(
            refused(&request(json!({"contents": []})), flash),
            ("contents".into(), Rule::Required)
        );
        let bad_role = request(json!({"contents": [
            {"role": "user", "parts": [{"text": "a"}]},
            {"role": "assistant", "parts": [{"text": "b"}]}]}));
        assert_eq!(
            refused(&bad_role, flash),
            ("contents[1].role".into(), Rule::UnsupportedValue)
        );
        let no_parts = request(json!({"contents": [{"role": "user", "parts": []}]}));
        assert_eq!(
            refused(&no_parts, flash),
            ("contents[0].parts".into(), Rule::Required)
        );
        let missing_parts = request(json!({"contents": [{"role": "user"}]}));
        assert_eq!(
            refused(&missing_parts, flash),
            ("contents[0].parts".into(), Rule::Required)
        );
        let empty_part = request(json!({"contents": [{"parts": [{"text": "a"}, {}]}]}));
        assert_eq!(
            refused(&empty_part, flash),
            ("contents[0].parts[1]".into(), Rule::Required)
        );
        let system = request(json!({"contents": [{"parts": [{"text": "a"}]}],
            "systemInstruction": {"parts": []}}));
        assert_eq!(
            refused(&system, flash),
            ("systemInstruction.parts".into(), Rule::Required)
        );
        let blob =
            request(json!({"contents": [{"parts": [{"inlineData": {"mimeType": "image/png"}}]}]}));
        assert_eq!(
            refused(&blob, flash),
            (
                "contents[0].parts[0].inlineData.data".into(),
                Rule::Required
            )
        );
        let call = request(json!({"contents": [{"parts": [{"functionCall": {"args": {}}}]}]}));
        assert_eq!(
            refused(&call, flash),
            (
                "contents[0].parts[0].functionCall.name".into(),
                Rule::Required
            )
        );
    }

    #[test]
    fn lenient_about_turn_order_and_unknown_parts() {
        let ok = request(json!({"contents": [
            {"role": "user", "parts": [{"text": "weather?"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {}}, "thoughtSignature": "s"}]},
            {"parts": [{"executableCode": {"language": "PYTHON", "code": "print(1)"}}]},
            {"role": "model", "parts": [{"text": "done"}]}]}));
        assert!(validate(&ok, &model("gen-2.5-flash")).is_ok());
    }

    #[test]
    fn thinking_rules() {
        let budget = |b: i64| with_config(json!({"thinkingConfig": {"thinkingBudget": b}}));
        const BUDGET: &str = "generationConfig.thinkingConfig.thinkingBudget";
        // flash: 0..=24576, -1
        for ok in [-1, 0, 1, 24_576] {
            assert!(
                validate(&budget(ok), &model("gen-2.5-flash")).is_ok(),
                "{ok}"
            );
        }
        for bad in [-2, 24_577] {
            assert_eq!(
                refused(&budget(bad), "gen-2.5-flash"),
                (BUDGET.into(), Rule::OutOfRange)
            );
        }
        // pro: 128..=32768, cannot disable
        for bad in [0, 127, 32_769] {
            assert_eq!(
                refused(&budget(bad), "gen-2.5-pro"),
                (BUDGET.into(), Rule::OutOfRange)
            );
        }
        assert!(validate(&budget(-1), &model("gen-2.5-pro")).is_ok());
        // lite: 512..=24576 and 0
        assert!(validate(&budget(0), &model("gen-2.5-flash-lite")).is_ok());
        assert_eq!(
            refused(&budget(100), "gen-2.5-flash-lite"),
            (BUDGET.into(), Rule::OutOfRange)
        );
        // 2.0: no thinking at all
        assert_eq!(
            refused(&budget(0), "gen-2.0-flash"),
            (
                "generationConfig.thinkingConfig".into(),
                Rule::UnsupportedParameter
            )
        );
        let include = with_config(json!({"thinkingConfig": {"includeThoughts": false}}));
        assert_eq!(
            refused(&include, "gen-2.0-flash").1,
            Rule::UnsupportedParameter
        );
    }

    #[test]
    fn thinking_level_rules() {
        const LEVEL: &str = "generationConfig.thinkingConfig.thinkingLevel";
        let level = |l: &str| with_config(json!({"thinkingConfig": {"thinkingLevel": l}}));
        assert!(
            validate(&level("low"), &model("gen-3-pro-preview"))
                .unwrap()
                .thinks
        );
        assert!(validate(&level("HIGH"), &model("gen-3-pro-preview")).is_ok());
        assert!(validate(&level("medium"), &model("gen-3-flash-preview")).is_ok());
        assert_eq!(
            refused(&level("MEDIUM"), "gen-3-pro-preview"),
            (LEVEL.into(), Rule::UnsupportedValue)
        );
        assert_eq!(
            refused(&level("extreme"), "gen-3-flash-preview"),
            (LEVEL.into(), Rule::UnsupportedValue)
        );
        assert_eq!(
            refused(&level("LOW"), "gen-2.5-flash"),
            (LEVEL.into(), Rule::UnsupportedParameter)
        );
        let both = with_config(
            json!({"thinkingConfig": {"thinkingLevel": "LOW", "thinkingBudget": 1024}}),
        );
        assert_eq!(
            refused(&both, "gen-3-pro-preview"),
            (LEVEL.into(), Rule::NotCombinable)
        );
        let budget = with_config(json!({"thinkingConfig": {"thinkingBudget": 1024}}));
        assert!(validate(&budget, &model("gen-3-pro-preview")).is_ok());
    }

    #[test]
    fn thinks_and_include_thoughts() {
        let v = |config: Value, id: &str| validate(&with_config(config), &model(id)).unwrap();
        let off = v(
            json!({"thinkingConfig": {"thinkingBudget": 0, "includeThoughts": true}}),
            "gen-2.5-flash",
        );
        assert_eq!((off.thinks, off.include_thoughts), (false, false));
        let on = v(
            json!({"thinkingConfig": {"includeThoughts": true}}),
            "gen-2.5-flash",
        );
        assert_eq!((on.thinks, on.include_thoughts), (true, true));
        let dynamic = v(
            json!({"thinkingConfig": {"thinkingBudget": -1}}),
            "gen-2.5-pro",
        );
        assert_eq!((dynamic.thinks, dynamic.include_thoughts), (true, false));
        let unknown = validate(
            &with_config(json!({"thinkingConfig": {"thinkingBudget": 2048}})),
            &ModelLimits::UNKNOWN,
        )
        .unwrap();
        assert!(unknown.thinks);
    }

    #[test]
    fn output_and_candidates() {
        const MAX: &str = "generationConfig.maxOutputTokens";
        const COUNT: &str = "generationConfig.candidateCount";
        let max = |n: i64| with_config(json!({"maxOutputTokens": n}));
        assert_eq!(
            validate(&max(1), &model("gen-2.0-flash"))
                .unwrap()
                .max_output_tokens,
            1
        );
        assert_eq!(
            validate(&max(8192), &model("gen-2.0-flash"))
                .unwrap()
                .max_output_tokens,
            8192
        );
        for bad in [0, -5, 8193] {
            assert_eq!(
                refused(&max(bad), "gen-2.0-flash"),
                (MAX.into(), Rule::OutOfRange)
            );
        }
        assert!(validate(&max(65_536), &model("gen-2.5-pro")).is_ok());
        assert_eq!(
            refused(&max(65_537), "gen-2.5-pro"),
            (MAX.into(), Rule::OutOfRange)
        );
        let count = |n: i64| with_config(json!({"candidateCount": n, "maxOutputTokens": 100}));
        let ok = validate(&count(8), &model("gen-2.5-flash")).unwrap();
        assert_eq!((ok.candidate_count, ok.max_total_output_tokens()), (8, 800));
        for bad in [0, 9, -1] {
            assert_eq!(
                refused(&count(bad), "gen-2.5-flash"),
                (COUNT.into(), Rule::OutOfRange)
            );
        }
    }

    #[test]
    fn images_only_of_a_model_that_draws() {
        let asked = |config: Value| with_config(config);
        let image = json!({"responseModalities": ["TEXT", "IMAGE"]});
        assert_eq!(
            refused(&asked(image.clone()), "gen-2.5-flash"),
            (
                "generationConfig.responseModalities[1]".into(),
                Rule::UnsupportedValue
            )
        );
        let drawn = validate(&asked(image), &model("gen-2.5-flash-image")).unwrap();
        assert_eq!(drawn.image_size, Some(0));
        // An image model draws by default; TEXT alone draws nothing.
        let plain = validate(
            &GenerateContentRequest::text("Hi"),
            &model("gen-3-pro-image-preview"),
        );
        assert_eq!(plain.unwrap().image_size, Some(0));
        let text = validate(
            &asked(json!({"responseModalities": ["text"]})),
            &model("gen-2.5-flash-image"),
        );
        assert_eq!(text.unwrap().image_size, None);
        let four_k = asked(json!({"imageConfig": {"imageSize": "4K", "aspectRatio": "16:9"}}));
        assert_eq!(
            validate(&four_k, &model("gen-3-pro-image-preview"))
                .unwrap()
                .image_size,
            Some(2)
        );
        assert_eq!(
            refused(&four_k, "gen-2.5-flash-image"),
            (
                "generationConfig.imageConfig.imageSize".into(),
                Rule::UnsupportedValue
            )
        );
        assert_eq!(
            refused(&four_k, "gen-2.5-flash"),
            (
                "generationConfig.imageConfig".into(),
                Rule::UnsupportedParameter
            )
        );
        let lower = asked(json!({"imageConfig": {"imageSize": "4k"}}));
        assert_eq!(
            refused(&lower, "gen-3-pro-image-preview").1,
            Rule::UnsupportedValue
        );
        let ratio = asked(json!({"imageConfig": {"aspectRatio": "7:3"}}));
        assert_eq!(
            refused(&ratio, "gen-3-pro-image-preview"),
            (
                "generationConfig.imageConfig.aspectRatio".into(),
                Rule::UnsupportedValue
            )
        );
        for bad in [json!("IMAGE"), json!(["SMELL"])] {
            let request = asked(json!({"responseModalities": bad}));
            assert!(validate(&request, &model("gen-3-pro-image-preview")).is_err());
        }
    }
}
