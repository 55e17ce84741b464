//! The "weak-validation" prompt flags (wire-formats §5.1): parameters appended to the text
//! prompt, as in the vendor's own sample
//! `"The kitten is yawning at the camera. --rs 720p --rt 16:9 --dur 5 --seed 11 --cf false --wm true"`.
//!
//! [`lift_inline_flags`] moves each recognised flag into its structured field and removes it
//! from the prompt, so that the clip generated (and billed) is the one asked for, and the flag
//! text never reaches the model as words to draw. A flag that contradicts the structured field
//! given beside it is refused: neither reading is safe to bill.
//!
//! | Short | Long | Field |
//! |---|---|---|
//! | `--rs` | `--resolution` | `resolution` |
//! | `--rt` | `--ratio` | `ratio` |
//! | `--dur` | `--duration` | `duration` |
//! | `--fps` | `--framespersecond` | `framespersecond` (kept in `extra`; not sent on: 24 is the only rate) |
//! | `--seed` | `--seed` | `seed` |
//! | `--cf` | `--camerafixed` | `camera_fixed` (kept in `extra`) |
//! | `--wm` | `--watermark` | `watermark` |
//! | — | `--frames` | `frames` (kept in `extra`) |
//!
//! ```
//! use tollgate_clip_tasks::{ContentItem, CreateTaskRequest, lift_inline_flags};
//!
//! let mut request = CreateTaskRequest::new(
//!     "clipgen-cn-2.0-260128",
//!     vec![ContentItem::text("A lighthouse at dusk --rs 480p --rt 16:9 --dur 7 --seed 11")],
//! );
//! lift_inline_flags(&mut request)?;
//! assert_eq!(request.content[0], ContentItem::text("A lighthouse at dusk"));
//! assert_eq!(request.resolution.as_deref(), Some("480p"));
//! assert_eq!(request.ratio.as_deref(), Some("16:9"));
//! assert_eq!((request.duration, request.seed), (Some(7), Some(11)));
//!
//! // A flag that contradicts an explicit field is refused, naming both.
//! let mut request = CreateTaskRequest::new(
//!     "clipgen-cn-2.0-260128",
//!     vec![ContentItem::text("Waves --dur 7")],
//! );
//! request.duration = Some(5);
//! let err = lift_inline_flags(&mut request).unwrap_err();
//! assert_eq!(err.field, "content[0].text");
//! # Ok::<(), tollgate_clip_tasks::FieldError>(())
//! ```

use crate::error::{FieldError, Rule};
use crate::request::{ContentItem, CreateTaskRequest};
use serde_json::Value;

/// The structured field a flag stands for, and the type of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Resolution,
    Ratio,
    Duration,
    FramesPerSecond,
    Seed,
    CameraFixed,
    Watermark,
    Frames,
}

impl Field {
    fn of(flag: &str) -> Option<Field> {
        Some(match flag {
            "--rs" | "--resolution" => Field::Resolution,
            "--rt" | "--ratio" => Field::Ratio,
            "--dur" | "--duration" => Field::Duration,
            "--fps" | "--framespersecond" => Field::FramesPerSecond,
            "--seed" => Field::Seed,
            "--cf" | "--camerafixed" => Field::CameraFixed,
            "--wm" | "--watermark" => Field::Watermark,
            "--frames" => Field::Frames,
            _ => return None,
        })
    }

    /// The request's field name.
    fn name(self) -> &'static str {
        match self {
            Field::Resolution => "resolution",
            Field::Ratio => "ratio",
            Field::Duration => "duration",
            Field::FramesPerSecond => "framespersecond",
            Field::Seed => "seed",
            Field::CameraFixed => "camera_fixed",
            Field::Watermark => "watermark",
            Field::Frames => "frames",
        }
    }

    /// The flag's value as the field's JSON value, or `None` when it has the wrong type.
    fn parse(self, raw: &str) -> Option<Value> {
        match self {
            Field::Resolution | Field::Ratio => Some(Value::from(raw)),
            Field::Duration | Field::FramesPerSecond | Field::Seed | Field::Frames => {
                raw.parse::<i64>().ok().map(Value::from)
            }
            Field::CameraFixed | Field::Watermark => match raw {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
        }
    }

    /// The value the request already has for the field.
    fn current(self, request: &CreateTaskRequest) -> Option<Value> {
        match self {
            Field::Resolution => request.resolution.clone().map(Value::from),
            Field::Ratio => request.ratio.clone().map(Value::from),
            Field::Duration => request.duration.map(Value::from),
            Field::Seed => request.seed.map(Value::from),
            Field::Watermark => request.watermark.map(Value::Bool),
            Field::FramesPerSecond | Field::CameraFixed | Field::Frames => request
                .extra
                .get(self.name())
                .filter(|v| !v.is_null())
                .cloned(),
        }
    }

    fn set(self, request: &mut CreateTaskRequest, value: Value) {
        match self {
            Field::Resolution => request.resolution = value.as_str().map(str::to_owned),
            Field::Ratio => request.ratio = value.as_str().map(str::to_owned),
            Field::Duration => request.duration = value.as_i64(),
            Field::Seed => request.seed = value.as_i64(),
            Field::Watermark => request.watermark = value.as_bool(),
            Field::FramesPerSecond | Field::CameraFixed | Field::Frames => {
                request.extra.insert(self.name().to_owned(), value);
            }
        }
    }
}

