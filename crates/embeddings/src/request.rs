//! The request body of `POST /v1/embeddings` (wire-formats §2, docs/api.md §2.6).
//!
//! | Field | Type | Notes |
//! |---|---|---|
//! | `model` | string | required |
//! | `input` | string \| string[] \| int[] \| int[][] | required; see [`EmbeddingInput`] |
//! | `encoding_format` | `"float"` (default) \| `"base64"` | see [`EncodingFormat`] |
//! | `dimensions` | integer ≥ 1 | only `text-embedding-3` and later models |
//! | `user` | string | an end-user id, passed through |
//!
//! **Unknown fields are ignored.** The upstream schema says `additionalProperties: false`, but the
//! official SDKs add request fields over time; refusing them would break clients for no benefit,
//! so decoding is lenient here and strict only about the fields it knows.
//!
//! Decoding checks types only. The value rules (non-empty input, at most 2048 items, the
//! `dimensions` range, ...) live in [`validate`](crate::validate()) so that each failure can name
//! its field and rule.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::encoding::EncodingFormat;

/// The body of `POST /v1/embeddings`.
///
/// ```
/// use tollgate_embeddings::{EmbeddingInput, EmbeddingRequest, EncodingFormat};
///
/// let request: EmbeddingRequest = serde_json::from_str(
///     r#"{"model":"text-embedding-3-large","input":"hello","encoding_format":"base64","extra":1}"#,
/// )?;
/// assert_eq!(request.input, EmbeddingInput::Text("hello".into()));
/// assert_eq!(request.encoding_format, Some(EncodingFormat::Base64));
///
/// // Absent optional fields stay absent when the request is sent on.
/// let outgoing = EmbeddingRequest::new("text-embedding-3-small", "hi");
/// assert_eq!(
///     serde_json::to_string(&outgoing)?,
///     r#"{"model":"text-embedding-3-small","input":"hi"}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "EmbeddingsRequest")
)]
pub struct EmbeddingRequest {
    /// The model id, e.g. `text-embedding-3-small`.
    #[cfg_attr(feature = "schema", schemars(extend("examples" = ["text-embedding-3-small"])))]
    pub model: String,
    /// What to embed: one input or a batch.
    pub input: EmbeddingInput,
    /// How the response encodes vectors; absent means [`EncodingFormat::Float`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding_format: Option<EncodingFormat>,
    /// Shorten the vectors to this many dimensions (`text-embedding-3` models only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub dimensions: Option<u32>,
    /// An identifier of the end user, for abuse monitoring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl EmbeddingRequest {
    /// A request with only the required fields set.
    pub fn new(model: impl Into<String>, input: impl Into<EmbeddingInput>) -> Self {
        Self {
            model: model.into(),
            input: input.into(),
            encoding_format: None,
            dimensions: None,
            user: None,
        }
    }

    /// The encoding the response must use: `encoding_format`, or `float` when it is absent
    /// (wire-formats §2).
    pub fn encoding_format_or_default(&self) -> EncodingFormat {
        self.encoding_format.unwrap_or_default()
    }
}

