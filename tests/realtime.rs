//! OpenAI Realtime sessions end to end (issue 44): a real WebSocket client against the gateway
//! against the simulated vendor, each response charged to the nano-unit of what the vendor
//! claimed, capped by what the gateway relayed, and the session ended exactly once however it
//! ends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use common::TestGateway;
use futures_util::{SinkExt, StreamExt};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tollgate_billing::Amount;
use tollgate_sim::KnobSettings;

const CONFIG: &str = r#"
[[channels]]
name = "sim-realtime"
format = "openai-realtime"
base_url = "sim"

[models."voice-1"]
kind = "realtime"
channels = ["sim-realtime"]
upstream_model = "gpt-realtime"
price = { meter = "token_classes", per_million = { text_in = "4", cached_text_in = "0.40", audio_in = "32", cached_audio_in = "0.40", text_out = "16", audio_out = "64" } }
session = { step_seconds = 30 }
"#;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

async fn connect(gw: &TestGateway, model: &str, key: &str) -> Result<Socket, http::StatusCode> {
    let mut request = format!("ws://{}/v1/realtime?model={model}", gw.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {key}").parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => Err(response.status()),
        Err(e) => panic!("connect: {e}"),
    }
}

/// The next event of `type` (others skipped), within 10 s.
async fn next_of(socket: &mut Socket, kind: &str, seen: &mut Vec<Value>) -> Value {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Text(text))) => {
                    let event: Value = serde_json::from_str(text.as_str()).unwrap();
                    seen.push(event.clone());
                    if event["type"] == kind {
                        return event;
                    }
                }
                Some(Ok(_)) => {}
                other => panic!("the socket ended waiting for {kind}: {other:?}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {kind} within 10 s"))
}

/// Sends `event`; a socket the gateway already closed is not an error here (what the gateway
/// said before closing is read afterwards).
async fn send(socket: &mut Socket, event: Value) {
    let _ = socket.send(Message::text(event.to_string())).await;
}

/// `ms` of PCM16 at 24 kHz (a 440 Hz tone), appended in 100 ms events, then committed.
async fn speak(socket: &mut Socket, ms: usize) {
    let samples: Vec<u8> = (0..ms * 24)
        .flat_map(|i| {
            let t = i as f64 / 24_000.0;
            let v = ((t * 440.0 * std::f64::consts::TAU).sin() * 8_000.0) as i16;
            v.to_le_bytes()
        })
        .collect();
    for chunk in samples.chunks(4_800) {
        let audio = base64::engine::general_purpose::STANDARD.encode(chunk);
        send(
            socket,
            json!({"type": "input_audio_buffer.append", "audio": audio}),
        )
        .await;
    }
    send(socket, json!({"type": "input_audio_buffer.commit"})).await;
}

/// A session of `voice-1` for a new account with `balance`, the vendor set to `knobs`, its
/// `session.created` read: the account, the socket, and the events seen.
async fn opened(
    gw: &TestGateway,
    balance: &str,
    knobs: KnobSettings,
) -> (String, Socket, Vec<Value>) {
    let (account, key) = gw.account(balance).await;
    gw.set_knobs(knobs);
    let mut socket = connect(gw, "voice-1", &key).await.unwrap();
    let mut seen = Vec::new();
    next_of(&mut socket, "session.created", &mut seen).await;
    (account, socket, seen)
}

/// The price of a `response.done` usage at CONFIG's prices, class by class.
fn price(usage: &Value) -> Amount {
    let n = |v: &Value| Decimal::from(v.as_u64().unwrap_or(0));
    let input = &usage["input_token_details"];
    let cached = &input["cached_tokens_details"];
    let output = &usage["output_token_details"];
    let total = (n(&input["text_tokens"]) - n(&cached["text_tokens"])) * Decimal::from(4)
        + n(&cached["text_tokens"]) * Decimal::new(40, 2)
        + (n(&input["audio_tokens"]) - n(&cached["audio_tokens"])) * Decimal::from(32)
        + n(&cached["audio_tokens"]) * Decimal::new(40, 2)
        + n(&output["text_tokens"]) * Decimal::from(16)
        + n(&output["audio_tokens"]) * Decimal::from(64);
    let nanos = total * Decimal::from(1_000_000_000) / Decimal::from(1_000_000);
    Amount::from_nanos(i64::try_from(nanos.round()).unwrap())
}

fn charges(ledger: &[tollgate_store::LedgerEntry]) -> Vec<&tollgate_store::LedgerEntry> {
    ledger.iter().filter(|e| e.hold_id.is_some()).collect()
}

