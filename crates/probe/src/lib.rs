//! Container detection and duration of uploaded audio files, for speech recognition; and, for
//! billing media the gateway holds, an MP4's length ([`mp4`]) and what an image, audio or video
//! measures ([`media`]).
//!
//! Before a transcription request goes upstream, the gateway must know how long the uploaded
//! audio is: the duration is the hold placed on the account, the fallback charge when the upstream
//! reports no usage, and the input of the 500-second limit (docs/api.md §2.2). The same rules apply in the
//! simulator, so this crate is shared by both and uses plain `std::io` (no async runtime).
//!
//! [`probe`] takes a seekable source (a file, or [`probe_bytes`] for a buffered upload) and
//! returns a [`Probe`]: the [`Container`] and the duration, with the sample rate and channel
//! count when the container states them. It accepts exactly the formats of docs/api.md §2.2 — wav,
//! aiff, flac, m4a, mp3, aac (ADTS), opus and ogg — and refuses everything else with
//! [`ProbeError::Unrecognized`], raw PCM without a container included.
//!
//! # How it works
//!
//! 1. **Detection from the bytes, never from a file name.** The container must start at byte 0
//!    (after ID3v2 tags for MP3, AAC and FLAC); MP3 and ADTS must show a chain of consecutive,
//!    consistent frame headers. This rejects text, random bytes and raw PCM that a scanning
//!    detector would mistake for MPEG audio.
//! 2. **Duration from the header** ([symphonia]'s format readers; nothing is decoded). The source
//!    must be seekable: Ogg, ADTS and Xing-less MP3 find their duration by reading the end of
//!    the file, and an MP4 may keep its `moov` atom after the audio.
//! 3. **Otherwise, a packet walk**: the packet durations are summed, still without decoding. The
//!    walk stops once it has seen [`WALK_LIMIT`] of audio, so a file that claims to be longer is
//!    reported as (at least) that long, which the caller refuses.
//! 4. **MP3 and Ogg are walked even when the header has a duration**, because there the header
//!    only speaks for the start of the file (a Xing frame count, the last granule of the first
//!    Ogg stream): concatenated MP3 files, a stale Xing header or a chained Ogg file play far
//!    longer. When the walk finds more than a second beyond the header, the walk wins.
//!
//! Billing relies on the duration, so doubt is resolved upwards or into an error, never
//! downwards: a walk that breaks off (a corrupt packet, or the end of a cut-short file while
//! there is no header to go by) gives [`ProbeError::NoDuration`] rather than a partial sum.
//!
//! The duration is that of the audio content: encoder delay that the container signals is left
//! out (Ogg Opus pre-skip, the LAME/Xing gapless header of MP3), and where it cannot be signalled
//! the codec's inherent decoder delay is left out (one 1024-sample frame for AAC without an edit
//! list, 529 samples for MP3 without a LAME header). What remains is at most one frame of encoder
//! padding (a few tens of milliseconds).
//!
//! # Example
//!
//! ```
//! use tollgate_probe::{probe_bytes, ProbeError};
//!
//! // A tenth of a second of 8 kHz mono 16-bit WAV.
//! let mut wav = Vec::new();
//! wav.extend_from_slice(b"RIFF");
//! wav.extend_from_slice(&(36u32 + 1600).to_le_bytes());
//! wav.extend_from_slice(b"WAVEfmt ");
//! wav.extend_from_slice(&16u32.to_le_bytes());
//! wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
//! wav.extend_from_slice(&1u16.to_le_bytes()); // mono
//! wav.extend_from_slice(&8000u32.to_le_bytes());
//! wav.extend_from_slice(&16000u32.to_le_bytes());
//! wav.extend_from_slice(&2u16.to_le_bytes());
//! wav.extend_from_slice(&16u16.to_le_bytes());
//! wav.extend_from_slice(b"data");
//! wav.extend_from_slice(&1600u32.to_le_bytes());
//! wav.resize(wav.len() + 1600, 0);
//!
//! let probe = probe_bytes(wav)?;
//! assert_eq!(probe.container.as_str(), "wav");
//! assert_eq!(probe.duration.as_millis(), 100);
//! assert_eq!((probe.sample_rate, probe.channels), (Some(8000), Some(1)));
//!
//! // Headerless samples are not a container.
//! assert!(matches!(probe_bytes(vec![0; 1600]), Err(ProbeError::Unrecognized)));
//! # Ok::<(), ProbeError>(())
//! ```

