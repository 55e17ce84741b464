//! The bodies clients send: `POST /v1/videos` and `POST /v1/videos/{id}/remix`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The model of a create body that names none, as OpenAI's API defaults it.
pub const DEFAULT_MODEL: &str = "sora-2";

/// The most characters of a prompt (OpenAI documents none; the generic family's 4,000 is kept:
/// docs/api.md §2.8).
pub const MAX_PROMPT_CHARS: usize = 4_000;

/// `POST /v1/videos` as JSON, or the text fields of its multipart form.
///
/// ```
/// use tollgate_openai_videos::CreateVideoBody;
/// let body: CreateVideoBody =
///     serde_json::from_str(r#"{"model":"sora-2","prompt":"A cat","seconds":"8","size":"1280x720"}"#)?;
/// assert_eq!(body.check().unwrap().seconds, Some(8));
/// let bad: CreateVideoBody = serde_json::from_str(r#"{"prompt":"A cat","duration":8}"#)?;
/// assert_eq!(bad.check().unwrap_err().field, "duration");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    // Decoded when missing, refused by the check naming it: required all the same.
    schemars(extend("required" = ["prompt"]))
)]
pub struct CreateVideoBody {
    /// The model; [`DEFAULT_MODEL`] when absent (an alias an operator may define).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("examples" = ["sora-2"])))]
    pub model: Option<String>,
    /// What to generate.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(
            with = "String",
            transform = schema::without_default,
            length(min = 1, max = MAX_PROMPT_CHARS)
        )
    )]
    pub prompt: Option<String>,
    /// The length in whole seconds, as a string (`"4"`, `"8"`, `"12"`); a number is taken too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<schema::Seconds>"))]
    pub seconds: Option<Value>,
    /// `WIDTHxHEIGHT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(
            regex(pattern = "^[0-9]+[xX][0-9]+$"),
            extend("examples" = ["1280x720", "854x480"])
        )
    )]
    pub size: Option<String>,
    /// An image to start from: in JSON `{"image_url": …}` or `{"file_id": …}`; in a multipart
    /// form, a file (read by the gateway, not here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<schema::InputReference>"))]
    pub input_reference: Option<Value>,
    /// Anything else: refused by [`CreateVideoBody::check`], naming it.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What the document says of the fields [`CreateVideoBody`] keeps as raw JSON, so that the
/// check, not the decoder, names what is wrong with them.
#[cfg(feature = "schema")]
mod schema {
    /// The decoder's fallback for a missing field, which the check refuses: not a value to
    /// document.
    pub fn without_default(schema: &mut schemars::Schema) {
        schema.remove("default");
    }

    /// Whole seconds: `"8"`, or `8`.
    #[derive(schemars::JsonSchema)]
    #[schemars(rename = "VideoSeconds", untagged)]
    #[allow(dead_code)]
    pub enum Seconds {
        /// `"4"`, `"8"`, `"12"`.
        Text(String),
        /// The same as a number.
        Number(u64),
    }

    /// The image a clip model starts from (its first frame).
    #[derive(schemars::JsonSchema)]
    #[schemars(rename = "VideoInputReference")]
    #[allow(dead_code)]
    pub struct InputReference {
        /// An image's URL (or a `data:` URL).
        pub image_url: Option<String>,
        /// A file's id.
        pub file_id: Option<String>,
    }
}

/// The body of `POST /v1/videos/{id}/remix`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RemixBody {
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A rule of the Videos API's bodies, with OpenAI's code for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A field the API does not have.
    UnknownParameter,
    /// A required field is missing.
    MissingRequiredParameter,
    /// A field's value is not one the API takes.
    InvalidValue,
    /// A text is longer than the API takes.
    StringAboveMaxLength,
}

