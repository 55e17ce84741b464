//! Raw PCM and WAV (RIFF) by hand: `fmt `, a `LIST`/`INFO` chunk with the text, `data`.

use super::signal::Voice;

/// `ISFT` (software) value that marks a WAV as ours.
const SOFTWARE: &[u8] = b"tollgate-sim";
/// Frames generated per step.
const CHUNK_FRAMES: usize = 16 * 1024;

/// Raw s16le interleaved samples.
pub(super) fn pcm(voice: Voice) -> Vec<u8> {
    let bytes = voice.total_frames() as usize * voice.channels() * 2;
    let mut out = Vec::with_capacity(bytes);
    append_samples(voice, &mut out);
    out
}

pub(super) fn wav(voice: Voice, sample_rate: u32, text: &str) -> Vec<u8> {
    let channels = voice.channels() as u16;
    let block_align = channels * 2;
    let data_len = voice.total_frames() as usize * usize::from(block_align);

    let mut info = Vec::with_capacity(text.len() + 32);
    info.extend_from_slice(b"INFO");
    sub_chunk(&mut info, b"ISFT", SOFTWARE);
    sub_chunk(&mut info, b"ICMT", text.as_bytes());

    let riff_len = 4 + (8 + 16) + (8 + info.len()) + (8 + data_len + data_len % 2);
    let mut out = Vec::with_capacity(8 + riff_len);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&len32(riff_len));
    out.extend_from_slice(b"WAVE");
    out.extend_from_slice(b"fmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // WAVE_FORMAT_PCM
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&sample_rate.to_le_bytes());
    out.extend_from_slice(&(sample_rate * u32::from(block_align)).to_le_bytes());
    out.extend_from_slice(&block_align.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
    out.extend_from_slice(b"LIST");
    out.extend_from_slice(&len32(info.len()));
    out.extend_from_slice(&info);
    out.extend_from_slice(b"data");
    out.extend_from_slice(&len32(data_len));
    append_samples(voice, &mut out);
    if data_len % 2 == 1 {
        out.push(0);
    }
    out
}

/// An INFO sub-chunk: the value NUL-terminated, the size field counting the NUL, a pad byte if
/// the size is odd.
fn sub_chunk(out: &mut Vec<u8>, id: &[u8; 4], value: &[u8]) {
    let size = value.len() + 1;
    out.extend_from_slice(id);
    out.extend_from_slice(&len32(size));
    out.extend_from_slice(value);
    out.push(0);
    if size % 2 == 1 {
        out.push(0);
    }
}

/// Chunk sizes: the callers keep every length far below 4 GiB (at most one hour of 48 kHz stereo
/// and 4 MiB of text).
fn len32(n: usize) -> [u8; 4] {
    u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes()
}

fn append_samples(mut voice: Voice, out: &mut Vec<u8>) {
    let mut buf = Vec::with_capacity(CHUNK_FRAMES * voice.channels());
    loop {
        buf.clear();
        if voice.fill(&mut buf, CHUNK_FRAMES) == 0 {
            break;
        }
        for s in &buf {
            out.extend_from_slice(&s.to_le_bytes());
        }
    }
}

/// The `ICMT` of a WAV whose `ISFT` is ours.
pub(super) fn read_text(file: &[u8]) -> Option<String> {
    if file.get(8..12)? != b"WAVE" {
        return None;
    }
    for (id, body) in chunks(file.get(12..)?) {
        if id != b"LIST" || body.get(..4) != Some(b"INFO".as_slice()) {
            continue;
        }
        let (mut software, mut comment) = (None, None);
        for (sub, value) in chunks(&body[4..]) {
            match sub {
                b"ISFT" => software = Some(value),
                b"ICMT" => comment = Some(value),
                _ => {}
            }
        }
        let software = software.map(|v| v.strip_suffix(b"\0").unwrap_or(v));
        if software == Some(SOFTWARE) {
            let comment = comment?;
            let comment = comment.strip_suffix(b"\0").unwrap_or(comment);
            return String::from_utf8(comment.to_vec()).ok();
        }
    }
    None
}

/// RIFF chunks (id, body without the pad byte) until the bytes run out or a size is out of
/// bounds.
fn chunks(mut bytes: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    std::iter::from_fn(move || {
        let id = bytes.get(..4)?;
        let size = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?) as usize;
        let body = bytes.get(8..8usize.checked_add(size)?)?;
        let next = (8 + size + size % 2).min(bytes.len());
        bytes = &bytes[next..];
        Some((id, body))
    })
}
