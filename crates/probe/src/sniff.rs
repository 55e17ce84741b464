//! Container detection from the first bytes of a file.
//!
//! symphonia's own probe scans up to a megabyte for any format marker and skips whatever comes
//! before it, so a text file that happens to contain `RIFF`, or random bytes with an MPEG frame
//! sync in them, would be read as audio. This module is the strict gate in front of it: the
//! container must start at byte 0 (after ID3v2 tags, for the formats that carry them), and the
//! frame-based formats (MP3, ADTS AAC) must show a chain of consecutive, consistent frame headers.

use std::io::{self, Read, Seek, SeekFrom};

/// The container family the first bytes announce. symphonia then reads it and has the last word
/// (an MP4 without an audio track, or a broken header, is still refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// `RIFF....WAVE`.
    Wav,
    /// `FORM....AIFF` or `FORM....AIFC`.
    Aiff,
    /// `fLaC` (possibly after ID3v2 tags).
    Flac,
    /// An ISO base media file (`....ftyp`): m4a, mp4, mov.
    IsoMp4,
    /// MPEG-1/2/2.5 Layer III frames (possibly after ID3v2 tags).
    Mp3,
    /// AAC in ADTS frames (possibly after ID3v2 tags).
    Adts,
    /// `OggS`: Opus, Vorbis or another codec in Ogg pages.
    Ogg,
}

/// How many consecutive frame headers an MP3 or ADTS stream must show at its start. A chain that
/// reaches the end of the file is accepted with fewer (a very short file).
const MIN_FRAMES: usize = 4;
/// How many bytes of frames are read to check the chain. Four ADTS frames of the largest legal
/// size (8191 bytes) fit.
const FRAME_WINDOW: usize = 64 * 1024;
/// How many zero bytes may follow an ID3v2 tag before the audio (padding some taggers leave
/// outside the declared tag size).
const MAX_ZERO_PADDING: usize = 16 * 1024;
/// How many ID3v2 tags may follow each other at the start of the file.
const MAX_ID3_TAGS: usize = 4;

/// Detects the container family of `src`, `len` bytes long, from its first bytes. Returns `None`
/// when the bytes are not one of the accepted containers. Leaves the position anywhere.
pub(crate) fn sniff<R: Read + Seek>(src: &mut R, len: u64) -> io::Result<Option<Family>> {
    let head = read_at(src, 0, 12)?;
    if head.len() >= 12 {
        match (&head[0..4], &head[8..12]) {
            (b"RIFF", b"WAVE") => return Ok(Some(Family::Wav)),
            (b"FORM", b"AIFF" | b"AIFC") => return Ok(Some(Family::Aiff)),
            _ => {}
        }
    }
    if head.len() >= 8 && &head[4..8] == b"ftyp" {
        return Ok(Some(Family::IsoMp4));
    }
    if head.starts_with(b"OggS") {
        return Ok(Some(Family::Ogg));
    }

    let Some(start) = skip_id3v2(src, len)? else {
        return Ok(None);
    };
    let window = read_at(src, start, FRAME_WINDOW)?;
    let at_eof = start.saturating_add(window.len() as u64) >= len;
    if window.starts_with(b"fLaC") {
        return Ok(Some(Family::Flac));
    }
    if frame_chain(&window, at_eof, mp3_frame) {
        return Ok(Some(Family::Mp3));
    }
    if frame_chain(&window, at_eof, adts_frame) {
        return Ok(Some(Family::Adts));
    }
    Ok(None)
}

