//! Simulated video generation: real, playable MP4 files (H.264) of the requested duration and
//! aspect ratio, for the simulated video vendors to finish their tasks with. The gateway streams
//! them to clients and the vendor SDK tests download them and check what they got.
//!
//! ## The file
//!
//! * **Container**: MP4 (`ftyp` `isom`, one video track), written by `muxide` with fast start:
//!   the boxes are `ftyp`, `moov`, `mdat` in that order, so a client can start playing (or
//!   probing) while the file is still streaming. Creation and modification times are 0.
//! * **Video**: H.264 Constrained Baseline from OpenH264 (built from the C++ source bundled in
//!   `openh264-sys2`), sample entry `avc1`, 4:2:0, BT.601 limited range signalled in the VUI, no
//!   B-frames, an IDR frame every 2 s (so players can seek), constant QP (rate control off, so no
//!   frame is ever skipped), single-threaded. About 4–6 KB per second of video.
//! * **Frame rate**: always [`FPS`] (24). A low frame rate would make encoding cheaper, but the
//!   vendors count frames as `24 × seconds + 1`, so the file keeps 24 fps.
//! * **Frame count** ([`frame_count`]): `round(24 × seconds) + 1`, exactly what the vendors
//!   report (e.g. 121 frames for 5 s), like the `4k + 1` frame counts of real video models. At
//!   24 fps that lasts `seconds + 1/24` s (5.042 s for 5 s): within 0.1 s of the requested
//!   duration, and the file agrees with the vendor's frame count.
//! * **Frame size** ([`frame_size`]): small, about 21 000 pixels, even, and exactly the aspect
//!   ratio: 16:9 → 192×108, 9:16 → 108×192, 1:1 → 144×144, 4:3 → 160×120, 3:4 → 120×160,
//!   21:9 → 224×96. `adaptive` and `auto` (the vendor picks) give 16:9. Any other `W:H` between
//!   1:4 and 4:1 gets about the same area, rounded to even numbers (3:2 → 176×118).
//!
//! ## Speed
//!
//! Small frames keep encoding cheap: a 5 s clip (121 frames) takes about 0.05 s in release and
//! 0.35 s in a debug build, a 30 s clip (721 frames) 0.3 s and 1.9 s (2 busy cores). In debug
//! builds OpenH264's C++ is compiled at `-O0` (`cc` follows the profile) and dominates;
//! `[profile.dev.package.openh264-sys2] opt-level = 3` brings the 30 s clip down to 0.4 s.
//! Rendering is synchronous and CPU-bound: call it from `spawn_blocking` in async code.
//!
//! ## The picture
//!
//! Generated directly in YUV 4:2:0, from integer arithmetic only (no floating point). The same
//! [`VideoSpec`] gives the same bytes (debug and release builds agree here; an OpenH264 built
//! with its x86 assembly, which needs `nasm` at build time, may encode differently but just as
//! deterministically):
//!
//! * a diagonal luma gradient (a triangle wave, so without hard edges) that drifts across the
//!   frame, with chroma that cycles through the hues over time;
//! * a vertical bar that sweeps left and right;
//! * a progress bar along the bottom edge that fills from the first frame to the last.
//!
//! The seed picks the gradient's direction and speed, the starting hue, the bar's colour, width
//! and sweep period, so different seeds give visibly (and byte-wise) different clips.
//!
//! ## Reading it back
//!
//! [`inspect_mp4`] walks the MP4 boxes by hand (no demuxer dependency) and returns what a test
//! needs: the movie duration, the `avc1` sample entry's size, the sample count and the codec
//! fourcc. [`top_level_boxes`] lists the top-level boxes, to check the fast-start layout.
//!
//! ## Licenses
//!
//! OpenH264 is BSD-2-Clause, compiled from source here. Cisco's royalty-free H.264 patent licence
//! covers only Cisco's own binaries, not this build; like LAME in [`crate::audio`], the encoder
//! lives in the simulator only, never in the gateway's data path. `muxide` is MIT OR Apache-2.0.

