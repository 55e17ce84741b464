//! The bodies clients send: `POST /v1/images/generations` (JSON) and the text fields of
//! `POST /v1/images/edits` and `/v1/images/variations` (multipart forms whose files the gateway
//! reads).

use crate::family::{Family, Operation};
use crate::size::Size;
use crate::words::{
    Background, InputFidelity, Moderation, OutputFormat, Quality, ResponseFormat, Style,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The model of a body that names none (OpenAI's default, `dall-e-2`, is retired: the current
/// model is taken, an alias an operator may point elsewhere).
pub const DEFAULT_MODEL: &str = "gpt-image-2";

/// A generation's body, or an edit's text fields.
///
/// ```
/// use tollgate_images::{Family, ImageRequest, Operation, Quality};
/// let body: ImageRequest = serde_json::from_str(
///     r#"{"model":"gpt-image-2","prompt":"A lighthouse","size":"1536x1024","quality":"high","n":2}"#)?;
/// let checked = body.check(Family::GptImage2, 10, Operation::Generation).unwrap();
/// assert_eq!((checked.n, checked.quality), (2, Quality::High));
/// let bad: ImageRequest = serde_json::from_str(r#"{"prompt":"A lighthouse","size":"1000x1000"}"#)?;
/// assert_eq!(bad.check(Family::GptImage2, 10, Operation::Generation).unwrap_err().field, "size");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ImageRequest {
    /// The model; [`DEFAULT_MODEL`] when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What to draw (or how to change the images), 1 to 32,000 characters.
    #[serde(default)]
    pub prompt: Option<String>,
    /// How many images, 1 to the model's most (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    /// `WIDTHxHEIGHT` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// `low`, `medium`, `high` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<Quality>,
    /// `transparent`, `opaque` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<Background>,
    /// `png`, `jpeg` or `webp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<OutputFormat>,
    /// 0 to 100, for `jpeg` and `webp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_compression: Option<u32>,
    /// `auto` or `low`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moderation: Option<Moderation>,
    /// The end user, passed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// `b64_json` (the images inline) or `url` (the gateway's own signed link to each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Answer as server-sent events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Partial images a stream sends before each image, 0 to 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_images: Option<u8>,
    /// An edit's: how closely the input images' details are kept, `low` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_fidelity: Option<InputFidelity>,
    /// dall-e-3's look, `vivid` or `natural`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<Style>,
    /// Anything else: refused by [`ImageRequest::check`], naming it.
    #[serde(flatten)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub extra: Map<String, Value>,
}

/// A rule of the Images API's bodies, with OpenAI's code for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A field the API does not have.
    UnknownParameter,
    /// A required field is missing.
    MissingRequiredParameter,
    /// A field's value is not one the API (or the model) takes.
    InvalidValue,
    /// A number outside its range.
    IntegerOutOfRange,
    /// A text longer than the API takes.
    StringAboveMaxLength,
    /// A field of the API the model does not take.
    UnsupportedParameter,
}

impl Rule {
    /// OpenAI's code for the rule.
    pub const fn code(&self) -> &'static str {
        match self {
            Rule::UnknownParameter => "unknown_parameter",
            Rule::MissingRequiredParameter => "missing_required_parameter",
            Rule::InvalidValue => "invalid_value",
            Rule::IntegerOutOfRange => "integer_out_of_range",
            Rule::StringAboveMaxLength => "string_above_max_length",
            Rule::UnsupportedParameter => "unsupported_parameter",
        }
    }
}

impl tollgate_field_error::Rule for Rule {
    fn code(&self) -> &'static str {
        Rule::code(self)
    }
}

/// A field refused: the parameter (`field`), the rule and a sentence.
pub type FieldError = tollgate_field_error::FieldError<Rule>;

