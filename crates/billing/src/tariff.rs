//! Tariffs: how one public model is priced, and the charge for a usage (docs/api.md §8 rules 1–7).
//!
//! A charge is computed exactly from the usage and the tariff's prices and rounded **up** to the
//! nano-unit once, at the end — never per component (DESIGN §4).
//!
//! In the price book a tariff is a table tagged by its `meter`, with prices as decimal strings:
//!
//! ```toml
//! [models."speech-2.8-hd"]
//! meter = "characters"
//! per_million_characters = "100"
//!
//! [models."clip-2.0"]
//! meter = "video_tokens"
//! per_million_tokens = "7"
//! reference_video_ratio = "0.6"   # optional, 0.6 when left out
//!
//! [models."gpt-realtime"]
//! meter = "token_classes"           # docs/api.md §8 rule 8; crate::token_class
//! per_million = { text_in = "4", cached_text_in = "0.4", audio_in = "32", text_out = "16", audio_out = "64" }
//! ```

use std::collections::BTreeMap;
use std::fmt;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::error::BillingError;
use crate::exact::Cost;
use crate::meter::{ClipTier, Meter, Usage};
use crate::money::Amount;
use crate::token_class::{TokenClass, TokenClasses};

/// The reference-video tier's share of the standard per-token price when a tariff does not say:
/// 0.6 ("about 60 % of Standard per token", docs/api.md §8 rule 5).
pub const DEFAULT_REFERENCE_VIDEO_RATIO: Decimal = Decimal::from_parts(6, 0, 0, false, 1);

/// Prices are per million units of these meters.
const PER_MILLION: u32 = 6;
/// Prices are per single unit (per second) of these meters.
const PER_UNIT: u32 = 0;

/// How a public model is priced: one variant per meter of docs/api.md §8.
///
/// Serialized internally tagged by `meter`, prices as decimal strings; see the [module
/// documentation](self). Deserialization accepts prices as strings or integers, and refuses
/// fractional JSON/TOML numbers (already rounded in binary floating point) and negative prices.
///
/// ```
/// use tollgate_billing::{Decimal, Tariff};
///
/// let tariff: Tariff = serde_json::from_str(r#"{"meter":"tokens","per_million_tokens":"0.02"}"#)?;
/// assert_eq!(tariff, Tariff::Tokens { per_million_tokens: Decimal::new(2, 2) });
/// # Ok::<(), serde_json::Error>(())
/// ```
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "meter", rename_all = "snake_case")]
pub enum Tariff {
    /// docs/api.md §8 rule 1: speech synthesis, by characters (CJK counting 2).
    Characters {
        /// Price per million characters.
        #[serde(with = "price")]
        #[cfg_attr(feature = "schema", schemars(with = "crate::schema::Price"))]
        per_million_characters: Decimal,
    },
    /// docs/api.md §8 rule 2: recognition, by audio seconds rounded up.
    AudioSeconds {
        /// Price per second of audio.
        #[serde(with = "price")]
        #[cfg_attr(feature = "schema", schemars(with = "crate::schema::Price"))]
        per_second: Decimal,
    },
    /// docs/api.md §8 rule 3: embeddings, by input tokens.
    Tokens {
        /// Price per million input tokens.
        #[serde(with = "price")]
        #[cfg_attr(feature = "schema", schemars(with = "crate::schema::Price"))]
        per_million_tokens: Decimal,
    },
    /// docs/api.md §8 rules 4–5: clip-format video, by completion tokens.
    #[cfg_attr(
        feature = "schema",
        schemars(transform = crate::schema::ratio_may_be_left_out)
    )]
    VideoTokens {
        /// The Standard tier's price per million tokens: the catalog's main unit price.
        #[serde(with = "price")]
        #[cfg_attr(feature = "schema", schemars(with = "crate::schema::Price"))]
        per_million_tokens: Decimal,
        /// The reference-video tier's price as a share of the Standard price per token
        /// (default [`DEFAULT_REFERENCE_VIDEO_RATIO`], 0.6).
        #[serde(with = "price", default = "default_reference_video_ratio")]
        #[cfg_attr(feature = "schema", schemars(with = "crate::schema::Price"))]
        reference_video_ratio: Decimal,
    },
    /// docs/api.md §8 rule 6: generic video, by seconds generated (rounded up, minimum 1) —
    /// at a price per size where the model is priced by size, as Sora-style vendors price
    /// (`per_second_by_size = { "1792x1024" = "0.50" }`; other sizes at `per_second`): the usage
    /// then names its size ([`Usage::VideoSecondsAtSize`]).
    VideoSeconds {
        /// Price per second of video (of any size `per_second_by_size` does not name).
        #[serde(with = "price")]
        #[cfg_attr(feature = "schema", schemars(with = "crate::schema::Price"))]
        per_second: Decimal,
        /// Price per second of video of a size, `WIDTHxHEIGHT`.
        #[serde(
            default,
            skip_serializing_if = "BTreeMap::is_empty",
            serialize_with = "price_table::serialize",
            deserialize_with = "price_by_size::deserialize"
        )]
        #[cfg_attr(
            feature = "schema",
            schemars(with = "BTreeMap<String, crate::schema::Price>")
        )]
        per_second_by_size: BTreeMap<String, Decimal>,
    },
    /// docs/api.md §8 rule 7: native generation, by input and output tokens (thinking counted as output).
    TextTokens {
        /// Price per million input tokens.
        #[serde(with = "price")]
        #[cfg_attr(feature = "schema", schemars(with = "crate::schema::Price"))]
        input_per_million_tokens: Decimal,
        /// Price per million output tokens, thinking tokens included.
        #[serde(with = "price")]
        #[cfg_attr(feature = "schema", schemars(with = "crate::schema::Price"))]
        output_per_million_tokens: Decimal,
    },
    /// docs/api.md §8 rule 8: live sessions and images, by tokens of each class at the class's
    /// price ([`crate::token_class`]). A cached class left out is priced as its uncached class;
    /// a usage counting another class left out cannot be priced ([`BillingError::Unpriced`]).
    TokenClasses {
        /// Price per million tokens of each class priced; at least one.
        #[serde(
            serialize_with = "price_table::serialize",
            deserialize_with = "price_by_class::deserialize"
        )]
        #[cfg_attr(
            feature = "schema",
            schemars(with = "BTreeMap<TokenClass, crate::schema::Price>")
        )]
        per_million: BTreeMap<TokenClass, Decimal>,
    },
    /// docs/api.md §8 rule 11: images delivered, at a price for each (Imagen's published
    /// prices are per image, whatever its size), or by size and quality where the vendor
    /// prices so (dall-e style: `per_image_by_size = { "1024x1024" = "0.04",
    /// "1024x1024/hd" = "0.08" }`; other sizes at `per_image`): the usage then names its size
    /// and quality ([`Usage::ImagesAtSize`]).
    Images {
        /// Price per image (of any size and quality `per_image_by_size` does not name).
        #[serde(with = "price")]
        #[cfg_attr(feature = "schema", schemars(with = "crate::schema::Price"))]
        per_image: Decimal,
        /// Price per image of a size, `WIDTHxHEIGHT`, at standard quality, or `WIDTHxHEIGHT/hd`.
        #[serde(
            default,
            skip_serializing_if = "BTreeMap::is_empty",
            serialize_with = "price_table::serialize",
            deserialize_with = "price_by_picture::deserialize"
        )]
        #[cfg_attr(
            feature = "schema",
            schemars(with = "BTreeMap<String, crate::schema::Price>")
        )]
        per_image_by_size: BTreeMap<String, Decimal>,
    },
}

