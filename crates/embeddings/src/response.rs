//! The response body of `POST /v1/embeddings` (wire-formats §2).
//!
//! ```json
//! {
//!   "object": "list",
//!   "data": [{"object": "embedding", "index": 0, "embedding": [0.0123, -0.0456, 0.0789]}],
//!   "model": "text-embedding-3-small",
//!   "usage": {"prompt_tokens": 5, "total_tokens": 5}
//! }
//! ```
//!
//! With `encoding_format: "base64"` each `embedding` is a base64 string instead of an array (see
//! [`crate::encoding`]). `data` holds one item per input, and `index` is the position of that
//! input in the request.
//!
//! When decoding, a missing `object` field is accepted and filled in (`"list"`, `"embedding"`),
//! since some compatible servers omit it; `usage` is required, because it settles the charge.

use serde::{Deserialize, Serialize};

use crate::encoding::{
    EncodingError, EncodingFormat, decode_base64, encode_base64, is_base64_alphabet,
};

/// Appends `value` as JSON. Writing our own types into a `Vec` cannot fail (floats that JSON
/// cannot hold become `null`, as `serde_json::to_vec` writes them).
fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(&mut *out, value);
}

/// The `object` value of an [`EmbeddingResponse`].
pub const LIST_OBJECT: &str = "list";
/// The `object` value of an [`Embedding`].
pub const EMBEDDING_OBJECT: &str = "embedding";

fn list_object() -> String {
    LIST_OBJECT.to_owned()
}

fn embedding_object() -> String {
    EMBEDDING_OBJECT.to_owned()
}

/// The body of a successful `POST /v1/embeddings`.
///
/// ```
/// use tollgate_embeddings::{EmbeddingResponse, EmbeddingVector};
///
/// let response: EmbeddingResponse = serde_json::from_str(r#"{
///     "object": "list",
///     "data": [{"object": "embedding", "index": 0, "embedding": "AACAPwAAAMA="}],
///     "model": "text-embedding-3-small",
///     "usage": {"prompt_tokens": 5, "total_tokens": 5}
/// }"#)?;
/// assert_eq!(response.data[0].embedding, EmbeddingVector::Base64("AACAPwAAAMA=".into()));
/// assert_eq!(response.data[0].embedding.to_floats()?, vec![1.0, -2.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "EmbeddingsResponse")
)]
pub struct EmbeddingResponse {
    /// Always `"list"`.
    #[serde(default = "list_object")]
    #[cfg_attr(feature = "schema", schemars(required, extend("const" = "list")))]
    pub object: String,
    /// One embedding per input, in input order.
    pub data: Vec<Embedding>,
    /// The model that produced the embeddings.
    pub model: String,
    /// Token usage of the request.
    pub usage: EmbeddingUsage,
}

impl EmbeddingResponse {
    /// The response as JSON, byte for byte what `serde_json::to_vec` writes, except faster: a
    /// base64 vector is copied as it is, since its alphabet needs no escaping, where the
    /// serializer would scan its kilobytes for characters to escape.
    ///
    /// ```
    /// use tollgate_embeddings::{Embedding, EmbeddingResponse, EmbeddingUsage, EmbeddingVector};
    ///
    /// let response = EmbeddingResponse::new(
    ///     "text-embedding-3-small",
    ///     vec![Embedding::new(0, EmbeddingVector::Base64("AACAPwAAAMA=".into()))],
    ///     EmbeddingUsage::from_prompt_tokens(5),
    /// );
    /// assert_eq!(response.to_json(), serde_json::to_vec(&response)?);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn to_json(&self) -> Vec<u8> {
        let vectors: usize = self
            .data
            .iter()
            .map(|item| match &item.embedding {
                EmbeddingVector::Base64(text) => text.len(),
                EmbeddingVector::Float(values) => values.len() * 12,
            })
            .sum();
        let mut out = ListWriter::new(&self.object, vectors + 128 + 64 * self.data.len());
        for item in &self.data {
            out.item(&item.object, item.index, |out| {
                Self::write_vector(out, &item.embedding)
            });
        }
        out.finish(&self.model, &self.usage)
    }

    /// Appends `vector` as JSON, a base64 vector copied as it is (its alphabet needs no
    /// escaping).
    pub(crate) fn write_vector(out: &mut Vec<u8>, vector: &EmbeddingVector) {
        match vector {
            EmbeddingVector::Base64(text)
                if is_base64_alphabet(text.trim_end_matches('=').as_bytes()) =>
            {
                out.push(b'"');
                out.extend_from_slice(text.as_bytes());
                out.push(b'"');
            }
            vector => write_json(out, vector),
        }
    }

    /// A response with `object: "list"`.
    pub fn new(model: impl Into<String>, data: Vec<Embedding>, usage: EmbeddingUsage) -> Self {
        Self {
            object: list_object(),
            data,
            model: model.into(),
            usage,
        }
    }
}

