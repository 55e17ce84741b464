//! An upstream's answer passed on to a client (docs/decisions.md, "Embeddings passed through"):
//! read in place, each vector checked, and written again in the shape the client asked for.
//!
//! A gateway that asks its channel for the encoding its client asked for gets vectors it need not
//! touch. [`RelayedResponse::read`] parses only the envelope — `data`'s items keep their vectors
//! as the upstream's own JSON text ([`VectorText`]; arrays of numbers and strings lifted out
//! before the parser sees them, `crate::lift`) — and [`RelayedResponse::write`] copies each
//! vector verbatim when it is already in the asked encoding at the asked length, after checking
//! that it is one (a base64 string of whole `float32` values, or an array of numbers, counted).
//! Only a vector in the other encoding, or longer than the asked `dimensions`, is decoded, then
//! shortened and encoded as [`EmbeddingResponse`] would write it.
//!
//! For every answer the written bytes are what decoding the whole answer and writing it with
//! [`EmbeddingResponse::to_json`] gives, whenever the upstream spells its numbers as `float32`'s
//! shortest form (as `serde_json` does); an upstream that spells them otherwise (more digits,
//! white space) has its spelling kept — the same values. `tests/wire.rs` holds the property.
//!
//! ```
//! use tollgate_embeddings::{AnswerShape, EmbeddingUsage, EncodingFormat, RelayedResponse};
//!
//! let upstream = br#"{"object":"list","model":"vendor-embed",
//!     "data":[{"object":"embedding","index":0,"embedding":[0.6,0.8]}],
//!     "usage":{"prompt_tokens":2,"total_tokens":2}}"#;
//! let answer = RelayedResponse::read(upstream)?;
//! assert_eq!(answer.usage, EmbeddingUsage::from_prompt_tokens(2));
//!
//! let shape = AnswerShape { inputs: 1, format: EncodingFormat::Float, dimensions: None };
//! assert_eq!(
//!     answer.write(&shape, "small")?,
//!     br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,0.8]}],"model":"small","usage":{"prompt_tokens":2,"total_tokens":2}}"#
//! );
//! let shape = AnswerShape { inputs: 1, format: EncodingFormat::Base64, dimensions: Some(1) };
//! assert!(answer.write(&shape, "small")?.ends_with(br#""embedding":"AACAPw=="}],"model":"small","usage":{"prompt_tokens":2,"total_tokens":2}}"#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::dimensions::shorten;
use crate::encoding::{
    EncodingError, EncodingFormat, base64_dimensions, decode_base64, float_array_dimensions,
};
use crate::lift::LiftedVector;
use crate::response::{
    EMBEDDING_OBJECT, EmbeddingResponse, EmbeddingUsage, EmbeddingVector, LIST_OBJECT, ListWriter,
};

/// What the client asked of the answer: one vector per input, in `format`, `dimensions` long
/// when it named a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerShape {
    /// The number of inputs, so of vectors.
    pub inputs: usize,
    /// The encoding the client asked for (`float` when it named none).
    pub format: EncodingFormat,
    /// The length the client asked for, if any.
    pub dimensions: Option<usize>,
}

/// Why an upstream's answer cannot be passed on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The body is not an embeddings answer.
    #[error("not an embeddings answer: {0}")]
    Json(String),
    /// More or fewer vectors than inputs.
    #[error("{vectors} embeddings for {inputs} inputs")]
    Count {
        /// Vectors in the answer.
        vectors: usize,
        /// Inputs asked.
        inputs: usize,
    },
    /// An `index` past the inputs.
    #[error("embedding index {0} out of range")]
    OutOfRange(u32),
    /// An `index` given twice.
    #[error("embedding index {0} repeated")]
    Repeated(u32),
    /// A vector that is not one, or cannot be decoded.
    #[error("embedding {index}: {error}")]
    Vector {
        /// The vector's index.
        index: usize,
        /// What is wrong with it.
        error: EncodingError,
    },
    /// A vector shorter than the asked `dimensions`.
    #[error("embedding {index} has {has} dimensions, {asked} were asked")]
    TooShort {
        /// The vector's index.
        index: usize,
        /// Its length.
        has: usize,
        /// The length asked.
        asked: usize,
    },
}

