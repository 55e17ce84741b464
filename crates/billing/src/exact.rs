//! Exact cost arithmetic: a charge is computed without any rounding, then rounded up once.
//!
//! `Decimal` multiplication and division quietly round once a result needs more than 28 decimal
//! places or 96 bits of mantissa. A charge must be exact until its single rounding up to the
//! nano-unit (DESIGN §4), so costs are built here from each `Decimal`'s own integer mantissa and
//! scale in 128-bit integers, and an intermediate that does not fit is an error, never an
//! approximation.

use rust_decimal::Decimal;

use crate::error::BillingError;
use crate::money::{Amount, DECIMAL_PLACES};

/// An exact non-negative cost: `numerator / 10^scale` currency units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cost {
    numerator: u128,
    scale: u32,
}

impl Cost {
    /// Nothing.
    pub(crate) const ZERO: Cost = Cost {
        numerator: 0,
        scale: 0,
    };

    /// `quantity × price₁ × price₂ × … / 10^per_power_of_ten`, exactly.
    ///
    /// `per_power_of_ten` is 6 for a price per million units and 0 for a price per unit.
    pub(crate) fn of(
        quantity: u64,
        factors: &[Decimal],
        per_power_of_ten: u32,
    ) -> Result<Cost, BillingError> {
        let mut cost = Cost {
            numerator: u128::from(quantity),
            scale: per_power_of_ten,
        };
        for factor in factors {
            let factor = factor.normalize();
            let mantissa = u128::try_from(factor.mantissa())
                .map_err(|_| BillingError::NegativePrice { price: factor })?;
            cost.numerator = cost
                .numerator
                .checked_mul(mantissa)
                .ok_or(BillingError::Overflow)?;
            cost.scale += factor.scale();
        }
        Ok(cost)
    }

    /// `self + other`, exactly, at the finer of the two scales.
    pub(crate) fn checked_add(self, other: Cost) -> Result<Cost, BillingError> {
        let scale = self.scale.max(other.scale);
        let numerator = self
            .rescaled(scale)?
            .checked_add(other.rescaled(scale)?)
            .ok_or(BillingError::Overflow)?;
        Ok(Cost { numerator, scale })
    }

    /// The numerator at a finer `scale ≥ self.scale`.
    fn rescaled(self, scale: u32) -> Result<u128, BillingError> {
        scale
            .checked_sub(self.scale)
            .and_then(|places| 10u128.checked_pow(places))
            .and_then(|factor| self.numerator.checked_mul(factor))
            .ok_or(BillingError::Overflow)
    }

    /// The cost exactly, as a decimal string without trailing zeros (`0.0000000015`).
    pub(crate) fn exact_string(self) -> String {
        let digits = self.numerator.to_string();
        let scale = self.scale as usize;
        let (whole, fraction) = if digits.len() > scale {
            let (w, f) = digits.split_at(digits.len() - scale);
            (w.to_owned(), f.to_owned())
        } else {
            ("0".to_owned(), format!("{digits:0>scale$}"))
        };
        let fraction = fraction.trim_end_matches('0');
        if fraction.is_empty() {
            whole
        } else {
            format!("{whole}.{fraction}")
        }
    }

    /// The cost as a charge: rounded **up** to the next nano-unit (DESIGN §4).
    pub(crate) fn round_up(self) -> Result<Amount, BillingError> {
        let nanos = if self.scale <= DECIMAL_PLACES {
            self.rescaled(DECIMAL_PLACES)?
        } else {
            match 10u128.checked_pow(self.scale - DECIMAL_PLACES) {
                Some(divisor) => self.numerator.div_ceil(divisor),
                // The divisor exceeds u128::MAX and so the numerator: a positive cost is below
                // one nano-unit and rounds up to it.
                None => u128::from(self.numerator != 0),
            }
        };
        i64::try_from(nanos)
            .map(Amount::from_nanos)
            .map_err(|_| BillingError::Overflow)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    #[test]
    fn rounds_up_once() {
        // 1 × 0.0000000001 / 10^6 = 10^-16: below a nano-unit, rounds up to one.
        let tiny = Cost::of(1, &[dec("0.0000000001")], 6).unwrap();
        assert_eq!(tiny.round_up(), Ok(Amount::from_nanos(1)));
        // Two costs of half a nano each are one nano, not two.
        let half = Cost::of(1, &[dec("0.0000000005")], 0).unwrap();
        assert_eq!(
            half.checked_add(half).unwrap().round_up(),
            Ok(Amount::from_nanos(1))
        );
        assert_eq!(Cost::ZERO.round_up(), Ok(Amount::ZERO));
    }

    #[test]
    fn very_fine_scales_still_round_up() {
        let smallest = dec("0.0000000000000000000000000001");
        let cost = Cost::of(1, &[smallest, smallest], 6).unwrap();
        assert_eq!(cost.round_up(), Ok(Amount::from_nanos(1)));
        let zero = Cost::of(0, &[smallest, smallest], 6).unwrap();
        assert_eq!(zero.round_up(), Ok(Amount::ZERO));
    }

    #[test]
    fn trailing_zeros_do_not_cost_headroom() {
        let padded = dec("2.0000000000000000000000000000");
        let cost = Cost::of(u64::MAX, &[padded, padded], 0).unwrap();
        assert_eq!(cost.scale, 0);
    }

    #[test]
    fn overflow_is_an_error() {
        let big = Decimal::MAX;
        assert_eq!(Cost::of(u64::MAX, &[big], 0), Err(BillingError::Overflow));
        let cost = Cost::of(u64::MAX, &[dec("1")], 0).unwrap();
        assert_eq!(cost.round_up(), Err(BillingError::Overflow));
    }

    #[test]
    fn negative_factors_are_refused() {
        assert_eq!(
            Cost::of(1, &[dec("-0.5")], 0),
            Err(BillingError::NegativePrice { price: dec("-0.5") })
        );
    }
}
