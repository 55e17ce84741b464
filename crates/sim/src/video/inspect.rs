//! Reads an MP4's essentials back by walking its boxes (ISO/IEC 14496-12) by hand.

/// What [`inspect_mp4`] reads from an MP4 file.
#[derive(Debug, Clone, PartialEq)]
pub struct Mp4Info {
    /// Movie duration in seconds (`moov/mvhd` duration / timescale).
    pub duration: f64,
    /// Width and height of the first video track's sample entry (`stsd`).
    pub width: u32,
    pub height: u32,
    /// Samples (frames) of the first video track (`stsz` sample count).
    pub frames: u32,
    /// The sample entry's fourcc, e.g. `avc1`.
    pub codec: String,
}

/// The essentials of an MP4 file: `ftyp` must come first, then `moov` (anywhere) with `mvhd` and
/// a video track (`trak/mdia/hdlr` of type `vide`) whose `minf/stbl` has an `stsd` visual sample
/// entry and an `stsz`. `None` for anything else, or a box that overruns its parent.
pub fn inspect_mp4(file: &[u8]) -> Option<Mp4Info> {
    let top = boxes(file)?;
    if &top.first()?.0 != b"ftyp" {
        return None;
    }
    let moov = boxes(find(&top, b"moov")?)?;

    let mvhd = find(&moov, b"mvhd")?;
    let (timescale, duration) = match *mvhd.first()? {
        0 => (be32(mvhd, 12)?, u64::from(be32(mvhd, 16)?)),
        1 => (be32(mvhd, 20)?, be64(mvhd, 24)?),
        _ => return None,
    };
    if timescale == 0 {
        return None;
    }

    let duration = duration as f64 / f64::from(timescale);
    moov.iter()
        .filter(|(kind, _)| kind == b"trak")
        .find_map(|(_, trak)| video_track(trak, duration))
}

/// The track's info if it is a video track with a visual sample entry and an `stsz`.
fn video_track(trak: &[u8], duration: f64) -> Option<Mp4Info> {
    let mdia = boxes(find(&boxes(trak)?, b"mdia")?)?;
    // hdlr: version/flags (4), pre_defined (4), handler_type (4).
    if find(&mdia, b"hdlr")?.get(8..12)? != b"vide" {
        return None;
    }
    let minf = boxes(find(&mdia, b"minf")?)?;
    let stbl = boxes(find(&minf, b"stbl")?)?;
    // stsd: version/flags (4), entry_count (4), then the sample entries (boxes).
    let entries = boxes(find(&stbl, b"stsd")?.get(8..)?)?;
    let (codec, entry) = entries.first()?;
    // VisualSampleEntry: reserved (6), data_reference_index (2), pre_defined (2), reserved (2),
    // pre_defined (12), width (2), height (2), …
    let width = u32::from(be16(entry, 24)?);
    let height = u32::from(be16(entry, 26)?);
    // stsz: version/flags (4), sample_size (4), sample_count (4).
    let frames = be32(find(&stbl, b"stsz")?, 8)?;
    Some(Mp4Info {
        duration,
        width,
        height,
        frames,
        codec: String::from_utf8_lossy(codec).into_owned(),
    })
}

/// The fourccs of the top-level boxes in file order (e.g. `["ftyp", "moov", "mdat"]` for a
/// fast-start file); `None` if a box size overruns the file.
pub fn top_level_boxes(file: &[u8]) -> Option<Vec<String>> {
    Some(
        boxes(file)?
            .into_iter()
            .map(|(kind, _)| String::from_utf8_lossy(&kind).into_owned())
            .collect(),
    )
}

/// The boxes in `data`, each as (fourcc, payload). Handles 64-bit sizes (`size == 1`) and a last
/// box that runs to the end (`size == 0`).
pub(super) fn boxes(mut data: &[u8]) -> Option<Vec<([u8; 4], &[u8])>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let size = be32(data, 0)?;
        let kind: [u8; 4] = data.get(4..8)?.try_into().ok()?;
        let (header, size) = match size {
            0 => (8, data.len()),
            1 => (16, usize::try_from(be64(data, 8)?).ok()?),
            n => (8, usize::try_from(n).ok()?),
        };
        if size < header || size > data.len() {
            return None;
        }
        out.push((kind, &data[header..size]));
        data = &data[size..];
    }
    Some(out)
}

pub(super) fn find<'a>(boxes: &[([u8; 4], &'a [u8])], kind: &[u8; 4]) -> Option<&'a [u8]> {
    boxes
        .iter()
        .find(|(k, _)| k == kind)
        .map(|(_, payload)| *payload)
}

pub(super) fn be16(data: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(data.get(at..at + 2)?.try_into().ok()?))
}

pub(super) fn be32(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

fn be64(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(data.get(at..at + 8)?.try_into().ok()?))
}
