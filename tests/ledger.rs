//! The ledger engine end to end (DESIGN §4, `docs/architecture.md` "The ledger engine"):
//! upstreams that lie about usage are charged what the gateway can justify; clients that hang
//! up at random moments leave no hold open and the books balanced; credits and disables made by
//! another process bite within about a second.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{TestGateway, wav};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tollgate_billing::Amount;
use tollgate_sim::KnobSettings;

const CONFIG: &str = r#"
[[channels]]
name = "openai"
format = "openai-embeddings"
base_url = "sim"

[[channels]]
name = "t2a"
format = "t2a"
base_url = "sim"

[[channels]]
name = "stt"
format = "stt"
base_url = "sim"

[[channels]]
name = "genai"
format = "genai"
base_url = "sim"

[models."text-embedding-3-small"]
kind = "embeddings"
channels = ["openai"]
price = { meter = "tokens", per_million_tokens = "0.02" }

[models."speech-2.8-turbo"]
kind = "speech"
channels = ["t2a"]
price = { meter = "characters", per_million_characters = "60" }

[models."asr-1.0"]
kind = "transcription"
channels = ["stt"]
price = { meter = "audio_seconds", per_second = "0.0001" }

[models."gen-2.5-flash"]
kind = "native-text"
channels = ["genai"]
price = { meter = "text_tokens", input_per_million_tokens = "0.30", output_per_million_tokens = "2.50" }

[aliases]
"tts-1" = "speech-2.8-turbo"
"whisper-1" = "asr-1.0"
"#;

const SENTENCE: &str = "The quick brown fox jumps over the lazy dog."; // 44 characters

fn form(fields: &[(&str, &str)], file: &[u8]) -> (String, Vec<u8>) {
    common::multipart(fields, "a.wav", file)
}

/// The account's own invariants from the audit (the database may be shared with other tests).
async fn audit_account(gw: &TestGateway, account: &str) {
    let report = gw.store.audit().await.unwrap();
    let mine: Vec<_> = report
        .violations
        .iter()
        .filter(|v| v.subject.contains(account))
        .collect();
    assert!(mine.is_empty(), "violations: {mine:?}");
    let a = gw.store.find_account(account).await.unwrap();
    let ledger = gw.store.ledger(account).await.unwrap();
    let sum = ledger
        .iter()
        .fold(Amount::ZERO, |s, r| s.checked_add(r.amount).unwrap());
    assert_eq!(a.balance, sum, "balance = sum of the ledger");
}

fn anomalies(ledger: &[tollgate_store::LedgerEntry]) -> usize {
    ledger.iter().filter(|r| r.anomaly.is_some()).count()
}

#[tokio::test]
async fn an_upstream_that_inflates_usage_is_charged_what_the_gateway_can_justify() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("1").await;
    for figure in [10_000_000u64, u64::MAX] {
        gw.set_knobs(KnobSettings {
            report_usage: Some(figure),
            ..KnobSettings::default()
        });
        let before = gw.store.ledger(&account).await.unwrap().len();

        // Speech: the text has 44 characters; 10,000,000 are reported.
        let r = gw
            .post_json(
                "/v1/t2a_v2",
                &key,
                &json!({"model": "speech-2.8-turbo", "text": SENTENCE, "stream": false, "voice_setting": {"voice_id": "v"}}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        // Streamed speech through the OpenAI route.
        let r = gw
            .post_json(
                "/v1/audio/speech",
                &key,
                &json!({"model": "tts-1", "input": SENTENCE, "voice": "alloy", "response_format": "pcm"}),
            )
            .await;
        assert_eq!(r.status, 200);
        // Embeddings: a few tokens, reported as millions.
        let r = gw
            .post_json(
                "/v1/embeddings",
                &key,
                &json!({"model": "text-embedding-3-small", "input": "hello world"}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        // Recognition: a file the gateway probes at about 3 s; 10,000,000 s reported.
        let (content_type, body) = form(&[("model", "whisper-1")], &wav(SENTENCE));
        let auth = format!("Bearer {key}");
        let r = gw
            .request(
                "POST",
                "/v1/audio/transcriptions",
                &[("authorization", &auth), ("content-type", &content_type)],
                body,
            )
            .await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        // Native generation, whole and streamed.
        let prompt = json!({"contents": [{"role": "user", "parts": [{"text": "Why is the sky blue?"}]}],
                            "generationConfig": {"maxOutputTokens": 64}});
        let r = gw
            .request(
                "POST",
                "/v1beta/models/gen-2.5-flash:generateContent",
                &[
                    ("x-goog-api-key", &key),
                    ("content-type", "application/json"),
                ],
                serde_json::to_vec(&prompt).unwrap(),
            )
            .await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));

        gw.settled(&account).await;
        let ledger = gw.store.ledger(&account).await.unwrap();
        let new = &ledger[before..];
        assert_eq!(new.len(), 5, "{new:#?}");
        assert_eq!(
            anomalies(new),
            5,
            "every inflated figure was capped: {new:#?}"
        );
        for row in new {
            // Every charge stays within a small bound: never the millions reported.
            assert!(
                row.amount.checked_neg().unwrap() < "0.01".parse().unwrap(),
                "{row:?}"
            );
        }
        // Speech is capped at the text's own count: 44 characters at 60 per million.
        assert_eq!(new[0].amount, "-0.00264".parse().unwrap(), "{:?}", new[0]);
        audit_account(&gw, &account).await;
    }
    let metrics = gw.get("/metrics", "").await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains("tollgate_settlement_anomalies_total{model=\"speech-2.8-turbo\"} 4"),
        "{text}"
    );
    assert!(gw.balance(&account).await.is_positive());
}

