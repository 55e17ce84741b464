//! The kinds of image model (docs/decisions.md, "Images"): what each can be asked — its sizes,
//! qualities, largest `n`, partial images — in one table, [`Family`]. A public model names its
//! family in the configuration (`[models.NAME] images.family`); the check of a request and the
//! token tables of `tollgate-metering::image` read the row.

use crate::size::Size;
use crate::words::Quality;
use serde::{Deserialize, Serialize};

/// A kind of image model, by the vendor's published rules.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Family {
    /// `gpt-image-2` and its kin: any size in 16-pixel steps within the pixel and edge limits,
    /// image-out tokens by OpenAI's formula of size and quality.
    #[serde(rename = "gpt-image-2")]
    GptImage2,
    /// `gpt-image-1.5`, `gpt-image-1-mini`, `chatgpt-image-latest`: three sizes, image-out
    /// tokens by OpenAI's table.
    #[serde(rename = "gpt-image-1")]
    GptImage1,
}

/// The sizes a family draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeRule {
    /// These sizes only.
    Listed(&'static [Size]),
    /// Any size whose sides are multiples of `step`, its pixels within `pixels`, no side longer
    /// than `max_edge` and the longer side at most `max_ratio` times the shorter.
    Flexible {
        /// Each side a multiple of this.
        step: u32,
        /// The fewest and the most pixels.
        pixels: (u64, u64),
        /// The longest side.
        max_edge: u32,
        /// The most the longer side may be of the shorter.
        max_ratio: u32,
    },
}

impl SizeRule {
    /// Whether the rule allows `size`.
    pub fn allows(&self, size: Size) -> bool {
        match *self {
            SizeRule::Listed(sizes) => sizes.contains(&size),
            SizeRule::Flexible {
                step,
                pixels,
                max_edge,
                max_ratio,
            } => {
                let (long, short) = size.long_short();
                size.width.is_multiple_of(step)
                    && size.height.is_multiple_of(step)
                    && (pixels.0..=pixels.1).contains(&size.pixels())
                    && long <= max_edge
                    && u64::from(long) <= u64::from(short) * u64::from(max_ratio)
            }
        }
    }

    /// The rule in words, for an error naming it.
    pub fn describe(&self) -> String {
        match *self {
            SizeRule::Listed(sizes) => {
                let sizes: Vec<String> = sizes.iter().map(|s| format!("'{s}'")).collect();
                format!("one of {}, or 'auto'", sizes.join(", "))
            }
            SizeRule::Flexible {
                step,
                pixels,
                max_edge,
                max_ratio,
            } => format!(
                "'auto' or WIDTHxHEIGHT with sides multiples of {step}, no side above {max_edge}, \
                 {}–{} pixels in all, and the longer side at most {max_ratio} times the shorter",
                pixels.0, pixels.1
            ),
        }
    }
}

const GPT_IMAGE_1_SIZES: &[Size] = &[
    Size::new(1024, 1024),
    Size::new(1536, 1024),
    Size::new(1024, 1536),
];

/// Every family's qualities: `auto` lets the model choose.
const GPT_QUALITIES: &[Quality] = &[Quality::Low, Quality::Medium, Quality::High, Quality::Auto];

impl Family {
    /// The sizes it draws.
    pub const fn sizes(self) -> SizeRule {
        match self {
            Family::GptImage2 => SizeRule::Flexible {
                step: 16,
                pixels: (655_360, 8_294_400),
                max_edge: 3_840,
                max_ratio: 3,
            },
            Family::GptImage1 => SizeRule::Listed(GPT_IMAGE_1_SIZES),
        }
    }

    /// The size `auto` may come to at most, for a bound: the size of the dearest image the
    /// family draws (`gpt-image-2`'s square of its most pixels).
    pub const fn largest(self) -> Size {
        match self {
            Family::GptImage2 => Size::new(2_880, 2_880),
            Family::GptImage1 => Size::new(1_024, 1_536),
        }
    }

    /// The qualities it takes.
    pub const fn qualities(self) -> &'static [Quality] {
        match self {
            Family::GptImage2 | Family::GptImage1 => GPT_QUALITIES,
        }
    }

    /// The quality a request that names none is drawn at.
    pub const fn default_quality(self) -> Quality {
        Quality::Auto
    }

    /// The most images one request may ask for (`n`).
    pub const fn max_n(self) -> u32 {
        10
    }

    /// The most partial images a stream may ask for (`partial_images`).
    pub const fn max_partial_images(self) -> u8 {
        3
    }

    /// The most characters of a prompt.
    pub const fn max_prompt_chars(self) -> usize {
        32_000
    }

    /// Image-out tokens each partial image adds, as OpenAI documents it.
    pub const fn partial_image_tokens(self) -> u64 {
        100
    }
}
