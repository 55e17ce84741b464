//! The create request of `POST /v1/video/generations` (docs/api.md §2.8, §4.8).
//!
//! | Field | Type | Notes |
//! |---|---|---|
//! | `model` | string | required; one of [`MODELS`](crate::models::MODELS) |
//! | `prompt` | string | required, not blank, at most [`MAX_PROMPT_CHARS`](crate::validate::MAX_PROMPT_CHARS) characters |
//! | `duration` (alias `seconds`) | number or numeric string | seconds; the model's range |
//! | `resolution` | string | the model's resolutions |
//! | `aspect_ratio` | string | the model's aspect ratios |
//! | `seed` | integer | models that take it |
//! | `negative_prompt` | string | models that take it |
//! | `sound`, `watermark` | boolean | `wave-3-0-video` only |
//!
//! **`seconds`.** OpenAI-style clients send `seconds` as a string (`"8"`, wire-formats §7.2) and
//! new-api reads `seconds` before `duration` (wire-formats §7.1), so both keys are accepted, each
//! as a JSON number or a string holding a finite decimal number. They fill the one field
//! [`CreateVideoRequest::duration`] and it is sent on as `duration`. Both keys with the same value
//! are accepted; both with different values are a decode error whose message names `'seconds'`
//! (and whose path is the second of the two keys).
//!
//! **Nulls.** An explicit `null` is the same as an absent field: `None` for the optional fields,
//! an empty string for `model` and `prompt` (so that validation, not the decoder, reports them as
//! required, naming the field).
//!
//! **Unknown fields are ignored, and kept.** Fields this format does not know (`size`, `image`,
//! `metadata`, ...) are not validated and do not fail the request; they are kept in
//! [`CreateVideoRequest::extra`] and serialized again at the top level, so a gateway can pass them
//! through to an upstream that knows them (as new-api does with `metadata`) or drop them. Refusing
//! them would break clients that send the fields of neighbouring formats for no benefit.
//!
//! Decoding checks types (a `seed` that is not an integer, a `sound` that is not a boolean, a
//! repeated known key are decode errors); [`validate`](crate::validate()) checks the values
//! against the model.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The body of `POST /v1/video/generations` (docs/api.md §2.8). See the [module](self) documentation for
/// the decoding rules.
///
/// ```
/// use tollgate_generic_tasks::CreateVideoRequest;
///
/// let request: CreateVideoRequest = serde_json::from_str(
///     r#"{"model":"wave-3-0-video","prompt":"A lighthouse at dusk","seconds":"8",
///         "sound":true,"seed":null,"size":"1280x720"}"#,
/// )?;
/// assert_eq!(request.duration, Some(8.0));
/// assert_eq!(request.sound, Some(true));
/// assert_eq!(request.seed, None);
/// assert_eq!(request.extra["size"], "1280x720");
///
/// // `seconds` is sent on as `duration`; unknown fields stay, absent ones stay absent.
/// assert_eq!(
///     serde_json::to_string(&request)?,
///     r#"{"model":"wave-3-0-video","prompt":"A lighthouse at dusk","duration":8.0,"sound":true,"size":"1280x720"}"#
/// );
///
/// // Two different durations are refused, naming `seconds`.
/// let err = serde_json::from_str::<CreateVideoRequest>(
///     r#"{"model":"omni","prompt":"x","duration":4,"seconds":"8"}"#,
/// )
/// .unwrap_err();
/// assert!(err.to_string().contains("'seconds'"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CreateVideoRequest {
    /// The model id, e.g. `wave-3-0-video`; empty when absent or `null`.
    pub model: String,
    /// What to generate; empty when absent or `null`.
    pub prompt: String,
    /// The asked length in seconds, from `duration` or its alias `seconds`; `None` means the
    /// model's default. A fractional value is rounded up by validation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    /// The asked resolution; `None` means the model's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    /// The asked aspect ratio; `None` means the model's own choice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aspect_ratio: Option<String>,
    /// A random seed (models that take it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// What not to generate (models that take it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub negative_prompt: Option<String>,
    /// Whether to generate sound (`wave-3-0-video`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sound: Option<bool>,
    /// Whether to add a watermark (`wave-3-0-video`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watermark: Option<bool>,
    /// The fields this format does not know, kept for passthrough; never holds a known key after
    /// decoding.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateVideoRequest {
    /// A request with only the required fields set.
    ///
    /// ```
    /// use tollgate_generic_tasks::CreateVideoRequest;
    ///
    /// let request = CreateVideoRequest::new("omni", "A red kite");
    /// assert_eq!(serde_json::to_string(&request)?, r#"{"model":"omni","prompt":"A red kite"}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(model: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            prompt: prompt.into(),
            duration: None,
            resolution: None,
            aspect_ratio: None,
            seed: None,
            negative_prompt: None,
            sound: None,
            watermark: None,
            extra: Map::new(),
        }
    }
}

