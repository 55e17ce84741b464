//! The OpenAI-compatible embeddings wire format, `POST /v1/embeddings` (wire-formats §2,
//! docs/api.md §2.6), without any I/O.
//!
//! This crate describes one wire format and nothing else:
//!
//! - [`request`]: [`EmbeddingRequest`] and its [`EmbeddingInput`] (a string, an array of strings,
//!   an array of token ids, or an array of token-id arrays);
//! - [`response`]: [`EmbeddingResponse`], [`Embedding`], [`EmbeddingVector`] and
//!   [`EmbeddingUsage`];
//! - [`encoding`]: the two vector encodings, `float` (a JSON array) and `base64` (little-endian
//!   `float32` bytes), see [`encode_base64`] and [`decode_base64`];
//! - [`relayed`]: an upstream's answer read in place and passed on in the shape the client asked
//!   for, see [`RelayedResponse`];
//! - [`dimensions`]: shortening a vector to fewer dimensions and renormalising it, see
//!   [`shorten`];
//! - [`model`]: what the format knows about the model families, see [`model_family`];
//! - [`validate`](mod@validate): the structural and token-count rules, each failure reported as a
//!   [`FieldError`] that names the field (a JSON path such as `input[3]`) and the [`Rule`] it broke.
//!
//! Every type both serializes and deserializes, so a Rust client can reuse them. Token counting is
//! not part of the format: the caller counts tokens and hands the counts to
//! [`validate_token_counts`].
//!
//! # Example
//!
//! Decode a request, check it against its model family, and answer it in the requested encoding:
//!
//! ```
//! use tollgate_embeddings::{
//!     model_family, validate, Embedding, EmbeddingRequest, EmbeddingResponse, EmbeddingUsage,
//!     EmbeddingVector, EncodingFormat,
//! };
//!
//! let body = r#"{
//!     "model": "text-embedding-3-small",
//!     "input": ["first text", "second text"],
//!     "encoding_format": "base64",
//!     "dimensions": 256
//! }"#;
//! let request: EmbeddingRequest = serde_json::from_str(body)?;
//! assert_eq!(request.input.len(), 2);
//! validate(&request, model_family(&request.model))?;
//!
//! // A request that breaks a rule is refused with the field and the rule named.
//! let bad: EmbeddingRequest =
//!     serde_json::from_str(r#"{"model": "text-embedding-3-small", "input": ["a", ""]}"#)?;
//! let err = validate(&bad, model_family(&bad.model)).unwrap_err();
//! assert_eq!(err.field, "input[1]");
//! assert_eq!(err.rule.code(), "empty_string");
//! assert_eq!(err.to_string(), "'input[1]' must not be an empty string");
//!
//! // Answer with one vector per input, in the encoding the client asked for.
//! let format = request.encoding_format_or_default();
//! assert_eq!(format, EncodingFormat::Base64);
//! let data = vec![
//!     Embedding::new(0, EmbeddingVector::encode(&[0.6, 0.8], format)),
//!     Embedding::new(1, EmbeddingVector::encode(&[1.0, 0.0], format)),
//! ];
//! let usage = EmbeddingUsage { prompt_tokens: 4, total_tokens: 4 };
//! let response = EmbeddingResponse::new("text-embedding-3-small", data, usage);
//! assert_eq!(response.data[1].embedding.to_floats()?, vec![1.0, 0.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod dimensions;
pub mod encoding;
mod lift;
pub mod model;
pub mod relayed;
pub mod request;
pub mod response;
pub mod validate;

pub use dimensions::shorten;
pub use encoding::{
    EncodingError, EncodingFormat, base64_dimensions, decode_base64, encode_base64,
    float_array_dimensions, is_base64_alphabet,
};
pub use model::{ModelFamily, model_family};
pub use relayed::{
    AnswerError, AnswerShape, RelayedEmbedding, RelayedResponse, RelayedVector, VectorText,
};
pub use request::{EmbeddingInput, EmbeddingRequest, InputItem};
pub use response::{
    EMBEDDING_OBJECT, Embedding, EmbeddingResponse, EmbeddingUsage, EmbeddingVector, LIST_OBJECT,
};
pub use validate::{
    FieldError, MAX_BATCH_ITEMS, MAX_TOKENS_PER_INPUT, MAX_TOKENS_PER_REQUEST, Rule, validate,
    validate_input_token_counts, validate_token_counts,
};