/// Writes an [`EmbeddingResponse`] as JSON a piece at a time, in its fields' order: the one
/// writer of the answer's envelope, for whole responses and for answers passed through
/// ([`crate::relayed`]).
pub(crate) struct ListWriter {
    out: Vec<u8>,
    items: usize,
}

impl ListWriter {
    /// Opens the list (`object`, then `data`), with room for `capacity` bytes.
    pub(crate) fn new(object: &str, capacity: usize) -> Self {
        let mut out = Vec::with_capacity(capacity);
        out.extend_from_slice(b"{\"object\":");
        write_json(&mut out, object);
        out.extend_from_slice(b",\"data\":[");
        Self { out, items: 0 }
    }

    /// Appends one item of `data`; `vector` writes its `embedding`.
    pub(crate) fn item(&mut self, object: &str, index: u32, vector: impl FnOnce(&mut Vec<u8>)) {
        if self.items > 0 {
            self.out.push(b',');
        }
        self.items += 1;
        self.out.extend_from_slice(b"{\"object\":");
        write_json(&mut self.out, object);
        self.out.extend_from_slice(b",\"index\":");
        write_json(&mut self.out, &index);
        self.out.extend_from_slice(b",\"embedding\":");
        vector(&mut self.out);
        self.out.push(b'}');
    }

    /// Closes `data` and writes `model` and `usage`.
    pub(crate) fn finish(mut self, model: &str, usage: &EmbeddingUsage) -> Vec<u8> {
        self.out.extend_from_slice(b"],\"model\":");
        write_json(&mut self.out, model);
        self.out.extend_from_slice(b",\"usage\":");
        write_json(&mut self.out, usage);
        self.out.push(b'}');
        self.out
    }
}

/// One item of [`EmbeddingResponse::data`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Embedding {
    /// Always `"embedding"`.
    #[serde(default = "embedding_object")]
    #[cfg_attr(feature = "schema", schemars(extend("const" = "embedding")))]
    pub object: String,
    /// The position of the input this vector belongs to.
    pub index: u32,
    /// The vector, as floats or as base64.
    pub embedding: EmbeddingVector,
}

impl Embedding {
    /// An item with `object: "embedding"`.
    pub fn new(index: u32, embedding: EmbeddingVector) -> Self {
        Self {
            object: embedding_object(),
            index,
            embedding,
        }
    }
}

/// An embedding vector in one of its two wire forms (wire-formats §2): a JSON array of numbers
/// (`encoding_format: "float"`) or a base64 string of little-endian `float32` bytes
/// (`encoding_format: "base64"`).
///
/// Note: JSON has no NaN or infinity; `serde_json` writes such floats as `null`, which no client
/// can decode. Producers must send finite values (the base64 form carries any bit pattern).
///
/// ```
/// use tollgate_embeddings::{EmbeddingVector, EncodingFormat};
///
/// let v = EmbeddingVector::encode(&[1.0, -2.0], EncodingFormat::Base64);
/// assert_eq!(v, EmbeddingVector::Base64("AACAPwAAAMA=".into()));
/// assert_eq!(v.format(), EncodingFormat::Base64);
/// assert_eq!(v.to_floats()?, vec![1.0, -2.0]);
/// assert_eq!(
///     v.to_format(EncodingFormat::Float)?,
///     EmbeddingVector::Float(vec![1.0, -2.0])
/// );
/// # Ok::<(), tollgate_embeddings::EncodingError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum EmbeddingVector {
    /// `encoding_format: "float"`: the components as numbers.
    Float(Vec<f32>),
    /// `encoding_format: "base64"`: base64 of the little-endian `float32` bytes.
    Base64(String),
}

impl EmbeddingVector {
    /// The components as floats, whatever the wire form.
    ///
    /// Fails if a base64 vector is not valid padded base64 or its byte length is not a multiple
    /// of 4.
    pub fn to_floats(&self) -> Result<Vec<f32>, EncodingError> {
        match self {
            Self::Float(values) => Ok(values.clone()),
            Self::Base64(text) => decode_base64(text),
        }
    }

