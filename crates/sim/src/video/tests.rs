//! Renders clips and reads them back three ways: the hand-written box walker ([`inspect_mp4`]),
//! an independent sample-table walk plus OpenH264's decoder (always), and `ffprobe` (when the
//! machine has it; CI does not).

use std::process::Command;
use std::time::{Duration, Instant};

use openh264::decoder::Decoder;
use openh264::formats::YUVSource;

use super::inspect::{be16, be32, boxes, find};
use super::*;

fn spec(seconds: f64, aspect_ratio: &str, seed: u64) -> VideoSpec {
    VideoSpec {
        seconds,
        aspect_ratio: aspect_ratio.to_string(),
        seed,
    }
}

/// Renders, checks everything [`inspect_mp4`] and [`top_level_boxes`] report, returns the file.
fn render_checked(s: &VideoSpec) -> Vec<u8> {
    let start = Instant::now();
    let file = render_mp4(s).unwrap();
    let took = start.elapsed();
    let info = inspect_mp4(&file).unwrap();
    println!("{s:?}: {info:?}, {} bytes, {took:?}", file.len());

    let frames = frame_count(s.seconds);
    assert_eq!(info.codec, "avc1", "{s:?}");
    assert_eq!(
        (info.width, info.height),
        frame_size(&s.aspect_ratio),
        "{s:?}"
    );
    assert_eq!(info.frames, frames, "{s:?}");
    assert!((info.duration - s.seconds).abs() < 0.1, "{s:?}: {info:?}");
    // The movie timescale is 1000 (ms, rounded down): exactly frames / 24 up to 1 ms.
    let exact = f64::from(frames) / f64::from(FPS);
    assert!((info.duration - exact).abs() <= 0.001, "{s:?}: {info:?}");
    assert_eq!(
        top_level_boxes(&file).unwrap(),
        ["ftyp", "moov", "mdat"],
        "{s:?}"
    );
    file
}

#[test]
fn frame_counts_follow_the_vendor_formula() {
    assert_eq!(frame_count(1.0), 25);
    assert_eq!(frame_count(4.0), 97);
    assert_eq!(frame_count(5.0), 121);
    assert_eq!(frame_count(10.0), 241);
    assert_eq!(frame_count(30.0), 721);
    assert_eq!(frame_count(60.0), 1441);
    assert_eq!(frame_count(2.5), 61);
    assert_eq!(frame_count(0.01), 1);
}

#[test]
fn frame_sizes_are_small_even_and_exact() {
    let expected = [
        ("16:9", (192, 108)),
        ("9:16", (108, 192)),
        ("1:1", (144, 144)),
        ("4:3", (160, 120)),
        ("3:4", (120, 160)),
        ("21:9", (224, 96)),
        ("adaptive", (192, 108)),
        ("auto", (192, 108)),
        ("AUTO", (192, 108)),
        (" 16:9 ", (192, 108)),
    ];
    for (ratio, size) in expected {
        assert_eq!(frame_size(ratio), size, "{ratio}");
    }
    for ratio in ["16:9", "9:16", "1:1", "4:3", "3:4", "21:9"] {
        let (w, h) = frame_size(ratio);
        let (a, b) = ratio.split_once(':').unwrap();
        let (a, b): (u32, u32) = (a.parse().unwrap(), b.parse().unwrap());
        assert_eq!(w * b, h * a, "{ratio} is exact");
    }
    // Other ratios: even, close to the ratio, about the same area.
    for (a, b) in [
        (3u32, 2u32),
        (2, 3),
        (5, 4),
        (4, 5),
        (2, 1),
        (1, 4),
        (4, 1),
        (1920, 1080),
    ] {
        let ratio = format!("{a}:{b}");
        let (w, h) = frame_size(&ratio);
        assert!(w % 2 == 0 && h % 2 == 0, "{ratio}: {w}x{h}");
        let want = f64::from(a) / f64::from(b);
        let got = f64::from(w) / f64::from(h);
        assert!((got / want - 1.0).abs() < 0.03, "{ratio}: {w}x{h}");
        let area = f64::from(w * h);
        assert!((18_000.0..24_000.0).contains(&area), "{ratio}: {w}x{h}");
    }
    // Unknown → 16:9 (render_mp4 rejects it).
    assert_eq!(frame_size("cinema"), (192, 108));
    assert_eq!(frame_size("10:1"), (192, 108));
}