/// A request's values once checked against its model's family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The model asked for (a public name or alias).
    pub model: String,
    /// The prompt (empty for a variation, which has none).
    pub prompt: String,
    /// How many images.
    pub n: u32,
    /// The size asked (the family's default where none is named); `None` for `auto` (the
    /// model chooses).
    pub size: Option<Size>,
    /// The quality asked (`auto`: the model chooses).
    pub quality: Quality,
    /// The file format asked (PNG when not named).
    pub output_format: OutputFormat,
    /// How the images are answered (the family's way when not named: inline, or dall-e's
    /// link).
    pub response_format: ResponseFormat,
    /// Streamed as events.
    pub stream: bool,
    /// Partial images before each image (0 unless streamed).
    pub partial_images: u8,
    /// An edit's input fidelity (`low` when not named).
    pub input_fidelity: InputFidelity,
}

impl ImageRequest {
    /// The model named, or [`DEFAULT_MODEL`].
    pub fn model_name(&self) -> &str {
        self.model.as_deref().unwrap_or(DEFAULT_MODEL)
    }

    /// Checks the fields against `family`'s rules for `operation`, `n` also against `max_n`
    /// (the operator's limit, at most the family's). A field of the API that the family does
    /// not take is refused by name (an edit alone takes `input_fidelity`; a variation takes no
    /// prompt).
    pub fn check(
        &self,
        family: Family,
        max_n: u32,
        operation: Operation,
    ) -> Result<Checked, FieldError> {
        if let Some(name) = self.extra.keys().next() {
            return Err(unknown(name));
        }
        if operation != Operation::Edit && self.input_fidelity.is_some() {
            return Err(unknown("input_fidelity"));
        }
        if let Some(name) = self
            .optional_fields()
            .find(|name| !family.fields().contains(name))
        {
            return Err(FieldError::new(
                name,
                Rule::UnsupportedParameter,
                format!("Unsupported parameter: '{name}' is not supported with this model."),
            ));
        }
        let prompt = match (self.prompt.as_deref(), operation) {
            (Some(_), Operation::Variation) => return Err(unknown("prompt")),
            (None, Operation::Variation) => "",
            (None, _) => {
                return Err(FieldError::new(
                    "prompt",
                    Rule::MissingRequiredParameter,
                    "Missing required parameter: 'prompt'.",
                ));
            }
            (Some(p), _) if p.trim().is_empty() => {
                return Err(FieldError::new(
                    "prompt",
                    Rule::InvalidValue,
                    "'prompt' must not be empty.",
                ));
            }
            (Some(p), _) => p,
        };
        let chars = prompt.chars().count();
        if chars > family.max_prompt_chars() {
            return Err(FieldError::new(
                "prompt",
                Rule::StringAboveMaxLength,
                format!(
                    "'prompt' is {chars} characters long; the most is {}.",
                    family.max_prompt_chars()
                ),
            ));
        }
        let most = max_n.clamp(1, family.max_n());
        let n = self.n.unwrap_or(1);
        if !(1..=most).contains(&n) {
            return Err(FieldError::new(
                "n",
                Rule::IntegerOutOfRange,
                format!("'n' must be between 1 and {most}; got {n}."),
            ));
        }
        let size = match self.size.as_deref() {
            None => family.default_size(),
            Some("auto") if family.default_size().is_none() => None,
            Some(text) => {
                let rule = family.sizes();
                match Size::parse(text).filter(|s| rule.allows(*s)) {
                    Some(size) => Some(size),
                    None => {
                        let auto = if family.default_size().is_none() {
                            ", or 'auto'"
                        } else {
                            ""
                        };
                        return Err(FieldError::new(
                            "size",
                            Rule::InvalidValue,
                            format!(
                                "Invalid 'size': '{text}'. This model draws {}{auto}.",
                                rule.describe()
                            ),
                        ));
                    }
                }
            }
        };
        let quality = self.quality.unwrap_or(family.default_quality());
        if !family.qualities().contains(&quality) {
            let words: Vec<&str> = family.qualities().iter().map(|q| q.as_str()).collect();
            return Err(FieldError::new(
                "quality",
                Rule::InvalidValue,
                format!(
                    "Invalid 'quality': '{}'. This model takes {}.",
                    quality.as_str(),
                    words.join(", ")
                ),
            ));
        }
        let output_format = self.output_format.unwrap_or(OutputFormat::Png);
        if let Some(compression) = self.output_compression {
            if compression > 100 {
                return Err(FieldError::new(
                    "output_compression",
                    Rule::IntegerOutOfRange,
                    format!("'output_compression' must be between 0 and 100; got {compression}."),
                ));
            }
            if output_format == OutputFormat::Png && compression < 100 {
                return Err(FieldError::new(
                    "output_compression",
                    Rule::InvalidValue,
                    "'output_compression' is for 'jpeg' and 'webp'; PNG is not compressed with loss.",
                ));
            }
        }
        if self.background == Some(Background::Transparent) && output_format == OutputFormat::Jpeg {
            return Err(FieldError::new(
                "background",
                Rule::InvalidValue,
                "A 'transparent' background needs 'output_format' 'png' or 'webp'; JPEG has no transparency.",
            ));
        }
        let stream = self.stream.unwrap_or(false);
        let partial_images = self.partial_images.unwrap_or(0);
        if partial_images > family.max_partial_images() {
            return Err(FieldError::new(
                "partial_images",
                Rule::IntegerOutOfRange,
                format!(
                    "'partial_images' must be between 0 and {}; got {partial_images}.",
                    family.max_partial_images()
                ),
            ));
        }
        if partial_images > 0 && !stream {
            return Err(FieldError::new(
                "partial_images",
                Rule::InvalidValue,
                "'partial_images' needs 'stream': true.",
            ));
        }
        if self.response_format == Some(ResponseFormat::Url) && !family.answers_by_link() {
            return Err(FieldError::new(
                "response_format",
                Rule::InvalidValue,
                "'response_format' 'url' is not served for this model: its images come inline \
                 ('b64_json'), as its vendor sends them.",
            ));
        }
        if stream && self.response_format == Some(ResponseFormat::Url) {
            return Err(FieldError::new(
                "response_format",
                Rule::InvalidValue,
                "A stream sends its images inline: 'response_format' 'url' cannot be streamed.",
            ));
        }
        Ok(Checked {
            model: self.model_name().to_owned(),
            prompt: prompt.to_owned(),
            n,
            size,
            quality,
            output_format,
            response_format: self.response_format.unwrap_or(if family.answers_by_link() {
                ResponseFormat::Url
            } else {
                ResponseFormat::B64Json
            }),
            stream,
            partial_images: if stream { partial_images } else { 0 },
            input_fidelity: self.input_fidelity.unwrap_or(InputFidelity::Low),
        })
    }

