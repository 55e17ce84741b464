//! The length of an MP4 (or QuickTime) movie, read from the head of its file: a reference video's
//! (docs/api.md §2.7 content rule 3: the reference videos' total length is limited per series),
//! an inline video's in a text-generation request.
//!
//! The gateway fetches a bounded byte range of a reference video and hands it to [`scan_mp4`],
//! which walks the top-level boxes (ISO/IEC 14496-12 §4.2) to the movie header (`moov/mvhd`)
//! and reads its `duration / timescale`. When the header lies beyond the bytes given (a file
//! whose `moov` comes after its media data), [`Mp4Scan::FetchFrom`] says where to read next.
//! Anything else is [`Mp4Scan::Unreadable`]: the length is then unknown, and the upstream decides.

/// What the bytes of an MP4 file say about its length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mp4Scan {
    /// The movie's duration in seconds.
    Seconds(f64),
    /// The movie header starts at or after this file offset; fetch from there.
    FetchFrom(u64),
    /// Not an MP4 whose length can be read.
    Unreadable,
}

/// Scans `bytes`, which start at `offset` in the file, for the movie's duration.
///
/// `offset` must be 0 or an offset that a previous scan returned in [`Mp4Scan::FetchFrom`]
/// (the start of a top-level box).
///
/// ```
/// use tollgate_probe::mp4::{scan_mp4, Mp4Scan};
///
/// // ftyp, then moov with an mvhd of timescale 1000 and duration 4500.
/// let mut file = vec![0, 0, 0, 16, b'f', b't', b'y', b'p', b'i', b's', b'o', b'm', 0, 0, 2, 0];
/// let mut mvhd = vec![0, 0, 0, 0];                // version 0, flags
/// mvhd.extend_from_slice(&[0; 8]);                 // creation, modification
/// mvhd.extend_from_slice(&1000u32.to_be_bytes());  // timescale
/// mvhd.extend_from_slice(&4500u32.to_be_bytes());  // duration
/// let mvhd_box = [&((8 + mvhd.len()) as u32).to_be_bytes()[..], b"mvhd", &mvhd].concat();
/// let moov = [&((8 + mvhd_box.len()) as u32).to_be_bytes()[..], b"moov", &mvhd_box].concat();
/// file.extend_from_slice(&moov);
/// assert_eq!(scan_mp4(&file, 0), Mp4Scan::Seconds(4.5));
///
/// // Only the first box: the rest must be fetched.
/// assert_eq!(scan_mp4(&file[..16], 0), Mp4Scan::FetchFrom(16));
/// assert_eq!(scan_mp4(b"not a video at all", 0), Mp4Scan::Unreadable);
/// ```
pub fn scan_mp4(bytes: &[u8], offset: u64) -> Mp4Scan {
    let mut at = 0usize;
    let mut first = offset == 0;
    loop {
        let Some(header) = box_header(bytes, at) else {
            // The next box header is not in these bytes.
            return Mp4Scan::FetchFrom(offset + at as u64);
        };
        if first && &header.kind != b"ftyp" {
            return Mp4Scan::Unreadable;
        }
        first = false;
        if &header.kind == b"moov" {
            let end = header.size.map_or(bytes.len(), |size| {
                at.saturating_add(usize::try_from(size).unwrap_or(usize::MAX))
            });
            let Some(moov) = bytes.get(at + header.len..end.min(bytes.len())) else {
                return Mp4Scan::Unreadable;
            };
            return match movie_seconds(moov) {
                Some(seconds) => Mp4Scan::Seconds(seconds),
                // The mvhd comes first in practice; if it was cut off, fetch the moov whole.
                None if end > bytes.len() => Mp4Scan::FetchFrom(offset + at as u64),
                None => Mp4Scan::Unreadable,
            };
        }
        let Some(size) = header.size else {
            // A box that runs to the end of the file, and it is not the moov.
            return Mp4Scan::Unreadable;
        };
        let Some(next) = usize::try_from(size).ok().and_then(|s| at.checked_add(s)) else {
            return Mp4Scan::Unreadable;
        };
        if next >= bytes.len() {
            return Mp4Scan::FetchFrom(offset.saturating_add(size).saturating_add(at as u64));
        }
        at = next;
    }
}

