//! The two encodings of an embedding vector on the wire (wire-formats §2).
//!
//! - `float` (the default): a JSON array of numbers.
//! - `base64`: a string holding the raw `float32` array, IEEE-754, 4 bytes per dimension in
//!   little-endian order, no header, encoded with the standard base64 alphabet and padding. This
//!   is what the official Python SDK decodes with `np.frombuffer(base64.b64decode(s),
//!   dtype="float32")`; the byte length is always 4 × the number of dimensions.
//!
//! Note that the official Python SDK sends `encoding_format: "base64"` even when its caller did
//! not ask for it (wire-formats §2), so a server must be ready to answer in base64 at any time.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

/// The `encoding_format` field of a request: how the vectors of the response are encoded.
///
/// wire-formats §2: `float` (the default) or `base64`; any other value is a decode error.
///
/// ```
/// use tollgate_embeddings::EncodingFormat;
///
/// let format: EncodingFormat = serde_json::from_str(r#""base64""#)?;
/// assert_eq!(format, EncodingFormat::Base64);
/// assert_eq!(EncodingFormat::default(), EncodingFormat::Float);
/// assert!(serde_json::from_str::<EncodingFormat>(r#""base32""#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum EncodingFormat {
    /// A JSON array of numbers (`"float"`).
    #[default]
    Float,
    /// A base64 string of little-endian `float32` bytes (`"base64"`).
    Base64,
}

impl EncodingFormat {
    /// The value as it appears on the wire: `"float"` or `"base64"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Float => "float",
            Self::Base64 => "base64",
        }
    }
}

impl std::fmt::Display for EncodingFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a base64 embedding could not be turned back into floats.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodingError {
    /// The string is not standard, padded base64.
    #[error("embedding is not valid base64: {reason}")]
    InvalidBase64 {
        /// What the base64 decoder objected to.
        reason: String,
    },
    /// The decoded bytes do not split into whole `float32` values (wire-formats §2: the byte
    /// length is 4 × the number of dimensions).
    #[error("embedding has {bytes} bytes, which is not a multiple of 4 (one float32 is 4 bytes)")]
    LengthNotMultipleOfFour {
        /// The number of decoded bytes.
        bytes: usize,
    },
    /// A float vector that is not a JSON array of numbers.
    #[error("embedding is neither an array of numbers nor a base64 string")]
    NotAVector,
    /// A vector decoded to be converted or shortened holds NaN or an infinity, which JSON
    /// cannot write (it would become `null`).
    #[error("embedding holds a value that is not a finite number")]
    NotFinite,
    /// A float vector whose numbers do not read as `float32` values.
    #[error("embedding's numbers are not float32 values: {reason}")]
    InvalidNumbers {
        /// What the JSON reader objected to.
        reason: String,
    },
}

/// Encodes a vector as base64 of its little-endian `float32` bytes, standard alphabet with padding
/// (wire-formats §2).
///
/// Every bit pattern survives, including `-0.0`, infinities and NaN payloads.
///
/// ```
/// use tollgate_embeddings::encode_base64;
///
/// assert_eq!(encode_base64(&[1.0, -2.0]), "AACAPwAAAMA=");
/// assert_eq!(encode_base64(&[]), "");
/// ```
pub fn encode_base64(values: &[f32]) -> String {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    STANDARD.encode(bytes)
}

/// Decodes a base64 embedding (standard alphabet with padding) into its `float32` values, read
/// little-endian (wire-formats §2).
///
/// Fails when the text is not canonical padded base64, or when the decoded byte length is not a
/// multiple of 4.
///
/// ```
/// use tollgate_embeddings::{decode_base64, EncodingError};
///
/// assert_eq!(decode_base64("AACAPwAAAMA=")?, vec![1.0, -2.0]);
/// assert_eq!(
///     decode_base64("AAAA"), // three bytes
///     Err(EncodingError::LengthNotMultipleOfFour { bytes: 3 })
/// );
/// # Ok::<(), EncodingError>(())
/// ```
pub fn decode_base64(s: &str) -> Result<Vec<f32>, EncodingError> {
    let bytes = STANDARD
        .decode(s)
        .map_err(|e| EncodingError::InvalidBase64 {
            reason: e.to_string(),
        })?;
    let (chunks, rest) = bytes.as_chunks::<4>();
    if !rest.is_empty() {
        return Err(EncodingError::LengthNotMultipleOfFour { bytes: bytes.len() });
    }
    Ok(chunks.iter().map(|c| f32::from_le_bytes(*c)).collect())
}

