//! What the format knows about the embedding model families (wire-formats §2).
//!
//! | Model | Native dimensions | `dimensions` parameter |
//! |---|---|---|
//! | `text-embedding-3-small` | 1536 | supported |
//! | `text-embedding-3-large` | 3072 | supported |
//! | `text-embedding-ada-002` | 1536 | not supported |
//!
//! Names are matched **exactly** (case-sensitive). A gateway first resolves its public model name
//! or alias to the upstream model id and looks that up; a prefix match would wrongly claim custom
//! deployments whose names merely start like a known model but whose width is unknown. Any other
//! name is an unknown family ([`None`]), for which only the family-independent rules apply.

/// The properties of a model family that the wire format depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModelFamily {
    /// The length of the vectors the model returns when `dimensions` is not given.
    pub native_dimensions: u32,
    /// Whether the model accepts the `dimensions` parameter (wire-formats §2: only
    /// `text-embedding-3` and later models).
    pub supports_dimensions: bool,
}

impl ModelFamily {
    /// `text-embedding-3-small`: 1536 dimensions, shortenable.
    pub const TEXT_EMBEDDING_3_SMALL: Self = Self {
        native_dimensions: 1536,
        supports_dimensions: true,
    };
    /// `text-embedding-3-large`: 3072 dimensions, shortenable.
    pub const TEXT_EMBEDDING_3_LARGE: Self = Self {
        native_dimensions: 3072,
        supports_dimensions: true,
    };
    /// `text-embedding-ada-002`: 1536 dimensions, no `dimensions` parameter.
    pub const TEXT_EMBEDDING_ADA_002: Self = Self {
        native_dimensions: 1536,
        supports_dimensions: false,
    };

    /// The length of the vectors a request asks for: `dimensions` when given, otherwise the
    /// native length. Validation ([`validate`](crate::validate())) has checked that `dimensions`
    /// is in range for this family.
    ///
    /// ```
    /// use tollgate_embeddings::ModelFamily;
    ///
    /// let family = ModelFamily::TEXT_EMBEDDING_3_LARGE;
    /// assert_eq!(family.output_dimensions(None), 3072);
    /// assert_eq!(family.output_dimensions(Some(256)), 256);
    /// ```
    pub fn output_dimensions(self, dimensions: Option<u32>) -> u32 {
        dimensions.unwrap_or(self.native_dimensions)
    }
}

/// Looks up the family of an upstream model id by exact name; `None` for an unknown model.
///
/// ```
/// use tollgate_embeddings::{model_family, ModelFamily};
///
/// assert_eq!(model_family("text-embedding-3-large"), Some(ModelFamily::TEXT_EMBEDDING_3_LARGE));
/// assert_eq!(model_family("text-embedding-ada-002").map(|f| f.supports_dimensions), Some(false));
/// assert_eq!(model_family("my-embedder"), None);
/// ```
pub fn model_family(model: &str) -> Option<ModelFamily> {
    match model {
        "text-embedding-3-small" => Some(ModelFamily::TEXT_EMBEDDING_3_SMALL),
        "text-embedding-3-large" => Some(ModelFamily::TEXT_EMBEDDING_3_LARGE),
        "text-embedding-ada-002" => Some(ModelFamily::TEXT_EMBEDDING_ADA_002),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_families() {
        assert_eq!(
            model_family("text-embedding-3-small"),
            Some(ModelFamily {
                native_dimensions: 1536,
                supports_dimensions: true
            })
        );
        assert_eq!(
            model_family("text-embedding-3-large"),
            Some(ModelFamily {
                native_dimensions: 3072,
                supports_dimensions: true
            })
        );
        assert_eq!(
            model_family("text-embedding-ada-002"),
            Some(ModelFamily {
                native_dimensions: 1536,
                supports_dimensions: false
            })
        );
    }

    #[test]
    fn matching_is_exact() {
        assert_eq!(model_family("text-embedding-3-small-custom"), None);
        assert_eq!(model_family("Text-Embedding-3-Small"), None);
        assert_eq!(model_family("text-embedding-3"), None);
        assert_eq!(model_family(""), None);
    }
}
