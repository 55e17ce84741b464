//! Video tasks end to end (docs/api.md §2.7, §2.8, §3, §4.6–4.9, §8 rules 4–6; DESIGN §5): a gateway
//! with its pollers over the simulated Ark and generic vendors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use common::{Reply, TestGateway};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tollgate_billing::{
    Amount, ClipTier, FrameSize, Tariff, Usage, clip_frame_size, clip_token_estimate_with_reference,
};
use tollgate_sim::KnobSettings;
use tollgate_store::{LedgerKind, Task, TaskState};

const CLIP: &str = "/api/v3/contents/generations/tasks";
const VIDEO: &str = "/v1/video/generations";
const CLIP_CREATES: &str = "POST /api/v3/contents/generations/tasks";
const VIDEO_CREATES: &str = "POST /v1/video/generations";

const CONFIG: &str = r#"
[[channels]]
name = "ark-CHANNEL"
format = "ark"
base_url = "sim"
first_byte_timeout_ms = 3000
idle_timeout_ms = 3000

[[channels]]
name = "video-CHANNEL"
format = "generic-video"
base_url = "sim"
first_byte_timeout_ms = 3000
idle_timeout_ms = 3000

[tasks]
first_poll_ms = 100
poll_interval_ms = 200
max_backoff_ms = 400
sweep_interval_seconds = 1
trusted_media_hosts = ["127.0.0.1"]
reference_probe_timeout_ms = 3000

[aliases]
"clip-best" = "clipgen-intl-2.5-260301"

[models."clipgen-cn-2.0-260128"]
kind = "clip-video"
channels = ["ark-CHANNEL"]
price = { meter = "video_tokens", per_million_tokens = "2.4" }

[models."clipgen-intl-2.5-260301"]
kind = "clip-video"
channels = ["ark-CHANNEL"]
price = { meter = "video_tokens", per_million_tokens = "3.0" }

[models."imagine-video"]
kind = "generic-video"
channels = ["video-CHANNEL"]
price = { meter = "video_seconds", per_second = "0.05" }

[models."horse-1.1-t2v"]
kind = "generic-video"
channels = ["video-CHANNEL"]
price = { meter = "video_seconds", per_second = "0.08" }

[models."wave-2-7-video"]
kind = "generic-video"
channels = ["video-CHANNEL"]
price = { meter = "video_seconds", per_second = "0.06" }

[models."wave-3-0-video"]
kind = "generic-video"
channels = ["video-CHANNEL"]
price = { meter = "video_seconds", per_second = "0.1" }

[models."omni"]
kind = "generic-video"
channels = ["video-CHANNEL"]
price = { meter = "video_seconds", per_second = "0.07" }
"#;

async fn gateway() -> TestGateway {
    gateway_with("").await
}

/// The test configuration with `extra` TOML appended (a later `[tasks]` key wins by being the
/// only one: callers pass whole extra sections).
async fn gateway_with(extra: &str) -> TestGateway {
    let config = if extra.is_empty() {
        CONFIG.to_owned()
    } else {
        // Replace the [tasks] section when the caller brings its own.
        let base = if extra.contains("[tasks]") {
            let start = CONFIG.find("[tasks]").unwrap();
            let end = CONFIG[start..].find("\n\n").unwrap() + start;
            format!("{}{}", &CONFIG[..start], &CONFIG[end..])
        } else {
            CONFIG.to_owned()
        };
        format!("{base}\n{extra}")
    };
    // Channel names of their own: on a shared PostgreSQL database another test's pollers
    // must not lease this test's tasks (they would ask their own simulator about them).
    let config = config.replace("CHANNEL", &common::unique());
    let gw = TestGateway::with_config(&config).await;
    gw.set_knobs(KnobSettings {
        task_queued_ms: Some(300),
        task_running_ms: Some(500),
        ..KnobSettings::default()
    });
    gw
}

fn text(prompt: &str) -> Value {
    json!({"type": "text", "text": prompt})
}

fn image(url: &str, role: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": url}, "role": role})
}

fn video(url: &str) -> Value {
    json!({"type": "video_url", "video_url": {"url": url}, "role": "reference_video"})
}

const PNG: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

