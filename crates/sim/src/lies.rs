//! An upstream that lies about usage (`KnobSettings::report_usage`): every usage figure the
//! simulator reports — tokens, characters, seconds, video tokens — is replaced by one number,
//! in whole answers and in each streamed frame. The gateway must charge what it can justify,
//! not what it is told (`docs/decisions.md`, "Bounded settlement").

use bytes::Bytes;
use serde_json::Value;

/// The keys that carry a usage figure in the simulated formats.
const USAGE_KEYS: &[&str] = &[
    "prompt_tokens",
    "total_tokens",
    "usage_characters",
    "duration",
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "totalTokenCount",
    "completion_tokens",
    "seconds",
    "tokenCount",
];

/// Replaces every usage figure in `value` with `figure`.
pub(crate) fn overstate(value: &mut Value, figure: u64) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if USAGE_KEYS.contains(&key.as_str()) && v.is_number() {
                    *v = Value::from(figure);
                } else if USAGE_KEYS.contains(&key.as_str())
                    && v.as_str().is_some_and(|s| s.parse::<f64>().is_ok())
                {
                    // The generic video format writes its seconds as a string.
                    *v = Value::from(figure.to_string());
                } else {
                    overstate(v, figure);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| overstate(v, figure)),
        _ => {}
    }
}

/// The same inside one piece of a stream: the JSON object between its first `{` and last `}`
/// (an SSE `data:` frame, or a piece of a streamed JSON array), the framing around it kept.
pub(crate) fn overstate_piece(piece: &Bytes, figure: u64) -> Bytes {
    let (Some(start), Some(end)) = (
        piece.iter().position(|b| *b == b'{'),
        piece.iter().rposition(|b| *b == b'}'),
    ) else {
        return piece.clone();
    };
    let Ok(mut value) = serde_json::from_slice::<Value>(&piece[start..=end]) else {
        return piece.clone();
    };
    overstate(&mut value, figure);
    let mut out = piece[..start].to_vec();
    out.extend_from_slice(value.to_string().as_bytes());
    out.extend_from_slice(&piece[end + 1..]);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_replaced_in_answers_and_frames() {
        let mut v = serde_json::json!({"usage": {"prompt_tokens": 3, "total_tokens": 3}, "data": [{"index": 0}]});
        overstate(&mut v, 10_000_000);
        assert_eq!(v["usage"]["prompt_tokens"], 10_000_000);
        assert_eq!(v["data"][0]["index"], 0);
        let frame = Bytes::from_static(b"data: {\"extra_info\":{\"usage_characters\":44}}\n\n");
        assert_eq!(
            overstate_piece(&frame, 7),
            Bytes::from_static(b"data: {\"extra_info\":{\"usage_characters\":7}}\n\n")
        );
        let piece = Bytes::from_static(b"\r\n,\r\n{\"usageMetadata\":{\"promptTokenCount\":5}}]");
        assert_eq!(
            overstate_piece(&piece, 9),
            Bytes::from_static(b"\r\n,\r\n{\"usageMetadata\":{\"promptTokenCount\":9}}]")
        );
    }
}
