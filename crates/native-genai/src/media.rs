//! What media costs in tokens, as the vendor counts it: one table, with where each rate is
//! published. The gateway holds for a request's media at these rates from what it measured
//! (`docs/decisions.md`, "Bounded settlement"); the simulator counts the same way, as its
//! vendor does. The upstream's `promptTokenCount` settles the charge either way.
//!
//! | Media | Tokens | Source |
//! |---|---|---|
//! | image, both sides at most 384 px | 258 | ai.google.dev/gemini-api/docs/vision ("Token calculation") |
//! | larger image | 258 a tile of 768 × 768 px: ⌈w/768⌉ × ⌈h/768⌉ tiles | the same |
//! | audio | 32 a second, rounded up | ai.google.dev/gemini-api/docs/tokens ("Multimodal tokens"); docs/audio |
//! | video | 263 a second, rounded up (frames at 1 fps and the sound) | ai.google.dev/gemini-api/docs/tokens |
//! | a document page | 258 | ai.google.dev/gemini-api/docs/document-processing |
//! | video sampled at `videoMetadata.fps` | the video rate × the frames a second asked, rounded up (1 by default) | ai.google.dev/gemini-api/docs/video-understanding ("Custom frame rate") |
//!
//! ```
//! use tollgate_native_genai::media::{Media, tokens};
//!
//! assert_eq!(tokens(Media::Image { width: 300, height: 200 }), 258);
//! assert_eq!(tokens(Media::Image { width: 1536, height: 800 }), 4 * 258);
//! assert_eq!(tokens(Media::AudioSeconds(60.0)), 1_920);
//! assert_eq!(tokens(Media::VideoSeconds(10.5)), 2_762);
//! ```

/// Tokens of a small image, and of each tile of a larger one.
pub const IMAGE_TOKENS: u64 = 258;
/// An image whose sides are both at most this many pixels is one small image.
pub const SMALL_IMAGE_PX: u32 = 384;
/// The side of a tile of a larger image, in pixels.
pub const TILE_PX: u32 = 768;
/// Tokens a second of audio.
pub const AUDIO_TOKENS_PER_SECOND: u64 = 32;
/// Tokens a second of video.
pub const VIDEO_TOKENS_PER_SECOND: u64 = 263;
/// Tokens a page of a document.
pub const PAGE_TOKENS: u64 = 258;

/// A measured piece of media.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Media {
    /// An image of `width` × `height` pixels.
    Image {
        /// Pixels across.
        width: u32,
        /// Pixels down.
        height: u32,
    },
    /// Audio of this many seconds.
    AudioSeconds(f64),
    /// A video of this many seconds.
    VideoSeconds(f64),
    /// A document of this many pages.
    Pages(u32),
}

/// The tokens `media` counts as, by the table above.
pub fn tokens(media: Media) -> u64 {
    let per_second = |seconds: f64, rate: u64| -> u64 {
        if !seconds.is_finite() || seconds <= 0.0 {
            return 0;
        }
        // Whole milliseconds first, so that 10.5 s × 263 is exactly 2,761.5 → 2,762.
        let millis = (seconds * 1000.0).ceil();
        let millis = if millis >= u64::MAX as f64 {
            u64::MAX
        } else {
            millis as u64
        };
        millis.saturating_mul(rate).div_ceil(1000)
    };
    match media {
        Media::Image { width, height } if width <= SMALL_IMAGE_PX && height <= SMALL_IMAGE_PX => {
            IMAGE_TOKENS
        }
        Media::Image { width, height } => {
            let tiles = u64::from(width.div_ceil(TILE_PX).max(1))
                * u64::from(height.div_ceil(TILE_PX).max(1));
            tiles.saturating_mul(IMAGE_TOKENS)
        }
        Media::AudioSeconds(seconds) => per_second(seconds, AUDIO_TOKENS_PER_SECOND),
        Media::VideoSeconds(seconds) => per_second(seconds, VIDEO_TOKENS_PER_SECOND),
        Media::Pages(pages) => u64::from(pages).saturating_mul(PAGE_TOKENS),
    }
}

/// The most frames a second [`fps_multiple`] follows; a larger rate is held at this one.
pub const MAX_FPS_MULTIPLE: u64 = 240;

/// The multiple of the video rate a part's `videoMetadata.fps` asks for (the vendor samples one
/// frame a second unless told otherwise): `Some(1)` for none or less than one, the rate rounded
/// up otherwise (at most [`MAX_FPS_MULTIPLE`]); `None` when `fps` is not a positive number, and
/// what the vendor would count is unknown.
pub fn fps_multiple(fps: Option<&serde_json::Value>) -> Option<u64> {
    let Some(fps) = fps else {
        return Some(1);
    };
    let fps = fps.as_f64().filter(|f| f.is_finite() && *f > 0.0)?;
    Some((fps.ceil() as u64).clamp(1, MAX_FPS_MULTIPLE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_round_up_and_never_overflow() {
        assert_eq!(tokens(Media::AudioSeconds(0.001)), 1);
        assert_eq!(tokens(Media::AudioSeconds(0.0)), 0);
        assert_eq!(tokens(Media::AudioSeconds(f64::NAN)), 0);
        assert_eq!(
            tokens(Media::VideoSeconds(f64::MAX)),
            u64::MAX.div_ceil(1000)
        );
        assert_eq!(
            tokens(Media::Image {
                width: 384,
                height: 384
            }),
            258
        );
        assert_eq!(
            tokens(Media::Image {
                width: 385,
                height: 10
            }),
            258
        );
        assert_eq!(
            tokens(Media::Image {
                width: 769,
                height: 769
            }),
            4 * 258
        );
        assert_eq!(tokens(Media::Pages(3)), 774);
    }

    #[test]
    fn a_frame_rate_multiplies_the_video_rate() {
        use serde_json::json;
        assert_eq!(fps_multiple(None), Some(1));
        assert_eq!(fps_multiple(Some(&json!(0.5))), Some(1));
        assert_eq!(fps_multiple(Some(&json!(2.5))), Some(3));
        assert_eq!(fps_multiple(Some(&json!(1e300))), Some(MAX_FPS_MULTIPLE));
        assert_eq!(fps_multiple(Some(&json!(0))), None);
        assert_eq!(fps_multiple(Some(&json!("24"))), None);
    }
}