/// An upstream's embeddings answer, read in place: the envelope parsed, each vector still the
/// upstream's JSON text. A missing `object` or `model` is accepted (compatible servers omit
/// them; the client's answer names its own); `usage` is required, since it settles the charge.
#[derive(Debug)]
pub struct RelayedResponse<'a> {
    /// One item per input, in any order.
    pub data: Vec<RelayedEmbedding<'a>>,
    /// Token usage as the upstream counted it.
    pub usage: EmbeddingUsage,
}

/// One item of [`RelayedResponse::data`].
#[derive(Debug)]
pub struct RelayedEmbedding<'a> {
    /// The position of the input this vector belongs to.
    pub index: u32,
    /// The vector as the upstream wrote it.
    pub embedding: VectorText<'a>,
}

/// A vector's JSON text as the upstream wrote it.
#[derive(Debug)]
pub enum VectorText<'a> {
    /// Found by the JSON parser, in the answer.
    InPlace(&'a RawValue),
    /// Found by the JSON parser in the answer's envelope (a copy: see
    /// [`RelayedResponse::read`]).
    Copied(Box<RawValue>),
    /// A string with no escape and no control character in it, lifted out of the answer
    /// (quotes included): checked as base64 when read.
    Text(&'a str),
    /// An array of numbers, already checked and counted as it was lifted out of the answer.
    Numbers {
        /// The array's text, in the answer.
        json: &'a str,
        /// Its number of values.
        dimensions: usize,
    },
}

impl VectorText<'_> {
    /// The vector, checked ([`RelayedVector::check`]).
    pub fn check(&self) -> Result<RelayedVector<'_>, EncodingError> {
        match self {
            Self::InPlace(raw) => RelayedVector::check(raw),
            Self::Copied(raw) => RelayedVector::check(raw),
            Self::Text(json) => RelayedVector::check_unescaped_string(json),
            Self::Numbers { json, dimensions } => Ok(RelayedVector {
                format: EncodingFormat::Float,
                dimensions: *dimensions,
                json,
                verbatim: true,
            }),
        }
    }
}

/// The answer as its JSON parser reads it.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow)]
    data: Vec<WireItem<'a>>,
    usage: EmbeddingUsage,
}

#[derive(Deserialize)]
struct WireItem<'a> {
    index: u32,
    #[serde(borrow)]
    embedding: &'a RawValue,
}

/// A vector as the upstream wrote it, checked: its encoding, its length and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayedVector<'a> {
    /// The encoding the upstream used.
    pub format: EncodingFormat,
    /// The number of values.
    pub dimensions: usize,
    /// The JSON text (with the quotes of a base64 string).
    pub json: &'a str,
    /// Whether the text can be copied as it is: not a base64 string with escapes in it (a
    /// server that writes `/` as `\/`), which is unescaped and written again.
    pub verbatim: bool,
}

impl<'a> RelayedVector<'a> {
    /// Checks `value` as a vector: a string of canonical base64 of whole `float32` values, or an
    /// array of numbers.
    pub fn check(value: &'a RawValue) -> Result<Self, EncodingError> {
        match Self::check_string(value.get()) {
            Some(checked) => checked,
            None => Ok(Self {
                format: EncodingFormat::Float,
                dimensions: float_array_dimensions(value)?,
                json: value.get(),
                verbatim: true,
            }),
        }
    }

    /// Checks `json` as a base64 string, its escapes (if any) read first; `None` when it is no
    /// JSON string. A `\` is looked for with `memchr` (a base64 vector is 8 KB: a byte at a
    /// time cost a fortieth of a base64 request, `docs/benchmarks.md`).
    fn check_string(json: &'a str) -> Option<Result<Self, EncodingError>> {
        let text = json.strip_prefix('"')?.strip_suffix('"')?;
        if memchr::memchr(b'\\', text.as_bytes()).is_none() {
            return Some(Self::check_base64(json, text, true));
        }
        Some(unescape(json).and_then(|text| Self::check_base64(json, &text, false)))
    }

