//! An image's bytes, vetted without decoding its pixels (docs/decisions.md, "Images"): its type
//! read from its first bytes (PNG, JPEG or WebP), its size from its header, a decompression
//! bomb refused from the size it declares. An upload of an edit ([`measure_image`]) and every
//! image a vendor sends — an OpenAI image call's, a native answer's inline image
//! ([`vet_b64`]) — pass here before they are counted or relayed.

use base64::Engine;
use tollgate_images::Size;
use tollgate_upstream::UpstreamError;

/// The most pixels an image the gateway reads may declare (an input, or a vendor's answer):
/// more is refused from its header, never decoded (a decompression bomb).
pub const MAX_IMAGE_PIXELS: u64 = 8_294_400 * 4;

/// The file types an image may be, in or out.
pub const IMAGE_TYPES: [&str; 3] = ["image/png", "image/jpeg", "image/webp"];

/// What an image's bytes are: its type (one of [`IMAGE_TYPES`]) and its size from the header;
/// `field` names it in the error. Never decodes the pixels.
pub fn measure_image(field: &str, bytes: &[u8]) -> Result<(&'static str, Size), String> {
    let mime = tollgate_probe::media::image_type(bytes)
        .filter(|mime| IMAGE_TYPES.contains(mime))
        .ok_or_else(|| format!("'{field}' must be a PNG, JPEG or WebP image"))?;
    let Some(tollgate_probe::media::Measured::Image { width, height }) =
        tollgate_probe::media::measure(mime, bytes)
    else {
        return Err(format!("'{field}' is not a readable {mime} image"));
    };
    let size = Size::new(width, height);
    if width == 0 || height == 0 || size.pixels() > MAX_IMAGE_PIXELS {
        return Err(format!(
            "'{field}' declares {width}x{height} pixels; the most is {MAX_IMAGE_PIXELS} pixels"
        ));
    }
    Ok((mime, size))
}

/// A vendor's image, base64: its type and decoded size, or why it is not one.
/// The whole text is checked to be base64, but only its head is decoded — a header, 48 KiB,
/// more where a JPEG's size follows long metadata — so vetting an image costs no copy of it.
pub(crate) fn vet_b64(b64: &str) -> Result<(&'static str, Size), UpstreamError> {
    let text = b64.trim();
    let broken = || UpstreamError::Protocol("an image's base64 is broken".into());
    let padding = text.bytes().rev().take_while(|c| *c == b'=').count();
    let body = &text.as_bytes()[..text.len() - padding];
    if !text.len().is_multiple_of(4)
        || padding > 2
        || !body
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
    {
        return Err(broken());
    }
    let mut take = 64 << 10;
    loop {
        let end = take.min(text.len());
        let head = base64::engine::general_purpose::STANDARD
            .decode(&text[..end])
            .map_err(|_| broken())?;
        match measure_image("image", &head) {
            Ok(measured) => return Ok(measured),
            Err(e) if end == text.len() => {
                return Err(UpstreamError::Protocol(format!("the vendor's {e}")));
            }
            Err(_) => take = take.saturating_mul(8),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// A PNG's signature and header: what the gateway reads of an image.
    fn png_head(width: u32, height: u32) -> Vec<u8> {
        let mut head = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        head.extend_from_slice(&width.to_be_bytes());
        head.extend_from_slice(&height.to_be_bytes());
        head.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
        head
    }

    #[test]
    fn a_vendors_image_is_measured_from_its_head_and_its_base64_checked_whole() {
        let mut image = png_head(1536, 1024);
        image.resize(300_000, 7);
        assert_eq!(
            vet_b64(&b64(&image)).unwrap(),
            ("image/png", Size::new(1536, 1024))
        );
        // A broken character far past the head is still found.
        let mut text = b64(&image);
        text.replace_range(200_000..200_001, "*");
        assert!(vet_b64(&text).is_err());
        assert!(vet_b64(&b64(b"<svg xmlns='http://www.w3.org/2000/svg'/>")).is_err());
        assert!(
            vet_b64(&b64(&png_head(50_000, 50_000))).is_err(),
            "a bomb by its header"
        );
        assert!(vet_b64("abc").is_err());
    }
}
