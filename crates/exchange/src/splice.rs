//! A string field of a JSON frame replaced in place: the one edit a relayed live-session event
//! takes (the session's model, the public name one way and the channel's the other —
//! docs/decisions.md, "Live voice sessions"). Every other byte of the frame stays as it came,
//! key order and spacing included: the frame is read with borrowed raw values and the new
//! string spliced at the old one's offset, never rebuilt from a tree of values.

use serde_json::value::RawValue;
use std::collections::HashMap;

/// A frame that is not the JSON object its path needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpliceError(pub String);

/// `frame` with the string at `path` (object keys, outermost first) replaced by `value`;
/// `None` when the frame has no string there (nothing to replace).
///
/// ```
/// use tollgate_exchange::splice::string_at;
///
/// let frame = r#"{"type":"session.created","session":{"model":"gpt-realtime-2025-08-28","voice":"marin"}}"#;
/// let out = string_at(frame, &["session", "model"], "voice-1").unwrap();
/// assert_eq!(out.as_deref(), Some(r#"{"type":"session.created","session":{"model":"voice-1","voice":"marin"}}"#));
/// assert_eq!(string_at(r#"{"type":"error"}"#, &["session", "model"], "x").unwrap(), None);
/// ```
pub fn string_at(frame: &str, path: &[&str], value: &str) -> Result<Option<String>, SpliceError> {
    let unread = |e: serde_json::Error| SpliceError(format!("not a JSON object: {e}"));
    let mut at: &str = frame;
    for key in path {
        let fields: HashMap<String, &RawValue> = match serde_json::from_str(at) {
            Ok(fields) => fields,
            // An object's member that is not an object holds no path.
            Err(_) if !std::ptr::eq(at, frame) => return Ok(None),
            Err(e) => return Err(unread(e)),
        };
        match fields.get(*key) {
            Some(raw) => at = raw.get(),
            None => return Ok(None),
        }
    }
    if !at.starts_with('"') {
        return Ok(None);
    }
    // `at` is a slice of `frame` (borrowed through every level): splice at its offset.
    let start = (at.as_ptr() as usize).checked_sub(frame.as_ptr() as usize);
    let (Some(before), Some(after)) = (
        start.and_then(|s| frame.get(..s)),
        start.and_then(|s| frame.get(s + at.len()..)),
    ) else {
        return Err(SpliceError("the field is not where the frame says".into()));
    };
    let quoted = serde_json::Value::String(value.to_owned()).to_string();
    Ok(Some([before, quoted.as_str(), after].concat()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_the_string_changes() {
        let frame = "{ \"setup\" : {\"model\":\"models/gemini-live\", \"generationConfig\":{}} }";
        let out = string_at(frame, &["setup", "model"], "models/upstream \"q\"").unwrap();
        assert_eq!(
            out.as_deref(),
            Some(
                "{ \"setup\" : {\"model\":\"models/upstream \\\"q\\\"\", \"generationConfig\":{}} }"
            )
        );
    }

    #[test]
    fn no_string_at_the_path_is_nothing_to_do() {
        assert_eq!(
            string_at(r#"{"setup":{"model":3}}"#, &["setup", "model"], "x").unwrap(),
            None
        );
        assert_eq!(
            string_at(r#"{"setup":"m"}"#, &["setup", "model"], "x").unwrap(),
            None
        );
        assert!(string_at("[1]", &["setup"], "x").is_err());
    }
}