    /// Checks `json`, a string the lift found with no escape in it, as base64.
    fn check_unescaped_string(json: &'a str) -> Result<Self, EncodingError> {
        let text = json
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .ok_or(EncodingError::NotAVector)?;
        Self::check_base64(json, text, true)
    }

    /// Checks `text`, the inside of the string `json` with its escapes read, as base64;
    /// `verbatim` when `json` had no escape to read.
    fn check_base64(json: &'a str, text: &str, verbatim: bool) -> Result<Self, EncodingError> {
        base64_dimensions(text).map(|dimensions| Self {
            format: EncodingFormat::Base64,
            dimensions,
            json,
            verbatim,
        })
    }

    /// The values, decoded.
    pub fn to_floats(&self) -> Result<Vec<f32>, EncodingError> {
        match self.format {
            EncodingFormat::Base64 if self.verbatim => {
                decode_base64(&self.json[1..self.json.len() - 1])
            }
            EncodingFormat::Base64 => decode_base64(&unescape(self.json)?),
            EncodingFormat::Float => {
                serde_json::from_str(self.json).map_err(|e| EncodingError::InvalidNumbers {
                    reason: e.to_string(),
                })
            }
        }
    }

    /// The values, decoded and shortened to `dimensions` if asked (and renormalised). A value
    /// that is not a finite number is refused: JSON has none, and a shortened vector's norm
    /// would be lost.
    fn shortened(&self, index: usize, dimensions: Option<usize>) -> Result<Vec<f32>, AnswerError> {
        let mut values = self
            .to_floats()
            .map_err(|error| AnswerError::Vector { index, error })?;
        if !values.iter().all(|v| v.is_finite()) {
            return Err(AnswerError::Vector {
                index,
                error: EncodingError::NotFinite,
            });
        }
        if let Some(asked) = dimensions {
            if values.len() < asked {
                return Err(AnswerError::TooShort {
                    index,
                    has: values.len(),
                    asked,
                });
            }
            shorten(&mut values, asked);
        }
        Ok(values)
    }
}

fn json_error(e: serde_json::Error) -> AnswerError {
    AnswerError::Json(e.to_string())
}

/// A JSON string's text, unescaped.
fn unescape(json: &str) -> Result<String, EncodingError> {
    serde_json::from_str(json).map_err(|e| EncodingError::InvalidBase64 {
        reason: e.to_string(),
    })
}

impl<'a> RelayedResponse<'a> {
    /// Reads the envelope of `body`, leaving the vectors where they are: the vectors are first
    /// lifted out of the answer (`crate::lift`: an array checked and counted in one pass, a
    /// string found by `memchr`, where a JSON parser reads every byte a character at a time to
    /// find where they end) and the rest is parsed apart. What it reads is what
    /// [`RelayedResponse::read_whole`] reads (`tests/wire.rs`, the `upstream_answers` fuzz
    /// target).
    pub fn read(body: &'a [u8]) -> Result<Self, AnswerError> {
        let Some(lifted) = crate::lift::lift(body) else {
            return Self::read_whole(body);
        };
        let wire: Wire<'_> = serde_json::from_slice(&lifted.envelope).map_err(json_error)?;
        let data = (wire.data.into_iter())
            .map(|item| {
                // A bare number here is a lifted vector's position: `lift` lifts nothing from
                // an answer with a number of its own at such a key.
                let lifted = (item.embedding.get().bytes().all(|b| b.is_ascii_digit()))
                    .then(|| item.embedding.get().parse::<usize>().ok())
                    .flatten()
                    .and_then(|position| lifted.vectors.get(position));
                RelayedEmbedding {
                    index: item.index,
                    embedding: match lifted {
                        Some(&LiftedVector::Numbers(json, dimensions)) => {
                            VectorText::Numbers { json, dimensions }
                        }
                        Some(&LiftedVector::Text(json)) => VectorText::Text(json),
                        None => VectorText::Copied(item.embedding.to_owned()),
                    },
                }
            })
            .collect();
        Ok(Self {
            data,
            usage: wire.usage,
        })
    }

