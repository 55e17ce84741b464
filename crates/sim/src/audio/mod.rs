//! Simulated speech synthesis: real audio files (MP3, WAV, FLAC or raw PCM) whose length follows
//! the text and whose metadata carries the text, so that the simulated speech recognition can
//! read it back and a synthesis → recognition round trip returns the original text.
//!
//! ## The signal
//!
//! Not intelligible speech, but deterministic and "speech-like", 16-bit, mono or stereo:
//!
//! * after a lead-in of 0.15 s / speed, every character of the text gets a slot of frames in
//!   proportion to its weight (see the duration rule);
//! * a letter or digit (any script: [`char::is_alphanumeric`]) is a tone: a fundamental between
//!   120 Hz and 452 Hz (one of 24 semitones, picked by a hash of the character) with its 2nd and
//!   3rd harmonics, a 12 ms attack and a 50 ms release (capped to the slot), and a per-character
//!   gain; consecutive tones are separated by the envelope, so each character is audible;
//! * a space, punctuation or any other character is silence: the gaps between words;
//! * the last slot is followed by a tail of 0.15 s / speed of silence;
//! * low-level white noise (about -60 dBFS) runs throughout, independently per channel; in stereo
//!   the right channel carries the same tones at 0.85 of the gain.
//!
//! Samples come from a wavetable and a phase accumulator, so generating 11 minutes of 44.1 kHz
//! audio takes a fraction of a second; the output is bit-for-bit deterministic.
//!
//! ## The duration rule ([`duration_for`])
//!
//! `max(0.5, (units / 15 + 0.3) / speed)` seconds, where `units` counts every character (spaces
//! and punctuation included) as 1 and an East Asian wide character (CJK ideographs and symbols,
//! kana, Hangul, fullwidth forms) as 2: 15 Latin characters or 7.5 Chinese characters per second
//! at speed 1, plus 0.3 s of lead-in and tail. The file holds exactly
//! `round(duration × sample_rate)` frames (MP3: after the encoder delay and padding are trimmed,
//! which decoders do from the LAME tag).
//!
//! ## Where the text lives
//!
//! * **MP3**: an ID3v2.4 tag at the start of the file with a `TXXX` frame, encoding 3 (UTF-8),
//!   description `tollgate-text`, value the text (unterminated). LAME's Xing/Info + LAME tag
//!   frame follows, so decoders know the exact length.
//! * **WAV**: a `LIST`/`INFO` chunk between `fmt ` and `data` with `ISFT` = `tollgate-sim` and
//!   `ICMT` = the text in UTF-8, NUL-terminated, padded to even length.
//! * **FLAC**: a `VORBIS_COMMENT` block right after STREAMINFO, vendor string `tollgate-sim`,
//!   one comment `TOLLGATE_TEXT=<text>`, added through flacenc's metadata API (which moves the
//!   "last metadata block" flag to it). STREAMINFO's `min_block_size` is set to the block size
//!   (4096): flacenc writes the size of the short last block there, which symphonia rejects
//!   (`unexpected end of file`). Frames use fixed predictors only (like `flac -1`), for speed.
//! * **PCM**: raw s16le interleaved samples, no container, so no text.
//!
//! [`embedded_text`] reads each of these back (and only these: an ID3 tag without the
//! `tollgate-text` frame, a WAV without the `ISFT` marker, … give `None`).
//!
//! ## Formats and limits
//!
//! Sample rates: the MPEG audio rates [`SAMPLE_RATES`] (the vendor API offers 8000, 16000, 22050,
//! 24000, 32000 and 44100), 1 or 2 channels, speed any finite positive number. MP3 bitrates are
//! mapped to the nearest one the sample rate allows ([`effective_mp3_bitrate`]) instead of failing:
//! e.g. 256 kbps at 8 kHz gives 64 kbps. At most [`MAX_DURATION`] of audio and
//! [`MAX_TEXT_BYTES`] of text.
//!
//! ## License note (LAME)
//!
//! MP3 encoding uses the `mp3lame-encoder` crate (LGPL-3.0), which statically links LAME (LGPL)
//! built from the source bundled in `mp3lame-sys`. This is the simulator, a test double and the
//! out-of-the-box stand-in upstream, not the gateway's data path (which relays vendor audio and
//! never encodes it); a distribution of a binary that contains the simulator carries the LGPL's
//! obligations for LAME.