    /// Consumes the vector and returns its components, decoding base64 if needed (no copy for
    /// the float form).
    pub fn into_floats(self) -> Result<Vec<f32>, EncodingError> {
        match self {
            Self::Float(values) => Ok(values),
            Self::Base64(text) => decode_base64(&text),
        }
    }

    /// Encodes `values` in the given wire form.
    pub fn encode(values: &[f32], format: EncodingFormat) -> EmbeddingVector {
        match format {
            EncodingFormat::Float => Self::Float(values.to_vec()),
            EncodingFormat::Base64 => Self::Base64(encode_base64(values)),
        }
    }

    /// The wire form this vector is in.
    pub fn format(&self) -> EncodingFormat {
        match self {
            Self::Float(_) => EncodingFormat::Float,
            Self::Base64(_) => EncodingFormat::Base64,
        }
    }

    /// The same vector in the given wire form (e.g. the upstream answered in floats but the client
    /// asked for base64). Fails only when decoding an invalid base64 vector.
    pub fn to_format(&self, format: EncodingFormat) -> Result<EmbeddingVector, EncodingError> {
        if self.format() == format {
            return Ok(self.clone());
        }
        Ok(Self::encode(&self.to_floats()?, format))
    }
}

/// The `usage` object of a response: input tokens (embeddings produce no output tokens, so both
/// figures are normally equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EmbeddingUsage {
    /// Tokens in the inputs.
    pub prompt_tokens: u64,
    /// All tokens billed for the request.
    pub total_tokens: u64,
}

impl EmbeddingUsage {
    /// Usage for `tokens` input tokens: `prompt_tokens == total_tokens == tokens`.
    pub fn from_prompt_tokens(tokens: u64) -> Self {
        Self {
            prompt_tokens: tokens,
            total_tokens: tokens,
        }
    }
}

// Decoded by hand rather than derived (`#[serde(untagged)]`): the derived form buffers the value
// and, for a base64 vector, first fails to read it as an array — formatting the whole string
// (kilobytes) into an error message it then throws away, on every response.
impl<'de> serde::Deserialize<'de> for EmbeddingVector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(VectorVisitor)
    }
}

/// Never pre-allocate more components than this on the strength of a size hint.
const MAX_PREALLOCATED_COMPONENTS: usize = 4096;

struct VectorVisitor;

impl<'de> serde::de::Visitor<'de> for VectorVisitor {
    type Value = EmbeddingVector;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of numbers or a base64 string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(EmbeddingVector::Base64(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(EmbeddingVector::Base64(v))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut floats = Vec::with_capacity(
            seq.size_hint()
                .unwrap_or(0)
                .min(MAX_PREALLOCATED_COMPONENTS),
        );
        while let Some(x) = seq.next_element::<f32>()? {
            floats.push(x);
        }
        Ok(EmbeddingVector::Float(floats))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_fill_in_object() {
        let response = EmbeddingResponse::new(
            "m",
            vec![Embedding::new(0, EmbeddingVector::Float(vec![1.0]))],
            EmbeddingUsage::from_prompt_tokens(3),
        );
        assert_eq!(response.object, "list");
        assert_eq!(response.data[0].object, "embedding");
        assert_eq!(response.usage.total_tokens, 3);
    }

    #[test]
    fn to_format_converts_both_ways() -> Result<(), EncodingError> {
        let floats = EmbeddingVector::Float(vec![1.0, -2.0]);
        let b64 = floats.to_format(EncodingFormat::Base64)?;
        assert_eq!(b64, EmbeddingVector::Base64("AACAPwAAAMA=".into()));
        assert_eq!(b64.to_format(EncodingFormat::Float)?, floats);
        assert_eq!(floats.to_format(EncodingFormat::Float)?, floats);
        assert_eq!(b64.clone().into_floats()?, vec![1.0, -2.0]);
        Ok(())
    }

    #[test]
    fn bad_base64_vector_fails_to_convert() {
        let bad = EmbeddingVector::Base64("AAAA".into());
        assert_eq!(
            bad.to_floats(),
            Err(EncodingError::LengthNotMultipleOfFour { bytes: 3 })
        );
        assert!(bad.to_format(EncodingFormat::Float).is_err());
    }
}
