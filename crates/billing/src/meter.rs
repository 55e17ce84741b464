//! Meters: the quantity a request consumed, one kind per billing rule of docs/api.md §8.
//!
//! | docs/api.md §8 rule | What is counted | [`Usage`] | Counted by |
//! |---|---|---|---|
//! | 1 speech synthesis | characters, CJK counting 2 | [`Usage::Characters`] | [`speech_characters`] |
//! | 2 recognition | audio seconds, rounded up | [`Usage::AudioSeconds`] | [`audio_seconds`] |
//! | 3 embeddings | input tokens | [`Usage::Tokens`] | the tokenizer (outside this crate) |
//! | 4–5 clip video | completion tokens, per price tier | [`Usage::VideoTokens`] | the upstream; [`crate::video`] estimates |
//! | 6 generic video | seconds generated, rounded up, minimum 1 | [`Usage::VideoSeconds`] | [`video_seconds`] |
//! | 7 native generation | input and output tokens, thinking counted as output | [`Usage::TextTokens`] | the upstream's usage |
//! | 8 live sessions, images | tokens by class: text, audio, image; in, cached in, out | [`Usage::TokenClasses`] | the upstream's usage, bounded by the gateway's measure |
//! | 11 images by the picture | images delivered (of a size and quality, where priced so) | [`Usage::Images`], [`Usage::ImagesAtSize`] | the gateway: each image relayed, decoded |

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::token_class::TokenClasses;

/// The quantity a request consumed, one variant per docs/api.md §8 billing rule.
///
/// Serialized externally tagged in snake case, e.g. `{"characters":11}` or
/// `{"video_tokens":{"tokens":108900,"tier":"standard"}}`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Quantity"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Usage {
    /// docs/api.md §8 rule 1: characters of a speech-synthesis input, CJK characters counting 2
    /// (see [`speech_characters`]).
    Characters(u64),
    /// docs/api.md §8 rule 2: whole seconds of recognized audio, already rounded up (see
    /// [`audio_seconds`]).
    AudioSeconds(u64),
    /// docs/api.md §8 rule 3: embedding input tokens.
    Tokens(u64),
    /// docs/api.md §8 rules 4–5: clip-format video tokens (`usage.completion_tokens`) and the price tier
    /// they are charged at. For the reference-video tier the tokens already include the reference
    /// video's duration.
    VideoTokens {
        /// Completion tokens reported by the upstream, or estimated at submission.
        tokens: u64,
        /// The price tier of the task.
        tier: ClipTier,
    },
    /// docs/api.md §8 rule 6: whole seconds of generic video generated, already rounded up with a minimum
    /// of 1 (see [`video_seconds`]).
    VideoSeconds(u64),
    /// docs/api.md §8 rule 6 for a model priced by size (`per_second_by_size`): whole seconds of
    /// video of `width` × `height` pixels. The size is part of the quantity, so that the charge
    /// re-derives from the row alone (`tollgate audit --recompute`). Counted on the
    /// [`Meter::VideoSeconds`] meter.
    VideoSecondsAtSize {
        /// Seconds, as [`Usage::VideoSeconds`].
        seconds: u64,
        /// Frame width in pixels.
        width: u32,
        /// Frame height in pixels.
        height: u32,
    },
    /// docs/api.md §8 rule 7: native text generation. `output` **includes** thinking tokens: a response
    /// with 20 candidate tokens and 5 thought tokens has `output: 25`.
    TextTokens {
        /// Prompt (input) tokens.
        input: u64,
        /// Candidate tokens plus thinking tokens.
        output: u64,
    },
    /// docs/api.md §8 rule 8: tokens by class, each at its own price — one response of a live
    /// voice session, one image call ([`crate::token_class`]).
    TokenClasses(TokenClasses),
    /// docs/api.md §8 rule 11: images delivered, each at the model's price for one (Imagen).
    Images(u64),
    /// docs/api.md §8 rule 11 for a model priced by size and quality (`per_image_by_size`,
    /// dall-e style): images delivered, each of `width` × `height` pixels at `quality`. The size
    /// and quality are the ones asked (what the price table names), part of the quantity so
    /// that the charge re-derives from the row alone. Counted on the [`Meter::Images`] meter.
    ImagesAtSize {
        /// Images, as [`Usage::Images`].
        images: u64,
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
        /// The quality they were drawn at.
        quality: ImageTier,
    },
}

