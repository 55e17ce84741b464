//! The most a settlement may charge (docs/decisions.md, "Bounded settlement"). An upstream's
//! usage figure settles a charge, but the gateway never charges more than it can justify: the
//! locally measured quantity when it has one (the text's length, the probed duration, the
//! requested duration), else [`HOLD_MULTIPLE`] × the hold. A figure above the bound — a lying
//! upstream, or one that cannot be priced — is charged the bound, and the excess is recorded as
//! an anomaly.

use tollgate_billing::{Amount, Tariff, Usage};

/// With no locally known quantity, an upstream's figure is charged up to this many times the
/// hold.
pub const HOLD_MULTIPLE: i64 = 2;

/// The most a settlement may charge, and how that came about (for the anomaly note).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// The amount.
    pub amount: Amount,
    /// How it came about.
    pub basis: &'static str,
}

impl Bound {
    /// [`HOLD_MULTIPLE`] × `hold`: the bound without a locally known quantity.
    pub fn of_hold(hold: Amount) -> Bound {
        Bound {
            amount: Amount::from_nanos(hold.nanos().saturating_mul(HOLD_MULTIPLE)),
            basis: "twice the hold",
        }
    }

    /// `held`, when the hold priced the locally known quantity itself.
    pub fn measured(held: Amount) -> Bound {
        Bound {
            amount: held,
            basis: "the locally measured quantity",
        }
    }

    /// `usage` (a locally known quantity with a tolerance) at `tariff`, never below `held`;
    /// `None` when `usage` cannot be priced (the bound stays what it was).
    pub fn measured_usage(tariff: &Tariff, usage: &Usage, held: Amount) -> Option<Bound> {
        tariff
            .charge(usage)
            .ok()
            .map(|priced| Bound::measured(priced.max(held)))
    }

    /// What `usage` is charged at `tariff` under this bound: its price when it is within the
    /// bound; else the bound, with the anomaly that says why (`quantity`: the usage as the
    /// ledger row records it).
    pub fn charge(
        &self,
        tariff: &Tariff,
        usage: &Usage,
        quantity: &str,
    ) -> (Amount, Option<String>) {
        let (charged, priced) = tariff.charge_within(usage, self.amount);
        let anomaly = match priced {
            Ok(priced) if priced <= self.amount => None,
            Ok(priced) => Some(format!(
                "upstream usage {quantity} prices at {priced}, above {} ({}); charged {charged}",
                self.amount, self.basis
            )),
            Err(e) => Some(format!(
                "upstream usage {quantity} cannot be priced ({e}); charged {charged} ({})",
                self.basis
            )),
        };
        (charged, anomaly)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tollgate_billing::Decimal;

    fn per_character(price: &str) -> Tariff {
        Tariff::Characters {
            per_million_characters: price.parse::<Decimal>().unwrap(),
        }
    }

    proptest! {
        /// The adversary: an upstream that reports any usage it likes. What it is charged never
        /// passes the bound; a figure within the bound is charged at its price, and only a
        /// figure above it is recorded as an anomaly.
        #[test]
        fn a_lying_upstream_is_charged_at_most_the_bound(
            held_characters in 0u64..100_000,
            reported in 0u64..u64::MAX / 4,
            exact in any::<bool>(),
        ) {
            let tariff = per_character("0.5");
            let held = tariff.charge(&Usage::Characters(held_characters)).unwrap();
            let bound = if exact { Bound::measured(held) } else { Bound::of_hold(held) };
            let usage = Usage::Characters(reported);
            let (charged, anomaly) = bound.charge(&tariff, &usage, "q");
            prop_assert!(charged <= bound.amount);
            match tariff.charge(&usage) {
                Ok(priced) if priced <= bound.amount => {
                    prop_assert_eq!(charged, priced);
                    prop_assert!(anomaly.is_none());
                }
                _ => {
                    prop_assert_eq!(charged, bound.amount);
                    prop_assert!(anomaly.is_some());
                }
            }
        }
    }

    #[test]
    fn a_measured_usage_bound_is_never_below_the_hold() {
        let tariff = per_character("1");
        let held = Amount::from_nanos(500_000_000);
        let bound = Bound::measured_usage(&tariff, &Usage::Characters(1), held).unwrap();
        assert_eq!(bound.amount, held);
        assert_eq!(
            Bound::of_hold(held).amount,
            Amount::from_nanos(1_000_000_000)
        );
    }
}