/// Opens a raw connection, writes a request and hangs up after `after`.
async fn hang_up(gw: &TestGateway, request: Vec<u8>, after: Duration) {
    let mut stream = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    stream.write_all(&request).await.unwrap();
    tokio::time::sleep(after).await;
    drop(stream);
}

/// Sends `request` and hangs up as soon as the first byte of the answer arrives: the request
/// reached its handler whatever the machine's load.
async fn hang_up_after_first_byte(gw: &TestGateway, request: Vec<u8>) {
    let mut stream = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    stream.write_all(&request).await.unwrap();
    let mut first = [0u8; 1];
    let _ = tokio::time::timeout(Duration::from_secs(60), stream.read(&mut first)).await;
    drop(stream);
}

fn http_request(path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "POST {path} HTTP/1.1\r\nhost: t\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_hang_up_at_random_moments_leave_no_hold_and_balanced_books() {
    let gw = TestGateway::with_config(CONFIG).await;
    gw.set_knobs(KnobSettings {
        latency_ms: 30,
        frame_interval_ms: Some(10),
        ..KnobSettings::default()
    });
    let (account, key) = gw.account("5").await;
    let auth = format!("Bearer {key}");
    let audio = wav(SENTENCE);
    let (form_type, form_body) = form(&[("model", "whisper-1")], &audio);
    let (stream_type, stream_body) = form(&[("model", "whisper-1"), ("stream", "true")], &audio);
    let json_headers = [
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
    ];
    let requests: Vec<Vec<u8>> = vec![
        http_request(
            "/v1/embeddings",
            &json_headers,
            br#"{"model": "text-embedding-3-small", "input": ["hello", "world"]}"#,
        ),
        http_request(
            "/v1/audio/speech",
            &json_headers,
            serde_json::to_vec(&json!({"model": "tts-1", "input": SENTENCE.repeat(30), "voice": "alloy", "response_format": "pcm"})).unwrap().as_slice(),
        ),
        http_request(
            "/v1/t2a_v2",
            &json_headers,
            serde_json::to_vec(&json!({"model": "speech-2.8-turbo", "text": SENTENCE.repeat(30), "stream": true, "voice_setting": {"voice_id": "v"}})).unwrap().as_slice(),
        ),
        http_request(
            "/v1/audio/transcriptions",
            &[("authorization", auth.as_str()), ("content-type", form_type.as_str())],
            &form_body,
        ),
        http_request(
            "/v1/audio/transcriptions",
            &[("authorization", auth.as_str()), ("content-type", stream_type.as_str())],
            &stream_body,
        ),
        http_request(
            "/v1beta/models/gen-2.5-flash:streamGenerateContent?alt=sse",
            &[("x-goog-api-key", key.as_str()), ("content-type", "application/json")],
            br#"{"contents": [{"role": "user", "parts": [{"text": "Tell me a long story."}]}], "generationConfig": {"maxOutputTokens": 256}}"#,
        ),
        http_request(
            "/v1beta/models/gen-2.5-flash:generateContent",
            &[("x-goog-api-key", key.as_str()), ("content-type", "application/json")],
            br#"{"contents": [{"role": "user", "parts": [{"text": "Hi"}]}], "generationConfig": {"maxOutputTokens": 64}}"#,
        ),
    ];
    // A fixed pseudo-random walk over the kinds and the moments (2-300 ms), so a failure repeats.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut jobs = Vec::new();
    for i in 0..280 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let request = requests[i % requests.len()].clone();
        let after = Duration::from_millis(2 + seed % 300);
        jobs.push(async move { (request, after) });
    }
    let mut handles = Vec::new();
    for job in jobs {
        let (request, after) = job.await;
        let addr_gw = &gw;
        handles.push(hang_up(addr_gw, request, after));
    }
    futures_util::future::join_all(handles).await;
    // On a loaded machine every random moment above may come before the gateway read the
    // request; these leave only once the answer has begun, so some work is always billed.
    for request in &requests {
        hang_up_after_first_byte(&gw, request.clone()).await;
    }

    gw.settled(&account).await;
    assert_eq!(gw.state.ledger.open_holds_total(), 0);
    audit_account(&gw, &account).await;
    let a = gw.store.find_account(&account).await.unwrap();
    assert!(!a.balance.is_negative(), "{a:?}");
    assert_eq!(a.held, Amount::ZERO, "{a:?}");
    // The work the upstreams did was charged: some requests got far enough to be billed.
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert!(ledger.len() > 1, "nothing was charged: {ledger:?}");
    let partial = ledger
        .iter()
        .filter(|r| r.note.as_deref().is_some_and(|n| n.starts_with("partial")))
        .count();
    eprintln!(
        "{} charges after 280 hang-ups, {partial} of them partial",
        ledger.len() - 1
    );
}

