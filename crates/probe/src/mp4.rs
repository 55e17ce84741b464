//! The length of an MP4 (or QuickTime) movie: a reference video's, read from the head of its
//! file (docs/api.md §2.7 content rule 3: the reference videos' total length is limited per
//! series), and an inline video's in a text-generation request, read from the whole file.
//!
//! The gateway fetches a bounded byte range of a reference video and hands it to [`scan_mp4`],
//! which walks the top-level boxes (ISO/IEC 14496-12 §4.2) to the movie box (`moov`). When it
//! lies beyond the bytes given (a file whose `moov` comes after its media data),
//! [`Mp4Scan::FetchFrom`] says where to read next. Anything else is [`Mp4Scan::Unreadable`]: the
//! length is then unknown, and the upstream decides.
//!
//! **What a movie's length is** (docs/decisions.md, "Bounded settlement"). The movie header's
//! `mvhd` duration is one field among many, written by whoever made the file — a client can set
//! it to 0, and a fragmented MP4 legitimately does. A decoder plays the samples by their own
//! timing, so the length is the largest of everything the file states or its samples imply:
//! the movie, track (`tkhd`), media (`mdhd`) and edit-list (`elst`) durations, each track's
//! sample timing (`stts`), the fragments' declared length (`mehd`) and, in a whole file
//! ([`movie_seconds`]), every movie fragment's samples (`moof/traf`: `tfdt`, `trun`, `tfhd`,
//! `trex` defaults) — and never less than a video track's frames at
//! [`MAX_PLAUSIBLE_FPS`]. A movie whose every timing comes to nothing has no measurable length.

