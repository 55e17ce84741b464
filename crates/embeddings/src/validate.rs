//! The rules of the format and their checks (wire-formats §2).
//!
//! | Field | Rule | [`Rule`] |
//! |---|---|---|
//! | `model` | must not be empty | [`Required`](Rule::Required) |
//! | `input` | must not be an empty array | [`Empty`](Rule::Empty) |
//! | `input[i]` | no empty string in an array (a lone `""` is accepted) | [`EmptyString`](Rule::EmptyString) |
//! | `input`, `input[i]` | no empty token array | [`EmptyTokenArray`](Rule::EmptyTokenArray) |
//! | `input` | an array holds at most [`MAX_BATCH_ITEMS`] items | [`TooManyItems`](Rule::TooManyItems) |
//! | `dimensions` | only for families that support it | [`DimensionsUnsupported`](Rule::DimensionsUnsupported) |
//! | `dimensions` | from 1 to the native dimensions | [`DimensionsOutOfRange`](Rule::DimensionsOutOfRange) |
//! | `input`, `input[i]` | at most [`MAX_TOKENS_PER_INPUT`] tokens per input | [`TooManyTokens`](Rule::TooManyTokens) |
//! | `input` | at most [`MAX_TOKENS_PER_REQUEST`] tokens in all | [`TooManyTotalTokens`](Rule::TooManyTotalTokens) |
//!
//! Checking happens in two steps, because counting tokens needs a tokenizer and this crate has
//! none: [`validate`] checks the structure of a request, then the caller counts the tokens of each
//! input and checks them with [`validate_input_token_counts`] (or [`validate_token_counts`]).
//! Both report the **first** broken rule, in field order (`model`, `input`, `dimensions`) and
//! item order, as a [`FieldError`]; its `field` and `rule.code()` map directly onto the
//! `param` and `code` of an OpenAI error body (wire-formats §1.3).

use std::fmt;

use crate::model::ModelFamily;
use crate::request::{EmbeddingInput, EmbeddingRequest, InputItem};

/// wire-formats §2: an array `input` holds 1–2048 items.
///
/// This applies to every array: a batch of strings, a batch of token arrays, and a single token
/// array (whose items are token ids), as in the upstream schema.
pub const MAX_BATCH_ITEMS: usize = 2048;

/// wire-formats §2: at most 8192 tokens per input (all three model families).
pub const MAX_TOKENS_PER_INPUT: usize = 8192;

/// wire-formats §2: at most 300 000 tokens summed over all inputs of one request.
pub const MAX_TOKENS_PER_REQUEST: usize = 300_000;

/// A rule of the format, with a stable snake_case code (see [`Rule::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A required value is empty (`model: ""`).
    Required,
    /// `input` is an empty array.
    Empty,
    /// An input is an empty string.
    EmptyString,
    /// An input is an empty token array.
    EmptyTokenArray,
    /// An array holds more than [`MAX_BATCH_ITEMS`] items.
    TooManyItems,
    /// `dimensions` was given for a model family that does not support it.
    DimensionsUnsupported,
    /// `dimensions` is below 1 or above the family's native dimensions.
    DimensionsOutOfRange,
    /// One input has more than [`MAX_TOKENS_PER_INPUT`] tokens.
    TooManyTokens,
    /// All inputs together have more than [`MAX_TOKENS_PER_REQUEST`] tokens.
    TooManyTotalTokens,
}

impl Rule {
    /// Every rule, in the order of the table in the module documentation.
    pub const ALL: [Rule; 9] = [
        Rule::Required,
        Rule::Empty,
        Rule::EmptyString,
        Rule::EmptyTokenArray,
        Rule::TooManyItems,
        Rule::DimensionsUnsupported,
        Rule::DimensionsOutOfRange,
        Rule::TooManyTokens,
        Rule::TooManyTotalTokens,
    ];