impl<'de> Deserialize<'de> for CreateVideoRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RequestVisitor)
    }
}

struct RequestVisitor;

/// Whether a known key was already seen, to refuse repeats like serde's derived decoders do.
#[derive(Default)]
struct Seen {
    model: bool,
    prompt: bool,
    resolution: bool,
    aspect_ratio: bool,
    seed: bool,
    negative_prompt: bool,
    sound: bool,
    watermark: bool,
}

fn first<E: de::Error>(seen: &mut bool, key: &'static str) -> Result<(), E> {
    if std::mem::replace(seen, true) {
        Err(E::duplicate_field(key))
    } else {
        Ok(())
    }
}

impl<'de> Visitor<'de> for RequestVisitor {
    type Value = CreateVideoRequest;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a video generation request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut req = CreateVideoRequest::new("", "");
        let mut seen = Seen::default();
        // `Some(value)` once the key was seen; the value itself may be `None` (null).
        let mut duration: Option<Option<f64>> = None;
        let mut seconds: Option<Option<f64>> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "model" => {
                    first(&mut seen.model, "model")?;
                    req.model = map.next_value::<Option<String>>()?.unwrap_or_default();
                }
                "prompt" => {
                    first(&mut seen.prompt, "prompt")?;
                    req.prompt = map.next_value::<Option<String>>()?.unwrap_or_default();
                }
                "duration" => {
                    if duration.is_some() {
                        return Err(de::Error::duplicate_field("duration"));
                    }
                    duration = Some(map.next_value_seed(SecondsSeed {
                        key: "duration",
                        other_key: "seconds",
                        other: seconds.flatten(),
                    })?);
                }
                "seconds" => {
                    if seconds.is_some() {
                        return Err(de::Error::duplicate_field("seconds"));
                    }
                    seconds = Some(map.next_value_seed(SecondsSeed {
                        key: "seconds",
                        other_key: "duration",
                        other: duration.flatten(),
                    })?);
                }
                "resolution" => {
                    first(&mut seen.resolution, "resolution")?;
                    req.resolution = map.next_value()?;
                }
                "aspect_ratio" => {
                    first(&mut seen.aspect_ratio, "aspect_ratio")?;
                    req.aspect_ratio = map.next_value()?;
                }
                "seed" => {
                    first(&mut seen.seed, "seed")?;
                    req.seed = map.next_value()?;
                }
                "negative_prompt" => {
                    first(&mut seen.negative_prompt, "negative_prompt")?;
                    req.negative_prompt = map.next_value()?;
                }
                "sound" => {
                    first(&mut seen.sound, "sound")?;
                    req.sound = map.next_value()?;
                }
                "watermark" => {
                    first(&mut seen.watermark, "watermark")?;
                    req.watermark = map.next_value()?;
                }
                _ => {
                    let value: Value = map.next_value()?;
                    req.extra.insert(key, value);
                }
            }
        }
        req.duration = duration.flatten().or(seconds.flatten());
        Ok(req)
    }
}

/// Decodes `duration` or `seconds` (a number, a numeric string or `null`) and refuses a value
/// that differs from the other key's, from inside the value so that the error carries its path.
struct SecondsSeed {
    key: &'static str,
    other_key: &'static str,
    other: Option<f64>,
}

impl<'de> DeserializeSeed<'de> for SecondsSeed {
    type Value = Option<f64>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl SecondsSeed {
    fn check<E: de::Error>(&self, value: f64) -> Result<Option<f64>, E> {
        match self.other {
            Some(other) if other != value => {
                let (seconds, duration) = if self.key == "seconds" {
                    (value, other)
                } else {
                    (other, value)
                };
                Err(E::custom(format!(
                    "'seconds' ({seconds}) conflicts with 'duration' ({duration}); 'seconds' is \
                     an alias of 'duration', send one of them"
                )))
            }
            _ => Ok(Some(value)),
        }
    }
}

impl<'de> Visitor<'de> for SecondsSeed {
    type Value = Option<f64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' (alias of '{}') as a number of seconds or a numeric string",
            self.key, self.other_key
        )
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        // Precision loss only beyond 2^53 seconds, far outside every range.
        self.check(v as f64)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.check(v as f64)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.check(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() && !v.is_empty() => self.check(x),
            _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}
