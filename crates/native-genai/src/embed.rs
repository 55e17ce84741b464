//! The native embeddings methods (`models.embedContent`, `models.batchEmbedContents`): their
//! requests and answers, and the rules a request must keep to before it is embedded
//! (`docs/api.md` §2.10). Only text is embedded: each request's `content` becomes one text, its
//! parts' texts joined by a newline, and one vector comes back per request.
//!
//! camelCase on the wire, snake_case accepted (as the vendor's own parser does); unknown fields
//! are kept in `extra`.
//!
//! ```
//! use tollgate_native_genai::embed::{BatchEmbedContentsRequest, EmbedContentRequest, texts};
//!
//! let one: EmbedContentRequest = serde_json::from_str(
//!     r#"{"content": {"parts": [{"text": "What is the meaning of life?"}]}, "outputDimensionality": 768}"#,
//! ).unwrap();
//! let batch = texts(std::slice::from_ref(&one), "text-embedding-3-small", false).unwrap();
//! assert_eq!(batch.texts, ["What is the meaning of life?"]);
//! assert_eq!(batch.output_dimensionality, Some(768));
//!
//! let many: BatchEmbedContentsRequest = serde_json::from_str(
//!     r#"{"requests": [{"model": "models/m", "content": {"parts": [{"text": "a"}]}},
//!                      {"model": "models/other", "content": {"parts": [{"text": "b"}]}}]}"#,
//! ).unwrap();
//! let err = texts(&many.requests, "m", true).unwrap_err();
//! assert_eq!(err.field, "requests[1].model");
//! ```

use crate::error::{FieldError, Rule};
use crate::request::Content;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The most requests one `batchEmbedContents` call may carry (the vendor's limit).
pub const MAX_BATCH: usize = 100;

/// The task types an embedding may be asked for (the vendor's `TaskType`).
pub const TASK_TYPES: [&str; 9] = [
    "TASK_TYPE_UNSPECIFIED",
    "RETRIEVAL_QUERY",
    "RETRIEVAL_DOCUMENT",
    "SEMANTIC_SIMILARITY",
    "CLASSIFICATION",
    "CLUSTERING",
    "QUESTION_ANSWERING",
    "FACT_VERIFICATION",
    "CODE_RETRIEVAL_QUERY",
];

/// `POST /v1beta/models/{model}:embedContent`, and each request of a batch.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    // Decoded when missing, refused by validation naming it: required all the same.
    schemars(extend("required" = ["content"]))
)]
#[serde(rename_all = "camelCase")]
pub struct EmbedContentRequest {
    /// `models/{model}`: the path's model when given (the vendor's SDK leaves it out of a
    /// batch's requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What to embed: only its text parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// What the embedding will be used for; one of [`TASK_TYPES`].
    #[serde(default, alias = "task_type", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("enum" = TASK_TYPES)))]
    pub task_type: Option<String>,
    /// The document's title, with `RETRIEVAL_DOCUMENT` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Truncate the vector to this many dimensions.
    #[serde(
        default,
        alias = "output_dimensionality",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub output_dimensionality: Option<i64>,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `POST /v1beta/models/{model}:batchEmbedContents`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    // Decoded when missing, refused by validation naming it: required all the same.
    schemars(extend("required" = ["requests"]))
)]
#[serde(rename_all = "camelCase")]
pub struct BatchEmbedContentsRequest {
    /// The requests, each embedded on its own.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1, max = MAX_BATCH), transform = without_default)
    )]
    pub requests: Vec<EmbedContentRequest>,
    /// Fields this crate does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One vector.
/// The decoder's fallback for a missing field, which the rules refuse: not a value to document.
#[cfg(feature = "schema")]
fn without_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ContentEmbedding {
    /// The vector's values.
    pub values: Vec<f32>,
}

/// The answer of `embedContent`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EmbedContentResponse {
    /// The vector.
    pub embedding: ContentEmbedding,
}

/// The answer of `batchEmbedContents`: one vector per request, in order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BatchEmbedContentsResponse {
    /// The vectors.
    pub embeddings: Vec<ContentEmbedding>,
}

