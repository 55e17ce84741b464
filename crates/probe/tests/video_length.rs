//! Issue 42 item 2. The adversary: a client who sends a real video with the header's duration
//! written down — `mvhd` set to 0 (a fragmented MP4 legitimately carries 0 there), or every
//! duration field it can find — to be held for nothing. A decoder plays the samples by their own
//! timing, so the length measured is the largest of what the bytes imply
//! (`tollgate_probe::mp4::movie_seconds`, docs/decisions.md "Bounded settlement").
//!
//! The fixtures are real files (tests/fixtures/README.md): 12 s of 16 × 16 video at 5 fps with
//! AAC sound, once as one movie and once fragmented (`-movflags frag_keyframe+empty_moov`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use tollgate_probe::media::{Measured, measure};
use tollgate_probe::mp4::movie_seconds;

fn fixture(file: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every full box of `kind` in `file`, wherever it is nested: the offsets of their bodies.
fn bodies_of(file: &[u8], kind: &[u8; 4]) -> Vec<usize> {
    fn walk(file: &[u8], from: usize, to: usize, kind: &[u8; 4], out: &mut Vec<usize>) {
        let mut at = from;
        while at + 8 <= to {
            let size = u32::from_be_bytes(file[at..at + 4].try_into().unwrap()) as usize;
            let here: [u8; 4] = file[at + 4..at + 8].try_into().unwrap();
            let size = if size == 0 { to - at } else { size };
            if size < 8 || at + size > to {
                return;
            }
            if &here == kind {
                out.push(at + 8);
            }
            if matches!(
                &here,
                b"moov"
                    | b"trak"
                    | b"mdia"
                    | b"minf"
                    | b"stbl"
                    | b"edts"
                    | b"mvex"
                    | b"moof"
                    | b"traf"
            ) {
                walk(file, at + 8, at + size, kind, out);
            }
            at += size;
        }
    }
    let mut out = Vec::new();
    walk(file, 0, file.len(), kind, &mut out);
    out
}

/// Sets the duration field of every `kind` box to 0 (version 0 and 1 layouts alike), the way a
/// client edits a header: the timescales stay, the samples stay.
fn zero_durations(file: &mut [u8], kind: &[u8; 4]) {
    for body in bodies_of(file, kind) {
        let v1 = file[body] == 1;
        let (at, len) = match (kind, v1) {
            (b"mvhd" | b"mdhd", false) => (16, 4),
            (b"mvhd" | b"mdhd", true) => (24, 8),
            (b"tkhd", false) => (20, 4),
            (b"tkhd", true) => (28, 8),
            (b"mehd", false) => (4, 4),
            (b"mehd", true) => (4, 8),
            _ => unreachable!(),
        };
        file[body + at..body + at + len].fill(0);
    }
}

/// Sets every edit's duration to 0.
fn zero_edits(file: &mut [u8]) {
    for body in bodies_of(file, b"elst") {
        let v1 = file[body] == 1;
        let entries = u32::from_be_bytes(file[body + 4..body + 8].try_into().unwrap()) as usize;
        let (size, len) = if v1 { (20, 8) } else { (12, 4) };
        for entry in 0..entries {
            let at = body + 8 + entry * size;
            file[at..at + len].fill(0);
        }
    }
}

fn video_seconds(file: &[u8]) -> Option<f64> {
    match measure("video/mp4", file) {
        Some(Measured::Video { seconds }) => Some(seconds),
        Some(other) => panic!("{other:?}"),
        None => None,
    }
}

fn about_twelve(seconds: Option<f64>, what: &str) {
    let seconds = seconds.unwrap_or_else(|| panic!("{what}: no length"));
    assert!((12.0..=12.2).contains(&seconds), "{what}: {seconds} s");
}

#[test]
fn a_real_movie_measures_its_length() {
    about_twelve(video_seconds(&fixture("video_12s.mp4")), "the movie");
    about_twelve(
        video_seconds(&fixture("video_12s_fragmented.mp4")),
        "the fragmented movie (its mvhd says 0)",
    );
}

#[test]
fn a_header_written_down_does_not_shorten_the_movie() {
    let original = fixture("video_12s.mp4");
    let mut file = original.clone();
    zero_durations(&mut file, b"mvhd");
    about_twelve(video_seconds(&file), "mvhd 0");
    for kind in [b"tkhd", b"mdhd"] {
        zero_durations(&mut file, kind);
    }
    zero_edits(&mut file);
    about_twelve(
        video_seconds(&file),
        "mvhd, tkhd, mdhd and elst 0: the samples' timing (stts) remains",
    );
}

#[test]
fn a_fragmented_movie_is_measured_from_its_fragments() {
    let mut file = fixture("video_12s_fragmented.mp4");
    assert!(
        !bodies_of(&file, b"moof").is_empty(),
        "the fixture is fragmented"
    );
    for kind in [b"mvhd", b"tkhd", b"mdhd", b"mehd"] {
        zero_durations(&mut file, kind);
    }
    zero_edits(&mut file);
    about_twelve(
        video_seconds(&file),
        "every header 0: the fragments' samples remain",
    );
}

/// Samples whose every time is 0 have no length a decoder would play: unmeasurable, so the
/// caller holds the most the model takes.
#[test]
fn a_movie_whose_every_timing_is_nothing_is_unmeasurable() {
    let mut file = fixture("video_12s.mp4");
    for kind in [b"mvhd", b"tkhd", b"mdhd"] {
        zero_durations(&mut file, kind);
    }
    zero_edits(&mut file);
    for body in bodies_of(&file, b"stts") {
        let entries = u32::from_be_bytes(file[body + 4..body + 8].try_into().unwrap()) as usize;
        for entry in 0..entries {
            let at = body + 8 + entry * 8 + 4;
            file[at..at + 4].fill(0);
        }
    }
    assert_eq!(movie_seconds(&file), None);
    assert_eq!(video_seconds(&file), None);
}

/// A header that says far more than the samples is believed: doubt goes up, never down.
#[test]
fn the_largest_duration_wins() {
    let mut file = fixture("video_12s.mp4");
    for body in bodies_of(&file, b"mvhd") {
        assert_eq!(file[body], 0);
        let timescale = u32::from_be_bytes(file[body + 12..body + 16].try_into().unwrap());
        file[body + 16..body + 20].copy_from_slice(&(timescale * 3600).to_be_bytes());
    }
    let seconds = video_seconds(&file).unwrap();
    assert!((3599.0..=3601.0).contains(&seconds), "{seconds}");
}

#[test]
fn cut_and_garbled_movies_never_panic() {
    for file in [
        fixture("video_12s.mp4"),
        fixture("video_12s_fragmented.mp4"),
    ] {
        for len in (0..file.len()).step_by(97) {
            let _ = movie_seconds(&file[..len]);
        }
        let mut garbled = file.clone();
        for at in (0..garbled.len()).step_by(13) {
            garbled[at] ^= 0xa5;
            let _ = movie_seconds(&garbled);
        }
    }
}
