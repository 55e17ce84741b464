//! The model families and their limits, as data.
//!
//! A model's limits are those of its family, read from the id's prefix ([`limits`]; the longest
//! prefix in [`FAMILIES`] wins, a leading `models/` is ignored):
//!
//! | Prefix | Output cap | Input | Thinking | `thinkingBudget` | 0 (off) | `thinkingLevel` |
//! |---|---|---|---|---|---|---|
//! | `gen-2.0-` | 8,192 | 1,048,576 | none: `thinkingConfig` refused | – | – | – |
//! | `gen-2.5-pro` | 65,536 | 1,048,576 | by default | 128 to 32,768 | no | – |
//! | `gen-2.5-flash` | 65,536 | 1,048,576 | by default | 0 to 24,576 | yes | – |
//! | `gen-2.5-flash-lite` | 65,536 | 1,048,576 | by default | 512 to 24,576 | yes | – |
//! | `gen-3-`, `gen-3.` | 65,536 | 1,048,576 | by default | 128 to 32,768 | no | `LOW`, `HIGH` |
//! | `gen-3-flash`, `gen-3.0-flash` | 65,536 | 1,048,576 | by default | 128 to 32,768 | no | `MINIMAL`, `LOW`, `MEDIUM`, `HIGH` |
//! | `gen-2.5-flash-image` | 32,768 | 32,768 | none | – | – | – |
//! | `gen-3-pro-image` | 32,768 | 65,536 | by default | 128 to 32,768 | no | – |
//!
//! The last two draw images ([`ImageOutput`]): `gen-2.5-flash-image` at one size, 1,290
//! image-out tokens an image; `gen-3-pro-image` at `1K` and `2K`, 1,120 tokens an image, and
//! `4K`, 2,000 (the vendor's published figures).
//!
//! Every thinking model also takes `-1` ("the model decides"). docs/api.md §2.9: "Models from generation
//! 2.5 onward think by default", so [`Thinking::Budget::by_default`] is true for all of them
//! (a request that sets the budget to 0, where allowed, does not think). The caps are the
//! vendor's published ones; `maxOutputTokens` counts thinking as well, so the output cap is the
//! most a request can produce.
//!
//! A model id of no family (a private deployment name) has no row: [`limits`] answers `None`,
//! and a caller that still wants to check a request uses [`ModelLimits::UNKNOWN`] (also the
//! [`Default`]), which refuses nothing a thinking model of any family would take.

use std::ops::RangeInclusive;

/// The `thinkingLevel` values of the format (wire-formats §6.1), upper case.
pub const THINKING_LEVELS: [&str; 4] = ["MINIMAL", "LOW", "MEDIUM", "HIGH"];

/// How a model thinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Thinking {
    /// The model does not think; a `thinkingConfig` is refused (`gen-2.0-*`).
    None,
    /// The model thinks within a budget of tokens.
    Budget {
        /// The smallest positive budget.
        min: i64,
        /// The largest budget.
        max: i64,
        /// Whether a budget of 0 turns thinking off.
        can_disable: bool,
        /// Whether the model thinks when the request says nothing (docs/api.md §2.9: from generation
        /// 2.5 on).
        by_default: bool,
    },
}

