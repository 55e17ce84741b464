//! Reading a detected container with symphonia's format readers: the audio track, its duration
//! from the header or from a packet walk, and the delay corrections.

use std::io::{self, Read, Seek, SeekFrom};
use std::panic::{self, AssertUnwindSafe};
use std::sync::OnceLock;
use std::time::Duration;

use symphonia::core::codecs::CodecParameters;
use symphonia::core::codecs::audio::AudioCodecId;
use symphonia::core::codecs::audio::well_known::{CODEC_ID_AAC, CODEC_ID_MP3, CODEC_ID_OPUS};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::probe::{Hint, Probe as Registry};
use symphonia::core::formats::well_known::{
    FORMAT_ID_ADTS, FORMAT_ID_AIFF, FORMAT_ID_FLAC, FORMAT_ID_ISOMP4, FORMAT_ID_MP3, FORMAT_ID_OGG,
    FORMAT_ID_WAVE,
};
use symphonia::core::formats::{FormatId, FormatOptions, FormatReader, Track, TrackType};
use symphonia::core::io::{MediaSource, MediaSourceStream};
use symphonia::core::meta::MetadataOptions;
use symphonia::core::units::TimeBase;
use symphonia::default::formats::{
    AdtsReader, AiffReader, FlacReader, IsoMp4Reader, MpaReader, OggReader, WavReader,
};
use symphonia::default::meta::Id3v2Reader;

use crate::sniff::Family;
use crate::{Container, Probe, ProbeError, WALK_LIMIT};

/// AAC decoders output one frame (1024 samples for AAC-LC) before the first real sample: the
/// MDCT overlap needs a previous frame. ADTS cannot say so, and symphonia does not apply the MP4
/// edit list that would.
const AAC_DECODER_DELAY: u64 = 1024;
/// The MPEG audio synthesis filterbank delays the output by 529 samples; without a LAME header the
/// stream does not say how much more the encoder added.
const MP3_DECODER_DELAY: u64 = 529;
/// How much longer than its header a walked MP3 or Ogg stream must be for the header to be
/// disbelieved. The two differ a little anyway (the walk counts encoder delay and padding).
const HEADER_SLACK: Duration = Duration::from_secs(1);

impl Family {
    /// The symphonia reader that must end up reading this family.
    fn format_id(self) -> FormatId {
        match self {
            Family::Wav => FORMAT_ID_WAVE,
            Family::Aiff => FORMAT_ID_AIFF,
            Family::Flac => FORMAT_ID_FLAC,
            Family::IsoMp4 => FORMAT_ID_ISOMP4,
            Family::Mp3 => FORMAT_ID_MP3,
            Family::Adts => FORMAT_ID_ADTS,
            Family::Ogg => FORMAT_ID_OGG,
        }
    }

    /// Whether the header's duration is a claim about the rest of the file that the packets may
    /// contradict, so that the packets are walked as well: the frame count of an MP3 Xing header
    /// (or an estimate without one), the last granule position of the first Ogg stream. A stale
    /// Xing header, concatenated MP3 files or a chained Ogg file would otherwise be reported much
    /// shorter than what a decoder plays.
    fn header_is_a_claim(self) -> bool {
        matches!(self, Family::Mp3 | Family::Ogg)
    }

    /// The accepted container, given the codec of its audio track.
    fn container(self, codec: Option<AudioCodecId>) -> Container {
        match self {
            Family::Wav => Container::Wav,
            Family::Aiff => Container::Aiff,
            Family::Flac => Container::Flac,
            Family::IsoMp4 => Container::M4a,
            Family::Mp3 => Container::Mp3,
            Family::Adts => Container::Aac,
            Family::Ogg if codec == Some(CODEC_ID_OPUS) => Container::Opus,
            Family::Ogg => Container::Ogg,
        }
    }
}