/// The `input` field: one input, or a batch of inputs (wire-formats §2).
///
/// | JSON | Variant | Inputs |
/// |---|---|---|
/// | `"text"` | [`Text`](Self::Text) | 1 |
/// | `["a", "b"]` | [`Texts`](Self::Texts) | one per string |
/// | `[1, 2, 3]` | [`Tokens`](Self::Tokens) | 1 (a single pre-tokenised input) |
/// | `[[1, 2], [3]]` | [`TokenBatches`](Self::TokenBatches) | one per token array |
///
/// An empty array `[]` decodes as an empty [`Texts`](Self::Texts), so that validation refuses it
/// as empty input (rule [`Empty`](crate::Rule::Empty)) rather than the decoder as a type error.
/// An array must hold items of one kind; a mixed array such as `["a", 1]` is a decode error that
/// names the first offending item. Token ids are integers from 0 to 4294967295.
///
/// Serialization writes the plain JSON form of each variant (an untagged enum). Decoding needs a
/// self-describing format such as JSON.
///
/// ```
/// use tollgate_embeddings::EmbeddingInput;
///
/// let batch: EmbeddingInput = serde_json::from_str("[[1, 2], [3]]")?;
/// assert_eq!(batch, EmbeddingInput::TokenBatches(vec![vec![1, 2], vec![3]]));
/// assert_eq!(batch.len(), 2);
///
/// let empty: EmbeddingInput = serde_json::from_str("[]")?;
/// assert!(empty.is_empty());
///
/// let mixed = serde_json::from_str::<EmbeddingInput>(r#"["a", 1]"#).unwrap_err();
/// assert!(mixed.to_string().contains("'input[1]'"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum EmbeddingInput {
    /// One text.
    Text(String),
    /// A batch of texts.
    Texts(Vec<String>),
    /// One input given as token ids.
    Tokens(Vec<u32>),
    /// A batch of inputs, each given as token ids.
    TokenBatches(Vec<Vec<u32>>),
}

/// One input of an [`EmbeddingInput`], borrowed: a text or a token-id array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputItem<'a> {
    /// A text to be tokenised.
    Text(&'a str),
    /// Token ids, already tokenised.
    Tokens(&'a [u32]),
}

impl EmbeddingInput {
    /// The number of inputs, which is the number of vectors in the response: 1 for a single text
    /// or a single token array, the array length for a batch.
    pub fn len(&self) -> usize {
        match self {
            Self::Text(_) | Self::Tokens(_) => 1,
            Self::Texts(texts) => texts.len(),
            Self::TokenBatches(batches) => batches.len(),
        }
    }

    /// Whether there are no inputs at all (an empty batch). An empty string or an empty token
    /// array is still one (invalid) input.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the input is a batch (an array of strings or of token arrays), whose items are
    /// addressed as `input[i]`; a single text or token array is addressed as `input`.
    pub fn is_batch(&self) -> bool {
        matches!(self, Self::Texts(_) | Self::TokenBatches(_))
    }

    /// The JSON path of input number `index`: `input[index]` in a batch, `input` otherwise.
    pub fn path(&self, index: usize) -> String {
        if self.is_batch() {
            format!("input[{index}]")
        } else {
            "input".to_owned()
        }
    }

    /// The inputs in order, one per response vector.
    ///
    /// ```
    /// use tollgate_embeddings::{EmbeddingInput, InputItem};
    ///
    /// let input = EmbeddingInput::Texts(vec!["a".into(), "b".into()]);
    /// let items: Vec<_> = input.items().collect();
    /// assert_eq!(items, vec![InputItem::Text("a"), InputItem::Text("b")]);
    /// ```
    pub fn items(&self) -> impl ExactSizeIterator<Item = InputItem<'_>> {
        match self {
            Self::Text(text) => Items::Texts(std::slice::from_ref(text).iter()),
            Self::Texts(texts) => Items::Texts(texts.iter()),
            Self::Tokens(tokens) => Items::Tokens(std::slice::from_ref(tokens).iter()),
            Self::TokenBatches(batches) => Items::Tokens(batches.iter()),
        }
    }
}

/// The iterator behind [`EmbeddingInput::items`].
enum Items<'a> {
    Texts(std::slice::Iter<'a, String>),
    Tokens(std::slice::Iter<'a, Vec<u32>>),
}

impl<'a> Iterator for Items<'a> {
    type Item = InputItem<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::Texts(texts) => texts.next().map(|t| InputItem::Text(t)),
            Self::Tokens(batches) => batches.next().map(|t| InputItem::Tokens(t)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Self::Texts(texts) => texts.size_hint(),
            Self::Tokens(batches) => batches.size_hint(),
        }
    }
}

