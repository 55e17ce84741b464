//! Public price lists (docs/operations.md, "Importing a price list"): LiteLLM's
//! `model_prices_and_context_window.json` and models.dev's `api.json`, read into what each says a
//! model costs, and the [`Tariff`] that makes on a model's meter.
//!
//! Every number is read from its text in the file — never through a float — so a listed
//! `2e-08` USD a token is exactly 0.02 a million tokens.
//!
//! | meter | LiteLLM field (USD a unit) | models.dev field |
//! |---|---|---|
//! | `tokens` | `input_cost_per_token` × 10⁶ | `cost.input` (a million tokens) |
//! | `text_tokens` | `input_cost_per_token`, `output_cost_per_token` × 10⁶ | `cost.input`, `cost.output` |
//! | `characters` | `input_cost_per_character` × 10⁶ | — |
//! | `audio_seconds` | `input_cost_per_second` | `cost.per_minute` ÷ 60 |
//! | `video_seconds` | `output_cost_per_video_per_second` | — |
//! | `video_tokens` | — | — |
//! | `token_classes` | per class × 10⁶: `input_cost_per_token` (`text_in`), `cache_read_input_token_cost`, `input_cost_per_audio_token`, `cache_read_input_audio_token_cost`, `input_cost_per_image_token`, `cache_read_input_image_token_cost`, `output_cost_per_token` (`text_out`), `output_cost_per_audio_token`, `output_cost_per_image_token` | `cost.input`, `cost.cache_read` (cached text), `cost.input_audio`, `cost.output`, `cost.output_audio` |
//! | `images` | `output_cost_per_image` | — |
//!
//! A field the list does not have for the model's meter is [`Unlisted`]: the model keeps its
//! price. The clip tier's `reference_video_ratio` is not in either list and is kept, and so is
//! the price of a token class the list does not name.

use std::collections::BTreeMap;

use rust_decimal::{Decimal, RoundingStrategy};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::meter::Meter;
use crate::tariff::Tariff;
use crate::token_class::TokenClass;

/// Which list a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// LiteLLM's `model_prices_and_context_window.json`: `{id: {input_cost_per_token, …}}`.
    LiteLlm,
    /// models.dev's `api.json`: `{provider: {models: {model: {cost: {input, output, …}}}}}`;
    /// a model's id is `provider/model`.
    ModelsDev,
}

impl Format {
    /// The name on the command line.
    pub const fn as_str(self) -> &'static str {
        match self {
            Format::LiteLlm => "litellm",
            Format::ModelsDev => "models.dev",
        }
    }

    /// The format named `name` ([`Format::as_str`]).
    pub fn parse(name: &str) -> Option<Format> {
        [Format::LiteLlm, Format::ModelsDev]
            .into_iter()
            .find(|f| f.as_str() == name)
    }
}

/// What a list says one model costs, in USD a unit, as listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listed {
    /// An input (prompt) token.
    pub input_token: Option<Decimal>,
    /// An output token.
    pub output_token: Option<Decimal>,
    /// A character of text to speak.
    pub character: Option<Decimal>,
    /// A second of audio to recognise.
    pub audio_second: Option<Decimal>,
    /// A second of video generated.
    pub video_second: Option<Decimal>,
    /// An image drawn (`images`).
    pub image: Option<Decimal>,
    /// A token of each class the list prices apart (`token_classes`).
    pub classes: BTreeMap<TokenClass, Decimal>,
}

/// LiteLLM's field for each token class, USD a token.
const LITELLM_CLASSES: [(TokenClass, &str); 9] = [
    (TokenClass::TextIn, "input_cost_per_token"),
    (TokenClass::CachedTextIn, "cache_read_input_token_cost"),
    (TokenClass::AudioIn, "input_cost_per_audio_token"),
    (
        TokenClass::CachedAudioIn,
        "cache_read_input_audio_token_cost",
    ),
    (TokenClass::ImageIn, "input_cost_per_image_token"),
    (
        TokenClass::CachedImageIn,
        "cache_read_input_image_token_cost",
    ),
    (TokenClass::TextOut, "output_cost_per_token"),
    (TokenClass::AudioOut, "output_cost_per_audio_token"),
    (TokenClass::ImageOut, "output_cost_per_image_token"),
];

