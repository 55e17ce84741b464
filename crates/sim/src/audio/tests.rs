//! Decodes what `synthesize` makes with symphonia (an independent decoder) and checks length,
//! format, channels and the embedded text.

use std::io::Cursor;
use std::time::{Duration, Instant};

use symphonia::core::codecs::CodecParameters;
use symphonia::core::codecs::audio::AudioDecoderOptions;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, TrackType};
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::{MetadataOptions, RawValue};

use super::*;

const MIXED: &str = "你好, world! Tollgate 模拟语音 test 123.";

fn spec(format: AudioFormat, sample_rate: u32, channels: u16) -> Synthesis {
    Synthesis {
        format,
        sample_rate,
        channels,
        bitrate: 128_000,
        speed: 1.0,
    }
}

fn frames_expected(text: &str, speed: f64, rate: u32) -> u64 {
    (duration_for(text, speed).as_secs_f64() * f64::from(rate)).round() as u64
}

/// A long text: mixed scripts, punctuation and spaces (about 40 s at speed 1).
fn long_text() -> String {
    let mut s = String::new();
    for i in 0..12 {
        s.push_str(&format!(
            "Sentence {i}: the quick brown fox jumps over the lazy dog. 第{i}句，敏捷的棕色狐狸。 "
        ));
    }
    s
}

#[derive(Debug)]
struct Decoded {
    rate: u32,
    channels: usize,
    /// Frames the decoder produced (after gapless trimming).
    frames: u64,
    /// Duration the container header announces, if any.
    header_secs: Option<f64>,
    /// (key, value) of every tag symphonia found (TXXX keyed by its description).
    tags: Vec<(String, String)>,
}

impl Decoded {
    fn secs(&self) -> f64 {
        self.frames as f64 / f64::from(self.rate)
    }
}

fn decode(file: &[u8]) -> Decoded {
    let mss = MediaSourceStream::new(Box::new(Cursor::new(file.to_vec())), Default::default());
    let mut format = symphonia::default::get_probe()
        .probe(
            &Hint::new(),
            mss,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .expect("probe");
    let track = format
        .default_track(TrackType::Audio)
        .expect("audio track")
        .clone();
    let Some(CodecParameters::Audio(params)) = &track.codec_params else {
        panic!("not audio: {:?}", track.codec_params);
    };
    let header_secs = match (track.time_base, track.duration) {
        (Some(tb), Some(d)) => tb.calc_duration(d).map(|t| t.as_secs_f64()),
        _ => None,
    };
    let mut tags = Vec::new();
    let mut metadata = format.metadata();
    loop {
        if let Some(rev) = metadata.current() {
            for tag in &rev.media.tags {
                let value = match &tag.raw.value {
                    RawValue::String(s) => s.to_string(),
                    RawValue::StringList(l) => l.join("\0"),
                    other => format!("{other:?}"),
                };
                let key = match &tag.raw.sub_fields {
                    Some(subs) if tag.raw.key == "TXXX" => subs
                        .iter()
                        .find_map(|f| match &f.value {
                            RawValue::String(s) => Some(format!("TXXX:{s}")),
                            _ => None,
                        })
                        .unwrap_or_else(|| "TXXX".into()),
                    _ => tag.raw.key.clone(),
                };
                tags.push((key, value));
            }
        }
        if metadata.pop().is_none() {
            break;
        }
    }
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(params, &AudioDecoderOptions::default())
        .expect("decoder");
    let (mut frames, mut rate, mut channels) = (0u64, 0, 0);
    while let Some(packet) = format.next_packet().expect("next packet") {
        if packet.track_id != track.id {
            continue;
        }
        let buf = decoder.decode(&packet).expect("decode");
        frames += buf.frames() as u64;
        rate = buf.spec().rate();
        channels = buf.spec().channels().count();
    }
    assert_eq!(params.sample_rate, Some(rate), "codec params rate");
    Decoded {
        rate,
        channels,
        frames,
        header_secs,
        tags,
    }
}

fn tag<'a>(d: &'a Decoded, key: &str) -> Option<&'a str> {
    d.tags
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