mod inspect;
mod picture;
mod stills;
#[cfg(test)]
mod tests;

use muxide::api::{MuxerBuilder, VideoCodec};
use openh264::Timestamp;
use openh264::encoder::{
    Complexity, Encoder, EncoderConfig, FrameRate, FrameType, IntraFramePeriod, RateControlMode,
    VuiConfig,
};

pub use inspect::{Mp4Info, inspect_mp4, top_level_boxes};
pub use stills::{SPRITE_GRID, render_spritesheet, render_thumbnail};

/// Frames per second of every clip.
pub const FPS: u32 = 24;
/// The longest clip [`render_mp4`] makes, in seconds.
pub const MAX_SECONDS: f64 = 60.0;

/// Frames between two IDR frames (2 s).
const IDR_PERIOD: u32 = 2 * FPS;
/// The pixel area the frame sizes aim at (192 × 108).
const TARGET_AREA: u64 = 192 * 108;

/// What to render: `seconds` (more than 0, at most [`MAX_SECONDS`]), an aspect ratio (`16:9`,
/// `9:16`, `1:1`, `4:3`, `3:4`, `21:9`, any other `W:H` between 1:4 and 4:1, or `adaptive` /
/// `auto` for 16:9), and a seed that varies the picture deterministically.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoSpec {
    pub seconds: f64,
    pub aspect_ratio: String,
    pub seed: u64,
}

/// Why [`render_mp4`] failed.
#[derive(Debug, thiserror::Error)]
pub enum VideoError {
    /// A duration that is zero, negative, NaN, infinite or above [`MAX_SECONDS`].
    #[error("seconds must be a number in (0, {MAX_SECONDS}], got {0}")]
    Seconds(f64),
    /// Neither a known name (`adaptive`, `auto`) nor `W:H` with a ratio between 1:4 and 4:1.
    #[error("unsupported aspect ratio {0:?} (expected W:H, e.g. 16:9, or adaptive/auto)")]
    AspectRatio(String),
    /// OpenH264 refused or produced an empty frame (not expected for valid specs).
    #[error("H.264 encoder failed: {0}")]
    Encoder(String),
    /// The MP4 muxer refused (not expected for valid specs).
    #[error("MP4 muxer failed: {0}")]
    Muxer(String),
}

/// Frames in a clip of `seconds`: `round(24 × seconds) + 1`, the count the vendors report. Lasts
/// `frames / 24` seconds. Only meaningful for the durations [`render_mp4`] accepts.
pub fn frame_count(seconds: f64) -> u32 {
    let seconds = if seconds.is_finite() {
        seconds.clamp(0.0, MAX_SECONDS)
    } else {
        0.0
    };
    (seconds * f64::from(FPS)).round() as u32 + 1
}

/// Frame size (width, height) used for an aspect ratio: even numbers, small (about 192 × 108
/// pixels of area). The listed ratios (16:9, 9:16, 1:1, 4:3, 3:4, 21:9) are exact; `adaptive`,
/// `auto` and anything unrecognised give 16:9 (which [`render_mp4`] rejects, except the first two).
pub fn frame_size(aspect_ratio: &str) -> (u32, u32) {
    parse_frame_size(aspect_ratio).unwrap_or((192, 108))
}

/// `None` when the aspect ratio is not recognised.
fn parse_frame_size(aspect_ratio: &str) -> Option<(u32, u32)> {
    let ratio = aspect_ratio.trim().to_ascii_lowercase();
    let exact = match ratio.as_str() {
        "16:9" | "adaptive" | "auto" => Some((192, 108)),
        "9:16" => Some((108, 192)),
        "1:1" => Some((144, 144)),
        "4:3" => Some((160, 120)),
        "3:4" => Some((120, 160)),
        "21:9" => Some((224, 96)),
        _ => None,
    };
    if exact.is_some() {
        return exact;
    }
    let (w, h) = ratio.split_once(':')?;
    let w: u64 = w.trim().parse().ok()?;
    let h: u64 = h.trim().parse().ok()?;
    if w == 0 || h == 0 || w > 10_000 || h > 10_000 || w > 4 * h || h > 4 * w {
        return None;
    }
    // width = sqrt(area × w / h), height = width × h / w, each rounded to an even number.
    let width = isqrt(TARGET_AREA * w / h);
    let height = width * h / w;
    let even = |v: u64| (v.div_ceil(2) * 2).max(2) as u32;
    Some((even(width), even(height)))
}