#[tokio::test]
async fn credits_and_disables_made_elsewhere_bite_within_about_a_second() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("0").await;
    let embed = json!({"model": "text-embedding-3-small", "input": "hello"});
    let r = gw.post_json("/v1/embeddings", &key, &embed).await;
    assert_eq!(r.status, 429, "{}", String::from_utf8_lossy(&r.body));

    // Another process (the CLI) credits the account: spendable within about a second.
    gw.store
        .credit(&account, "1".parse().unwrap(), None)
        .await
        .unwrap();
    let credited = Instant::now();
    loop {
        let r = gw.post_json("/v1/embeddings", &key, &embed).await;
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 429);
        assert!(
            credited.elapsed() < Duration::from_secs(3),
            "the credit never arrived"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("credit spendable after {:?}", credited.elapsed());

    // …and disables it: refused within about a second, although its lease still has credit.
    gw.store.set_disabled(&account, true).await.unwrap();
    let disabled = Instant::now();
    loop {
        let r = gw.post_json("/v1/embeddings", &key, &embed).await;
        if r.status == 403 {
            break;
        }
        assert_eq!(r.status, 200);
        assert!(
            disabled.elapsed() < Duration::from_secs(3),
            "the disable never bit"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("disable effective after {:?}", disabled.elapsed());
    gw.settled(&account).await;
    audit_account(&gw, &account).await;
}

#[tokio::test]
async fn a_stopped_gateway_returns_its_leases_and_error_frames_say_what_was_charged() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("1").await;
    // A stream the upstream cuts after some audio: the error event names the charge.
    gw.set_knobs(KnobSettings {
        error_after_frames: Some(3),
        ..KnobSettings::default()
    });
    let r = gw
        .post_json(
            "/v1/audio/speech",
            &key,
            &json!({"model": "tts-1", "input": SENTENCE.repeat(6), "voice": "alloy", "stream_format": "sse"}),
        )
        .await;
    let text = String::from_utf8_lossy(&r.body);
    let error_line = text
        .lines()
        .find(|l| l.contains("\"error\""))
        .unwrap_or_else(|| panic!("no error event: {text}"));
    let event: Value = serde_json::from_str(error_line.trim_start_matches("data: ")).unwrap();
    let message = event["error"]["message"].as_str().unwrap();
    assert!(!message.contains("not charged"), "{message}");
    gw.settled(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charge = ledger.last().unwrap();
    let charged = charge.amount.checked_neg().unwrap();
    if charged.is_positive() {
        assert!(
            message.contains(&format!("{charged} was charged")),
            "{message} vs {charge:?}"
        );
    }

    // The account now has a lease; a clean stop gives it back.
    assert!(
        gw.store
            .find_account(&account)
            .await
            .unwrap()
            .leased
            .is_positive()
    );
    let state = gw.state.clone();
    let store = gw.store.clone();
    gw.stop().await;
    state.ledger.shutdown(Duration::from_secs(10)).await;
    let a = store.find_account(&account).await.unwrap();
    assert_eq!(a.leased, Amount::ZERO, "{a:?}");
}