/// What a batch asks to embed, checked: one text per request and the one dimensionality
/// they share.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EmbedBatch {
    /// One text per request, in order.
    pub texts: Vec<String>,
    /// The dimensionality asked for (the same for every request), if any.
    pub output_dimensionality: Option<u32>,
}

/// Checks `requests` — one `embedContent` request, or a batch's (`batch`: fields are then
/// named `requests[i].…`) — for the path's `model`, and returns what to embed.
///
/// The rules: a batch has 1 to [`MAX_BATCH`] requests; a request's `model`, when given, is the
/// path's, with or without `models/`; `content.parts` is not empty and every
/// part is text; `taskType` is one of [`TASK_TYPES`]; a `title` goes with `RETRIEVAL_DOCUMENT`
/// only; `outputDimensionality` is at least 1 and the same for every request of a batch (one
/// upstream call embeds them all).
pub fn texts(
    requests: &[EmbedContentRequest],
    model: &str,
    batch: bool,
) -> Result<EmbedBatch, FieldError> {
    let model = model.strip_prefix("models/").unwrap_or(model);
    if batch && requests.is_empty() {
        return Err(FieldError::new(
            "requests",
            Rule::Required,
            "'requests' must hold at least one request",
        ));
    }
    if requests.len() > MAX_BATCH {
        return Err(FieldError::new(
            "requests",
            Rule::OutOfRange,
            format!(
                "'requests' holds {} requests; at most {MAX_BATCH} may be embedded in one call",
                requests.len()
            ),
        ));
    }
    let mut out = EmbedBatch::default();
    for (i, request) in requests.iter().enumerate() {
        let at = |field: &str| {
            if batch {
                format!("requests[{i}].{field}")
            } else {
                field.to_owned()
            }
        };
        match &request.model {
            Some(named) if named.strip_prefix("models/").unwrap_or(named) != model => {
                return Err(FieldError::new(
                    at("model"),
                    Rule::UnsupportedValue,
                    format!(
                        "'{}' is '{named}', but the path names models/{model}",
                        at("model")
                    ),
                ));
            }
            _ => {}
        }
        let parts = request
            .content
            .as_ref()
            .map(|c| c.parts.as_slice())
            .unwrap_or_default();
        if parts.is_empty() {
            return Err(FieldError::new(
                at("content.parts"),
                Rule::Required,
                format!("'{}' must hold at least one text part", at("content.parts")),
            ));
        }
        let mut text = String::new();
        for (j, part) in parts.iter().enumerate() {
            let Some(piece) = part.text.as_deref() else {
                let field = at(&format!("content.parts[{j}]"));
                return Err(FieldError::new(
                    field.clone(),
                    Rule::UnsupportedValue,
                    format!("'{field}' is not text: only text can be embedded"),
                ));
            };
            if j > 0 {
                text.push('\n');
            }
            text.push_str(piece);
        }
        out.texts.push(text);
        if let Some(task) = &request.task_type
            && !TASK_TYPES.contains(&task.as_str())
        {
            return Err(FieldError::new(
                at("taskType"),
                Rule::UnsupportedValue,
                format!(
                    "'{}' is '{task}'; it must be one of {}",
                    at("taskType"),
                    TASK_TYPES.join(", ")
                ),
            ));
        }
        if request.title.is_some() && request.task_type.as_deref() != Some("RETRIEVAL_DOCUMENT") {
            return Err(FieldError::new(
                at("title"),
                Rule::NotCombinable,
                format!("'{}' is only for taskType RETRIEVAL_DOCUMENT", at("title")),
            ));
        }
        let dimensions = match request.output_dimensionality {
            None => None,
            Some(n) => Some(u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
                FieldError::new(
                    at("outputDimensionality"),
                    Rule::OutOfRange,
                    format!("'{}' must be at least 1", at("outputDimensionality")),
                )
            })?),
        };
        if i == 0 {
            out.output_dimensionality = dimensions;
        } else if dimensions != out.output_dimensionality {
            return Err(FieldError::new(
                at("outputDimensionality"),
                Rule::NotCombinable,
                format!(
                    "'{}' differs from requests[0]'s: one call embeds every request at one dimensionality",
                    at("outputDimensionality")
                ),
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn request(json: &str) -> EmbedContentRequest {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn parts_join_and_snake_case_is_read() {
        let r = request(
            r#"{"content": {"parts": [{"text": "a"}, {"text": "b"}]}, "task_type": "RETRIEVAL_DOCUMENT", "title": "t", "output_dimensionality": 8}"#,
        );
        let batch = texts(&[r], "m", false).unwrap();
        assert_eq!(batch.texts, ["a\nb"]);
        assert_eq!(batch.output_dimensionality, Some(8));
    }

    #[test]
    fn each_rule_names_its_field() {
        let cases = [
            (
                r#"{"content": {"parts": []}}"#,
                "content.parts",
                Rule::Required,
            ),
            (r#"{}"#, "content.parts", Rule::Required),
            (
                r#"{"content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": "AA=="}}]}}"#,
                "content.parts[0]",
                Rule::UnsupportedValue,
            ),
            (
                r#"{"content": {"parts": [{"text": "a"}]}, "taskType": "NOPE"}"#,
                "taskType",
                Rule::UnsupportedValue,
            ),
            (
                r#"{"content": {"parts": [{"text": "a"}]}, "title": "t"}"#,
                "title",
                Rule::NotCombinable,
            ),
            (
                r#"{"content": {"parts": [{"text": "a"}]}, "outputDimensionality": 0}"#,
                "outputDimensionality",
                Rule::OutOfRange,
            ),
            (
                r#"{"model": "models/other", "content": {"parts": [{"text": "a"}]}}"#,
                "model",
                Rule::UnsupportedValue,
            ),
        ];
        for (json, field, rule) in cases {
            let err = texts(&[request(json)], "models/m", false).unwrap_err();
            assert_eq!((err.field.as_str(), err.rule), (field, rule), "{json}");
        }
    }

    #[test]
    fn a_batch_names_its_requests_and_shares_one_dimensionality() {
        let ok = |d: &str| {
            request(&format!(
                r#"{{"model": "models/m", "content": {{"parts": [{{"text": "a"}}]}}{d}}}"#
            ))
        };
        assert_eq!(texts(&[], "m", true).unwrap_err().field, "requests");
        // The vendor's SDK leaves `model` out of a batch's requests; a wrong one is refused.
        let bare = request(r#"{"content": {"parts": [{"text": "a"}]}}"#);
        assert_eq!(texts(&[ok(""), bare], "m", true).unwrap().texts.len(), 2);
        let other = request(r#"{"model": "models/x", "content": {"parts": [{"text": "a"}]}}"#);
        let err = texts(&[ok(""), other], "m", true).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.rule),
            ("requests[1].model", Rule::UnsupportedValue)
        );
        let err = texts(
            &[
                ok(r#", "outputDimensionality": 8"#),
                ok(r#", "outputDimensionality": 16"#),
            ],
            "m",
            true,
        )
        .unwrap_err();
        assert_eq!(err.field, "requests[1].outputDimensionality");
        let many = vec![ok(""); MAX_BATCH + 1];
        assert_eq!(texts(&many, "m", true).unwrap_err().rule, Rule::OutOfRange);
        assert_eq!(
            texts(&many[..MAX_BATCH], "m", true).unwrap().texts.len(),
            MAX_BATCH
        );
    }

    #[test]
    fn answers_have_the_vendor_shape() {
        let one = EmbedContentResponse {
            embedding: ContentEmbedding {
                values: vec![0.5, -1.0],
            },
        };
        assert_eq!(
            serde_json::to_string(&one).unwrap(),
            r#"{"embedding":{"values":[0.5,-1.0]}}"#
        );
        let many = BatchEmbedContentsResponse {
            embeddings: vec![one.embedding.clone(), one.embedding],
        };
        assert_eq!(
            serde_json::to_value(&many).unwrap()["embeddings"][1]["values"][0],
            0.5
        );
    }
}
