//! Speech recognition end to end: `/v1/audio/transcriptions` and `/v1/speech_to_text` through
//! the gateway to the simulated `stt` vendor, with uploads in every accepted container.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TestGateway;
use serde_json::{Value, json};
use tollgate_billing::Amount;
use tollgate_sim::audio::duration_for;

const TRANSCRIPTIONS: &str = "/v1/audio/transcriptions";
const STT: &str = "/v1/speech_to_text";
const STT_ROUTE: &str = "POST /v1/speech_to_text";
const SENTENCE: &str = "Hello there. This is a round trip through the gateway.";

use common::{multipart as form, wav};

async fn post_form(
    gw: &TestGateway,
    path: &str,
    key: &str,
    fields: &[(&str, &str)],
    filename: &str,
    file: &[u8],
    extra: &[(&str, &str)],
) -> common::Reply {
    let (content_type, body) = form(fields, filename, file);
    let auth = format!("Bearer {key}");
    let mut headers = vec![
        ("authorization", auth.as_str()),
        ("content-type", content_type.as_str()),
    ];
    headers.extend_from_slice(extra);
    gw.request("POST", path, &headers, body).await
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/crates/probe/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

async fn charges(gw: &TestGateway, account: &str) -> Vec<(i64, Option<String>)> {
    gw.settled(account).await;
    gw.store
        .ledger(account)
        .await
        .unwrap()
        .into_iter()
        .skip(1)
        .map(|e| (-e.amount.nanos(), e.note))
        .collect()
}

#[tokio::test]
async fn a_synthesis_round_trip_returns_the_original_sentence_and_bills_seconds_rounded_up() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    // Synthesize through the gateway, then recognise what came back.
    let audio = gw
        .post_json("/v1/audio/speech", &key, &json!({"model": "tts-1", "input": SENTENCE, "voice": "alloy", "response_format": "wav"}))
        .await;
    assert_eq!(audio.status, 200);
    let r = post_form(
        &gw,
        TRANSCRIPTIONS,
        &key,
        &[("model", "whisper-1")],
        "speech.wav",
        &audio.body,
        &[],
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let body = r.json();
    assert_eq!(body["text"], SENTENCE);
    let truth = duration_for(SENTENCE, 1.0).as_secs_f64();
    assert!((body["duration"].as_f64().unwrap() - truth).abs() < 0.05);
    // 0.0001 per second, seconds rounded up: ceil(truth) × 100,000 nano-units.
    let seconds = truth.ceil() as i64;
    let charged = charges(&gw, &account).await;
    assert_eq!(charged.last().unwrap().0, seconds * 100_000);
    let report = gw.store.report(&account).await.unwrap();
    assert!(report.usage.iter().any(|u| u.model == "asr-1.0"));
}

#[tokio::test]
async fn every_response_format() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    let audio = wav(SENTENCE);
    let ask = |format: &'static str| {
        let (gw, key, audio) = (&gw, &key, &audio);
        async move {
            post_form(
                gw,
                TRANSCRIPTIONS,
                key,
                &[("model", "whisper-1"), ("response_format", format)],
                "a.wav",
                audio,
                &[],
            )
            .await
        }
    };
    let r = ask("verbose_json").await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["task"], "transcribe");
    assert_eq!(v["text"], SENTENCE);
    let segments = v["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 2);
    assert_eq!(segments[0]["speaker"], "S1");
    assert_eq!(v["n_speakers"], 1);
    assert!(segments[0]["end"].as_f64() <= segments[1]["start"].as_f64());
    assert!(v["usage"]["seconds"].is_u64());

    let r = ask("srt").await;
    assert_eq!(r.status, 200);
    let srt = String::from_utf8(r.body.to_vec()).unwrap();
    assert!(srt.starts_with("1\n00:00:00,"), "{srt}");
    assert!(srt.contains("\n\n2\n00:00:0"), "{srt}");
    assert!(srt.contains("Hello there."));

    let r = ask("vtt").await;
    assert_eq!(r.headers["content-type"], "text/vtt; charset=utf-8");
    let vtt = String::from_utf8(r.body.to_vec()).unwrap();
    assert!(vtt.starts_with("WEBVTT\n\n00:00:00."), "{vtt}");

    let r = ask("text").await;
    assert_eq!(
        String::from_utf8(r.body.to_vec()).unwrap().trim_end(),
        SENTENCE
    );
    assert!(
        r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
}

#[tokio::test]
async fn word_timestamps_are_per_word_in_english_and_per_character_in_chinese() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    let fields = [
        ("model", "whisper-1"),
        ("response_format", "verbose_json"),
        ("timestamp_granularities[]", "word"),
    ];
    let r = post_form(
        &gw,
        TRANSCRIPTIONS,
        &key,
        &fields,
        "a.wav",
        &wav("Hello there world."),
        &[],
    )
    .await;
    let words: Vec<String> = r.json()["words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["word"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(words, ["Hello", "there", "world"]);
    let r = post_form(
        &gw,
        TRANSCRIPTIONS,
        &key,
        &fields,
        "a.wav",
        &wav("你好。世界。"),
        &[("x-unused", "1")],
    )
    .await;
    let body = r.json();
    let words: Vec<&str> = body["words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["word"].as_str().unwrap())
        .collect();
    assert_eq!(words, ["你", "好", "世", "界"]);
    let starts: Vec<f64> = body["words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["start"].as_f64().unwrap())
        .collect();
    assert!(starts.windows(2).all(|p| p[0] < p[1]));
}

#[tokio::test]
async fn streamed_transcription_sends_deltas_then_done_with_integer_seconds() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    for format in ["json", "text"] {
        let r = post_form(
            &gw,
            TRANSCRIPTIONS,
            &key,
            &[
                ("model", "whisper-1"),
                ("stream", "true"),
                ("response_format", format),
            ],
            "a.wav",
            &wav(SENTENCE),
            &[],
        )
        .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.headers["content-type"], "text/event-stream");
        let events: Vec<Value> = String::from_utf8(r.body.to_vec())
            .unwrap()
            .split("\n\n")
            .filter_map(|f| f.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        let (done, deltas) = events.split_last().unwrap();
        assert!(deltas.len() >= 2);
        assert!(deltas.iter().all(|d| d["type"] == "transcript.text.delta"));
        assert_eq!(done["type"], "transcript.text.done");
        assert_eq!(done["text"], SENTENCE);
        assert_eq!(done["usage"]["type"], "duration");
        assert_eq!(
            done["usage"]["seconds"],
            duration_for(SENTENCE, 1.0).as_secs_f64().ceil() as u64
        );
        assert!(done["usage"]["input_tokens"].is_u64());
    }
}

#[tokio::test]
async fn all_eight_containers_are_accepted_with_their_duration() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    for (file, truth) in [
        ("tone.wav", 1.7),
        ("tone.aiff", 1.5),
        ("tone.flac", 2.5),
        ("tone_faststart.m4a", 2.5),
        ("tone_moov_end.m4a", 1.9),
        ("tone_vbr_xing.mp3", 2.3),
        ("tone_cbr_noxing.mp3", 3.1),
        ("tone.aac", 2.2),
        ("tone.opus", 2.7),
        ("tone.ogg", 2.1),
    ] {
        let r = post_form(
            &gw,
            TRANSCRIPTIONS,
            &key,
            &[("model", "whisper-1")],
            file,
            &fixture(file),
            &[],
        )
        .await;
        assert_eq!(
            r.status,
            200,
            "{file}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let duration = r.json()["duration"].as_f64().unwrap();
        assert!(
            (duration - truth).abs() < 0.1,
            "{file}: {duration} vs {truth}"
        );
    }
}

#[tokio::test]
async fn unusable_uploads_are_refused_before_the_upstream() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let raw_pcm: Vec<u8> = (0..32_000u32)
        .flat_map(|i| (((i as f32 * 0.05).sin() * 8000.0) as i16).to_le_bytes())
        .collect();
    let text = b"This is not audio at all, just a text file renamed to .mp3\n".repeat(50);
    // 501 s of 8 kHz mono 16-bit WAV: a real header and silence.
    let mut long = Vec::new();
    let data_len: u32 = 501 * 8000 * 2;
    long.extend_from_slice(b"RIFF");
    long.extend_from_slice(&(36 + data_len).to_le_bytes());
    long.extend_from_slice(b"WAVEfmt ");
    long.extend_from_slice(&[16, 0, 0, 0, 1, 0, 1, 0]);
    long.extend_from_slice(&8000u32.to_le_bytes());
    long.extend_from_slice(&16000u32.to_le_bytes());
    long.extend_from_slice(&[2, 0, 16, 0]);
    long.extend_from_slice(b"data");
    long.extend_from_slice(&data_len.to_le_bytes());
    long.resize(long.len() + data_len as usize, 0);
    let huge = vec![0u8; 51_000_000];

    for (name, file, status, fragment) in [
        ("raw.pcm", raw_pcm.as_slice(), 400, "accepted formats"),
        ("notes.mp3", text.as_slice(), 400, "accepted formats"),
        ("long.wav", long.as_slice(), 400, "split"),
        ("huge.wav", huge.as_slice(), 413, "50 MB"),
    ] {
        for path in [TRANSCRIPTIONS, STT] {
            let model = if path == STT { "asr-1.0" } else { "whisper-1" };
            let r = post_form(&gw, path, &key, &[("model", model)], name, file, &[]).await;
            assert_eq!(
                r.status,
                status,
                "{path} {name}: {}",
                String::from_utf8_lossy(&r.body)
            );
            let e = r.json();
            assert_eq!(e["error"]["param"], "file", "{e}");
            assert!(
                e["error"]["message"].as_str().unwrap().contains(fragment),
                "{e}"
            );
        }
    }
    let wav = wav("hi");
    let r = post_form(
        &gw,
        TRANSCRIPTIONS,
        &key,
        &[("response_format", "json")],
        "a.wav",
        &wav,
        &[],
    )
    .await;
    assert_eq!(
        (r.status, r.json()["error"]["param"].clone()),
        (400, json!("model"))
    );
    let r = post_form(
        &gw,
        TRANSCRIPTIONS,
        &key,
        &[
            ("model", "whisper-1"),
            ("stream", "true"),
            ("response_format", "srt"),
        ],
        "a.wav",
        &wav,
        &[],
    )
    .await;
    assert_eq!(
        (r.status, r.json()["error"]["param"].clone()),
        (400, json!("stream"))
    );
    let r = post_form(
        &gw,
        STT,
        &key,
        &[
            ("model", "asr-1.0"),
            ("stream", "true"),
            ("response_format", "verbose_json"),
        ],
        "a.wav",
        &wav,
        &[],
    )
    .await;
    assert_eq!(
        (r.status, r.json()["error"]["param"].clone()),
        (400, json!("stream"))
    );
    // No file part at all.
    let boundary = "b";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n--{boundary}--\r\n"
    );
    let auth = format!("Bearer {key}");
    let r = gw
        .request(
            "POST",
            TRANSCRIPTIONS,
            &[
                ("authorization", &auth),
                ("content-type", "multipart/form-data; boundary=b"),
            ],
            body,
        )
        .await;
    assert_eq!(
        (r.status, r.json()["error"]["param"].clone()),
        (400, json!("file"))
    );
    assert_eq!(gw.calls(STT_ROUTE), 0, "nothing reached the upstream");
    assert!(charges(&gw, &account).await.is_empty());
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(1_000_000_000)
    );
}

