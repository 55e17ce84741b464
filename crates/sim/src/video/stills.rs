//! The stills a Sora-style vendor serves beside a video (wire-formats §7.2): a thumbnail
//! (`image/webp`, the clip's middle frame) and a spritesheet (`image/jpeg`, a grid of frames
//! taken at even intervals), from the same picture as [`super::render_mp4`]'s, so a test can
//! see they belong to the clip. WebP by `image-webp` (lossless), JPEG by `jpeg-encoder`.

use super::picture::{Planes, Scene};
use super::{VideoError, VideoSpec, validate};

/// Frames across and down a spritesheet.
pub const SPRITE_GRID: (u32, u32) = (4, 4);

/// The thumbnail: the middle frame as WebP, at the clip's frame size.
pub fn render_thumbnail(spec: &VideoSpec) -> Result<Vec<u8>, VideoError> {
    let (width, height, frames) = validate(spec)?;
    let scene = Scene::new(width, height, frames, spec.seed);
    let mut planes = Planes::new(width, height);
    scene.render(frames / 2, &mut planes);
    let rgb = planes.to_rgb();
    let mut out = Vec::new();
    image_webp::WebPEncoder::new(&mut out)
        .encode(&rgb, width, height, image_webp::ColorType::Rgb8)
        .map_err(|e| VideoError::Encoder(format!("thumbnail: {e}")))?;
    Ok(out)
}

/// The spritesheet: [`SPRITE_GRID`] frames at even intervals, left to right and top to bottom,
/// as one JPEG of `4 × width` by `4 × height`.
pub fn render_spritesheet(spec: &VideoSpec) -> Result<Vec<u8>, VideoError> {
    let (width, height, frames) = validate(spec)?;
    let scene = Scene::new(width, height, frames, spec.seed);
    let (across, down) = SPRITE_GRID;
    let (sheet_w, sheet_h) = (width * across, height * down);
    let mut sheet = vec![0u8; sheet_w as usize * sheet_h as usize * 3];
    let mut planes = Planes::new(width, height);
    let tiles = across * down;
    for tile in 0..tiles {
        let index = tile * (frames - 1) / (tiles - 1).max(1);
        scene.render(index, &mut planes);
        let rgb = planes.to_rgb();
        let (x0, y0) = ((tile % across) * width, (tile / across) * height);
        for row in 0..height {
            let from = (row * width * 3) as usize;
            let to = (((y0 + row) * sheet_w + x0) * 3) as usize;
            let len = (width * 3) as usize;
            sheet[to..to + len].copy_from_slice(&rgb[from..from + len]);
        }
    }
    let side = |n: u32| u16::try_from(n).map_err(|_| VideoError::Encoder("sheet too large".into()));
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, 85)
        .encode(
            &sheet,
            side(sheet_w)?,
            side(sheet_h)?,
            jpeg_encoder::ColorType::Rgb,
        )
        .map_err(|e| VideoError::Encoder(format!("spritesheet: {e}")))?;
    Ok(out)
}