/// What a model accepts and produces: the caps, and how it thinks.
///
/// ```
/// use tollgate_native_genai::models::{limits, Thinking};
///
/// let pro = limits("models/gen-2.5-pro-preview-06-05").ok_or("unknown")?;
/// assert_eq!(pro.max_output_tokens, 65_536);
/// assert_eq!(
///     pro.thinking,
///     Thinking::Budget { min: 128, max: 32_768, can_disable: false, by_default: true }
/// );
/// assert!(pro.thinks() && !pro.can_disable_thinking() && !pro.accepts_thinking_level());
/// assert!(pro.accepts_budget(-1) && pro.accepts_budget(128) && !pro.accepts_budget(0));
///
/// let flash_2 = limits("gen-2.0-flash-001").ok_or("unknown")?;
/// assert!(!flash_2.can_think());
/// assert_eq!(flash_2.max_output_tokens, 8_192);
///
/// assert_eq!(limits("gen-3-pro-preview").map(|l| l.thinking_levels), Some(&["LOW", "HIGH"][..]));
/// assert!(limits("other-model").is_none());
/// # Ok::<(), &'static str>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModelLimits {
    /// The largest `maxOutputTokens` (thinking included), and the default when none is asked.
    pub max_output_tokens: u32,
    /// The most input tokens.
    pub input_token_limit: u32,
    /// How the model thinks.
    pub thinking: Thinking,
    /// The `thinkingLevel` values the model takes, upper case; empty when it takes none.
    pub thinking_levels: &'static [&'static str],
    /// What the model draws, for a model that answers `IMAGE` parts; `None` for one that
    /// draws nothing (a request asking `responseModalities: ["IMAGE"]` of it is refused).
    pub images: Option<ImageOutput>,
}

impl ModelLimits {
    /// The limits used for a model of no known family: the largest caps of the table, thinking
    /// with any budget from 0 to 32,768 (or −1), any `thinkingLevel`, not thinking by default.
    /// Only the upstream can tell what such a model really accepts.
    pub const UNKNOWN: ModelLimits = ModelLimits {
        max_output_tokens: 65_536,
        input_token_limit: 1_048_576,
        thinking: Thinking::Budget {
            min: 0,
            max: 32_768,
            can_disable: true,
            by_default: false,
        },
        thinking_levels: &THINKING_LEVELS,
        images: None,
    };

    /// Whether the model thinks when the request says nothing about thinking.
    pub const fn thinks(&self) -> bool {
        matches!(
            self.thinking,
            Thinking::Budget {
                by_default: true,
                ..
            }
        )
    }

    /// Whether the model can think at all (takes a `thinkingConfig`).
    pub const fn can_think(&self) -> bool {
        matches!(self.thinking, Thinking::Budget { .. })
    }

    /// Whether a budget of 0 turns thinking off.
    pub const fn can_disable_thinking(&self) -> bool {
        matches!(
            self.thinking,
            Thinking::Budget {
                can_disable: true,
                ..
            }
        )
    }

    /// The range of positive budgets, `None` for a model that does not think.
    pub const fn budget_range(&self) -> Option<RangeInclusive<i64>> {
        match self.thinking {
            Thinking::None => None,
            Thinking::Budget { min, max, .. } => Some(min..=max),
        }
    }

    /// Whether `thinkingBudget` may be `budget`: −1, 0 where thinking can be turned off, or
    /// within the range.
    pub fn accepts_budget(&self, budget: i64) -> bool {
        match self.thinking {
            Thinking::None => false,
            Thinking::Budget {
                min,
                max,
                can_disable,
                ..
            } => budget == -1 || (budget == 0 && can_disable) || (min..=max).contains(&budget),
        }
    }

    /// `budget` moved into the model's range (0 stays 0 where thinking can be turned off, −1
    /// stays −1); `None` for a model that does not think.
    ///
    /// ```
    /// use tollgate_native_genai::models::limits;
    ///
    /// let pro = limits("gen-2.5-pro").ok_or("unknown")?;
    /// assert_eq!(pro.clamp_budget(0), Some(128));
    /// assert_eq!(pro.clamp_budget(50_000), Some(32_768));
    /// let flash = limits("gen-2.5-flash").ok_or("unknown")?;
    /// assert_eq!(flash.clamp_budget(0), Some(0));
    /// # Ok::<(), &'static str>(())
    /// ```
    pub fn clamp_budget(&self, budget: i64) -> Option<i64> {
        match self.thinking {
            Thinking::None => None,
            Thinking::Budget {
                min,
                max,
                can_disable,
                ..
            } => Some(match budget {
                -1 => -1,
                0 if can_disable => 0,
                _ => budget.clamp(min, max),
            }),
        }
    }

    /// Whether the model takes `thinkingLevel` at all.
    pub fn accepts_thinking_level(&self) -> bool {
        !self.thinking_levels.is_empty()
    }

