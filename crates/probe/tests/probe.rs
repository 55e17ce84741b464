//! Probes real files made by ffmpeg (see `tests/fixtures/README.md`) and byte strings that are
//! not audio containers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use tollgate_probe::{Container, Probe, ProbeError, probe, probe_bytes};

/// The largest difference allowed between a probed duration and the generator's duration.
const TOLERANCE: f64 = 0.1;

/// A fixture: its file name, the container it must probe as, the duration ffmpeg's generator was
/// asked for, and its sample rate (every fixture is mono).
struct Fixture {
    file: &'static str,
    container: Container,
    secs: f64,
    sample_rate: u32,
}

const FIXTURES: &[Fixture] = &[
    Fixture {
        file: "tone.wav",
        container: Container::Wav,
        secs: 1.7,
        sample_rate: 8000,
    },
    Fixture {
        file: "tone.aiff",
        container: Container::Aiff,
        secs: 1.5,
        sample_rate: 8000,
    },
    Fixture {
        file: "tone.flac",
        container: Container::Flac,
        secs: 2.5,
        sample_rate: 16000,
    },
    Fixture {
        file: "tone_faststart.m4a",
        container: Container::M4a,
        secs: 2.5,
        sample_rate: 16000,
    },
    Fixture {
        file: "tone_moov_end.m4a",
        container: Container::M4a,
        secs: 1.9,
        sample_rate: 16000,
    },
    Fixture {
        file: "video_and_audio.mp4",
        container: Container::M4a,
        secs: 2.0,
        sample_rate: 16000,
    },
    Fixture {
        file: "tone.aac",
        container: Container::Aac,
        secs: 2.2,
        sample_rate: 16000,
    },
    Fixture {
        file: "tone_cbr_noxing.mp3",
        container: Container::Mp3,
        secs: 3.1,
        sample_rate: 16000,
    },
    Fixture {
        file: "tone_vbr_xing.mp3",
        container: Container::Mp3,
        secs: 2.3,
        sample_rate: 16000,
    },
    // Opus always decodes at 48 kHz, whatever the input rate.
    Fixture {
        file: "tone.opus",
        container: Container::Opus,
        secs: 2.7,
        sample_rate: 48000,
    },
    Fixture {
        file: "tone.ogg",
        container: Container::Ogg,
        secs: 2.1,
        sample_rate: 16000,
    },
];

fn path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(file)
}