/// A video track's frames are taken to play at this rate at the most: its length is never
/// under `frames / MAX_PLAUSIBLE_FPS` seconds, whatever its timing says.
pub const MAX_PLAUSIBLE_FPS: u64 = 60;

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
            return match Timing::of_moov(moov).map(|timing| timing.seconds().unwrap_or(0.0)) {
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

/// The length of the MP4 movie `file` (the whole file), in seconds: the largest of every
/// duration its boxes state and its samples imply, fragments included (see the module's
/// documentation). `None` when it is not an MP4 with a movie box, or when every timing comes to
/// nothing — a movie without a measurable length.
///
/// ```
/// use tollgate_probe::mp4::movie_seconds;
///
/// assert_eq!(movie_seconds(b"not a video at all"), None);
/// ```
pub fn movie_seconds(file: &[u8]) -> Option<f64> {
    let mut boxes = children(file);
    let (first, _) = boxes.next()?;
    if &first != b"ftyp" {
        return None;
    }
    let mut timing: Option<Timing> = None;
    let mut fragments: Vec<&[u8]> = Vec::new();
    for (kind, body) in children(file) {
        match &kind {
            b"moov" => timing = Some(Timing::of_moov(body)?),
            b"moof" => fragments.push(body),
            _ => {}
        }
    }
    let mut timing = timing?;
    for moof in fragments {
        timing.add_fragment(moof);
    }
    timing.seconds()
}

/// Every duration a movie states or implies, as it is read.
#[derive(Debug, Default)]
struct Timing {
    /// The movie's timescale (`mvhd`): ticks a second of `tkhd`, `elst` and `mehd` durations.
    movie_timescale: u32,
    /// The longest duration seen, in seconds.
    longest: f64,
    /// The tracks, by id.
    tracks: Vec<Track>,
}

#[derive(Debug, Default)]
struct Track {
    id: u32,
    /// The media's timescale (`mdhd`): ticks a second of its samples.
    timescale: u32,
    video: bool,
    /// Frames (samples) of a video track, in the movie box and in every fragment.
    samples: u64,
    /// `trex`'s default sample duration, for fragments that state none.
    default_duration: u32,
    /// Ticks of the samples in fragments so far (the fragments' own decode timeline).
    fragment_ticks: u128,
    /// The latest end of a fragment's samples, from its `tfdt` start time.
    fragment_end: u128,
}

impl Timing {
    /// What a `moov` box's children say; `None` without a readable `mvhd`.
    fn of_moov(moov: &[u8]) -> Option<Timing> {
        let mut timing = Timing::default();
        let mvhd = child(moov, b"mvhd")?;
        let (timescale, duration) = versioned_duration(mvhd, 12, 20)?;
        if timescale == 0 {
            return None;
        }
        timing.movie_timescale = timescale;
        timing.note(u128::from(duration), timescale);
        for (kind, body) in children(moov) {
            match &kind {
                b"trak" => timing.add_track(body),
                b"mvex" => {
                    for (kind, body) in children(body) {
                        match &kind {
                            b"mehd" => {
                                let duration = match body.first()? {
                                    1 => be_u64(body, 4),
                                    _ => be_u32(body, 4).map(u64::from),
                                };
                                timing.note_movie(u128::from(duration.unwrap_or(0)));
                            }
                            b"trex" => {
                                if let (Some(id), Some(duration)) =
                                    (be_u32(body, 4), be_u32(body, 12))
                                {
                                    timing.track(id).default_duration = duration;
                                }
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        Some(timing)
    }

    /// A `trak`: its header's and edit list's durations, its media's, and its samples' timing.
    fn add_track(&mut self, trak: &[u8]) {
        let Some(id) = child(trak, b"tkhd").and_then(|tkhd| {
            let (id, duration) = match tkhd.first()? {
                1 => (be_u32(tkhd, 20)?, be_u64(tkhd, 28)?),
                _ => (be_u32(tkhd, 12)?, u64::from(be_u32(tkhd, 20)?)),
            };
            self.note_movie(u128::from(duration));
            Some(id)
        }) else {
            return;
        };
        if let Some(elst) = child(trak, b"edts").and_then(|edts| child(edts, b"elst")) {
            let total = edit_list_ticks(elst);
            self.note_movie(total);
        }
        let Some(mdia) = child(trak, b"mdia") else {
            return;
        };
        let video = child(mdia, b"hdlr").and_then(|hdlr| hdlr.get(8..12)) == Some(b"vide");
        let Some((timescale, duration)) =
            child(mdia, b"mdhd").and_then(|mdhd| versioned_duration(mdhd, 12, 20))
        else {
            return;
        };
        self.note(u128::from(duration), timescale);
        let stbl = child(mdia, b"minf").and_then(|minf| child(minf, b"stbl"));
        let (mut ticks, mut samples) = (0u128, 0u64);
        if let Some(stts) = stbl.and_then(|stbl| child(stbl, b"stts")) {
            let entries = be_u32(stts, 4).unwrap_or(0) as usize;
            for entry in 0..entries {
                let at = 8 + entry * 8;
                let (Some(count), Some(delta)) = (be_u32(stts, at), be_u32(stts, at + 4)) else {
                    break;
                };
                ticks += u128::from(count) * u128::from(delta);
                samples = samples.saturating_add(u64::from(count));
            }
        }
        if let Some(count) = stbl
            .and_then(|stbl| child(stbl, b"stsz"))
            .and_then(|stsz| be_u32(stsz, 8))
        {
            samples = samples.max(u64::from(count));
        }
        self.note(ticks, timescale);
        let track = self.track(id);
        track.timescale = timescale;
        track.video = video;
        track.samples = track.samples.saturating_add(samples);
    }

    /// A `moof`: each track fragment's samples, by their stated or default durations.
    fn add_fragment(&mut self, moof: &[u8]) {
        for (kind, traf) in children(moof) {
            if &kind != b"traf" {
                continue;
            }
            let Some(tfhd) = child(traf, b"tfhd") else {
                continue;
            };
            let (Some(flags), Some(id)) = (be_u32(tfhd, 0), be_u32(tfhd, 4)) else {
                continue;
            };
            let track = self.track(id);
            // tfhd's optional fields, in order: base data offset (8 bytes), sample description
            // index, default sample duration, …
            let mut at = 8 + if flags & 0x1 != 0 { 8 } else { 0 };
            if flags & 0x2 != 0 {
                at += 4;
            }
            let default = if flags & 0x8 != 0 {
                be_u32(tfhd, at).unwrap_or(0)
            } else {
                track.default_duration
            };
            let start = child(traf, b"tfdt").and_then(|tfdt| match tfdt.first()? {
                1 => be_u64(tfdt, 4),
                _ => be_u32(tfdt, 4).map(u64::from),
            });
            let (mut ticks, mut samples) = (0u128, 0u64);
            for (kind, trun) in children(traf) {
                if &kind == b"trun" {
                    let (t, n) = run_ticks(trun, default);
                    ticks += t;
                    samples = samples.saturating_add(n);
                }
            }
            track.samples = track.samples.saturating_add(samples);
            track.fragment_ticks += ticks;
            if let Some(start) = start {
                track.fragment_end = track.fragment_end.max(u128::from(start) + ticks);
            }
        }
    }

    fn track(&mut self, id: u32) -> &mut Track {
        let at = match self.tracks.iter().position(|t| t.id == id) {
            Some(at) => at,
            None => {
                self.tracks.push(Track {
                    id,
                    ..Track::default()
                });
                self.tracks.len() - 1
            }
        };
        &mut self.tracks[at]
    }

    /// A duration of `ticks` at `timescale` ticks a second.
    fn note(&mut self, ticks: u128, timescale: u32) {
        if timescale > 0 {
            // Lossless enough: the largest tick counts lose bits only past 2^53.
            #[allow(clippy::cast_precision_loss)]
            let seconds = ticks as f64 / f64::from(timescale);
            self.longest = self.longest.max(seconds);
        }
    }

    /// A duration in the movie's timescale.
    fn note_movie(&mut self, ticks: u128) {
        self.note(ticks, self.movie_timescale);
    }

    /// The length: the longest duration, every track's fragments included, and never less
    /// than a video track's frames at [`MAX_PLAUSIBLE_FPS`]; `None` when every timing comes to
    /// nothing (frames without a time are no measure of how long a decoder plays them).
    fn seconds(&self) -> Option<f64> {
        let mut longest = self.longest;
        let mut frames: f64 = 0.0;
        for track in &self.tracks {
            if track.timescale > 0 {
                let ticks = track.fragment_ticks.max(track.fragment_end);
                #[allow(clippy::cast_precision_loss)]
                let seconds = ticks as f64 / f64::from(track.timescale);
                longest = longest.max(seconds);
            }
            if track.video {
                #[allow(clippy::cast_precision_loss)]
                let floor = track.samples as f64 / MAX_PLAUSIBLE_FPS as f64;
                frames = frames.max(floor);
            }
        }
        (longest.is_finite() && longest > 0.0).then_some(longest.max(frames))
    }
}

/// The timescale and duration of a full box laid out as `mvhd` and `mdhd` are: version 0 has
/// them at `v0` (two 32-bit fields), version 1 at `v1` (32-bit timescale, 64-bit duration).
fn versioned_duration(body: &[u8], v0: usize, v1: usize) -> Option<(u32, u64)> {
    match body.first()? {
        0 => Some((be_u32(body, v0)?, u64::from(be_u32(body, v0 + 4)?))),
        1 => Some((be_u32(body, v1)?, be_u64(body, v1 + 4)?)),
        _ => None,
    }
}

/// The sum of an edit list's segment durations, in the movie's timescale.
fn edit_list_ticks(elst: &[u8]) -> u128 {
    let Some(&version) = elst.first() else {
        return 0;
    };
    let entries = be_u32(elst, 4).unwrap_or(0) as usize;
    let size = if version == 1 { 20 } else { 12 };
    let mut total = 0u128;
    for entry in 0..entries {
        let at = 8 + entry * size;
        let duration = if version == 1 {
            be_u64(elst, at)
        } else {
            be_u32(elst, at).map(u64::from)
        };
        let Some(duration) = duration else {
            break;
        };
        total += u128::from(duration);
    }
    total
}

/// The ticks and samples of a track run (`trun`): each sample's own duration when the run
/// states them, else `default`.
fn run_ticks(trun: &[u8], default: u32) -> (u128, u64) {
    let (Some(flags), Some(count)) = (be_u32(trun, 0), be_u32(trun, 4)) else {
        return (0, 0);
    };
    let mut at = 8;
    if flags & 0x1 != 0 {
        at += 4; // data offset
    }
    if flags & 0x4 != 0 {
        at += 4; // first sample flags
    }
    if flags & 0x100 == 0 {
        return (u128::from(count) * u128::from(default), u64::from(count));
    }
    let per_sample = 4 * [0x100, 0x200, 0x400, 0x800]
        .iter()
        .filter(|bit| flags & **bit != 0)
        .count();
    let mut ticks = 0u128;
    let mut read = 0u64;
    for _ in 0..count {
        let Some(duration) = be_u32(trun, at) else {
            break;
        };
        ticks += u128::from(duration);
        read += 1;
        at += per_sample;
    }
    (ticks, read)
}

/// The children of a box's body (or of a whole file): kind and body, until a box that does not
/// fit. A box that runs to the end (`size` 0) is the last.
fn children(bytes: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let header = box_header(bytes, at)?;
        let end = match header.size {
            None => bytes.len(),
            Some(size) => at.checked_add(usize::try_from(size).ok()?)?,
        };
        let body = bytes.get(at + header.len..end)?;
        at = end;
        Some((header.kind, body))
    })
}

/// The body of the first child of `kind`.
fn child<'a>(bytes: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
    children(bytes)
        .find(|(k, _)| k == kind)
        .map(|(_, body)| body)
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
