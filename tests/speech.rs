//! Speech synthesis end to end: `/v1/audio/speech` and `/v1/t2a_v2` through the gateway to the
//! simulated `t2a` vendor, with the audio decoded and the ledger checked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use common::TestGateway;
use common::audio::decode;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tollgate_billing::Amount;
use tollgate_sim::KnobSettings;
use tollgate_sim::audio::duration_for;

const SPEECH: &str = "/v1/audio/speech";
const T2A: &str = "/v1/t2a_v2";
const T2A_ROUTE: &str = "POST /v1/t2a_v2";
const TEXT: &str = "The quick brown fox jumps over the lazy dog.";

fn speech(input: &str, format: &str) -> Value {
    json!({"model": "speech-2.8-hd", "input": input, "voice": "alloy", "response_format": format})
}

fn t2a(text: &str, stream: bool) -> Value {
    json!({
        "model": "speech-2.8-hd", "text": text, "stream": stream,
        "voice_setting": {"voice_id": "English_Graceful_Lady", "speed": 1.0},
        "audio_setting": {"format": "mp3", "sample_rate": 32000},
        "stream_options": {"exclude_aggregated_audio": true},
        "pronunciation_dict": {"tone": ["fox/focks"]}, "language_boost": "English",
        "voice_modify": {"pitch": 0, "intensity": 10, "timbre": 0}
    })
}

/// Decoded length within 0.1 s of what the simulator makes for the text.
fn assert_plausible(seconds: f64, text: &str, speed: f64) {
    let expected = duration_for(text, speed).as_secs_f64();
    assert!(
        (seconds - expected).abs() < 0.1,
        "decoded {seconds} s, expected {expected} s"
    );
}

/// The charges of an account, oldest first, as (nanos, note).
async fn charges(gw: &TestGateway, account: &str) -> Vec<(i64, Option<String>, bool)> {
    gw.settled(account).await;
    gw.store
        .ledger(account)
        .await
        .unwrap()
        .into_iter()
        .skip(1)
        .map(|e| (-e.amount.nanos(), e.note, e.estimated))
        .collect()
}

#[tokio::test]
async fn every_format_is_real_audio_with_its_content_type() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    for (format, content_type, magic) in [
        ("mp3", "audio/mpeg", &b"ID3"[..]),
        ("wav", "audio/wav", &b"RIFF"[..]),
        ("flac", "audio/flac", &b"fLaC"[..]),
        ("opus", "audio/mpeg", &b"ID3"[..]),
        ("aac", "audio/mpeg", &b"ID3"[..]),
    ] {
        let r = gw.post_json(SPEECH, &key, &speech(TEXT, format)).await;
        assert_eq!(
            r.status,
            200,
            "{format}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.headers["content-type"], content_type, "{format}");
        assert!(r.body.starts_with(magic), "{format} magic");
        if format == "wav" {
            assert_eq!(&r.body[8..12], b"WAVE");
        }
        let decoded = decode(&r.body);
        assert_eq!(decoded.rate, 32_000, "{format}");
        assert_eq!(decoded.channels, 1);
        assert_plausible(decoded.seconds, TEXT, 1.0);
    }
    // pcm: raw 16-bit mono at 24 kHz, said in the headers.
    let r = gw.post_json(SPEECH, &key, &speech(TEXT, "pcm")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "audio/pcm");
    assert_eq!(r.headers["x-audio-sample-rate"], "24000");
    assert_eq!(r.headers["x-audio-encoding"], "s16le");
    let expected = (duration_for(TEXT, 1.0).as_secs_f64() * 24_000.0).round() as usize * 2;
    assert_eq!(r.body.len(), expected);
}