fn check_magic(format: AudioFormat, file: &[u8]) {
    match format {
        AudioFormat::Mp3 => {
            assert_eq!(&file[..3], b"ID3");
            assert_eq!(file[3], 4, "ID3v2.4");
        }
        AudioFormat::Wav => {
            assert_eq!(&file[..4], b"RIFF");
            assert_eq!(&file[8..12], b"WAVE");
            let riff_len = u32::from_le_bytes(file[4..8].try_into().unwrap()) as usize;
            assert_eq!(riff_len + 8, file.len(), "RIFF size");
        }
        AudioFormat::Flac => assert_eq!(&file[..4], b"fLaC"),
        AudioFormat::Pcm => {}
    }
}

/// The whole check for one file: probes, decodes cleanly, has the asked rate, channels and
/// length, carries the text (for us and for symphonia).
fn check_file(text: &str, s: &Synthesis) -> Decoded {
    let file = synthesize(text, s).unwrap();
    check_magic(s.format, &file);
    let d = decode(&file);
    let ctx = format!(
        "{:?} {} Hz × {}: {d:?}",
        s.format, s.sample_rate, s.channels
    );
    assert_eq!(d.rate, s.sample_rate, "{ctx}");
    assert_eq!(d.channels, usize::from(s.channels), "{ctx}");
    let want = duration_for(text, s.speed).as_secs_f64();
    assert!(
        (d.secs() - want).abs() < 0.1,
        "decoded {} s vs {want} s: {ctx}",
        d.secs()
    );
    let header = d.header_secs.expect("header duration");
    assert!(
        (header - want).abs() < 0.1,
        "header {header} s vs {want} s: {ctx}"
    );
    if s.format != AudioFormat::Mp3 {
        // Lossless containers: exact to the frame.
        assert_eq!(
            d.frames,
            frames_expected(text, s.speed, s.sample_rate),
            "{ctx}"
        );
    }
    assert_eq!(embedded_text(&file).as_deref(), Some(text), "{ctx}");
    let key = match s.format {
        AudioFormat::Mp3 => "TXXX:tollgate-text",
        AudioFormat::Wav => "ICMT",
        _ => "TOLLGATE_TEXT",
    };
    // symphonia 0.6.1's WavReader parses the INFO chunk (a malformed one fails the probe) but
    // drops the result, so only MP3 and FLAC tags can be read back through it.
    if s.format != AudioFormat::Wav {
        let theirs = tag(&d, key).map(|v| v.trim_end_matches('\0'));
        assert_eq!(theirs, Some(text), "symphonia's reading of {key}: {ctx}");
    }
    d
}

#[test]
fn every_container_rate_and_channel_count_decodes_with_the_right_length_and_text() {
    let mut bitrates = [32_000, 128_000, 256_000].into_iter().cycle();
    for format in [AudioFormat::Mp3, AudioFormat::Wav, AudioFormat::Flac] {
        for rate in [8000, 22050, 32000, 44100] {
            for channels in [1, 2] {
                let s = Synthesis {
                    bitrate: bitrates.next().unwrap(),
                    ..spec(format, rate, channels)
                };
                check_file(MIXED, &s);
            }
        }
    }
}

#[test]
fn the_other_vendor_rates_work_too() {
    for rate in [16000, 24000, 11025, 12000, 48000] {
        for format in [AudioFormat::Mp3, AudioFormat::Flac] {
            check_file("rates", &spec(format, rate, 1));
        }
    }
}

#[test]
fn mp3_length_is_exact_after_gapless_trimming() {
    // The LAME tag carries the encoder delay and padding; symphonia trims them.
    for (rate, channels) in [(8000, 1), (22050, 2), (44100, 1)] {
        let d = check_file(MIXED, &spec(AudioFormat::Mp3, rate, channels));
        assert_eq!(d.frames, frames_expected(MIXED, 1.0, rate), "{d:?}");
    }
}

#[test]
fn long_text_in_every_container() {
    let text = long_text();
    for format in [AudioFormat::Mp3, AudioFormat::Wav, AudioFormat::Flac] {
        let d = check_file(&text, &spec(format, 8000, 1));
        assert!(d.secs() > 30.0, "{d:?}");
    }
}