#[test]
fn renders_the_requested_duration_and_aspect_ratio() {
    for (seconds, ratio) in [
        (1.0, "16:9"),
        (4.0, "9:16"),
        (5.0, "1:1"),
        (5.0, "4:3"),
        (4.0, "3:4"),
        (5.0, "21:9"),
        (15.0, "16:9"),
        (1.0, "adaptive"),
        (1.0, "auto"),
        (2.5, "3:2"),
        (0.5, "9:16"),
    ] {
        render_checked(&spec(seconds, ratio, 7));
    }
}

#[test]
fn a_thirty_second_clip_is_quick() {
    let start = Instant::now();
    render_checked(&spec(30.0, "16:9", 1));
    let took = start.elapsed();
    // Measured on 2 busy cores: 1.9 s in a debug build (OpenH264's C++ is compiled at -O0 then;
    // 0.4 s with `[profile.dev.package.openh264-sys2] opt-level = 3`), 0.3 s in release. The
    // bound only catches a pathological slowdown.
    assert!(took < Duration::from_secs(10), "30 s clip took {took:?}");
}

#[test]
fn the_longest_clip_is_accepted() {
    // Rendering it takes 4.5 s in a debug build; rendering is covered up to 30 s above.
    assert_eq!(
        validate(&spec(MAX_SECONDS, "9:16", 3)).unwrap(),
        (108, 192, 1441)
    );
    assert_eq!(validate(&spec(0.001, "1:1", 3)).unwrap(), (144, 144, 1));
}

#[test]
fn deterministic_per_spec_and_seed() {
    let a = render_mp4(&spec(2.0, "16:9", 42)).unwrap();
    let b = render_mp4(&spec(2.0, "16:9", 42)).unwrap();
    assert!(a == b, "same spec, different bytes");
    let c = render_mp4(&spec(2.0, "16:9", 43)).unwrap();
    assert!(a != c, "different seed, same bytes");
    // The seed changes the picture, not the shape of the file.
    assert_eq!(inspect_mp4(&a), inspect_mp4(&c));
    let d = render_mp4(&spec(2.0, "9:16", 42)).unwrap();
    assert!(a != d);
}

#[test]
fn invalid_specs_are_rejected() {
    for seconds in [
        0.0,
        -0.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        60.01,
        3600.0,
    ] {
        let err = render_mp4(&spec(seconds, "16:9", 1)).unwrap_err();
        assert!(matches!(err, VideoError::Seconds(_)), "{seconds}: {err}");
    }
    for ratio in [
        "", "cinema", "16-9", "16:", ":9", "0:9", "16:0", "10:1", "1:5", "-16:9",
    ] {
        let err = render_mp4(&spec(1.0, ratio, 1)).unwrap_err();
        assert!(
            matches!(err, VideoError::AspectRatio(_)),
            "{ratio:?}: {err}"
        );
    }
}

#[test]
fn inspect_rejects_what_is_not_an_mp4() {
    assert_eq!(inspect_mp4(b""), None);
    assert_eq!(inspect_mp4(b"RIFF\0\0\0\0WAVEfmt "), None);
    assert_eq!(inspect_mp4(&[0u8; 64]), None);
    let file = render_mp4(&spec(1.0, "1:1", 1)).unwrap();
    // Truncated (mdat overruns the file) or cut inside moov.
    assert_eq!(inspect_mp4(&file[..file.len() - 1]), None);
    assert_eq!(inspect_mp4(&file[..200]), None);
    assert_eq!(top_level_boxes(&file[..file.len() - 1]), None);
    // Without ftyp first.
    let ftyp_len = be32(&file, 0).unwrap() as usize;
    assert_eq!(inspect_mp4(&file[ftyp_len..]), None);
}

