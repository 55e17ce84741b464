//! Tokens by class (docs/api.md §8 rule 8): what a vendor bills one response of a live voice
//! session or one image call by — text, audio and image tokens in, each also cached, and text,
//! audio and image tokens out, each class at its own price.
//!
//! The classes are **disjoint**: a cached token is counted in its cached class only. Vendors
//! report cached tokens as a part of their input tokens (OpenAI's `cached_tokens_details`,
//! Gemini's `cachedContentTokenCount`); whoever reads a vendor's figures subtracts them
//! ([`TokenClasses::from_parts`]), so that a sum over the classes is the tokens billed, each
//! once.
//!
//! A price book prices the classes its model's vendor bills:
//!
//! ```toml
//! [models."gpt-realtime"]
//! meter = "token_classes"
//! per_million = { text_in = "4", cached_text_in = "0.4", audio_in = "32", cached_audio_in = "0.4", image_in = "5", text_out = "16", audio_out = "64" }
//! ```
//!
//! A cached class left out is priced as its uncached class (no discount is assumed that the
//! operator did not write); any other class left out cannot be priced, so a usage that counts
//! one is charged its bound, never at a price the gateway made up (docs/decisions.md, "Prices
//! by token class").

use std::fmt;

use serde::{Deserialize, Serialize};

/// One class of tokens a vendor bills at a price of its own.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenClass {
    /// Text read, not from the cache.
    TextIn,
    /// Text read from the vendor's cache.
    CachedTextIn,
    /// Audio heard, not from the cache.
    AudioIn,
    /// Audio heard from the vendor's cache.
    CachedAudioIn,
    /// Images seen, not from the cache.
    ImageIn,
    /// Images seen from the vendor's cache.
    CachedImageIn,
    /// Text written (a spoken answer's transcript included, as the vendors count it).
    TextOut,
    /// Audio spoken.
    AudioOut,
    /// Images drawn.
    ImageOut,
}

impl TokenClass {
    /// Every class, in the order the price book, the ledger and explanations list them.
    pub const ALL: [TokenClass; 9] = [
        TokenClass::TextIn,
        TokenClass::CachedTextIn,
        TokenClass::AudioIn,
        TokenClass::CachedAudioIn,
        TokenClass::ImageIn,
        TokenClass::CachedImageIn,
        TokenClass::TextOut,
        TokenClass::AudioOut,
        TokenClass::ImageOut,
    ];

    /// The class's name in the price book and the ledger (`text_in`, `cached_audio_in`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            TokenClass::TextIn => "text_in",
            TokenClass::CachedTextIn => "cached_text_in",
            TokenClass::AudioIn => "audio_in",
            TokenClass::CachedAudioIn => "cached_audio_in",
            TokenClass::ImageIn => "image_in",
            TokenClass::CachedImageIn => "cached_image_in",
            TokenClass::TextOut => "text_out",
            TokenClass::AudioOut => "audio_out",
            TokenClass::ImageOut => "image_out",
        }
    }

    /// The class a cached class is the cached part of: its price when the tariff names none of
    /// its own. `None` for a class that is not cached.
    pub const fn uncached(self) -> Option<TokenClass> {
        match self {
            TokenClass::CachedTextIn => Some(TokenClass::TextIn),
            TokenClass::CachedAudioIn => Some(TokenClass::AudioIn),
            TokenClass::CachedImageIn => Some(TokenClass::ImageIn),
            _ => None,
        }
    }
}

impl fmt::Display for TokenClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Tokens counted by class, the classes disjoint (see the [module documentation](self)).
///
/// Serialized as an object of the classes that counted any, e.g.
/// `{"text_in":120,"audio_in":480,"audio_out":960}`; a class left out counted none.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenClasses {
    /// Text tokens read, not from the cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub text_in: u64,
    /// Text tokens read from the cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_text_in: u64,
    /// Audio tokens heard, not from the cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub audio_in: u64,
    /// Audio tokens heard from the cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_audio_in: u64,
    /// Image tokens seen, not from the cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub image_in: u64,
    /// Image tokens seen from the cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_image_in: u64,
    /// Text tokens written.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub text_out: u64,
    /// Audio tokens spoken.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub audio_out: u64,
    /// Image tokens drawn.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub image_out: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a vendor reports of one input modality: all its tokens, and how many of them came from
/// the cache (a part of the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reported {
    /// The tokens, cached ones included.
    pub total: u64,
    /// Of those, the cached ones.
    pub cached: u64,
}

impl TokenClasses {
    /// The count of `class`.
    pub const fn get(&self, class: TokenClass) -> u64 {
        match class {
            TokenClass::TextIn => self.text_in,
            TokenClass::CachedTextIn => self.cached_text_in,
            TokenClass::AudioIn => self.audio_in,
            TokenClass::CachedAudioIn => self.cached_audio_in,
            TokenClass::ImageIn => self.image_in,
            TokenClass::CachedImageIn => self.cached_image_in,
            TokenClass::TextOut => self.text_out,
            TokenClass::AudioOut => self.audio_out,
            TokenClass::ImageOut => self.image_out,
        }
    }

    /// Counts `tokens` more of `class` (saturating: a count never wraps).
    pub fn add(&mut self, class: TokenClass, tokens: u64) {
        let slot = self.slot(class);
        *slot = slot.saturating_add(tokens);
    }

    /// Makes the count of `class` `tokens`.
    pub fn set(&mut self, class: TokenClass, tokens: u64) {
        *self.slot(class) = tokens;
    }