#[tokio::test]
async fn a_session_relays_audio_both_ways_and_charges_each_response_what_the_vendor_claimed() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let mut socket = connect(&gw, "voice-1", &key).await.unwrap();
    let mut seen = Vec::new();
    let created = next_of(&mut socket, "session.created", &mut seen).await;
    // The public name toward the client, the channel's toward the vendor.
    assert_eq!(created["session"]["model"], "voice-1");
    send(
        &mut socket,
        json!({"type": "session.update", "session": {"type": "realtime", "model": "voice-1", "instructions": "Answer briefly."}}),
    )
    .await;
    let updated = next_of(&mut socket, "session.updated", &mut seen).await;
    assert_eq!(updated["session"]["instructions"], "Answer briefly.");
    let mut claimed = Vec::new();
    for _ in 0..2 {
        speak(&mut socket, 1_500).await;
        send(&mut socket, json!({"type": "response.create"})).await;
        let done = next_of(&mut socket, "response.done", &mut seen).await;
        claimed.push(price(&done["response"]["usage"]));
    }
    // Real audio came back: PCM16 at 24 kHz, seconds of it.
    let audio: usize = seen
        .iter()
        .filter(|e| e["type"] == "response.output_audio.delta")
        .map(|e| {
            base64::engine::general_purpose::STANDARD
                .decode(e["delta"].as_str().unwrap())
                .unwrap()
                .len()
        })
        .sum();
    assert!(audio > 48_000, "only {audio} bytes of audio came back");
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;

    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged: Vec<Amount> = charges(&ledger)
        .iter()
        .map(|e| Amount::from_nanos(-e.amount.nanos()))
        .collect();
    assert_eq!(
        charged, claimed,
        "each response charged its claim, to the nano-unit"
    );
    assert!(charges(&ledger).iter().all(|e| e.anomaly.is_none()));
    let spent = claimed
        .iter()
        .fold(Amount::ZERO, |s, c| s.checked_add(*c).unwrap());
    assert_eq!(
        gw.balance(&account).await,
        "10".parse::<Amount>().unwrap().checked_sub(spent).unwrap()
    );
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// The lying vendor: it claims a million tokens of every class. Each response is charged the
/// bound of what the gateway relayed, and the cut is recorded as an anomaly.
#[tokio::test]
async fn a_vendor_claiming_far_more_than_it_spoke_is_cut_at_the_bound() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, mut socket, mut seen) = opened(
        &gw,
        "100",
        KnobSettings {
            report_usage: Some(1_000_000),
            ..KnobSettings::default()
        },
    )
    .await;
    speak(&mut socket, 1_000).await;
    send(&mut socket, json!({"type": "response.create"})).await;
    let done = next_of(&mut socket, "response.done", &mut seen).await;
    let claim = price(&done["response"]["usage"]);
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charges = charges(&ledger);
    assert_eq!(charges.len(), 1);
    let charged = Amount::from_nanos(-charges[0].amount.nanos());
    assert!(charged < claim, "{charged} charged of a {claim} claim");
    assert!(charged > Amount::ZERO);
    assert!(charges[0].anomaly.is_some(), "the cut is recorded");
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// A vendor that drops the socket mid-response: the client is told and closed, and the
/// response is charged what was relayed of it — once.
#[tokio::test]
async fn a_vendor_that_drops_mid_response_is_charged_what_it_delivered() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, mut socket, _) = opened(
        &gw,
        "100",
        KnobSettings {
            cut_after_frames: Some(5),
            ..KnobSettings::default()
        },
    )
    .await;
    speak(&mut socket, 1_000).await;
    send(&mut socket, json!({"type": "response.create"})).await;
    // The socket ends with a close frame; nothing hangs.
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Close(frame) = message {
                return frame;
            }
        }
        None
    })
    .await
    .unwrap();
    assert!(
        ended.is_some(),
        "the gateway closed the client's socket with a reason"
    );
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charges = charges(&ledger);
    assert_eq!(charges.len(), 1, "the response cut off is charged once");
    assert!(charges[0].estimated);
    assert!(charges[0].amount < Amount::ZERO);
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// Five seconds spoken and a response asked for, again and again, until the gateway hangs
/// up: the `error` it said (or `{"closed": true}` if it said none).
async fn speak_until_hung_up(socket: &mut Socket) -> Value {
    for _ in 0..20 {
        speak(socket, 5_000).await;
        send(socket, json!({"type": "response.create"})).await;
        let ended = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match socket.next().await {
                    Some(Ok(Message::Text(text))) => {
                        let event: Value = serde_json::from_str(text.as_str()).unwrap();
                        if event["type"] == "error" {
                            return Some(event);
                        }
                        if event["type"] == "response.done" {
                            return None;
                        }
                    }
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                        return Some(json!({"closed": true}));
                    }
                    Some(Ok(_)) => {}
                }
            }
        })
        .await
        .unwrap();
        if let Some(event) = ended {
            return event;
        }
    }
    panic!("the session was never hung up");
}