struct BoxHeader {
    kind: [u8; 4],
    /// The whole box's size; `None` when it runs to the end of the file.
    size: Option<u64>,
    /// The header's own length (8, or 16 with a 64-bit size).
    len: usize,
}

fn box_header(bytes: &[u8], at: usize) -> Option<BoxHeader> {
    let head = bytes.get(at..at.checked_add(8)?)?;
    let size32 = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    let kind = [head[4], head[5], head[6], head[7]];
    let (size, len) = match size32 {
        0 => (None, 8),
        1 => {
            let large = bytes.get(at + 8..at + 16)?;
            let mut b = [0u8; 8];
            b.copy_from_slice(large);
            (Some(u64::from_be_bytes(b)), 16)
        }
        n => (Some(u64::from(n)), 8),
    };
    if size.is_some_and(|s| s < len as u64) {
        return None;
    }
    Some(BoxHeader { kind, size, len })
}

/// `duration / timescale` of the `mvhd` among the children of a `moov`.
fn movie_seconds(moov: &[u8]) -> Option<f64> {
    let mut at = 0usize;
    while let Some(header) = box_header(moov, at) {
        let size = usize::try_from(header.size?).ok()?;
        if &header.kind == b"mvhd" {
            let body = moov.get(at + header.len..at.checked_add(size)?)?;
            let (timescale, duration) = match body.first()? {
                0 => (be_u32(body, 12)?, u64::from(be_u32(body, 16)?)),
                1 => (be_u32(body, 20)?, be_u64(body, 24)?),
                _ => return None,
            };
            if timescale == 0 {
                return None;
            }
            // Lossless enough: any real duration/timescale pair fits f64's 53 bits.
            #[allow(clippy::cast_precision_loss)]
            return Some(duration as f64 / f64::from(timescale));
        }
        at = at.checked_add(size)?;
    }
    None
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn be_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at + 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_be_bytes(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut out = ((8 + body.len()) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(body);
        out
    }

    fn mvhd_v1(timescale: u32, duration: u64) -> Vec<u8> {
        let mut body = vec![1, 0, 0, 0];
        body.extend_from_slice(&[0; 16]);
        body.extend_from_slice(&timescale.to_be_bytes());
        body.extend_from_slice(&duration.to_be_bytes());
        boxed(b"mvhd", &body)
    }

    #[test]
    fn moov_after_mdat_asks_for_the_rest() {
        let ftyp = boxed(b"ftyp", b"isom\0\0\x02\0");
        let mdat = boxed(b"mdat", &[7u8; 5000]);
        let moov = boxed(b"moov", &mvhd_v1(90_000, 900_000));
        let file = [ftyp.clone(), mdat.clone(), moov].concat();
        let head = &file[..1024];
        let next = match scan_mp4(head, 0) {
            Mp4Scan::FetchFrom(n) => n,
            other => panic!("{other:?}"),
        };
        assert_eq!(next as usize, ftyp.len() + mdat.len());
        assert_eq!(
            scan_mp4(&file[next as usize..], next),
            Mp4Scan::Seconds(10.0)
        );
    }

    #[test]
    fn garbage_never_panics() {
        for len in 0..64 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            let _ = scan_mp4(&bytes, 0);
            let _ = scan_mp4(&bytes, 16);
        }
        let mut evil = boxed(b"ftyp", b"isom");
        evil.extend_from_slice(&[
            0, 0, 0, 1, b'm', b'o', b'o', b'v', 255, 255, 255, 255, 255, 255, 255, 255,
        ]);
        let _ = scan_mp4(&evil, 0);
    }
}