/// The quality a per-image price names (docs/api.md §8 rule 11): `standard`, or `hd` — the
/// dearer row of a dall-e style price table (`per_image_by_size` keys `1024x1024/hd`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageTier {
    /// The model's ordinary quality.
    #[default]
    Standard,
    /// High definition, priced by its own row.
    Hd,
}

impl ImageTier {
    /// The price table's key of an image of `width` × `height` at this tier: `1024x1024`, or
    /// `1024x1024/hd`.
    ///
    /// ```
    /// use tollgate_billing::ImageTier;
    /// assert_eq!(ImageTier::Standard.key(1024, 1024), "1024x1024");
    /// assert_eq!(ImageTier::Hd.key(1792, 1024), "1792x1024/hd");
    /// ```
    pub fn key(self, width: u32, height: u32) -> String {
        match self {
            ImageTier::Standard => format!("{width}x{height}"),
            ImageTier::Hd => format!("{width}x{height}/hd"),
        }
    }
}

/// The price tier of a clip-format video task (docs/api.md §8 rule 5).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClipTier {
    /// Text only, first/last frames, reference images, reference audio: the catalog's main unit
    /// price.
    #[default]
    Standard,
    /// The content contains a reference video that is actually submitted upstream: the per-token
    /// price times the tariff's reference-video ratio (about 60 %), with the reference video's
    /// seconds counted in the usage.
    ReferenceVideo,
}

/// The kind of quantity a [`Usage`] measures and a [`crate::Tariff`] prices; the two must agree.
///
/// Its text form is the `meter` tag of a tariff in the price book (`"characters"`,
/// `"audio_seconds"`, `"tokens"`, `"video_tokens"`, `"video_seconds"`, `"text_tokens"`,
/// `"token_classes"`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Meter {
    /// docs/api.md §8 rule 1.
    Characters,
    /// docs/api.md §8 rule 2.
    AudioSeconds,
    /// docs/api.md §8 rule 3.
    Tokens,
    /// docs/api.md §8 rules 4–5.
    VideoTokens,
    /// docs/api.md §8 rule 6.
    VideoSeconds,
    /// docs/api.md §8 rule 7.
    TextTokens,
    /// docs/api.md §8 rule 8.
    TokenClasses,
    /// docs/api.md §8 rule 11.
    Images,
}

impl Meter {
    /// Every meter, in declaration order.
    pub const ALL: [Meter; 8] = [
        Meter::Characters,
        Meter::AudioSeconds,
        Meter::Tokens,
        Meter::VideoTokens,
        Meter::VideoSeconds,
        Meter::TextTokens,
        Meter::TokenClasses,
        Meter::Images,
    ];

    /// The name used as the `meter` tag in the price book.
    pub const fn as_str(self) -> &'static str {
        match self {
            Meter::Characters => "characters",
            Meter::AudioSeconds => "audio_seconds",
            Meter::Tokens => "tokens",
            Meter::VideoTokens => "video_tokens",
            Meter::VideoSeconds => "video_seconds",
            Meter::TextTokens => "text_tokens",
            Meter::TokenClasses => "token_classes",
            Meter::Images => "images",
        }
    }
}

impl fmt::Display for Meter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl Usage {
    /// The meter this usage was counted on.
    pub const fn meter(&self) -> Meter {
        match self {
            Usage::Characters(_) => Meter::Characters,
            Usage::AudioSeconds(_) => Meter::AudioSeconds,
            Usage::Tokens(_) => Meter::Tokens,
            Usage::VideoTokens { .. } => Meter::VideoTokens,
            Usage::VideoSeconds(_) | Usage::VideoSecondsAtSize { .. } => Meter::VideoSeconds,
            Usage::TextTokens { .. } => Meter::TextTokens,
            Usage::TokenClasses(_) => Meter::TokenClasses,
            Usage::Images(_) | Usage::ImagesAtSize { .. } => Meter::Images,
        }
    }

