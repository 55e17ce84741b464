//! Money: amounts of the operator's currency, stored exactly in nano-units (DESIGN §4).
//!
//! An [`Amount`] is an integer count of nano-units (10⁻⁹ of the currency unit) in an `i64`. Prices
//! and intermediate results are computed in [`rust_decimal::Decimal`]; when a computed figure becomes
//! a charge it is rounded **up** to the next nano-unit ([`Amount::from_decimal_ceil`]), so the
//! operator never undercharges by rounding. Floating point never touches money.
//!
//! Text form (config files, CLI arguments, `--json` output) is a plain decimal string with at most
//! nine decimal places and no trailing zeros: `"1"`, `"0.999874"`, `"-0.5"`.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Nano-units per currency unit: amounts are stored to nine decimal places (DESIGN §4).
pub const NANOS_PER_UNIT: i64 = 1_000_000_000;

/// Decimal places of an [`Amount`].
pub const DECIMAL_PLACES: u32 = 9;

/// An amount of the operator's currency in integer nano-units (10⁻⁹).
///
/// Stored as `i64`, so it spans about ±9.2 billion currency units. It may be negative: a balance can
/// go negative by a settlement delta (DESIGN §4), and a refund or settlement difference is an amount
/// too.
///
/// ```
/// use tollgate_billing::Amount;
///
/// let balance: Amount = "0.999874".parse()?;
/// assert_eq!(balance.nanos(), 999_874_000);
/// assert_eq!(balance.to_string(), "0.999874");
/// # Ok::<(), tollgate_billing::MoneyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Amount(i64);

/// Why a figure could not become an [`Amount`].
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum MoneyError {
    /// The text was empty.
    #[error("an amount must not be empty")]
    Empty,
    /// The text is not a plain decimal number (`"12"`, `"-0.5"`, `"0.000000001"`).
    #[error("{input:?} is not a decimal amount (expected e.g. \"12\", \"0.5\" or \"-2.25\")")]
    Malformed {
        /// The rejected text.
        input: String,
    },
    /// The figure has a non-zero digit beyond the ninth decimal place, so it is not a whole number
    /// of nano-units.
    #[error("an amount has at most 9 decimal places (nano-units)")]
    TooPrecise,
    /// The figure does not fit in an `i64` count of nano-units.
    #[error("amount out of range (at most about ±9.2 billion)")]
    Overflow,
}

impl Amount {
    /// Nothing.
    pub const ZERO: Amount = Amount(0);
    /// The largest representable amount.
    pub const MAX: Amount = Amount(i64::MAX);
    /// The smallest (most negative) representable amount.
    pub const MIN: Amount = Amount(i64::MIN);
    /// One nano-unit, the smallest positive amount.
    pub const NANO: Amount = Amount(1);

    /// The amount of `n` nano-units.
    pub const fn from_nanos(n: i64) -> Amount {
        Amount(n)
    }

    /// The number of nano-units.
    pub const fn nanos(self) -> i64 {
        self.0
    }

    /// Converts a decimal figure exactly.
    ///
    /// Trailing zeros do not matter (`1.5000000000` is `1.5`), but a non-zero digit beyond the ninth
    /// decimal place is [`MoneyError::TooPrecise`], and a figure beyond the `i64` range of
    /// nano-units is [`MoneyError::Overflow`]. Use this for amounts an operator writes (credits,
    /// balances); use [`Amount::from_decimal_ceil`] for computed charges.
    pub fn from_decimal_exact(d: Decimal) -> Result<Amount, MoneyError> {
        let d = d.normalize();
        let (mantissa, scale) = (d.mantissa(), d.scale());
        if scale > DECIMAL_PLACES {
            return Err(MoneyError::TooPrecise);
        }
        scale_up_to_nanos(mantissa, scale)
    }

