//! Currencies and their minor units (docs/decisions.md, "Payments"): Stripe takes and answers
//! amounts as integers in a currency's smallest unit — cents for `usd`, yen for `jpy`, whose
//! smallest unit is the whole yen (Stripe's "zero-decimal currencies").

use rust_decimal::Decimal;

/// Stripe's zero-decimal currencies: an amount of 500 is ¥500.
const ZERO_DECIMAL: &[&str] = &[
    "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv",
    "xaf", "xof", "xpf",
];

/// Stripe's three-decimal currencies, whose amounts must also end in a zero: refused rather
/// than half-supported.
const THREE_DECIMAL: &[&str] = &["bhd", "jod", "kwd", "omr", "tnd"];

/// A currency as Stripe names it: three lower-case letters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Currency(String);

/// Why a currency or an amount was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    /// Not three ASCII letters, or a three-decimal currency.
    #[error(
        "a currency is an ISO 4217 code of three letters (\"usd\"), not a three-decimal one: {0:?}"
    )]
    Currency(String),
    /// Negative, zero, or beyond an `i64` of minor units.
    #[error("{0} is not a positive amount that fits")]
    Range(Decimal),
    /// More decimals than the currency has.
    #[error("{amount} has more decimals than {currency} has ({places})")]
    Places {
        /// The amount given.
        amount: Decimal,
        /// The currency.
        currency: String,
        /// Its decimal places.
        places: u32,
    },
}

impl std::str::FromStr for Currency {
    type Err = MoneyError;

    fn from_str(text: &str) -> Result<Currency, MoneyError> {
        let code = text.trim().to_ascii_lowercase();
        if code.len() != 3
            || !code.bytes().all(|b| b.is_ascii_lowercase())
            || THREE_DECIMAL.contains(&code.as_str())
        {
            return Err(MoneyError::Currency(text.to_owned()));
        }
        Ok(Currency(code))
    }
}

impl std::fmt::Display for Currency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Currency {
    /// Its code, lower case, as Stripe writes it.
    pub fn code(&self) -> &str {
        &self.0
    }

    /// Its decimal places: 0 for a zero-decimal currency, else 2.
    pub fn places(&self) -> u32 {
        if ZERO_DECIMAL.contains(&self.0.as_str()) {
            0
        } else {
            2
        }
    }

    /// `amount` (in the currency's major unit: `12.50` dollars) in minor units (`1250`),
    /// refusing a non-positive amount, more decimals than the currency has, or an overflow.
    pub fn to_minor(&self, amount: Decimal) -> Result<i64, MoneyError> {
        if amount <= Decimal::ZERO {
            return Err(MoneyError::Range(amount));
        }
        let places = self.places();
        if amount.normalize().scale() > places {
            return Err(MoneyError::Places {
                amount,
                currency: self.0.clone(),
                places,
            });
        }
        let minor = amount
            .checked_mul(Decimal::from(10_i64.pow(places)))
            .ok_or(MoneyError::Range(amount))?;
        i64::try_from(minor.normalize()).map_err(|_| MoneyError::Range(amount))
    }

    /// `minor` units in the major unit (`1250` → `12.50`).
    pub fn from_minor(&self, minor: i64) -> Decimal {
        Decimal::new(minor, self.places())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::str::FromStr;

    #[test]
    fn minor_units() {
        let usd = Currency::from_str("USD").unwrap();
        assert_eq!(usd.code(), "usd");
        assert_eq!(usd.to_minor(Decimal::from_str("12.5").unwrap()), Ok(1250));
        assert_eq!(usd.to_minor(Decimal::from_str("12.50").unwrap()), Ok(1250));
        assert!(usd.to_minor(Decimal::from_str("12.505").unwrap()).is_err());
        assert!(usd.to_minor(Decimal::ZERO).is_err());
        assert!(usd.to_minor(Decimal::from_str("-1").unwrap()).is_err());
        assert!(usd.to_minor(Decimal::MAX).is_err());
        assert_eq!(usd.from_minor(1250).to_string(), "12.50");
        let jpy = Currency::from_str("jpy").unwrap();
        assert_eq!(jpy.to_minor(Decimal::from(500)), Ok(500));
        assert!(jpy.to_minor(Decimal::from_str("500.5").unwrap()).is_err());
        assert_eq!(jpy.from_minor(500).to_string(), "500");
        for bad in ["us", "usdd", "kwd", "u$d", ""] {
            assert!(Currency::from_str(bad).is_err(), "{bad}");
        }
    }
}