mod flac;
mod mp3;
mod signal;
#[cfg(test)]
mod tests;
mod wav;

use std::time::Duration;

/// What the simulator can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
    Mp3,
    Wav,
    Flac,
    /// Raw signed 16-bit little-endian samples, interleaved; no header, no metadata.
    Pcm,
}

/// How to synthesize: container, sample rate (one of [`SAMPLE_RATES`]), channels (1 or 2), MP3
/// bitrate in bits/s (ignored for the other formats; 0 means 128 kbps), and speed (1.0 = normal,
/// 2.0 = twice as fast and half as long).
#[derive(Debug, Clone, PartialEq)]
pub struct Synthesis {
    pub format: AudioFormat,
    pub sample_rate: u32,
    pub channels: u16,
    pub bitrate: u32,
    pub speed: f64,
}

/// Why [`synthesize`] failed.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    /// The sample rate is not one of [`SAMPLE_RATES`].
    #[error("unsupported sample rate {0} Hz (supported: {SAMPLE_RATES:?})")]
    SampleRate(u32),
    /// Channels other than 1 or 2.
    #[error("unsupported channel count {0} (1 or 2)")]
    Channels(u16),
    /// A speed that is zero, negative, NaN or infinite.
    #[error("speed must be a finite positive number, got {0}")]
    Speed(f64),
    /// More than [`MAX_TEXT_BYTES`] of text or [`MAX_DURATION`] of audio.
    #[error("too long: {0}")]
    TooLong(String),
    /// LAME or flacenc refused (not expected for valid settings).
    #[error("{codec} encoder failed: {message}")]
    Encoder {
        codec: &'static str,
        message: String,
    },
}

/// The sample rates [`synthesize`] accepts: all MPEG-1/2/2.5 audio rates.
pub const SAMPLE_RATES: [u32; 9] = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000];
/// The longest audio [`synthesize`] makes (text × speed beyond this is an error).
pub const MAX_DURATION: Duration = Duration::from_secs(3600);
/// The longest text (UTF-8 bytes) [`synthesize`] accepts (FLAC metadata blocks are < 16 MiB).
pub const MAX_TEXT_BYTES: usize = 4 << 20;
/// The MP3 bitrate used when [`Synthesis::bitrate`] is 0.
pub const DEFAULT_MP3_BITRATE: u32 = 128_000;

/// Weighted characters per second at speed 1.
const CHARS_PER_SECOND: f64 = 15.0;
/// Lead-in plus tail, seconds at speed 1.
const PAUSE_SECS: f64 = 0.3;
const MIN_SECS: f64 = 0.5;

/// A real WAV file of `seconds` of silence, 16-bit mono at `sample_rate`: long audio for tests
/// of limits and of billing by duration, at the cost of a memset.
pub fn silent_wav(seconds: u32, sample_rate: u32) -> Vec<u8> {
    let data = seconds.saturating_mul(sample_rate).saturating_mul(2);
    let mut wav = Vec::with_capacity(44 + data as usize);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&data.saturating_add(36).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&sample_rate.to_le_bytes());
    wav.extend_from_slice(&sample_rate.saturating_mul(2).to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data.to_le_bytes());
    wav.resize(44 + data as usize, 0);
    wav
}