/// A session that spends its balance: hung up with `insufficient_quota` when the next step
/// cannot be held, and the account ends within its allowance.
#[tokio::test]
async fn a_session_that_spends_its_balance_is_hung_up_and_never_overdraws() {
    let gw = TestGateway::with_config(CONFIG).await;
    // 30 s of audio heard and spoken at these prices is 30×10×32 + 30×20×64 = 48,000 tokens·$/M:
    // $0.0480 a step; $0.06 covers the first step and little more.
    let (account, mut socket, _) = opened(&gw, "0.06", KnobSettings::default()).await;
    let hung_up = speak_until_hung_up(&mut socket).await;
    assert_eq!(hung_up["error"]["code"], "insufficient_quota", "{hung_up}");
    gw.sessions_closed(&account).await;
    let balance = gw.balance(&account).await;
    assert!(balance >= Amount::ZERO, "the account overdrew: {balance}");
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// Refused before the upgrade, in OpenAI's shape: no key, a wrong key, an unknown model, a
/// plain GET; and a balance that cannot hold the first step.
#[tokio::test]
async fn what_cannot_open_a_session_is_refused_before_the_upgrade() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (_, key) = gw.account("10").await;
    assert_eq!(
        connect(&gw, "voice-1", "tg-wrong").await.err(),
        Some(http::StatusCode::UNAUTHORIZED)
    );
    assert_eq!(
        connect(&gw, "no-such-model", &key).await.err(),
        Some(http::StatusCode::NOT_FOUND)
    );
    let (_, poor) = gw.account("0.001").await;
    assert_eq!(
        connect(&gw, "voice-1", &poor).await.err(),
        Some(http::StatusCode::TOO_MANY_REQUESTS)
    );
    let plain = gw.get("/v1/realtime?model=voice-1", &key).await;
    assert_eq!(plain.status, 400, "{}", plain.text());
    assert_eq!(plain.json()["error"]["code"], "websocket_required");
    assert_eq!(
        gw.calls("GET /v1/realtime"),
        0,
        "nothing reached the vendor"
    );
    gw.stop().await;
}

/// A browser cannot set headers on a WebSocket: its key comes as a subprotocol, and the
/// gateway answers the `realtime` subprotocol it offered.
#[tokio::test]
async fn a_browser_presents_its_key_as_a_subprotocol() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (_, key) = gw.account("10").await;
    let mut request = format!("ws://{}/v1/realtime?model=voice-1", gw.addr)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "sec-websocket-protocol",
        format!("realtime, openai-insecure-api-key.{key}")
            .parse()
            .unwrap(),
    );
    let (mut socket, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(response.headers()["sec-websocket-protocol"], "realtime");
    let mut seen = Vec::new();
    next_of(&mut socket, "session.created", &mut seen).await;
    // A client's event that breaks a rule is refused by name and never reaches the vendor.
    send(
        &mut socket,
        json!({"type": "no.such.event", "event_id": "e1"}),
    )
    .await;
    let error = next_of(&mut socket, "error", &mut seen).await;
    assert_eq!(error["error"]["code"], "unknown_event");
    assert_eq!(error["error"]["event_id"], "e1");
    socket.close(None).await.unwrap();
    gw.stop().await;
}

/// The next close frame (other events skipped), within 10 s: its code.
async fn closed_with(socket: &mut Socket, seen: &mut Vec<Value>) -> Option<u16> {
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(message)) = socket.next().await {
            match message {
                Message::Close(frame) => return frame.map(|f| u16::from(f.code)),
                Message::Text(text) => seen.push(serde_json::from_str(text.as_str()).unwrap()),
                _ => {}
            }
        }
        None
    })
    .await
    .unwrap()
}

