//! Why a charge is what it is (docs/architecture.md, "Explanations"): a machine-readable
//! account of one charge — the meter, the quantity and how it was measured, the unit prices and
//! their version, the price group's multiplier, the exact product and its one rounding, the hold
//! and the bound, and what the bound or the account's balance cut.
//!
//! An [`Explanation`] is assembled from what the charge recorded (its ledger row, its usage
//! record, its price version) and [`Explanation::derive`]s the arithmetic again, so that what it
//! shows is what anyone can recompute.

use serde::{Deserialize, Serialize};

use crate::error::BillingError;
use crate::meter::{Meter, Usage};
use crate::money::Amount;
use crate::tariff::Tariff;

/// How a charge's quantity was measured.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// The upstream's own usage figure (within the bound).
    #[default]
    Vendor,
    /// The gateway's own count of what it sent or relayed (characters, tokens): the upstream
    /// reported none.
    LocalCount,
    /// The gateway's probe of media it spooled (an audio file's duration).
    Probe,
    /// What the client asked for (a video's seconds and resolution): the upstream reported none.
    Requested,
    /// The part of a stream the client received before it went away.
    DeliveredPart,
}

impl Measure {
    /// The name stored and shown.
    pub const fn as_str(self) -> &'static str {
        match self {
            Measure::Vendor => "vendor",
            Measure::LocalCount => "local_count",
            Measure::Probe => "probe",
            Measure::Requested => "requested",
            Measure::DeliveredPart => "delivered_part",
        }
    }

    /// The measure named `name` ([`Measure::as_str`]).
    pub fn parse(name: &str) -> Option<Measure> {
        [
            Measure::Vendor,
            Measure::LocalCount,
            Measure::Probe,
            Measure::Requested,
            Measure::DeliveredPart,
        ]
        .into_iter()
        .find(|m| m.as_str() == name)
    }
}

/// The one rounding rule (DESIGN §4).
pub const ROUNDING: &str = "up to the nano-unit, once";

/// One charge, explained.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explanation {
    /// The ledger row (`led_…`).
    pub ledger_id: String,
    /// The account charged. A request id can be the client's own (`x-request-id`), so two
    /// accounts' requests may share one: their charges are told apart by this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// The request that was charged (a task's: the request that created it).
    pub request_id: Option<String>,
    /// The task, for a task's charge.
    pub task_id: Option<String>,
    /// When it was charged, Unix milliseconds.
    pub charged_at: i64,
    /// The public model.
    pub model: String,
    /// The meter.
    pub meter: Meter,
    /// The quantity charged for, as recorded.
    pub quantity: Usage,
    /// The quantity in words: `tokens=12`, `input_tokens=10;output_tokens=5`.
    pub units: String,
    /// How the quantity was measured (`None` when the usage record has been pruned).
    pub measured: Option<Measure>,
    /// Why the quantity is not the ordinary one, when it is not.
    pub note: Option<String>,
    /// The price version (`None`: a charge of a release before price versions).
    pub price_version: Option<i64>,
    /// The version was rebuilt from the configuration at the upgrade that introduced versions.
    pub price_reconstructed: bool,
    /// The list tariff of that version.
    pub tariff: Option<Tariff>,
    /// The caller's price group (`None`: list prices).
    pub price_group: Option<String>,
    /// The group's multiplier for this model, a decimal string (`"1"` without a group).
    pub multiplier: String,
    /// quantity × unit prices × multiplier, exactly, before rounding (a decimal string).
    pub exact: Option<String>,
    /// [`ROUNDING`].
    pub rounding: String,
    /// The exact amount rounded: the price of the quantity.
    pub priced: Option<Amount>,
    /// What was held for the request (`None` when the usage record has been pruned).
    pub hold: Option<Amount>,
    /// The most the charge could be.
    pub bound: Option<Amount>,
    /// Why the bound is what it is (`twice the hold`, `the locally measured quantity`).
    pub bound_basis: Option<String>,
    /// The price was above the bound (or could not be computed), and the bound was charged.
    pub cut_by_bound: bool,
    /// What the ledger row says was refused, when something was.
    pub anomaly: Option<String>,
    /// What the account could not pay (the operator's loss).
    pub loss: Amount,
    /// What was taken from the balance.
    pub charged: Amount,
}

/// One charge's arithmetic, derived from its quantity, its version's tariff, the price group's
/// multiplier and its bound by the rule a settlement charges by ([`Tariff::charge_within`]):
/// what [`Explanation::derive`] shows and `tollgate audit --recompute` compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derivation {
    /// quantity × unit prices × multiplier, exactly, before rounding (`None`: out of range).
    pub exact: Option<String>,
    /// The exact amount rounded ([`ROUNDING`]); `None` when it cannot be computed.
    pub priced: Option<Amount>,
    /// What the settlement charges: the price, or the bound when the price is above it (or
    /// cannot be computed).
    pub charge: Amount,
    /// The bound was charged instead of the price.
    pub cut_by_bound: bool,
}

impl Derivation {
    /// Derives the charge for `quantity` at `tariff` × `multiplier` within `bound` (none: a
    /// charge without one, which must then price).
    ///
    /// ```
    /// use tollgate_billing::{Amount, Tariff, Usage, explain::Derivation};
    ///
    /// let tariff = Tariff::Tokens { per_million_tokens: "0.03".parse()? };
    /// let bound = Some(Amount::from_nanos(1_000));
    /// let cut = Derivation::of(&tariff, "0.5".parse()?, &Usage::Tokens(1_000_000_000), bound)?;
    /// assert_eq!((cut.charge.nanos(), cut.cut_by_bound), (1_000, true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of(
        tariff: &Tariff,
        multiplier: rust_decimal::Decimal,
        quantity: &Usage,
        bound: Option<Amount>,
    ) -> Result<Derivation, BillingError> {
        let scaled = tariff.scaled(multiplier)?;
        let exact = scaled.exact_cost(quantity).ok();
        let (charge, priced) = match bound {
            Some(bound) => scaled.charge_within(quantity, bound),
            None => {
                let price = scaled.charge(quantity)?;
                (price, Ok(price))
            }
        };
        let priced = priced.ok();
        Ok(Derivation {
            exact,
            cut_by_bound: priced.is_none_or(|p| p != charge),
            priced,
            charge,
        })
    }
}