    /// Video seconds at `size` (width, height), where a size is known; any other usage as it
    /// is.
    ///
    /// ```
    /// use tollgate_billing::Usage;
    ///
    /// let sized = Usage::VideoSeconds(8).at_size(Some((1792, 1024)));
    /// assert_eq!(sized, Usage::VideoSecondsAtSize { seconds: 8, width: 1792, height: 1024 });
    /// assert_eq!(Usage::VideoSeconds(3).sized_like(&sized), Usage::VideoSecondsAtSize { seconds: 3, width: 1792, height: 1024 });
    /// assert_eq!(Usage::Tokens(3).at_size(Some((1, 1))), Usage::Tokens(3));
    /// ```
    pub const fn at_size(self, size: Option<(u32, u32)>) -> Usage {
        match (self, size) {
            (Usage::VideoSeconds(seconds), Some((width, height)))
            | (Usage::VideoSecondsAtSize { seconds, .. }, Some((width, height))) => {
                Usage::VideoSecondsAtSize {
                    seconds,
                    width,
                    height,
                }
            }
            (usage, _) => usage,
        }
    }

    /// This quantity at the size `like` is of (a settlement's seconds at the size its hold was
    /// priced for); as it is when `like` has no size.
    pub const fn sized_like(self, like: &Usage) -> Usage {
        match *like {
            Usage::VideoSecondsAtSize { width, height, .. } => self.at_size(Some((width, height))),
            _ => self,
        }
    }

    /// How many units of its meter this usage counts: for text generation, input and output
    /// tokens together; for tokens by class, every class together (the usage log's `units`,
    /// summed per meter).
    ///
    /// ```
    /// use tollgate_billing::Usage;
    ///
    /// assert_eq!(Usage::TextTokens { input: 12, output: 30 }.units(), 42);
    /// assert_eq!(Usage::AudioSeconds(3).units(), 3);
    /// ```
    pub const fn units(&self) -> u64 {
        match *self {
            Usage::Characters(n)
            | Usage::AudioSeconds(n)
            | Usage::Tokens(n)
            | Usage::VideoSeconds(n)
            | Usage::VideoSecondsAtSize { seconds: n, .. }
            | Usage::VideoTokens { tokens: n, .. }
            | Usage::Images(n)
            | Usage::ImagesAtSize { images: n, .. } => n,
            Usage::TextTokens { input, output } => input.saturating_add(output),
            Usage::TokenClasses(classes) => classes.total(),
        }
    }

    /// The quantity in words: `tokens=12`, `input_tokens=10;output_tokens=5`,
    /// `video_tokens=108900;tier=reference_video`.
    ///
    /// ```
    /// use tollgate_billing::Usage;
    ///
    /// assert_eq!(Usage::Tokens(12).in_words(), "tokens=12");
    /// assert_eq!(Usage::TextTokens { input: 10, output: 5 }.in_words(), "input_tokens=10;output_tokens=5");
    /// ```
    pub fn in_words(&self) -> String {
        match *self {
            Usage::Characters(n) => format!("characters={n}"),
            Usage::AudioSeconds(n) => format!("audio_seconds={n}"),
            Usage::Tokens(n) => format!("tokens={n}"),
            Usage::VideoTokens { tokens, tier } => {
                let tier = match tier {
                    ClipTier::Standard => "standard",
                    ClipTier::ReferenceVideo => "reference_video",
                };
                format!("video_tokens={tokens};tier={tier}")
            }
            Usage::VideoSeconds(n) => format!("video_seconds={n}"),
            Usage::VideoSecondsAtSize {
                seconds,
                width,
                height,
            } => format!("video_seconds={seconds};size={width}x{height}"),
            Usage::TextTokens { input, output } => {
                format!("input_tokens={input};output_tokens={output}")
            }
            Usage::TokenClasses(classes) => classes.in_words(),
            Usage::Images(n) => format!("images={n}"),
            Usage::ImagesAtSize {
                images,
                width,
                height,
                quality,
            } => {
                let quality = match quality {
                    ImageTier::Standard => "standard",
                    ImageTier::Hd => "hd",
                };
                format!("images={images};size={width}x{height};quality={quality}")
            }
        }
    }
}