/// One video track's decoder configuration and samples, read through the sample tables
/// (`stsz`, `stsc`, `stco`) independently of [`inspect_mp4`].
struct Track {
    /// SPS and PPS NAL units from `avcC`.
    parameter_sets: Vec<Vec<u8>>,
    /// Each sample: length-prefixed (4 bytes) NAL units.
    samples: Vec<Vec<u8>>,
    /// 1-based numbers of the sync samples (`stss`).
    sync: Vec<u32>,
}

fn track(file: &[u8]) -> Track {
    let top = boxes(file).unwrap();
    let moov = boxes(find(&top, b"moov").unwrap()).unwrap();
    let trak = boxes(find(&moov, b"trak").unwrap()).unwrap();
    let mdia = boxes(find(&trak, b"mdia").unwrap()).unwrap();
    let minf = boxes(find(&mdia, b"minf").unwrap()).unwrap();
    let stbl = boxes(find(&minf, b"stbl").unwrap()).unwrap();

    // avc1: a 78-byte VisualSampleEntry, then its child boxes (avcC, …).
    let entries = boxes(&find(&stbl, b"stsd").unwrap()[8..]).unwrap();
    assert_eq!(&entries[0].0, b"avc1");
    let children = boxes(&entries[0].1[78..]).unwrap();
    let avcc = find(&children, b"avcC").unwrap();
    assert_eq!(avcc[0], 1, "configurationVersion");
    assert_eq!(avcc[4] & 3, 3, "4-byte NAL lengths");
    let mut parameter_sets = Vec::new();
    let mut at = 5;
    for mask in [0x1f, 0xff] {
        let count = avcc[at] & mask;
        at += 1;
        for _ in 0..count {
            let len = usize::from(be16(avcc, at).unwrap());
            parameter_sets.push(avcc[at + 2..at + 2 + len].to_vec());
            at += 2 + len;
        }
    }
    assert_eq!(parameter_sets.len(), 2, "one SPS, one PPS");

    let stsz = find(&stbl, b"stsz").unwrap();
    let count = be32(stsz, 8).unwrap() as usize;
    let sizes: Vec<usize> = match be32(stsz, 4).unwrap() {
        0 => (0..count)
            .map(|i| be32(stsz, 12 + 4 * i).unwrap() as usize)
            .collect(),
        n => vec![n as usize; count],
    };
    let stco = find(&stbl, b"stco").unwrap();
    let chunks: Vec<usize> = (0..be32(stco, 4).unwrap() as usize)
        .map(|i| be32(stco, 8 + 4 * i).unwrap() as usize)
        .collect();
    let stsc = find(&stbl, b"stsc").unwrap();
    let runs: Vec<(usize, usize)> = (0..be32(stsc, 4).unwrap() as usize)
        .map(|i| {
            let first = be32(stsc, 8 + 12 * i).unwrap() as usize;
            let per_chunk = be32(stsc, 12 + 12 * i).unwrap() as usize;
            (first, per_chunk)
        })
        .collect();
    let mut samples = Vec::new();
    for (c, &offset) in chunks.iter().enumerate() {
        let per_chunk = runs
            .iter()
            .rev()
            .find(|(first, _)| *first <= c + 1)
            .unwrap()
            .1;
        let mut at = offset;
        for _ in 0..per_chunk {
            let size = sizes[samples.len()];
            samples.push(file[at..at + size].to_vec());
            at += size;
        }
    }
    assert_eq!(samples.len(), count);

    let stss = find(&stbl, b"stss").unwrap();
    let sync = (0..be32(stss, 4).unwrap() as usize)
        .map(|i| be32(stss, 8 + 4 * i).unwrap())
        .collect();
    Track {
        parameter_sets,
        samples,
        sync,
    }
}

/// Length-prefixed NAL units → Annex B (start codes).
fn annex_b(sample: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < sample.len() {
        let len = be32(sample, at).unwrap() as usize;
        out.extend_from_slice(&[0, 0, 0, 1]);
        out.extend_from_slice(&sample[at + 4..at + 4 + len]);
        at += 4 + len;
    }
    out
}