#[tokio::test]
async fn speed_changes_the_length_and_aliases_resolve() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let r = gw
        .post_json(
            SPEECH,
            &key,
            &json!({"model": "tts-1", "input": TEXT, "voice": "nova", "speed": 2.0}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_plausible(decode(&r.body).seconds, TEXT, 2.0);
    let r = gw
        .post_json(
            SPEECH,
            &key,
            &json!({"model": "tts-1-hd", "input": TEXT, "voice": "Wise_Woman"}),
        )
        .await;
    assert_eq!(r.status, 200);
    let report = gw.store.report(&account).await.unwrap();
    let models: Vec<_> = report.usage.iter().map(|u| u.model.as_str()).collect();
    assert_eq!(models, ["speech-2.8-hd", "speech-2.8-turbo"]);
}

#[tokio::test]
async fn mixed_chinese_and_english_is_billed_with_cjk_counting_two() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    // "你好, world" = 2 + 2 + 1 + 1 + 5 = 11 characters; speech-2.8-hd costs 100 per million
    // characters, 100,000 nano-units a character.
    let r = gw
        .post_json(SPEECH, &key, &speech("你好, world", "mp3"))
        .await;
    assert_eq!(r.status, 200);
    let r = gw.post_json(T2A, &key, &t2a("你好, world", false)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["extra_info"]["usage_characters"], 11);
    let charged = charges(&gw, &account).await;
    assert_eq!(
        charged,
        vec![(1_100_000, None, false), (1_100_000, None, false)]
    );
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(1_000_000_000 - 2_200_000)
    );
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(ledger[1].quantity.as_deref(), Some(r#"{"characters":11}"#));
}

#[tokio::test]
async fn every_limit_is_refused_before_the_upstream_naming_the_field() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let cases: Vec<(Value, &str)> = vec![
        (speech(&"a".repeat(10_001), "mp3"), "input"),
        (speech(&"a".repeat(2_001), "wav"), "input"),
        (speech(&"a".repeat(2_001), "flac"), "input"),
        (speech(&"a".repeat(2_001), "pcm"), "input"),
        (
            json!({"model": "tts-1", "input": "x", "voice": "alloy", "speed": 0.4}),
            "speed",
        ),
        (
            json!({"model": "tts-1", "input": "x", "voice": "alloy", "speed": 2.1}),
            "speed",
        ),
        (json!({"model": "tts-1", "input": "x"}), "voice"),
        (
            json!({"model": "tts-2", "input": "x", "voice": "alloy"}),
            "model",
        ),
        (
            json!({"model": "text-embedding-3-small", "input": "x", "voice": "alloy"}),
            "model",
        ),
        (
            json!({"model": "tts-1", "input": "", "voice": "alloy"}),
            "input",
        ),
        (
            json!({"model": "tts-1", "input": "x", "voice": "alloy", "response_format": "ogg"}),
            "response_format",
        ),
    ];
    for (body, field) in cases {
        let r = gw.post_json(SPEECH, &key, &body).await;
        assert_eq!(
            r.status,
            400,
            "{field}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.json()["error"]["param"], field);
    }
    // 10,000 and 2,000 are fine.
    assert_eq!(
        gw.post_json(SPEECH, &key, &speech(&"a".repeat(2_000), "wav"))
            .await
            .status,
        200
    );
    let t2a_cases: Vec<(Value, &str)> = vec![
        (
            json!({"model": "speech-2.8-hd", "text": "a".repeat(2_001), "voice_setting": {"voice_id": "v"}, "audio_setting": {"format": "flac"}}),
            "text",
        ),
        (
            json!({"model": "speech-2.8-hd", "text": "hi", "voice_setting": {"voice_id": "v"}, "output_format": "url"}),
            "output_format",
        ),
        (
            json!({"model": "speech-2.8-hd", "text": "hi", "voice_setting": {"voice_id": "v"}, "subtitle_enable": true}),
            "subtitle_enable",
        ),
        (
            json!({"model": "speech-2.8-hd", "text": "hi", "stream": true, "voice_setting": {"voice_id": "v"}, "audio_setting": {"format": "wav"}}),
            "audio_setting.format",
        ),
        (
            json!({"model": "speech-2.8-hd", "text": "hi"}),
            "voice_setting.voice_id",
        ),
    ];
    for (body, field) in t2a_cases {
        let r = gw.post_json(T2A, &key, &body).await;
        // Like the vendor: HTTP 200, the refusal in base_resp (docs/decisions.md).
        assert_eq!(
            r.status,
            200,
            "{field}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let e = r.json();
        assert_eq!(e["base_resp"]["status_code"], 2013);
        assert!(
            e["base_resp"]["status_msg"]
                .as_str()
                .unwrap()
                .contains(field.rsplit('.').next().unwrap()),
            "{e}"
        );
    }
    assert_eq!(
        gw.calls(T2A_ROUTE),
        1,
        "only the one valid request reached the upstream"
    );
    assert_eq!(gw.store.ledger(&account).await.unwrap().len(), 2);
}

#[tokio::test]
async fn t2a_errors_are_http_200_with_vendor_codes_like_the_vendor() {
    // wire-formats §3.2: the vendor's errors arrive as HTTP 200 with a non-zero
    // base_resp.status_code; clients that raise_for_status() must still get to read it.
    let gw = TestGateway::start().await;
    let r = gw.post_json(T2A, "tg-wrong", &t2a("hi", false)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["base_resp"]["status_code"], 1004);
    let (_, poor) = gw.account("0.000000001").await;
    let r = gw.post_json(T2A, &poor, &t2a("hello there", false)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["base_resp"]["status_code"], 1008);
    let (account, key) = gw.account("1").await;
    gw.set_knobs(KnobSettings {
        fail_status: Some(500),
        ..KnobSettings::default()
    });
    let r = gw.post_json(T2A, &key, &t2a("hello", true)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["base_resp"]["status_code"], 1000);
    gw.set_knobs(KnobSettings {
        fail_status: Some(429),
        ..KnobSettings::default()
    });
    let r = gw.post_json(T2A, &key, &t2a("hello", false)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["base_resp"]["status_code"], 1002);
    assert!(r.headers.contains_key("retry-after"));
    assert!(
        charges(&gw, &account).await.is_empty(),
        "failures before the first byte are released"
    );
    assert_eq!(gw.calls(T2A_ROUTE), 2);
    // HTTP's own refusals keep their status; /metrics counts every error as what it is.
    let auth = format!("Bearer {key}");
    let r = gw
        .request(
            "POST",
            T2A,
            &[
                ("authorization", auth.as_str()),
                ("content-type", "text/plain"),
            ],
            "x",
        )
        .await;
    assert_eq!(r.status, 415);
    let metrics = gw.state.metrics.render();
    assert!(
        metrics.contains("tollgate_requests_total{endpoint=\"t2a\",status=\"401\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn t2a_non_stream_relays_the_vendor_body() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    let r = gw.post_json(T2A, &key, &t2a(TEXT, false)).await;
    assert_eq!(r.status, 200);
    let body = r.json();
    assert_eq!(body["base_resp"]["status_code"], 0);
    assert_eq!(body["data"]["status"], 2);
    assert_eq!(body["extra_info"]["usage_characters"], TEXT.chars().count());
    let audio = hex::decode(body["data"]["audio"].as_str().unwrap()).unwrap();
    assert!(audio.starts_with(b"ID3"));
    assert_plausible(decode(&audio).seconds, TEXT, 1.0);
}

#[tokio::test]
async fn t2a_stream_relays_frames_ending_with_status_2_and_usage() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let r = gw.post_json(T2A, &key, &t2a(TEXT, true)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "text/event-stream");
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    let frames: Vec<Value> = text
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|f| serde_json::from_str(f).unwrap())
        .collect();
    assert!(frames.len() >= 5, "{} frames", frames.len());
    let last = frames.last().unwrap();
    assert_eq!(last["data"]["status"], 2);
    assert_eq!(last["extra_info"]["usage_characters"], 44);
    let mut audio = Vec::new();
    for f in &frames {
        audio.extend(hex::decode(f["data"]["audio"].as_str().unwrap()).unwrap());
    }
    assert_plausible(decode(&audio).seconds, TEXT, 1.0);
    assert_eq!(charges(&gw, &account).await, vec![(4_400_000, None, false)]);
}

#[tokio::test]
async fn sse_speech_events_carry_base64_audio_then_usage() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    let mut body = speech("你好, world", "mp3");
    body["stream_format"] = json!("sse");
    let r = gw.post_json(SPEECH, &key, &body).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "text/event-stream");
    let events: Vec<Value> = String::from_utf8(r.body.to_vec())
        .unwrap()
        .split("\n\n")
        .filter_map(|f| {
            f.strip_prefix("data: ")
                .map(|d| serde_json::from_str(d).unwrap())
        })
        .collect();
    let (done, deltas) = events.split_last().unwrap();
    assert_eq!(done["type"], "speech.audio.done");
    assert_eq!(done["usage"]["input_tokens"], 11);
    let mut audio = Vec::new();
    for d in deltas {
        assert_eq!(d["type"], "speech.audio.delta");
        audio.extend(
            base64::engine::general_purpose::STANDARD
                .decode(d["audio"].as_str().unwrap())
                .unwrap(),
        );
    }
    assert!(audio.starts_with(b"ID3"));
    assert_plausible(decode(&audio).seconds, "你好, world", 1.0);
}