/// Reads up to `max` bytes at `offset` (fewer at the end of the source).
fn read_at<R: Read + Seek>(src: &mut R, offset: u64, max: usize) -> io::Result<Vec<u8>> {
    src.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::with_capacity(max.min(FRAME_WINDOW));
    src.take(max as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Returns the offset after the ID3v2 tags (and any zero padding after them) at the start of the
/// file: 0 when there is no tag. `None` when a tag is malformed or runs past the end of the file.
fn skip_id3v2<R: Read + Seek>(src: &mut R, len: u64) -> io::Result<Option<u64>> {
    let mut offset = 0u64;
    let mut tagged = false;
    for _ in 0..MAX_ID3_TAGS {
        let header = read_at(src, offset, 10)?;
        if header.len() < 10 || &header[0..3] != b"ID3" {
            break;
        }
        let Some(size) = id3v2_size(&header) else {
            return Ok(None);
        };
        offset = offset.saturating_add(size);
        if offset > len {
            return Ok(None);
        }
        tagged = true;
    }
    if tagged {
        let padding = read_at(src, offset, MAX_ZERO_PADDING)?;
        let zeros = padding.iter().take_while(|&&b| b == 0).count();
        offset = offset.saturating_add(zeros as u64);
    }
    Ok(Some(offset))
}

/// The total size of the ID3v2 tag whose 10-byte header is `h` (header, body and footer), or
/// `None` when the header is not a valid ID3v2.2–2.4 header.
fn id3v2_size(h: &[u8]) -> Option<u64> {
    let (major, flags, size) = (h[3], h[5], &h[6..10]);
    if !(2..=4).contains(&major) || h[4] == 0xff || size.iter().any(|&b| b & 0x80 != 0) {
        return None;
    }
    let body = size.iter().fold(0u64, |acc, &b| (acc << 7) | u64::from(b));
    let footer = if major == 4 && flags & 0x10 != 0 {
        10
    } else {
        0
    };
    Some(10 + body + footer)
}

/// What a frame header tells about the frame: its length in bytes, and the fields that must stay
/// the same from one frame to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Frame {
    len: usize,
    stream: u32,
}

/// Checks that `window` starts with a chain of frames that `parse` accepts: at least
/// [`MIN_FRAMES`] consecutive headers describing the same stream, or fewer when the chain ends
/// exactly at the end of the file.
fn frame_chain(window: &[u8], at_eof: bool, parse: fn(&[u8]) -> Option<Frame>) -> bool {
    let mut pos = 0usize;
    let mut stream = None;
    for _ in 0..MIN_FRAMES {
        let Some(frame) = window.get(pos..).and_then(parse) else {
            return false;
        };
        if stream.is_some_and(|s| s != frame.stream) {
            return false;
        }
        stream = Some(frame.stream);
        pos = pos.saturating_add(frame.len);
        if at_eof && pos == window.len() {
            return true;
        }
    }
    true
}

/// Layer III bit rates in kbit/s by bit-rate index: MPEG-1, then MPEG-2 and 2.5.
const MP3_BITRATES: [[u32; 15]; 2] = [
    [
        0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320,
    ],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
];
/// Sample rates in Hz by sample-rate index: MPEG-1, MPEG-2, MPEG-2.5.
const MP3_SAMPLE_RATES: [[u32; 3]; 3] = [
    [44100, 48000, 32000],
    [22050, 24000, 16000],
    [11025, 12000, 8000],
];

/// Parses an MPEG audio Layer III frame header (free-format bit rate refused).
fn mp3_frame(b: &[u8]) -> Option<Frame> {
    let [b0, b1, b2, b3, ..] = *b else {
        return None;
    };
    if b0 != 0xff || b1 & 0xe0 != 0xe0 {
        return None;
    }
    let version = (b1 >> 3) & 0b11; // 0: MPEG-2.5, 1: reserved, 2: MPEG-2, 3: MPEG-1
    let layer = (b1 >> 1) & 0b11; // 1: Layer III
    let bitrate_index = usize::from(b2 >> 4);
    let rate_index = usize::from((b2 >> 2) & 0b11);
    let padding = u32::from((b2 >> 1) & 1);
    let emphasis = b3 & 0b11;
    if version == 1 || layer != 1 || bitrate_index == 0 || bitrate_index == 15 || rate_index == 3 {
        return None;
    }
    if emphasis == 2 {
        return None;
    }
    let (table, rates, per_frame) = match version {
        3 => (0, 0, 144),
        2 => (1, 1, 72),
        _ => (1, 2, 72),
    };
    let bitrate = MP3_BITRATES[table][bitrate_index] * 1000;
    let rate = MP3_SAMPLE_RATES[rates][rate_index];
    let len = per_frame * bitrate / rate + padding;
    Some(Frame {
        len: usize::try_from(len).ok()?,
        stream: u32::from(version) << 8 | u32::from(layer) << 4 | rate_index as u32,
    })
}

/// Parses an ADTS (AAC) frame header.
fn adts_frame(b: &[u8]) -> Option<Frame> {
    let [b0, b1, b2, b3, b4, b5, _b6, ..] = *b else {
        return None;
    };
    // 12-bit sync, then the MPEG version bit, the layer (always 0) and "protection absent".
    if b0 != 0xff || b1 & 0xf6 != 0xf0 {
        return None;
    }
    let header_len = if b1 & 1 == 1 { 7 } else { 9 };
    let profile = b2 >> 6;
    let rate_index = (b2 >> 2) & 0x0f;
    let channels = ((b2 & 1) << 2) | (b3 >> 6);
    let len = (usize::from(b3 & 0b11) << 11) | (usize::from(b4) << 3) | usize::from(b5 >> 5);
    if rate_index > 12 || len <= header_len {
        return None;
    }
    Some(Frame {
        len,
        stream: u32::from(b1 & 0x08) << 16
            | u32::from(profile) << 8
            | u32::from(rate_index) << 4
            | u32::from(channels),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Cursor;

    use super::*;

    /// An MPEG-2 Layer III frame header: 16 kHz, 24 kbit/s, no padding: 108 bytes per frame.
    const MP3_HEADER: [u8; 4] = [0xff, 0xf3, 0x38, 0xc4];

    fn mp3_frames(n: usize) -> Vec<u8> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.extend_from_slice(&MP3_HEADER);
            v.resize(v.len() + 104, 0x55);
        }
        v
    }

    fn sniff_bytes(bytes: &[u8]) -> Option<Family> {
        sniff(&mut Cursor::new(bytes), bytes.len() as u64).unwrap()
    }

    #[test]
    fn mp3_header_fields() {
        let f = mp3_frame(&MP3_HEADER).unwrap();
        assert_eq!(f.len, 108);
        // MPEG-1, 44.1 kHz, 128 kbit/s, padded: 418 bytes.
        assert_eq!(mp3_frame(&[0xff, 0xfb, 0x92, 0x00]).unwrap().len, 418);
        // Layer II, free format, bad bit rate, reserved version or sample rate: refused.
        assert!(mp3_frame(&[0xff, 0xfd, 0x90, 0x00]).is_none());
        assert!(mp3_frame(&[0xff, 0xfb, 0x02, 0x00]).is_none());
        assert!(mp3_frame(&[0xff, 0xfb, 0xf0, 0x00]).is_none());
        assert!(mp3_frame(&[0xff, 0xeb, 0x90, 0x00]).is_none());
        assert!(mp3_frame(&[0xff, 0xfb, 0x9c, 0x00]).is_none());
    }

    #[test]
    fn mp3_needs_a_chain_of_frames() {
        assert_eq!(sniff_bytes(&mp3_frames(6)), Some(Family::Mp3));
        // A short file whose frames end exactly at the end of the file.
        assert_eq!(sniff_bytes(&mp3_frames(2)), Some(Family::Mp3));
        // One good header followed by anything else.
        let mut one = mp3_frames(1);
        one.extend_from_slice(&[0x20; 1000]);
        assert_eq!(sniff_bytes(&one), None);
        // A frame chain that changes sample rate is not one stream.
        let mut mixed = mp3_frames(2);
        mixed.extend_from_slice(&[0xff, 0xf3, 0x34, 0xc4]);
        mixed.resize(mixed.len() + 1000, 0x55);
        assert_eq!(sniff_bytes(&mixed), None);
        // Frames that start after junk are not accepted.
        let mut junk = b"hello".to_vec();
        junk.extend_from_slice(&mp3_frames(6));
        assert_eq!(sniff_bytes(&junk), None);
    }

    #[test]
    fn id3v2_is_skipped() {
        let mut tagged = b"ID3\x04\x00\x00\x00\x00\x00\x05hello\x00\x00\x00".to_vec();
        tagged.extend_from_slice(&mp3_frames(5));
        assert_eq!(sniff_bytes(&tagged), Some(Family::Mp3));
        // A tag that claims more than the file holds.
        let mut long = b"ID3\x04\x00\x00\x00\x00\x7f\x7f".to_vec();
        long.extend_from_slice(&mp3_frames(5));
        assert_eq!(sniff_bytes(&long), None);
        // A bad syncsafe size.
        let mut bad = b"ID3\x04\x00\x00\x00\x00\x00\x85".to_vec();
        bad.extend_from_slice(&mp3_frames(5));
        assert_eq!(sniff_bytes(&bad), None);
    }

    #[test]
    fn adts_needs_a_chain_of_frames() {
        // MPEG-4 AAC-LC, 16 kHz, mono, no CRC, 100-byte frames.
        let header = [0xff, 0xf1, 0x60, 0x40, 0x0c, 0x9f, 0xfc];
        assert_eq!(adts_frame(&header).unwrap().len, 100);
        let mut frames = Vec::new();
        for _ in 0..5 {
            frames.extend_from_slice(&header);
            frames.resize(frames.len() + 93, 0x11);
        }
        assert_eq!(sniff_bytes(&frames), Some(Family::Adts));
        frames.truncate(150);
        frames.extend_from_slice(&[0x11; 1000]);
        assert_eq!(sniff_bytes(&frames), None);
    }

    #[test]
    fn magic_numbers() {
        assert_eq!(sniff_bytes(b"RIFF\0\0\0\0WAVEfmt "), Some(Family::Wav));
        assert_eq!(sniff_bytes(b"RIFF\0\0\0\0AVI LIST"), None);
        assert_eq!(sniff_bytes(b"FORM\0\0\0\0AIFC"), Some(Family::Aiff));
        assert_eq!(sniff_bytes(b"\0\0\0\x20ftypM4A "), Some(Family::IsoMp4));
        assert_eq!(sniff_bytes(b"OggS\0\x02"), Some(Family::Ogg));
        assert_eq!(sniff_bytes(b"fLaC\0\0\0\x22"), Some(Family::Flac));
        assert_eq!(sniff_bytes(b"\x1a\x45\xdf\xa3webm"), None);
        assert_eq!(sniff_bytes(b""), None);
    }
}