#[test]
fn short_and_empty_texts_last_the_minimum() {
    assert_eq!(duration_for("", 1.0), Duration::from_millis(500));
    assert_eq!(duration_for("hi", 1.0), Duration::from_millis(500));
    for format in [AudioFormat::Mp3, AudioFormat::Wav, AudioFormat::Flac] {
        // 8 kHz × 0.5 s = 4000 frames: a single FLAC block shorter than the block size.
        let d = check_file("", &spec(format, 8000, 1));
        assert!((d.secs() - 0.5).abs() < 0.01, "{d:?}");
        check_file("a", &spec(format, 44100, 2));
    }
}

#[test]
fn duration_rule() {
    let ascii = "a".repeat(150);
    assert!((duration_for(&ascii, 1.0).as_secs_f64() - 10.3).abs() < 1e-9);
    // CJK counts twice.
    let cjk = "字".repeat(75);
    assert_eq!(duration_for(&cjk, 1.0), duration_for(&ascii, 1.0));
    assert!(duration_for("你好", 1.0) > Duration::ZERO);
    // Speed 2 halves, speed 0.5 doubles (above the minimum).
    let one = duration_for(&ascii, 1.0).as_secs_f64();
    assert!((duration_for(&ascii, 2.0).as_secs_f64() - one / 2.0).abs() < 1e-9);
    assert!((duration_for(&ascii, 0.5).as_secs_f64() - one * 2.0).abs() < 1e-9);
    // Longer text, longer audio.
    assert!(duration_for(&"a".repeat(151), 1.0) > duration_for(&ascii, 1.0));
    // Nonsense speeds count as 1.
    for speed in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(duration_for(&ascii, speed), duration_for(&ascii, 1.0));
    }
    // A tiny speed saturates instead of panicking.
    assert!(duration_for(&ascii, 1e-300) > MAX_DURATION);
}

#[test]
fn speed_two_halves_the_decoded_duration_and_longer_text_is_longer() {
    let text = long_text();
    let at = |text: &str, speed| {
        let s = Synthesis {
            speed,
            ..spec(AudioFormat::Wav, 16000, 1)
        };
        decode(&synthesize(text, &s).unwrap()).secs()
    };
    let normal = at(&text, 1.0);
    let fast = at(&text, 2.0);
    assert!((fast - normal / 2.0).abs() < 0.01, "{normal} {fast}");
    assert!(at(&text[..text.len() / 2], 1.0) < normal - 10.0);
}

#[test]
fn pcm_is_raw_samples_of_the_exact_length() {
    for (rate, channels) in [(8000, 1), (22050, 2), (44100, 1), (32000, 2)] {
        for speed in [1.0, 2.0, 0.5] {
            let s = Synthesis {
                speed,
                ..spec(AudioFormat::Pcm, rate, channels)
            };
            let pcm = synthesize(MIXED, &s).unwrap();
            let frames = frames_expected(MIXED, speed, rate) as usize;
            assert_eq!(pcm.len(), frames * usize::from(channels) * 2);
            assert_eq!(embedded_text(&pcm), None);
        }
    }
}

#[test]
fn wav_data_equals_pcm() {
    let pcm = synthesize(MIXED, &spec(AudioFormat::Pcm, 24000, 2)).unwrap();
    let wav = synthesize(MIXED, &spec(AudioFormat::Wav, 24000, 2)).unwrap();
    assert!(wav.ends_with(&pcm));
    let data = wav.len() - pcm.len();
    assert_eq!(&wav[data - 8..data - 4], b"data");
}

#[test]
fn the_signal_has_tones_for_letters_and_gaps_between_words() {
    let rate = 16000;
    let text = "aaaa    bbbb";
    let pcm = synthesize(text, &spec(AudioFormat::Pcm, rate, 1)).unwrap();
    let samples: Vec<i16> = pcm
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect();
    let peak = |from: f64, to: f64| {
        let (a, b) = (
            (from * samples.len() as f64) as usize,
            (to * samples.len() as f64) as usize,
        );
        samples[a..b]
            .iter()
            .map(|s| s.unsigned_abs())
            .max()
            .unwrap()
    };
    // 12 characters over (12/15 + 0.3) s = 1.1 s; the lead-in is 0.15 s (13.6 %).
    assert!(peak(0.0, 0.12) < 100, "lead-in is quiet");
    assert!(peak(0.2, 0.4) > 4000, "'aaaa' is loud");
    assert!(peak(0.5, 0.6) < 100, "the spaces are quiet");
    assert!(peak(0.7, 0.8) > 4000, "'bbbb' is loud");
    assert!(peak(0.9, 1.0) < 100, "the tail is quiet");
    assert!(samples.iter().any(|&s| s != 0), "noise everywhere");
    // Stereo: both channels carry the tone.
    let stereo = synthesize(text, &spec(AudioFormat::Pcm, rate, 2)).unwrap();
    assert_eq!(stereo.len(), pcm.len() * 2);
}