/// Seconds of audio the simulator produces for `text` at `speed`:
/// `max(0.5, (units / 15 + 0.3) / speed)`, where `units` counts each character as 1 and each
/// East Asian wide character (CJK, kana, Hangul, fullwidth forms) as 2. A speed that is not a
/// finite positive number counts as 1.0 (and is rejected by [`synthesize`]).
pub fn duration_for(text: &str, speed: f64) -> Duration {
    let speed = if speed.is_finite() && speed > 0.0 {
        speed
    } else {
        1.0
    };
    let units = text_units(text) as f64;
    let secs = ((units / CHARS_PER_SECOND + PAUSE_SECS) / speed).max(MIN_SECS);
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

/// `text` spoken as raw 16-bit mono PCM at `sample_rate`, at speed 1: a live session's voice.
pub fn voice_pcm(text: &str, sample_rate: u32) -> Result<Vec<u8>, AudioError> {
    synthesize(
        text,
        &Synthesis {
            format: AudioFormat::Pcm,
            sample_rate,
            channels: 1,
            bitrate: 0,
            speed: 1.0,
        },
    )
}

/// The whole file: `round(duration_for(text, speed) × sample_rate)` frames of the simulated voice,
/// encoded as `s.format`, with `text` in the metadata (except PCM, which has no container).
pub fn synthesize(text: &str, s: &Synthesis) -> Result<Vec<u8>, AudioError> {
    if !SAMPLE_RATES.contains(&s.sample_rate) {
        return Err(AudioError::SampleRate(s.sample_rate));
    }
    if !(1..=2).contains(&s.channels) {
        return Err(AudioError::Channels(s.channels));
    }
    if !(s.speed.is_finite() && s.speed > 0.0) {
        return Err(AudioError::Speed(s.speed));
    }
    if text.len() > MAX_TEXT_BYTES {
        return Err(AudioError::TooLong(format!(
            "text of {} bytes, at most {MAX_TEXT_BYTES}",
            text.len()
        )));
    }
    let duration = duration_for(text, s.speed);
    if duration > MAX_DURATION {
        return Err(AudioError::TooLong(format!(
            "{:.0} s of audio, at most {} s",
            duration.as_secs_f64(),
            MAX_DURATION.as_secs()
        )));
    }
    let voice = signal::Voice::new(text, s.sample_rate, s.channels, s.speed);
    match s.format {
        AudioFormat::Pcm => Ok(wav::pcm(voice)),
        AudioFormat::Wav => Ok(wav::wav(voice, s.sample_rate, text)),
        AudioFormat::Flac => flac::flac(voice, s.sample_rate, text),
        AudioFormat::Mp3 => mp3::mp3(voice, s.sample_rate, s.bitrate, text),
    }
}

/// Reads the text back from a file [`synthesize`] made (MP3, WAV or FLAC); `None` for anything
/// else, including PCM.
pub fn embedded_text(file: &[u8]) -> Option<String> {
    match file.get(..4)? {
        [b'I', b'D', b'3', _] => mp3::read_text(file),
        b"RIFF" => wav::read_text(file),
        b"fLaC" => flac::read_text(file),
        _ => None,
    }
}

/// The MP3 bitrate (bits/s) actually used for `requested` at `sample_rate`: the nearest one (ties
/// go to the lower) that both the MPEG version of the rate and the encoder allow: 32–320 kbps at
/// 32/44.1/48 kHz (MPEG-1), 8–160 kbps at 16/22.05/24 kHz (MPEG-2), 8–64 kbps at 8/11.025/12 kHz
/// (MPEG-2.5); 56 and 144 kbps are not offered. `requested` 0 means [`DEFAULT_MP3_BITRATE`].
pub fn effective_mp3_bitrate(sample_rate: u32, requested: u32) -> u32 {
    mp3::effective_bitrate(sample_rate, requested)
}

/// The weight of `text` in the duration rule.
fn text_units(text: &str) -> u64 {
    text.chars().map(weight).sum()
}

/// 2 for an East Asian wide character, 1 for anything else.
fn weight(c: char) -> u64 {
    let wide = matches!(u32::from(c),
        0x1100..=0x115F          // Hangul Jamo (leading consonants)
        | 0x2E80..=0xA4CF        // CJK radicals, punctuation, kana, bopomofo, ideographs, Yi
        | 0xAC00..=0xD7A3        // Hangul syllables
        | 0xF900..=0xFAFF        // CJK compatibility ideographs
        | 0xFE30..=0xFE4F        // CJK compatibility forms
        | 0xFF00..=0xFF60        // fullwidth forms
        | 0xFFE0..=0xFFE6
        | 0x20000..=0x3FFFD); // CJK extension planes
    if wide { 2 } else { 1 }
}

/// `round(d × rate)` frames.
fn frames_for(d: Duration, rate: u32) -> u64 {
    let frames = (d.as_nanos() * u128::from(rate) + 500_000_000) / 1_000_000_000;
    u64::try_from(frames).unwrap_or(u64::MAX)
}

fn encoder_error(codec: &'static str, e: impl std::fmt::Display) -> AudioError {
    AudioError::Encoder {
        codec,
        message: e.to_string(),
    }
}