/// SIGTERM: every session is told (`server_shutting_down`), closed as going away (1001), and
/// its response in progress charged what was relayed of it; nothing stays held.
#[tokio::test]
async fn a_draining_gateway_tells_each_session_and_charges_what_was_delivered() {
    let mut gw = TestGateway::with_config(CONFIG).await;
    let slow = KnobSettings {
        frame_interval_ms: Some(50),
        ..KnobSettings::default()
    };
    let (account, mut socket, mut seen) = opened(&gw, "100", slow).await;
    speak(&mut socket, 1_000).await;
    send(&mut socket, json!({"type": "response.create"})).await;
    next_of(&mut socket, "response.output_audio.delta", &mut seen).await;
    gw.trigger_shutdown();
    assert_eq!(closed_with(&mut socket, &mut seen).await, Some(1001));
    let told = seen
        .iter()
        .find(|e| e["type"] == "error")
        .expect("told why");
    assert_eq!(told["error"]["code"], "server_shutting_down");
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charges = charges(&ledger);
    assert_eq!(charges.len(), 1, "the response cut short is charged once");
    assert!(charges[0].estimated && charges[0].amount < Amount::ZERO);
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// `[realtime]`'s limits: a key's sessions at once, a session's longest duration, the largest
/// frame.
#[tokio::test]
async fn a_session_keeps_its_limits() {
    let config = format!(
        "{CONFIG}\n[realtime]\nmax_sessions_per_key = 1\nmax_session_seconds = 2\nmax_frame_bytes = 65536\n"
    );
    let gw = TestGateway::with_config(&config).await;
    let (account, key) = gw.account("10").await;
    let mut first = connect(&gw, "voice-1", &key).await.unwrap();
    assert_eq!(
        connect(&gw, "voice-1", &key).await.err(),
        Some(http::StatusCode::TOO_MANY_REQUESTS),
        "a second session of the key"
    );
    let mut seen = Vec::new();
    assert_eq!(closed_with(&mut first, &mut seen).await, Some(1000));
    let told = seen
        .iter()
        .find(|e| e["type"] == "error")
        .expect("told why");
    assert_eq!(told["error"]["code"], "session_expired");
    gw.sessions_closed(&account).await;
    // The slot came back; a frame over the limit ends the session (1009), told why.
    let mut second = connect(&gw, "voice-1", &key).await.unwrap();
    let big = "A".repeat(100_000);
    send(
        &mut second,
        json!({"type": "input_audio_buffer.append", "audio": big}),
    )
    .await;
    let mut seen = Vec::new();
    assert_eq!(closed_with(&mut second, &mut seen).await, Some(1009));
    let told = seen
        .iter()
        .find(|e| e["type"] == "error")
        .expect("told why");
    assert_eq!(told["error"]["code"], "frame_too_large");
    gw.sessions_closed(&account).await;
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// Connects with `secret` as a browser does: the subprotocol beside `realtime`.
async fn connect_as_browser(
    gw: &TestGateway,
    query: &str,
    secret: &str,
) -> Result<Socket, http::StatusCode> {
    let mut request = format!("ws://{}/v1/realtime{query}", gw.addr)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "sec-websocket-protocol",
        format!("realtime, openai-insecure-api-key.{secret}")
            .parse()
            .unwrap(),
    );
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => Err(response.status()),
        Err(e) => panic!("connect: {e}"),
    }
}