/// Unicode blocks whose characters count 2 for speech synthesis (docs/api.md §8 rule 1: "each Chinese,
/// Japanese or Korean character counts as 2"; DESIGN §4: "Han, Hiragana, Katakana, Hangul and their
/// punctuation").
const CJK_BLOCKS: &[(char, char)] = &[
    // Hangul Jamo
    ('\u{1100}', '\u{11FF}'),
    // CJK Radicals Supplement
    ('\u{2E80}', '\u{2EFF}'),
    // Kangxi Radicals
    ('\u{2F00}', '\u{2FDF}'),
    // Ideographic Description Characters
    ('\u{2FF0}', '\u{2FFF}'),
    // CJK Symbols and Punctuation (、。「」〜 and the ideographic space)
    ('\u{3000}', '\u{303F}'),
    // Hiragana
    ('\u{3040}', '\u{309F}'),
    // Katakana
    ('\u{30A0}', '\u{30FF}'),
    // Bopomofo
    ('\u{3100}', '\u{312F}'),
    // Hangul Compatibility Jamo
    ('\u{3130}', '\u{318F}'),
    // Kanbun
    ('\u{3190}', '\u{319F}'),
    // Bopomofo Extended
    ('\u{31A0}', '\u{31BF}'),
    // CJK Strokes
    ('\u{31C0}', '\u{31EF}'),
    // Katakana Phonetic Extensions
    ('\u{31F0}', '\u{31FF}'),
    // Enclosed CJK Letters and Months
    ('\u{3200}', '\u{32FF}'),
    // CJK Compatibility
    ('\u{3300}', '\u{33FF}'),
    // CJK Unified Ideographs Extension A
    ('\u{3400}', '\u{4DBF}'),
    // CJK Unified Ideographs
    ('\u{4E00}', '\u{9FFF}'),
    // Hangul Jamo Extended-A
    ('\u{A960}', '\u{A97F}'),
    // Hangul Syllables
    ('\u{AC00}', '\u{D7AF}'),
    // Hangul Jamo Extended-B
    ('\u{D7B0}', '\u{D7FF}'),
    // CJK Compatibility Ideographs
    ('\u{F900}', '\u{FAFF}'),
    // Vertical Forms
    ('\u{FE10}', '\u{FE1F}'),
    // CJK Compatibility Forms
    ('\u{FE30}', '\u{FE4F}'),
    // Halfwidth and Fullwidth Forms (，！？, halfwidth katakana and hangul)
    ('\u{FF00}', '\u{FFEF}'),
    // Kana Extended-B, Kana Supplement, Kana Extended-A, Small Kana Extension
    ('\u{1AFF0}', '\u{1B16F}'),
    // Supplementary and Tertiary Ideographic Planes (Extensions B–I, compatibility supplement)
    ('\u{20000}', '\u{3FFFF}'),
];

/// Whether a character is a Chinese, Japanese or Korean character (or CJK punctuation) and so counts
/// 2 for speech synthesis (docs/api.md §8 rule 1).
///
/// Covered: Han ideographs with all extensions, radicals, strokes and compatibility ideographs;
/// Hiragana; Katakana with phonetic extensions, kana supplements and halfwidth katakana; Hangul
/// syllables and jamo; Bopomofo; CJK Symbols and Punctuation (U+3000–303F); fullwidth and halfwidth
/// forms (U+FF00–FFEF); vertical and compatibility forms. Everything else — Latin, digits, ASCII
/// punctuation, emoji — is not.
///
/// ```
/// use tollgate_billing::is_cjk;
///
/// assert!(is_cjk('你') && is_cjk('か') && is_cjk('カ') && is_cjk('한') && is_cjk('。'));
/// assert!(!is_cjk('a') && !is_cjk(',') && !is_cjk('😀'));
/// ```
pub fn is_cjk(c: char) -> bool {
    CJK_BLOCKS
        .iter()
        .any(|&(first, last)| (first..=last).contains(&c))
}

