//! What a piece of media measures, for billing it: an image's dimensions, an audio file's or a
//! video's duration — read from the bytes the gateway holds, never from what a client says about
//! them (`docs/decisions.md`, "Bounded settlement"). The gateway measures the media parts of a
//! text-generation request with it, and the simulator counts them the same way, as its vendor
//! does.

use crate::mp4::movie_seconds;

/// A measured piece of media.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measured {
    /// An image of `width` × `height` pixels.
    Image {
        /// Pixels across.
        width: u32,
        /// Pixels down.
        height: u32,
    },
    /// Audio of this many seconds.
    Audio {
        /// Its duration.
        seconds: f64,
    },
    /// A video of this many seconds.
    Video {
        /// Its duration.
        seconds: f64,
    },
}

/// Measures `bytes` as the media type `mime` says they are (`image/png`, `audio/wav`,
/// `video/mp4`, …): `None` when they cannot be read as such — another type, a corrupt or cut
/// file, a container whose length cannot be read from its bytes (a video whose every timing
/// comes to nothing included). What the bytes are is checked,
/// not trusted: an "image" that is not one is `None`, whatever its label.
///
/// ```
/// use tollgate_probe::media::{measure, Measured};
///
/// // A 1×1 PNG.
/// let png = [
///     0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R',
///     0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89,
/// ];
/// assert_eq!(measure("image/png", &png), Some(Measured::Image { width: 1, height: 1 }));
/// assert_eq!(measure("audio/wav", &png), None);
/// ```
pub fn measure(mime: &str, bytes: &[u8]) -> Option<Measured> {
    let mime = mime.trim().to_ascii_lowercase();
    let kind = mime.split('/').next().unwrap_or_default();
    match kind {
        "image" => {
            let size = imagesize::blob_size(bytes).ok()?;
            Some(Measured::Image {
                width: u32::try_from(size.width).ok()?,
                height: u32::try_from(size.height).ok()?,
            })
        }
        "audio" => {
            let probed = crate::probe_bytes(bytes.to_vec()).ok()?;
            Some(Measured::Audio {
                seconds: probed.duration.as_secs_f64(),
            })
        }
        // The samples' own timing, fragments included, not the header's claim alone
        // (`crate::mp4::movie_seconds`); a movie with no measurable length is `None`.
        "video" => movie_seconds(bytes).map(|seconds| Measured::Video { seconds }),
        _ => None,
    }
}

/// The media type the bytes of an image show — `image/png`, `image/jpeg`, `image/webp`,
/// `image/gif`, `image/bmp`, `image/heic` — when they are one of those and their dimensions can be
/// read: what an image is called is never taken from its label.
///
/// ```
/// use tollgate_probe::media::image_type;
///
/// let png = [
///     0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R',
///     0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89,
/// ];
/// assert_eq!(image_type(&png), Some("image/png"));
/// assert_eq!(image_type(b"<svg xmlns='http://www.w3.org/2000/svg'/>"), None);
/// ```
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    use imagesize::ImageType;
    let mime = match imagesize::image_type(bytes).ok()? {
        ImageType::Png => "image/png",
        ImageType::Jpeg => "image/jpeg",
        ImageType::Webp => "image/webp",
        ImageType::Gif => "image/gif",
        ImageType::Bmp => "image/bmp",
        ImageType::Heif(_) => "image/heic",
        _ => return None,
    };
    imagesize::blob_size(bytes).ok().map(|_| mime)
}