/// models.dev's `cost` field for each token class it lists, USD a million tokens.
const MODELS_DEV_CLASSES: [(TokenClass, &str); 5] = [
    (TokenClass::TextIn, "input"),
    (TokenClass::CachedTextIn, "cache_read"),
    (TokenClass::AudioIn, "input_audio"),
    (TokenClass::TextOut, "output"),
    (TokenClass::AudioOut, "output_audio"),
];

/// The classes of `fields` that have a price.
fn classes<E>(
    fields: &[(TokenClass, &str)],
    price: impl Fn(&str) -> Result<Option<Decimal>, E>,
) -> Result<BTreeMap<TokenClass, Decimal>, E> {
    let mut out = BTreeMap::new();
    for (class, field) in fields {
        if let Some(p) = price(field)? {
            out.insert(*class, p);
        }
    }
    Ok(out)
}

/// A price list read from its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceList {
    /// Which list it is.
    pub format: Format,
    /// Each model's prices, by the list's id.
    pub models: BTreeMap<String, Listed>,
}

/// Why a list gives no tariff for a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unlisted {
    /// The id is not in the list.
    #[error("{0:?} is not in the list")]
    Missing(String),
    /// The list has the model but no price for the meter.
    #[error("the list has no {meter} price for {id:?}")]
    NoPrice {
        /// The list's id.
        id: String,
        /// The public model's meter.
        meter: Meter,
    },
}

/// Decimal places a price derived by division (a per-minute price ÷ 60) keeps, rounded up: a
/// nano-unit of a millionth of a unit.
const DERIVED_PLACES: u32 = 15;

impl PriceList {
    /// Reads `text` as `format`, or as the format its shape shows when `None`.
    pub fn parse(text: &str, format: Option<Format>) -> Result<PriceList, String> {
        let top: BTreeMap<String, Box<RawValue>> =
            serde_json::from_str(text).map_err(|e| format!("not a JSON object of models: {e}"))?;
        let format = match format {
            Some(format) => format,
            None => detect(&top)?,
        };
        let mut models = BTreeMap::new();
        match format {
            Format::LiteLlm => {
                for (id, entry) in &top {
                    // `sample_spec` documents the fields; entries that are not objects are notes.
                    let Ok(fields) =
                        serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(entry.get())
                    else {
                        continue;
                    };
                    if id == "sample_spec" {
                        continue;
                    }
                    let price = |name: &str| number(fields.get(name).map(|v| &**v));
                    models.insert(
                        id.clone(),
                        Listed {
                            input_token: price("input_cost_per_token")?,
                            output_token: price("output_cost_per_token")?,
                            character: price("input_cost_per_character")?,
                            audio_second: price("input_cost_per_second")?,
                            video_second: price("output_cost_per_video_per_second")?,
                            image: price("output_cost_per_image")?,
                            classes: classes(&LITELLM_CLASSES, price)?,
                        },
                    );
                }
            }
            Format::ModelsDev => {
                #[derive(Deserialize)]
                struct Provider {
                    id: Option<String>,
                    #[serde(default)]
                    models: BTreeMap<String, Model>,
                }
                #[derive(Deserialize)]
                struct Model {
                    #[serde(default)]
                    cost: BTreeMap<String, Box<RawValue>>,
                }
                for (key, entry) in &top {
                    let provider: Provider = serde_json::from_str(entry.get())
                        .map_err(|e| format!("provider {key:?}: {e}"))?;
                    let provider_id = provider.id.as_deref().unwrap_or(key);
                    for (name, model) in provider.models {
                        let per_million = |field: &str| {
                            number(model.cost.get(field).map(|v| &**v))
                                .map(|p| p.map(|p| (p / Decimal::from(1_000_000)).normalize()))
                        };
                        let per_minute = number(model.cost.get("per_minute").map(|v| &**v))?;
                        models.insert(
                            format!("{provider_id}/{name}"),
                            Listed {
                                input_token: per_million("input")?,
                                output_token: per_million("output")?,
                                character: None,
                                audio_second: per_minute.map(|p| {
                                    (p / Decimal::from(60))
                                        .round_dp_with_strategy(
                                            DERIVED_PLACES,
                                            RoundingStrategy::AwayFromZero,
                                        )
                                        .normalize()
                                }),
                                video_second: None,
                                image: None,
                                classes: classes(&MODELS_DEV_CLASSES, per_million)?,
                            },
                        );
                    }
                }
            }
        }
        Ok(PriceList { format, models })
    }