pub mod media;
pub mod mp4;
mod read;
mod sniff;

use std::fmt;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::time::Duration;

/// How much audio the packet walk reads before it stops (one hour). A file still going at that
/// point is reported with this duration; recognition refuses anything above 500 seconds anyway.
pub const WALK_LIMIT: Duration = Duration::from_secs(3600);

/// The containers recognition accepts (docs/api.md §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// RIFF WAVE.
    Wav,
    /// AIFF or AIFF-C.
    Aiff,
    /// Native FLAC.
    Flac,
    /// An ISO base media file (m4a, mp4, mov) with an audio track.
    M4a,
    /// MPEG audio Layer III.
    Mp3,
    /// AAC in an ADTS stream.
    Aac,
    /// Ogg with an Opus stream.
    Opus,
    /// Ogg with another audio codec, usually Vorbis.
    Ogg,
}

impl Container {
    /// Every accepted container, in the order docs/api.md §2.2 lists them.
    pub const ALL: [Container; 8] = [
        Container::Wav,
        Container::Aiff,
        Container::Flac,
        Container::M4a,
        Container::Mp3,
        Container::Aac,
        Container::Opus,
        Container::Ogg,
    ];

    /// The format's usual name and file extension, as docs/api.md §2.2 spells it (`"wav"`, `"m4a"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Container::Wav => "wav",
            Container::Aiff => "aiff",
            Container::Flac => "flac",
            Container::M4a => "m4a",
            Container::Mp3 => "mp3",
            Container::Aac => "aac",
            Container::Opus => "opus",
            Container::Ogg => "ogg",
        }
    }
}

impl fmt::Display for Container {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What [`probe`] found out about an audio file.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The container, detected from the bytes.
    pub container: Container,
    /// The duration of the audio (the default audio track, for a container with several).
    pub duration: Duration,
    /// The sample rate in Hz, when the container states it. For Opus this is the decoding rate,
    /// 48 kHz, whatever the rate of the original input.
    pub sample_rate: Option<u32>,
    /// The number of channels, when the container states it.
    pub channels: Option<u16>,
}

/// Why a file could not be probed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Not one of the accepted containers (raw PCM, text, video-only, webm, …), or a file that
    /// starts like one but cannot be read as one. The message lists the accepted formats.
    #[error(
        "unrecognized audio file: the accepted formats are wav, aiff, flac, m4a, mp3, aac, opus \
         and ogg (raw PCM without a container is not accepted)"
    )]
    Unrecognized,
    /// A known container whose duration cannot be determined (even by walking packets), or is
    /// zero.
    #[error("cannot determine the duration of the {0} file")]
    NoDuration(Container),
    /// I/O error reading the source.
    #[error("error reading the audio file: {0}")]
    Io(#[from] std::io::Error),
}

/// Probes a seekable source, read from its start (byte 0) whatever its current position.
///
/// Detects the container from the bytes (never from a file name: a text file renamed `.mp3` is
/// [`ProbeError::Unrecognized`]) and reads the duration from the header; when the header has
/// none, walks the packets (no decoding) summing their durations, for at most [`WALK_LIMIT`] of
/// audio.
///
/// # Errors
///
/// [`ProbeError::Unrecognized`] when the bytes are not one of the accepted containers,
/// [`ProbeError::NoDuration`] when the container is known but its duration is not (or is zero),
/// and [`ProbeError::Io`] when reading or seeking the source fails.
pub fn probe<R: Read + Seek + Send + Sync + 'static>(mut source: R) -> Result<Probe, ProbeError> {
    let len = source.seek(SeekFrom::End(0))?;
    let Some(family) = sniff::sniff(&mut source, len)? else {
        return Err(ProbeError::Unrecognized);
    };
    source.seek(SeekFrom::Start(0))?;
    read::read(source, len, family)
}

/// Probes in-memory data, such as a buffered upload. See [`probe`].
///
/// # Errors
///
/// As [`probe`]; [`ProbeError::Io`] cannot happen.
pub fn probe_bytes(bytes: Vec<u8>) -> Result<Probe, ProbeError> {
    probe(Cursor::new(bytes))
}