async fn wait_terminal(gw: &TestGateway, id: &str) -> Task {
    let started = Instant::now();
    loop {
        let task = gw.store.task(id).await.unwrap().expect("task row");
        if task.state.is_terminal() {
            return task;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "task {id} still {:?}",
            task.state
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What `tokens` of a standard-tier clip cost at the test configuration's 2.4 per million.
fn standard_clip_charge(tokens: u64) -> Amount {
    price("2.4")
        .charge(&Usage::VideoTokens {
            tokens,
            tier: ClipTier::Standard,
        })
        .unwrap()
}

fn price(per_million: &str) -> Tariff {
    serde_json::from_value(json!({"meter": "video_tokens", "per_million_tokens": per_million}))
        .unwrap()
}

fn charges(ledger: &[tollgate_store::LedgerEntry]) -> Vec<Amount> {
    ledger
        .iter()
        .filter(|e| e.kind == LedgerKind::Charge)
        .map(|e| Amount::from_nanos(-e.amount.nanos()))
        .collect()
}

fn assert_ark_400(reply: &Reply, field: &str, what: &str) {
    assert_eq!(
        reply.status,
        400,
        "{what}: {}",
        String::from_utf8_lossy(&reply.body)
    );
    let error = &reply.json()["error"];
    let code = error["code"].as_str().unwrap();
    assert!(
        code.starts_with("InvalidParameter") || code == "MissingParameter",
        "{what}: {error}"
    );
    assert_eq!(error["param"], field, "{what}: {error}");
    assert!(!error["message"].as_str().unwrap().is_empty(), "{what}");
}

#[tokio::test]
async fn every_clip_content_rule_and_limit_is_refused_before_any_upstream_call() {
    let gw = gateway().await;
    let (account, key) = gw.account("10").await;
    let two = "clipgen-cn-2.0-260128";
    let two_five = "clip-best";
    let body = |model: &str, content: Vec<Value>| json!({"model": model, "content": content});
    let with = |mut b: Value, field: &str, value: Value| {
        b[field] = value;
        b
    };
    let refs = |n: usize| -> Vec<Value> {
        std::iter::once(text("x"))
            .chain((0..n).map(|_| image(PNG, "reference_image")))
            .collect()
    };
    let videos = |n: usize| -> Vec<Value> {
        std::iter::once(text("x"))
            .chain((0..n).map(|i| video(&format!("https://cdn.example.com/{i}.mp4"))))
            .collect()
    };
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "2.0 lasts at most 15 s",
            with(body(two, vec![text("x")]), "duration", json!(16)),
            "duration",
        ),
        (
            "2.5 lasts at most 30 s",
            with(body(two_five, vec![text("x")]), "duration", json!(31)),
            "duration",
        ),
        (
            "at least 4 s",
            with(body(two, vec![text("x")]), "duration", json!(3)),
            "duration",
        ),
        (
            "resolution is 480p or 720p",
            with(body(two, vec![text("x")]), "resolution", json!("1080p")),
            "resolution",
        ),
        (
            "ratio from the list",
            with(body(two, vec![text("x")]), "ratio", json!("5:4")),
            "ratio",
        ),
        ("content is required", body(two, vec![]), "content"),
        (
            "frames never with reference images",
            body(
                two,
                vec![
                    text("x"),
                    image(PNG, "first_frame"),
                    image(PNG, "reference_image"),
                ],
            ),
            "content[2].role",
        ),
        (
            "at most 30 reference images",
            body(two_five, refs(31)),
            "content[31]",
        ),
        (
            "2.0: at most 3 reference videos",
            body(two, videos(4)),
            "content[4]",
        ),
        (
            "2.5: at most 10 reference videos",
            body(two_five, videos(11)),
            "content[11]",
        ),
        (
            "video_url.url not empty",
            body(two, vec![text("x"), video("")]),
            "content[1].video_url.url",
        ),
        (
            "no private addresses",
            body(
                two,
                vec![text("x"), image("http://10.1.2.3/a.png", "first_frame")],
            ),
            "content[1].image_url.url",
        ),
        (
            "no link-local addresses",
            body(
                two,
                vec![
                    text("x"),
                    image("http://169.254.169.254/latest/meta-data", "first_frame"),
                ],
            ),
            "content[1].image_url.url",
        ),
        (
            "no loopback names",
            body(two, vec![text("x"), video("http://localhost/v.mp4")]),
            "content[1].video_url.url",
        ),
        (
            "no other schemes",
            body(two, vec![text("x"), video("ftp://cdn.example.com/v.mp4")]),
            "content[1].video_url.url",
        ),
        (
            "inline images are base64",
            body(
                two,
                vec![
                    text("x"),
                    image("data:image/png;base64,@@@@", "first_frame"),
                ],
            ),
            "content[1].image_url.url",
        ),
        (
            "unknown model",
            body("clipgen-cn-9.9-260128", vec![text("x")]),
            "model",
        ),
    ];
    for (what, request, field) in &cases {
        let reply = gw.post_json(CLIP, &key, request).await;
        assert_ark_400(&reply, field, what);
    }
    assert_eq!(gw.calls(CLIP_CREATES), 0, "nothing reached the upstream");
    assert_eq!(gw.balance(&account).await, "10".parse().unwrap());
    let (total, _) = gw
        .store
        .list_tasks(&account, &Default::default(), 0, 10)
        .await
        .unwrap();
    assert_eq!(total, 0, "no task row for a refused request");
}

#[tokio::test]
async fn every_generic_model_limit_is_refused_before_any_upstream_call() {
    // Every row of the table, the Sora-style ones on their openai-videos channel too.
    let gw = sora_gateway().await;
    let (account, key) = gw.account("10").await;
    let mut cases: Vec<(Value, &str)> = Vec::new();
    for model in tollgate_generic_tasks::MODELS {
        let base = json!({"model": model.id, "prompt": "waves"});
        let mut too_long = base.clone();
        too_long["duration"] = json!(model.duration.end() + 1);
        cases.push((too_long, "duration"));
        let mut too_short = base.clone();
        too_short["seconds"] = json!(0);
        cases.push((too_short, "duration"));
        for (param, supported, value) in [
            ("seed", model.supports.seed, json!(7)),
            (
                "negative_prompt",
                model.supports.negative_prompt,
                json!("blur"),
            ),
            ("sound", model.supports.sound, json!(true)),
            ("watermark", model.supports.watermark, json!(false)),
        ] {
            if !supported {
                let mut bad = base.clone();
                bad[param] = value;
                cases.push((bad, param));
            }
        }
        let mut ratio = base.clone();
        ratio["aspect_ratio"] = json!("7:3");
        cases.push((ratio, "aspect_ratio"));
    }
    cases.push((json!({"model": "omni"}), "prompt"));
    cases.push((json!({"model": "sora-9", "prompt": "x"}), "model"));
    for (request, field) in &cases {
        let reply = gw.post_json(VIDEO, &key, request).await;
        assert_eq!(
            reply.status,
            400,
            "{request}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        let error = &reply.json()["error"];
        assert_eq!(error["param"], *field, "{request}: {error}");
        assert_eq!(error["type"], "invalid_request_error");
    }
    assert_eq!(
        gw.calls(VIDEO_CREATES) + gw.calls("POST /v1/videos"),
        0,
        "nothing reached the upstream"
    );
    assert_eq!(gw.balance(&account).await, "10".parse().unwrap());
}

#[tokio::test]
async fn a_clip_is_held_at_its_estimate_charged_its_tokens_and_streamed_through_a_signed_link() {
    let gw = gateway().await;
    let (account, key) = gw.account("10").await;
    let request = json!({
        "model": "clipgen-cn-2.0-260128",
        "content": [text("A lighthouse in a storm")],
        "duration": 4, "resolution": "480p", "ratio": "16:9",
        // What the vendor SDK sends besides: explicit nulls and fields the spec does not list.
        "seed": null, "watermark": null, "callback_url": null, "return_last_frame": null,
        "service_tier": "default", "execution_expires_after": 172800, "camera_fixed": null,
        "tools": null, "omni_reference_task_type": null,
    });
    let reply = gw.post_json(CLIP, &key, &request).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let created = reply.json();
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("cgt-"), "our own id: {id}");
    assert_eq!(created["status"], "queued");

    // The hold is the estimate: 864 × 496 × 97 / 1024 tokens at 2.4 per million.
    let tokens = clip_token_estimate_with_reference(FrameSize::new(864, 496), 4, 0);
    assert_eq!(tokens, 40_595);
    let estimate = standard_clip_charge(tokens);
    assert_eq!(
        gw.store.find_account(&account).await.unwrap().held,
        estimate
    );

    let task = wait_terminal(&gw, &id).await;
    assert_eq!(task.state, TaskState::Succeeded);
    assert_ne!(
        task.upstream_id.as_deref(),
        Some(id.as_str()),
        "the upstream's id stays ours to know"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let record = gw.get(&format!("{CLIP}/{id}"), &key).await.json();
    assert_eq!(record["status"], "succeeded");
    let completion = record["usage"]["completion_tokens"].as_u64().unwrap();
    let charged = standard_clip_charge(completion);
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(
        charges(&ledger),
        vec![charged],
        "one charge, exactly the tokens"
    );
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(10_000_000_000 - charged.nanos())
    );
    assert_eq!(
        gw.store.find_account(&account).await.unwrap().held,
        Amount::ZERO
    );

    // The link is the gateway's, signed, and streams the upstream's MP4.
    let link = record["content"]["video_url"].as_str().unwrap();
    let path = link.split_once(&gw.addr.to_string()).unwrap().1;
    assert!(
        path.starts_with(&format!("/v1/media/{id}.mp4?expires=")),
        "{link}"
    );
    let file = gw.request("GET", path, &[], "").await;
    assert_eq!(file.status, 200);
    assert_eq!(&file.body[4..8], b"ftyp", "an MP4");
    let seconds = mp4_seconds(&file.body);
    assert!((seconds - 4.0).abs() < 0.1, "{seconds} s");
    let part = gw
        .request("GET", path, &[("range", "bytes=0-99")], "")
        .await;
    assert_eq!(part.status, 206);
    assert_eq!(part.body.len(), 100);
    assert_eq!(&part.body[..], &file.body[..100]);
    // Altered links are refused.
    let forged = path.replace("signature=", "signature=00");
    assert_eq!(gw.request("GET", &forged, &[], "").await.status, 403);
    let other = path.replace(&id, "cgt-1-0000000000");
    assert_eq!(gw.request("GET", &other, &[], "").await.status, 403);
    let later = path.replace("expires=", "expires=9");
    assert_eq!(gw.request("GET", &later, &[], "").await.status, 403);

    // Issue 42: a video its owner deleted is gone for every link handed out to it too.
    let deleted = gw
        .request(
            "DELETE",
            &format!("{CLIP}/{id}"),
            &[("authorization", &format!("Bearer {key}"))],
            "",
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    assert_eq!(gw.request("GET", path, &[], "").await.status, 404);
}

/// `duration / timescale` of the file's `mvhd` (version 0, as the simulator writes).
fn mp4_seconds(file: &[u8]) -> f64 {
    let at = file.windows(4).position(|w| w == b"mvhd").unwrap() + 4;
    let word = |i: usize| u32::from_be_bytes(file[i..i + 4].try_into().unwrap());
    assert_eq!(file[at], 0);
    f64::from(word(at + 16)) / f64::from(word(at + 12))
}

#[tokio::test]
async fn reference_videos_are_measured_checked_held_and_billed_at_the_reference_tier() {
    let gw = gateway().await;
    let (account, key) = gw.account("100").await;
    // Two real clips of 10 s and 8 s, served by the simulator, become reference videos.
    let mut urls = Vec::new();
    for duration in [10, 8] {
        let body =
            json!({"model": "clipgen-cn-2.0-260128", "content": [text("x")], "duration": duration});
        let id = gw.post_json(CLIP, &key, &body).await.json()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let task = wait_terminal(&gw, &id).await;
        urls.push(
            task.result.unwrap()["video_url"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let creates = gw.calls(CLIP_CREATES);

    // 2.0 allows 15 s of reference video in total: 18 s is refused, naming the rule.
    let too_long = json!({"model": "clipgen-cn-2.0-260128",
        "content": [text("x"), video(&urls[0]), video(&urls[1])]});
    let reply = gw.post_json(CLIP, &key, &too_long).await;
    assert_ark_400(&reply, "content", "2.0 reference videos over 15 s");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("15 s")
    );
    assert_eq!(
        gw.calls(CLIP_CREATES),
        creates,
        "refused before the upstream"
    );

    // 2.5 allows 30 s: held for the series' maximum at 60 % of the token price — the videos'
    // headers are the client's word — and billed what the vendor measured when it fetched
    // them (10.04 + 8.04 s, rounded up to 19).
    let before = gw.store.find_account(&account).await.unwrap();
    let ok = json!({"model": "clip-best", "duration": 5, "resolution": "720p", "ratio": "16:9",
        "content": [text("x"), video(&urls[0]), video(&urls[1])]});
    let reply = gw.post_json(CLIP, &key, &ok).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let id = reply.json()["id"].as_str().unwrap().to_owned();
    let size = clip_frame_size("720p", "16:9").unwrap();
    let tariff = price("3.0");
    let held = tariff
        .charge(&Usage::VideoTokens {
            tokens: clip_token_estimate_with_reference(size, 5, 30),
            tier: ClipTier::ReferenceVideo,
        })
        .unwrap();
    let during = gw.store.find_account(&account).await.unwrap();
    assert_eq!(during.held.nanos() - before.held.nanos(), held.nanos());
    let task = wait_terminal(&gw, &id).await;
    assert_eq!(task.state, TaskState::Succeeded);
    let record = &task.result.unwrap()["record"];
    let completion = record["usage"]["completion_tokens"].as_u64().unwrap();
    assert_eq!(completion, clip_token_estimate_with_reference(size, 5, 19));
    let charged = tariff
        .charge(&Usage::VideoTokens {
            tokens: completion,
            tier: ClipTier::ReferenceVideo,
        })
        .unwrap();
    // 3.0 per million tokens is 3 000 nano-units a token; 60 % of it is 1 800.
    assert_eq!(charged.nanos() as u64, completion * 1_800);
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(charges(&ledger).last(), Some(&charged));

    // A reference video whose length cannot be read: the hold covers the series' maximum.
    let unreadable = json!({"model": "clip-best", "duration": 5, "resolution": "720p", "ratio": "16:9",
        "content": [text("x"), video(&format!("{}/_sim/videos/none.mp4", gw.sim.base_url()))]});
    let before = gw.store.find_account(&account).await.unwrap().held;
    let reply = gw.post_json(CLIP, &key, &unreadable).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let max_hold = tariff
        .charge(&Usage::VideoTokens {
            tokens: clip_token_estimate_with_reference(size, 5, 30),
            tier: ClipTier::ReferenceVideo,
        })
        .unwrap();
    let during = gw.store.find_account(&account).await.unwrap().held;
    assert_eq!(during.nanos() - before.nanos(), max_hold.nanos());
    let id = reply.json()["id"].as_str().unwrap().to_owned();
    wait_terminal(&gw, &id).await;
    assert_eq!(
        gw.store.find_account(&account).await.unwrap().held,
        Amount::ZERO
    );
}

/// Issue 22 item 1, the client who lies about what the gateway measures: a reference video
/// whose host answers the gateway's ranged probe with a header claiming 0.5 s and the vendor
/// with the real 14 s clip. The hold is the series' maximum (15 s for 2.0) whatever the header
/// says, and the charge is what the vendor counted — before, the hold (and so the most a
/// settlement could charge) was sized from the lie: 28 % of the work's price.
#[tokio::test]
async fn a_reference_video_that_lies_to_the_probe_is_held_at_the_series_maximum() {
    let gw = gateway().await;
    let (account, key) = gw.account("100").await;
    let clip = Bytes::from(
        tollgate_sim::video::render_mp4(&tollgate_sim::video::VideoSpec {
            seconds: 14.0,
            aspect_ratio: "16:9".into(),
            seed: 7,
        })
        .unwrap(),
    );
    let lie = Bytes::from(common::mp4_claiming(&clip, 0.5));
    let (served, probes) = (clip.clone(), std::sync::Arc::new(AtomicU64::new(0)));
    let seen = probes.clone();
    let host = common::file_server(move |parts| {
        // The gateway's probe asks for the head of the file; the vendor fetches it whole.
        if parts.headers.contains_key(http::header::RANGE) {
            seen.fetch_add(1, Ordering::Relaxed);
            (200, lie.clone())
        } else {
            (200, served.clone())
        }
    })
    .await;
    let url = format!("{host}/ref.mp4");
    let before = gw.store.find_account(&account).await.unwrap();
    let reply = gw
        .post_json(
            CLIP,
            &key,
            &json!({"model": "clipgen-cn-2.0-260128", "duration": 4, "resolution": "480p",
                "ratio": "16:9", "content": [text("a lighthouse"), video(&url)]}),
        )
        .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert!(
        probes.load(Ordering::Relaxed) >= 1,
        "the gateway probed the header"
    );
    let size = clip_frame_size("480p", "16:9").unwrap();
    let tariff = price("2.4");
    let held = tariff
        .charge(&Usage::VideoTokens {
            tokens: clip_token_estimate_with_reference(size, 4, 15),
            tier: ClipTier::ReferenceVideo,
        })
        .unwrap();
    let during = gw.store.find_account(&account).await.unwrap();
    assert_eq!(
        during.held.nanos() - before.held.nanos(),
        held.nanos(),
        "held for the series' maximum, not the 0.5 s the header claims"
    );
    let id = reply.json()["id"].as_str().unwrap().to_owned();
    let task = wait_terminal(&gw, &id).await;
    assert_eq!(task.state, TaskState::Succeeded);
    let completion = task.result.unwrap()["record"]["usage"]["completion_tokens"]
        .as_u64()
        .unwrap();
    let seconds = mp4_seconds(&clip).ceil() as u32;
    assert_eq!(
        completion,
        clip_token_estimate_with_reference(size, 4, seconds),
        "the vendor counted the real clip"
    );
    let charged = tariff
        .charge(&Usage::VideoTokens {
            tokens: completion,
            tier: ClipTier::ReferenceVideo,
        })
        .unwrap();
    let ledger = gw.store.ledger(&account).await.unwrap();
    let row = ledger
        .iter()
        .rev()
        .find(|r| r.kind == LedgerKind::Charge)
        .unwrap();
    assert_eq!(
        row.amount.checked_neg(),
        Some(charged),
        "charged what the vendor counted: {row:?}"
    );
    assert_eq!(row.anomaly, None, "nothing capped: {row:?}");
    eprintln!(
        "a 14 s reference claiming 0.5 s: held {held}, charged {charged} ({seconds} s counted)"
    );
}

#[tokio::test]
async fn polls_are_owner_only_and_at_most_once_a_second() {
    let gw = gateway().await;
    // Both tasks still run while the fast polls below are refused.
    gw.set_knobs(KnobSettings {
        task_queued_ms: Some(300),
        task_running_ms: Some(4_000),
        ..KnobSettings::default()
    });
    let (_, owner) = gw.account("10").await;
    let (_, stranger) = gw.account("10").await;
    let clip = gw
        .post_json(
            CLIP,
            &owner,
            &json!({"model": "clipgen-cn-2.0-260128", "content": [text("x")]}),
        )
        .await
        .json();
    let generic = gw
        .post_json(VIDEO, &owner, &json!({"model": "omni", "prompt": "x"}))
        .await
        .json();
    assert_eq!(generic["task_id"], generic["id"]);
    assert_eq!(
        (generic["object"].as_str(), generic["progress"].as_u64()),
        (Some("video"), Some(0))
    );
    for (path, family) in [
        (format!("{CLIP}/{}", clip["id"].as_str().unwrap()), "ark"),
        (
            format!("{VIDEO}/{}", generic["id"].as_str().unwrap()),
            "openai",
        ),
    ] {
        let theirs = gw.get(&path, &stranger).await;
        assert_eq!(theirs.status, 404, "{family}: another account's task");
        let first = gw.get(&path, &owner).await;
        assert_eq!(first.status, 200, "{family}");
        let second = gw.get(&path, &owner).await;
        assert_eq!(second.status, 429, "{family}: polled again within a second");
        assert_eq!(second.headers["retry-after"], "1");
        assert!(second.json()["error"]["message"].is_string());
        tokio::time::sleep(Duration::from_millis(1050)).await;
        assert_eq!(
            gw.get(&path, &owner).await.status,
            200,
            "{family}: a second later"
        );
    }
    // Issue 42 item 13: the OpenAI SDK's `create_and_poll` returns a completed video and the
    // `retrieve` that follows at once was refused 429. A finished task costs nothing to read:
    // every family's reads of it are served, however close together.
    for (path, id) in [
        (
            format!("{CLIP}/{}", clip["id"].as_str().unwrap()),
            &clip["id"],
        ),
        (
            format!("{VIDEO}/{}", generic["id"].as_str().unwrap()),
            &generic["id"],
        ),
    ] {
        wait_terminal(&gw, id.as_str().unwrap()).await;
        for _ in 0..3 {
            let reply = gw.get(&path, &owner).await;
            assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        }
        assert_eq!(gw.get(&path, &stranger).await.status, 404);
    }
    // A clip id is not a generic task, nor the other way round.
    let crossed = format!("{VIDEO}/{}", clip["id"].as_str().unwrap());
    assert_eq!(gw.get(&crossed, &owner).await.status, 404);
    assert_eq!(
        gw.get(&format!("{CLIP}/cgt-0-none"), &owner).await.status,
        404
    );
}

#[tokio::test]
async fn failed_cancelled_and_expired_tasks_are_refunded_in_full() {
    let gw = gateway().await;
    let (account, key) = gw.account("10").await;
    let fail = gw
        .post_json(
            CLIP,
            &key,
            &json!({"model": "clipgen-cn-2.0-260128", "content": [text("x [fail]")]}),
        )
        .await
        .json();
    let expire = gw
        .post_json(
            CLIP,
            &key,
            &json!({"model": "clipgen-cn-2.0-260128", "content": [text("x [expire]")]}),
        )
        .await
        .json();
    let generic = gw
        .post_json(
            VIDEO,
            &key,
            &json!({"model": "wave-3-0-video", "prompt": "x [fail]", "seconds": "12"}),
        )
        .await
        .json();
    // Deleting a queued task cancels it upstream and refunds it.
    let queued = gw
        .post_json(
            CLIP,
            &key,
            &json!({"model": "clipgen-cn-2.0-260128", "content": [text("x")]}),
        )
        .await
        .json();
    let queued_id = queued["id"].as_str().unwrap();
    let auth = format!("Bearer {key}");
    let deleted = gw
        .request(
            "DELETE",
            &format!("{CLIP}/{queued_id}"),
            &[("authorization", &auth)],
            "",
        )
        .await;
    assert_eq!(
        deleted.status,
        200,
        "{}",
        String::from_utf8_lossy(&deleted.body)
    );

    for (id, status) in [
        (fail["id"].as_str().unwrap(), "failed"),
        (expire["id"].as_str().unwrap(), "expired"),
        (queued_id, "cancelled"),
    ] {
        let task = wait_terminal(&gw, id).await;
        assert_eq!(task.state, TaskState::Failed, "{id}");
        let record = gw.get(&format!("{CLIP}/{id}"), &key).await.json();
        assert_eq!(record["status"], status);
        assert!(record["error"]["code"].is_string() && record["error"]["message"].is_string());
        assert!(record.get("content").is_none() && record.get("usage").is_none());
    }
    let generic_id = generic["id"].as_str().unwrap();
    wait_terminal(&gw, generic_id).await;
    let record = gw.get(&format!("{VIDEO}/{generic_id}"), &key).await.json();
    assert_eq!(record["status"], "failed");
    assert!(record["error"]["code"].is_string());
    assert!(record.get("url").is_none());

    assert_eq!(
        gw.balance(&account).await,
        "10".parse().unwrap(),
        "every hold released"
    );
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert!(charges(&ledger).is_empty(), "no charge row: {ledger:?}");
    assert_eq!(
        gw.store.find_account(&account).await.unwrap().held,
        Amount::ZERO
    );

    // A running task cannot be cancelled; a finished one leaves the caller's view.
    let slow = gw
        .post_json(
            CLIP,
            &key,
            &json!({"model": "clipgen-cn-2.0-260128", "content": [text("x")]}),
        )
        .await
        .json();
    let slow_id = slow["id"].as_str().unwrap().to_owned();
    let started = Instant::now();
    while gw.store.task(&slow_id).await.unwrap().unwrap().state != TaskState::Running {
        assert!(started.elapsed() < Duration::from_secs(10), "never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = gw
        .request(
            "DELETE",
            &format!("{CLIP}/{slow_id}"),
            &[("authorization", &auth)],
            "",
        )
        .await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("running")
    );
    wait_terminal(&gw, &slow_id).await;
    let removed = gw
        .request(
            "DELETE",
            &format!("{CLIP}/{slow_id}"),
            &[("authorization", &auth)],
            "",
        )
        .await;
    assert_eq!(removed.status, 200);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(gw.get(&format!("{CLIP}/{slow_id}"), &key).await.status, 404);
    let listed = gw.get(CLIP, &key).await.json();
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["id"] != slow_id.as_str())
    );
    assert_eq!(
        charges(&gw.store.ledger(&account).await.unwrap()).len(),
        1,
        "removal keeps the charge"
    );
}

/// Issue 22 item 12: a DELETE of a task the gateway still thinks queued, when it has already
/// moved on upstream. The gateway's pollers are slow here (first poll after 30 s), so its row
/// says queued while the simulated vendor runs the task and then finishes it. A running task is
/// refused like any running task, and one that finished is neither removed upstream nor
/// refunded: the answer says it succeeded first and is charged — before, the DELETE went
/// through (the vendor's DELETE of a finished task removes it) and the row was refunded for work
/// that was done.
#[tokio::test]
async fn a_delete_that_loses_the_race_says_what_happened_and_refunds_nothing() {
    let gw = gateway_with(
        "[tasks]\nfirst_poll_ms = 30000\npoll_interval_ms = 30000\nmax_backoff_ms = 30000\n\
         sweep_interval_seconds = 1\ntrusted_media_hosts = [\"127.0.0.1\"]\n",
    )
    .await;
    gw.set_knobs(KnobSettings {
        task_queued_ms: Some(200),
        task_running_ms: Some(600),
        ..KnobSettings::default()
    });
    let (account, key) = gw.account("10").await;
    let auth = format!("Bearer {key}");
    let create = || async {
        gw.post_json(
            CLIP,
            &key,
            &json!({"model": "clipgen-cn-2.0-260128", "content": [text("x")]}),
        )
        .await
        .json()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let delete = |id: String| {
        let auth = auth.clone();
        let gw = &gw;
        async move {
            gw.request(
                "DELETE",
                &format!("{CLIP}/{id}"),
                &[("authorization", &auth)],
                "",
            )
            .await
        }
    };

    // Running upstream, queued in the gateway's row: refused like a running task.
    let running = create().await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        gw.store.task(&running).await.unwrap().unwrap().state,
        TaskState::Queued,
        "the row still says queued"
    );
    let reply = delete(running.clone()).await;
    assert_eq!(
        reply.status,
        400,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let error = reply.json()["error"].clone();
    assert_eq!(error["code"], "InvalidParameter.task_id", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("running"),
        "{error}"
    );

    // Finished upstream, queued in the row: not removed, not refunded; the answer says so.
    let finished = create().await;
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let held = gw.store.find_account(&account).await.unwrap().held;
    let reply = delete(finished.clone()).await;
    assert_eq!(
        reply.status,
        400,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let message = reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("succeeded") && message.contains("charged"),
        "{message}"
    );
    assert_eq!(
        gw.store.find_account(&account).await.unwrap().held,
        held,
        "nothing was refunded"
    );
    let row = gw.store.task(&finished).await.unwrap().unwrap();
    assert_eq!(
        row.state,
        TaskState::Queued,
        "left for the poller to settle"
    );
    assert_eq!(
        gw.calls("DELETE /api/v3/contents/generations/tasks/{id}"),
        0
    );
}

#[tokio::test]
async fn an_upstream_refusal_or_a_short_balance_costs_nothing_and_leaves_no_task() {
    let gw = gateway().await;
    let (account, key) = gw.account("10").await;
    gw.set_knobs(KnobSettings {
        fail_status: Some(500),
        fail_times: Some(1),
        ..KnobSettings::default()
    });
    let reply = gw
        .post_json(
            CLIP,
            &key,
            &json!({"model": "clipgen-cn-2.0-260128", "content": [text("x")]}),
        )
        .await;
    assert_eq!(
        reply.status,
        502,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_eq!(gw.balance(&account).await, "10".parse().unwrap());
    assert_eq!(
        gw.store.find_account(&account).await.unwrap().held,
        Amount::ZERO
    );
    assert_eq!(
        gw.get(CLIP, &key).await.json()["total"],
        0,
        "no visible task"
    );

    // 720p 16:9, 30 s on 2.5 holds 2 627 400 tokens × 3.0 / 1e6 = 7.88; 1 does not cover it.
    let (poor, poor_key) = gw.account("1").await;
    let calls = gw.calls(CLIP_CREATES);
    let reply = gw
        .post_json(
            CLIP,
            &poor_key,
            &json!({"model": "clip-best", "content": [text("x")], "duration": 30}),
        )
        .await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.json()["error"]["code"], "QuotaExceeded");
    assert_eq!(gw.calls(CLIP_CREATES), calls, "refused before the upstream");
    assert_eq!(gw.balance(&poor).await, "1".parse().unwrap());
}

#[tokio::test]
async fn polls_back_off_through_upstream_errors_and_still_settle_once() {
    let gw = gateway().await;
    let (account, key) = gw.account("10").await;
    let id = gw
        .post_json(
            VIDEO,
            &key,
            &json!({"model": "imagine-video", "prompt": "x", "duration": 3}),
        )
        .await
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The next three upstream calls (polls) fail with 503.
    gw.set_knobs(KnobSettings {
        task_queued_ms: Some(300),
        task_running_ms: Some(500),
        fail_status: Some(503),
        fail_times: Some(3),
        ..KnobSettings::default()
    });
    let task = wait_terminal(&gw, &id).await;
    assert_eq!(task.state, TaskState::Succeeded);
    let charged: Amount = "0.15".parse().unwrap(); // 3 s × 0.05
    assert_eq!(
        charges(&gw.store.ledger(&account).await.unwrap()),
        vec![charged]
    );
    assert!(
        gw.calls("GET /v1/video/generations/{id}") >= 4,
        "the failed polls were retried"
    );
}

#[tokio::test]
async fn the_sweeper_fails_and_refunds_tasks_past_their_deadline() {
    let gw = gateway_with(
        "[tasks]\nfirst_poll_ms = 100\npoll_interval_ms = 200\nsweep_interval_seconds = 1\ndeadline_seconds = 1\n",
    )
    .await;
    gw.set_knobs(KnobSettings {
        task_queued_ms: Some(100),
        task_running_ms: Some(60_000),
        ..KnobSettings::default()
    });
    let (account, key) = gw.account("10").await;
    let id = gw
        .post_json(VIDEO, &key, &json!({"model": "omni", "prompt": "x"}))
        .await
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let task = wait_terminal(&gw, &id).await;
    assert_eq!(task.state, TaskState::Failed);
    assert_eq!(task.error.unwrap()["code"], "expired");
    assert_eq!(gw.balance(&account).await, "10".parse().unwrap());
}

#[tokio::test]
async fn direct_media_mode_hands_out_the_upstream_url() {
    let gw = gateway_with("[media]\nmode = \"direct\"\n").await;
    let (_, key) = gw.account("10").await;
    let id = gw
        .post_json(
            VIDEO,
            &key,
            &json!({"model": "wave-2-7-video", "prompt": "x", "seconds": 2}),
        )
        .await
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_terminal(&gw, &id).await;
    let record = gw.get(&format!("{VIDEO}/{id}"), &key).await.json();
    assert_eq!(record["status"], "completed");
    assert_eq!(record["progress"], 100);
    let url = record["url"].as_str().unwrap();
    assert!(url.starts_with(&gw.sim.base_url()), "{url}");
    assert_eq!(
        record["video_url"], url,
        "wave models also return video_url"
    );
}

#[tokio::test]
async fn inline_prompt_flags_become_the_fields_billed_and_sent_and_a_contradiction_is_refused() {
    let gw = gateway().await;
    let (account, key) = gw.account("10").await;
    // The vendor's own "weak-validation" style: settings appended to the prompt.
    let request = json!({
        "model": "clipgen-cn-2.0-260128",
        "content": [text("A lighthouse in a storm --rs 480p --rt 16:9 --dur 7 --seed 11")],
    });
    let reply = gw.post_json(CLIP, &key, &request).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let id = reply.json()["id"].as_str().unwrap().to_owned();
    // Held for 7 s at 480p 16:9, not for the defaults (5 s at 720p adaptive).
    let tokens = clip_token_estimate_with_reference(FrameSize::new(864, 496), 7, 0);
    let estimate = standard_clip_charge(tokens);
    assert_eq!(
        gw.store.find_account(&account).await.unwrap().held,
        estimate
    );
    let task = wait_terminal(&gw, &id).await;
    assert_eq!(task.state, TaskState::Succeeded);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let record = gw.get(&format!("{CLIP}/{id}"), &key).await.json();
    assert_eq!(record["resolution"], "480p", "{record}");
    assert_eq!(record["ratio"], "16:9", "{record}");
    assert_eq!(record["duration"], 7, "{record}");
    assert_eq!(record["seed"], 11, "{record}");

    // A flag that contradicts the structured field: 400 in Ark's shape, nothing held or sent.
    let before = gw.calls(CLIP_CREATES);
    let reply = gw
        .post_json(
            CLIP,
            &key,
            &json!({
                "model": "clipgen-cn-2.0-260128",
                "content": [text("Waves --dur 9")],
                "duration": 5,
            }),
        )
        .await;
    assert_eq!(reply.status, 400);
    let error = reply.json()["error"].clone();
    assert_eq!(error["code"], "InvalidParameter.content[0].text", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("duration"),
        "{error}"
    );
    assert_eq!(gw.calls(CLIP_CREATES), before);
    gw.stop().await;
}

/// Issue 42 item 3. The adversary: a client on `/v1/videos` who asks a clip model for 12 s in
/// the prompt's inline flags (the vendor obeys the text) while the body asks for nothing — the
/// hold used to cover the defaults, 5 s, about 81 % of the clip unbilled. The flags are lifted
/// as on the clip API: the hold covers what the prompt asks, the upstream gets the fields and
/// the text without them, and a flag that contradicts `seconds` or `size` (or a remix's) is
/// refused naming `prompt`, before anything is held or sent.
#[tokio::test]
async fn inline_prompt_flags_on_v1_videos_are_lifted_held_and_a_contradiction_is_refused() {
    const VIDEOS: &str = "/v1/videos";
    let gw = gateway().await;
    let (account, key) = gw.account("10").await;
    let reply = gw
        .post_json(
            VIDEOS,
            &key,
            &json!({"model": "clipgen-cn-2.0-260128",
                    "prompt": "A lighthouse in a storm --dur 12 --rs 720p --rt 16:9"}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let video = reply.json();
    assert_eq!(video["seconds"], "12", "{video}");
    assert_eq!(video["size"], "1280x720", "{video}");
    let frame = clip_frame_size("720p", "16:9").unwrap();
    let held = standard_clip_charge(clip_token_estimate_with_reference(frame, 12, 0));
    assert_eq!(gw.store.find_account(&account).await.unwrap().held, held);
    // The vendor (the simulator obeys inline flags as its vendor does) made 12 s: charged in
    // full, nothing capped.
    let id = video["id"].as_str().unwrap().to_owned();
    assert_eq!(wait_terminal(&gw, &id).await.state, TaskState::Succeeded);
    assert_eq!(task_charges(&gw, &account, &id).await, vec![held]);

    let before = gw.calls(CLIP_CREATES);
    let balance = gw.balance(&account).await;
    for (body, says) in [
        (
            json!({"model": "clipgen-cn-2.0-260128", "prompt": "Waves --dur 12", "seconds": "5"}),
            "seconds",
        ),
        (
            json!({"model": "clipgen-cn-2.0-260128", "prompt": "Waves --rs 480p", "size": "1280x720"}),
            "size",
        ),
        (
            json!({"model": "clipgen-cn-2.0-260128", "prompt": "Waves --dur 99"}),
            "99",
        ),
        (
            json!({"model": "clipgen-cn-2.0-260128", "prompt": "Waves --dur seven"}),
            "seven",
        ),
    ] {
        let reply = gw.post_json(VIDEOS, &key, &body).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        let error = reply.json()["error"].clone();
        assert_eq!(error["param"], "prompt", "{error}");
        assert!(error["message"].as_str().unwrap().contains(says), "{error}");
    }
    // A remix keeps its original's seconds: a new prompt that asks for others is refused.
    let reply = gw
        .post_json(
            &format!("{VIDEOS}/{id}/remix"),
            &key,
            &json!({"prompt": "The same, longer --dur 15"}),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(reply.json()["error"]["param"], "prompt", "{}", reply.text());
    assert_eq!(
        gw.calls(CLIP_CREATES),
        before,
        "nothing reached the upstream"
    );
    assert_eq!(gw.balance(&account).await, balance, "nothing held");
    gw.stop().await;
}

#[tokio::test]
async fn media_hosts_that_do_not_resolve_are_refused_unless_the_operator_opens_them() {
    let body = json!({
        "model": "clipgen-cn-2.0-260128",
        "content": [
            text("A lighthouse"),
            image("https://no-such-host.invalid/first.png", "first_frame"),
        ],
    });
    // Open (`media_dns_fail_closed = false`): the upstream judges the URL it cannot fetch
    // either.
    let gw = gateway_with(
        "[tasks]\nfirst_poll_ms = 100\npoll_interval_ms = 200\nmedia_dns_fail_closed = false\n",
    )
    .await;
    let (_, key) = gw.account("10").await;
    let reply = gw.post_json(CLIP, &key, &body).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    gw.stop().await;

    // Closed (issue 22 item 9: the default): refused before anything is held or sent.
    let gw = gateway().await;
    let (account, key) = gw.account("10").await;
    let before = gw.calls(CLIP_CREATES);
    let reply = gw.post_json(CLIP, &key, &body).await;
    assert_eq!(
        reply.status,
        400,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let error = reply.json()["error"].clone();
    assert_eq!(error["param"], "content[1].image_url.url", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("could not be resolved"),
        "{error}"
    );
    assert_eq!(gw.calls(CLIP_CREATES), before);
    assert_eq!(
        gw.store.find_account(&account).await.unwrap().held,
        Amount::ZERO
    );
    gw.stop().await;
}

/// The operator's side of tasks (issue 13): every account's tasks listed, one inspected with its
/// history, a queued one cancelled and refunded through the admin API, and the change recorded.
#[tokio::test]
async fn an_operator_lists_inspects_and_cancels_tasks_through_the_admin_api() {
    let gw = gateway().await;
    let (_, admin) = gw
        .store
        .create_admin_token(&format!("ops-{}", common::unique()), false)
        .await
        .unwrap();
    let auth = format!("Bearer {admin}");
    let call = |method: &'static str, path: String| {
        let auth = auth.clone();
        let gw = &gw;
        async move {
            gw.request(method, &path, &[("authorization", auth.as_str())], "")
                .await
        }
    };
    let (account, key) = gw.account("10").await;
    let request = json!({
        "model": "clipgen-cn-2.0-260128",
        "content": [text("A lighthouse in a storm")],
        "duration": 4, "resolution": "480p", "ratio": "16:9",
    });
    // One task runs to the end; the other stays queued long enough to be cancelled.
    let done = gw.post_json(CLIP, &key, &request).await.json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_for_state(&gw, &done, TaskState::Succeeded).await;
    gw.set_knobs(KnobSettings {
        task_queued_ms: Some(60_000),
        ..KnobSettings::default()
    });
    let queued = gw.post_json(CLIP, &key, &request).await.json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_for_state(&gw, &queued, TaskState::Queued).await;
    let before = gw.balance(&account).await;

    let r = call("GET", format!("/admin/v1/tasks?account={account}")).await;
    assert_eq!(r.status, 200);
    let ids: Vec<String> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, [queued.clone(), done.clone()], "newest first");
    let r = call(
        "GET",
        format!("/admin/v1/tasks?account={account}&state=succeeded"),
    )
    .await;
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 1);

    // The finished task's history: submitted, polled, ended with its charge.
    let r = call("GET", format!("/admin/v1/tasks/{done}")).await;
    let history = r.json()["history"].as_array().unwrap().clone();
    assert!(history.len() >= 2, "{history:?}");
    assert_eq!(history[0]["state"], "queued");
    assert!(
        history[0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("submitted to ")
    );
    assert_eq!(history.last().unwrap()["state"], "succeeded");
    assert!(
        history.last().unwrap()["detail"]
            .as_str()
            .unwrap()
            .starts_with("charged ")
    );

    // Cancelled: failed, the hold released, the balance back where it was before the hold.
    let held = gw.store.report(&account).await.unwrap().account.held;
    assert!(held.is_positive());
    let r = call("POST", format!("/admin/v1/tasks/{queued}/cancel")).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["state"], "failed");
    assert_eq!(r.json()["error"]["code"], "cancelled");
    let after = gw.store.report(&account).await.unwrap().account;
    assert_eq!(after.held, Amount::ZERO);
    assert_eq!(
        after.balance, before,
        "nothing was charged for the cancelled task"
    );
    // The client sees it cancelled, in its vendor's word; a second cancel is a conflict.
    let reply = gw.get(&format!("{CLIP}/{queued}"), &key).await;
    assert_eq!(reply.json()["status"], "cancelled");
    let r = call("POST", format!("/admin/v1/tasks/{queued}/cancel")).await;
    assert_eq!(r.status, 409);
    let r = call("GET", format!("/admin/v1/changes?target={queued}")).await;
    assert_eq!(r.json()["data"][0]["action"], "task.cancel");
    // The database may be shared with other tests (PostgreSQL), some of which write rows the
    // gateway never would (a store test's charge without its usage record): this account's
    // violations, and any that name no account (tasks, holds, leases) — not the count of those
    // a rule did not list.
    let audit = gw.store.audit().await.unwrap();
    let mine: Vec<_> = audit
        .violations
        .iter()
        .filter(|v| {
            v.subject.contains(&account) || !(v.subject.contains("acct_") || v.subject == "more")
        })
        .collect();
    assert!(mine.is_empty(), "{mine:?}");
    gw.stop().await;
}

async fn wait_for_state(gw: &TestGateway, id: &str, state: TaskState) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let task = gw.store.task(id).await.unwrap().unwrap();
        if task.state == state {
            return;
        }
        assert!(Instant::now() < deadline, "{id} stayed {:?}", task.state);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `/v1/videos` (docs/api.md §2.8.1): its own tasks on the generic models, `seconds` and `size`
/// checked against the model's table before any hold, polled with a second's grace hair,
/// charged exactly, streamed with `Range`, listed by cursor, deleted once finished.
#[tokio::test]
async fn openai_videos_are_their_own_tasks_checked_polled_charged_and_deleted() {
    const VIDEOS: &str = "/v1/videos";
    let gw = gateway().await;
    let (account, owner) = gw.account("10").await;
    let (_, stranger) = gw.account("10").await;
    let auth = format!("Bearer {owner}");

    // What the model cannot make is refused by the client's field, before any call or hold.
    for (body, param) in [
        (
            json!({"model": "wave-3-0-video", "prompt": "x", "size": "1280x720"}),
            "size",
        ),
        (
            json!({"model": "wave-3-0-video", "prompt": "x", "seconds": "31"}),
            "seconds",
        ),
        (
            json!({"model": "omni", "prompt": "x", "duration": 4}),
            "duration",
        ),
        (
            json!({"model": "omni", "prompt": "x", "input_reference": {"image_url": "https://a.example/x.png"}}),
            "input_reference",
        ),
        (json!({"model": "no-such-video", "prompt": "x"}), "model"),
    ] {
        let reply = gw.post_json(VIDEOS, &owner, &body).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        assert_eq!(reply.json()["error"]["param"], param, "{}", reply.text());
    }
    // The clip family's models too: their sizes and seconds, refused the same way.
    for (body, param) in [
        (
            json!({"model": "clipgen-cn-2.0-260128", "prompt": "x", "size": "1792x1024"}),
            "size",
        ),
        (
            json!({"model": "clipgen-cn-2.0-260128", "prompt": "x", "seconds": "20"}),
            "seconds",
        ),
    ] {
        let reply = gw.post_json(VIDEOS, &owner, &body).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        assert_eq!(reply.json()["error"]["param"], param, "{}", reply.text());
    }
    assert_eq!(gw.calls(VIDEO_CREATES) + gw.calls(CLIP_CREATES), 0);
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(10_000_000_000)
    );

    let created = gw
        .post_json(
            VIDEOS,
            &owner,
            &json!({"model": "horse-1.1-t2v", "prompt": "A horse.", "seconds": "3", "size": "720x1280"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.text());
    let video = created.json();
    let id = video["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (
            video["object"].as_str(),
            video["status"].as_str(),
            video["seconds"].as_str(),
            video["size"].as_str()
        ),
        (Some("video"), Some("queued"), Some("3"), Some("720x1280"))
    );
    // A generic task's id is not a video, nor the other way round; a stranger sees neither.
    let generic = gw
        .post_json(VIDEO, &owner, &json!({"model": "omni", "prompt": "x"}))
        .await
        .json();
    let item = format!("{VIDEOS}/{id}");
    assert_eq!(gw.get(&format!("{VIDEO}/{id}"), &owner).await.status, 404);
    assert_eq!(
        gw.get(
            &format!("{VIDEOS}/{}", generic["id"].as_str().unwrap()),
            &owner
        )
        .await
        .status,
        404
    );
    assert_eq!(gw.get(&item, &stranger).await.status, 404);

    // Polled: told to wait a second; a poll a hair under it is served, a quicker one is not.
    let first = gw.get(&item, &owner).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.headers["openai-poll-after-ms"], "1000");
    assert_eq!(gw.get(&item, &owner).await.status, 429);
    tokio::time::sleep(Duration::from_millis(950)).await;
    assert_eq!(
        gw.get(&item, &owner).await.status,
        200,
        "950 ms: within the grace"
    );

    // Finished: charged exactly 3 s at 0.08, once; streamed, a range of it too.
    let task = wait_terminal(&gw, &id).await;
    assert_eq!(task.state, TaskState::Succeeded);
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged: Vec<Amount> = ledger
        .iter()
        .filter(|r| r.kind == LedgerKind::Charge && r.task_id.as_deref() == Some(id.as_str()))
        .map(|r| r.amount)
        .collect();
    assert_eq!(charged, [Amount::from_nanos(-240_000_000)]);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let done = gw.get(&item, &owner).await.json();
    assert_eq!(
        (done["status"].as_str(), done["progress"].as_u64()),
        (Some("completed"), Some(100))
    );
    assert!(done["expires_at"].as_i64() > done["completed_at"].as_i64());
    let file = gw.get(&format!("{item}/content"), &owner).await;
    assert_eq!(file.status, 200);
    assert!((mp4_seconds(&file.body) - 3.0).abs() < 0.1);
    let part = gw
        .request(
            "GET",
            &format!("{item}/content"),
            &[("authorization", &auth), ("range", "bytes=0-99")],
            Bytes::new(),
        )
        .await;
    assert_eq!((part.status, part.body.len()), (206, 100));
    assert_eq!(part.body[..], file.body[..100]);
    assert_eq!(
        gw.get(&format!("{item}/content"), &stranger).await.status,
        404
    );
    let thumb = gw
        .get(&format!("{item}/content?variant=thumbnail"), &owner)
        .await;
    assert_eq!(thumb.json()["error"]["param"], "variant");

    // A remix: the original's model, seconds and size with a new prompt, billed as a new video.
    let remix = gw
        .post_json(
            &format!("{item}/remix"),
            &owner,
            &json!({"prompt": "The same horse, at night."}),
        )
        .await;
    assert_eq!(remix.status, 200, "{}", remix.text());
    let remix = remix.json();
    assert_eq!(
        (
            remix["remixed_from_video_id"].as_str(),
            remix["seconds"].as_str(),
            remix["size"].as_str()
        ),
        (Some(id.as_str()), Some("3"), Some("720x1280"))
    );
    let remix_id = remix["id"].as_str().unwrap().to_owned();
    let bad = gw
        .post_json(
            &format!("{item}/remix"),
            &owner,
            &json!({"prompt": "x", "seconds": "8"}),
        )
        .await;
    assert_eq!(bad.json()["error"]["param"], "seconds");
    let early = gw
        .post_json(
            &format!("{VIDEOS}/{remix_id}/remix"),
            &owner,
            &json!({"prompt": "x"}),
        )
        .await;
    assert_eq!(
        early.status,
        409,
        "a remix of a video still generating: {}",
        early.text()
    );
    assert_eq!(
        gw.post_json(&format!("{item}/remix"), &stranger, &json!({"prompt": "x"}))
            .await
            .status,
        404
    );
    assert_eq!(
        wait_terminal(&gw, &remix_id).await.state,
        TaskState::Succeeded
    );
    let charges: Vec<Amount> = gw
        .store
        .ledger(&account)
        .await
        .unwrap()
        .iter()
        .filter(|r| r.kind == LedgerKind::Charge && r.task_id.as_deref() == Some(remix_id.as_str()))
        .map(|r| r.amount)
        .collect();
    assert_eq!(charges, [Amount::from_nanos(-240_000_000)]);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let read = gw.get(&format!("{VIDEOS}/{remix_id}"), &owner).await.json();
    assert_eq!(read["remixed_from_video_id"], id.as_str());

    // Listed newest first, by cursor; deleted once, then gone.
    let second = gw
        .post_json(
            VIDEOS,
            &owner,
            &json!({"model": "omni", "prompt": "Another."}),
        )
        .await
        .json();
    let second = second["id"].as_str().unwrap().to_owned();
    let page = gw.get(&format!("{VIDEOS}?limit=1"), &owner).await.json();
    assert_eq!(
        (page["data"][0]["id"].as_str(), page["has_more"].as_bool()),
        (Some(second.as_str()), Some(true))
    );
    let next = gw
        .get(&format!("{VIDEOS}?limit=1&after={second}"), &owner)
        .await
        .json();
    assert_eq!(
        (next["data"][0]["id"].as_str(), next["has_more"].as_bool()),
        (Some(remix_id.as_str()), Some(true))
    );
    let last = gw
        .get(&format!("{VIDEOS}?after={remix_id}"), &owner)
        .await
        .json();
    assert_eq!(
        (last["data"][0]["id"].as_str(), last["has_more"].as_bool()),
        (Some(id.as_str()), Some(false))
    );
    assert_eq!(gw.get(VIDEOS, &stranger).await.json()["data"], json!([]));
    let refused = gw
        .request(
            "DELETE",
            &format!("{VIDEOS}/{second}"),
            &[("authorization", &auth)],
            Bytes::new(),
        )
        .await;
    assert_eq!(refused.status, 409, "still generating: {}", refused.text());
    let deleted = gw
        .request("DELETE", &item, &[("authorization", &auth)], Bytes::new())
        .await;
    assert_eq!(
        deleted.json(),
        json!({"id": id, "object": "video.deleted", "deleted": true})
    );
    assert_eq!(
        gw.request("DELETE", &item, &[("authorization", &auth)], Bytes::new())
            .await
            .status,
        404
    );
    assert_eq!(gw.get(&format!("{item}/content"), &owner).await.status, 404);
    wait_terminal(&gw, &second).await;
    wait_terminal(&gw, generic["id"].as_str().unwrap()).await;

    // A clip model: held at its token estimate, charged the tokens it made, once.
    let clip = gw
        .post_json(
            VIDEOS,
            &owner,
            &json!({"model": "clipgen-cn-2.0-260128", "prompt": "A clip.", "seconds": "5", "size": "1280x720"}),
        )
        .await;
    assert_eq!(clip.status, 200, "{}", clip.text());
    let clip = clip.json();
    assert_eq!(
        (clip["seconds"].as_str(), clip["size"].as_str()),
        (Some("5"), Some("1280x720"))
    );
    let clip_id = clip["id"].as_str().unwrap().to_owned();
    assert_eq!(
        gw.get(&format!("{CLIP}/{clip_id}"), &owner).await.status,
        404
    );
    assert_eq!(
        wait_terminal(&gw, &clip_id).await.state,
        TaskState::Succeeded
    );
    let charged: Vec<i64> = gw
        .store
        .ledger(&account)
        .await
        .unwrap()
        .iter()
        .filter(|r| r.kind == LedgerKind::Charge && r.task_id.as_deref() == Some(clip_id.as_str()))
        .map(|r| r.amount.nanos())
        .collect();
    assert!(charged.len() == 1 && charged[0] < 0, "{charged:?}");
    assert_eq!(gw.open_holds(&account).await, 0);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let file = gw.get(&format!("{VIDEOS}/{clip_id}/content"), &owner).await;
    assert_eq!(file.status, 200);
    assert!((mp4_seconds(&file.body) - 5.0).abs() < 0.1);

    // A clip model starts from an image: JSON's image_url, or the form's file — the SDKs'
    // input_reference — as its first frame. A file_id is refused: there is no files API.
    let from_url = gw
        .post_json(
            VIDEOS,
            &owner,
            &json!({"model": "clipgen-cn-2.0-260128", "prompt": "From a frame.", "input_reference": {"image_url": PNG}}),
        )
        .await;
    assert_eq!(from_url.status, 200, "{}", from_url.text());
    let row = gw
        .store
        .task(from_url.json()["id"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.request["input_reference"]["image_url"], PNG);
    let file_id = gw
        .post_json(
            VIDEOS,
            &owner,
            &json!({"model": "clipgen-cn-2.0-260128", "prompt": "x", "input_reference": {"file_id": "file-1"}}),
        )
        .await;
    assert_eq!(file_id.json()["error"]["param"], "input_reference.file_id");
    let png = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        PNG.split_once(',').unwrap().1,
    )
    .unwrap();
    let boundary = "videos";
    let mut form = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nclipgen-cn-2.0-260128\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nFrom a file.\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"input_reference\"; filename=\"f.png\"\r\nContent-Type: image/png\r\n\r\n"
    )
    .into_bytes();
    form.extend_from_slice(&png);
    form.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let content_type = format!("multipart/form-data; boundary={boundary}");
    let from_file = gw
        .request(
            "POST",
            VIDEOS,
            &[("authorization", &auth), ("content-type", &content_type)],
            form,
        )
        .await;
    assert_eq!(from_file.status, 200, "{}", from_file.text());
    let row = gw
        .store
        .task(from_file.json()["id"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.request["input_reference"]["image_url"], PNG);
    assert_eq!(
        wait_terminal(&gw, &row.id).await.state,
        TaskState::Succeeded
    );

    // Issue 42: what an input_reference is comes from its bytes, never its label. Bytes that
    // are no image are refused by the field, whatever they claim, before any hold or call; an
    // image labelled wrongly goes on as what it is.
    let before = gw.calls(CLIP_CREATES);
    let labelled = |label: &str, bytes: &[u8]| {
        let mut form = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nclipgen-cn-2.0-260128\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nFrom a file.\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"input_reference\"; filename=\"f\"\r\nContent-Type: {label}\r\n\r\n"
        )
        .into_bytes();
        form.extend_from_slice(bytes);
        form.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        form
    };
    for body in [
        labelled("image/png", b"<html><body>not an image</body></html>"),
        labelled("image/jpeg", &[0u8; 64]),
    ] {
        let refused = gw
            .request(
                "POST",
                VIDEOS,
                &[("authorization", &auth), ("content-type", &content_type)],
                body,
            )
            .await;
        assert_eq!(refused.status, 400, "{}", refused.text());
        assert_eq!(refused.json()["error"]["param"], "input_reference");
    }
    let inline = gw
        .post_json(
            VIDEOS,
            &owner,
            &json!({"model": "clipgen-cn-2.0-260128", "prompt": "x",
                    "input_reference": {"image_url": "data:image/png;base64,PHN2Zz48L3N2Zz4="}}),
        )
        .await;
    assert_eq!(inline.status, 400, "{}", inline.text());
    assert_eq!(inline.json()["error"]["param"], "input_reference");
    assert_eq!(
        gw.calls(CLIP_CREATES),
        before,
        "nothing reached the upstream"
    );
    let mislabelled = gw
        .request(
            "POST",
            VIDEOS,
            &[("authorization", &auth), ("content-type", &content_type)],
            labelled("image/jpeg", &png),
        )
        .await;
    assert_eq!(mislabelled.status, 200, "{}", mislabelled.text());
    let row = gw
        .store
        .task(mislabelled.json()["id"].as_str().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        row.request["input_reference"]["image_url"], PNG,
        "sent as the PNG it is"
    );
}

/// An `openai-videos` channel (a Sora-style vendor) behind both video APIs, its key in
/// `SORA_KEY`.
const SORA: &str = r#"
[[channels]]
name = "sora-CHANNEL"
format = "openai-videos"
base_url = "sim"
api_key_env = "SORA_KEY"
first_byte_timeout_ms = 3000
idle_timeout_ms = 3000

[models."sora-2"]
kind = "generic-video"
channels = ["sora-CHANNEL"]
price = { meter = "video_seconds", per_second = "0.10" }

[models."sora-2-pro"]
kind = "generic-video"
channels = ["sora-CHANNEL"]
price = { meter = "video_seconds", per_second = "0.30", per_second_by_size = { "1792x1024" = "0.50", "1024x1792" = "0.50" } }
"#;

const SORA_CHANNEL_KEY: &str = "sk-sora-channel-0123";

async fn sora_gateway() -> TestGateway {
    let config = format!("{CONFIG}\n{SORA}").replace("CHANNEL", &common::unique());
    let gw = TestGateway::with_config_env(&config, |name| {
        (name == "SORA_KEY").then(|| SORA_CHANNEL_KEY.to_owned())
    })
    .await;
    gw.set_knobs(KnobSettings {
        task_queued_ms: Some(300),
        task_running_ms: Some(500),
        ..KnobSettings::default()
    });
    gw
}

/// What `task` was charged, as positive amounts.
async fn task_charges(gw: &TestGateway, account: &str, task: &str) -> Vec<Amount> {
    let ledger = gw.store.ledger(account).await.unwrap();
    ledger
        .iter()
        .filter(|r| r.kind == LedgerKind::Charge && r.task_id.as_deref() == Some(task))
        .map(|r| Amount::from_nanos(-r.amount.nanos()))
        .collect()
}

#[tokio::test]
async fn a_sora_style_channel_is_held_and_charged_at_the_price_of_its_size_and_serves_its_stills() {
    const VIDEOS: &str = "/v1/videos";
    let gw = sora_gateway().await;
    let (account, owner) = gw.account("10").await;
    let (_, stranger) = gw.account("10").await;

    // The sizes and lengths the vendor does not make are refused by the client's field, before
    // any call or hold, on either API.
    for (body, param) in [
        (
            json!({"model": "sora-2", "prompt": "x", "size": "1792x1024"}),
            "size",
        ),
        (
            json!({"model": "sora-2-pro", "prompt": "x", "seconds": "6"}),
            "seconds",
        ),
        (
            json!({"model": "sora-2-pro", "prompt": "x", "size": "1280x1024"}),
            "size",
        ),
    ] {
        let reply = gw.post_json(VIDEOS, &owner, &body).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        assert_eq!(reply.json()["error"]["param"], param, "{}", reply.text());
    }
    let reply = gw
        .post_json(
            VIDEO,
            &owner,
            &json!({"model": "sora-2-pro", "prompt": "x", "resolution": "1024p", "aspect_ratio": "16:9"}),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(reply.json()["error"]["param"], "aspect_ratio");
    assert_eq!(gw.calls("POST /v1/videos"), 0);
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(10_000_000_000)
    );

    // 8 s at 1792x1024 on sora-2-pro: priced at that size's 0.50 a second, fixed at submit.
    let created = gw
        .post_json(
            VIDEOS,
            &owner,
            &json!({"model": "sora-2-pro", "prompt": "A lighthouse.", "seconds": "8", "size": "1792x1024"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.text());
    let id = created.json()["id"].as_str().unwrap().to_owned();
    let row = gw.store.task(&id).await.unwrap().unwrap();
    assert_eq!(
        row.pricing["estimate"],
        json!({"video_seconds_at_size": {"seconds": 8, "width": 1792, "height": 1024}}),
        "the quantity held for names its size"
    );
    let task = wait_terminal(&gw, &id).await;
    assert_eq!(task.state, TaskState::Succeeded, "{:?}", task.error);
    assert_eq!(
        task_charges(&gw, &account, &id).await,
        [Amount::from_nanos(4_000_000_000)]
    );
    let item = format!("{VIDEOS}/{id}");
    let done = gw.get(&item, &owner).await.json();
    assert_eq!(
        (
            done["status"].as_str(),
            done["seconds"].as_str(),
            done["size"].as_str()
        ),
        (Some("completed"), Some("8"), Some("1792x1024"))
    );

    // Its three files, fetched from the vendor with the channel's key (they have no public
    // link), streamed with their own types; a stranger gets none of them.
    let file = gw.get(&format!("{item}/content"), &owner).await;
    assert_eq!(file.status, 200);
    assert_eq!(file.headers["content-type"], "video/mp4");
    assert!((mp4_seconds(&file.body) - 8.0).abs() < 0.1);
    let thumb = gw
        .get(&format!("{item}/content?variant=thumbnail"), &owner)
        .await;
    assert_eq!(thumb.status, 200, "{}", thumb.text());
    assert_eq!(thumb.headers["content-type"], "image/webp");
    assert_eq!(
        (&thumb.body[..4], &thumb.body[8..12]),
        (&b"RIFF"[..], &b"WEBP"[..])
    );
    let sheet = gw
        .get(&format!("{item}/content?variant=spritesheet"), &owner)
        .await;
    assert_eq!(sheet.headers["content-type"], "image/jpeg");
    assert_eq!(&sheet.body[..3], &[0xff, 0xd8, 0xff]);
    assert_eq!(
        gw.get(&format!("{item}/content?variant=thumbnail"), &stranger)
            .await
            .status,
        404
    );
    let vendor_calls: u64 = [
        "POST /v1/videos",
        "GET /v1/videos/{id}",
        "GET /v1/videos/{id}/content",
    ]
    .iter()
    .map(|route| gw.calls(route))
    .sum();
    assert_eq!(gw.calls("GET /v1/videos/{id}/content"), 3);
    assert_eq!(
        gw.calls(&format!("key {SORA_CHANNEL_KEY}")),
        vendor_calls,
        "every call to the vendor bore the channel's key"
    );

    // Through the generic API too: 4 s of sora-2 at 16:9 is 1280x720, 0.40; its signed link
    // streams the file the vendor keeps behind its key.
    let generic = gw
        .post_json(
            VIDEO,
            &owner,
            &json!({"model": "sora-2", "prompt": "A kite.", "resolution": "720p", "aspect_ratio": "16:9"}),
        )
        .await;
    assert_eq!(generic.status, 200, "{}", generic.text());
    let generic_id = generic.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(
        wait_terminal(&gw, &generic_id).await.state,
        TaskState::Succeeded
    );
    assert_eq!(
        task_charges(&gw, &account, &generic_id).await,
        [Amount::from_nanos(400_000_000)]
    );
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let record = gw
        .get(&format!("{VIDEO}/{generic_id}"), &owner)
        .await
        .json();
    let link = record["url"].as_str().unwrap();
    let path = link
        .split_once("/v1/media/")
        .map(|(_, p)| format!("/v1/media/{p}"))
        .unwrap();
    let linked = gw.request("GET", &path, &[], Bytes::new()).await;
    assert_eq!(linked.status, 200, "{}", linked.text());
    assert!((mp4_seconds(&linked.body) - 4.0).abs() < 0.1);

    // A vendor that overstates the seconds it made is charged no more than the hold.
    gw.set_knobs(KnobSettings {
        task_queued_ms: Some(100),
        task_running_ms: Some(100),
        report_usage: Some(60),
        ..KnobSettings::default()
    });
    let lied = gw
        .post_json(
            VIDEOS,
            &owner,
            &json!({"model": "sora-2", "prompt": "A liar.", "seconds": "4", "size": "720x1280"}),
        )
        .await
        .json();
    let lied = lied["id"].as_str().unwrap().to_owned();
    assert_eq!(wait_terminal(&gw, &lied).await.state, TaskState::Succeeded);
    assert_eq!(
        task_charges(&gw, &account, &lied).await,
        [Amount::from_nanos(400_000_000)]
    );

    // A video that fails upstream is refunded in full.
    gw.set_knobs(KnobSettings {
        task_queued_ms: Some(100),
        task_running_ms: Some(100),
        ..KnobSettings::default()
    });
    let before = gw.balance(&account).await;
    let failed = gw
        .post_json(
            VIDEOS,
            &owner,
            &json!({"model": "sora-2-pro", "prompt": "It breaks [fail].", "seconds": "8", "size": "1024x1792"}),
        )
        .await
        .json();
    let failed_id = failed["id"].as_str().unwrap().to_owned();
    let task = wait_terminal(&gw, &failed_id).await;
    assert_eq!(task.state, TaskState::Failed);
    assert!(task_charges(&gw, &account, &failed_id).await.is_empty());
    assert_eq!(gw.balance(&account).await, before);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let failed = gw
        .get(&format!("{VIDEOS}/{failed_id}"), &owner)
        .await
        .json();
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], "video_generation_failed");
    assert_eq!(
        gw.balance(&account).await,
        Amount::from_nanos(10_000_000_000 - 4_000_000_000 - 400_000_000 - 400_000_000)
    );

    // A remix is the vendor's own, on the channel that made the original, and is held and
    // charged as the new 8 s at 1792x1024 it is.
    let remix = gw
        .post_json(
            &format!("{item}/remix"),
            &owner,
            &json!({"prompt": "The lighthouse at night."}),
        )
        .await;
    assert_eq!(remix.status, 200, "{}", remix.text());
    let remix = remix.json();
    assert_eq!(
        (
            remix["remixed_from_video_id"].as_str(),
            remix["size"].as_str()
        ),
        (Some(id.as_str()), Some("1792x1024"))
    );
    assert_eq!(gw.calls("POST /v1/videos/{id}/remix"), 1);
    let remix_id = remix["id"].as_str().unwrap().to_owned();
    let remixed = wait_terminal(&gw, &remix_id).await;
    assert_eq!(remixed.state, TaskState::Succeeded);
    assert_eq!(remixed.channel, row.channel);
    assert_eq!(
        task_charges(&gw, &account, &remix_id).await,
        [Amount::from_nanos(4_000_000_000)]
    );

    // Every charge re-derives from its row alone: the quantity names the size it was priced at.
    let ledger = gw.store.ledger(&account).await.unwrap();
    let sized = ledger
        .iter()
        .find(|r| r.task_id.as_deref() == Some(id.as_str()) && r.kind == LedgerKind::Charge)
        .unwrap();
    assert_eq!(
        sized.quantity.as_deref(),
        Some(r#"{"video_seconds_at_size":{"seconds":8,"width":1792,"height":1024}}"#)
    );
    // At its version where the gateway made versions, else at the configuration's price.
    let configured: Tariff = serde_json::from_value(json!({"meter": "video_seconds", "per_second": "0.30", "per_second_by_size": {"1792x1024": "0.50", "1024x1792": "0.50"}})).unwrap();
    let versions = gw.store.price_versions(Some("sora-2-pro")).await.unwrap();
    let tariff = versions
        .iter()
        .find(|v| Some(v.version) == sized.price_version)
        .map_or(configured, |v| v.tariff.clone());
    let recorded = tollgate_store::RecordedCharge {
        id: sized.id.clone(),
        account_id: account.clone(),
        model: sized.model.clone(),
        quantity: sized.quantity.clone(),
        price_version: sized.price_version,
        price_multiplier: sized.price_multiplier.clone(),
        bound_nanos: None,
        loss_nanos: 0,
        amount_nanos: sized.amount.nanos(),
    };
    assert_eq!(
        tollgate_store::rederive(&recorded, &tariff),
        Ok(Amount::from_nanos(4_000_000_000))
    );
    gw.stop().await;
}

#[test]
fn a_price_by_size_names_only_sizes_the_model_makes() {
    let priced = |model: &str, sizes: &str| {
        let toml = format!(
            "{SORA}\n[models.\"{model}-priced\"]\nkind = \"generic-video\"\nchannels = [\"sora-CHANNEL\"]\nupstream_model = \"{model}\"\nprice = {{ meter = \"video_seconds\", per_second = \"0.1\", per_second_by_size = {{ {sizes} }} }}\n"
        );
        let config = tollgate_settings::Config::parse(&toml).unwrap();
        tollgate_settings::catalog::Catalog::from_config(&config, Some("http://sim"), |_| {
            Some("k".into())
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    assert_eq!(priced("sora-2-pro", r#""1792x1024" = "0.5""#), Ok(()));
    let error = priced("sora-2", r#""1792x1024" = "0.5""#).unwrap_err();
    assert!(
        error.contains("1792x1024") && error.contains("it makes 720x1280, 1280x720"),
        "{error}"
    );
    let error = priced("no-such-model", r#""1280x720" = "0.5""#).unwrap_err();
    assert!(error.contains("no sizes to price"), "{error}");
    let error = tollgate_settings::Config::parse(&format!(
        "{SORA}\n[models.\"typo\"]\nkind = \"generic-video\"\nchannels = [\"sora-CHANNEL\"]\nprice = {{ meter = \"video_seconds\", per_second = \"0.1\", per_second_by_size = {{ \"big\" = \"1\" }} }}\n"
    ))
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(error.contains("is not a size WIDTHxHEIGHT"), "{error}");
}

/// Issue 42 item 6. The adversary: a compromised vendor. Its task record's `video_url` pointed
/// at a loopback "metadata" server and the gateway streamed that answer to the client's signed
/// link. A vendor's record now passes the one address rule (`[outbound]`, "One address rule"):
/// a file on the vendor's own origin (its channel's base URL, which the operator configured)
/// is fetched as before; any other URL must name a public host or one the operator lists, so
/// the link answers 502 and nothing reaches the inside.
#[tokio::test]
async fn a_vendor_record_pointing_inside_is_never_fetched() {
    use std::sync::Arc;
    let inside_hits = Arc::new(AtomicU64::new(0));
    let hits = inside_hits.clone();
    let inside = common::file_server(move |_| {
        hits.fetch_add(1, Ordering::SeqCst);
        (
            200,
            Bytes::from_static(b"{\"AccessKeyId\": \"ASIA-SECRET\"}"),
        )
    })
    .await;
    let mp4 = Bytes::from(
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/crates/probe/tests/fixtures/video_12s.mp4"
        ))
        .unwrap(),
    );
    let created = Arc::new(AtomicU64::new(0));
    let vendor_url = Arc::new(std::sync::OnceLock::<String>::new());
    let (count, own) = (created.clone(), vendor_url.clone());
    let inside_url = format!("{inside}/latest/meta-data/iam/security-credentials/role");
    let vendor = common::typed_server(move |parts| {
        let path = parts.uri.path().to_owned();
        let json = |v: Value| {
            (
                200,
                Some("application/json".to_owned()),
                Bytes::from(v.to_string()),
            )
        };
        if parts.method == http::Method::POST {
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            return json(
                json!({"id": format!("up_{n}"), "task_id": format!("up_{n}"),
                "object": "video", "model": "omni", "status": "queued", "progress": 0,
                "created_at": 1}),
            );
        }
        if path.starts_with("/files/") {
            return (200, Some("video/mp4".to_owned()), mp4.clone());
        }
        let n: u64 = path.rsplit('_').next().unwrap_or("0").parse().unwrap_or(0);
        let url = if n % 2 == 1 {
            inside_url.clone()
        } else {
            format!("{}/files/v.mp4", own.get().unwrap())
        };
        json(
            json!({"id": format!("up_{n}"), "task_id": format!("up_{n}"), "object": "video",
            "model": "omni", "status": "completed", "progress": 100, "created_at": 1,
            "completed_at": 2, "url": url, "video_url": url, "seconds": "4"}),
        )
    })
    .await;
    vendor_url.set(vendor.clone()).unwrap();
    let config = format!(
        r#"
[[channels]]
name = "vendor-{tag}"
format = "generic-video"
base_url = "{vendor}"

[tasks]
first_poll_ms = 100
poll_interval_ms = 200
sweep_interval_seconds = 1

[models."omni"]
kind = "generic-video"
channels = ["vendor-{tag}"]
price = {{ meter = "video_seconds", per_second = "0.07" }}
"#,
        tag = common::unique()
    );
    let gw = TestGateway::with_config(&config).await;
    let (_, key) = gw.account("10").await;
    let mut statuses = Vec::new();
    for _ in 0..2 {
        let id = gw
            .post_json(
                VIDEO,
                &key,
                &json!({"model": "omni", "prompt": "x", "seconds": 4}),
            )
            .await
            .json()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(wait_terminal(&gw, &id).await.state, TaskState::Succeeded);
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let record = gw.get(&format!("{VIDEO}/{id}"), &key).await.json();
        let link = record["url"].as_str().unwrap();
        let path = link.split_once(&gw.addr.to_string()).unwrap().1.to_owned();
        let file = gw.request("GET", &path, &[], "").await;
        statuses.push((file.status, file.body.len()));
    }
    assert_eq!(
        statuses[0].0, 502,
        "the record pointing inside: {statuses:?}"
    );
    assert_eq!(
        statuses[1],
        (200, 15_688),
        "the vendor's own origin: {statuses:?}"
    );
    assert_eq!(
        inside_hits.load(Ordering::SeqCst),
        0,
        "nothing reached the inside"
    );
    gw.stop().await;
}