impl Explanation {
    /// Fills in the arithmetic ([`Derivation::of`]) from the recorded quantity, the version's
    /// `tariff` and the multiplier: the exact product, its rounding, and whether the bound cut
    /// it. Returns whether the result agrees with what was charged (less the loss).
    pub fn derive(&mut self, tariff: &Tariff) -> bool {
        self.tariff = Some(tariff.clone());
        let Ok(multiplier) = self.multiplier.parse::<rust_decimal::Decimal>() else {
            return false;
        };
        let Ok(derived) = Derivation::of(tariff, multiplier, &self.quantity, self.bound) else {
            return false;
        };
        self.exact = derived.exact;
        self.priced = derived.priced;
        self.cut_by_bound = derived.cut_by_bound;
        derived.charge.nanos().saturating_sub(self.loss.nanos()) == self.charged.nanos()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn explanation(quantity: Usage, charged: i64, bound: Option<i64>) -> Explanation {
        Explanation {
            ledger_id: "led_1".into(),
            account_id: None,
            request_id: None,
            task_id: None,
            charged_at: 0,
            model: "m".into(),
            meter: quantity.meter(),
            quantity,
            units: quantity.in_words(),
            measured: Some(Measure::Vendor),
            note: None,
            price_version: Some(1),
            price_reconstructed: false,
            tariff: None,
            price_group: Some("gold".into()),
            multiplier: "0.5".into(),
            exact: None,
            rounding: ROUNDING.into(),
            priced: None,
            hold: None,
            bound: bound.map(Amount::from_nanos),
            bound_basis: None,
            cut_by_bound: false,
            anomaly: None,
            loss: Amount::ZERO,
            charged: Amount::from_nanos(charged),
        }
    }

    #[test]
    fn the_arithmetic_is_shown_before_and_after_its_one_rounding() {
        let tariff = Tariff::Tokens {
            per_million_tokens: "0.03".parse().unwrap(),
        };
        // 7 tokens × 0.03 / 10⁶ × 0.5 = 0.000000105: 105 nano-units exactly.
        let mut e = explanation(Usage::Tokens(7), 105, Some(1_000));
        assert!(e.derive(&tariff));
        assert_eq!(e.exact.as_deref(), Some("0.000000105"));
        assert_eq!(e.priced, Some(Amount::from_nanos(105)));
        assert!(!e.cut_by_bound);
        // 1 token: 0.000000015 → rounds up to 15 nano-units; 0.0000000015 would round to 2.
        let mut e = explanation(Usage::Tokens(1), 15, None);
        assert!(e.derive(&Tariff::Tokens {
            per_million_tokens: "0.03".parse().unwrap()
        }));
        let mut tiny = explanation(Usage::Tokens(1), 2, None);
        assert!(tiny.derive(&Tariff::Tokens {
            per_million_tokens: "0.003".parse().unwrap()
        }));
        assert_eq!(tiny.exact.as_deref(), Some("0.0000000015"));
        // A lying upstream's figure, cut at the bound.
        let mut cut = explanation(Usage::Tokens(1_000_000_000), 1_000, Some(1_000));
        assert!(cut.derive(&tariff));
        assert!(cut.cut_by_bound);
        // An edited amount does not agree.
        let mut edited = explanation(Usage::Tokens(7), 106, Some(1_000));
        assert!(!edited.derive(&tariff));
    }

    #[test]
    fn a_charge_by_token_class_derives_from_its_recorded_quantity() {
        let tariff: Tariff = serde_json::from_str(
            r#"{"meter":"token_classes","per_million":{"text_in":"4","cached_text_in":"0.4","audio_in":"32","text_out":"16","audio_out":"64"}}"#,
        )
        .unwrap();
        let quantity = Usage::TokenClasses(crate::TokenClasses {
            text_in: 60,
            cached_text_in: 40,
            audio_in: 500,
            audio_out: 900,
            ..crate::TokenClasses::default()
        });
        // (60 × 4 + 40 × 0.4 + 500 × 32 + 900 × 64) / 10⁶ × 0.5 = 0.036928.
        let mut e = explanation(quantity, 36_928_000, Some(100_000_000));
        assert_eq!(
            e.units,
            "text_in=60;cached_text_in=40;audio_in=500;audio_out=900"
        );
        assert!(e.derive(&tariff));
        assert_eq!(e.exact.as_deref(), Some("0.036928"));
        assert!(!e.cut_by_bound);
        // Image tokens on a model not priced for them: charged the bound, which derives too.
        let unpriced = Usage::TokenClasses(crate::TokenClasses {
            image_in: 1,
            ..crate::TokenClasses::default()
        });
        let mut cut = explanation(unpriced, 7, Some(7));
        assert!(cut.derive(&tariff));
        assert!(cut.cut_by_bound && cut.priced.is_none());
    }

    #[test]
    fn measures_round_trip_by_name() {
        for m in [
            Measure::Vendor,
            Measure::LocalCount,
            Measure::Probe,
            Measure::Requested,
            Measure::DeliveredPart,
        ] {
            assert_eq!(Measure::parse(m.as_str()), Some(m));
        }
        assert_eq!(Measure::parse("guess"), None);
    }
}