    fn slot(&mut self, class: TokenClass) -> &mut u64 {
        match class {
            TokenClass::TextIn => &mut self.text_in,
            TokenClass::CachedTextIn => &mut self.cached_text_in,
            TokenClass::AudioIn => &mut self.audio_in,
            TokenClass::CachedAudioIn => &mut self.cached_audio_in,
            TokenClass::ImageIn => &mut self.image_in,
            TokenClass::CachedImageIn => &mut self.cached_image_in,
            TokenClass::TextOut => &mut self.text_out,
            TokenClass::AudioOut => &mut self.audio_out,
            TokenClass::ImageOut => &mut self.image_out,
        }
    }

    /// The classes that counted any, with their counts, in [`TokenClass::ALL`]'s order.
    pub fn counted(&self) -> impl Iterator<Item = (TokenClass, u64)> + '_ {
        TokenClass::ALL
            .into_iter()
            .map(|class| (class, self.get(class)))
            .filter(|&(_, n)| n > 0)
    }

    /// Every token counted, each once.
    pub const fn total(&self) -> u64 {
        self.input().saturating_add(self.output())
    }

    /// Tokens read, heard or seen, cached ones included.
    pub const fn input(&self) -> u64 {
        self.text_in
            .saturating_add(self.cached_text_in)
            .saturating_add(self.audio_in)
            .saturating_add(self.cached_audio_in)
            .saturating_add(self.image_in)
            .saturating_add(self.cached_image_in)
    }

    /// Tokens written, spoken or drawn.
    pub const fn output(&self) -> u64 {
        self.text_out
            .saturating_add(self.audio_out)
            .saturating_add(self.image_out)
    }

    /// The classes from a vendor's figures, where cached tokens are a part of each input
    /// modality's: the uncached class gets the rest. A cached figure above its total (a vendor
    /// contradicting itself) is believed for the cached class and leaves the uncached one at
    /// zero — the cheaper reading is not the gateway's to pick, and the settlement's bound
    /// caps whatever the figures add up to.
    ///
    /// ```
    /// use tollgate_billing::token_class::{Reported, TokenClasses};
    ///
    /// let usage = TokenClasses::from_parts(
    ///     Reported { total: 100, cached: 40 },
    ///     Reported { total: 500, cached: 0 },
    ///     Reported::default(),
    ///     [20, 900, 0],
    /// );
    /// assert_eq!((usage.text_in, usage.cached_text_in, usage.audio_in), (60, 40, 500));
    /// assert_eq!((usage.text_out, usage.audio_out), (20, 900));
    /// assert_eq!(usage.total(), 1_520);
    /// ```
    pub const fn from_parts(
        text_in: Reported,
        audio_in: Reported,
        image_in: Reported,
        [text_out, audio_out, image_out]: [u64; 3],
    ) -> TokenClasses {
        TokenClasses {
            text_in: text_in.total.saturating_sub(text_in.cached),
            cached_text_in: text_in.cached,
            audio_in: audio_in.total.saturating_sub(audio_in.cached),
            cached_audio_in: audio_in.cached,
            image_in: image_in.total.saturating_sub(image_in.cached),
            cached_image_in: image_in.cached,
            text_out,
            audio_out,
            image_out,
        }
    }

    /// The usage in words for the ledger (`text_in=60;cached_text_in=40;audio_out=900`): the
    /// classes that counted any, or `tokens=0`.
    pub fn in_words(&self) -> String {
        let words: Vec<String> = self
            .counted()
            .map(|(class, n)| format!("{class}={n}"))
            .collect();
        if words.is_empty() {
            "tokens=0".to_owned()
        } else {
            words.join(";")
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_class_is_read_back_by_its_name_and_unknown_ones_are_refused() {
        let usage = TokenClasses {
            text_in: 1,
            cached_audio_in: 2,
            image_out: 3,
            ..TokenClasses::default()
        };
        let json = serde_json::to_string(&usage).unwrap();
        assert_eq!(json, r#"{"text_in":1,"cached_audio_in":2,"image_out":3}"#);
        assert_eq!(serde_json::from_str::<TokenClasses>(&json).unwrap(), usage);
        assert!(serde_json::from_str::<TokenClasses>(r#"{"video_in":1}"#).is_err());
        for class in TokenClass::ALL {
            let name = serde_json::to_string(&class).unwrap();
            assert_eq!(name, format!("\"{class}\""));
        }
    }

    #[test]
    fn cached_classes_fall_back_to_their_uncached_class_only() {
        for class in TokenClass::ALL {
            match class.uncached() {
                Some(base) => {
                    assert!(class.as_str().starts_with("cached_"));
                    assert_eq!(format!("cached_{base}"), class.as_str());
                }
                None => assert!(!class.as_str().starts_with("cached_")),
            }
        }
    }

    #[test]
    fn a_vendor_that_contradicts_itself_leaves_no_class_negative() {
        let usage = TokenClasses::from_parts(
            Reported {
                total: 10,
                cached: 25,
            },
            Reported::default(),
            Reported::default(),
            [0, 0, 0],
        );
        assert_eq!((usage.text_in, usage.cached_text_in), (0, 25));
        assert_eq!(usage.in_words(), "cached_text_in=25");
        assert_eq!((usage.input(), usage.output(), usage.total()), (25, 0, 25));
        assert_eq!(TokenClasses::default().in_words(), "tokens=0");
    }
}
