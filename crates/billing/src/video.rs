//! Clip-format video: the token estimate charged at submission (docs/api.md §8 rules 4–5).
//!
//! The upstream bills a finished clip task by `usage.completion_tokens`, which that figure settles
//! (DESIGN §4). At submission the gateway holds an estimate computed from the requested resolution,
//! aspect ratio and duration. The documented formula is `seconds × width × height × 24 / 1024`, but
//! the upstream's own figures count **24 × seconds + 1** frames per output clip (wire-formats §5.5):
//!
//! | Request | Tokens | = width × height × frames / 1024 |
//! |---|---|---|
//! | 720p 16:9, 5 s | 108 900 | 1280 × 720 × 121 / 1024 |
//! | 720p 16:9, 4 s | 87 300 | 1280 × 720 × 97 / 1024 |
//! | 720p 16:9, 4 s + 4 s reference video | 173 700 | 1280 × 720 × (97 + 96) / 1024 |
//!
//! and docs/api.md §8 rule 4 gives "480p for 4 seconds is about 40,000 tokens" (864 × 496 × 97 / 1024 ≈
//! 40 595).

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use crate::meter::{ClipTier, Usage};

/// Frames per second of a generated clip.
pub const FRAMES_PER_SECOND: u64 = 24;

/// Pixels (summed over all frames) per billed token.
pub const PIXELS_PER_TOKEN: u64 = 1024;

/// The pixel size of a clip's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FrameSize {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl FrameSize {
    /// A frame of `width × height` pixels.
    pub const fn new(width: u32, height: u32) -> FrameSize {
        FrameSize { width, height }
    }

    /// Pixels per frame.
    pub const fn pixels(self) -> u64 {
        // Two u32 factors always fit a u64.
        self.width as u64 * self.height as u64
    }
}

/// A series of the clip model family (docs/api.md §9: "series 2.0 and 2.5 of the clip family").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ClipSeries {
    /// Series 2.0.
    #[serde(rename = "2.0")]
    V2_0,
    /// Series 2.5.
    #[serde(rename = "2.5")]
    V2_5,
}

impl ClipSeries {
    /// The series named by its version, `"2.0"` or `"2.5"`.
    pub fn from_version(version: &str) -> Option<ClipSeries> {
        match version {
            "2.0" => Some(ClipSeries::V2_0),
            "2.5" => Some(ClipSeries::V2_5),
            _ => None,
        }
    }

    /// The version text, `"2.0"` or `"2.5"`.
    pub const fn version(self) -> &'static str {
        match self {
            ClipSeries::V2_0 => "2.0",
            ClipSeries::V2_5 => "2.5",
        }
    }

    /// The longest reference video held for at submission (docs/api.md §8 rule 5): 15 s for 2.0, 30 s
    /// for 2.5.
    pub const fn max_reference_seconds(self) -> u32 {
        match self {
            ClipSeries::V2_0 => 15,
            ClipSeries::V2_5 => 30,
        }
    }

    /// The output durations a task may request (docs/api.md §8 limits): 4 to 15 s for 2.0, 4 to 30 s for
    /// 2.5.
    pub const fn duration_seconds(self) -> RangeInclusive<u32> {
        match self {
            ClipSeries::V2_0 => 4..=15,
            ClipSeries::V2_5 => 4..=30,
        }
    }
}

/// docs/api.md §8 rule 5, DESIGN §4: the maximum reference-video seconds held extra for a series — 15 for
/// 2.0, 30 for 2.5.
pub const fn clip_max_reference_seconds(series: ClipSeries) -> u32 {
    series.max_reference_seconds()
}

/// Frame sizes by resolution and aspect ratio (wire-formats §5.5). 1080p is not documented for
/// 21:9.
const FRAME_SIZES: &[(&str, &[(&str, FrameSize)])] = &[
    (
        "480p",
        &[
            ("16:9", FrameSize::new(864, 496)),
            ("4:3", FrameSize::new(752, 560)),
            ("1:1", FrameSize::new(640, 640)),
            ("3:4", FrameSize::new(560, 752)),
            ("9:16", FrameSize::new(496, 864)),
            ("21:9", FrameSize::new(992, 432)),
        ],
    ),
    (
        "720p",
        &[
            ("16:9", FrameSize::new(1280, 720)),
            ("4:3", FrameSize::new(1112, 834)),
            ("1:1", FrameSize::new(960, 960)),
            ("3:4", FrameSize::new(834, 1112)),
            ("9:16", FrameSize::new(720, 1280)),
            ("21:9", FrameSize::new(1470, 630)),
        ],
    ),
    (
        "1080p",
        &[
            ("16:9", FrameSize::new(1920, 1080)),
            ("4:3", FrameSize::new(1664, 1248)),
            ("1:1", FrameSize::new(1440, 1440)),
            ("3:4", FrameSize::new(1248, 1664)),
            ("9:16", FrameSize::new(1080, 1920)),
        ],
    ),
];