    /// Converts a computed charge, rounding **up** (towards +∞) to the next nano-unit (DESIGN §4:
    /// "a charge is rounded up to the nano-unit").
    ///
    /// ```
    /// use std::str::FromStr;
    /// use rust_decimal::Decimal;
    /// use tollgate_billing::Amount;
    ///
    /// let tenth_of_a_nano = Decimal::from_str("0.0000000001").unwrap();
    /// assert_eq!(Amount::from_decimal_ceil(tenth_of_a_nano), Ok(Amount::from_nanos(1)));
    /// ```
    pub fn from_decimal_ceil(d: Decimal) -> Result<Amount, MoneyError> {
        let (mantissa, scale) = (d.mantissa(), d.scale());
        if scale <= DECIMAL_PLACES {
            return scale_up_to_nanos(mantissa, scale);
        }
        // Decimal scales are at most 28, so the divisor is at most 10^19 and fits an i128.
        let divisor = 10i128
            .checked_pow(scale - DECIMAL_PLACES)
            .ok_or(MoneyError::Overflow)?;
        // Integer division truncates towards zero: that already is the ceiling for negative
        // figures; a positive figure with a remainder goes up by one nano-unit.
        let mut nanos = mantissa / divisor;
        if mantissa > 0 && mantissa % divisor != 0 {
            nanos += 1;
        }
        i64::try_from(nanos)
            .map(Amount)
            .map_err(|_| MoneyError::Overflow)
    }

    /// The exact decimal value, normalized (no trailing zeros).
    pub fn to_decimal(self) -> Decimal {
        Decimal::from_i128_with_scale(i128::from(self.0), DECIMAL_PLACES).normalize()
    }

    /// `self + other`, or `None` on overflow.
    pub fn checked_add(self, other: Amount) -> Option<Amount> {
        self.0.checked_add(other.0).map(Amount)
    }

    /// `self - other`, or `None` on overflow.
    pub fn checked_sub(self, other: Amount) -> Option<Amount> {
        self.0.checked_sub(other.0).map(Amount)
    }

    /// `-self`, or `None` for [`Amount::MIN`].
    pub fn checked_neg(self) -> Option<Amount> {
        self.0.checked_neg().map(Amount)
    }

    /// Whether the amount is below zero (a balance overdrawn by a settlement delta, a refund).
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// Whether the amount is above zero.
    pub const fn is_positive(self) -> bool {
        self.0 > 0
    }

    /// Whether the amount is exactly zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
}

/// `mantissa × 10^(9 − scale)` nano-units, for `scale ≤ 9`.
fn scale_up_to_nanos(mantissa: i128, scale: u32) -> Result<Amount, MoneyError> {
    let factor = 10i128
        .checked_pow(DECIMAL_PLACES.saturating_sub(scale))
        .ok_or(MoneyError::Overflow)?;
    let nanos = mantissa.checked_mul(factor).ok_or(MoneyError::Overflow)?;
    i64::try_from(nanos)
        .map(Amount)
        .map_err(|_| MoneyError::Overflow)
}

impl FromStr for Amount {
    type Err = MoneyError;

    /// Parses a plain decimal: an optional `-`, one or more digits, and optionally a `.` followed by
    /// one or more digits. No exponent, no `+`, no whitespace, no digit separators. Digits beyond the
    /// ninth decimal place must be zeros.
    fn from_str(s: &str) -> Result<Amount, MoneyError> {
        if s.is_empty() {
            return Err(MoneyError::Empty);
        }
        let malformed = || MoneyError::Malformed {
            input: s.to_owned(),
        };
        let (negative, unsigned) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let (whole, fraction) = match unsigned.split_once('.') {
            Some((whole, fraction)) => (whole, Some(fraction)),
            None => (unsigned, None),
        };
        let all_digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(whole) || !fraction.is_none_or(all_digits) {
            return Err(malformed());
        }

        // Accumulate the magnitude in i128 nano-units, negating at the end so that i64::MIN parses.
        let mut nanos: i128 = 0;
        for digit in whole.bytes() {
            nanos = nanos
                .checked_mul(10)
                .and_then(|n| n.checked_add(i128::from(digit - b'0')))
                .filter(|&n| n <= i128::from(i64::MAX) + 1)
                .ok_or(MoneyError::Overflow)?;
        }
        nanos = nanos
            .checked_mul(i128::from(NANOS_PER_UNIT))
            .ok_or(MoneyError::Overflow)?;
        let fraction = fraction.unwrap_or("");
        let mut place = i128::from(NANOS_PER_UNIT);
        for (index, digit) in fraction.bytes().enumerate() {
            let digit = i128::from(digit - b'0');
            if index < DECIMAL_PLACES as usize {
                place /= 10;
                nanos += digit * place;
            } else if digit != 0 {
                return Err(MoneyError::TooPrecise);
            }
        }
        let signed = if negative { -nanos } else { nanos };
        i64::try_from(signed)
            .map(Amount)
            .map_err(|_| MoneyError::Overflow)
    }
}

