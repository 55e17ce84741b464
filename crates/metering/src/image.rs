//! An image call's hold and bound (docs/decisions.md, "Images"): what a generation or an edit
//! may be charged, by token class, from what the gateway measured — never from the request's
//! word for the images it got, nor from the vendor's.
//!
//! - **image out**: each image the gateway relayed, at the vendor's published tokens for the
//!   size **decoded from its bytes** and the quality asked (`auto`: the dearest), and never
//!   above the size asked (`auto`: the family's largest) — a vendor that draws larger than
//!   asked is bounded by what was asked; plus each partial image relayed at the tokens its
//!   vendor documents for one;
//! - **image in**: each uploaded image (and mask) at its decoded size ([`input_image_tokens`]);
//! - **text in**: the prompt's estimated tokens ([`crate::tokens::estimate_vendor_tokens`]), a
//!   few for each input image, with [`PROMPT_MARGIN_PERCENT`];
//! - **text out**: the bytes of text relayed (a rewritten prompt), a token at least a byte.
//!
//! The hold is the bound of `n` images of the asked size and the dearest quality, their
//! partial images included: the most the call can come to.

use tollgate_billing::{ImageTier, TokenClass, TokenClasses, Usage};
use tollgate_images::response::ImageUsage;
use tollgate_images::{Family, InputFidelity, Quality, Size};

use crate::prompt::{PROMPT_MARGIN_PERCENT, TOKENS_PER_REQUEST};
use crate::session::{Claim, ResponseBound};
use crate::tokens::estimate_vendor_tokens;

/// Text tokens counted for each input image beyond its image tokens (OpenAI bills some for
/// an edit's images without documenting them; observed 32, bounded at twice that).
pub const TEXT_TOKENS_PER_INPUT_IMAGE: u64 = 64;

/// The image-out tokens of one image of `size` drawn at `quality` (`auto`: `high`), by the
/// vendor's published rule for `family`.
///
/// ```
/// use tollgate_images::{Family, Quality, Size};
/// use tollgate_metering::image::output_tokens;
/// assert_eq!(output_tokens(Family::GptImage2, Quality::High, Size::new(1024, 1024)), 7_024);
/// assert_eq!(output_tokens(Family::GptImage2, Quality::High, Size::new(1536, 1024)), 5_488);
/// assert_eq!(output_tokens(Family::GptImage1, Quality::Medium, Size::new(1024, 1536)), 1_584);
/// ```
pub fn output_tokens(family: Family, quality: Quality, size: Size) -> u64 {
    match family {
        // OpenAI's calculator for gpt-image-2: a quality factor q, an aspect factor
        // a = ⌊(2·q·short + long) / (2·long)⌋, tokens = ⌈q·a·(2,000,000 + pixels) / 4,000,000⌉
        // (1024² high: 7,024; 1536×1024: 5,488; 1792×1024: 5,063; 3584×2048: 12,329).
        Family::GptImage2 => {
            // dall-e's words never reach a GPT family (its check refuses them): the dearest.
            let q: u64 = match quality {
                Quality::Low => 16,
                Quality::Medium => 48,
                Quality::High | Quality::Auto | Quality::Standard | Quality::Hd => 96,
            };
            let (long, short) = size.long_short();
            let (long, short) = (u64::from(long), u64::from(short));
            let a = (2 * q * short + long) / (2 * long);
            (q * a)
                .saturating_mul(2_000_000 + size.pixels())
                .div_ceil(4_000_000)
        }
        // OpenAI's table for gpt-image-1 and its kin, by orientation: square 1024²,
        // portrait 1024×1536, landscape 1536×1024.
        Family::GptImage1 => {
            let row: [u64; 3] = if size.width == size.height {
                [272, 1_056, 4_160]
            } else if size.height > size.width {
                [408, 1_584, 6_240]
            } else {
                [400, 1_568, 6_208]
            };
            match quality {
                Quality::Low => row[0],
                Quality::Medium => row[1],
                Quality::High | Quality::Auto | Quality::Standard | Quality::Hd => row[2],
            }
        }
        // Priced by the picture ([`PictureCall`]): no tokens.
        Family::DallE3 | Family::DallE2 => 0,
    }
}

/// A call priced by the picture (dall-e; docs/api.md §8 rule 11): `n` images of the size and
/// quality asked, each at its row of the model's price table. The vendor reports no usage;
/// the gateway counts the images it relayed, each decoded from its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PictureCall {
    /// The size asked (a per-picture family always has one).
    pub size: Size,
    /// The quality asked, as a price names it.
    pub tier: ImageTier,
    /// Images asked.
    pub n: u32,
}

impl PictureCall {
    /// `n` images of `size` at `quality`.
    pub fn new(size: Size, quality: Quality, n: u32) -> PictureCall {
        PictureCall {
            size,
            tier: match quality {
                Quality::Hd => ImageTier::Hd,
                _ => ImageTier::Standard,
            },
            n,
        }
    }

    /// `images` of the size and quality asked.
    pub fn usage(&self, images: u64) -> Usage {
        Usage::ImagesAtSize {
            images,
            width: self.size.width,
            height: self.size.height,
            quality: self.tier,
        }
    }