/// Ephemeral client secrets: minted by a key (free), bound to it and its model, one session
/// each, short-lived; the session it opens is the key's, billed to its account.
#[tokio::test]
async fn a_client_secret_opens_one_session_of_the_key_that_minted_it() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let minted = gw
        .post_json(
            "/v1/realtime/client_secrets",
            &key,
            &json!({"expires_after": {"anchor": "created_at", "seconds": 120},
                    "session": {"type": "realtime", "model": "voice-1", "instructions": "Be brief."}}),
        )
        .await;
    assert_eq!(minted.status, 200, "{}", minted.text());
    let minted = minted.json();
    let secret = minted["value"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("ek_"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let expires_at = minted["expires_at"].as_u64().unwrap();
    assert!(
        (now + 110..=now + 130).contains(&expires_at),
        "{expires_at} vs {now}"
    );
    assert_eq!(minted["session"]["model"], "voice-1");
    assert_eq!(minted["session"]["instructions"], "Be brief.");
    assert_eq!(
        gw.balance(&account).await,
        "10".parse().unwrap(),
        "minting is free"
    );

    // The model the secret names is the session's; no query needed.
    let mut socket = connect_as_browser(&gw, "", &secret).await.unwrap();
    let mut seen = Vec::new();
    next_of(&mut socket, "session.created", &mut seen).await;
    speak(&mut socket, 1_000).await;
    send(&mut socket, json!({"type": "response.create"})).await;
    next_of(&mut socket, "response.done", &mut seen).await;
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    assert!(
        gw.balance(&account).await < "10".parse().unwrap(),
        "billed to the key's account"
    );

    // One session each: the secret is spent.
    assert_eq!(
        connect_as_browser(&gw, "", &secret).await.err(),
        Some(http::StatusCode::UNAUTHORIZED)
    );
    // Another model than the one it was minted for is refused, and a secret is no key elsewhere.
    let other = gw
        .post_json(
            "/v1/realtime/client_secrets",
            &key,
            &json!({"session": {"type": "realtime", "model": "voice-1"}}),
        )
        .await
        .json()["value"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(gw.get("/v1/models", &other).await.status, 401);
    assert_eq!(
        connect_as_browser(&gw, "?model=no-such-model", &other)
            .await
            .err(),
        Some(http::StatusCode::NOT_FOUND)
    );
    // An expired secret.
    let expired = gw
        .store
        .mint_client_secret(&tollgate_store::SecretTerms {
            key_id: gw.store.authenticate(&key).await.unwrap().unwrap().key_id,
            model: None,
            session: None,
            lifetime_ms: 1,
            sessions: 1,
            sessions_end_at: None,
        })
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(
        connect_as_browser(&gw, "?model=voice-1", &expired.value)
            .await
            .err(),
        Some(http::StatusCode::UNAUTHORIZED)
    );
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// What cannot be minted is refused by name, in OpenAI's shape.
#[tokio::test]
async fn a_client_secret_request_keeps_the_rules() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (_, key) = gw.account("10").await;
    for (body, status, param) in [
        (
            json!({"expires_after": {"seconds": 5}}),
            400,
            "expires_after.seconds",
        ),
        (
            json!({"expires_after": {"anchor": "now", "seconds": 60}}),
            400,
            "expires_after.anchor",
        ),
        (
            json!({"session": {"type": "transcription"}}),
            400,
            "session.type",
        ),
        (
            json!({"session": {"type": "realtime", "model": "no-such-model"}}),
            404,
            "session.model",
        ),
        (json!({"session": "realtime"}), 400, "session"),
        (json!({"lifetime": 60}), 400, "lifetime"),
    ] {
        let reply = gw
            .post_json("/v1/realtime/client_secrets", &key, &body)
            .await;
        assert_eq!(reply.status, status, "{body}: {}", reply.text());
        assert_eq!(
            reply.json()["error"]["param"],
            param,
            "{body}: {}",
            reply.text()
        );
    }
    gw.stop().await;
}

/// A key's daily budget bounds a session as it bounds requests: each step of the hold is
/// admitted against it, each response trued up to its charge, and the session that reaches
/// the budget is hung up with `insufficient_quota` — however large the account's balance.
#[tokio::test]
async fn a_session_is_hung_up_at_its_keys_daily_budget() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("100").await;
    // A step is $0.048 (see above): the budget holds the first and a little more.
    let budget: Amount = "0.07".parse().unwrap();
    let key = gw
        .key_with(
            &account,
            tollgate_store::AccessPolicy {
                daily_budget: Some(budget),
                ..tollgate_store::AccessPolicy::default()
            },
        )
        .await;
    let mut socket = connect(&gw, "voice-1", &key.secret).await.unwrap();
    let mut seen = Vec::new();
    next_of(&mut socket, "session.created", &mut seen).await;
    let told = speak_until_hung_up(&mut socket).await;
    assert_eq!(told["error"]["code"], "insufficient_quota", "{told}");
    assert!(
        told["error"]["message"]
            .as_str()
            .unwrap()
            .contains("daily budget"),
        "{told}"
    );
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let spent = charges(&ledger)
        .iter()
        .fold(Amount::ZERO, |sum, e| sum.checked_sub(e.amount).unwrap());
    assert!(spent > Amount::ZERO, "the responses were charged");
    assert!(spent <= budget, "spent {spent} of a {budget} budget");
    // What the session spent counts: a new session cannot hold a step in what is left.
    assert_eq!(
        connect(&gw, "voice-1", &key.secret).await.err(),
        Some(http::StatusCode::TOO_MANY_REQUESTS)
    );
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// A session's audio, heard and spoken, counts in the key's per-minute `audio_seconds`: each
/// step holds its seconds both ways, given back when the session ends unspent.
#[tokio::test]
async fn a_sessions_audio_counts_in_the_keys_audio_seconds_per_minute() {
    // Within one minute window (the quota's).
    common::fresh_minute(20).await;
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, _) = gw.account("100").await;
    // A step is 30 s heard and 30 s spoken: one session's first step fits in 100, two do not.
    let key = gw
        .key_with(
            &account,
            tollgate_store::AccessPolicy {
                per_minute: Some([("audio_seconds".to_owned(), 100)].into()),
                ..tollgate_store::AccessPolicy::default()
            },
        )
        .await;
    let mut first = connect(&gw, "voice-1", &key.secret).await.unwrap();
    let mut seen = Vec::new();
    next_of(&mut first, "session.created", &mut seen).await;
    assert_eq!(
        connect(&gw, "voice-1", &key.secret).await.err(),
        Some(http::StatusCode::TOO_MANY_REQUESTS),
        "a second session's step is over the minute's audio"
    );
    first.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let mut second = connect(&gw, "voice-1", &key.secret).await.unwrap();
    next_of(&mut second, "session.created", &mut seen).await;
    second.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    gw.audit_account(&account).await;
    gw.stop().await;
}

const TRANSCRIBING: &str = r#"
[[channels]]
name = "sim-stt"
format = "stt"
base_url = "sim"

[models."asr-x"]
kind = "transcription"
channels = ["sim-stt"]
price = { meter = "audio_seconds", per_second = "0.0001" }

[aliases]
"whisper-1" = "asr-x"
"#;

/// A session that transcribes its input: each transcription a charge of its own, at the
/// transcription model's price (named by an alias the client knows), by the seconds the vendor
/// says — never more than the session heard; a model not served here is refused by name.
#[tokio::test]
async fn each_input_transcription_is_charged_at_its_own_models_price() {
    let gw = TestGateway::with_config(&format!("{CONFIG}{TRANSCRIBING}")).await;
    let (account, mut socket, mut seen) = opened(&gw, "10", KnobSettings::default()).await;
    let update = |model: &str| {
        json!({"type": "session.update", "event_id": "u1", "session": {"type": "realtime",
            "audio": {"input": {"transcription": {"model": model}}}}})
    };
    send(&mut socket, update("no-such-transcriber")).await;
    let refused = next_of(&mut socket, "error", &mut seen).await;
    assert_eq!(refused["error"]["code"], "model_not_found", "{refused}");
    assert_eq!(
        refused["error"]["param"],
        "session.audio.input.transcription.model"
    );
    send(&mut socket, update("whisper-1")).await;
    next_of(&mut socket, "session.updated", &mut seen).await;
    speak(&mut socket, 2_500).await;
    let transcribed = next_of(
        &mut socket,
        "conversation.item.input_audio_transcription.completed",
        &mut seen,
    )
    .await;
    assert_eq!(transcribed["usage"]["seconds"], 2.5);
    send(&mut socket, json!({"type": "response.create"})).await;
    let done = next_of(&mut socket, "response.done", &mut seen).await;
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged: Vec<(Option<String>, Amount)> = charges(&ledger)
        .iter()
        .map(|e| (e.model.clone(), Amount::from_nanos(-e.amount.nanos())))
        .collect();
    // 2.5 s, in whole seconds: 3 × $0.0001.
    assert_eq!(
        charged,
        vec![
            (Some("asr-x".to_owned()), Amount::from_nanos(300_000)),
            (
                Some("voice-1".to_owned()),
                price(&done["response"]["usage"])
            ),
        ]
    );
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// A vendor claiming it transcribed far more than the session heard is charged what was heard.
#[tokio::test]
async fn a_transcription_claimed_beyond_what_was_heard_is_cut() {
    let gw = TestGateway::with_config(&format!("{CONFIG}{TRANSCRIBING}")).await;
    let lying = KnobSettings {
        report_usage: Some(1_000),
        ..KnobSettings::default()
    };
    let (account, mut socket, mut seen) = opened(&gw, "10", lying).await;
    send(
        &mut socket,
        json!({"type": "session.update", "session": {"type": "realtime",
            "audio": {"input": {"transcription": {"model": "whisper-1"}}}}}),
    )
    .await;
    next_of(&mut socket, "session.updated", &mut seen).await;
    speak(&mut socket, 1_000).await;
    next_of(
        &mut socket,
        "conversation.item.input_audio_transcription.completed",
        &mut seen,
    )
    .await;
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged = charges(&ledger);
    assert_eq!(charged.len(), 1);
    assert_eq!(charged[0].amount, Amount::from_nanos(-100_000), "1 s heard");
    assert!(charged[0].anomaly.is_some());
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// The operator sees the sessions open now: `GET /admin/v1/sessions` (the console's Sessions
/// page), an account's alone on asking, with the responses charged so far.
#[tokio::test]
async fn the_admin_api_lists_open_sessions() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, mut socket, mut seen) = opened(&gw, "10", KnobSettings::default()).await;
    speak(&mut socket, 1_000).await;
    send(&mut socket, json!({"type": "response.create"})).await;
    next_of(&mut socket, "response.done", &mut seen).await;
    let (_, token) = gw
        .store
        .create_admin_token(&format!("t-{}", common::unique()), true)
        .await
        .unwrap();
    let listed = gw
        .get(&format!("/admin/v1/sessions?account={account}"), &token)
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    let data = listed.json()["data"].clone();
    assert_eq!(data.as_array().unwrap().len(), 1, "{data}");
    assert_eq!(data[0]["model"], "voice-1");
    assert_eq!(data[0]["responses"], 1);
    assert_eq!(data[0]["account_id"], account.as_str());
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let listed = gw
        .get(&format!("/admin/v1/sessions?account={account}"), &token)
        .await;
    assert_eq!(listed.json()["data"], json!([]));
    gw.stop().await;
}

/// A configuration reload mid-session: the session goes on at the price it was opened at (as
/// a request in flight keeps the settings it started with); a session opened after the reload
/// is priced at the new version. Every charge re-derives from its own price version.
#[tokio::test]
async fn a_session_keeps_its_price_across_a_configuration_reload() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, mut socket, mut seen) = opened(&gw, "10", KnobSettings::default()).await;
    // The operator doubles audio out's price and reloads.
    let dearer = CONFIG.replace("audio_out = \"64\"", "audio_out = \"128\"");
    let reloader = tollgate_gateway::Reloader::new(
        gw.state.clone(),
        tollgate_settings::Config::parse(CONFIG).unwrap(),
        "a test".into(),
        Box::new(move || tollgate_settings::Config::parse(&dearer).map_err(|e| e.to_string())),
        Some(gw.sim.base_url()),
        Box::new(|_| None),
    );
    let reloaded = reloader.reload_now().await.unwrap();
    assert!(!reloaded.changes.is_empty(), "{reloaded:?}");
    speak(&mut socket, 1_000).await;
    send(&mut socket, json!({"type": "response.create"})).await;
    let done = next_of(&mut socket, "response.done", &mut seen).await;
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged = charges(&ledger);
    assert_eq!(charged.len(), 1);
    assert_eq!(
        Amount::from_nanos(-charged[0].amount.nanos()),
        price(&done["response"]["usage"]),
        "at the price the session was opened at"
    );
    // A session opened now pays the new price for its audio out.
    let (later, mut socket, mut seen) = opened(&gw, "10", KnobSettings::default()).await;
    speak(&mut socket, 1_000).await;
    send(&mut socket, json!({"type": "response.create"})).await;
    let done = next_of(&mut socket, "response.done", &mut seen).await;
    socket.close(None).await.unwrap();
    gw.sessions_closed(&later).await;
    let usage = &done["response"]["usage"];
    let audio_out = usage["output_token_details"]["audio_tokens"]
        .as_i64()
        .unwrap();
    let ledger = gw.store.ledger(&later).await.unwrap();
    let charged = charges(&ledger);
    assert_eq!(
        Amount::from_nanos(-charged[0].amount.nanos()),
        Amount::from_nanos(price(usage).nanos() + audio_out * 64_000),
        "audio out at 128 a million"
    );
    assert_ne!(
        charged[0].price_version,
        ledger_version(&gw, &account).await
    );
    gw.audit_account(&account).await;
    gw.audit_account(&later).await;
    gw.stop().await;
}