/// Moves the prompt's inline flags into the request's fields and out of its text items.
///
/// A flag is a recognised `--name` followed by a value, separated by whitespace; anything else
/// (an unknown `--word`, a flag without a value) is left in the prompt as text. The same field
/// given twice inline with different values, or inline and as a structured field with different
/// values, is refused with [`Rule::Conflicting`] on the text item; a value of the wrong type
/// (`--dur seven`) with [`Rule::Malformed`].
pub fn lift_inline_flags(request: &mut CreateTaskRequest) -> Result<(), FieldError> {
    let mut lifted: Vec<(Field, Value, String)> = Vec::new();
    for (index, item) in request.content.iter_mut().enumerate() {
        let ContentItem::Text { text } = item else {
            continue;
        };
        let path = format!("content[{index}].text");
        let mut kept: Vec<&str> = Vec::new();
        let mut found: Vec<(Field, Value)> = Vec::new();
        let mut words = text.split_whitespace().peekable();
        while let Some(word) = words.next() {
            let Some(field) = Field::of(word) else {
                kept.push(word);
                continue;
            };
            let Some(raw) = words.peek().copied().filter(|v| !v.starts_with("--")) else {
                kept.push(word);
                continue;
            };
            words.next();
            let value = field.parse(raw).ok_or_else(|| {
                FieldError::new(
                    path.clone(),
                    Rule::Malformed,
                    format!("'{path}': the inline flag {word} has the value {raw:?}, which is not a valid '{}'", field.name()),
                )
            })?;
            found.push((field, value));
        }
        if found.is_empty() {
            continue;
        }
        *text = kept.join(" ");
        lifted.extend(found.into_iter().map(|(f, v)| (f, v, path.clone())));
    }
    // Each lifted value meets what the request already says — its structured field, or a flag
    // lifted before it (already set): the same value is fine, another is a conflict.
    for (field, value, path) in lifted {
        match field.current(request) {
            Some(given) if given != value => {
                return Err(conflict(&path, field.name(), &given, &value));
            }
            _ => field.set(request, value),
        }
    }
    Ok(())
}

fn conflict(path: &str, field: &str, given: &Value, inline: &Value) -> FieldError {
    FieldError::new(
        path,
        Rule::Conflicting,
        format!(
            "'{path}' sets '{field}' to {inline} with an inline flag, which contradicts '{field}': {given}; give it once"
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn lifted(text: &str) -> CreateTaskRequest {
        let mut request = CreateTaskRequest::new("m", vec![ContentItem::text(text)]);
        let outcome = lift_inline_flags(&mut request);
        assert!(outcome.is_ok(), "{outcome:?}");
        request
    }

    #[test]
    fn the_vendors_sample_lifts_every_flag() {
        let r = lifted(
            "The kitten is yawning at the camera. --rs 720p --rt 16:9 --dur 5 --seed 11 --cf false --wm true",
        );
        assert_eq!(
            r.content[0],
            ContentItem::text("The kitten is yawning at the camera.")
        );
        assert_eq!(r.resolution.as_deref(), Some("720p"));
        assert_eq!(r.ratio.as_deref(), Some("16:9"));
        assert_eq!(r.duration, Some(5));
        assert_eq!(r.seed, Some(11));
        assert_eq!(r.watermark, Some(true));
        assert_eq!(r.extra["camera_fixed"], Value::Bool(false));
    }

    #[test]
    fn long_forms_fps_and_frames() {
        let r = lifted(
            "Rain --resolution 480p --duration 8 --framespersecond 24 --frames 193 --camerafixed true",
        );
        assert_eq!(r.content[0], ContentItem::text("Rain"));
        assert_eq!(
            (r.resolution.as_deref(), r.duration),
            (Some("480p"), Some(8))
        );
        assert_eq!(r.extra["framespersecond"], 24);
        assert_eq!(r.extra["frames"], 193);
        assert_eq!(r.extra["camera_fixed"], true);
    }

    #[test]
    fn unknown_flags_and_flags_without_values_stay_text() {
        let r = lifted("A poster that says --no-limits and --dur");
        assert_eq!(
            r.content[0],
            ContentItem::text("A poster that says --no-limits and --dur")
        );
        assert_eq!(r.duration, None);
    }

    #[test]
    fn agreeing_with_a_structured_field_is_fine_contradicting_it_is_not() {
        let mut r = CreateTaskRequest::new("m", vec![ContentItem::text("x --rs 720p")]);
        r.resolution = Some("720p".into());
        assert!(lift_inline_flags(&mut r).is_ok());
        let mut r = CreateTaskRequest::new("m", vec![ContentItem::text("x --rs 480p")]);
        r.resolution = Some("720p".into());
        let err = lift_inline_flags(&mut r).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.rule),
            ("content[0].text", Rule::Conflicting)
        );
        assert!(err.message.contains("resolution"), "{}", err.message);
    }

    #[test]
    fn the_same_flag_twice_must_agree() {
        let mut r = CreateTaskRequest::new("m", vec![ContentItem::text("x --dur 5 --duration 5")]);
        assert!(lift_inline_flags(&mut r).is_ok());
        assert_eq!(r.duration, Some(5));
        let mut r = CreateTaskRequest::new("m", vec![ContentItem::text("x --dur 5 --dur 9")]);
        assert_eq!(
            lift_inline_flags(&mut r).unwrap_err().rule,
            Rule::Conflicting
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_is_malformed() {
        for text in ["x --dur seven", "x --wm yes", "x --seed 1.5"] {
            let mut r = CreateTaskRequest::new("m", vec![ContentItem::text(text)]);
            let err = lift_inline_flags(&mut r).unwrap_err();
            assert_eq!(err.rule, Rule::Malformed, "{text}");
        }
    }
}