    /// The accepted level matching `level` case-insensitively, in upper case.
    pub fn thinking_level(&self, level: &str) -> Option<&'static str> {
        self.thinking_levels
            .iter()
            .copied()
            .find(|l| l.eq_ignore_ascii_case(level))
    }
}

impl Default for ModelLimits {
    /// [`ModelLimits::UNKNOWN`].
    fn default() -> Self {
        Self::UNKNOWN
    }
}

/// The aspect ratios an image model draws (`imageConfig.aspectRatio`), the first its default.
pub const ASPECT_RATIOS: [&str; 10] = [
    "1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9",
];

/// What an image model of the family draws (docs/decisions.md, "Images"): the sizes it takes
/// (`imageConfig.imageSize`), the sides of each aspect ratio at the first, and the image-out
/// tokens the vendor publishes for one image of each size. Each size doubles the sides of the
/// one before (`1K`, `2K`, `4K`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageOutput {
    /// The `imageSize` values, smallest first; the first is the default.
    pub sizes: &'static [&'static str],
    /// Width and height of each of [`ASPECT_RATIOS`] at the first size.
    pub sides: [(u32, u32); 10],
    /// The image-out tokens of one image of each size, in the order of `sizes`.
    pub tokens: &'static [u64],
}

impl ImageOutput {
    /// The position of `size` among the sizes taken, `None` for one not taken (the vendor's
    /// words are upper case: `1k` is refused, as the vendor refuses it).
    pub fn size_index(&self, size: &str) -> Option<usize> {
        self.sizes.iter().position(|s| *s == size)
    }

    /// The sides of an image of `aspect` at the size in position `size`.
    ///
    /// ```
    /// use tollgate_native_genai::models::limits;
    /// let pro = limits("gen-3-pro-image-preview").and_then(|l| l.images).ok_or("no images")?;
    /// assert_eq!(pro.sides("16:9", 0), Some((1376, 768)));
    /// assert_eq!(pro.sides("1:1", 2), Some((4096, 4096)));
    /// # Ok::<(), &'static str>(())
    /// ```
    pub fn sides(&self, aspect: &str, size: usize) -> Option<(u32, u32)> {
        let i = ASPECT_RATIOS.iter().position(|a| *a == aspect)?;
        let (w, h) = self.sides[i];
        let scale = 1u32 << size.min(self.sizes.len().saturating_sub(1));
        Some((w * scale, h * scale))
    }

    /// The image-out tokens one relayed image may count: those of the size its decoded
    /// `width` × `height` falls in (the smallest size whose largest image holds as many
    /// pixels), never above the size asked (`asked`, a position in `sizes`) — a vendor that
    /// draws larger than asked is bounded by what was asked.
    ///
    /// ```
    /// use tollgate_native_genai::models::limits;
    /// let pro = limits("gen-3-pro-image-preview").and_then(|l| l.images).ok_or("no images")?;
    /// assert_eq!(pro.tokens_of(2, (4096, 4096)), 2_000);
    /// assert_eq!(pro.tokens_of(2, (2048, 2048)), 1_120);
    /// assert_eq!(pro.tokens_of(0, (4096, 4096)), 1_120); // asked 1K: bounded at 1K's
    /// # Ok::<(), &'static str>(())
    /// ```
    pub fn tokens_of(&self, asked: usize, (width, height): (u32, u32)) -> u64 {
        let pixels = u64::from(width) * u64::from(height);
        let largest = self
            .sides
            .iter()
            .map(|(w, h)| u64::from(*w) * u64::from(*h))
            .max()
            .unwrap_or(0);
        let last = self.tokens.len().saturating_sub(1);
        let drawn = (0..=last)
            .find(|i| pixels <= largest << (2 * i))
            .unwrap_or(last);
        self.tokens
            .get(drawn.min(asked).min(last))
            .copied()
            .unwrap_or(0)
    }

    /// The most tokens one image may count: the largest size's.
    pub fn most_tokens(&self) -> u64 {
        self.tokens.iter().copied().max().unwrap_or(0)
    }
}