/// The frame size of a clip at `resolution` (`"480p"`, `"720p"`, `"1080p"`) and `ratio`
/// (`"16:9"`, `"4:3"`, `"1:1"`, `"3:4"`, `"9:16"`, `"21:9"`), from wire-formats §5.5.
///
/// `"adaptive"` lets the upstream pick the ratio, so it gives the **largest** frame of that
/// resolution: the hold then covers whichever ratio is chosen. An unknown resolution or ratio
/// gives `None`.
///
/// ```
/// use tollgate_billing::{FrameSize, clip_frame_size};
///
/// assert_eq!(clip_frame_size("480p", "16:9"), Some(FrameSize::new(864, 496)));
/// assert_eq!(clip_frame_size("720p", "adaptive"), Some(FrameSize::new(1112, 834)));
/// assert_eq!(clip_frame_size("4k", "16:9"), None);
/// ```
pub fn clip_frame_size(resolution: &str, ratio: &str) -> Option<FrameSize> {
    let (_, sizes) = FRAME_SIZES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(resolution))?;
    if ratio == "adaptive" {
        // The first of the largest, so that ties resolve the same way every time.
        sizes.iter().map(|&(_, size)| size).reduce(|best, size| {
            if size.pixels() > best.pixels() {
                size
            } else {
                best
            }
        })
    } else {
        sizes
            .iter()
            .find(|(name, _)| *name == ratio)
            .map(|&(_, size)| size)
    }
}

/// `width × height × frames / 1024`, rounded up; saturates at `u64::MAX` for absurd inputs.
fn tokens_for_frames(size: FrameSize, frames: u128) -> u64 {
    let pixels = u128::from(size.pixels()).saturating_mul(frames);
    u64::try_from(pixels.div_ceil(u128::from(PIXELS_PER_TOKEN))).unwrap_or(u64::MAX)
}

/// docs/api.md §8 rule 4: the estimated tokens of a clip of `output_seconds` at `size`:
/// `width × height × (24 × seconds + 1) / 1024`, rounded up.
///
/// ```
/// use tollgate_billing::{FrameSize, clip_token_estimate};
///
/// assert_eq!(clip_token_estimate(FrameSize::new(1280, 720), 5), 108_900);
/// ```
pub fn clip_token_estimate(size: FrameSize, output_seconds: u32) -> u64 {
    clip_token_estimate_with_reference(size, output_seconds, 0)
}

/// docs/api.md §8 rule 5: with reference videos the usage counts the output duration plus the reference
/// duration: `width × height × (24 × output_seconds + 1 + 24 × reference_seconds) / 1024`, rounded
/// up. With `reference_seconds == 0` this is [`clip_token_estimate`].
///
/// ```
/// use tollgate_billing::{FrameSize, clip_token_estimate_with_reference};
///
/// assert_eq!(clip_token_estimate_with_reference(FrameSize::new(1280, 720), 4, 4), 173_700);
/// ```
pub fn clip_token_estimate_with_reference(
    size: FrameSize,
    output_seconds: u32,
    reference_seconds: u32,
) -> u64 {
    let fps = u128::from(FRAMES_PER_SECOND);
    let frames = fps * u128::from(output_seconds) + 1 + fps * u128::from(reference_seconds);
    tokens_for_frames(size, frames)
}