#[test]
fn decodes_every_frame() {
    for (seconds, ratio) in [(5.0, "16:9"), (3.0, "9:16"), (2.0, "21:9")] {
        let s = spec(seconds, ratio, 11);
        let file = render_mp4(&s).unwrap();
        let (width, height) = frame_size(ratio);
        let t = track(&file);
        assert_eq!(t.samples.len() as u32, frame_count(seconds));
        // An IDR frame every 2 s, starting with the first.
        let want: Vec<u32> = (0..frame_count(seconds))
            .step_by(48)
            .map(|i| i + 1)
            .collect();
        assert_eq!(t.sync, want, "{s:?}");

        let mut decoder = Decoder::new().unwrap();
        let mut headers = Vec::new();
        for p in &t.parameter_sets {
            headers.extend_from_slice(&[0, 0, 0, 1]);
            headers.extend_from_slice(p);
        }
        assert!(decoder.decode(&headers).unwrap().is_none());
        let mut lumas: Vec<Vec<u8>> = Vec::new();
        for (i, sample) in t.samples.iter().enumerate() {
            let picture = decoder.decode(&annex_b(sample)).unwrap();
            let picture = picture.unwrap_or_else(|| panic!("{s:?}: no picture for frame {i}"));
            assert_eq!(picture.dimensions(), (width as usize, height as usize));
            let stride = picture.strides().0;
            let luma: Vec<u8> = (0..height as usize)
                .flat_map(|y| picture.y()[y * stride..y * stride + width as usize].to_vec())
                .collect();
            lumas.push(luma);
        }
        assert!(decoder.flush_remaining().unwrap().is_empty());
        // It moves: consecutive frames differ, and the first and the last differ.
        for (i, pair) in lumas.windows(2).enumerate() {
            assert!(pair[0] != pair[1], "{s:?}: frames {i} and {} equal", i + 1);
        }
        // The progress bar: the bottom row is mostly dark at the start, mostly white at the end.
        let bottom = |l: &[u8]| {
            let row = &l[(height as usize - 1) * width as usize..];
            row.iter().filter(|&&v| v > 128).count() as f64 / row.len() as f64
        };
        assert!(bottom(&lumas[0]) < 0.1, "{s:?}");
        assert!(bottom(lumas.last().unwrap()) > 0.9, "{s:?}");
    }
}

#[test]
fn ffprobe_decodes_it() {
    if Command::new("ffprobe").arg("-version").output().is_err() {
        println!("ffprobe not found; skipping the ffprobe check");
        return;
    }
    let dir = std::env::temp_dir();
    for (seconds, ratio) in [(5.0, "16:9"), (4.0, "9:16"), (1.0, "4:3"), (2.5, "21:9")] {
        let s = spec(seconds, ratio, 5);
        let file = render_mp4(&s).unwrap();
        let path = dir.join(format!(
            "tollgate-sim-video-{}-{}.mp4",
            std::process::id(),
            ratio.replace(':', "x")
        ));
        std::fs::write(&path, &file).unwrap();
        let out = Command::new("ffprobe")
            .args(["-v", "error", "-count_frames", "-select_streams", "v:0"])
            .args([
                "-show_entries",
                "stream=codec_name,profile,pix_fmt,color_space,nb_read_frames,width,height,duration",
            ])
            .args(["-of", "json"])
            .arg(&path)
            .output()
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.is_empty(), "{s:?}: {stderr}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        println!("{s:?}: {json}");
        let stream = &json["streams"][0];
        let (width, height) = frame_size(ratio);
        assert_eq!(stream["codec_name"], "h264", "{json}");
        assert_eq!(stream["profile"], "Constrained Baseline", "{json}");
        assert_eq!(stream["pix_fmt"], "yuv420p", "{json}");
        assert_eq!(stream["color_space"], "smpte170m", "{json}");
        assert_eq!(stream["width"], width, "{json}");
        assert_eq!(stream["height"], height, "{json}");
        let frames: u32 = stream["nb_read_frames"].as_str().unwrap().parse().unwrap();
        assert_eq!(frames, frame_count(seconds), "{json}");
        let duration: f64 = stream["duration"].as_str().unwrap().parse().unwrap();
        assert!((duration - seconds).abs() < 0.1, "{json}");
    }
}