/// docs/api.md §8 rule 1: the billable characters of a speech-synthesis input.
///
/// Every Unicode scalar value counts 1, except CJK characters and CJK punctuation ([`is_cjk`]),
/// which count 2. Combining marks and the parts of an emoji sequence are scalars like any other.
///
/// ```
/// use tollgate_billing::speech_characters;
///
/// assert_eq!(speech_characters("你好, world"), 2 + 2 + 1 + 1 + 5);
/// ```
pub fn speech_characters(text: &str) -> u64 {
    // Cannot overflow: a CJK character takes at least 3 bytes of UTF-8 and counts 2.
    text.chars().map(|c| if is_cjk(c) { 2 } else { 1 }).sum()
}

/// A duration in whole seconds, rounded up: any fraction of a second is a whole second.
///
/// Saturates at `u64::MAX` (only reachable from `Duration::MAX`).
pub fn whole_seconds_rounded_up(d: Duration) -> u64 {
    if d.subsec_nanos() == 0 {
        d.as_secs()
    } else {
        d.as_secs().saturating_add(1)
    }
}

/// docs/api.md §8 rule 2: recognized audio is billed by its duration in seconds, rounded up.
///
/// ```
/// use std::time::Duration;
/// use tollgate_billing::audio_seconds;
///
/// assert_eq!(audio_seconds(Duration::ZERO), 0);
/// assert_eq!(audio_seconds(Duration::from_millis(3_200)), 4);
/// assert_eq!(audio_seconds(Duration::from_secs(4)), 4);
/// ```
pub fn audio_seconds(d: Duration) -> u64 {
    whole_seconds_rounded_up(d)
}

/// docs/api.md §8 rule 6: generic video is billed by the seconds actually generated, rounded up, with a
/// minimum of 1 second.
///
/// ```
/// use std::time::Duration;
/// use tollgate_billing::video_seconds;
///
/// assert_eq!(video_seconds(Duration::ZERO), 1);
/// assert_eq!(video_seconds(Duration::from_millis(5_500)), 6);
/// ```
pub fn video_seconds(d: Duration) -> u64 {
    whole_seconds_rounded_up(d).max(1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_block_is_well_formed_and_ordered() {
        for window in CJK_BLOCKS.windows(2) {
            assert!(window[0].0 <= window[0].1);
            assert!(window[0].1 < window[1].0, "{window:?}");
        }
    }

    #[test]
    fn block_edges() {
        assert!(!is_cjk('\u{2E7F}'));
        assert!(is_cjk('\u{3000}')); // ideographic space
        assert!(is_cjk('\u{4E00}') && is_cjk('\u{9FFF}'));
        assert!(!is_cjk('\u{A000}')); // Yi syllable
        assert!(is_cjk('\u{20000}') && is_cjk('\u{2A6DF}') && is_cjk('\u{30000}'));
        assert!(!is_cjk('\u{40000}'));
        assert!(!is_cjk('\u{FFF0}'));
        assert!(is_cjk('ｶ')); // halfwidth katakana
        assert!(is_cjk('ﾡ')); // halfwidth hangul
        assert!(is_cjk('Ａ')); // fullwidth Latin
        assert!(!is_cjk('é'));
    }

    #[test]
    fn usage_serde_shape() {
        let usage = Usage::VideoTokens {
            tokens: 108_900,
            tier: ClipTier::ReferenceVideo,
        };
        let json = serde_json::to_string(&usage).unwrap();
        assert_eq!(
            json,
            r#"{"video_tokens":{"tokens":108900,"tier":"reference_video"}}"#
        );
        assert_eq!(serde_json::from_str::<Usage>(&json).unwrap(), usage);
        assert_eq!(
            serde_json::to_string(&Usage::Characters(11)).unwrap(),
            r#"{"characters":11}"#
        );
    }

    #[test]
    fn meter_names_match_the_usage() {
        assert_eq!(
            Usage::TextTokens {
                input: 1,
                output: 2
            }
            .meter(),
            Meter::TextTokens
        );
        assert_eq!(Meter::AudioSeconds.to_string(), "audio_seconds");
        assert_eq!(
            serde_json::to_string(&Meter::VideoSeconds).unwrap(),
            format!("\"{}\"", Meter::VideoSeconds)
        );
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        assert_eq!(audio_seconds(Duration::MAX), u64::MAX);
        assert_eq!(video_seconds(Duration::MAX), u64::MAX);
    }
}