fn default_reference_video_ratio() -> Decimal {
    DEFAULT_REFERENCE_VIDEO_RATIO
}

impl Tariff {
    /// The meter this tariff prices; a [`Usage`] must be counted on the same one.
    pub const fn meter(&self) -> Meter {
        match self {
            Tariff::Characters { .. } => Meter::Characters,
            Tariff::AudioSeconds { .. } => Meter::AudioSeconds,
            Tariff::Tokens { .. } => Meter::Tokens,
            Tariff::VideoTokens { .. } => Meter::VideoTokens,
            Tariff::VideoSeconds { .. } => Meter::VideoSeconds,
            Tariff::TextTokens { .. } => Meter::TextTokens,
            Tariff::TokenClasses { .. } => Meter::TokenClasses,
            Tariff::Images { .. } => Meter::Images,
        }
    }

    /// Every price and ratio of the tariff.
    /// The tariff's prices (and ratios), in field order.
    pub(crate) fn prices(&self) -> Vec<Decimal> {
        match *self {
            Tariff::Characters {
                per_million_characters: price,
            }
            | Tariff::AudioSeconds { per_second: price }
            | Tariff::Tokens {
                per_million_tokens: price,
            } => vec![price],
            Tariff::VideoSeconds {
                per_second: price,
                per_second_by_size: ref by_size,
            }
            | Tariff::Images {
                per_image: price,
                per_image_by_size: ref by_size,
            } => std::iter::once(price)
                .chain(by_size.values().copied())
                .collect(),
            Tariff::VideoTokens {
                per_million_tokens,
                reference_video_ratio,
            } => vec![per_million_tokens, reference_video_ratio],
            Tariff::TextTokens {
                input_per_million_tokens,
                output_per_million_tokens,
            } => vec![input_per_million_tokens, output_per_million_tokens],
            Tariff::TokenClasses { ref per_million } => per_million.values().copied().collect(),
        }
    }