    /// The tariff `id`'s listed prices make on `current`'s meter (the clip tier's reference
    /// ratio, which no list has, is `current`'s).
    pub fn tariff(&self, id: &str, current: &Tariff) -> Result<Tariff, Unlisted> {
        let listed = self
            .models
            .get(id)
            .ok_or_else(|| Unlisted::Missing(id.to_owned()))?;
        let million = Decimal::from(1_000_000);
        let per_million = |p: Option<Decimal>| p.map(|p| (p * million).normalize());
        let tariff = match current {
            Tariff::Tokens { .. } => per_million(listed.input_token).map(|p| Tariff::Tokens {
                per_million_tokens: p,
            }),
            Tariff::TextTokens { .. } => per_million(listed.input_token)
                .zip(per_million(listed.output_token))
                .map(|(input, output)| Tariff::TextTokens {
                    input_per_million_tokens: input,
                    output_per_million_tokens: output,
                }),
            Tariff::Characters { .. } => {
                per_million(listed.character).map(|p| Tariff::Characters {
                    per_million_characters: p,
                })
            }
            Tariff::AudioSeconds { .. } => listed
                .audio_second
                .map(|p| Tariff::AudioSeconds { per_second: p }),
            // The lists have no sizes: the prices by size set here stay.
            Tariff::VideoSeconds {
                per_second_by_size, ..
            } => listed.video_second.map(|per_second| Tariff::VideoSeconds {
                per_second,
                per_second_by_size: per_second_by_size.clone(),
            }),
            Tariff::VideoTokens { .. } => None,
            // The lists price dall-e by the pixel, in floats: the prices by size set here stay.
            Tariff::Images {
                per_image_by_size, ..
            } => listed.image.map(|p| Tariff::Images {
                per_image: p.normalize(),
                per_image_by_size: per_image_by_size.clone(),
            }),
            // The classes the list prices, over those priced here.
            Tariff::TokenClasses { per_million: here } => {
                (!listed.classes.is_empty()).then(|| Tariff::TokenClasses {
                    per_million: here
                        .iter()
                        .map(|(class, price)| (*class, *price))
                        .chain(
                            listed
                                .classes
                                .iter()
                                .map(|(class, price)| (*class, (*price * million).normalize())),
                        )
                        .collect(),
                })
            }
        };
        tariff.ok_or_else(|| Unlisted::NoPrice {
            id: id.to_owned(),
            meter: current.meter(),
        })
    }
}

/// The largest relative change from `current` to `proposed` over their prices: `Some(0.25)` for
/// a rise of 25 %, negative when every price falls, `None` when a price rises from zero (a rise
/// without bound).
///
/// ```
/// use tollgate_billing::{Tariff, price_list::largest_increase};
///
/// let at = |p: &str| Tariff::Tokens { per_million_tokens: p.parse().unwrap() };
/// assert_eq!(largest_increase(&at("0.02"), &at("0.025")), Some("0.25".parse().unwrap()));
/// assert_eq!(largest_increase(&at("0"), &at("0.01")), None);
/// ```
pub fn largest_increase(current: &Tariff, proposed: &Tariff) -> Option<Decimal> {
    let mut largest: Option<Decimal> = None;
    for (old, new) in current.prices().into_iter().zip(proposed.prices()) {
        if old.is_zero() {
            if new > Decimal::ZERO {
                return None;
            }
            continue;
        }
        let change = (new - old) / old;
        largest = Some(largest.map_or(change, |l| l.max(change)));
    }
    Some(largest.unwrap_or(Decimal::ZERO).normalize())
}