#[tokio::test]
async fn audio_streams_before_the_synthesis_ends() {
    let gw = TestGateway::start().await;
    let (_, key) = gw.account("1").await;
    gw.set_knobs(KnobSettings {
        frame_interval_ms: Some(100),
        ..KnobSettings::default()
    });
    let started = Instant::now();
    let response = gw.open(SPEECH, &key, &speech(TEXT, "mp3")).await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut first_at = None;
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            first_at.get_or_insert(started.elapsed());
            bytes.extend_from_slice(&data);
        }
    }
    let ended_at = started.elapsed();
    let first_at = first_at.unwrap();
    // The simulator sends at least four frames 100 ms apart: the first bytes come long before
    // the last.
    assert!(
        ended_at - first_at >= Duration::from_millis(250),
        "first {first_at:?}, end {ended_at:?}"
    );
    assert_plausible(decode(&bytes).seconds, TEXT, 1.0);
}

#[tokio::test]
async fn an_upstream_cut_is_settled_on_what_was_delivered_and_marked() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    let long = TEXT.repeat(10);
    gw.set_knobs(KnobSettings {
        cut_after_frames: Some(2),
        frame_interval_ms: Some(1),
        ..KnobSettings::default()
    });
    // Binary audio: the body is aborted, not finished, so the client can tell.
    let response = gw.open(SPEECH, &key, &speech(&long, "mp3")).await;
    assert_eq!(response.status(), 200);
    assert!(
        response.into_body().collect().await.is_err(),
        "a cut stream must not look complete"
    );
    // t2a SSE: a last frame carries the error in base_resp.
    let r = gw.post_json(T2A, &key, &t2a(&long, true)).await;
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    let last: Value =
        serde_json::from_str(text.trim_end().rsplit("data: ").next().unwrap()).unwrap();
    assert_ne!(last["base_resp"]["status_code"], 0);
    let full = u64::try_from(long.chars().count()).unwrap() * 100_000;
    for (charge, note, estimated) in charges(&gw, &account).await {
        assert!(
            charge > 0 && (charge as u64) < full,
            "partial charge {charge} of {full}"
        );
        assert!(note.unwrap().starts_with("partial: upstream cut"));
        assert!(estimated);
    }
    assert_eq!(gw.store.report(&account).await.unwrap().ledger_rows, 3);
}