    /// The same tariff with every unit price multiplied by `multiplier` — a price group's tier
    /// (`docs/decisions.md`, "Price groups"). Ratios between tiers of one tariff (the
    /// reference-video share) are not prices and stay. Exact: the charge of the scaled tariff is
    /// `quantity × price × multiplier`, rounded up once, like any charge.
    ///
    /// Errors: [`BillingError::NegativePrice`] for a negative multiplier,
    /// [`BillingError::Overflow`] if a scaled price is out of range.
    ///
    /// ```
    /// use tollgate_billing::{Amount, Decimal, Tariff, Usage};
    ///
    /// let list = Tariff::Tokens { per_million_tokens: "0.02".parse()? };
    /// let gold = list.scaled("0.75".parse()?)?;
    /// assert_eq!(gold.charge(&Usage::Tokens(1_000))?, Amount::from_nanos(15_000));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scaled(&self, multiplier: Decimal) -> Result<Tariff, BillingError> {
        if multiplier < Decimal::ZERO {
            return Err(BillingError::NegativePrice { price: multiplier });
        }
        let scale = |price: Decimal| price.checked_mul(multiplier).ok_or(BillingError::Overflow);
        Ok(match *self {
            Tariff::Characters {
                per_million_characters,
            } => Tariff::Characters {
                per_million_characters: scale(per_million_characters)?,
            },
            Tariff::AudioSeconds { per_second } => Tariff::AudioSeconds {
                per_second: scale(per_second)?,
            },
            Tariff::Tokens { per_million_tokens } => Tariff::Tokens {
                per_million_tokens: scale(per_million_tokens)?,
            },
            Tariff::VideoTokens {
                per_million_tokens,
                reference_video_ratio,
            } => Tariff::VideoTokens {
                per_million_tokens: scale(per_million_tokens)?,
                reference_video_ratio,
            },
            Tariff::VideoSeconds {
                per_second,
                ref per_second_by_size,
            } => Tariff::VideoSeconds {
                per_second: scale(per_second)?,
                per_second_by_size: per_second_by_size
                    .iter()
                    .map(|(size, price)| Ok((size.clone(), scale(*price)?)))
                    .collect::<Result<_, BillingError>>()?,
            },
            Tariff::TextTokens {
                input_per_million_tokens,
                output_per_million_tokens,
            } => Tariff::TextTokens {
                input_per_million_tokens: scale(input_per_million_tokens)?,
                output_per_million_tokens: scale(output_per_million_tokens)?,
            },
            Tariff::TokenClasses { ref per_million } => Tariff::TokenClasses {
                per_million: per_million
                    .iter()
                    .map(|(class, price)| Ok((*class, scale(*price)?)))
                    .collect::<Result<_, BillingError>>()?,
            },
            Tariff::Images {
                per_image,
                ref per_image_by_size,
            } => Tariff::Images {
                per_image: scale(per_image)?,
                per_image_by_size: per_image_by_size
                    .iter()
                    .map(|(key, price)| Ok((key.clone(), scale(*price)?)))
                    .collect::<Result<_, BillingError>>()?,
            },
        })
    }

    /// The price per million tokens of `class` under a [`Tariff::TokenClasses`] tariff: its own,
    /// or for a cached class left out its uncached class's. `None` for a class the tariff does
    /// not price, and for any other tariff.
    ///
    /// ```
    /// use tollgate_billing::{Decimal, Tariff, TokenClass};
    ///
    /// let tariff: Tariff = serde_json::from_str(
    ///     r#"{"meter":"token_classes","per_million":{"text_in":"4","audio_out":"64"}}"#,
    /// )?;
    /// assert_eq!(tariff.class_price(TokenClass::CachedTextIn), Some(Decimal::from(4)));
    /// assert_eq!(tariff.class_price(TokenClass::AudioIn), None);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn class_price(&self, class: TokenClass) -> Option<Decimal> {
        let Tariff::TokenClasses { per_million } = self else {
            return None;
        };
        per_million
            .get(&class)
            .or_else(|| class.uncached().and_then(|base| per_million.get(&base)))
            .copied()
    }

    /// `classes` at this tariff's class prices, exactly.
    fn classes_cost(&self, classes: &TokenClasses) -> Result<Cost, BillingError> {
        classes
            .counted()
            .try_fold(Cost::ZERO, |sum, (class, tokens)| {
                let price = self
                    .class_price(class)
                    .ok_or(BillingError::Unpriced { class })?;
                sum.checked_add(Cost::of(tokens, &[price], PER_MILLION)?)
            })
    }

    /// Video seconds at `per_second`, whatever the size.
    pub fn video_seconds(per_second: Decimal) -> Tariff {
        Tariff::VideoSeconds {
            per_second,
            per_second_by_size: BTreeMap::new(),
        }
    }

    /// Whether the tariff prices some sizes otherwise than the rest (`per_second_by_size`): a
    /// usage it prices then names its size ([`Usage::VideoSecondsAtSize`]).
    ///
    /// ```
    /// use tollgate_billing::{Amount, Tariff, Usage};
    ///
    /// let sora: Tariff = serde_json::from_str(
    ///     r#"{"meter":"video_seconds","per_second":"0.30","per_second_by_size":{"1792x1024":"0.50"}}"#,
    /// )?;
    /// assert!(sora.prices_by_size());
    /// let large = Usage::VideoSeconds(8).at_size(Some((1792, 1024)));
    /// assert_eq!(sora.charge(&large)?, Amount::from_nanos(4_000_000_000));
    /// let small = Usage::VideoSeconds(8).at_size(Some((1280, 720)));
    /// assert_eq!(sora.charge(&small)?, Amount::from_nanos(2_400_000_000));
    /// assert_eq!(sora.charge(&Usage::VideoSeconds(8))?, Amount::from_nanos(2_400_000_000));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prices_by_size(&self) -> bool {
        matches!(self, Tariff::VideoSeconds { per_second_by_size, .. } if !per_second_by_size.is_empty())
    }

    /// Checks that no price or ratio is negative ([`BillingError::NegativePrice`]). Deserialization
    /// already refuses negative prices; this covers tariffs built in code.
    pub fn validate(&self) -> Result<(), BillingError> {
        match self
            .prices()
            .into_iter()
            .find(|price| *price < Decimal::ZERO)
        {
            Some(price) => Err(BillingError::NegativePrice { price }),
            None => Ok(()),
        }
    }

    /// The charge for a usage, rounded **up** to the nano-unit once at the end (DESIGN §4).
    ///
    /// - Characters, tokens: `quantity × price / 1 000 000` (docs/api.md §8 rules 1, 3).
    /// - Audio and video seconds: `seconds × price` (rules 2, 6); video seconds are charged for at
    ///   least 1 second even if the usage says 0 (rule 6).
    /// - Video tokens: `tokens × price / 1 000 000`, times `reference_video_ratio` for the
    ///   [`ClipTier::ReferenceVideo`] tier (rules 4–5).
    /// - Text tokens: `(input × input price + output × output price) / 1 000 000`, the output
    ///   including thinking tokens (rule 7).
    /// - Tokens by class: `Σ tokens of a class × the class's price / 1 000 000` (rule 8).
    /// - Images: `images × price` (rule 11).
    ///
    /// Errors: [`BillingError::MeterMismatch`] if the usage was counted on another meter than this
    /// tariff prices, [`BillingError::NegativePrice`] for a negative price, and
    /// [`BillingError::Overflow`] if the exact charge (or a step towards it) is out of range.
    ///
    /// ```
    /// use tollgate_billing::{Amount, Decimal, Tariff, Usage};
    ///
    /// let embeddings = Tariff::Tokens { per_million_tokens: "0.02".parse()? };
    /// assert_eq!(embeddings.charge(&Usage::Tokens(1))?, Amount::from_nanos(20));
    /// assert!(embeddings.charge(&Usage::Characters(1)).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    /// What `usage` is charged under `bound`, the most the charge may be (docs/decisions.md,
    /// "Bounded settlement"): its price when that is within the bound, else the bound — also
    /// when the usage cannot be priced. With the price, or why there is none, for the record.
    /// The one rule a settlement charges by and `tollgate audit --recompute` re-derives by.
    ///
    /// ```
    /// use tollgate_billing::{Amount, Tariff, Usage};
    ///
    /// let tariff = Tariff::Tokens { per_million_tokens: "1".parse()? };
    /// let bound = Amount::from_nanos(5_000);
    /// assert_eq!(tariff.charge_within(&Usage::Tokens(3), bound).0, Amount::from_nanos(3_000));
    /// assert_eq!(tariff.charge_within(&Usage::Tokens(9), bound).0, bound);
    /// assert_eq!(tariff.charge_within(&Usage::Characters(1), bound).0, bound);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn charge_within(
        &self,
        usage: &Usage,
        bound: Amount,
    ) -> (Amount, Result<Amount, BillingError>) {
        let priced = self.charge(usage);
        let charged = match &priced {
            Ok(price) if *price <= bound => *price,
            _ => bound,
        };
        (charged, priced)
    }

    pub fn charge(&self, usage: &Usage) -> Result<Amount, BillingError> {
        self.cost(usage)?.round_up()
    }

    /// The charge for `usage` exactly, before its rounding: a decimal string such as
    /// `"0.0000000015"` (docs/architecture.md, "Explanations").
    ///
    /// ```
    /// use tollgate_billing::{Tariff, Usage};
    ///
    /// let tariff = Tariff::Tokens { per_million_tokens: "0.003".parse()? };
    /// assert_eq!(tariff.exact_cost(&Usage::Tokens(1))?, "0.000000003");
    /// assert_eq!(tariff.charge(&Usage::Tokens(1))?.nanos(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exact_cost(&self, usage: &Usage) -> Result<String, BillingError> {
        Ok(self.cost(usage)?.exact_string())
    }

    fn cost(&self, usage: &Usage) -> Result<Cost, BillingError> {
        self.validate()?;
        let cost = match (self, *usage) {
            (
                Tariff::Characters {
                    per_million_characters,
                },
                Usage::Characters(characters),
            ) => Cost::of(characters, &[*per_million_characters], PER_MILLION)?,
            (Tariff::AudioSeconds { per_second }, Usage::AudioSeconds(seconds)) => {
                Cost::of(seconds, &[*per_second], PER_UNIT)?
            }
            (Tariff::Tokens { per_million_tokens }, Usage::Tokens(tokens)) => {
                Cost::of(tokens, &[*per_million_tokens], PER_MILLION)?
            }
            (
                Tariff::VideoTokens {
                    per_million_tokens,
                    reference_video_ratio,
                },
                Usage::VideoTokens { tokens, tier },
            ) => match tier {
                ClipTier::Standard => Cost::of(tokens, &[*per_million_tokens], PER_MILLION)?,
                ClipTier::ReferenceVideo => Cost::of(
                    tokens,
                    &[*per_million_tokens, *reference_video_ratio],
                    PER_MILLION,
                )?,
            },
            (Tariff::VideoSeconds { per_second, .. }, Usage::VideoSeconds(seconds)) => {
                Cost::of(seconds.max(1), &[*per_second], PER_UNIT)?
            }
            (
                Tariff::VideoSeconds {
                    per_second,
                    per_second_by_size,
                },
                Usage::VideoSecondsAtSize {
                    seconds,
                    width,
                    height,
                },
            ) => {
                let price = per_second_by_size
                    .get(&format!("{width}x{height}"))
                    .unwrap_or(per_second);
                Cost::of(seconds.max(1), &[*price], PER_UNIT)?
            }
            (
                Tariff::TextTokens {
                    input_per_million_tokens,
                    output_per_million_tokens,
                },
                Usage::TextTokens { input, output },
            ) => Cost::ZERO
                .checked_add(Cost::of(input, &[*input_per_million_tokens], PER_MILLION)?)?
                .checked_add(Cost::of(
                    output,
                    &[*output_per_million_tokens],
                    PER_MILLION,
                )?)?,
            (Tariff::TokenClasses { .. }, Usage::TokenClasses(classes)) => {
                self.classes_cost(&classes)?
            }
            (Tariff::Images { per_image, .. }, Usage::Images(images)) => {
                Cost::of(images, &[*per_image], PER_UNIT)?
            }
            (
                Tariff::Images {
                    per_image,
                    per_image_by_size,
                },
                Usage::ImagesAtSize {
                    images,
                    width,
                    height,
                    quality,
                },
            ) => {
                let price = per_image_by_size
                    .get(&quality.key(width, height))
                    .unwrap_or(per_image);
                Cost::of(images, &[*price], PER_UNIT)?
            }
            (tariff, usage) => {
                return Err(BillingError::MeterMismatch {
                    tariff: tariff.meter(),
                    usage: usage.meter(),
                });
            }
        };
        Ok(cost)
    }
}