    /// Reads `body` whole with the JSON parser, the vectors left in place as its raw values:
    /// the reading [`RelayedResponse::read`] is held to, and its way for an answer with nothing
    /// to lift.
    pub fn read_whole(body: &'a [u8]) -> Result<Self, AnswerError> {
        let wire: Wire<'a> = serde_json::from_slice(body).map_err(json_error)?;
        Ok(Self {
            data: (wire.data.into_iter())
                .map(|item| RelayedEmbedding {
                    index: item.index,
                    embedding: VectorText::InPlace(item.embedding),
                })
                .collect(),
            usage: wire.usage,
        })
    }

    /// The vectors in input order, each checked: exactly one per input, indices `0..inputs`.
    pub fn in_order(&self, inputs: usize) -> Result<Vec<RelayedVector<'_>>, AnswerError> {
        if self.data.len() != inputs {
            return Err(AnswerError::Count {
                vectors: self.data.len(),
                inputs,
            });
        }
        let mut slots: Vec<Option<RelayedVector<'_>>> = vec![None; inputs];
        for item in &self.data {
            let slot = slots
                .get_mut(item.index as usize)
                .ok_or(AnswerError::OutOfRange(item.index))?;
            if slot.is_some() {
                return Err(AnswerError::Repeated(item.index));
            }
            let vector = item
                .embedding
                .check()
                .map_err(|error| AnswerError::Vector {
                    index: item.index as usize,
                    error,
                })?;
            *slot = Some(vector);
        }
        // Every slot is filled: as many distinct indices below `inputs` as there are inputs.
        Ok(slots.into_iter().flatten().collect())
    }

    /// The values of each vector in input order, shortened to the asked `dimensions`.
    pub fn floats(&self, shape: &AnswerShape) -> Result<Vec<Vec<f32>>, AnswerError> {
        self.in_order(shape.inputs)?
            .iter()
            .enumerate()
            .map(|(index, vector)| vector.shortened(index, shape.dimensions))
            .collect()
    }

    /// The client's answer, as [`EmbeddingResponse::to_json`] writes it, naming `model`: each
    /// vector copied as it came when it is in the asked encoding at the asked length, else
    /// decoded, shortened and encoded.
    pub fn write(&self, shape: &AnswerShape, model: &str) -> Result<Vec<u8>, AnswerError> {
        let vectors = self.in_order(shape.inputs)?;
        let text: usize = vectors.iter().map(|v| v.json.len()).sum();
        let mut out = ListWriter::new(LIST_OBJECT, text + 128 + 64 * vectors.len());
        for (index, vector) in vectors.iter().enumerate() {
            let position = u32::try_from(index).unwrap_or(u32::MAX);
            let as_asked = vector.format == shape.format
                && shape.dimensions.is_none_or(|d| d == vector.dimensions);
            if as_asked && vector.verbatim {
                out.item(EMBEDDING_OBJECT, position, |out| {
                    out.extend_from_slice(vector.json.as_bytes())
                });
            } else if as_asked {
                // Base64 with escapes: the same string, written without them.
                let text =
                    unescape(vector.json).map_err(|error| AnswerError::Vector { index, error })?;
                out.item(EMBEDDING_OBJECT, position, |out| {
                    EmbeddingResponse::write_vector(out, &EmbeddingVector::Base64(text))
                });
            } else {
                let values = vector.shortened(index, shape.dimensions)?;
                let encoded = EmbeddingVector::encode(&values, shape.format);
                out.item(EMBEDDING_OBJECT, position, |out| {
                    EmbeddingResponse::write_vector(out, &encoded)
                });
            }
        }
        Ok(out.finish(model, &self.usage))
    }
}