#[tokio::test]
async fn speech_to_text_is_relayed_in_its_own_format() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let audio = wav(SENTENCE);
    let r = post_form(
        &gw,
        STT,
        &key,
        &[("model", "asr-1.0")],
        "a.wav",
        &audio,
        &[("language", "en")],
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["text"], SENTENCE);
    let r = post_form(
        &gw,
        STT,
        &key,
        &[
            ("model", "asr-1.0"),
            ("response_format", "verbose_json"),
            ("timestamp_level", "word"),
        ],
        "a.wav",
        &audio,
        &[],
    )
    .await;
    let v = r.json();
    assert_eq!(v["n_speakers"], 1);
    assert_eq!(v["segments"][0]["speaker"], "0");
    assert!(v["segments"][0]["words"].as_array().unwrap().len() >= 2);
    for (format, start) in [("srt", "1\n00:00:00,"), ("vtt", "WEBVTT")] {
        let r = post_form(
            &gw,
            STT,
            &key,
            &[("model", "asr-1.0"), ("response_format", format)],
            "a.wav",
            &audio,
            &[],
        )
        .await;
        assert!(
            String::from_utf8(r.body.to_vec())
                .unwrap()
                .starts_with(start),
            "{format}"
        );
    }
    let r = post_form(
        &gw,
        STT,
        &key,
        &[("model", "asr-1.0"), ("stream", "true")],
        "a.wav",
        &audio,
        &[],
    )
    .await;
    let frames: Vec<Value> = String::from_utf8(r.body.to_vec())
        .unwrap()
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let last = frames.last().unwrap();
    assert_eq!(last["finish"], true);
    assert!(last["duration"].as_f64().unwrap() > 0.0);
    let text: String = frames
        .iter()
        .map(|f| f["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, SENTENCE);
    // Every mode was billed, srt and vtt on the probed duration.
    let seconds = duration_for(SENTENCE, 1.0).as_secs_f64().ceil() as i64;
    let charged = charges(&gw, &account).await;
    assert_eq!(charged.len(), 5);
    assert!(
        charged.iter().all(|(c, _)| *c == seconds * 100_000),
        "{charged:?}"
    );
}

#[tokio::test]
async fn form_fields_are_bounded_in_number_and_size() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    let audio = wav("hi");
    let names: Vec<String> = (0..40).map(|i| format!("extra{i}")).collect();
    let mut fields: Vec<(&str, &str)> = vec![("model", "whisper-1")];
    fields.extend(names.iter().map(|n| (n.as_str(), "x")));
    let r = post_form(&gw, TRANSCRIPTIONS, &key, &fields, "a.wav", &audio, &[]).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], "too_many_fields");
    let long = "p".repeat(70_000);
    let r = post_form(
        &gw,
        TRANSCRIPTIONS,
        &key,
        &[("model", "whisper-1"), ("prompt", &long)],
        "a.wav",
        &audio,
        &[],
    )
    .await;
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["error"]["param"], "prompt");
    assert_eq!(gw.calls(STT_ROUTE), 0);
}