fn isqrt(n: u64) -> u64 {
    // Exact for the small numbers used here (n < 2^40).
    let mut r = (n as f64).sqrt() as u64;
    while r * r > n {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= n {
        r += 1;
    }
    r
}

/// (width, height, frames) of a valid spec.
fn validate(spec: &VideoSpec) -> Result<(u32, u32, u32), VideoError> {
    if !(spec.seconds.is_finite() && spec.seconds > 0.0 && spec.seconds <= MAX_SECONDS) {
        return Err(VideoError::Seconds(spec.seconds));
    }
    let (width, height) = parse_frame_size(&spec.aspect_ratio)
        .ok_or_else(|| VideoError::AspectRatio(spec.aspect_ratio.clone()))?;
    Ok((width, height, frame_count(spec.seconds)))
}

/// The whole MP4 file: [`frame_count`] frames of H.264 at 24 fps, of [`frame_size`], with `moov`
/// ahead of `mdat` so it can be streamed. The same spec gives the same bytes.
pub fn render_mp4(spec: &VideoSpec) -> Result<Vec<u8>, VideoError> {
    let (width, height, frames) = validate(spec)?;
    let scene = picture::Scene::new(width, height, frames, spec.seed);

    let config = EncoderConfig::new()
        .max_frame_rate(FrameRate::from_hz(FPS as f32))
        .rate_control_mode(RateControlMode::Off)
        .skip_frames(false)
        .num_threads(1)
        .complexity(Complexity::Low)
        .intra_frame_period(IntraFramePeriod::from_num_frames(IDR_PERIOD))
        .scene_change_detect(false)
        .background_detection(false)
        .adaptive_quantization(false)
        .vui(VuiConfig::bt601());
    let mut encoder = Encoder::with_api_config(openh264::OpenH264API::from_source(), config)
        .map_err(|e| VideoError::Encoder(e.to_string()))?;

    let mut muxer = MuxerBuilder::new(Vec::with_capacity(frames as usize * 1024))
        .video(VideoCodec::H264, width, height, f64::from(FPS))
        .with_fast_start(true)
        .build()
        .map_err(|e| VideoError::Muxer(e.to_string()))?;

    let mut planes = picture::Planes::new(width, height);
    let mut nal = Vec::new();
    for i in 0..frames {
        scene.render(i, &mut planes);
        let millis = u64::from(i) * 1000 / u64::from(FPS);
        let stream = encoder
            .encode_at(&planes.source(), Timestamp::from_millis(millis))
            .map_err(|e| VideoError::Encoder(format!("frame {i}: {e}")))?;
        let frame_type = stream.frame_type();
        nal.clear();
        stream.write_vec(&mut nal);
        if nal.is_empty() || !matches!(frame_type, FrameType::IDR | FrameType::I | FrameType::P) {
            return Err(VideoError::Encoder(format!(
                "frame {i}: no picture ({frame_type:?}, {} bytes)",
                nal.len()
            )));
        }
        let pts = f64::from(i) / f64::from(FPS);
        muxer
            .write_video(pts, &nal, frame_type == FrameType::IDR)
            .map_err(|e| VideoError::Muxer(format!("frame {i}: {e}")))?;
    }
    muxer
        .finish_in_place()
        .map_err(|e| VideoError::Muxer(e.to_string()))?;
    Ok(muxer.into_writer())
}