    /// The hold: every image asked.
    pub fn hold(&self) -> Usage {
        self.usage(u64::from(self.n))
    }

    /// The charge of the images relayed, decoded to `drawn`: each counted at the size asked,
    /// at most `n`. An image larger than asked counts as asked (what was priced), and one
    /// smaller than asked — not what was bought — counts nothing; either is an anomaly.
    ///
    /// ```
    /// use tollgate_billing::{ImageTier, Usage};
    /// use tollgate_images::{Quality, Size};
    /// use tollgate_metering::image::PictureCall;
    /// let call = PictureCall::new(Size::new(1024, 1024), Quality::Hd, 2);
    /// let (usage, anomaly) = call.charge(&[Size::new(1024, 1024), Size::new(512, 512)]);
    /// assert_eq!(usage, Usage::ImagesAtSize { images: 1, width: 1024, height: 1024, quality: ImageTier::Hd });
    /// assert!(anomaly.unwrap().contains("512x512"));
    /// ```
    pub fn charge(&self, drawn: &[Size]) -> (Usage, Option<String>) {
        let mut counted = 0u64;
        let mut odd = Vec::new();
        for size in drawn.iter().take(self.n as usize) {
            if size.pixels() < self.size.pixels() {
                odd.push(format!("{size} (smaller than asked: not charged)"));
                continue;
            }
            if *size != self.size {
                odd.push(format!("{size} (charged as {})", self.size));
            }
            counted += 1;
        }
        let anomaly = (!odd.is_empty()).then(|| {
            format!(
                "images drawn at another size than the {} asked: {}",
                self.size,
                odd.join(", ")
            )
        });
        (self.usage(counted), anomaly)
    }
}

/// The image-in tokens one uploaded image of `size` may count: OpenAI's rule for its image
/// models — the image fitted within 2048 × 2048, its shorter side brought to 512, 65 tokens and
/// 129 for each 512-pixel tile — and, at `high` fidelity, 4,160 more for a square image or
/// 6,240 for another. The sides are rounded up, so the count is never below the vendor's.
///
/// ```
/// use tollgate_images::{InputFidelity, Size};
/// use tollgate_metering::image::input_image_tokens;
/// assert_eq!(input_image_tokens(Size::new(1024, 1024), InputFidelity::Low), 194);
/// assert_eq!(input_image_tokens(Size::new(1024, 1024), InputFidelity::High), 194 + 4_160);
/// assert_eq!(input_image_tokens(Size::new(1920, 1080), InputFidelity::Low), 65 + 2 * 129);
/// ```
pub fn input_image_tokens(size: Size, fidelity: InputFidelity) -> u64 {
    let (mut w, mut h) = (u64::from(size.width), u64::from(size.height));
    let longest = w.max(h);
    if longest > 2_048 {
        w = (w * 2_048).div_ceil(longest);
        h = (h * 2_048).div_ceil(longest);
    }
    let shortest = w.min(h).max(1);
    w = (w * 512).div_ceil(shortest);
    h = (h * 512).div_ceil(shortest);
    let tiles = w.div_ceil(512) * h.div_ceil(512);
    let extra = match fidelity {
        InputFidelity::Low => 0,
        InputFidelity::High if size.width == size.height => 4_160,
        InputFidelity::High => 6_240,
    };
    65 + 129 * tiles + extra
}

/// One image call as the gateway measured it before sending it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageCall {
    /// The model's family.
    pub family: Family,
    /// The quality asked.
    pub quality: Quality,
    /// The size asked; `None`: `auto`.
    pub size: Option<Size>,
    /// Images asked.
    pub n: u32,
    /// Partial images asked before each image.
    pub partial_images: u8,
    /// The prompt's estimated tokens ([`estimate_vendor_tokens`]).
    pub prompt_tokens: u64,
    /// The uploaded images' (and mask's) decoded sizes.
    pub inputs: Vec<Size>,
    /// The edit's input fidelity.
    pub fidelity: InputFidelity,
}

impl ImageCall {
    /// A call of `prompt` (its tokens estimated here).
    pub fn new(family: Family, quality: Quality, size: Option<Size>, n: u32, prompt: &str) -> Self {
        ImageCall {
            family,
            quality,
            size,
            n,
            partial_images: 0,
            prompt_tokens: estimate_vendor_tokens(prompt),
            inputs: Vec::new(),
            fidelity: InputFidelity::Low,
        }
    }

    /// The most one image may count out: at the size asked (`auto`: the family's largest).
    pub fn most_per_image(&self) -> u64 {
        output_tokens(
            self.family,
            self.quality,
            self.size.unwrap_or(self.family.largest()),
        )
    }

    /// The bound of one relayed image whose bytes decode to `drawn`: its own tokens, never
    /// above the size asked.
    pub fn drawn_tokens(&self, drawn: Size) -> u64 {
        output_tokens(self.family, self.quality, drawn).min(self.most_per_image())
    }

