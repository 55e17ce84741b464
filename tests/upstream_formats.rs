//! The speech and recognition seams end to end: the four public audio endpoints served by
//! `openai-speech` and `openai-transcription` channels (the simulator speaking OpenAI's audio
//! API), a model mixing channel formats, and exact billing whatever the channel reports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::audio::decode;
use common::{TestGateway, multipart, wav};
use serde_json::{Value, json};
use tollgate_sim::KnobSettings;
use tollgate_sim::audio::duration_for;

const SENTENCE: &str = "Hello there. This is a round trip through the gateway.";

/// The test models plus OpenAI-format channels and models on them.
fn config() -> String {
    format!(
        r#"{}
[[channels]]
name = "oai-speech"
format = "openai-speech"
base_url = "sim"
first_byte_timeout_ms = 3000
idle_timeout_ms = 3000

[[channels]]
name = "oai-transcription"
format = "openai-transcription"
base_url = "sim"
first_byte_timeout_ms = 5000
idle_timeout_ms = 5000

[[channels]]
name = "dead-openai-speech"
format = "openai-speech"
base_url = "http://127.0.0.1:9"
connect_timeout_ms = 500

[models."kokoro"]
kind = "speech"
channels = ["oai-speech"]
price = {{ meter = "characters", per_million_characters = "100" }}

[models."whisper-local"]
kind = "transcription"
channels = ["oai-transcription"]
price = {{ meter = "audio_seconds", per_second = "0.0001" }}

[models."speech-mixed"]
kind = "speech"
channels = ["dead-openai-speech", "t2a"]
price = {{ meter = "characters", per_million_characters = "100" }}
"#,
        common::MODELS
    )
}

/// The charges of an account, oldest first: (nanos, note, estimated).
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

/// `per_million_characters = 100`: 100,000 nano-units a character.
fn speech_charge(text: &str) -> i64 {
    tollgate_billing::speech_characters(text) as i64 * 100_000
}

