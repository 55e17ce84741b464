//! Price versions (docs/architecture.md, "Prices"): a model's tariff over time. A version is never
//! edited; a price change is a new version with the time it takes effect. Every charge names the
//! version it was priced at, so that anyone can re-derive it later (`tollgate audit
//! --recompute`).
//!
//! Sans-IO: the schedule is data, and the time to price at is passed in.
//!
//! ```
//! use tollgate_billing::{PriceSchedule, PriceVersion, Tariff};
//!
//! let at = |price: &str| Tariff::Tokens { per_million_tokens: price.parse().unwrap() };
//! let schedule = PriceSchedule::from_versions([
//!     PriceVersion { model: "e".into(), version: 1, effective_from: 0, tariff: at("0.02") },
//!     PriceVersion { model: "e".into(), version: 2, effective_from: 1_000, tariff: at("0.03") },
//! ]);
//! assert_eq!(schedule.at("e", 999).map(|v| v.version), Some(1));
//! assert_eq!(schedule.at("e", 1_000).map(|v| v.version), Some(2));
//! assert!(schedule.at("other", 1_000).is_none());
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::tariff::Tariff;

/// One version of one model's price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriceVersion {
    /// The public model.
    pub model: String,
    /// Counts the model's versions from 1.
    pub version: i64,
    /// From when it prices requests, Unix milliseconds.
    pub effective_from: i64,
    /// The list tariff (before any price group's multiplier).
    pub tariff: Tariff,
}

/// Every model's versions, each model's in the order they take effect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriceSchedule {
    models: BTreeMap<String, Vec<PriceVersion>>,
}

impl PriceSchedule {
    /// The schedule of `versions` (any order).
    pub fn from_versions(versions: impl IntoIterator<Item = PriceVersion>) -> PriceSchedule {
        let mut models: BTreeMap<String, Vec<PriceVersion>> = BTreeMap::new();
        for v in versions {
            models.entry(v.model.clone()).or_default().push(v);
        }
        for list in models.values_mut() {
            list.sort_by_key(|v| (v.effective_from, v.version));
        }
        PriceSchedule { models }
    }

    /// The version that prices `model` at `now` (Unix milliseconds): the one that took effect
    /// last, not after `now` — of two that took effect at once, the later version. `None` when
    /// the model has none yet.
    pub fn at(&self, model: &str, now: i64) -> Option<&PriceVersion> {
        let list = self.models.get(model)?;
        let taken = list.partition_point(|v| v.effective_from <= now);
        taken.checked_sub(1).and_then(|i| list.get(i))
    }

    /// One version of a model.
    pub fn version(&self, model: &str, version: i64) -> Option<&PriceVersion> {
        self.models
            .get(model)?
            .iter()
            .find(|v| v.version == version)
    }

    /// A model's versions, in the order they take effect.
    pub fn history(&self, model: &str) -> &[PriceVersion] {
        self.models.get(model).map_or(&[], Vec::as_slice)
    }

    /// Every model with a version.
    pub fn models(&self) -> impl Iterator<Item = &str> + '_ {
        self.models.keys().map(String::as_str)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn version(version: i64, effective_from: i64) -> PriceVersion {
        PriceVersion {
            model: "m".into(),
            version,
            effective_from,
            tariff: Tariff::Tokens {
                per_million_tokens: version.into(),
            },
        }
    }

    #[test]
    fn nothing_before_the_first_version() {
        let schedule = PriceSchedule::from_versions([version(1, 100)]);
        assert!(schedule.at("m", 99).is_none());
        assert_eq!(schedule.at("m", 100).unwrap().version, 1);
        assert_eq!(schedule.version("m", 1).unwrap().effective_from, 100);
        assert!(schedule.version("m", 2).is_none());
        assert_eq!(schedule.models().collect::<Vec<_>>(), ["m"]);
    }

    proptest! {
        /// Whatever versions exist, the one chosen at `now` has taken effect, and none that has
        /// taken effect took effect after it.
        #[test]
        fn the_latest_effective_version_prices(
            froms in proptest::collection::vec(0i64..1_000, 1..12),
            now in 0i64..1_100,
        ) {
            let versions: Vec<_> = froms.iter().enumerate()
                .map(|(i, from)| version(i as i64 + 1, *from)).collect();
            let schedule = PriceSchedule::from_versions(versions.clone());
            let best = versions.iter().filter(|v| v.effective_from <= now)
                .max_by_key(|v| (v.effective_from, v.version));
            prop_assert_eq!(schedule.at("m", now), best);
            prop_assert_eq!(schedule.history("m").len(), versions.len());
        }
    }
}