/// The readers of the accepted containers, and the ID3v2 tag reader (ID3v2 may precede MP3, AAC
/// and FLAC). A registry of its own, rather than `symphonia::default::get_probe()`, so that
/// formats other crates of the workspace enable in symphonia (Cargo unifies features) are never
/// accepted here.
fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut registry = Registry::default();
        registry.register_format::<WavReader<'_>>();
        registry.register_format::<AiffReader<'_>>();
        registry.register_format::<FlacReader<'_>>();
        registry.register_format::<IsoMp4Reader<'_>>();
        registry.register_format::<MpaReader<'_>>();
        registry.register_format::<AdtsReader<'_>>();
        registry.register_format::<OggReader<'_>>();
        registry.register_metadata::<Id3v2Reader<'_>>();
        registry
    })
}

/// A `Read + Seek` source of known length, as a seekable symphonia [`MediaSource`].
struct Source<R> {
    inner: R,
    len: u64,
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl<R: Seek> Seek for Source<R> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

impl<R: Read + Seek + Send + Sync> MediaSource for Source<R> {
    fn is_seekable(&self) -> bool {
        true
    }

    fn byte_len(&self) -> Option<u64> {
        Some(self.len)
    }
}

/// Reads `source` (positioned at byte 0, `len` bytes long), which [`crate::sniff`] found to start
/// like `family`.
///
/// symphonia parses untrusted input; a panic inside it is caught and reported as an error rather
/// than taking the caller's thread down.
pub(crate) fn read<R: Read + Seek + Send + Sync + 'static>(
    source: R,
    len: u64,
    family: Family,
) -> Result<Probe, ProbeError> {
    let mss = MediaSourceStream::new(Box::new(Source { inner: source, len }), Default::default());
    let opened = panic::catch_unwind(AssertUnwindSafe(|| {
        registry().probe(
            &Hint::new(),
            mss,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
    }));
    let mut reader = match opened {
        Ok(Ok(reader)) => reader,
        Ok(Err(SymphoniaError::IoError(e))) if e.kind() != io::ErrorKind::UnexpectedEof => {
            return Err(ProbeError::Io(e));
        }
        // A malformed header, or a panic in the reader: not a readable file of this format.
        Ok(Err(_)) | Err(_) => return Err(ProbeError::Unrecognized),
    };
    if reader.format_info().format != family.format_id() {
        return Err(ProbeError::Unrecognized);
    }
    // No audio track (a video-only MP4 or Ogg): not an audio file.
    let Some(track) = reader.default_track(TrackType::Audio).cloned() else {
        return Err(ProbeError::Unrecognized);
    };
    let params = match &track.codec_params {
        Some(CodecParameters::Audio(params)) => Some(params),
        _ => None,
    };
    let codec = params.map(|p| p.codec);
    let container = family.container(codec);
    let sample_rate = params.and_then(|p| p.sample_rate).filter(|&rate| rate > 0);
    let channels = params
        .and_then(|p| p.channels.as_ref())
        .and_then(|c| u16::try_from(c.count()).ok())
        .filter(|&n| n > 0);

    let no_duration = ProbeError::NoDuration(container);
    let Some(time_base) = track
        .time_base
        .or_else(|| sample_rate.and_then(TimeBase::try_from_recip))
    else {
        return Err(no_duration);
    };
    let header = track
        .duration
        .map(|d| to_duration(d.get(), time_base))
        .filter(|d| !d.is_zero());
    let walked = if header.is_none() || family.header_is_a_claim() {
        let walked =
            panic::catch_unwind(AssertUnwindSafe(|| walk(&mut *reader, &track, time_base)))
                .unwrap_or(Err(Walk::Failed));
        match walked {
            // Only a lower bound: with no header to go by, the file is refused.
            Ok(Walked {
                cut_short: true, ..
            }) if header.is_none() => return Err(no_duration),
            Ok(walked) => Some(walked.duration),
            Err(Walk::Io(e)) => return Err(ProbeError::Io(e)),
            Err(Walk::Failed) => return Err(no_duration),
        }
    } else {
        None
    };
    let total = match (header, walked) {
        (Some(header), Some(walked)) if walked > header.saturating_add(HEADER_SLACK) => walked,
        (Some(header), _) => header,
        (None, Some(walked)) => walked,
        (None, None) => return Err(no_duration),
    };
    let duration = content(total, &track, codec, sample_rate);
    if duration.is_zero() {
        return Err(no_duration);
    }
    Ok(Probe {
        container,
        duration,
        sample_rate,
        channels,
    })
}

/// The result of a packet walk.
struct Walked {
    /// The sum of the packet durations.
    duration: Duration,
    /// The walk ended with an unexpected end of file inside a packet: either the file is cut
    /// short, or the reader lost its way in a corrupt stream and skipped to the end (symphonia's
    /// Ogg reader does that after a bad page), so the duration is only a lower bound.
    cut_short: bool,
}

/// Why a packet walk gave no duration.
enum Walk {
    /// Reading the source failed.
    Io(io::Error),
    /// The stream is malformed after its header, or a reader panicked.
    Failed,
}

/// Sums the durations of the packets of the audio `track`, without decoding them, until the end
/// of the stream or [`WALK_LIMIT`]. `time_base` is the track's.
///
/// A chained Ogg file (several streams one after the other) is walked to its end: when a new
/// stream starts, its default audio track is followed. An unexpected end of file inside a packet
/// ends the walk ([`Walked::cut_short`]). Any other error fails it: stopping at a corrupt packet
/// would under-state a file that goes on after it.
fn walk(reader: &mut dyn FormatReader, track: &Track, time_base: TimeBase) -> Result<Walked, Walk> {
    // The streams before the current one, then the current one in its time base.
    let mut done = Duration::ZERO;
    let (mut track_id, mut time_base, mut ticks) = (track.id, time_base, 0u64);
    loop {
        let total = done.saturating_add(to_duration(ticks, time_base));
        let walked = |cut_short| Walked {
            duration: total,
            cut_short,
        };
        if total >= WALK_LIMIT {
            return Ok(walked(false));
        }
        match reader.next_packet() {
            Ok(Some(packet)) if packet.track_id == track_id => {
                ticks = ticks.saturating_add(packet.dur.get());
            }
            Ok(Some(_)) => {}
            Ok(None) => return Ok(walked(false)),
            Err(SymphoniaError::ResetRequired) => {
                let Some(next) = reader.default_track(TrackType::Audio) else {
                    return Ok(walked(false));
                };
                done = total;
                track_id = next.id;
                time_base = next.time_base.unwrap_or(time_base);
                ticks = 0;
            }
            Err(SymphoniaError::IoError(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Ok(walked(true));
            }
            Err(SymphoniaError::IoError(e)) => return Err(Walk::Io(e)),
            Err(_) => return Err(Walk::Failed),
        }
    }
}

/// Converts `ticks` of `time_base` to a duration (saturating).
fn to_duration(ticks: u64, time_base: TimeBase) -> Duration {
    const NANOS: u128 = 1_000_000_000;
    let nanos = u128::from(ticks) * u128::from(time_base.numer.get()) * NANOS
        / u128::from(time_base.denom.get());
    // The remainder is below 10^9, so it fits.
    let subsec = u32::try_from(nanos % NANOS).unwrap_or(0);
    match u64::try_from(nanos / NANOS) {
        Ok(secs) => Duration::new(secs, subsec),
        Err(_) => Duration::MAX,
    }
}

/// `samples` at `sample_rate` as a duration.
fn samples(samples: u64, sample_rate: u32) -> Duration {
    to_duration(
        samples,
        TimeBase::try_from_recip(sample_rate).unwrap_or_default(),
    )
}

/// The duration of the audio content: `total` less the encoder or decoder delay that symphonia
/// leaves in it.
///
/// - Ogg Opus: symphonia's duration is the last granule position, which counts the pre-skip
///   (RFC 7845 §4.1); the pre-skip is the track's delay.
/// - AAC and MP3 whose container states no delay: the codec's own decoder delay. When the delay
///   is known (a LAME header, an iTunes gapless tag), symphonia has already left it out.
fn content(
    total: Duration,
    track: &Track,
    codec: Option<AudioCodecId>,
    sample_rate: Option<u32>,
) -> Duration {
    let Some(rate) = sample_rate else {
        return total;
    };
    let delay = match (codec, track.delay) {
        (Some(CODEC_ID_OPUS), Some(pre_skip)) => u64::from(pre_skip),
        (Some(CODEC_ID_AAC), None) => AAC_DECODER_DELAY,
        (Some(CODEC_ID_MP3), None) => MP3_DECODER_DELAY,
        _ => 0,
    };
    total.saturating_sub(samples(delay, rate))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::io::Cursor;

    use super::*;

    fn open(bytes: Vec<u8>) -> (Box<dyn FormatReader>, Track) {
        let source = Source {
            len: bytes.len() as u64,
            inner: Cursor::new(bytes),
        };
        let mss = MediaSourceStream::new(Box::new(source), Default::default());
        let reader = registry()
            .probe(
                &Hint::new(),
                mss,
                FormatOptions::default(),
                MetadataOptions::default(),
            )
            .expect("probe");
        let track = reader
            .default_track(TrackType::Audio)
            .expect("audio track")
            .clone();
        (reader, track)
    }

    /// The fallback agrees with the header on every fixture.
    #[test]
    fn walking_the_packets_agrees_with_the_header() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut walked = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            // The 12-second videos are the video length's fixtures (tests/video_length.rs).
            if name.ends_with(".md")
                || name.ends_with(".webm")
                || name == "video_only.mp4"
                || name.starts_with("video_12s")
            {
                continue;
            }
            let (mut reader, track) = open(std::fs::read(&path).unwrap());
            let tb = track.time_base.unwrap();
            let header = to_duration(track.duration.unwrap().get(), tb);
            let walk = walk(&mut *reader, &track, tb).ok().unwrap();
            assert!(!walk.cut_short, "{name}");
            let walk = walk.duration;
            let diff = header.abs_diff(walk).as_secs_f64();
            assert!(diff < 0.1, "{name}: header {header:?}, walk {walk:?}");
            walked += 1;
        }
        assert_eq!(walked, 11);
    }

    /// An ADTS stream of `frames` empty AAC frames (1024 samples each) at 8 kHz, mono.
    fn empty_adts(frames: usize) -> Vec<u8> {
        // MPEG-4 AAC-LC, 8 kHz (index 11), mono, no CRC, 8-byte frames.
        let frame = [0xff, 0xf1, 0x6c, 0x40, 0x01, 0x1f, 0xfc, 0x00];
        frame.repeat(frames)
    }

    #[test]
    fn the_walk_stops_at_the_limit() {
        // 40 000 frames of 128 ms: 5120 s.
        let (mut reader, track) = open(empty_adts(40_000));
        let tb = track.time_base.unwrap();
        assert_eq!(
            to_duration(track.duration.unwrap().get(), tb),
            Duration::from_secs(5120)
        );
        let walked = walk(&mut *reader, &track, tb).ok().unwrap().duration;
        assert!(walked >= WALK_LIMIT, "{walked:?}");
        assert!(
            walked < WALK_LIMIT + Duration::from_millis(128),
            "{walked:?}"
        );
        // A short stream is walked to its end.
        let (mut reader, track) = open(empty_adts(100));
        let walked = walk(&mut *reader, &track, tb).ok().unwrap().duration;
        assert_eq!(walked, Duration::from_millis(12_800));
    }

    #[test]
    fn ticks_to_duration() {
        let tb = |n, d| TimeBase::try_new(n, d).unwrap_or_default();
        assert_eq!(
            to_duration(40_000, tb(1, 16_000)),
            Duration::from_millis(2500)
        );
        assert_eq!(to_duration(3, tb(1, 3)), Duration::from_secs(1));
        assert_eq!(to_duration(1, tb(1, 3)), Duration::from_nanos(333_333_333));
        assert_eq!(to_duration(90, tb(1000, 1)), Duration::from_secs(90_000));
        assert_eq!(to_duration(u64::MAX, tb(u32::MAX, 1)), Duration::MAX);
        assert_eq!(samples(1024, 16_000), Duration::from_millis(64));
    }
}
