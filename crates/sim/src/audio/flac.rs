//! FLAC through flacenc, with a VORBIS_COMMENT block carrying the text and the STREAMINFO
//! `min_block_size` fix.

use flacenc::bitsink::ByteSink;
use flacenc::component::{BitRepr, MetadataBlockData};
use flacenc::error::{SourceError, Verify};
use flacenc::source::{Fill, Source};

use super::signal::Voice;
use super::{AudioError, encoder_error};

const VENDOR: &[u8] = b"tollgate-sim";
const KEY: &str = "TOLLGATE_TEXT";
const BLOCK_SIZE: usize = 4096;
const VORBIS_COMMENT: u8 = 4;

pub(super) fn flac(voice: Voice, sample_rate: u32, text: &str) -> Result<Vec<u8>, AudioError> {
    let err = |e: &dyn std::fmt::Display| encoder_error("FLAC", e);
    let mut config = flacenc::config::Encoder::default();
    config.block_size = BLOCK_SIZE;
    // Fixed predictors only (like `flac -1`): the LPC search would triple the encoding time for
    // a few percent of size, and the simulator's files are short-lived.
    config.subframe_coding.use_lpc = false;
    let config = config.into_verified().map_err(|(_, e)| err(&e))?;
    let source = VoiceSource {
        voice,
        sample_rate: sample_rate as usize,
        buf: Vec::new(),
        samples: Vec::new(),
    };
    let mut stream =
        flacenc::encode_with_fixed_block_size(&config, source, BLOCK_SIZE).map_err(|e| err(&e))?;
    // flacenc records the short last block as the minimum block size; the FLAC spec excludes
    // the last block from it, and symphonia rejects the stream otherwise.
    stream
        .stream_info_mut()
        .set_block_sizes(BLOCK_SIZE, BLOCK_SIZE)
        .map_err(|e| err(&e))?;
    // Added after STREAMINFO; flacenc clears STREAMINFO's "last block" flag and sets this one's.
    let comment = MetadataBlockData::new_unknown(VORBIS_COMMENT, &vorbis_comment(text))
        .map_err(|e| err(&e))?;
    stream.add_metadata_block(comment);
    let mut sink = ByteSink::with_capacity(stream.count_bits());
    stream.write(&mut sink).map_err(|e| err(&e))?;
    Ok(sink.into_inner())
}

/// VORBIS_COMMENT payload (little-endian lengths, no framing bit in FLAC).
pub(super) fn vorbis_comment(text: &str) -> Vec<u8> {
    let entry_len = KEY.len() + 1 + text.len();
    let mut out = Vec::with_capacity(12 + VENDOR.len() + entry_len);
    out.extend_from_slice(&(VENDOR.len() as u32).to_le_bytes());
    out.extend_from_slice(VENDOR);
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(entry_len as u32).to_le_bytes());
    out.extend_from_slice(KEY.as_bytes());
    out.push(b'=');
    out.extend_from_slice(text.as_bytes());
    out
}

/// Feeds the generator to flacenc block by block (no copy of the whole signal).
#[derive(Debug)]
struct VoiceSource {
    voice: Voice,
    sample_rate: usize,
    buf: Vec<i16>,
    samples: Vec<i32>,
}

impl Source for VoiceSource {
    fn channels(&self) -> usize {
        self.voice.channels()
    }

    fn bits_per_sample(&self) -> usize {
        16
    }

    fn sample_rate(&self) -> usize {
        self.sample_rate
    }

    fn read_samples<F: Fill>(
        &mut self,
        block_size: usize,
        dest: &mut F,
    ) -> Result<usize, SourceError> {
        self.buf.clear();
        let frames = self.voice.fill(&mut self.buf, block_size);
        self.samples.clear();
        self.samples.extend(self.buf.iter().map(|&s| i32::from(s)));
        dest.fill_interleaved(&self.samples)?;
        Ok(frames)
    }

    fn len_hint(&self) -> Option<usize> {
        usize::try_from(self.voice.total_frames()).ok()
    }
}

/// The `TOLLGATE_TEXT` comment of the first VORBIS_COMMENT block.
pub(super) fn read_text(file: &[u8]) -> Option<String> {
    let mut pos = 4;
    loop {
        let header = file.get(pos..pos + 4)?;
        let last = header[0] & 0x80 != 0;
        let kind = header[0] & 0x7f;
        let len = u32::from_be_bytes([0, header[1], header[2], header[3]]) as usize;
        let body = file.get(pos + 4..pos + 4 + len)?;
        if kind == VORBIS_COMMENT {
            return comment_value(body);
        }
        if last {
            return None;
        }
        pos += 4 + len;
    }
}

fn comment_value(body: &[u8]) -> Option<String> {
    let mut r = Reader(body);
    let vendor_len = r.u32()?;
    r.take(vendor_len)?;
    let count = r.u32()?;
    for _ in 0..count {
        let len = r.u32()?;
        let entry = r.take(len)?;
        let eq = entry.iter().position(|&b| b == b'=')?;
        if entry[..eq].eq_ignore_ascii_case(KEY.as_bytes()) {
            return String::from_utf8(entry[eq + 1..].to_vec()).ok();
        }
    }
    None
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let head = self.0.get(..n)?;
        self.0 = &self.0[n..];
        Some(head)
    }

    fn u32(&mut self) -> Option<usize> {
        let b = self.take(4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
}