#[test]
fn synthesis_is_deterministic() {
    for format in [
        AudioFormat::Mp3,
        AudioFormat::Wav,
        AudioFormat::Flac,
        AudioFormat::Pcm,
    ] {
        let s = spec(format, 22050, 2);
        assert_eq!(
            synthesize(MIXED, &s).unwrap(),
            synthesize(MIXED, &s).unwrap()
        );
    }
    let a = synthesize("abc", &spec(AudioFormat::Pcm, 8000, 1)).unwrap();
    let b = synthesize("xyz", &spec(AudioFormat::Pcm, 8000, 1)).unwrap();
    assert_ne!(a, b, "the pitch follows the characters");
}

#[test]
fn ten_thousand_cjk_characters_keep_their_text() {
    // 10,000 CJK characters = 30 KB of UTF-8; at speed 2 that is 11 minutes of audio.
    let text: String = "语音合成测试你好世界"
        .chars()
        .cycle()
        .take(10_000)
        .collect();
    let s = Synthesis {
        speed: 2.0,
        ..spec(AudioFormat::Wav, 8000, 1)
    };
    let wav = synthesize(&text, &s).unwrap();
    assert_eq!(embedded_text(&wav).as_deref(), Some(text.as_str()));
    // The tag writers on their own (a full MP3/FLAC encode of this is in the release-only test).
    let id3 = mp3::id3v2_tag(&text);
    assert_eq!(mp3::read_text(&id3).as_deref(), Some(text.as_str()));
    let mut flac = b"fLaC".to_vec();
    let block = flac::vorbis_comment(&text);
    flac.push(0x84);
    flac.extend_from_slice(&(block.len() as u32).to_be_bytes()[1..]);
    flac.extend_from_slice(&block);
    assert_eq!(embedded_text(&flac).as_deref(), Some(text.as_str()));
}

#[test]
fn texts_with_odd_characters_round_trip() {
    for text in [
        "",
        "a",
        "ab",
        "tab\there",
        "nul\0inside",
        "trailing nul\0",
        "🎉 emoji ✓",
    ] {
        for format in [AudioFormat::Mp3, AudioFormat::Wav, AudioFormat::Flac] {
            let file = synthesize(text, &spec(format, 8000, 1)).unwrap();
            assert_eq!(
                embedded_text(&file).as_deref(),
                Some(text),
                "{format:?} {text:?}"
            );
        }
    }
}

