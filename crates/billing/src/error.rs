//! Why a charge could not be computed.

use rust_decimal::Decimal;

use crate::meter::Meter;
use crate::token_class::TokenClass;

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
    /// A usage counts tokens of a class its tariff names no price for (nor, for a cached class,
    /// its uncached class): the vendor billed a part the operator did not price.
    #[error("the tariff names no price for {class} tokens")]
    Unpriced {
        /// The class without a price.
        class: TokenClass,
    },
    /// The charge, or a step of computing it exactly, is out of range.
    #[error("the charge is out of range")]
    Overflow,
}
