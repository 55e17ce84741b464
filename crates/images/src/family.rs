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
    /// `dall-e-3` and the per-image vendors that speak its dialect: three sizes, `standard`
    /// or `hd`, one image a request, a `style`, answers by link (`url`, the default) or inline;
    /// priced per image by size and quality, with no usage reported.
    #[serde(rename = "dall-e-3")]
    DallE3,
    /// `dall-e-2` and its kin (LocalAI-style servers): three square sizes, up to 10 images,
    /// edits of one square PNG and variations; answers by link or inline; priced per image by
    /// size.
    #[serde(rename = "dall-e-2")]
    DallE2,
}

/// What a request asks of a model: to draw, to change images, or to vary one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `POST /v1/images/generations`.
    Generation,
    /// `POST /v1/images/edits`.
    Edit,
    /// `POST /v1/images/variations`.
    Variation,
}

impl Operation {
    /// Its endpoint's path.
    pub const fn path(self) -> &'static str {
        match self {
            Operation::Generation => "/v1/images/generations",
            Operation::Edit => "/v1/images/edits",
            Operation::Variation => "/v1/images/variations",
        }
    }
}

/// How a family's images are priced (docs/api.md §8 rules 8 and 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pricing {
    /// By token class: text in, image in, image out (gpt-image).
    ByTokenClass,
    /// By the picture, of the size and quality asked (dall-e).
    ByPicture,
}

/// The rules an edit's uploaded images follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputRule {
    /// The most images one edit takes (the mask aside).
    pub max_images: usize,
    /// Each must be a square PNG (dall-e-2's rule).
    pub square_png: bool,
    /// The most bytes of each, where the family has its own limit.
    pub max_bytes: Option<u64>,
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
                format!("one of {}", sizes.join(", "))
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

const DALL_E_3_SIZES: &[Size] = &[
    Size::new(1024, 1024),
    Size::new(1792, 1024),
    Size::new(1024, 1792),
];

const DALL_E_2_SIZES: &[Size] = &[
    Size::new(256, 256),
    Size::new(512, 512),
    Size::new(1024, 1024),
];

/// The GPT image families' qualities: `auto` lets the model choose.
const GPT_QUALITIES: &[Quality] = &[Quality::Low, Quality::Medium, Quality::High, Quality::Auto];

/// The fields every family takes besides `model`, `prompt`, `n`, `size`, `quality` and `user`.
const GPT_FIELDS: &[&str] = &[
    "background",
    "output_format",
    "output_compression",
    "moderation",
    "response_format",
    "stream",
    "partial_images",
    "input_fidelity",
];

impl Family {
    /// Its name in the configuration (`images.family`).
    pub const fn name(self) -> &'static str {
        match self {
            Family::GptImage2 => "gpt-image-2",
            Family::GptImage1 => "gpt-image-1",
            Family::DallE3 => "dall-e-3",
            Family::DallE2 => "dall-e-2",
        }
    }

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
            Family::DallE3 => SizeRule::Listed(DALL_E_3_SIZES),
            Family::DallE2 => SizeRule::Listed(DALL_E_2_SIZES),
        }
    }

    /// The size of a request that names none: `None` for `auto` (the model chooses, and a
    /// request may say `auto`); dall-e's `1024x1024` (they take no `auto`).
    pub const fn default_size(self) -> Option<Size> {
        match self {
            Family::GptImage2 | Family::GptImage1 => None,
            Family::DallE3 | Family::DallE2 => Some(Size::new(1024, 1024)),
        }
    }

    /// How its images are priced.
    pub const fn pricing(self) -> Pricing {
        match self {
            Family::GptImage2 | Family::GptImage1 => Pricing::ByTokenClass,
            Family::DallE3 | Family::DallE2 => Pricing::ByPicture,
        }
    }

    /// Whether it does `operation`: every family draws; dall-e-3 edits nothing; only dall-e-2
    /// makes variations.
    pub const fn does(self, operation: Operation) -> bool {
        match operation {
            Operation::Generation => true,
            Operation::Edit => !matches!(self, Family::DallE3),
            Operation::Variation => matches!(self, Family::DallE2),
        }
    }

    /// The optional fields it takes besides `model`, `prompt`, `n`, `size`, `quality` and
    /// `user`: a field another family takes is refused by name (`unsupported_parameter`).
    pub const fn fields(self) -> &'static [&'static str] {
        match self {
            Family::GptImage2 | Family::GptImage1 => GPT_FIELDS,
            Family::DallE3 => &["response_format", "style"],
            Family::DallE2 => &["response_format"],
        }
    }

    /// How its answers come when `response_format` is not named, and whether a request may ask
    /// for links (`url`): the GPT image models answer inline only, as OpenAI's do; dall-e by
    /// link unless asked otherwise — the gateway's own signed link (docs/decisions.md, "Images
    /// by the picture").
    pub const fn answers_by_link(self) -> bool {
        matches!(self, Family::DallE3 | Family::DallE2)
    }

    /// Whether it streams (`stream: true`, partial images).
    pub const fn streams(self) -> bool {
        matches!(self, Family::GptImage2 | Family::GptImage1)
    }

    /// The rules of an edit's (or a variation's) uploaded images.
    pub const fn inputs(self) -> InputRule {
        match self {
            Family::GptImage2 | Family::GptImage1 | Family::DallE3 => InputRule {
                max_images: 16,
                square_png: false,
                max_bytes: None,
            },
            Family::DallE2 => InputRule {
                max_images: 1,
                square_png: true,
                max_bytes: Some(4 << 20),
            },
        }
    }

    /// The size `auto` may come to at most, for a bound: the size of the dearest image the
    /// family draws (`gpt-image-2`'s square of its most pixels).
    pub const fn largest(self) -> Size {
        match self {
            Family::GptImage2 => Size::new(2_880, 2_880),
            Family::GptImage1 => Size::new(1_024, 1_536),
            Family::DallE3 => Size::new(1_792, 1_024),
            Family::DallE2 => Size::new(1_024, 1_024),
        }
    }

    /// The qualities it takes.
    pub const fn qualities(self) -> &'static [Quality] {
        match self {
            Family::GptImage2 | Family::GptImage1 => GPT_QUALITIES,
            Family::DallE3 => &[Quality::Standard, Quality::Hd],
            Family::DallE2 => &[Quality::Standard],
        }
    }

    /// The quality a request that names none is drawn at.
    pub const fn default_quality(self) -> Quality {
        match self {
            Family::GptImage2 | Family::GptImage1 => Quality::Auto,
            Family::DallE3 | Family::DallE2 => Quality::Standard,
        }
    }

    /// The most images one request may ask for (`n`).
    pub const fn max_n(self) -> u32 {
        match self {
            Family::DallE3 => 1,
            Family::GptImage2 | Family::GptImage1 | Family::DallE2 => 10,
        }
    }

    /// The most partial images a stream may ask for (`partial_images`).
    pub const fn max_partial_images(self) -> u8 {
        if self.streams() { 3 } else { 0 }
    }

    /// The most characters of a prompt.
    pub const fn max_prompt_chars(self) -> usize {
        match self {
            Family::GptImage2 | Family::GptImage1 => 32_000,
            Family::DallE3 => 4_000,
            Family::DallE2 => 1_000,
        }
    }

    /// Image-out tokens each partial image adds, as OpenAI documents it.
    pub const fn partial_image_tokens(self) -> u64 {
        100
    }
}