impl fmt::Display for Amount {
    /// The decimal form with trailing zeros trimmed: `1`, `0.999874`, `-0.5`, `0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_nanos(i128::from(self.0), f)
    }
}

/// `nanos` nano-units in the decimal form of [`Amount`] and [`Total`].
fn fmt_nanos(nanos: i128, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let magnitude = nanos.unsigned_abs();
    let unit = NANOS_PER_UNIT.unsigned_abs() as u128;
    let (whole, fraction) = (magnitude / unit, magnitude % unit);
    let sign = if nanos < 0 { "-" } else { "" };
    let text = if fraction == 0 {
        format!("{sign}{whole}")
    } else {
        let digits = format!("{fraction:09}");
        format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
    };
    f.pad(&text)
}

/// A sum of amounts — an audit's, a statement's, a report's — which may pass what one
/// [`Amount`] holds: all the credits a deployment in a currency of small units ever made pass
/// ±9.2 billion units in time, though no balance does. Integer nano-units in an `i128`, which no
/// sum of `i64` amounts a database can hold overflows; written as [`Amount`] is.
///
/// ```
/// use tollgate_billing::{Amount, Total};
///
/// let big = Amount::MAX;
/// let total = Total::ZERO.add(big).add(big);
/// assert_eq!(total.to_string(), "18446744073.709551614");
/// assert_eq!(total.add(Amount::MIN).add(Amount::MIN), Total::from_nanos(-2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Total(i128);

impl Total {
    /// Nothing.
    pub const ZERO: Total = Total(0);

    /// The total of `n` nano-units.
    pub const fn from_nanos(n: i128) -> Total {
        Total(n)
    }

    /// The number of nano-units.
    pub const fn nanos(self) -> i128 {
        self.0
    }

    /// `self + amount` (saturating, which no real sum reaches).
    #[must_use]
    pub const fn add(self, amount: Amount) -> Total {
        Total(self.0.saturating_add(amount.0 as i128))
    }

    /// `self + other` (saturating).
    #[must_use]
    pub const fn plus(self, other: Total) -> Total {
        Total(self.0.saturating_add(other.0))
    }

    /// `self - other` (saturating).
    #[must_use]
    pub const fn minus(self, other: Total) -> Total {
        Total(self.0.saturating_sub(other.0))
    }

    /// The total as one [`Amount`], when it fits.
    pub fn to_amount(self) -> Option<Amount> {
        i64::try_from(self.0).ok().map(Amount)
    }
}

impl From<Amount> for Total {
    fn from(amount: Amount) -> Total {
        Total(i128::from(amount.0))
    }
}

impl fmt::Display for Total {
    /// As [`Amount`]'s: `18446744073.709551614`, `-0.5`, `0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_nanos(self.0, f)
    }
}

impl Serialize for Total {
    /// Its decimal string, as [`Amount`]'s.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Total {
    /// A decimal string with at most nine places, of any size an `i128` of nano-units holds.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Total, D::Error> {
        let text = String::deserialize(deserializer)?;
        let d = Decimal::from_str_exact(text.trim()).map_err(de::Error::custom)?;
        let scaled = d
            .checked_mul(Decimal::from(NANOS_PER_UNIT))
            .filter(|n| n.fract().is_zero())
            .ok_or_else(|| de::Error::custom("a total has at most 9 decimal places"))?;
        scaled
            .mantissa()
            .checked_div(10i128.pow(scaled.scale()))
            .map(Total)
            .ok_or_else(|| de::Error::custom("a total out of range"))
    }
}

impl Serialize for Amount {
    /// Serialized as its decimal string (`"0.999874"`), never as a JSON number.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Amount {
    /// Deserialized from a decimal string only: a float in a config file would already have lost
    /// the exact value before it reached us.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Amount, D::Error> {
        deserializer.deserialize_str(AmountVisitor)
    }
}

