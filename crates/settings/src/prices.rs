//! The price book as a running gateway prices with it (docs/architecture.md, "Prices"): every
//! model's versions, read from the database at start and again every [`PRICES_EVERY`], so that
//! a version an operator adds on any replica (or schedules ahead) prices requests on all of
//! them. A request takes the version in effect when it is priced and names it on its charge.

use std::sync::{Arc, RwLock};
use std::time::Duration;
use tollgate_billing::{PriceSchedule, Tariff};

/// How often a replica reads the price versions again; a new version takes effect on every
/// replica within this of its `effective_from` (schedule it ahead for an exact switch).
pub const PRICES_EVERY: Duration = Duration::from_secs(5);

/// A model's price as one request is charged: the list tariff and the version it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    /// The version (`None`: the catalog's own tariff — a gateway assembled without the
    /// database's price book, as tests and embedders may).
    pub version: Option<i64>,
    /// The list tariff, before the caller's price group.
    pub tariff: Tariff,
}

/// The versions every request prices with.
#[derive(Debug, Default)]
pub struct Prices {
    schedule: RwLock<Arc<PriceSchedule>>,
}

impl Prices {
    /// Prices from `schedule`.
    pub fn new(schedule: PriceSchedule) -> Prices {
        Prices {
            schedule: RwLock::new(Arc::new(schedule)),
        }
    }

    /// Replaces the versions with what the database holds now.
    pub fn replace(&self, schedule: PriceSchedule) {
        let mut slot = self
            .schedule
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *slot = Arc::new(schedule);
    }

    /// Every version known.
    pub fn schedule(&self) -> Arc<PriceSchedule> {
        self.schedule
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The price of `model` (a public name) at `now` (Unix milliseconds): the version in
    /// effect, or `configured` (the catalog's tariff) for a model without one.
    pub fn at(&self, model: &str, configured: &Tariff, now: i64) -> Price {
        let schedule = self
            .schedule
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match schedule.at(model, now) {
            Some(v) => Price {
                version: Some(v.version),
                tariff: v.tariff.clone(),
            },
            None => Price {
                version: None,
                tariff: configured.clone(),
            },
        }
    }
}