async fn ledger_version(gw: &TestGateway, account: &str) -> Option<i64> {
    let ledger = gw.store.ledger(account).await.unwrap();
    charges(&ledger)[0].price_version
}

/// The issue's bad input, end to end: each refused by name with a Realtime `error` (the event's
/// id echoed), never relayed, the session going on; and a flood of 10,000 tiny appends relayed
/// and measured without a write per frame, the response after it charged as any.
#[tokio::test]
async fn bad_events_are_refused_by_name_and_a_flood_of_tiny_frames_is_relayed() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, mut socket, mut seen) = opened(&gw, "10", KnobSettings::default()).await;
    let wav = base64::engine::general_purpose::STANDARD.encode(common::silent_wav(1));
    let refused: [(Message, &str, Option<&str>); 5] = [
        (Message::text("this is not JSON"), "invalid_json", None),
        (Message::binary(vec![1u8, 2, 3]), "invalid_json", None),
        (
            Message::text(json!({"type": "no.such.event", "event_id": "e-unknown"}).to_string()),
            "unknown_event",
            Some("e-unknown"),
        ),
        (
            Message::text(
                json!({"type": "input_audio_buffer.append", "event_id": "e-wav", "audio": wav})
                    .to_string(),
            ),
            "wrong_audio_format",
            Some("e-wav"),
        ),
        (
            Message::text(
                json!({"type": "session.update", "event_id": "e-model",
                    "session": {"type": "realtime", "model": "gpt-4o-realtime-preview"}})
                .to_string(),
            ),
            "model_cannot_change",
            Some("e-model"),
        ),
    ];
    for (frame, code, event_id) in refused {
        socket.send(frame).await.unwrap();
        let error = next_of(&mut socket, "error", &mut seen).await;
        assert_eq!(error["error"]["code"], code, "{error}");
        if let Some(id) = event_id {
            assert_eq!(error["error"]["event_id"], id);
        }
    }
    // 10,000 appends of 2 ms each (96 bytes of PCM16), sent as fast as the socket takes them.
    let tiny = base64::engine::general_purpose::STANDARD.encode([0x11u8; 96]);
    let append = json!({"type": "input_audio_buffer.append", "audio": tiny}).to_string();
    for _ in 0..10_000 {
        socket.send(Message::text(append.clone())).await.unwrap();
    }
    send(&mut socket, json!({"type": "input_audio_buffer.commit"})).await;
    send(&mut socket, json!({"type": "response.create"})).await;
    let done = next_of(&mut socket, "response.done", &mut seen).await;
    // The vendor heard 20 s: 200 audio tokens at 10 a second.
    let heard = done["response"]["usage"]["input_token_details"]["audio_tokens"]
        .as_u64()
        .unwrap();
    assert!(heard >= 200, "{done}");
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged = charges(&ledger);
    assert_eq!(charged.len(), 1, "one response, one charge");
    assert_eq!(
        Amount::from_nanos(-charged[0].amount.nanos()),
        price(&done["response"]["usage"]),
        "charged its usage"
    );
    assert!(charged[0].anomaly.is_none());
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// A model whose vendor does not know OpenAI's stock voices (`session.stock_voice`) gets its
/// own voice for them, as the speech endpoints map them; any other voice passes as named, and
/// a model without the setting passes every voice (OpenAI's own).
#[tokio::test]
async fn a_stock_voice_is_the_vendors_own_where_the_vendor_does_not_know_it() {
    let config = format!(
        "{CONFIG}\n[models.\"voice-2\"]\nkind = \"realtime\"\nchannels = [\"sim-realtime\"]\nupstream_model = \"gpt-realtime\"\nprice = {{ meter = \"token_classes\", per_million = {{ text_in = \"4\", audio_in = \"32\", text_out = \"16\", audio_out = \"64\" }} }}\nsession = {{ step_seconds = 30, stock_voice = \"Cherry\" }}\n"
    );
    let gw = TestGateway::with_config(&config).await;
    let (_, key) = gw.account("10").await;
    for (model, asked, spoken) in [
        ("voice-2", "marin", "Cherry"),
        ("voice-2", "Ethan", "Ethan"),
        ("voice-1", "marin", "marin"),
    ] {
        let mut socket = connect(&gw, model, &key).await.unwrap();
        let mut seen = Vec::new();
        next_of(&mut socket, "session.created", &mut seen).await;
        send(
            &mut socket,
            json!({"type": "session.update", "session": {"type": "realtime",
                "audio": {"output": {"voice": asked}}}}),
        )
        .await;
        let updated = next_of(&mut socket, "session.updated", &mut seen).await;
        assert_eq!(
            updated["session"]["audio"]["output"]["voice"], spoken,
            "{model} asked for {asked}"
        );
        assert_eq!(updated["session"]["model"], model);
        socket.close(None).await.unwrap();
    }
    gw.stop().await;
}

