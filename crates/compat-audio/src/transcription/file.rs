//! The `file` part of a transcription request: its formats and limits.
//!
//! The gateway reads the multipart stream; these are the checks it applies to the file part.

use super::rules::list;
use crate::error::{FieldError, Rule};

/// docs/api.md §2.2: the accepted containers. Raw PCM without a container is not supported (docs/api.md §2.2,
/// §7).
pub const ACCEPTED_CONTAINERS: &[&str] =
    &["wav", "aiff", "flac", "m4a", "mp3", "aac", "opus", "ogg"];

/// docs/api.md §2.2 and §8: at most 50 MB per file, read as decimal megabytes: 50,000,000 bytes.
///
/// The decimal reading is the stricter one (50 MiB would be 52,428,800 bytes), so a file this
/// service accepts is within the upstream's limit whichever unit it means. The gateway's body
/// limit for the whole multipart request is larger, to leave room for the other parts.
pub const MAX_FILE_BYTES: u64 = 50 * 1000 * 1000;

/// docs/api.md §2.2 and §8: at most 500 seconds of audio per file; longer audio must be split before
/// upload (wire-formats §4: the upstream refuses it with 400, it does not truncate).
pub const MAX_SECONDS: u64 = 500;

/// The accepted container named by a file name's extension, compared without regard to case;
/// `None` for another or no extension.
///
/// Besides the names of [`ACCEPTED_CONTAINERS`], the common variants `wave` (wav), `aif` and
/// `aifc` (aiff) and `oga` (ogg) are recognised.
///
/// ```
/// use tollgate_compat_audio::transcription::container_from_filename;
///
/// assert_eq!(container_from_filename("meeting.WAV"), Some("wav"));
/// assert_eq!(container_from_filename("take.2.aif"), Some("aiff"));
/// assert_eq!(container_from_filename("raw.pcm"), None);
/// assert_eq!(container_from_filename("noext"), None);
/// ```
pub fn container_from_filename(filename: &str) -> Option<&'static str> {
    let (_, extension) = filename.rsplit_once('.')?;
    let extension = extension.to_ascii_lowercase();
    let name = match extension.as_str() {
        "wave" => "wav",
        "aif" | "aifc" => "aiff",
        "oga" => "ogg",
        other => other,
    };
    ACCEPTED_CONTAINERS
        .iter()
        .copied()
        .find(|container| *container == name)
}

/// The accepted container recognised from the first bytes of a file, or `None`.
///
/// | Container | Signature |
/// |---|---|
/// | `wav` | `RIFF` (or `RF64`) … `WAVE` |
/// | `aiff` | `FORM` … `AIFF` or `AIFC` |
/// | `flac` | `fLaC` |
/// | `m4a` | `ftyp` at offset 4 (any ISO base media file: m4a, ALAC, mp4) |
/// | `opus`, `ogg` | `OggS`; `opus` when `OpusHead` is within the first 512 bytes |
/// | `mp3` | an ID3v2 tag (the container after the tag when the head reaches it), or an MPEG layer III frame header |
/// | `aac` | an ADTS frame header |
///
/// Raw PCM has no signature and is not recognised; 512 bytes of head are plenty.
///
/// ```
/// use tollgate_compat_audio::transcription::sniff_container;
///
/// assert_eq!(sniff_container(b"RIFF\x24\x08\x00\x00WAVEfmt "), Some("wav"));
/// assert_eq!(sniff_container(b"fLaC\x00\x00\x00\x22"), Some("flac"));
/// assert_eq!(sniff_container(&[0xff, 0xfb, 0x90, 0x64]), Some("mp3"));
/// assert_eq!(sniff_container(&[0x00, 0x01, 0xff, 0xfe]), None); // PCM samples
/// ```
pub fn sniff_container(head: &[u8]) -> Option<&'static str> {
    let at = |offset: usize, magic: &[u8]| {
        offset
            .checked_add(magic.len())
            .and_then(|end| head.get(offset..end))
            == Some(magic)
    };
    if (at(0, b"RIFF") || at(0, b"RF64")) && at(8, b"WAVE") {
        return Some("wav");
    }
    if at(0, b"FORM") && (at(8, b"AIFF") || at(8, b"AIFC")) {
        return Some("aiff");
    }
    if at(0, b"fLaC") {
        return Some("flac");
    }
    if at(4, b"ftyp") {
        return Some("m4a");
    }
    if at(0, b"OggS") {
        let page = &head[..head.len().min(512)];
        let opus = page.windows(8).any(|window| window == b"OpusHead");
        return Some(if opus { "opus" } else { "ogg" });
    }
    if at(0, b"ID3") {
        // ID3v2: a 10-byte header whose last four bytes are a "syncsafe" size (7 bits each).
        let after_tag = head.get(6..10).and_then(|size| {
            let size = size
                .iter()
                .fold(0usize, |acc, &b| (acc << 7) | usize::from(b & 0x7f));
            head.get(size.checked_add(10)?..)
        });
        return after_tag
            .filter(|rest| !rest.is_empty())
            .and_then(sniff_container)
            .or(Some("mp3"));
    }
    if let [0xff, b1, ..] = *head {
        // ADTS: 12 sync bits, then the layer bits are 00.
        if b1 & 0xf6 == 0xf0 {
            return Some("aac");
        }
        // MPEG audio: 11 sync bits, a version other than the reserved 01, layer III (01).
        if b1 & 0xe0 == 0xe0 && b1 & 0x18 != 0x08 && b1 & 0x06 == 0x02 {
            return Some("mp3");
        }
    }
    None
}

