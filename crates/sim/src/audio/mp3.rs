//! MP3 through LAME (mp3lame-encoder), behind a hand-written ID3v2.4 tag with the text.

use std::num::NonZeroU32;

use mp3lame_encoder::{
    Bitrate, Builder, FlushGap, InterleavedPcm, Mode, MonoPcm, Quality, max_required_buffer_size,
};

use super::signal::Voice;
use super::{AudioError, DEFAULT_MP3_BITRATE, encoder_error};

/// Description of the TXXX frame that carries the text.
const DESCRIPTION: &[u8] = b"tollgate-text";
/// Frames handed to LAME per call (a multiple of the 1152-sample MPEG-1 frame).
const CHUNK_FRAMES: usize = 1152 * 16;

/// Bitrates (kbps) per MPEG version that both the standard and `mp3lame_encoder::Bitrate` have.
const MPEG1: &[u32] = &[32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const MPEG2: &[u32] = &[8, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128, 160];
const MPEG25: &[u32] = &[8, 16, 24, 32, 40, 48, 64];

pub(super) fn effective_bitrate(sample_rate: u32, requested: u32) -> u32 {
    let table = match sample_rate {
        32000 | 44100 | 48000 => MPEG1,
        16000 | 22050 | 24000 => MPEG2,
        _ => MPEG25,
    };
    let requested = if requested == 0 {
        DEFAULT_MP3_BITRATE
    } else {
        requested
    };
    let kbps = table
        .iter()
        .copied()
        .min_by_key(|&k| ((k * 1000).abs_diff(requested), k))
        .unwrap_or(128);
    kbps * 1000
}

fn lame_bitrate(bps: u32) -> Bitrate {
    match bps / 1000 {
        8 => Bitrate::Kbps8,
        16 => Bitrate::Kbps16,
        24 => Bitrate::Kbps24,
        32 => Bitrate::Kbps32,
        40 => Bitrate::Kbps40,
        48 => Bitrate::Kbps48,
        64 => Bitrate::Kbps64,
        80 => Bitrate::Kbps80,
        96 => Bitrate::Kbps96,
        112 => Bitrate::Kbps112,
        160 => Bitrate::Kbps160,
        192 => Bitrate::Kbps192,
        224 => Bitrate::Kbps224,
        256 => Bitrate::Kbps256,
        320 => Bitrate::Kbps320,
        _ => Bitrate::Kbps128,
    }
}

pub(super) fn mp3(
    mut voice: Voice,
    sample_rate: u32,
    bitrate: u32,
    text: &str,
) -> Result<Vec<u8>, AudioError> {
    let err = |e: &dyn std::fmt::Display| encoder_error("MP3", e);
    let mono = voice.channels() == 1;
    let mut builder = Builder::new().ok_or_else(|| err(&"LAME could not allocate its state"))?;
    builder
        .set_num_channels(if mono { 1 } else { 2 })
        .map_err(|e| err(&e))?;
    builder.set_sample_rate(sample_rate).map_err(|e| err(&e))?;
    // Without this LAME resamples low bitrates down to a lower rate.
    builder
        .set_output_sample_rate(NonZeroU32::new(sample_rate))
        .map_err(|e| err(&e))?;
    builder
        .set_brate(lame_bitrate(effective_bitrate(sample_rate, bitrate)))
        .map_err(|e| err(&e))?;
    builder
        .set_mode(if mono { Mode::Mono } else { Mode::JointStereo })
        .map_err(|e| err(&e))?;
    // Quality 7 ("fast"): a tone needs no psychoacoustic effort.
    builder.set_quality(Quality::Ok).map_err(|e| err(&e))?;
    // The Xing/Info + LAME tag frame: frame count, encoder delay and padding, so that decoders
    // trim to the exact length.
    builder.set_to_write_vbr_tag(true).map_err(|e| err(&e))?;
    let mut encoder = builder.build().map_err(|e| err(&e))?;

    let frames = voice.total_frames() as usize;
    let mut out = Vec::with_capacity(frames / 4 + 8192);
    let mut buf = Vec::with_capacity(CHUNK_FRAMES * voice.channels());
    loop {
        buf.clear();
        let n = voice.fill(&mut buf, CHUNK_FRAMES);
        if n == 0 {
            break;
        }
        out.reserve(max_required_buffer_size(n));
        let written = if mono {
            encoder.encode_to_vec(MonoPcm(buf.as_slice()), &mut out)
        } else {
            encoder.encode_to_vec(InterleavedPcm(buf.as_slice()), &mut out)
        };
        written.map_err(|e| err(&e))?;
    }
    out.reserve(max_required_buffer_size(0));
    encoder
        .flush_to_vec::<FlushGap>(&mut out)
        .map_err(|e| err(&e))?;

    // LAME starts the stream with a placeholder frame of the LAME tag's size; replace it by the
    // final tag now that the counts are known.
    let mut lame_tag = Vec::with_capacity(encoder.lame_tag_size());
    if let Some(n) = encoder.lame_tag_encode_to_vec(&mut lame_tag)
        && let Some(head) = out.get_mut(..n.get())
    {
        head.copy_from_slice(&lame_tag[..n.get()]);
    }

    let mut file = id3v2_tag(text);
    file.extend_from_slice(&out);
    Ok(file)
}

/// An ID3v2.4 tag with one TXXX frame (UTF-8, description `tollgate-text`, the text as the
/// value), no padding, no unsynchronisation.
pub(super) fn id3v2_tag(text: &str) -> Vec<u8> {
    let frame_len = 1 + DESCRIPTION.len() + 1 + text.len();
    let mut tag = Vec::with_capacity(20 + frame_len);
    tag.extend_from_slice(b"ID3");
    tag.extend_from_slice(&[4, 0, 0]); // version 2.4.0, no flags
    tag.extend_from_slice(&syncsafe(10 + frame_len));
    tag.extend_from_slice(b"TXXX");
    tag.extend_from_slice(&syncsafe(frame_len));
    tag.extend_from_slice(&[0, 0]); // frame flags
    tag.push(3); // UTF-8
    tag.extend_from_slice(DESCRIPTION);
    tag.push(0);
    tag.extend_from_slice(text.as_bytes());
    tag
}

/// A 28-bit syncsafe integer (7 bits per byte); the callers keep sizes far below 256 MiB.
fn syncsafe(n: usize) -> [u8; 4] {
    let n = u32::try_from(n).unwrap_or(u32::MAX).min(0x0FFF_FFFF);
    [
        (n >> 21) as u8 & 0x7f,
        (n >> 14) as u8 & 0x7f,
        (n >> 7) as u8 & 0x7f,
        n as u8 & 0x7f,
    ]
}

fn read_syncsafe(b: &[u8]) -> Option<usize> {
    let b: [u8; 4] = b.try_into().ok()?;
    if b.iter().any(|&x| x & 0x80 != 0) {
        return None;
    }
    Some(b.iter().fold(0usize, |n, &x| (n << 7) | usize::from(x)))
}

/// The value of the `TXXX` frame described `tollgate-text` in a leading ID3v2.3/2.4 tag.
pub(super) fn read_text(file: &[u8]) -> Option<String> {
    let header = file.get(..10)?;
    let version = header[3];
    let flags = header[5];
    // We never write unsynchronised tags; don't pretend to read them.
    if !(version == 3 || version == 4) || flags & 0x80 != 0 {
        return None;
    }
    let size = read_syncsafe(&header[6..10])?;
    let body = file.get(10..10 + size)?;
    let mut pos = 0;
    if flags & 0x40 != 0 {
        // Extended header: v2.4 counts itself (syncsafe), v2.3 doesn't (plain).
        let b = body.get(..4)?;
        pos = if version == 4 {
            read_syncsafe(b)?
        } else {
            4 + u32::from_be_bytes(b.try_into().ok()?) as usize
        };
    }
    while let Some(frame) = body.get(pos..pos + 10) {
        if frame[0] == 0 {
            break; // padding
        }
        let len = if version == 4 {
            read_syncsafe(&frame[4..8])?
        } else {
            u32::from_be_bytes(frame[4..8].try_into().ok()?) as usize
        };
        let data = body.get(pos + 10..pos + 10 + len)?;
        if &frame[..4] == b"TXXX"
            && let Some(text) = txxx_value(data)
        {
            return Some(text);
        }
        pos += 10 + len;
    }
    None
}

fn txxx_value(data: &[u8]) -> Option<String> {
    let (&encoding, rest) = data.split_first()?;
    // UTF-8 (3) is what we write; ISO-8859-1 (0) has the same single NUL terminator.
    if encoding != 3 && encoding != 0 {
        return None;
    }
    let nul = rest.iter().position(|&b| b == 0)?;
    if &rest[..nul] != DESCRIPTION {
        return None;
    }
    let value = &rest[nul + 1..];
    if encoding == 3 {
        String::from_utf8(value.to_vec()).ok()
    } else {
        Some(value.iter().map(|&b| char::from(b)).collect())
    }
}