fn fixture(file: &str) -> Vec<u8> {
    std::fs::read(path(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn check(fixture: &Fixture, probe: &Probe, how: &str) {
    let file = fixture.file;
    assert_eq!(probe.container, fixture.container, "{file} ({how})");
    let secs = probe.duration.as_secs_f64();
    assert!(
        (secs - fixture.secs).abs() <= TOLERANCE,
        "{file} ({how}): probed {secs} s, generated {} s",
        fixture.secs
    );
    assert_eq!(
        probe.sample_rate,
        Some(fixture.sample_rate),
        "{file} ({how})"
    );
    assert_eq!(probe.channels, Some(1), "{file} ({how})");
}

#[test]
fn every_fixture_probes_to_its_container_and_duration() {
    for fixture in FIXTURES {
        let probe = probe_bytes(self::fixture(fixture.file))
            .unwrap_or_else(|e| panic!("{}: {e}", fixture.file));
        check(fixture, &probe, "bytes");
    }
}

#[test]
fn every_fixture_probes_the_same_from_a_file() {
    for fixture in FIXTURES {
        let file = File::open(path(fixture.file)).unwrap();
        let from_file = probe(file).unwrap_or_else(|e| panic!("{}: {e}", fixture.file));
        check(fixture, &from_file, "file");
        assert_eq!(from_file, probe_bytes(self::fixture(fixture.file)).unwrap());
    }
}

#[test]
fn every_container_has_a_fixture() {
    for container in Container::ALL {
        assert!(
            FIXTURES.iter().any(|f| f.container == container),
            "no fixture for {container}"
        );
    }
}

#[test]
fn the_source_position_does_not_matter() {
    use std::io::{Seek, SeekFrom};
    let mut file = File::open(path("tone.flac")).unwrap();
    file.seek(SeekFrom::Start(1000)).unwrap();
    assert_eq!(probe(file).unwrap().container, Container::Flac);
}

#[test]
fn the_exact_duration_where_the_container_states_it() {
    let exact = |file: &str| probe_bytes(fixture(file)).unwrap().duration;
    assert_eq!(exact("tone.wav"), Duration::from_millis(1700));
    assert_eq!(exact("tone.aiff"), Duration::from_millis(1500));
    assert_eq!(exact("tone.flac"), Duration::from_millis(2500));
    assert_eq!(exact("tone.ogg"), Duration::from_millis(2100));
    // The LAME header states the encoder delay and padding.
    assert_eq!(exact("tone_vbr_xing.mp3"), Duration::from_millis(2300));
    // The granule position less the pre-skip.
    assert_eq!(exact("tone.opus"), Duration::from_millis(2700));
    // The AAC priming frame (the edit list symphonia does not read) left out.
    assert_eq!(exact("tone_faststart.m4a"), Duration::from_millis(2500));
    assert_eq!(exact("tone_moov_end.m4a"), Duration::from_millis(1900));
}

fn assert_unrecognized(what: &str, result: Result<Probe, ProbeError>) {
    match result {
        Err(ProbeError::Unrecognized) => {}
        other => panic!("{what}: expected Unrecognized, got {other:?}"),
    }
}

/// A deterministic pseudo-random byte stream (xorshift64*).
fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// Headerless 16-bit little-endian PCM at 16 kHz, mono.
fn raw_pcm(samples: impl Iterator<Item = i16>) -> Vec<u8> {
    samples.flat_map(i16::to_le_bytes).collect()
}

#[test]
fn empty_is_unrecognized() {
    assert_unrecognized("empty", probe_bytes(Vec::new()));
    assert_unrecognized("one byte", probe_bytes(vec![0xff]));
}

#[test]
fn text_is_unrecognized() {
    let hello = "hello world\n".repeat(2000).into_bytes();
    assert_unrecognized("hello world", probe_bytes(hello));
    let readme = std::fs::read(path("README.md")).unwrap();
    assert_unrecognized("README.md", probe_bytes(readme));
    let source = include_bytes!("probe.rs").to_vec();
    assert_unrecognized("probe.rs", probe_bytes(source));
}

#[test]
fn a_text_file_named_mp3_is_unrecognized() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("not-audio-{}.mp3", std::process::id()));
    std::fs::write(&path, "this is not an mp3 file\n".repeat(500)).unwrap();
    let result = probe(File::open(&path).unwrap());
    std::fs::remove_file(&path).unwrap();
    assert_unrecognized("text named .mp3", result);
}

#[test]
fn random_bytes_are_unrecognized() {
    for seed in 0..64 {
        assert_unrecognized(
            &format!("random {seed}"),
            probe_bytes(random_bytes(seed, 32 * 1024)),
        );
    }
    // Random bytes after a valid MP3 or ADTS frame sync.
    for seed in 0..16 {
        for sync in [[0xff, 0xf3], [0xff, 0xfb], [0xff, 0xf1], [0xff, 0xf9]] {
            let mut bytes = sync.to_vec();
            bytes.extend_from_slice(&random_bytes(seed, 16 * 1024));
            assert_unrecognized(
                &format!("sync {sync:x?} + random {seed}"),
                probe_bytes(bytes),
            );
        }
    }
}

#[test]
fn raw_pcm_is_unrecognized() {
    let tone = raw_pcm((0..32_000).map(|i| {
        let phase = f64::from(i) * 440.0 * std::f64::consts::TAU / 16_000.0;
        (phase.sin() * 12_000.0) as i16
    }));
    assert_unrecognized("pcm tone", probe_bytes(tone));
    let noise = random_bytes(7, 64 * 1024);
    let noise = raw_pcm(noise.chunks(2).map(|c| i16::from_le_bytes([c[0], c[1]])));
    assert_unrecognized("pcm noise", probe_bytes(noise));
    // Full-scale negative samples are 0xff bytes, the start of an MPEG frame sync.
    let loud = raw_pcm((0..32_000).map(|i| if i % 7 < 3 { -1 } else { -16 }));
    assert_unrecognized("pcm loud", probe_bytes(loud));
    assert_unrecognized("pcm silence", probe_bytes(vec![0; 32_000]));
    // The samples of the WAV fixture, without the header.
    let wav = fixture("tone.wav");
    assert_unrecognized("wav without header", probe_bytes(wav[44..].to_vec()));
}

#[test]
fn audio_after_junk_is_unrecognized() {
    for file in [
        "tone.wav",
        "tone_cbr_noxing.mp3",
        "tone.aac",
        "tone.ogg",
        "tone.flac",
    ] {
        let mut bytes = b"Content-Type: text/plain\r\n\r\n".to_vec();
        bytes.extend_from_slice(&fixture(file));
        assert_unrecognized(&format!("junk + {file}"), probe_bytes(bytes));
    }
}

#[test]
fn video_only_and_webm_are_unrecognized() {
    assert_unrecognized("video-only mp4", probe_bytes(fixture("video_only.mp4")));
    assert_unrecognized("webm", probe_bytes(fixture("tone.webm")));
}

#[test]
fn truncated_and_corrupted_files_never_panic() {
    for fixture in FIXTURES {
        let bytes = self::fixture(fixture.file);
        for cut in [
            4,
            12,
            40,
            100,
            500,
            bytes.len() / 3,
            bytes.len() * 9 / 10,
            bytes.len() - 1,
        ] {
            if let Ok(probe) = probe_bytes(bytes[..cut].to_vec()) {
                let file = fixture.file;
                assert_eq!(probe.container, fixture.container, "{file} cut at {cut}");
                // What is left is never under-stated (a reader that stops at the cut gives a
                // lower bound, which is refused when the header says nothing).
                let left = fixture.secs * cut as f64 / bytes.len() as f64;
                let probed = probe.duration.as_secs_f64();
                assert!(
                    probed >= 0.9 * left - 0.15,
                    "{file} cut at {cut}: {probed} s"
                );
            }
        }
        for seed in 0..8u64 {
            let mut bytes = bytes.clone();
            let noise = random_bytes(seed, 64);
            let at = (seed as usize * 997) % (bytes.len() - 64);
            bytes[at..at + 64].copy_from_slice(&noise);
            let _ = probe_bytes(bytes);
        }
    }
}

#[test]
fn the_unrecognized_message_lists_the_accepted_formats() {
    let message = ProbeError::Unrecognized.to_string();
    for container in Container::ALL {
        assert!(
            message.contains(container.as_str()),
            "{message:?} lacks {container}"
        );
    }
    assert!(message.contains("raw PCM"), "{message:?}");
}

#[test]
fn container_names() {
    let names: Vec<&str> = Container::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        names,
        ["wav", "aiff", "flac", "m4a", "mp3", "aac", "opus", "ogg"]
    );
    assert_eq!(Container::M4a.to_string(), "m4a");
    assert_eq!(
        ProbeError::NoDuration(Container::Opus).to_string(),
        "cannot determine the duration of the opus file"
    );
}

/// A decoder plays every stream of a concatenated MP3 or chained Ogg file; the header of the
/// first one only speaks for itself.
#[test]
fn concatenated_files_count_in_full() {
    let repeat = |file: &str, n: usize| fixture(file).repeat(n);
    let cases = [
        ("tone_vbr_xing.mp3", 3, 3.0 * 2.3, Container::Mp3),
        ("tone_cbr_noxing.mp3", 2, 2.0 * 3.1, Container::Mp3),
        ("tone.opus", 2, 2.0 * 2.7, Container::Opus),
        ("tone.ogg", 3, 3.0 * 2.1, Container::Ogg),
        ("tone.aac", 2, 2.0 * 2.2, Container::Aac),
    ];
    for (file, n, secs, container) in cases {
        let probe = probe_bytes(repeat(file, n)).unwrap_or_else(|e| panic!("{file} x{n}: {e}"));
        assert_eq!(probe.container, container);
        let probed = probe.duration.as_secs_f64();
        // Each copy carries its own encoder delay and padding, which only the first one's
        // header would account for.
        let slack = 0.1 * n as f64;
        assert!(
            (probed - secs).abs() <= slack,
            "{file} x{n}: probed {probed} s, expected {secs} s"
        );
    }
}