impl ExactSizeIterator for Items<'_> {}

impl From<String> for EmbeddingInput {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for EmbeddingInput {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Vec<String>> for EmbeddingInput {
    fn from(texts: Vec<String>) -> Self {
        Self::Texts(texts)
    }
}

impl From<Vec<&str>> for EmbeddingInput {
    fn from(texts: Vec<&str>) -> Self {
        Self::Texts(texts.into_iter().map(str::to_owned).collect())
    }
}

impl From<Vec<u32>> for EmbeddingInput {
    fn from(tokens: Vec<u32>) -> Self {
        Self::Tokens(tokens)
    }
}

impl From<Vec<Vec<u32>>> for EmbeddingInput {
    fn from(batches: Vec<Vec<u32>>) -> Self {
        Self::TokenBatches(batches)
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding. Written by hand rather than derived (`#[serde(untagged)]`) for two reasons: `[]` must
// decode (as an empty batch) and the errors must say what was wrong and where, instead of
// "data did not match any variant of untagged enum".

/// Never pre-allocate more than this many items on the strength of a size hint.
const MAX_PREALLOCATED: usize = 2048;

impl<'de> Deserialize<'de> for EmbeddingInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(InputVisitor)
    }
}

struct InputVisitor;

impl<'de> Visitor<'de> for InputVisitor {
    type Value = EmbeddingInput;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "'input' as a string, an array of strings, an array of token ids, \
             or an array of token-id arrays",
        )
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(EmbeddingInput::Text(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(EmbeddingInput::Text(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let capacity = seq.size_hint().unwrap_or(0).min(MAX_PREALLOCATED);
        let Some(first) = seq.next_element::<Item>()? else {
            return Ok(EmbeddingInput::Texts(Vec::new()));
        };
        let first_kind = first.kind();
        let mut index = 1;
        let mut next = |seq: &mut A| -> Result<Option<Item>, A::Error> {
            let item = seq.next_element::<Item>()?;
            if let Some(item) = &item
                && item.kind() != first_kind
            {
                return Err(de::Error::custom(format_args!(
                    "'input[{index}]' is {} but 'input[0]' is {first_kind}; an array 'input' must \
                     hold only strings, only token ids, or only token-id arrays",
                    item.kind()
                )));
            }
            index += 1;
            Ok(item)
        };
        match first {
            Item::Text(text) => {
                let mut texts = Vec::with_capacity(capacity);
                texts.push(text);
                while let Some(item) = next(&mut seq)? {
                    if let Item::Text(text) = item {
                        texts.push(text);
                    }
                }
                Ok(EmbeddingInput::Texts(texts))
            }
            Item::Token(token) => {
                let mut tokens = Vec::with_capacity(capacity);
                tokens.push(token);
                while let Some(item) = next(&mut seq)? {
                    if let Item::Token(token) = item {
                        tokens.push(token);
                    }
                }
                Ok(EmbeddingInput::Tokens(tokens))
            }
            Item::Tokens(first_tokens) => {
                let mut batches = Vec::with_capacity(capacity);
                batches.push(first_tokens);
                while let Some(item) = next(&mut seq)? {
                    if let Item::Tokens(tokens) = item {
                        batches.push(tokens);
                    }
                }
                Ok(EmbeddingInput::TokenBatches(batches))
            }
        }
    }
}

/// One element of an array `input`, before the array's kind is known.
enum Item {
    Text(String),
    Token(u32),
    Tokens(Vec<u32>),
}

impl Item {
    fn kind(&self) -> ItemKind {
        match self {
            Self::Text(_) => ItemKind::Text,
            Self::Token(_) => ItemKind::Token,
            Self::Tokens(_) => ItemKind::Tokens,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemKind {
    Text,
    Token,
    Tokens,
}

impl fmt::Display for ItemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Text => "a string",
            Self::Token => "a token id",
            Self::Tokens => "a token-id array",
        })
    }
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ItemVisitor)
    }
}

struct ItemVisitor;

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = Item;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an 'input' item as a string, a token id, or an array of token ids")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Item::Text(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Item::Text(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        token_from_u64(v).map(Item::Token)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        token_from_i64(v).map(Item::Token)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let capacity = seq.size_hint().unwrap_or(0).min(MAX_PREALLOCATED);
        let mut tokens = Vec::with_capacity(capacity);
        while let Some(TokenId(token)) = seq.next_element()? {
            tokens.push(token);
        }
        Ok(Item::Tokens(tokens))
    }
}

