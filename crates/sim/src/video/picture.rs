//! The moving picture: YUV 4:2:0 frames from integer arithmetic only, derived from a seed.

use openh264::formats::YUVSlices;

/// One frame's planes: luma at full size, the two chroma planes at half width and height.
#[derive(Debug)]
pub(super) struct Planes {
    width: usize,
    height: usize,
    y: Vec<u8>,
    u: Vec<u8>,
    v: Vec<u8>,
}

impl Planes {
    /// `width` and `height` must be even.
    pub(super) fn new(width: u32, height: u32) -> Self {
        let (width, height) = (width as usize, height as usize);
        let chroma = (width / 2) * (height / 2);
        Self {
            width,
            height,
            y: vec![0; width * height],
            u: vec![0; chroma],
            v: vec![0; chroma],
        }
    }

    /// The planes as the encoder reads them.
    pub(super) fn source(&self) -> YUVSlices<'_> {
        YUVSlices::new(
            (&self.y, &self.u, &self.v),
            (self.width, self.height),
            (self.width, self.width / 2, self.width / 2),
        )
    }

    /// The frame as 8-bit RGB, row by row: BT.601 limited range, as the VUI says, in integer
    /// arithmetic (the stills of `super::stills`).
    pub(super) fn to_rgb(&self) -> Vec<u8> {
        let mut rgb = Vec::with_capacity(self.width * self.height * 3);
        for row in 0..self.height {
            for col in 0..self.width {
                let y = i32::from(self.y[row * self.width + col]) - 16;
                let chroma = (row / 2) * (self.width / 2) + col / 2;
                let u = i32::from(self.u[chroma]) - 128;
                let v = i32::from(self.v[chroma]) - 128;
                let c = 298 * y + 128;
                let clamp = |x: i32| (x >> 8).clamp(0, 255) as u8;
                rgb.push(clamp(c + 409 * v));
                rgb.push(clamp(c - 100 * u - 208 * v));
                rgb.push(clamp(c + 516 * u));
            }
        }
        rgb
    }
}

/// What the seed decides, and the clip's geometry.
#[derive(Debug)]
pub(super) struct Scene {
    width: usize,
    height: usize,
    frames: usize,
    /// Luma phase units (of 512 per period) the gradient drifts per frame.
    drift: usize,
    /// Starting hue and hue units (of 512 per turn) per frame.
    hue: usize,
    hue_speed: usize,
    /// The sweeping bar: colour, width (even) and frames per full left-right-left sweep.
    bar_yuv: (u8, u8, u8),
    bar_width: usize,
    sweep_period: usize,
    /// Rows of the progress bar at the bottom (even).
    progress_rows: usize,
    /// Per pixel, the gradient's phase (0..512) at frame 0, along the direction the seed picked;
    /// per chroma sample, the hue offset.
    luma_phase: Vec<u16>,
    chroma_phase: Vec<u16>,
    /// The triangle wave mapped to sample values: 32..=192 (luma), 48..=208 (chroma).
    luma: [u8; 512],
    chroma: [u8; 512],
}

impl Scene {
    pub(super) fn new(width: u32, height: u32, frames: u32, seed: u64) -> Self {
        let (width, height) = (width as usize, height as usize);
        let mut state = seed;
        let mut pick =
            |lo: usize, hi: usize| lo + (splitmix64(&mut state) % (hi - lo + 1) as u64) as usize;
        let gx = pick(1, 4);
        let gy = pick(0, 4);
        let drift = pick(2, 8);
        let hue = pick(0, 511);
        let hue_speed = pick(1, 4);
        let bar_yuv = (
            pick(170, 235) as u8,
            pick(16, 240) as u8,
            pick(16, 240) as u8,
        );
        let bar_width = (width / pick(8, 16)).max(2) & !1;
        let sweep_period = pick(48, 120);
        let span = width * gx + height * gy;
        let luma_phase = (0..height)
            .flat_map(|y| (0..width).map(move |x| ((x * gx + y * gy) * 512 / span) as u16))
            .collect();
        let (cw, ch) = (width / 2, height / 2);
        let chroma_phase = (0..ch)
            .flat_map(|cy| (0..cw).map(move |cx| ((cx + cy) * 256 / (cw + ch)) as u16))
            .collect();
        Self {
            width,
            height,
            frames: frames.max(1) as usize,
            drift,
            hue,
            hue_speed,
            bar_yuv,
            bar_width,
            sweep_period,
            progress_rows: ((height / 24).max(4) + 1) & !1,
            luma_phase,
            chroma_phase,
            luma: std::array::from_fn(|p| (32 + triangle(p) * 160 / 255) as u8),
            chroma: std::array::from_fn(|p| (48 + triangle(p) * 160 / 255) as u8),
        }
    }

    /// Draws frame `index` (0-based) into `planes`, which must have the scene's size.
    pub(super) fn render(&self, index: u32, planes: &mut Planes) {
        let t = index as usize;
        let (w, h) = (self.width, self.height);
        let (cw, ch) = (w / 2, h / 2);
        let picture_rows = h - self.progress_rows;

        // Background: a drifting diagonal luma gradient, chroma cycling through the hues.
        let drift = t * self.drift;
        for (px, &phase) in planes.y.iter_mut().zip(&self.luma_phase) {
            *px = self.luma[(usize::from(phase) + drift) % 512];
        }
        let hue = self.hue + t * self.hue_speed;
        for ((u, v), &phase) in planes
            .u
            .iter_mut()
            .zip(planes.v.iter_mut())
            .zip(&self.chroma_phase)
        {
            let angle = usize::from(phase) + hue;
            *u = self.chroma[angle % 512];
            *v = self.chroma[(angle + 128) % 512];
        }

        // The sweeping bar (above the progress bar), on even columns so chroma lines up.
        let travel = w.saturating_sub(self.bar_width);
        let x0 = (triangle(t * 512 / self.sweep_period) * travel / 255) & !1;
        let x1 = (x0 + self.bar_width).min(w);
        let (by, bu, bv) = self.bar_yuv;
        for y in 0..picture_rows {
            planes.y[y * w + x0..y * w + x1].fill(by);
        }
        for cy in 0..picture_rows / 2 {
            planes.u[cy * cw + x0 / 2..cy * cw + x1 / 2].fill(bu);
            planes.v[cy * cw + x0 / 2..cy * cw + x1 / 2].fill(bv);
        }

        // The progress bar: white up to (index + 1) / frames of the width, black after.
        let filled = ((w * (t + 1)).div_ceil(self.frames) & !1).min(w);
        for y in picture_rows..h {
            planes.y[y * w..y * w + filled].fill(235);
            planes.y[y * w + filled..(y + 1) * w].fill(16);
        }
        for cy in picture_rows / 2..ch {
            planes.u[cy * cw..(cy + 1) * cw].fill(128);
            planes.v[cy * cw..(cy + 1) * cw].fill(128);
        }
    }
}

/// A triangle wave of period 512: 0 → 255 → 0.
fn triangle(phase: usize) -> usize {
    let p = phase % 512;
    if p < 256 { p } else { 511 - p }
}

/// SplitMix64: the seed's parameters, well spread even for seeds 0, 1, 2, …
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
