//! # tollgate-field-error
//!
//! What every protocol crate's validation answers: a [`FieldError`] — the field (a JSON path
//! such as `contents[1].role`, or a form field), the rule it broke, and a sentence for the API
//! user that names both. Each format keeps its own rules (an enum implementing [`Rule`], whose
//! codes are the machine-readable `code` of a 400); the error around them is this one type, so
//! the gateway turns any of them into its client error in one place
//! (`tollgate_exchange::errors`), without depending on the formats for it.
//!
//! ```
//! use tollgate_field_error::{FieldError, Rule};
//!
//! #[derive(Debug, Clone, Copy, PartialEq, Eq)]
//! enum Speech { Required }
//!
//! impl Rule for Speech {
//!     fn code(&self) -> &'static str {
//!         match self { Speech::Required => "required" }
//!     }
//! }
//!
//! let err = FieldError::new("voice", Speech::Required, "'voice' is required");
//! assert_eq!(err.to_string(), "'voice' is required");
//! assert_eq!((err.field.as_str(), err.rule.code()), ("voice", "required"));
//! ```

#![no_std]

extern crate alloc;

use alloc::string::String;
use core::fmt;

/// A format's rule: a stable snake_case code, answered as the 400's `code`.
pub trait Rule: Copy + fmt::Debug + PartialEq + Eq {
    /// The rule's code, e.g. `out_of_range`.
    fn code(&self) -> &'static str;
}

/// A broken rule: which field, which rule, and a message for the API user that names both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError<R> {
    /// The JSON path or form field name of the offending value.
    pub field: String,
    /// The rule it broke.
    pub rule: R,
    /// A sentence for the API user, e.g. `'speed' must be between 0.5 and 2.0`.
    pub message: String,
}

impl<R> FieldError<R> {
    /// A field error with the given parts.
    pub fn new(field: impl Into<String>, rule: R, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            rule,
            message: message.into(),
        }
    }
}

impl<R> fmt::Display for FieldError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<R: fmt::Debug> core::error::Error for FieldError<R> {}
