//! The deterministic "voice": one enveloped harmonic tone per letter or digit, silence for
//! spaces and punctuation, a lead-in and a tail, and low-level noise throughout.

use super::{PAUSE_SECS, duration_for, frames_for, text_units, weight};

/// Bits of the wavetable index (2048 entries).
const TABLE_BITS: u32 = 11;
/// Harmonics of the tone: (multiple of the fundamental, relative amplitude).
const HARMONICS: [(f64, f64); 3] = [(1.0, 1.0), (2.0, 0.5), (3.0, 0.25)];
/// Peak amplitude of a tone at full gain and envelope (about -11 dBFS).
const PEAK: f32 = 9000.0;
/// Lowest fundamental; a character picks one of 24 semitones above it (120 Hz to 452 Hz, so the
/// third harmonic stays below 1.4 kHz, well under the 4 kHz Nyquist limit of 8 kHz audio).
const BASE_HZ: f64 = 120.0;
/// Attack and release of a character's envelope, capped to a quarter / a third of its length.
const ATTACK_SECS: f64 = 0.012;
const RELEASE_SECS: f64 = 0.05;
/// Gain of the right channel relative to the left (stereo output only).
const RIGHT_GAIN: f32 = 0.85;

/// A span of frames with a tone in it; everything between tones is silence (plus noise).
#[derive(Debug, Clone, Copy)]
struct Segment {
    start: u64,
    end: u64,
    /// Phase increment per frame (fundamental frequency × 2³² / sample rate).
    inc: u32,
    gain: f32,
    attack_inv: f32,
    release_inv: f32,
}

/// A sample generator over the whole utterance: call [`Voice::fill`] until it returns 0.
#[derive(Debug)]
pub(super) struct Voice {
    table: Vec<f32>,
    segments: Vec<Segment>,
    total: u64,
    channels: usize,
    pos: u64,
    seg: usize,
    phase: u32,
    noise: u32,
}

impl Voice {
    /// `speed` must be finite and positive, `channels` 1 or 2 (checked by the caller).
    pub(super) fn new(text: &str, sample_rate: u32, channels: u16, speed: f64) -> Self {
        let total = frames_for(duration_for(text, speed), sample_rate);
        let rate = f64::from(sample_rate);
        // Half of the fixed pause goes before the first character, half after the last.
        let lead = ((PAUSE_SECS / 2.0 * rate / speed).round() as u64).min(total / 4);
        let body = total - 2 * lead;
        let units = text_units(text);
        let mut segments = Vec::new();
        let mut cum = 0u64;
        for c in text.chars() {
            // Integer arithmetic on the cumulative count: no drift, the last character ends
            // exactly at `lead + body`.
            let start = lead + scale(body, cum, units);
            cum += weight(c);
            let end = lead + scale(body, cum, units);
            if c.is_alphanumeric() && end > start {
                let len = (end - start) as f64;
                let attack = (ATTACK_SECS * rate).min(len / 4.0).max(1.0);
                let release = (RELEASE_SECS * rate).min(len / 3.0).max(1.0);
                let h = u32::from(c).wrapping_mul(0x9E37_79B1);
                let semitone = f64::from((h >> 27) % 24);
                let freq = BASE_HZ * (semitone / 12.0).exp2();
                segments.push(Segment {
                    start,
                    end,
                    inc: (freq * 4_294_967_296.0 / rate).round() as u32,
                    gain: 0.7 + 0.3 * ((h >> 8) & 0xff) as f32 / 255.0,
                    attack_inv: (1.0 / attack) as f32,
                    release_inv: (1.0 / release) as f32,
                });
            }
        }
        let table_len = 1usize << TABLE_BITS;
        let mut table: Vec<f32> = (0..table_len)
            .map(|i| {
                let x = std::f64::consts::TAU * i as f64 / table_len as f64;
                HARMONICS
                    .iter()
                    .map(|&(k, a)| a * (k * x).sin())
                    .sum::<f64>() as f32
            })
            .collect();
        let max = table
            .iter()
            .fold(0f32, |m, v| m.max(v.abs()))
            .max(f32::EPSILON);
        table.iter_mut().for_each(|v| *v /= max);
        Self {
            table,
            segments,
            total,
            channels: usize::from(channels),
            pos: 0,
            seg: 0,
            phase: 0,
            noise: 0x2545_F491,
        }
    }

    /// Frames (samples per channel) of the whole utterance.
    pub(super) fn total_frames(&self) -> u64 {
        self.total
    }

    pub(super) fn channels(&self) -> usize {
        self.channels
    }

    /// Appends up to `max_frames` interleaved frames to `out`; returns how many (0 at the end).
    pub(super) fn fill(&mut self, out: &mut Vec<i16>, max_frames: usize) -> usize {
        let end = self.total.min(self.pos + max_frames as u64);
        let n = (end - self.pos) as usize;
        out.reserve(n * self.channels);
        while self.pos < end {
            while self
                .segments
                .get(self.seg)
                .is_some_and(|s| s.end <= self.pos)
            {
                self.seg += 1;
                self.phase = 0;
            }
            match self.segments.get(self.seg).copied() {
                Some(s) if s.start <= self.pos => {
                    let run_end = s.end.min(end);
                    let len = (s.end - s.start) as f32;
                    for p in self.pos..run_end {
                        let t = (p - s.start) as f32;
                        let env = (t * s.attack_inv).min((len - t) * s.release_inv).min(1.0);
                        let idx = (self.phase >> (32 - TABLE_BITS)) as usize;
                        let v = self.table[idx] * env * s.gain * PEAK;
                        self.phase = self.phase.wrapping_add(s.inc);
                        self.push(out, v);
                    }
                    self.pos = run_end;
                }
                next => {
                    let run_end = next.map_or(end, |s| s.start.min(end));
                    for _ in self.pos..run_end {
                        self.push(out, 0.0);
                    }
                    self.pos = run_end;
                }
            }
        }
        n
    }

    #[inline]
    fn push(&mut self, out: &mut Vec<i16>, v: f32) {
        // `as` saturates; the peak (9000 + noise) is far from the limits anyway.
        let left = v + self.next_noise();
        out.push(left.round() as i16);
        if self.channels == 2 {
            let right = v * RIGHT_GAIN + self.next_noise();
            out.push(right.round() as i16);
        }
    }

    /// xorshift32 noise in [-32, 31] (about -60 dBFS).
    #[inline]
    fn next_noise(&mut self) -> f32 {
        let mut x = self.noise;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.noise = x;
        ((x >> 26) as i32 - 32) as f32
    }
}

/// `body × num / den` without overflow for any realistic length (u128 intermediate).
fn scale(body: u64, num: u64, den: u64) -> u64 {
    if den == 0 {
        return 0;
    }
    (u128::from(body) * u128::from(num) / u128::from(den)) as u64
}
