//! The price book: the tariff of every public model.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::BillingError;
use crate::meter::Usage;
use crate::money::Amount;
use crate::tariff::Tariff;

/// The tariffs of the gateway's models, keyed by **public** model name — the name after alias
/// resolution, not the upstream's.
///
/// Serialized as a plain map from model name to [`Tariff`]:
///
/// ```
/// use tollgate_billing::{Amount, PriceBook, Usage};
///
/// let book: PriceBook = serde_json::from_str(r#"{
///     "text-embedding-3-small": {"meter": "tokens", "per_million_tokens": "0.02"},
///     "speech-2.8-hd": {"meter": "characters", "per_million_characters": "100"}
/// }"#)?;
/// assert_eq!(book.charge("speech-2.8-hd", &Usage::Characters(11))?, Amount::from_nanos(1_100_000));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceBook {
    tariffs: BTreeMap<String, Tariff>,
}

impl PriceBook {
    /// An empty price book.
    pub fn new() -> PriceBook {
        PriceBook::default()
    }

    /// Sets the tariff of a public model, returning the one it replaces.
    pub fn insert(&mut self, model: impl Into<String>, tariff: Tariff) -> Option<Tariff> {
        self.tariffs.insert(model.into(), tariff)
    }

    /// Removes a model's tariff, returning it.
    pub fn remove(&mut self, model: &str) -> Option<Tariff> {
        self.tariffs.remove(model)
    }

    /// The tariff of a public model.
    pub fn get(&self, model: &str) -> Option<&Tariff> {
        self.tariffs.get(model)
    }

    /// Whether the model has a price.
    pub fn contains(&self, model: &str) -> bool {
        self.tariffs.contains_key(model)
    }

    /// The charge for `usage` of a public model ([`Tariff::charge`]);
    /// [`BillingError::UnknownModel`] if the model has no price.
    pub fn charge(&self, model: &str, usage: &Usage) -> Result<Amount, BillingError> {
        self.get(model)
            .ok_or_else(|| BillingError::UnknownModel(model.to_owned()))?
            .charge(usage)
    }

    /// Checks every tariff ([`Tariff::validate`]), naming the first model with a negative price.
    pub fn validate(&self) -> Result<(), (String, BillingError)> {
        self.tariffs
            .iter()
            .try_for_each(|(model, tariff)| tariff.validate().map_err(|err| (model.clone(), err)))
    }

    /// The models and their tariffs, in model-name order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Tariff)> + '_ {
        self.tariffs
            .iter()
            .map(|(model, tariff)| (model.as_str(), tariff))
    }

    /// The number of priced models.
    pub fn len(&self) -> usize {
        self.tariffs.len()
    }

    /// Whether no model is priced.
    pub fn is_empty(&self) -> bool {
        self.tariffs.is_empty()
    }
}

impl<M: Into<String>> FromIterator<(M, Tariff)> for PriceBook {
    fn from_iter<I: IntoIterator<Item = (M, Tariff)>>(iter: I) -> PriceBook {
        PriceBook {
            tariffs: iter
                .into_iter()
                .map(|(model, tariff)| (model.into(), tariff))
                .collect(),
        }
    }
}

impl<M: Into<String>> Extend<(M, Tariff)> for PriceBook {
    fn extend<I: IntoIterator<Item = (M, Tariff)>>(&mut self, iter: I) {
        self.tariffs.extend(
            iter.into_iter()
                .map(|(model, tariff)| (model.into(), tariff)),
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::meter::Meter;
    use rust_decimal::Decimal;

    fn embeddings() -> Tariff {
        Tariff::Tokens {
            per_million_tokens: Decimal::new(2, 2),
        }
    }

    #[test]
    fn unknown_model() {
        let book = PriceBook::from_iter([("text-embedding-3-small", embeddings())]);
        assert_eq!(
            book.charge("text-embedding-3-large", &Usage::Tokens(1)),
            Err(BillingError::UnknownModel(
                "text-embedding-3-large".to_owned()
            ))
        );
        assert_eq!(
            book.charge("text-embedding-3-small", &Usage::Tokens(1)),
            Ok(Amount::from_nanos(20))
        );
    }

    #[test]
    fn mismatch_through_the_book() {
        let mut book = PriceBook::new();
        assert!(book.insert("e", embeddings()).is_none());
        assert_eq!(
            book.charge("e", &Usage::Characters(5)),
            Err(BillingError::MeterMismatch {
                tariff: Meter::Tokens,
                usage: Meter::Characters
            })
        );
    }

    #[test]
    fn map_operations() {
        let mut book = PriceBook::new();
        assert!(book.is_empty());
        book.extend([("b", embeddings()), ("a", embeddings())]);
        assert_eq!(book.len(), 2);
        assert_eq!(book.iter().map(|(m, _)| m).collect::<Vec<_>>(), ["a", "b"]);
        assert!(book.insert("a", embeddings()).is_some());
        assert_eq!(book.remove("a"), Some(embeddings()));
        assert!(!book.contains("a") && book.contains("b"));
        assert!(book.get("b").is_some());
    }

    #[test]
    fn validate_names_the_model() {
        let mut book = PriceBook::new();
        book.insert("ok", embeddings());
        book.insert(
            "bad",
            Tariff::Tokens {
                per_million_tokens: Decimal::new(-1, 0),
            },
        );
        let (model, _) = book.validate().unwrap_err();
        assert_eq!(model, "bad");
    }

    #[test]
    fn serde_is_a_plain_map() {
        let book = PriceBook::from_iter([("e", embeddings())]);
        let json = serde_json::to_string(&book).unwrap();
        assert_eq!(
            json,
            r#"{"e":{"meter":"tokens","per_million_tokens":"0.02"}}"#
        );
        assert_eq!(serde_json::from_str::<PriceBook>(&json).unwrap(), book);
    }
}