/// The largest fall among the prices of `current` → `proposed`, as a positive fraction of the
/// old price (`0.5`: halved, `1`: to zero; `0` when nothing falls). A list that drops a price
/// to zero — a typo, a broken export, a model the list now calls free — would charge every
/// request nothing from then on.
///
/// ```
/// use tollgate_billing::Tariff;
/// use tollgate_billing::price_list::largest_decrease;
///
/// let at = |p: &str| Tariff::Tokens { per_million_tokens: p.parse().unwrap() };
/// assert_eq!(largest_decrease(&at("0.02"), &at("0.015")), "0.25".parse().unwrap());
/// assert_eq!(largest_decrease(&at("0.02"), &at("0")), "1".parse().unwrap());
/// assert_eq!(largest_decrease(&at("0.02"), &at("0.03")), "0".parse().unwrap());
/// ```
pub fn largest_decrease(current: &Tariff, proposed: &Tariff) -> Decimal {
    let mut largest = Decimal::ZERO;
    for (old, new) in current.prices().into_iter().zip(proposed.prices()) {
        if old > Decimal::ZERO && new < old {
            largest = largest.max((old - new) / old);
        }
    }
    largest.normalize()
}

/// A listed price from its text: `2e-08`, `0.02`, `0`; `None` when absent or null.
fn number(raw: Option<&RawValue>) -> Result<Option<Decimal>, String> {
    let Some(raw) = raw else { return Ok(None) };
    let text = raw.get().trim();
    if text == "null" {
        return Ok(None);
    }
    let parsed = if text.contains(['e', 'E']) {
        Decimal::from_scientific(text)
    } else {
        text.parse::<Decimal>()
    };
    let price = parsed.map_err(|e| format!("price {text}: {e}"))?;
    if price < Decimal::ZERO {
        return Err(format!("price {text} is negative"));
    }
    Ok(Some(price.normalize()))
}