/// A token id inside a token-id array.
struct TokenId(u32);

impl<'de> Deserialize<'de> for TokenId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TokenIdVisitor)
    }
}

struct TokenIdVisitor;

impl<'de> Visitor<'de> for TokenIdVisitor {
    type Value = TokenId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a token id (an integer from 0 to 4294967295)")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        token_from_u64(v).map(TokenId)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        token_from_i64(v).map(TokenId)
    }
}

fn token_from_u64<E: de::Error>(v: u64) -> Result<u32, E> {
    u32::try_from(v).map_err(|_| {
        E::custom(format_args!(
            "token id {v} is out of range; token ids are integers from 0 to 4294967295"
        ))
    })
}

fn token_from_i64<E: de::Error>(v: i64) -> Result<u32, E> {
    u32::try_from(v).map_err(|_| {
        E::custom(format_args!(
            "token id {v} is out of range; token ids are integers from 0 to 4294967295"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn len_counts_inputs_not_tokens() {
        assert_eq!(EmbeddingInput::from("abc").len(), 1);
        assert_eq!(EmbeddingInput::from(vec![1u32, 2, 3]).len(), 1);
        assert_eq!(EmbeddingInput::from(vec!["a", "b"]).len(), 2);
        assert_eq!(
            EmbeddingInput::from(vec![vec![1u32], vec![2], vec![3]]).len(),
            3
        );
        assert!(EmbeddingInput::Texts(Vec::new()).is_empty());
        assert!(EmbeddingInput::TokenBatches(Vec::new()).is_empty());
        assert!(!EmbeddingInput::Text(String::new()).is_empty());
        assert!(!EmbeddingInput::Tokens(Vec::new()).is_empty());
    }

    #[test]
    fn paths_follow_the_shape() {
        assert_eq!(EmbeddingInput::from("a").path(0), "input");
        assert_eq!(EmbeddingInput::from(vec![1u32]).path(0), "input");
        assert_eq!(EmbeddingInput::from(vec!["a", "b"]).path(1), "input[1]");
        assert_eq!(EmbeddingInput::from(vec![vec![1u32]]).path(0), "input[0]");
    }

    #[test]
    fn items_cover_every_shape() {
        let tokens = EmbeddingInput::from(vec![1u32, 2]);
        assert_eq!(
            tokens.items().collect::<Vec<_>>(),
            vec![InputItem::Tokens(&[1, 2])]
        );
        let batches = EmbeddingInput::from(vec![vec![1u32], vec![2, 3]]);
        assert_eq!(
            batches.items().collect::<Vec<_>>(),
            vec![InputItem::Tokens(&[1]), InputItem::Tokens(&[2, 3])]
        );
        assert_eq!(
            EmbeddingInput::from("x").items().collect::<Vec<_>>(),
            vec![InputItem::Text("x")]
        );
        assert_eq!(EmbeddingInput::Texts(Vec::new()).items().len(), 0);
    }

    #[test]
    fn default_format_is_float() {
        let mut request = EmbeddingRequest::new("m", "x");
        assert_eq!(request.encoding_format_or_default(), EncodingFormat::Float);
        request.encoding_format = Some(EncodingFormat::Base64);
        assert_eq!(request.encoding_format_or_default(), EncodingFormat::Base64);
    }
}