fn events(body: &[u8]) -> Vec<Value> {
    String::from_utf8(body.to_vec())
        .unwrap()
        .split("\n\n")
        .filter_map(|f| f.trim_start().strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

async fn post_form(
    gw: &TestGateway,
    path: &str,
    key: &str,
    fields: &[(&str, &str)],
    file: &[u8],
) -> common::Reply {
    let (content_type, body) = multipart(fields, "speech.wav", file);
    let auth = format!("Bearer {key}");
    gw.request(
        "POST",
        path,
        &[
            ("authorization", auth.as_str()),
            ("content-type", content_type.as_str()),
        ],
        body,
    )
    .await
}

#[tokio::test]
async fn openai_speech_channels_serve_both_speech_endpoints_billed_by_the_local_count() {
    let gw = TestGateway::with_config(&config()).await;
    let (account, key) = gw.account("1").await;
    let text = "Speech from an OpenAI-format engine, 你好.";

    // Streamed bytes, every format decodable.
    for format in ["mp3", "flac", "wav"] {
        let r = gw
            .post_json(
                "/v1/audio/speech",
                &key,
                &json!({"model": "kokoro", "input": text, "voice": "alloy", "response_format": format}),
            )
            .await;
        assert_eq!(
            r.status,
            200,
            "{format}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let decoded = decode(&r.body);
        let expected = duration_for(text, 1.0).as_secs_f64();
        assert!(
            (decoded.seconds - expected).abs() < 0.15,
            "{format}: {decoded:?}"
        );
    }
    // SSE: deltas, then done whose usage counts the billed characters.
    let r = gw
        .post_json(
            "/v1/audio/speech",
            &key,
            &json!({"model": "kokoro", "input": text, "voice": "alloy", "stream_format": "sse"}),
        )
        .await;
    assert_eq!(r.status, 200);
    let sse = events(&r.body);
    let (done, deltas) = sse.split_last().unwrap();
    assert!(deltas.len() >= 2 && deltas.iter().all(|d| d["type"] == "speech.audio.delta"));
    assert_eq!(
        done["usage"]["input_tokens"],
        tollgate_billing::speech_characters(text)
    );

    // t2a_v2, whole: the vendor's shape built from OpenAI-format audio.
    let t2a = json!({"model": "kokoro", "text": text, "voice_setting": {"voice_id": "alloy"},
        "audio_setting": {"format": "mp3"}});
    let r = gw.post_json("/v1/t2a_v2", &key, &t2a).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let body = r.json();
    assert_eq!(body["base_resp"]["status_code"], 0);
    assert_eq!(body["data"]["status"], 2);
    let audio = hex::decode(body["data"]["audio"].as_str().unwrap()).unwrap();
    decode(&audio);
    assert_eq!(
        body["extra_info"]["usage_characters"],
        tollgate_billing::speech_characters(text)
    );

    // t2a_v2, streamed: status-1 frames with hex audio, then status 2 with the usage.
    let mut streamed = t2a.clone();
    streamed["stream"] = json!(true);
    let r = gw.post_json("/v1/t2a_v2", &key, &streamed).await;
    assert_eq!(r.status, 200);
    let frames = events(&r.body);
    let (last, chunks) = frames.split_last().unwrap();
    assert!(chunks.len() >= 2 && chunks.iter().all(|f| f["data"]["status"] == 1));
    let audio: Vec<u8> = chunks
        .iter()
        .flat_map(|f| hex::decode(f["data"]["audio"].as_str().unwrap()).unwrap())
        .collect();
    decode(&audio);
    assert_eq!(last["data"]["status"], 2);
    assert_eq!(
        last["extra_info"]["usage_characters"],
        tollgate_billing::speech_characters(text)
    );

    // Six syntheses, each charged exactly the local count (CJK counting 2) — the billing rule
    // itself; the ledger says the upstream reported none.
    let charged = charges(&gw, &account).await;
    assert_eq!(charged.len(), 6, "{charged:?}");
    assert!(
        charged.iter().all(|c| c.0 == speech_charge(text) && c.2),
        "{charged:?}"
    );
    assert_eq!(gw.open_holds(&account).await, 0);
    assert!(gw.calls("POST /v1/audio/speech") >= 6);
    assert_eq!(gw.calls("POST /v1/t2a_v2"), 0);
    gw.stop().await;
}

#[tokio::test]
async fn openai_transcription_channels_serve_both_recognition_endpoints() {
    let gw = TestGateway::with_config(&config()).await;
    let (account, key) = gw.account("1").await;
    let file = wav(SENTENCE);
    let truth = duration_for(SENTENCE, 1.0).as_secs_f64();
    let seconds = truth.ceil() as i64;

    // Every compat response format from one verbose_json upstream answer.
    for format in ["json", "verbose_json", "text", "srt", "vtt"] {
        let mut fields = vec![("model", "whisper-local"), ("response_format", format)];
        if format == "verbose_json" {
            fields.push(("timestamp_granularities[]", "word"));
        }
        let r = post_form(&gw, "/v1/audio/transcriptions", &key, &fields, &file).await;
        assert_eq!(
            r.status,
            200,
            "{format}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let body = String::from_utf8(r.body.to_vec()).unwrap();
        assert!(
            body.contains("round trip through the gateway"),
            "{format}: {body}"
        );
        if format == "verbose_json" {
            let v: Value = serde_json::from_str(&body).unwrap();
            assert!((v["duration"].as_f64().unwrap() - truth).abs() < 0.05);
            assert_eq!(v["words"][0]["word"], "Hello");
            assert_eq!(v["usage"]["seconds"], seconds);
        }
    }
    // Streamed: deltas, then done with the upstream's seconds.
    let r = post_form(
        &gw,
        "/v1/audio/transcriptions",
        &key,
        &[("model", "whisper-local"), ("stream", "true")],
        &file,
    )
    .await;
    assert_eq!(r.status, 200);
    let sse = events(&r.body);
    let done = sse.last().unwrap();
    assert_eq!(done["type"], "transcript.text.done");
    assert_eq!(done["text"], SENTENCE);
    assert_eq!(done["usage"]["seconds"], seconds);

    // speech_to_text: its json, verbose_json and vtt built from the OpenAI-format answer.
    for format in ["json", "verbose_json", "vtt"] {
        let r = post_form(
            &gw,
            "/v1/speech_to_text",
            &key,
            &[("model", "whisper-local"), ("response_format", format)],
            &file,
        )
        .await;
        assert_eq!(
            r.status,
            200,
            "{format}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let body = String::from_utf8(r.body.to_vec()).unwrap();
        match format {
            "vtt" => assert!(body.starts_with("WEBVTT"), "{body}"),
            _ => {
                let v: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(v["text"], SENTENCE);
                assert!((v["duration"].as_f64().unwrap() - truth).abs() < 0.05);
                if format == "verbose_json" {
                    assert_eq!(v["segments"].as_array().unwrap().len(), 2);
                    assert_eq!(v["segments"][0]["speaker"], "0");
                }
            }
        }
    }
    // speech_to_text streamed: the vendor's delta frames, then its finish frame.
    let r = post_form(
        &gw,
        "/v1/speech_to_text",
        &key,
        &[("model", "whisper-local"), ("stream", "true")],
        &file,
    )
    .await;
    assert_eq!(r.status, 200);
    let frames = events(&r.body);
    let (finish, deltas) = frames.split_last().unwrap();
    let text: String = deltas
        .iter()
        .map(|f| f["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, SENTENCE);
    assert_eq!(finish["finish"], true);
    assert_eq!(finish["duration"], seconds as f64);

    // Ten recognitions, each charged the upstream's seconds rounded up. (An upstream that
    // reports none is billed the gateway's probe: tests/engines, whose whisper server's streams
    // carry no usage.)
    let charged = charges(&gw, &account).await;
    assert_eq!(charged.len(), 10, "{charged:?}");
    assert!(
        charged.iter().all(|c| c.0 == seconds * 100_000),
        "{charged:?}"
    );
    assert_eq!(gw.open_holds(&account).await, 0);
    assert_eq!(gw.calls("POST /v1/speech_to_text"), 0);
    gw.stop().await;
}

#[tokio::test]
async fn a_model_may_mix_channel_formats_and_fails_over_between_them() {
    let gw = TestGateway::with_config(&config()).await;
    let (account, key) = gw.account("1").await;
    let r = gw
        .post_json(
            "/v1/audio/speech",
            &key,
            &json!({"model": "speech-mixed", "input": SENTENCE, "voice": "alloy"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    decode(&r.body);
    // The dead openai-speech channel refused before doing work; the t2a channel answered.
    assert_eq!(gw.calls("POST /v1/t2a_v2"), 1);
    let charged = charges(&gw, &account).await;
    assert_eq!(charged.len(), 1);
    assert_eq!(charged[0].0, speech_charge(SENTENCE));
    gw.stop().await;
}

/// Why the catalog refuses the test configuration with `extra` appended.
fn catalog_refusal(extra: &str) -> String {
    let config = tollgate_settings::Config::parse(&format!("{}\n{extra}", config())).unwrap();
    tollgate_settings::catalog::Catalog::from_config(&config, Some("http://sim"), |_| None)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_model_cannot_list_a_channel_of_another_modality() {
    let error = catalog_refusal(
        "[models.\"confused\"]\nkind = \"speech\"\nchannels = [\"oai-transcription\"]\nprice = { meter = \"characters\", per_million_characters = \"1\" }\n",
    );
    assert!(
        error.contains("confused") && error.contains("oai-transcription"),
        "{error}"
    );
}

#[test]
fn a_model_priced_on_another_meter_than_its_endpoints_charge_by_is_refused() {
    for price in [
        r#"{ meter = "characters", per_million_characters = "1" }"#,
        r#"{ meter = "token_classes", per_million = { audio_in = "1" } }"#,
    ] {
        let error = catalog_refusal(&format!(
            "[models.\"mispriced\"]\nkind = \"transcription\"\nchannels = [\"oai-transcription\"]\nprice = {price}\n"
        ));
        assert!(
            error.contains("mispriced") && error.contains("charge by audio_seconds"),
            "{error}"
        );
    }
}

/// A model whose one priority level pools two channels (weights 3 and 1), the first with three
/// keys: calls split 3:1 between the channels and evenly between the keys; a key the upstream
/// refuses rests while the others carry on, and the channel stays healthy; `/metrics` shows it.
#[tokio::test]
async fn pools_split_calls_by_weight_and_rest_a_refused_key() {
    let config = format!(
        r#"{}
[[channels]]
name = "pool-a"
format = "openai-embeddings"
base_url = "sim"
api_key_env = ["POOL_A1", "POOL_A2", "POOL_A3"]
weight = 3

[[channels]]
name = "pool-b"
format = "openai-embeddings"
base_url = "sim"
api_key_env = "POOL_B"

[models."pooled-embeddings"]
kind = "embeddings"
channels = [["pool-a", "pool-b"], "secondary"]
upstream_model = "text-embedding-3-small"
price = {{ meter = "tokens", per_million_tokens = "0.02" }}
"#,
        common::MODELS
    );
    let gw =
        TestGateway::with_config_env(&config, |name| Some(name.to_lowercase().replace('_', "-")))
            .await;
    let (account, key) = gw.account("1").await;
    let embed = json!({"model": "pooled-embeddings", "input": "pooled"});
    for _ in 0..40 {
        let r = gw.post_json("/v1/embeddings", &key, &embed).await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    }
    let calls = |k: &str| gw.calls(&format!("key {k}"));
    assert_eq!(calls("pool-b"), 10, "a quarter to the weight-1 channel");
    for k in ["pool-a1", "pool-a2", "pool-a3"] {
        assert_eq!(calls(k), 10, "{k}: the weight-3 channel's keys take turns");
    }

    // The upstream revokes one key: it is refused once, then rests; no request fails.
    gw.set_knobs(KnobSettings {
        refuse_keys: vec!["pool-a2".into()],
        ..KnobSettings::default()
    });
    for _ in 0..12 {
        let r = gw.post_json("/v1/embeddings", &key, &embed).await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    }
    assert_eq!(calls("pool-a2"), 11, "refused once, then left alone");
    assert_eq!(calls("pool-a1") + calls("pool-a3"), 20 + 9);
    assert_eq!(calls("pool-b"), 13);
    assert_eq!(gw.calls("key sim"), 0, "the lower level was not needed");

    let metrics = gw.get("/metrics", &key).await;
    let text = String::from_utf8_lossy(&metrics.body);
    for line in [
        r#"tollgate_channel_keys{channel="pool-a",state="all"} 3"#,
        r#"tollgate_channel_keys{channel="pool-a",state="resting"} 1"#,
        r#"tollgate_channel_calls_total{channel="pool-a",outcome="success"} 39"#,
        r#"tollgate_channel_calls_total{channel="pool-a",outcome="failure"} 0"#,
        r#"tollgate_channel_circuit_state{channel="pool-a"} 0"#,
        r#"tollgate_channel_switched_off{channel="pool-b"} 0"#,
    ] {
        assert!(text.contains(line), "missing {line}");
    }
    assert!(text.contains(r#"tollgate_channel_latency_ms{channel="pool-b",quantile="0.5"}"#));
    assert_eq!(gw.open_holds(&account).await, 0);
    gw.stop().await;
}
