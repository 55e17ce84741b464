//! Why a charge could not be computed.

use rust_decimal::Decimal;

use crate::meter::Meter;

/// Why a usage could not be priced.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BillingError {
    /// The price book has no tariff for this public model (after alias resolution).
    #[error("no price is set for model {0:?}")]
    UnknownModel(String),
    /// The usage was counted on a different meter than the model's tariff prices, e.g. characters
    /// against a per-token tariff.
    #[error("a {tariff} tariff cannot price usage measured in {usage}")]
    MeterMismatch {
        /// The meter of the model's tariff.
        tariff: Meter,
        /// The meter of the usage.
        usage: Meter,
    },
    /// A tariff holds a negative price or ratio; a charge never credits the account.
    #[error("price {price} is negative")]
    NegativePrice {
        /// The offending price or ratio.
        price: Decimal,
    },
    /// The charge, or a step of computing it exactly, is out of range.
    #[error("the charge is out of range")]
    Overflow,
}