#[tokio::test]
async fn a_client_that_leaves_is_charged_for_the_share_delivered() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    gw.set_knobs(KnobSettings {
        frame_interval_ms: Some(50),
        ..KnobSettings::default()
    });
    let long = TEXT.repeat(10);
    let response = gw.open(SPEECH, &key, &speech(&long, "mp3")).await;
    let mut body = response.into_body();
    let _ = body.frame().await; // one piece, then hang up
    drop(body);
    let mut charged = Vec::new();
    for _ in 0..100 {
        charged = charges(&gw, &account).await;
        if !charged.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (charge, note, _) = charged.pop().expect("a charge row");
    let full = i64::try_from(long.chars().count()).unwrap() * 100_000;
    assert!(charge > 0 && charge < full, "{charge} of {full}");
    assert!(note.unwrap().starts_with("partial: client disconnected"));
}

#[tokio::test]
async fn an_error_before_the_first_frame_releases_the_hold_in_full() {
    let gw = TestGateway::start().await;
    let (account, key) = gw.account("1").await;
    gw.set_knobs(KnobSettings {
        error_after_frames: Some(0),
        ..KnobSettings::default()
    });
    let r = gw.post_json(SPEECH, &key, &speech(TEXT, "mp3")).await;
    assert_eq!(r.status, 502, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["error"]["type"], "server_error");
    assert!(charges(&gw, &account).await.is_empty());
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(1_000_000_000)
    );
}