/// docs/api.md §8 rules 4–5: the usage held at submission of a clip task.
///
/// The standard tier holds the estimate for the output alone; the reference-video tier also holds
/// for the series' maximum reference length ([`ClipSeries::max_reference_seconds`]), which is then
/// settled against the upstream's actual usage.
///
/// ```
/// use tollgate_billing::{ClipSeries, ClipTier, FrameSize, Usage, clip_submission_usage};
///
/// let size = FrameSize::new(1280, 720);
/// assert_eq!(
///     clip_submission_usage(size, 4, ClipTier::ReferenceVideo, ClipSeries::V2_0),
///     Usage::VideoTokens { tokens: 1280 * 720 * (97 + 24 * 15) / 1024, tier: ClipTier::ReferenceVideo },
/// );
/// ```
pub fn clip_submission_usage(
    size: FrameSize,
    output_seconds: u32,
    tier: ClipTier,
    series: ClipSeries,
) -> Usage {
    let reference_seconds = match tier {
        ClipTier::Standard => 0,
        ClipTier::ReferenceVideo => series.max_reference_seconds(),
    };
    Usage::VideoTokens {
        tokens: clip_token_estimate_with_reference(size, output_seconds, reference_seconds),
        tier,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_size_is_found() {
        let ratios = ["16:9", "4:3", "1:1", "3:4", "9:16", "21:9"];
        for resolution in ["480p", "720p"] {
            for ratio in ratios {
                assert!(
                    clip_frame_size(resolution, ratio).is_some(),
                    "{resolution} {ratio}"
                );
            }
        }
        assert_eq!(
            clip_frame_size("720p", "21:9"),
            Some(FrameSize::new(1470, 630))
        );
        assert_eq!(
            clip_frame_size("480p", "3:4"),
            Some(FrameSize::new(560, 752))
        );
        assert_eq!(
            clip_frame_size("1080p", "9:16"),
            Some(FrameSize::new(1080, 1920))
        );
        assert_eq!(
            clip_frame_size("720P", "1:1"),
            Some(FrameSize::new(960, 960))
        );
    }

    #[test]
    fn unknown_sizes_are_none() {
        assert_eq!(clip_frame_size("360p", "16:9"), None);
        assert_eq!(clip_frame_size("720p", "16/9"), None);
        assert_eq!(clip_frame_size("720p", ""), None);
        assert_eq!(clip_frame_size("", "adaptive"), None);
        assert_eq!(clip_frame_size("1080p", "21:9"), None);
    }

    #[test]
    fn adaptive_takes_the_largest_frame() {
        for (resolution, sizes) in FRAME_SIZES {
            let adaptive = clip_frame_size(resolution, "adaptive").map(FrameSize::pixels);
            let largest = sizes.iter().map(|(_, size)| size.pixels()).max();
            assert_eq!(adaptive, largest, "{resolution}");
        }
        assert_eq!(
            clip_frame_size("480p", "adaptive"),
            Some(FrameSize::new(864, 496))
        );
        assert_eq!(
            clip_frame_size("1080p", "adaptive"),
            Some(FrameSize::new(1664, 1248))
        );
    }

    #[test]
    fn series_limits() {
        assert_eq!(clip_max_reference_seconds(ClipSeries::V2_0), 15);
        assert_eq!(clip_max_reference_seconds(ClipSeries::V2_5), 30);
        assert_eq!(ClipSeries::from_version("2.5"), Some(ClipSeries::V2_5));
        assert_eq!(ClipSeries::from_version("3.0"), None);
        assert_eq!(ClipSeries::V2_0.duration_seconds(), 4..=15);
        assert_eq!(ClipSeries::V2_5.version(), "2.5");
    }

    #[test]
    fn standard_submission_holds_the_output_only() {
        let size = FrameSize::new(1280, 720);
        assert_eq!(
            clip_submission_usage(size, 5, ClipTier::Standard, ClipSeries::V2_5),
            Usage::VideoTokens {
                tokens: 108_900,
                tier: ClipTier::Standard
            }
        );
        assert_eq!(
            clip_submission_usage(size, 4, ClipTier::ReferenceVideo, ClipSeries::V2_5),
            Usage::VideoTokens {
                tokens: clip_token_estimate_with_reference(size, 4, 30),
                tier: ClipTier::ReferenceVideo
            }
        );
    }

    #[test]
    fn absurd_inputs_saturate_instead_of_panicking() {
        let huge = FrameSize::new(u32::MAX, u32::MAX);
        assert_eq!(clip_token_estimate(huge, u32::MAX), u64::MAX);
        assert_eq!(
            clip_token_estimate_with_reference(huge, u32::MAX, u32::MAX),
            u64::MAX
        );
        assert_eq!(clip_token_estimate(FrameSize::new(0, 720), 5), 0);
        // Zero seconds is still one frame.
        assert_eq!(clip_token_estimate(FrameSize::new(1024, 1), 0), 1);
    }
}