impl Rule {
    /// OpenAI's code for the rule.
    pub const fn code(&self) -> &'static str {
        match self {
            Rule::UnknownParameter => "unknown_parameter",
            Rule::MissingRequiredParameter => "missing_required_parameter",
            Rule::InvalidValue => "invalid_value",
            Rule::StringAboveMaxLength => "string_above_max_length",
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

/// A create body's values once its fields are well-formed (what each model can do is the
/// gateway's to check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub model: String,
    pub prompt: String,
    /// `None`: the model's default.
    pub seconds: Option<u32>,
    /// `None`: the model's default.
    pub size: Option<crate::Size>,
}

impl CreateVideoBody {
    /// Checks the fields' form: no unknown field, a prompt of 1 to [`MAX_PROMPT_CHARS`]
    /// characters, `seconds` a whole number from 1 to 60, `size` `WIDTHxHEIGHT`.
    pub fn check(&self) -> Result<Checked, FieldError> {
        if let Some(name) = self.extra.keys().next() {
            return Err(FieldError::new(
                name.clone(),
                Rule::UnknownParameter,
                format!("Unknown parameter: '{name}'."),
            ));
        }
        let prompt = check_prompt(self.prompt.as_deref())?;
        let model = match self.model.as_deref() {
            None => DEFAULT_MODEL.to_owned(),
            Some("") => {
                return Err(FieldError::new(
                    "model",
                    Rule::InvalidValue,
                    "'model' must not be empty.",
                ));
            }
            Some(m) => m.to_owned(),
        };
        let seconds = match &self.seconds {
            None | Some(Value::Null) => None,
            Some(value) => Some(seconds(value)?),
        };
        let size = match self.size.as_deref() {
            None => None,
            Some(text) => Some(crate::Size::parse(text).ok_or_else(|| {
                FieldError::new(
                    "size",
                    Rule::InvalidValue,
                    format!("Invalid 'size': {text:?}. Expected WIDTHxHEIGHT, such as '1280x720'."),
                )
            })?),
        };
        Ok(Checked {
            model,
            prompt,
            seconds,
            size,
        })
    }
}

impl CreateVideoBody {
    /// The body a `multipart/form-data` create stands for, from its text fields (the OpenAI
    /// SDKs send the create as a form): `seconds` and `size` as written, any other field kept
    /// for [`CreateVideoBody::check`] to refuse.
    ///
    /// ```
    /// use tollgate_openai_videos::CreateVideoBody;
    /// let body = CreateVideoBody::from_fields([("prompt", "A cat"), ("seconds", "8")]);
    /// assert_eq!(body.check().unwrap().seconds, Some(8));
    /// ```
    pub fn from_fields<'a>(
        fields: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> CreateVideoBody {
        let mut body = CreateVideoBody::default();
        for (name, value) in fields {
            let text = || Some(value.to_owned());
            match name {
                "model" => body.model = text(),
                "prompt" => body.prompt = text(),
                "seconds" => body.seconds = Some(Value::String(value.to_owned())),
                "size" => body.size = text(),
                "input_reference" => body.input_reference = Some(Value::String(value.to_owned())),
                other => {
                    body.extra
                        .insert(other.to_owned(), Value::String(value.to_owned()));
                }
            }
        }
        body
    }
}

impl RemixBody {
    /// The remix's prompt, checked as a create's.
    pub fn check(&self) -> Result<String, FieldError> {
        if let Some(name) = self.extra.keys().next() {
            return Err(FieldError::new(
                name.clone(),
                Rule::UnknownParameter,
                format!("Unknown parameter: '{name}'."),
            ));
        }
        check_prompt(self.prompt.as_deref())
    }
}

fn check_prompt(prompt: Option<&str>) -> Result<String, FieldError> {
    match prompt {
        None => Err(FieldError::new(
            "prompt",
            Rule::MissingRequiredParameter,
            "Missing required parameter: 'prompt'.",
        )),
        Some(p) if p.trim().is_empty() => Err(FieldError::new(
            "prompt",
            Rule::InvalidValue,
            "'prompt' must not be empty.",
        )),
        Some(p) if p.chars().count() > MAX_PROMPT_CHARS => Err(FieldError::new(
            "prompt",
            Rule::StringAboveMaxLength,
            format!("'prompt' is longer than {MAX_PROMPT_CHARS} characters."),
        )),
        Some(p) => Ok(p.to_owned()),
    }
}

fn seconds(value: &Value) -> Result<u32, FieldError> {
    let parsed = match value {
        Value::String(s) => s.trim().parse::<u32>().ok(),
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        _ => None,
    };
    parsed.filter(|s| (1..=60).contains(s)).ok_or_else(|| {
        FieldError::new(
            "seconds",
            Rule::InvalidValue,
            format!("Invalid 'seconds': {value}. Expected a whole number of seconds, such as '8'."),
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn check(json: &str) -> Result<Checked, FieldError> {
        serde_json::from_str::<CreateVideoBody>(json)
            .unwrap()
            .check()
    }

    #[test]
    fn the_fields_of_a_create() {
        let ok = check(r#"{"prompt":"A cat","seconds":"4","size":"720x1280"}"#).unwrap();
        assert_eq!(ok.model, DEFAULT_MODEL);
        assert_eq!(ok.seconds, Some(4));
        assert_eq!(ok.size.map(|s| s.to_string()).as_deref(), Some("720x1280"));
        assert_eq!(
            check(r#"{"prompt":"A cat","seconds":12}"#).unwrap().seconds,
            Some(12)
        );
        for (json, param, code) in [
            (r#"{"seconds":"4"}"#, "prompt", "missing_required_parameter"),
            (r#"{"prompt":"  "}"#, "prompt", "invalid_value"),
            (
                r#"{"prompt":"x","seconds":"four"}"#,
                "seconds",
                "invalid_value",
            ),
            (
                r#"{"prompt":"x","seconds":"0"}"#,
                "seconds",
                "invalid_value",
            ),
            (
                r#"{"prompt":"x","seconds":4.5}"#,
                "seconds",
                "invalid_value",
            ),
            (r#"{"prompt":"x","size":"hd"}"#, "size", "invalid_value"),
            (r#"{"prompt":"x","model":""}"#, "model", "invalid_value"),
            (
                r#"{"prompt":"x","quality":"high"}"#,
                "quality",
                "unknown_parameter",
            ),
        ] {
            let e = check(json).unwrap_err();
            assert_eq!((e.field.as_str(), e.rule.code()), (param, code), "{json}");
        }
        let long = format!(r#"{{"prompt":"{}"}}"#, "x".repeat(MAX_PROMPT_CHARS + 1));
        assert_eq!(
            check(&long).unwrap_err().rule.code(),
            "string_above_max_length"
        );
    }

    #[test]
    fn a_remix_takes_a_prompt_only() {
        let remix: RemixBody = serde_json::from_str(r#"{"prompt":"now at night"}"#).unwrap();
        assert_eq!(remix.check().unwrap(), "now at night");
        let remix: RemixBody = serde_json::from_str(r#"{"prompt":"x","seconds":"4"}"#).unwrap();
        assert_eq!(remix.check().unwrap_err().field, "seconds");
    }
}