    /// The stable machine-readable code of the rule, e.g. `"too_many_items"`.
    ///
    /// ```
    /// use tollgate_embeddings::Rule;
    ///
    /// assert_eq!(Rule::EmptyString.code(), "empty_string");
    /// assert_eq!(Rule::DimensionsOutOfRange.to_string(), "dimensions_out_of_range");
    /// ```
    pub const fn code(&self) -> &'static str {
        match self {
            Rule::Required => "required",
            Rule::Empty => "empty",
            Rule::EmptyString => "empty_string",
            Rule::EmptyTokenArray => "empty_token_array",
            Rule::TooManyItems => "too_many_items",
            Rule::DimensionsUnsupported => "dimensions_unsupported",
            Rule::DimensionsOutOfRange => "dimensions_out_of_range",
            Rule::TooManyTokens => "too_many_tokens",
            Rule::TooManyTotalTokens => "too_many_total_tokens",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A broken rule: which field (a JSON path such as `input`, `input[3]` or `dimensions`), which
/// rule, and a message for the API user that names both.
pub type FieldError = tollgate_field_error::FieldError<Rule>;

impl tollgate_field_error::Rule for Rule {
    fn code(&self) -> &'static str {
        Rule::code(self)
    }
}

/// Checks the structure of a request (no tokenizer needed) and returns the first broken rule.
///
/// `family` is the family of the model the request will be served by; the caller resolves the
/// public model name or alias to the upstream id and looks it up with
/// [`model_family`](crate::model_family()). `None` means an unknown family: then `dimensions` is
/// only checked to be at least 1, and the upstream has the last word.
///
/// The rules, in the order they are checked:
/// 1. `model` must not be empty.
/// 2. `input` must not be an empty array (wire-formats §2: arrays hold 1–2048 items), and no array
///    may hold more than [`MAX_BATCH_ITEMS`] items.
/// 3. No item of an array may be an empty string ("input cannot be an empty string"), and no
///    input an empty token array; the field is `input` for a single input and `input[i]` for
///    item `i` of a batch. A lone `input: ""` is accepted: LangChain's `OpenAIEmbeddings` sends
///    it for an empty document and needs a vector back (`docs/decisions.md`, "Embeddings").
/// 4. `dimensions`, when given, is only accepted by families that support it (wire-formats §2:
///    "only `text-embedding-3` and later models"), and must lie between 1 and the family's native
///    dimensions.
///
/// ```
/// use tollgate_embeddings::{model_family, validate, EmbeddingRequest, Rule};
///
/// let mut request = EmbeddingRequest::new("text-embedding-ada-002", "hello");
/// assert_eq!(validate(&request, model_family(&request.model)), Ok(()));
///
/// request.dimensions = Some(256);
/// let err = validate(&request, model_family(&request.model)).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("dimensions", Rule::DimensionsUnsupported));
/// ```
pub fn validate(req: &EmbeddingRequest, family: Option<ModelFamily>) -> Result<(), FieldError> {
    if req.model.is_empty() {
        return Err(FieldError::new(
            "model",
            Rule::Required,
            "'model' is required and must not be empty",
        ));
    }
    validate_input(&req.input)?;
    if let Some(dimensions) = req.dimensions {
        validate_dimensions(dimensions, &req.model, family)?;
    }
    Ok(())
}

fn validate_input(input: &EmbeddingInput) -> Result<(), FieldError> {
    let array_len = match input {
        EmbeddingInput::Text(_) => None,
        EmbeddingInput::Texts(texts) => Some(texts.len()),
        EmbeddingInput::Tokens(tokens) => Some(tokens.len()),
        EmbeddingInput::TokenBatches(batches) => Some(batches.len()),
    };
    if let Some(len) = array_len {
        // A single empty token array is one empty input; report it as such below.
        if len == 0 && !matches!(input, EmbeddingInput::Tokens(_)) {
            return Err(FieldError::new(
                "input",
                Rule::Empty,
                "'input' must not be empty",
            ));
        }
        if len > MAX_BATCH_ITEMS {
            return Err(FieldError::new(
                "input",
                Rule::TooManyItems,
                format!("'input' has {len} items; at most {MAX_BATCH_ITEMS} are allowed"),
            ));
        }
    }
    for (index, item) in input.items().enumerate() {
        let (empty, rule, what) = match item {
            InputItem::Text(text) => (
                text.is_empty() && array_len.is_some(),
                Rule::EmptyString,
                "an empty string",
            ),
            InputItem::Tokens(tokens) => (
                tokens.is_empty(),
                Rule::EmptyTokenArray,
                "an empty token array",
            ),
        };
        if empty {
            let field = input.path(index);
            let message = format!("'{field}' must not be {what}");
            return Err(FieldError::new(field, rule, message));
        }
    }
    Ok(())
}

fn validate_dimensions(
    dimensions: u32,
    model: &str,
    family: Option<ModelFamily>,
) -> Result<(), FieldError> {
    match family {
        Some(family) if !family.supports_dimensions => Err(FieldError::new(
            "dimensions",
            Rule::DimensionsUnsupported,
            "'dimensions' is only supported by text-embedding-3 models",
        )),
        Some(family) if dimensions == 0 || dimensions > family.native_dimensions => {
            Err(FieldError::new(
                "dimensions",
                Rule::DimensionsOutOfRange,
                format!(
                    "'dimensions' must be between 1 and {} for {model}",
                    family.native_dimensions
                ),
            ))
        }
        None if dimensions == 0 => Err(FieldError::new(
            "dimensions",
            Rule::DimensionsOutOfRange,
            "'dimensions' must be at least 1",
        )),
        _ => Ok(()),
    }
}

/// Checks token counts of a batch, `counts[i]` being the tokens of input `i`, named `input[i]`.
///
/// wire-formats §2: each input at most [`MAX_TOKENS_PER_INPUT`] tokens, all of them together at
/// most [`MAX_TOKENS_PER_REQUEST`]. The first input over its limit is reported; then the total.
/// When the request's input is a single string or token array, prefer
/// [`validate_input_token_counts`], which names that input `input`.
///
/// ```
/// use tollgate_embeddings::{validate_token_counts, Rule};
///
/// assert_eq!(validate_token_counts(&[10, 8192]), Ok(()));
/// let err = validate_token_counts(&[10, 8193]).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("input[1]", Rule::TooManyTokens));
/// ```
pub fn validate_token_counts(counts: &[usize]) -> Result<(), FieldError> {
    check_token_counts(counts, |index| format!("input[{index}]"))
}

/// Checks the token counts of `input`, `counts[i]` being the tokens of its input `i` (in the order
/// of [`EmbeddingInput::items`]), naming inputs by the shape of `input`: `input[i]` in a batch,
/// `input` for a single string or token array. The limits are those of
/// [`validate_token_counts`].
///
/// ```
/// use tollgate_embeddings::{validate_input_token_counts, EmbeddingInput};
///
/// let input = EmbeddingInput::Text("a very long text".into());
/// let err = validate_input_token_counts(&input, &[9000]).unwrap_err();
/// assert_eq!(err.field, "input");
/// assert_eq!(err.to_string(), "'input' has 9000 tokens; at most 8192 are allowed per input");
/// ```
pub fn validate_input_token_counts(
    input: &EmbeddingInput,
    counts: &[usize],
) -> Result<(), FieldError> {
    check_token_counts(counts, |index| input.path(index))
}

fn check_token_counts(counts: &[usize], path: impl Fn(usize) -> String) -> Result<(), FieldError> {
    if let Some((index, &count)) = counts
        .iter()
        .enumerate()
        .find(|&(_, &count)| count > MAX_TOKENS_PER_INPUT)
    {
        let field = path(index);
        let message = format!(
            "'{field}' has {count} tokens; at most {MAX_TOKENS_PER_INPUT} are allowed per input"
        );
        return Err(FieldError::new(field, Rule::TooManyTokens, message));
    }
    let total = counts
        .iter()
        .fold(0usize, |sum, &count| sum.saturating_add(count));
    if total > MAX_TOKENS_PER_REQUEST {
        return Err(FieldError::new(
            "input",
            Rule::TooManyTotalTokens,
            format!(
                "'input' has {total} tokens in total; at most {MAX_TOKENS_PER_REQUEST} are \
                 allowed per request"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_codes_are_unique_snake_case() {
        let codes: Vec<&str> = Rule::ALL.iter().map(Rule::code).collect();
        for (i, code) in codes.iter().enumerate() {
            assert!(
                code.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{code}"
            );
            assert!(!codes[..i].contains(code), "duplicate code {code}");
        }
    }

    #[test]
    fn an_input_over_its_limit_is_reported_before_the_total() {
        let err = check_token_counts(&[usize::MAX, usize::MAX], |i| format!("input[{i}]"));
        assert_eq!(
            err.map_err(|e| (e.field, e.rule)),
            Err(("input[0]".to_owned(), Rule::TooManyTokens))
        );
    }
}