    /// The names of the optional fields set (those [`Family::fields`] lists for the families
    /// that take them).
    fn optional_fields(&self) -> impl Iterator<Item = &'static str> {
        [
            ("background", self.background.is_some()),
            ("output_format", self.output_format.is_some()),
            ("output_compression", self.output_compression.is_some()),
            ("moderation", self.moderation.is_some()),
            ("response_format", self.response_format.is_some()),
            ("stream", self.stream.is_some()),
            ("partial_images", self.partial_images.is_some()),
            ("input_fidelity", self.input_fidelity.is_some()),
            ("style", self.style.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
    }

    /// The body an edit's form stands for, from its text fields (the OpenAI SDKs send an edit
    /// as a form): numbers and words read from their text, a value that does not read refused
    /// by name, any other field kept for [`ImageRequest::check`] to refuse.
    ///
    /// ```
    /// use tollgate_images::ImageRequest;
    /// let body = ImageRequest::from_fields([("prompt", "Add a hat"), ("n", "2"), ("stream", "true")]).unwrap();
    /// assert_eq!((body.n, body.stream), (Some(2), Some(true)));
    /// assert_eq!(ImageRequest::from_fields([("n", "two")]).unwrap_err().field, "n");
    /// ```
    pub fn from_fields<'a>(
        fields: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<ImageRequest, FieldError> {
        let mut body = ImageRequest::default();
        for (name, value) in fields {
            let text = || Some(value.to_owned());
            match name {
                "model" => body.model = text(),
                "prompt" => body.prompt = text(),
                "user" => body.user = text(),
                "size" => body.size = text(),
                "n" => body.n = Some(number(name, value)?),
                "output_compression" => body.output_compression = Some(number(name, value)?),
                "partial_images" => body.partial_images = Some(number(name, value)?),
                "stream" => {
                    body.stream = Some(match value {
                        "true" | "True" | "1" => true,
                        "false" | "False" | "0" => false,
                        _ => return Err(invalid(name, value, &["true", "false"])),
                    })
                }
                "quality" => body.quality = Some(read(name, value, Quality::parse, Quality::ALL)?),
                "background" => {
                    body.background = Some(read(name, value, Background::parse, Background::ALL)?)
                }
                "output_format" => {
                    body.output_format =
                        Some(read(name, value, OutputFormat::parse, OutputFormat::ALL)?)
                }
                "moderation" => {
                    body.moderation = Some(read(name, value, Moderation::parse, Moderation::ALL)?)
                }
                "response_format" => {
                    body.response_format = Some(read(
                        name,
                        value,
                        ResponseFormat::parse,
                        ResponseFormat::ALL,
                    )?)
                }
                "input_fidelity" => {
                    body.input_fidelity =
                        Some(read(name, value, InputFidelity::parse, InputFidelity::ALL)?)
                }
                "style" => body.style = Some(read(name, value, Style::parse, Style::ALL)?),
                other => {
                    body.extra
                        .insert(other.to_owned(), Value::String(value.to_owned()));
                }
            }
        }
        Ok(body)
    }
}

fn unknown(name: &str) -> FieldError {
    FieldError::new(
        name,
        Rule::UnknownParameter,
        format!("Unknown parameter: '{name}'."),
    )
}

fn invalid(name: &str, value: &str, words: &[&str]) -> FieldError {
    FieldError::new(
        name,
        Rule::InvalidValue,
        format!(
            "Invalid '{name}': '{value}'. Expected one of: {}.",
            words.join(", ")
        ),
    )
}

fn read<T>(
    name: &str,
    value: &str,
    parse: fn(&str) -> Option<T>,
    words: &[&str],
) -> Result<T, FieldError> {
    parse(value).ok_or_else(|| invalid(name, value, words))
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, FieldError> {
    value.trim().parse().map_err(|_| {
        FieldError::new(
            name,
            Rule::InvalidValue,
            format!("Invalid '{name}': '{value}' is not a whole number."),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(json: &str) -> ImageRequest {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn each_rule_names_its_field() {
        let cases = [
            (
                r#"{"prompt":"x","style":"vivid"}"#,
                "style",
                "unsupported_parameter",
            ),
            (
                r#"{"prompt":"x","colour":"red"}"#,
                "colour",
                "unknown_parameter",
            ),
            (r#"{"n":1}"#, "prompt", "missing_required_parameter"),
            (r#"{"prompt":"x","n":11}"#, "n", "integer_out_of_range"),
            (r#"{"prompt":"x","n":0}"#, "n", "integer_out_of_range"),
            (
                r#"{"prompt":"x","size":"1000x1000"}"#,
                "size",
                "invalid_value",
            ),
            (
                r#"{"prompt":"x","size":"4096x4096"}"#,
                "size",
                "invalid_value",
            ),
            (
                r#"{"prompt":"x","size":"3840x640"}"#,
                "size",
                "invalid_value",
            ),
            (
                r#"{"prompt":"x","output_compression":50}"#,
                "output_compression",
                "invalid_value",
            ),
            (
                r#"{"prompt":"x","output_format":"jpeg","background":"transparent"}"#,
                "background",
                "invalid_value",
            ),
            (
                r#"{"prompt":"x","partial_images":2}"#,
                "partial_images",
                "invalid_value",
            ),
            (
                r#"{"prompt":"x","stream":true,"partial_images":4}"#,
                "partial_images",
                "integer_out_of_range",
            ),
            (
                r#"{"prompt":"x","stream":true,"response_format":"url"}"#,
                "response_format",
                "invalid_value",
            ),
            (
                r#"{"prompt":"x","input_fidelity":"high"}"#,
                "input_fidelity",
                "unknown_parameter",
            ),
        ];
        for (json, field, code) in cases {
            let e = body(json)
                .check(Family::GptImage2, 10, Operation::Generation)
                .unwrap_err();
            assert_eq!((e.field.as_str(), e.rule.code()), (field, code), "{json}");
        }
    }

    #[test]
    fn sizes_follow_the_family() {
        let ok = |size: &str, family| {
            body(&format!(r#"{{"prompt":"x","size":"{size}"}}"#))
                .check(family, 10, Operation::Generation)
                .is_ok()
        };
        assert!(ok("3840x2160", Family::GptImage2));
        assert!(ok("2880x2880", Family::GptImage2));
        assert!(!ok("2896x2896", Family::GptImage2));
        assert!(ok("auto", Family::GptImage1));
        assert!(ok("1536x1024", Family::GptImage1));
        assert!(!ok("2048x2048", Family::GptImage1));
    }

    #[test]
    fn dall_e_takes_its_own_fields_sizes_and_qualities() {
        let check = |json: &str, family| {
            body(json)
                .check(family, 10, Operation::Generation)
                .map_err(|e| (e.field, e.rule.code()))
        };
        let three = check(
            r#"{"prompt":"x","quality":"hd","style":"natural"}"#,
            Family::DallE3,
        )
        .unwrap();
        assert_eq!(
            (three.size, three.quality, three.response_format),
            (
                Some(Size::new(1024, 1024)),
                Quality::Hd,
                ResponseFormat::Url
            )
        );
        let refused = [
            (r#"{"prompt":"x","n":2}"#, Family::DallE3, "n"),
            (r#"{"prompt":"x","size":"auto"}"#, Family::DallE3, "size"),
            (
                r#"{"prompt":"x","quality":"high"}"#,
                Family::DallE3,
                "quality",
            ),
            (r#"{"prompt":"x","stream":true}"#, Family::DallE3, "stream"),
            (
                r#"{"prompt":"x","background":"opaque"}"#,
                Family::DallE2,
                "background",
            ),
            (
                r#"{"prompt":"x","quality":"hd"}"#,
                Family::DallE2,
                "quality",
            ),
            (r#"{"prompt":"x","style":"vivid"}"#, Family::DallE2, "style"),
            (
                r#"{"prompt":"x","size":"1792x1024"}"#,
                Family::DallE2,
                "size",
            ),
        ];
        for (json, family, field) in refused {
            assert_eq!(check(json, family).unwrap_err().0, field, "{json}");
        }
        assert_eq!(
            check(
                &format!(r#"{{"prompt":"{}"}}"#, "a".repeat(1_001)),
                Family::DallE2
            )
            .unwrap_err()
            .1,
            "string_above_max_length"
        );
        let two = check(
            r#"{"prompt":"x","n":10,"size":"256x256","response_format":"b64_json"}"#,
            Family::DallE2,
        )
        .unwrap();
        assert_eq!((two.n, two.response_format), (10, ResponseFormat::B64Json));
    }

    #[test]
    fn a_variation_has_no_prompt() {
        let variation = ImageRequest::from_fields([("n", "2"), ("size", "512x512")]).unwrap();
        let checked = variation
            .check(Family::DallE2, 10, Operation::Variation)
            .unwrap();
        assert_eq!((checked.n, checked.prompt.as_str()), (2, ""));
        let with_prompt = ImageRequest::from_fields([("prompt", "x")]).unwrap();
        assert_eq!(
            with_prompt
                .check(Family::DallE2, 10, Operation::Variation)
                .unwrap_err()
                .field,
            "prompt"
        );
    }

    #[test]
    fn an_operators_smaller_n_is_the_limit() {
        let e = body(r#"{"prompt":"x","n":5}"#)
            .check(Family::GptImage1, 4, Operation::Generation)
            .unwrap_err();
        assert_eq!(e.message, "'n' must be between 1 and 4; got 5.");
        let edit =
            ImageRequest::from_fields([("prompt", "x"), ("input_fidelity", "high")]).unwrap();
        assert_eq!(
            edit.check(Family::GptImage1, 10, Operation::Edit)
                .unwrap()
                .input_fidelity,
            InputFidelity::High
        );
    }
}