/// The format a file's shape shows: LiteLLM's entries name `litellm_provider`, models.dev's
/// providers hold `models`.
fn detect(top: &BTreeMap<String, Box<RawValue>>) -> Result<Format, String> {
    #[derive(Deserialize)]
    struct Shape {
        litellm_provider: Option<serde::de::IgnoredAny>,
        models: Option<serde::de::IgnoredAny>,
    }
    for entry in top.values() {
        let Ok(shape) = serde_json::from_str::<Shape>(entry.get()) else {
            continue;
        };
        if shape.litellm_provider.is_some() {
            return Ok(Format::LiteLlm);
        }
        if shape.models.is_some() {
            return Ok(Format::ModelsDev);
        }
    }
    Err("neither LiteLLM's model_prices_and_context_window.json nor models.dev's api.json (say which with --format)".into())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const LITELLM: &str = r#"{
        "sample_spec": {"input_cost_per_token": 0.0, "litellm_provider": "one of …"},
        "text-embedding-3-small": {"input_cost_per_token": 2e-08, "litellm_provider": "openai", "mode": "embedding", "output_cost_per_token": 0.0},
        "whisper-1": {"input_cost_per_second": 0.0001, "litellm_provider": "openai", "mode": "audio_transcription", "output_cost_per_second": 0.0001},
        "gemini/gemini-2.5-flash": {"input_cost_per_token": 3e-07, "litellm_provider": "gemini", "mode": "chat", "output_cost_per_token": 2.5e-06}
    }"#;

    fn tokens(p: &str) -> Tariff {
        Tariff::Tokens {
            per_million_tokens: p.parse().unwrap(),
        }
    }

    #[test]
    fn litellm_prices_are_read_exactly_from_their_text() {
        let list = PriceList::parse(LITELLM, None).unwrap();
        assert_eq!(list.format, Format::LiteLlm);
        assert!(!list.models.contains_key("sample_spec"));
        assert_eq!(
            list.tariff("text-embedding-3-small", &tokens("1")),
            Ok(tokens("0.02"))
        );
        let text = Tariff::TextTokens {
            input_per_million_tokens: Decimal::ONE,
            output_per_million_tokens: Decimal::ONE,
        };
        assert_eq!(
            list.tariff("gemini/gemini-2.5-flash", &text),
            Ok(Tariff::TextTokens {
                input_per_million_tokens: "0.3".parse().unwrap(),
                output_per_million_tokens: "2.5".parse().unwrap(),
            })
        );
        let seconds = Tariff::AudioSeconds {
            per_second: Decimal::ONE,
        };
        assert_eq!(
            list.tariff("whisper-1", &seconds),
            Ok(Tariff::AudioSeconds {
                per_second: "0.0001".parse().unwrap()
            })
        );
        assert_eq!(
            list.tariff("whisper-1", &tokens("1")),
            Err(Unlisted::NoPrice {
                id: "whisper-1".into(),
                meter: Meter::Tokens
            })
        );
        assert_eq!(
            list.tariff("nope", &tokens("1")),
            Err(Unlisted::Missing("nope".into()))
        );
    }

    #[test]
    fn models_dev_prices_are_per_million_and_per_minute() {
        let text = r#"{"openai": {"id": "openai", "name": "OpenAI", "models": {
            "text-embedding-ada-002": {"id": "text-embedding-ada-002", "cost": {"input": 0.10, "output": 0.00}},
            "whisper-1": {"id": "whisper-1", "cost": {"input": 0, "output": 0, "per_minute": 0.006}}}}}"#;
        let list = PriceList::parse(text, None).unwrap();
        assert_eq!(list.format, Format::ModelsDev);
        assert_eq!(
            list.tariff("openai/text-embedding-ada-002", &tokens("1")),
            Ok(tokens("0.1"))
        );
        assert_eq!(
            list.tariff(
                "openai/whisper-1",
                &Tariff::AudioSeconds {
                    per_second: Decimal::ONE
                }
            ),
            Ok(Tariff::AudioSeconds {
                per_second: "0.0001".parse().unwrap()
            })
        );
    }

    #[test]
    fn token_classes_are_read_from_each_list_and_a_class_the_list_lacks_keeps_its_price() {
        let litellm = r#"{"gpt-realtime": {"input_cost_per_token": 4e-06, "cache_read_input_token_cost": 4e-07,
            "input_cost_per_audio_token": 3.2e-05, "cache_read_input_audio_token_cost": 4e-07,
            "output_cost_per_token": 1.6e-05, "output_cost_per_audio_token": 6.4e-05, "litellm_provider": "openai", "mode": "chat"}}"#;
        let here: Tariff = serde_json::from_str(
            r#"{"meter":"token_classes","per_million":{"text_in":"1","image_in":"5"}}"#,
        )
        .unwrap();
        let read = PriceList::parse(litellm, None)
            .unwrap()
            .tariff("gpt-realtime", &here)
            .unwrap();
        let expected: Tariff = serde_json::from_str(
            r#"{"meter":"token_classes","per_million":{"text_in":"4","cached_text_in":"0.4","audio_in":"32","cached_audio_in":"0.4","image_in":"5","text_out":"16","audio_out":"64"}}"#,
        )
        .unwrap();
        assert_eq!(read, expected);

        let models_dev = r#"{"openai": {"id": "openai", "models": {"gpt-realtime": {"cost":
            {"input": 4, "output": 16, "cache_read": 0.4, "input_audio": 32, "output_audio": 64}}}}}"#;
        let read = PriceList::parse(models_dev, None)
            .unwrap()
            .tariff("openai/gpt-realtime", &here)
            .unwrap();
        assert_eq!(
            read.class_price(TokenClass::AudioOut),
            Some(Decimal::from(64))
        );
        assert_eq!(
            read.class_price(TokenClass::ImageIn),
            Some(Decimal::from(5))
        );
        assert_eq!(
            read.class_price(TokenClass::CachedAudioIn),
            Some(Decimal::from(32))
        );

        let none = PriceList::parse(LITELLM, None).unwrap();
        assert_eq!(
            none.tariff("whisper-1", &here),
            Err(Unlisted::NoPrice {
                id: "whisper-1".into(),
                meter: Meter::TokenClasses
            })
        );
    }

    #[test]
    fn increases_are_relative_and_from_zero_unbounded() {
        assert_eq!(
            largest_increase(&tokens("0.02"), &tokens("0.01")),
            Some("-0.5".parse().unwrap())
        );
        assert_eq!(
            largest_increase(&tokens("0.02"), &tokens("0.03")),
            Some("0.5".parse().unwrap())
        );
        assert_eq!(
            largest_increase(&tokens("0"), &tokens("0")),
            Some(Decimal::ZERO)
        );
        assert_eq!(largest_increase(&tokens("0"), &tokens("1")), None);
    }

    #[test]
    fn a_file_of_neither_shape_or_a_negative_price_is_refused() {
        assert!(PriceList::parse(r#"{"a": {"b": 1}}"#, None).is_err());
        assert!(PriceList::parse("[]", None).is_err());
        assert!(
            PriceList::parse(
                r#"{"m": {"litellm_provider": "x", "input_cost_per_token": -1e-06}}"#,
                None
            )
            .is_err()
        );
    }
}