/// Checks the `file` part and returns its container: its size, then its format.
///
/// | Check | [`Rule`] (field `file`) |
/// |---|---|
/// | not empty | [`Required`](Rule::Required) |
/// | at most [`MAX_FILE_BYTES`] bytes | [`TooLarge`](Rule::TooLarge) |
/// | one of [`ACCEPTED_CONTAINERS`]: recognised from its first bytes by [`sniff_container`], else from its file name by [`container_from_filename`] | [`UnsupportedValue`](Rule::UnsupportedValue) |
///
/// The content wins over the name, so `voice.mp3` holding WAV data is `wav`. The name is the
/// fallback for content that has no clear signature; the upstream has the last word on it. The
/// length of the audio is checked separately by [`validate_duration`], once it is known.
///
/// ```
/// use tollgate_compat_audio::transcription::validate_file;
/// use tollgate_compat_audio::Rule;
///
/// assert_eq!(validate_file(1_000, Some("a.bin"), b"OggS\x00\x02"), Ok("ogg"));
///
/// let err = validate_file(1_000, Some("speech.pcm"), &[0x00, 0x01, 0xff, 0xfe]).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("file", Rule::UnsupportedValue));
///
/// let err = validate_file(50_000_001, Some("long.wav"), b"RIFF").unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("file", Rule::TooLarge));
/// ```
pub fn validate_file(
    size_bytes: u64,
    filename: Option<&str>,
    head: &[u8],
) -> Result<&'static str, FieldError> {
    if size_bytes == 0 {
        return Err(FieldError::new(
            "file",
            Rule::Required,
            "'file' is required and must not be empty",
        ));
    }
    if size_bytes > MAX_FILE_BYTES {
        return Err(FieldError::new(
            "file",
            Rule::TooLarge,
            format!("'file' has {size_bytes} bytes; at most {MAX_FILE_BYTES} (50 MB) are allowed"),
        ));
    }
    sniff_container(head)
        .or_else(|| filename.and_then(container_from_filename))
        .ok_or_else(|| {
            FieldError::new(
                "file",
                Rule::UnsupportedValue,
                format!(
                    "'file' is not in an accepted format; send one of {} (raw PCM without a \
                     container is not supported)",
                    list(ACCEPTED_CONTAINERS)
                ),
            )
        })
}

/// Checks the length of the uploaded audio, in seconds: at most [`MAX_SECONDS`] (docs/api.md §2.2, §8),
/// compared exactly (500.0 passes, 500.001 does not). A length that is not a number cannot be
/// judged and passes.
///
/// ```
/// use tollgate_compat_audio::transcription::validate_duration;
/// use tollgate_compat_audio::Rule;
///
/// assert_eq!(validate_duration(500.0), Ok(()));
/// let err = validate_duration(512.25).unwrap_err();
/// assert_eq!((err.field.as_str(), err.rule), ("file", Rule::AudioTooLong));
/// assert_eq!(
///     err.to_string(),
///     "'file' lasts 512.25 seconds; at most 500 are allowed, split longer audio before upload"
/// );
/// ```
pub fn validate_duration(seconds: f64) -> Result<(), FieldError> {
    // Precision loss is impossible: MAX_SECONDS is a small integer.
    #[allow(clippy::cast_precision_loss)]
    let max = MAX_SECONDS as f64;
    if seconds > max {
        return Err(FieldError::new(
            "file",
            Rule::AudioTooLong,
            format!(
                "'file' lasts {seconds} seconds; at most {MAX_SECONDS} are allowed, split longer \
                 audio before upload"
            ),
        ));
    }
    Ok(())
}