/// Serde for prices: written as decimal strings; read from decimal strings or integers, never from
/// fractional numbers (a binary float has already lost the exact price) and never negative.
mod price {
    use super::*;
    use serde::de::{self, Deserializer, Visitor};
    use serde::ser::Serializer;

    pub(super) fn serialize<S: Serializer>(
        price: &Decimal,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(price)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Decimal, D::Error> {
        deserializer.deserialize_any(PriceVisitor)
    }

    struct PriceVisitor;

    impl PriceVisitor {
        fn non_negative<E: de::Error>(price: Decimal) -> Result<Decimal, E> {
            if price < Decimal::ZERO {
                Err(E::custom(format_args!("price {price} is negative")))
            } else {
                Ok(price)
            }
        }
    }

    impl Visitor<'_> for PriceVisitor {
        type Value = Decimal;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a non-negative price as a decimal string, e.g. \"0.02\"")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Decimal, E> {
            let price = Decimal::from_str_exact(v).map_err(|err| {
                E::custom(format_args!("{v:?} is not an exact decimal price: {err}"))
            })?;
            Self::non_negative(price)
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Decimal, E> {
            Ok(Decimal::from(v))
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Decimal, E> {
            Self::non_negative(Decimal::from(v))
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Decimal, E> {
            Err(E::custom(format_args!(
                "write the price {v} as a decimal string (\"{v}\"): a fractional number is not exact"
            )))
        }
    }
}

/// Serde for a table of prices: its keys as they are, its prices as decimal strings (read back
/// as [`price`] reads them).
mod price_table {
    use super::*;
    use serde::ser::{SerializeMap, Serializer};

    #[derive(Deserialize)]
    pub(super) struct Price(#[serde(with = "super::price")] pub(super) Decimal);

    pub(super) fn serialize<K: Serialize, S: Serializer>(
        prices: &BTreeMap<K, Decimal>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(prices.len()))?;
        for (key, price) in prices {
            map.serialize_entry(key, &price.to_string())?;
        }
        map.end()
    }
}

/// Serde for a token-class tariff's prices: an object of class names to decimal strings, at
/// least one; an unknown class is refused by name.
mod price_by_class {
    use super::*;
    use serde::de::{self, Deserializer};

    use super::price_table::Price;

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<TokenClass, Decimal>, D::Error> {
        let read: BTreeMap<TokenClass, Price> = BTreeMap::deserialize(deserializer)?;
        if read.is_empty() {
            return Err(de::Error::custom(
                "per_million prices no class: name at least one, e.g. { text_in = \"4\" }",
            ));
        }
        Ok(read
            .into_iter()
            .map(|(class, Price(price))| (class, price))
            .collect())
    }
}

/// Serde for a table of prices by size: keys `WIDTHxHEIGHT`, prices as [`price`] reads them.
/// `per_second_by_size`'s keys: `WIDTHxHEIGHT`.
mod price_by_size {
    use super::*;
    use serde::de::Deserializer;

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<String, Decimal>, D::Error> {
        super::price_by_picture::sized(deserializer, "per_second_by_size", false)
    }
}

/// `per_image_by_size`'s keys: `WIDTHxHEIGHT`, or `WIDTHxHEIGHT/hd`.
mod price_by_picture {
    use super::*;
    use serde::de::{self, Deserializer};

    use super::price_table::Price;

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<String, Decimal>, D::Error> {
        sized(deserializer, "per_image_by_size", true)
    }

    /// A table of prices keyed by size (and, where `hd`, a size with `/hd`), each key checked.
    pub(super) fn sized<'de, D: Deserializer<'de>>(
        deserializer: D,
        table: &str,
        hd: bool,
    ) -> Result<BTreeMap<String, Decimal>, D::Error> {
        let read: BTreeMap<String, Price> = BTreeMap::deserialize(deserializer)?;
        read.into_iter()
            .map(|(key, Price(price))| {
                let size = if hd {
                    key.strip_suffix("/hd").unwrap_or(&key)
                } else {
                    &key
                };
                let sides = size.split_once('x').filter(|(w, h)| {
                    [w, h]
                        .iter()
                        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                });
                match sides {
                    Some(_) => Ok((key, price)),
                    None if hd => Err(de::Error::custom(format_args!(
                        "{table}: {key:?} is not a size WIDTHxHEIGHT or WIDTHxHEIGHT/hd, \
                         e.g. \"1024x1024\" or \"1792x1024/hd\""
                    ))),
                    None => Err(de::Error::custom(format_args!(
                        "{table}: {key:?} is not a size WIDTHxHEIGHT, e.g. \"1280x720\""
                    ))),
                }
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Decimal {
        Decimal::from_str_exact(s).unwrap()
    }

    #[test]
    fn a_scaled_tariff_charges_exactly_the_multiple_rounded_up_once() {
        let text = Tariff::TextTokens {
            input_per_million_tokens: dec("0.30"),
            output_per_million_tokens: dec("2.50"),
        };
        let usage = Usage::TextTokens {
            input: 1_234,
            output: 567,
        };
        // (1234 × 0.30 + 567 × 2.50) / 1e6 = 0.0017877, × 1.5 = 0.00268155: exact.
        let gold = text.scaled(dec("1.5")).unwrap().charge(&usage).unwrap();
        assert_eq!(text.charge(&usage).unwrap(), Amount::from_nanos(1_787_700));
        assert_eq!(gold, Amount::from_nanos(2_681_550));
        // 3 tokens × 20 nanos × 0.333 = 19.98 nanos: rounded up once to 20, where rounding each
        // token's 6.66 would give 21.
        let tokens = Tariff::Tokens {
            per_million_tokens: dec("0.02"),
        };
        let third = tokens.scaled(dec("0.333")).unwrap();
        assert_eq!(
            third.charge(&Usage::Tokens(3)).unwrap(),
            Amount::from_nanos(20)
        );
        let video = Tariff::VideoTokens {
            per_million_tokens: dec("2.4"),
            reference_video_ratio: dec("0.6"),
        };
        assert_eq!(
            video.scaled(dec("0.5")).unwrap(),
            Tariff::VideoTokens {
                per_million_tokens: dec("1.2"),
                reference_video_ratio: dec("0.6"),
            }
        );
        assert_eq!(text.scaled(Decimal::ONE).unwrap(), text);
        assert!(text.scaled(dec("-1")).is_err());
        assert!(text.scaled(Decimal::MAX).is_err());
    }

    #[test]
    fn default_ratio_is_sixty_percent() {
        assert_eq!(DEFAULT_REFERENCE_VIDEO_RATIO, dec("0.6"));
        let tariff: Tariff =
            serde_json::from_str(r#"{"meter":"video_tokens","per_million_tokens":"7"}"#).unwrap();
        assert_eq!(
            tariff,
            Tariff::VideoTokens {
                per_million_tokens: dec("7"),
                reference_video_ratio: dec("0.6")
            }
        );
    }

    #[test]
    fn prices_serialize_as_strings() {
        let tariff = Tariff::TextTokens {
            input_per_million_tokens: dec("1.25"),
            output_per_million_tokens: dec("10"),
        };
        let json = serde_json::to_value(&tariff).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "meter": "text_tokens",
                "input_per_million_tokens": "1.25",
                "output_per_million_tokens": "10",
            })
        );
        assert_eq!(serde_json::from_value::<Tariff>(json).unwrap(), tariff);
    }

    #[test]
    fn prices_may_be_integers_but_not_fractions_or_negative() {
        let whole: Tariff =
            serde_json::from_str(r#"{"meter":"video_seconds","per_second":2}"#).unwrap();
        assert_eq!(whole, Tariff::video_seconds(dec("2")));
        for bad in [
            r#"{"meter":"video_seconds","per_second":0.1}"#,
            r#"{"meter":"video_seconds","per_second":"-0.1"}"#,
            r#"{"meter":"video_seconds","per_second":-1}"#,
            r#"{"meter":"video_seconds","per_second":"abc"}"#,
            r#"{"meter":"video_seconds","per_second":"0.00000000000000000000000000001"}"#,
            r#"{"meter":"video_seconds"}"#,
            r#"{"meter":"furlongs","per_second":"1"}"#,
            r#"{"per_second":"1"}"#,
        ] {
            assert!(serde_json::from_str::<Tariff>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn negative_prices_built_in_code_are_refused() {
        let tariff = Tariff::AudioSeconds {
            per_second: dec("-0.01"),
        };
        assert_eq!(
            tariff.charge(&Usage::AudioSeconds(1)),
            Err(BillingError::NegativePrice {
                price: dec("-0.01")
            })
        );
        let ratio = Tariff::VideoTokens {
            per_million_tokens: dec("1"),
            reference_video_ratio: dec("-0.6"),
        };
        assert!(ratio.validate().is_err());
    }

    #[test]
    fn zero_usage_costs_nothing_except_video_seconds() {
        let speech = Tariff::Characters {
            per_million_characters: dec("100"),
        };
        assert_eq!(speech.charge(&Usage::Characters(0)), Ok(Amount::ZERO));
        let video = Tariff::video_seconds(dec("0.05"));
        assert_eq!(
            video.charge(&Usage::VideoSeconds(0)),
            Ok(Amount::from_nanos(50_000_000))
        );
    }

    #[test]
    fn every_meter_mismatch_is_reported() {
        let tariffs = [
            Tariff::Characters {
                per_million_characters: dec("1"),
            },
            Tariff::AudioSeconds {
                per_second: dec("1"),
            },
            Tariff::Tokens {
                per_million_tokens: dec("1"),
            },
            Tariff::VideoTokens {
                per_million_tokens: dec("1"),
                reference_video_ratio: dec("0.6"),
            },
            Tariff::video_seconds(dec("1")),
            Tariff::TextTokens {
                input_per_million_tokens: dec("1"),
                output_per_million_tokens: dec("1"),
            },
            Tariff::TokenClasses {
                per_million: TokenClass::ALL.iter().map(|c| (*c, dec("1"))).collect(),
            },
        ];
        let usages = [
            Usage::Characters(1),
            Usage::AudioSeconds(1),
            Usage::Tokens(1),
            Usage::VideoTokens {
                tokens: 1,
                tier: ClipTier::Standard,
            },
            Usage::VideoSeconds(1),
            Usage::TextTokens {
                input: 1,
                output: 1,
            },
            Usage::TokenClasses(TokenClasses {
                audio_out: 1,
                ..TokenClasses::default()
            }),
        ];
        for tariff in &tariffs {
            for usage in &usages {
                let charge = tariff.charge(usage);
                if tariff.meter() == usage.meter() {
                    assert!(charge.is_ok(), "{tariff:?} {usage:?}");
                } else {
                    assert_eq!(
                        charge,
                        Err(BillingError::MeterMismatch {
                            tariff: tariff.meter(),
                            usage: usage.meter()
                        })
                    );
                }
            }
        }
    }

    #[test]
    fn huge_quantities_overflow_as_errors() {
        let tariff = Tariff::AudioSeconds {
            per_second: dec("1000"),
        };
        assert_eq!(
            tariff.charge(&Usage::AudioSeconds(u64::MAX)),
            Err(BillingError::Overflow)
        );
        let text = Tariff::TextTokens {
            input_per_million_tokens: Decimal::MAX,
            output_per_million_tokens: Decimal::MAX,
        };
        assert_eq!(
            text.charge(&Usage::TextTokens {
                input: u64::MAX,
                output: u64::MAX
            }),
            Err(BillingError::Overflow)
        );
    }

    fn realtime() -> Tariff {
        serde_json::from_str(
            r#"{"meter":"token_classes","per_million":{"text_in":"4","cached_text_in":"0.4","audio_in":"32","text_out":"16","audio_out":"64"}}"#,
        )
        .unwrap()
    }

    #[test]
    fn tokens_by_class_are_each_charged_at_their_class_price_rounded_up_once() {
        let usage = Usage::TokenClasses(TokenClasses {
            text_in: 1,
            cached_text_in: 1,
            audio_in: 1,
            text_out: 1,
            audio_out: 1,
            ..TokenClasses::default()
        });
        // (4 + 0.4 + 32 + 16 + 64) / 1e6 = 0.0001164 exactly: 116,400 nanos.
        assert_eq!(realtime().exact_cost(&usage).unwrap(), "0.0001164");
        assert_eq!(
            realtime().charge(&usage).unwrap(),
            Amount::from_nanos(116_400)
        );
        // A third of a nano for each of three classes: 1 nano rounded once, not 3.
        let thirds = Tariff::TokenClasses {
            per_million: [
                (TokenClass::TextIn, dec("0.000333")),
                (TokenClass::AudioIn, dec("0.000333")),
                (TokenClass::TextOut, dec("0.000333")),
            ]
            .into_iter()
            .collect(),
        };
        let one_each = Usage::TokenClasses(TokenClasses {
            text_in: 1,
            audio_in: 1,
            text_out: 1,
            ..TokenClasses::default()
        });
        assert_eq!(thirds.charge(&one_each).unwrap(), Amount::from_nanos(1));
    }

    #[test]
    fn a_cached_class_left_out_costs_its_uncached_price_and_another_class_left_out_is_unpriced() {
        let cached_audio = Usage::TokenClasses(TokenClasses {
            cached_audio_in: 1_000_000,
            ..TokenClasses::default()
        });
        assert_eq!(
            realtime().charge(&cached_audio).unwrap(),
            Amount::from_nanos(32_000_000_000)
        );
        let image = Usage::TokenClasses(TokenClasses {
            text_in: 10,
            image_in: 1,
            ..TokenClasses::default()
        });
        assert_eq!(
            realtime().charge(&image),
            Err(BillingError::Unpriced {
                class: TokenClass::ImageIn
            })
        );
        // Unpriced, a usage is charged its bound, never a price the gateway made up.
        let bound = Amount::from_nanos(7);
        assert_eq!(realtime().charge_within(&image, bound).0, bound);
        // Zero tokens of an unpriced class are no reason to refuse.
        let text = Usage::TokenClasses(TokenClasses {
            text_in: 1_000_000,
            ..TokenClasses::default()
        });
        assert_eq!(
            realtime().charge(&text).unwrap(),
            Amount::from_nanos(4_000_000_000)
        );
    }

    #[test]
    fn a_token_class_tariff_reads_back_as_written_and_refuses_what_it_cannot_price() {
        let tariff = realtime();
        let json = serde_json::to_string(&tariff).unwrap();
        assert_eq!(serde_json::from_str::<Tariff>(&json).unwrap(), tariff);
        for bad in [
            r#"{"meter":"token_classes","per_million":{}}"#,
            r#"{"meter":"token_classes","per_million":{"video_in":"1"}}"#,
            r#"{"meter":"token_classes","per_million":{"text_in":"-1"}}"#,
            r#"{"meter":"token_classes","per_million":{"text_in":0.1}}"#,
            r#"{"meter":"token_classes"}"#,
        ] {
            assert!(serde_json::from_str::<Tariff>(bad).is_err(), "{bad}");
        }
        let doubled = tariff.scaled(dec("2")).unwrap();
        assert_eq!(doubled.class_price(TokenClass::AudioOut), Some(dec("128")));
        assert_eq!(
            doubled.class_price(TokenClass::CachedAudioIn),
            Some(dec("64"))
        );
    }

    proptest::proptest! {
        /// A token-class tariff that prices text in and out as a text tariff does charges what
        /// the text tariff charges for the same tokens: the model the new rule answers to.
        #[test]
        fn token_classes_priced_as_text_charge_as_text_tokens(
            input in 0u64..10_000_000_000,
            output in 0u64..10_000_000_000,
            input_price in 0u64..100_000_000,
            output_price in 0u64..100_000_000,
            scale in 0u32..9,
        ) {
            let input_price = Decimal::new(i64::try_from(input_price).unwrap(), scale);
            let output_price = Decimal::new(i64::try_from(output_price).unwrap(), scale);
            let text = Tariff::TextTokens {
                input_per_million_tokens: input_price,
                output_per_million_tokens: output_price,
            };
            let classes = Tariff::TokenClasses {
                per_million: [(TokenClass::TextIn, input_price), (TokenClass::TextOut, output_price)]
                    .into_iter()
                    .collect(),
            };
            let by_class = Usage::TokenClasses(TokenClasses { text_in: input, text_out: output, ..TokenClasses::default() });
            proptest::prop_assert_eq!(
                classes.charge(&by_class),
                text.charge(&Usage::TextTokens { input, output })
            );
        }

        /// More tokens of any class never cost less.
        #[test]
        fn more_tokens_never_cost_less(
            counts in proptest::collection::vec(0u64..1_000_000_000, 9),
            class in 0usize..9,
            more in 1u64..1_000_000,
        ) {
            let tariff = Tariff::TokenClasses {
                per_million: TokenClass::ALL.iter().zip(["4", "0.4", "32", "0.4", "5", "0.5", "16", "64", "40"]).map(|(c, p)| (*c, dec(p))).collect(),
            };
            let mut usage = TokenClasses::default();
            for (c, n) in TokenClass::ALL.iter().zip(&counts) {
                usage.add(*c, *n);
            }
            let before = tariff.charge(&Usage::TokenClasses(usage)).unwrap();
            usage.add(TokenClass::ALL[class], more);
            let after = tariff.charge(&Usage::TokenClasses(usage)).unwrap();
            proptest::prop_assert!(after >= before);
        }
    }
}