/// The 2.5 image model: one size, 1,290 tokens an image whatever its ratio.
const FLASH_IMAGE: ImageOutput = ImageOutput {
    sizes: &["1K"],
    sides: [
        (1024, 1024),
        (832, 1248),
        (1248, 832),
        (864, 1184),
        (1184, 864),
        (896, 1152),
        (1152, 896),
        (768, 1344),
        (1344, 768),
        (1536, 672),
    ],
    tokens: &[1_290],
};

/// The 3 Pro image model: 1K and 2K at 1,120 tokens an image, 4K at 2,000.
const PRO_IMAGE: ImageOutput = ImageOutput {
    sizes: &["1K", "2K", "4K"],
    sides: [
        (1024, 1024),
        (848, 1264),
        (1264, 848),
        (896, 1200),
        (1200, 896),
        (928, 1152),
        (1152, 928),
        (768, 1376),
        (1376, 768),
        (1584, 672),
    ],
    tokens: &[1_120, 1_120, 2_000],
};

/// One row of the table: the id prefix of a family and its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Family {
    /// The prefix of the model ids of the family, e.g. `gen-2.5-flash`.
    pub prefix: &'static str,
    /// The family's limits.
    pub limits: ModelLimits,
}

const BIG_INPUT: u32 = 1_048_576;
const OUT_2_0: u32 = 8_192;
const OUT_2_5: u32 = 65_536;
const LEVELS_3: &[&str] = &["LOW", "HIGH"];

const fn budget(min: i64, max: i64, can_disable: bool) -> Thinking {
    Thinking::Budget {
        min,
        max,
        can_disable,
        by_default: true,
    }
}

const fn row(
    prefix: &'static str,
    max_output_tokens: u32,
    thinking: Thinking,
    thinking_levels: &'static [&'static str],
) -> Family {
    Family {
        prefix,
        limits: ModelLimits {
            max_output_tokens,
            input_token_limit: BIG_INPUT,
            thinking,
            thinking_levels,
            images: None,
        },
    }
}

/// A row of an image model: its input window, its output cap and what it draws.
const fn image_row(
    prefix: &'static str,
    input_token_limit: u32,
    thinking: Thinking,
    images: ImageOutput,
) -> Family {
    Family {
        prefix,
        limits: ModelLimits {
            max_output_tokens: 32_768,
            input_token_limit,
            thinking,
            thinking_levels: &[],
            images: Some(images),
        },
    }
}

/// The families, as in the table of the [module](self) documentation.
pub const FAMILIES: &[Family] = &[
    row("gen-2.0-", OUT_2_0, Thinking::None, &[]),
    row("gen-2.5-pro", OUT_2_5, budget(128, 32_768, false), &[]),
    row("gen-2.5-flash", OUT_2_5, budget(0, 24_576, true), &[]),
    row(
        "gen-2.5-flash-lite",
        OUT_2_5,
        budget(512, 24_576, true),
        &[],
    ),
    row("gen-3-", OUT_2_5, budget(128, 32_768, false), LEVELS_3),
    row("gen-3.", OUT_2_5, budget(128, 32_768, false), LEVELS_3),
    row(
        "gen-3-flash",
        OUT_2_5,
        budget(128, 32_768, false),
        &THINKING_LEVELS,
    ),
    row(
        "gen-3.0-flash",
        OUT_2_5,
        budget(128, 32_768, false),
        &THINKING_LEVELS,
    ),
    image_row("gen-2.5-flash-image", 32_768, Thinking::None, FLASH_IMAGE),
    image_row(
        "gen-3-pro-image",
        65_536,
        budget(128, 32_768, false),
        PRO_IMAGE,
    ),
];

/// The family of `model_id` (with or without `models/`): the row with the longest matching
/// prefix.
pub fn family(model_id: &str) -> Option<&'static Family> {
    let id = model_id.strip_prefix("models/").unwrap_or(model_id);
    FAMILIES
        .iter()
        .filter(|f| id.starts_with(f.prefix))
        .max_by_key(|f| f.prefix.len())
}