    /// What the call reads, whatever it draws.
    fn input(&self) -> ResponseBound {
        let images = self.inputs.len() as u64;
        let image_in = self.inputs.iter().fold(0u64, |sum, size| {
            sum.saturating_add(input_image_tokens(*size, self.fidelity))
        });
        let text = self
            .prompt_tokens
            .saturating_add(TOKENS_PER_REQUEST)
            .saturating_add(images.saturating_mul(TEXT_TOKENS_PER_INPUT_IMAGE));
        ResponseBound {
            text_in: text.saturating_mul(PROMPT_MARGIN_PERCENT).div_ceil(100),
            image_in,
            ..ResponseBound::default()
        }
    }

    /// The hold: every image asked at its most, each with its partial images.
    pub fn hold(&self) -> ResponseBound {
        let per_image = self.most_per_image().saturating_add(
            u64::from(self.partial_images).saturating_mul(self.family.partial_image_tokens()),
        );
        ResponseBound {
            image_out: per_image.saturating_mul(u64::from(self.n)),
            ..self.input()
        }
    }

    /// The bound once relayed: the images relayed, decoded to `drawn`; `partials` partial
    /// images relayed; `text_bytes` of text relayed.
    pub fn bound(&self, drawn: &[Size], partials: u64, text_bytes: u64) -> ResponseBound {
        let images = drawn.iter().fold(0u64, |sum, size| {
            sum.saturating_add(self.drawn_tokens(*size))
        });
        ResponseBound {
            image_out: images
                .saturating_add(partials.saturating_mul(self.family.partial_image_tokens())),
            text_out: text_bytes,
            ..self.input()
        }
    }
}

impl ImageCall {
    /// The call's tokens as the gateway counts them, for a vendor that reported none: the
    /// prompt's estimate, the inputs by their decoded sizes, and each image relayed (`drawn`)
    /// and partial image at the vendor's published tokens.
    pub fn estimate(&self, drawn: &[Size], partials: u64) -> TokenClasses {
        let mut usage = TokenClasses::default();
        usage.add(TokenClass::TextIn, self.prompt_tokens);
        usage.add(TokenClass::ImageIn, self.input().image_in);
        let images = drawn.iter().fold(0u64, |sum, size| {
            sum.saturating_add(self.drawn_tokens(*size))
        });
        usage.add(
            TokenClass::ImageOut,
            images.saturating_add(partials.saturating_mul(self.family.partial_image_tokens())),
        );
        usage
    }
}

/// An image call's usage: text and image in (the cached tokens, reported for all input, not
/// believed cached until itemised by kind), text and image out.
impl From<&ImageUsage> for Claim {
    fn from(usage: &ImageUsage) -> Claim {
        let input = &usage.input_tokens_details;
        let (text_out, image_out) = usage.output_split();
        Claim {
            input: usage.input_tokens,
            input_by: [input.text_tokens, 0, input.image_tokens],
            cached_by: [0, 0, 0],
            output: usage.output_tokens,
            output_by: [text_out, 0, image_out],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn gpt_image_2_matches_openais_calculator() {
        let high = |w, h| output_tokens(Family::GptImage2, Quality::High, Size::new(w, h));
        assert_eq!(high(1792, 1024), 5_063);
        assert_eq!(high(3584, 2048), 12_329);
        assert_eq!(high(2880, 2880), 23_719);
        assert_eq!(
            output_tokens(Family::GptImage2, Quality::Low, Size::new(1024, 1024)),
            196
        );
    }

    #[test]
    fn a_larger_image_than_asked_is_bounded_by_the_asked() {
        let call = ImageCall::new(
            Family::GptImage2,
            Quality::High,
            Some(Size::new(1024, 1024)),
            1,
            "a cat",
        );
        assert_eq!(call.drawn_tokens(Size::new(4096, 4096)), 7_024);
        assert_eq!(call.drawn_tokens(Size::new(1024, 1024)), 7_024);
        let bound = call.bound(&[Size::new(1024, 1024)], 2, 0);
        assert_eq!(bound.image_out, 7_024 + 200);
        assert_eq!(call.hold().image_out, 7_024);
    }

    proptest! {
        /// The family's largest is the dearest image it draws, so `auto` is held enough.
        #[test]
        fn auto_holds_at_least_any_size_the_family_draws(w in 1u32..240, h in 1u32..240) {
            let size = Size::new(w * 16, h * 16);
            for family in [Family::GptImage2, Family::GptImage1] {
                if family.sizes().allows(size) {
                    let call = ImageCall::new(family, Quality::Auto, None, 1, "x");
                    prop_assert!(output_tokens(family, Quality::High, size) <= call.most_per_image());
                }
            }
        }

        /// What one relayed image may count never passes what one image may be held at.
        #[test]
        fn a_drawn_image_is_within_its_hold(w in 1u32..9_000, h in 1u32..9_000, asked in any::<bool>()) {
            let call = ImageCall::new(
                Family::GptImage2,
                Quality::Medium,
                asked.then_some(Size::new(1024, 1536)),
                1,
                "x",
            );
            prop_assert!(call.drawn_tokens(Size::new(w, h)) <= call.hold().image_out);
        }
    }
}