/// Two sessions of one key on a balance that holds little more than both first steps, talking
/// at once: each hung up with `insufficient_quota` when the balance cannot hold its next step,
/// what each delivered charged, and the account never below zero.
#[tokio::test]
async fn two_sessions_on_one_small_balance_never_overdraw_it() {
    let gw = TestGateway::with_config(CONFIG).await;
    // Two first steps of $0.048 and a little.
    let (account, key) = gw.account("0.11").await;
    let mut sockets = Vec::new();
    for _ in 0..2 {
        let mut socket = connect(&gw, "voice-1", &key).await.unwrap();
        next_of(&mut socket, "session.created", &mut Vec::new()).await;
        sockets.push(socket);
    }
    let talks = sockets
        .into_iter()
        .map(|mut socket| tokio::spawn(async move { speak_until_hung_up(&mut socket).await }));
    for talk in talks.collect::<Vec<_>>() {
        let hung_up = talk.await.unwrap();
        assert_eq!(hung_up["error"]["code"], "insufficient_quota", "{hung_up}");
    }
    gw.sessions_closed(&account).await;
    let balance = gw.balance(&account).await;
    assert!(balance >= Amount::ZERO, "the account overdrew: {balance}");
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert!(
        charges(&ledger).len() >= 2,
        "each session's responses were charged"
    );
    gw.audit_account(&account).await;
    gw.stop().await;
}