/// The number of `float32` values in a base64 embedding, checked exactly as [`decode_base64`]
/// checks it (canonical padded base64 of the standard alphabet, whole floats) but without
/// decoding: a vector that is passed on in the encoding it came in needs only the check.
///
/// ```
/// use tollgate_embeddings::{base64_dimensions, EncodingError};
///
/// assert_eq!(base64_dimensions("AACAPwAAAMA=")?, 2);
/// assert_eq!(base64_dimensions("")?, 0);
/// assert_eq!(
///     base64_dimensions("AAAA"),
///     Err(EncodingError::LengthNotMultipleOfFour { bytes: 3 })
/// );
/// assert!(base64_dimensions("AACAPwAAAMB=").is_err()); // trailing bits set: not canonical
/// # Ok::<(), EncodingError>(())
/// ```
pub fn base64_dimensions(s: &str) -> Result<usize, EncodingError> {
    let invalid = |reason: String| EncodingError::InvalidBase64 { reason };
    let text = s.as_bytes();
    if !text.len().is_multiple_of(4) {
        return Err(invalid(format!(
            "{} characters, not a multiple of 4 (padding is required)",
            text.len()
        )));
    }
    let padding = text
        .iter()
        .rev()
        .take(2)
        .take_while(|&&c| c == b'=')
        .count();
    let data = &text[..text.len() - padding];
    if !is_base64_alphabet(data)
        && let Some(at) = data.iter().position(|&c| sextet(c).is_none())
    {
        return Err(invalid(format!("invalid character at offset {at}")));
    }
    // The last character's unused low bits must be zero (what an encoder writes).
    let unused_bits_clear = match (padding, data.last().and_then(|&c| sextet(c))) {
        (1, Some(last)) => last & 0b11 == 0,
        (2, Some(last)) => last & 0b1111 == 0,
        _ => true,
    };
    if !unused_bits_clear {
        return Err(invalid("trailing bits are not zero".into()));
    }
    let bytes = text.len() / 4 * 3 - padding;
    if !bytes.is_multiple_of(4) {
        return Err(EncodingError::LengthNotMultipleOfFour { bytes });
    }
    Ok(bytes / 4)
}

/// Whether every byte of `text` is of the standard base64 alphabet (no padding). Branch-free per
/// byte so that the compiler vectorizes it: a 1,536-dimension vector is 8 KB, checked on every
/// response that passes one on (a per-byte `match` was a sixteenth of the billed relay's CPU).
pub fn is_base64_alphabet(text: &[u8]) -> bool {
    text.chunks(64).all(|chunk| {
        chunk.iter().fold(true, |ok, &c| {
            ok & ((c.wrapping_sub(b'A') < 26)
                | (c.wrapping_sub(b'a') < 26)
                | (c.wrapping_sub(b'0') < 10)
                | (c == b'+')
                | (c == b'/'))
        })
    })
}

/// The number of values in a float vector as JSON text, checked a number at a time against
/// JSON's number grammar by the scanner that lifts vectors out of an answer
/// (`lift::number_array`: digits eight bytes at a step) — one reading of a vector, wherever it
/// is met. A 1,536-value vector is 15 KB, checked on every answer that passes one on
/// (docs/decisions.md, "Embeddings passed through").
///
/// ```
/// use serde_json::value::RawValue;
/// use tollgate_embeddings::{float_array_dimensions, EncodingError};
///
/// let raw = |s: &str| RawValue::from_string(s.to_owned());
/// assert_eq!(float_array_dimensions(&raw("[0.5, -1e-3,2]")?)?, 3);
/// assert_eq!(float_array_dimensions(&raw("[ ]")?)?, 0);
/// assert_eq!(float_array_dimensions(&raw("[1,null]")?), Err(EncodingError::NotAVector));
/// assert_eq!(float_array_dimensions(&raw("[[1]]")?), Err(EncodingError::NotAVector));
/// assert_eq!(float_array_dimensions(&raw("1")?), Err(EncodingError::NotAVector));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn float_array_dimensions(value: &serde_json::value::RawValue) -> Result<usize, EncodingError> {
    let text = value.get().as_bytes();
    match text.first() {
        Some(b'[') => match crate::lift::number_array(text, 0) {
            Some((close, count)) if close + 1 == text.len() => Ok(count),
            _ => Err(EncodingError::NotAVector),
        },
        _ => Err(EncodingError::NotAVector),
    }
}

/// The value of a character of the standard base64 alphabet.
fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The check agrees with the decoder on encodings, their mutations and their truncations.
        #[test]
        fn the_check_agrees_with_the_decoder(
            values in proptest::collection::vec(any::<f32>(), 0..8),
            cut in 0usize..40,
            at in 0usize..40,
            with in proptest::sample::select(b"A/+=9z_- ".to_vec()),
        ) {
            let mut text = encode_base64(&values).into_bytes();
            if let Some(c) = text.get_mut(at) {
                *c = with;
            }
            text.truncate(text.len().saturating_sub(cut % 6));
            let Ok(text) = String::from_utf8(text) else {
                return Err(TestCaseError::fail("the mutations are ASCII"));
            };
            let decoded = decode_base64(&text);
            let checked = base64_dimensions(&text);
            prop_assert_eq!(decoded.as_ref().map(Vec::len).ok(), checked.as_ref().ok().copied(), "{:?}", text);
            if let (Err(EncodingError::LengthNotMultipleOfFour { bytes: a }), Err(EncodingError::LengthNotMultipleOfFour { bytes: b })) = (&decoded, &checked) {
                prop_assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn known_vector_encodes_as_documented() {
        assert_eq!(encode_base64(&[1.0, -2.0]), "AACAPwAAAMA=");
    }

    #[test]
    fn format_names_match_the_wire() {
        assert_eq!(EncodingFormat::Float.to_string(), "float");
        assert_eq!(EncodingFormat::Base64.as_str(), "base64");
    }
}