#[test]
fn embedded_text_is_none_for_anything_else() {
    let mut x = 0x1234_5678u32;
    let random: Vec<u8> = (0..10_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    assert_eq!(embedded_text(&random), None);
    assert_eq!(embedded_text(b""), None);
    assert_eq!(embedded_text(b"ID3"), None);
    assert_eq!(embedded_text(b"RIFF\0\0\0\0WAVE"), None);
    assert_eq!(embedded_text(b"fLaC"), None);
    // Containers with the wrong markers or cut short.
    for format in [AudioFormat::Mp3, AudioFormat::Wav, AudioFormat::Flac] {
        let file = synthesize(MIXED, &spec(format, 8000, 1)).unwrap();
        assert_eq!(embedded_text(&file[..40]), None, "{format:?} truncated");
        // Break our marker: the TXXX description, the ISFT value, the comment key (Vorbis
        // comment keys are case-insensitive, so not by case).
        let marker: &[u8] = if format == AudioFormat::Flac {
            b"TOLL"
        } else {
            b"toll"
        };
        let mut foreign = file.clone();
        let at = foreign.windows(4).position(|w| w == marker).unwrap();
        foreign[at] = b'X';
        assert_eq!(embedded_text(&foreign), None, "{format:?} foreign");
    }
    // An ID3 tag of someone else's, on random bytes.
    let mut foreign = b"ID3\x04\0\0\0\0\0\x15TXXX\0\0\0\x0b\0\0\x03other\0value".to_vec();
    foreign.extend_from_slice(&random[..100]);
    assert_eq!(embedded_text(&foreign), None);
}

#[test]
fn invalid_requests_are_errors() {
    let ok = spec(AudioFormat::Wav, 8000, 1);
    for rate in [0, 7999, 44000, 96000] {
        let s = Synthesis {
            sample_rate: rate,
            ..ok.clone()
        };
        assert!(matches!(synthesize("x", &s), Err(AudioError::SampleRate(r)) if r == rate));
    }
    for channels in [0, 3] {
        let s = Synthesis {
            channels,
            ..ok.clone()
        };
        assert!(matches!(synthesize("x", &s), Err(AudioError::Channels(_))));
    }
    for speed in [0.0, -2.0, f64::NAN, f64::INFINITY] {
        let s = Synthesis {
            speed,
            ..ok.clone()
        };
        assert!(matches!(synthesize("x", &s), Err(AudioError::Speed(_))));
    }
    let s = Synthesis {
        speed: 0.0001,
        ..ok.clone()
    };
    let Err(err) = synthesize("a long enough text", &s) else {
        panic!("15,000 s of audio accepted");
    };
    assert!(matches!(err, AudioError::TooLong(_)), "{err}");
    assert!(err.to_string().contains("at most 3600 s"), "{err}");
}

#[test]
fn mp3_bitrate_is_clamped_to_what_the_rate_allows() {
    assert_eq!(effective_mp3_bitrate(8000, 256_000), 64_000);
    assert_eq!(effective_mp3_bitrate(8000, 32_000), 32_000);
    assert_eq!(effective_mp3_bitrate(16000, 256_000), 160_000);
    assert_eq!(effective_mp3_bitrate(22050, 128_000), 128_000);
    assert_eq!(effective_mp3_bitrate(44100, 256_000), 256_000);
    assert_eq!(effective_mp3_bitrate(44100, 8_000), 32_000);
    assert_eq!(effective_mp3_bitrate(44100, 0), DEFAULT_MP3_BITRATE);
    assert_eq!(effective_mp3_bitrate(32000, 100_000), 96_000);
    // The clamped rate is the one in the stream: 64 kbps at 8 kHz mono.
    let s = Synthesis {
        bitrate: 256_000,
        ..spec(AudioFormat::Mp3, 8000, 1)
    };
    let text = long_text();
    let file = synthesize(&text, &s).unwrap();
    let bits = file.len() as f64 * 8.0 / duration_for(&text, 1.0).as_secs_f64();
    assert!((bits - 64_000.0).abs() < 4_000.0, "{bits} bit/s");
}

/// `cargo test --release -p tollgate-sim audio -- --ignored --nocapture`
#[test]
#[ignore = "slow unoptimised; a release-build timing check"]
fn ten_thousand_characters_synthesize_in_seconds() {
    let ascii: String = "The quick brown fox jumps over the lazy dog. "
        .chars()
        .cycle()
        .take(10_000)
        .collect();
    let cjk: String = "语音合成测试你好世界"
        .chars()
        .cycle()
        .take(10_000)
        .collect();
    for (name, text) in [("ascii", &ascii), ("cjk", &cjk)] {
        for format in [
            AudioFormat::Mp3,
            AudioFormat::Wav,
            AudioFormat::Flac,
            AudioFormat::Pcm,
        ] {
            let s = spec(format, 44100, 1);
            let start = Instant::now();
            let file = synthesize(text, &s).unwrap();
            let took = start.elapsed();
            let audio = duration_for(text, 1.0);
            println!(
                "{name} {format:?}: {:.0} s of audio, {} bytes, {took:?}",
                audio.as_secs_f64(),
                file.len()
            );
            assert!(took < Duration::from_secs(5), "{format:?} took {took:?}");
            if format != AudioFormat::Pcm {
                assert_eq!(embedded_text(&file).as_deref(), Some(text.as_str()));
                let d = decode(&file);
                assert!((d.secs() - audio.as_secs_f64()).abs() < 0.1, "{d:?}");
            }
        }
    }
}