/// The limits of `model_id`'s family, or `None` for an id of no family (see
/// [`ModelLimits::UNKNOWN`]).
///
/// ```
/// use tollgate_native_genai::models::limits;
///
/// let lite = limits("gen-2.5-flash-lite").ok_or("unknown")?;
/// assert_eq!(lite.budget_range(), Some(512..=24_576));
/// assert!(lite.can_disable_thinking() && lite.thinks());
/// # Ok::<(), &'static str>(())
/// ```
pub fn limits(model_id: &str) -> Option<ModelLimits> {
    family(model_id).map(|f| f.limits)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn families_by_longest_prefix() {
        let cases = [
            ("gen-2.0-flash", "gen-2.0-"),
            ("gen-2.0-flash-lite-001", "gen-2.0-"),
            ("gen-2.5-pro", "gen-2.5-pro"),
            ("models/gen-2.5-pro-preview-06-05", "gen-2.5-pro"),
            ("gen-2.5-flash", "gen-2.5-flash"),
            ("gen-2.5-flash-preview-09-2025", "gen-2.5-flash"),
            ("gen-2.5-flash-lite", "gen-2.5-flash-lite"),
            ("gen-2.5-flash-lite-preview-06-17", "gen-2.5-flash-lite"),
            ("gen-3-pro-preview", "gen-3-"),
            ("gen-3.0-pro", "gen-3."),
            ("gen-3.1-pro-preview", "gen-3."),
            ("gen-3-flash-preview", "gen-3-flash"),
            ("gen-3.0-flash", "gen-3.0-flash"),
            ("gen-2.5-flash-image", "gen-2.5-flash-image"),
            ("gen-3-pro-image-preview", "gen-3-pro-image"),
        ];
        for (id, prefix) in cases {
            assert_eq!(family(id).map(|f| f.prefix), Some(prefix), "{id}");
        }
        for id in [
            "gen-1.5-pro",
            "gpt-4o",
            "",
            "models/",
            "gen-2.5",
            "GEN-2.5-FLASH",
        ] {
            assert!(family(id).is_none(), "{id}");
        }
    }

    #[test]
    fn generation_2_5_on_thinks_by_default() {
        for f in FAMILIES.iter().filter(|f| f.limits.images.is_none()) {
            let thinks = f.limits.thinks();
            assert_eq!(thinks, !f.prefix.starts_with("gen-2.0"), "{}", f.prefix);
            assert!(f.limits.input_token_limit == BIG_INPUT);
        }
    }

    #[test]
    fn budgets() {
        let flash = limits("gen-2.5-flash").unwrap();
        assert!(
            flash.accepts_budget(0) && flash.accepts_budget(24_576) && flash.accepts_budget(-1)
        );
        assert!(!flash.accepts_budget(24_577) && !flash.accepts_budget(-2));
        let lite = limits("gen-2.5-flash-lite").unwrap();
        assert!(lite.accepts_budget(0) && lite.accepts_budget(512));
        assert!(!lite.accepts_budget(511) && !lite.accepts_budget(1));
        let three = limits("gen-3-pro-preview").unwrap();
        assert!(
            three.accepts_budget(128) && three.accepts_budget(32_768) && !three.accepts_budget(0)
        );
        assert_eq!(three.thinking_level("low"), Some("LOW"));
        assert_eq!(three.thinking_level("medium"), None);
        let two = limits("gen-2.0-flash").unwrap();
        assert!(!two.accepts_budget(0) && !two.accepts_budget(-1));
        assert_eq!(two.clamp_budget(1024), None);
        assert_eq!(lite.clamp_budget(100), Some(512));
        assert_eq!(lite.clamp_budget(-1), Some(-1));
    }

    #[test]
    fn unknown_is_lenient() {
        let unknown = ModelLimits::default();
        assert_eq!(unknown, ModelLimits::UNKNOWN);
        assert!(unknown.can_think() && !unknown.thinks());
        assert!(unknown.accepts_budget(0) && unknown.accepts_budget(32_768));
        assert_eq!(unknown.thinking_level("minimal"), Some("MINIMAL"));
    }
}