struct AmountVisitor;

impl Visitor<'_> for AmountVisitor {
    type Value = Amount;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a decimal amount as a string, e.g. \"0.5\"")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Amount, E> {
        v.parse().map_err(E::custom)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    #[test]
    fn parses_the_documented_forms() {
        assert_eq!("1".parse(), Ok(Amount::from_nanos(1_000_000_000)));
        assert_eq!("0.5".parse(), Ok(Amount::from_nanos(500_000_000)));
        assert_eq!("-2.25".parse(), Ok(Amount::from_nanos(-2_250_000_000)));
        assert_eq!("0.000000001".parse(), Ok(Amount::NANO));
        assert_eq!("007.10".parse(), Ok(Amount::from_nanos(7_100_000_000)));
        assert_eq!("-0".parse(), Ok(Amount::ZERO));
        assert_eq!(
            "1.5000000000000".parse(),
            Ok(Amount::from_nanos(1_500_000_000))
        );
    }

    #[test]
    fn parses_the_extremes() {
        assert_eq!("9223372036.854775807".parse(), Ok(Amount::MAX));
        assert_eq!("-9223372036.854775808".parse(), Ok(Amount::MIN));
        assert_eq!(
            "9223372036.854775808".parse::<Amount>(),
            Err(MoneyError::Overflow)
        );
        assert_eq!(
            "99999999999999999999999999999999999999999".parse::<Amount>(),
            Err(MoneyError::Overflow)
        );
    }

    #[test]
    fn rejects_what_is_not_a_plain_decimal() {
        assert_eq!("".parse::<Amount>(), Err(MoneyError::Empty));
        for bad in [
            "abc", "1e3", "1E-3", "+1", " 1", "1 ", "1.", ".5", "-", "-.5", "1.2.3", "1,5", "0x10",
            "1_000", "--1", "NaN", "inf", "١",
        ] {
            assert_eq!(
                bad.parse::<Amount>(),
                Err(MoneyError::Malformed {
                    input: bad.to_owned()
                }),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn rejects_a_tenth_decimal_place() {
        assert_eq!(
            "0.0000000001".parse::<Amount>(),
            Err(MoneyError::TooPrecise)
        );
        assert_eq!(
            "1.0000000015".parse::<Amount>(),
            Err(MoneyError::TooPrecise)
        );
        assert_eq!(
            Amount::from_decimal_exact(dec("0.0000000001")),
            Err(MoneyError::TooPrecise)
        );
        assert_eq!(
            Amount::from_decimal_exact(dec("1.2345678901")),
            Err(MoneyError::TooPrecise)
        );
    }

    #[test]
    fn exact_conversion_ignores_trailing_zeros_and_checks_range() {
        assert_eq!(
            Amount::from_decimal_exact(dec("1.5000000000")),
            Ok(Amount::from_nanos(1_500_000_000))
        );
        assert_eq!(
            Amount::from_decimal_exact(dec("-0.000000001")),
            Ok(Amount::from_nanos(-1))
        );
        assert_eq!(
            Amount::from_decimal_exact(dec("9223372037")),
            Err(MoneyError::Overflow)
        );
        assert_eq!(
            Amount::from_decimal_exact(Decimal::MAX),
            Err(MoneyError::Overflow)
        );
    }

    #[test]
    fn ceiling_rounds_towards_positive_infinity() {
        let ceil = |s: &str| Amount::from_decimal_ceil(dec(s)).map(Amount::nanos);
        assert_eq!(ceil("0.00000002"), Ok(20));
        assert_eq!(ceil("0.0000000001"), Ok(1));
        assert_eq!(ceil("0.0000000000000000000000000001"), Ok(1));
        assert_eq!(ceil("0.0000000010000000000000000001"), Ok(2));
        assert_eq!(ceil("0.000000001"), Ok(1));
        assert_eq!(ceil("0.0000000010"), Ok(1));
        assert_eq!(ceil("0"), Ok(0));
        assert_eq!(ceil("0.0000000000"), Ok(0));
        assert_eq!(ceil("-0.0000000001"), Ok(0));
        assert_eq!(ceil("-0.0000000019"), Ok(-1));
        assert_eq!(ceil("9223372036.8547758069"), Ok(i64::MAX));
        assert_eq!(ceil("9223372036.8547758071"), Err(MoneyError::Overflow));
        assert_eq!(
            Amount::from_decimal_ceil(Decimal::MAX),
            Err(MoneyError::Overflow)
        );
    }

    #[test]
    fn displays_trimmed() {
        let show = |n: i64| Amount::from_nanos(n).to_string();
        assert_eq!(show(1_000_000_000), "1");
        assert_eq!(show(999_874_000), "0.999874");
        assert_eq!(show(-500_000_000), "-0.5");
        assert_eq!(show(0), "0");
        assert_eq!(show(1), "0.000000001");
        assert_eq!(show(-1), "-0.000000001");
        assert_eq!(show(i64::MIN), "-9223372036.854775808");
        assert_eq!(
            format!("[{:>6}]", Amount::from_nanos(500_000_000)),
            "[   0.5]"
        );
    }

    #[test]
    fn to_decimal_is_exact_and_normalized() {
        assert_eq!(
            Amount::from_nanos(999_874_000).to_decimal().to_string(),
            "0.999874"
        );
        assert_eq!(
            Amount::from_nanos(2_000_000_000).to_decimal().to_string(),
            "2"
        );
        assert_eq!(Amount::MIN.to_decimal(), dec("-9223372036.854775808"));
    }

    #[test]
    fn checked_arithmetic() {
        let one = Amount::from_nanos(1);
        assert_eq!(one.checked_add(one), Some(Amount::from_nanos(2)));
        assert_eq!(Amount::MAX.checked_add(one), None);
        assert_eq!(Amount::ZERO.checked_sub(one), Some(Amount::from_nanos(-1)));
        assert_eq!(Amount::MIN.checked_sub(one), None);
        assert_eq!(Amount::MIN.checked_neg(), None);
        assert!(Amount::from_nanos(-1).is_negative());
        assert!(!Amount::ZERO.is_negative());
        assert!(Amount::ZERO.is_zero() && !Amount::ZERO.is_positive());
    }

    #[test]
    fn serde_uses_decimal_strings() {
        let a = Amount::from_nanos(999_874_000);
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"0.999874\"");
        assert_eq!(
            serde_json::from_str::<Amount>("\"-2.25\"").unwrap().nanos(),
            -2_250_000_000
        );
        assert!(serde_json::from_str::<Amount>("0.5").is_err());
        assert!(serde_json::from_str::<Amount>("1").is_err());
        assert!(serde_json::from_str::<Amount>("\"1e3\"").is_err());
        assert!(serde_json::from_str::<Amount>("\"0.0000000001\"").is_err());
    }

    proptest! {
        #[test]
        fn display_then_parse_round_trips(n in any::<i64>()) {
            let a = Amount::from_nanos(n);
            prop_assert_eq!(a.to_string().parse::<Amount>(), Ok(a));
        }

        #[test]
        fn decimal_round_trips(n in any::<i64>()) {
            let a = Amount::from_nanos(n);
            prop_assert_eq!(Amount::from_decimal_exact(a.to_decimal()), Ok(a));
            prop_assert_eq!(Amount::from_decimal_ceil(a.to_decimal()), Ok(a));
            prop_assert_eq!(a.to_decimal().to_string(), a.to_string());
        }

        #[test]
        fn serde_round_trips(n in any::<i64>()) {
            let a = Amount::from_nanos(n);
            let json = serde_json::to_string(&a).unwrap();
            prop_assert_eq!(serde_json::from_str::<Amount>(&json).unwrap(), a);
        }

        #[test]
        fn ceiling_never_rounds_down(mantissa in any::<i64>(), scale in 0u32..=28) {
            let d = Decimal::from_i128_with_scale(i128::from(mantissa), scale);
            if let Ok(a) = Amount::from_decimal_ceil(d) {
                prop_assert!(a.to_decimal() >= d);
                prop_assert!(a.to_decimal() - d < Decimal::new(1, 9));
            }
        }
    }
}
