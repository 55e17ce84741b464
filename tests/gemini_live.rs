//! Gemini Live sessions end to end (issue 44): a real WebSocket client on the
//! `BidiGenerateContent` socket against the gateway against the simulated vendor — both
//! spellings of the client's messages, each turn charged to the nano-unit of its
//! `usageMetadata`, capped by what the gateway relayed, and refusals as Google makes them (the
//! socket closed with the reason).
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
name = "sim-live"
format = "gemini-live"
base_url = "sim"

[models."live-1"]
kind = "live"
channels = ["sim-live"]
upstream_model = "gemini-live-2.5-flash"
price = { meter = "token_classes", per_million = { text_in = "0.5", audio_in = "3", text_out = "2", audio_out = "12" } }
session = { step_seconds = 30, audio_in_tokens_per_second = 32, audio_out_tokens_per_second = 32, tokens_per_image = 258 }
"#;

const PATH: &str = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

async fn connect(gw: &TestGateway, key: &str) -> Result<Socket, http::StatusCode> {
    let request = format!("ws://{}{PATH}?key={key}", gw.addr)
        .into_client_request()
        .unwrap();
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => Err(response.status()),
        Err(e) => panic!("connect: {e}"),
    }
}

async fn send(socket: &mut Socket, message: Value) {
    let _ = socket.send(Message::text(message.to_string())).await;
}

/// What the socket said until `until` matched a message (or it closed): the messages, and the
/// close frame's code and reason.
async fn read_until(
    socket: &mut Socket,
    until: impl Fn(&Value) -> bool,
) -> (Vec<Value>, Option<(u16, String)>) {
    let mut seen = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(frame)) = socket.next().await {
            let text = match frame {
                Message::Text(text) => text.as_str().to_owned(),
                Message::Binary(bytes) => String::from_utf8(bytes.to_vec()).unwrap(),
                Message::Close(frame) => {
                    return frame.map(|f| (u16::from(f.code), f.reason.as_str().to_owned()));
                }
                _ => continue,
            };
            let value: Value = serde_json::from_str(&text).unwrap();
            let done = until(&value);
            seen.push(value);
            if done {
                return None;
            }
        }
        None
    })
    .await
    .expect("the socket said nothing for 10 s");
    (seen, closed)
}

/// `ms` of 16 kHz PCM16 (a 440 Hz tone) as `realtime_input` audio in 100 ms chunks, then the
/// end of the stream — in the Python SDK's spelling when `snake`, the JavaScript one's if not.
async fn speak(socket: &mut Socket, ms: usize, snake: bool) {
    let samples: Vec<u8> = (0..ms * 16)
        .flat_map(|i| {
            let t = i as f64 / 16_000.0;
            let v = ((t * 440.0 * std::f64::consts::TAU).sin() * 8_000.0) as i16;
            v.to_le_bytes()
        })
        .collect();
    let key = if snake {
        "realtime_input"
    } else {
        "realtimeInput"
    };
    for chunk in samples.chunks(3_200) {
        let data = base64::engine::general_purpose::STANDARD.encode(chunk);
        send(
            socket,
            json!({key: {"audio": {"mimeType": "audio/pcm;rate=16000", "data": data}}}),
        )
        .await;
    }
    send(socket, json!({key: {"audioStreamEnd": true}})).await;
}

/// A set-up session of `live-1` for a new account with `balance`.
async fn opened(gw: &TestGateway, balance: &str, knobs: KnobSettings) -> (String, Socket) {
    let (account, key) = gw.account(balance).await;
    gw.set_knobs(knobs);
    let mut socket = connect(gw, &key).await.unwrap();
    send(&mut socket, json!({"setup": {"model": "models/live-1"}})).await;
    let (seen, closed) = read_until(&mut socket, |m| m.get("setupComplete").is_some()).await;
    assert!(closed.is_none(), "{seen:?} {closed:?}");
    (account, socket)
}

/// The price of a turn's `usageMetadata` at CONFIG's prices.
fn price(usage: &Value) -> Amount {
    let of = |details: &Value, modality: &str| {
        details
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["modality"] == modality)
            .map(|d| Decimal::from(d["tokenCount"].as_u64().unwrap()))
            .sum::<Decimal>()
    };
    let prompt = &usage["promptTokensDetails"];
    let response = &usage["responseTokensDetails"];
    let total = of(prompt, "TEXT") * Decimal::new(5, 1)
        + of(prompt, "AUDIO") * Decimal::from(3)
        + of(response, "TEXT") * Decimal::from(2)
        + of(response, "AUDIO") * Decimal::from(12);
    let nanos = total * Decimal::from(1_000);
    Amount::from_nanos(i64::try_from(nanos.round()).unwrap())
}

fn charges(ledger: &[tollgate_store::LedgerEntry]) -> Vec<Amount> {
    ledger
        .iter()
        .filter(|e| e.hold_id.is_some())
        .map(|e| e.amount)
        .collect()
}

#[tokio::test]
async fn a_session_speaks_both_ways_in_either_spelling_and_each_turn_is_charged_its_usage() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, mut socket) = opened(&gw, "10", KnobSettings::default()).await;
    let mut usages = Vec::new();
    for snake in [true, false] {
        speak(&mut socket, 2_000, snake).await;
        let (seen, closed) = read_until(&mut socket, |m| m.get("usageMetadata").is_some()).await;
        assert!(closed.is_none());
        let audio: usize = seen
            .iter()
            .flat_map(|m| {
                m["serverContent"]["modelTurn"]["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
            })
            .map(|p| {
                let data = p["inlineData"]["data"].as_str().unwrap();
                base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .unwrap()
                    .len()
            })
            .sum();
        assert!(audio > 48_000, "a second of voice or more: {audio} bytes");
        let last = seen.last().unwrap();
        assert_eq!(last["serverContent"]["turnComplete"], true);
        usages.push(last["usageMetadata"].clone());
    }
    // A question in text; then the session ends.
    send(
        &mut socket,
        json!({"clientContent": {"turns": [{"role": "user", "parts": [{"text": "And now?"}]}], "turnComplete": true}}),
    )
    .await;
    let (seen, _) = read_until(&mut socket, |m| m.get("usageMetadata").is_some()).await;
    usages.push(seen.last().unwrap()["usageMetadata"].clone());
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let expected: Vec<Amount> = usages
        .iter()
        .map(|u| Amount::ZERO.checked_sub(price(u)).unwrap())
        .collect();
    let charged = charges(&ledger);
    assert_eq!(
        charged, expected,
        "each turn charged its usage, to the nano-unit"
    );
    // The model as the vendor was told it: the channel's.
    assert_eq!(gw.calls("GET gemini-live"), 1);
    gw.audit_account(&account).await;
    gw.stop().await;
}

#[tokio::test]
async fn a_vendor_claiming_far_more_than_it_spoke_is_cut_at_the_bound() {
    let gw = TestGateway::with_config(CONFIG).await;
    let lying = KnobSettings {
        report_usage: Some(1_000_000),
        ..KnobSettings::default()
    };
    let (account, mut socket) = opened(&gw, "10", lying).await;
    speak(&mut socket, 1_000, true).await;
    let (seen, _) = read_until(&mut socket, |m| m.get("usageMetadata").is_some()).await;
    let claimed = price(&seen.last().unwrap()["usageMetadata"]);
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged = charges(&ledger);
    assert_eq!(charged.len(), 1);
    let paid = Amount::ZERO.checked_sub(charged[0]).unwrap();
    assert!(
        paid > Amount::ZERO && paid < claimed,
        "{paid} of a {claimed} claim"
    );
    assert!(
        ledger.iter().any(|e| e.anomaly.is_some()),
        "the cut is recorded as an anomaly"
    );
    gw.audit_account(&account).await;
    gw.stop().await;
}

#[tokio::test]
async fn a_session_that_spends_its_balance_is_closed_with_the_reason_and_never_overdraws() {
    let gw = TestGateway::with_config(CONFIG).await;
    // A step is 30 s × 32 tokens both ways at $3 and $12 a million: $0.0144.
    let (account, mut socket) = opened(&gw, "0.02", KnobSettings::default()).await;
    let mut closed = None;
    for _ in 0..40 {
        speak(&mut socket, 5_000, false).await;
        let (_, c) = read_until(&mut socket, |m| m.get("usageMetadata").is_some()).await;
        if c.is_some() {
            closed = c;
            break;
        }
    }
    let (code, reason) = closed.expect("the session was never closed");
    assert_eq!(code, 1008, "{reason}");
    assert!(reason.contains("balance"), "{reason}");
    gw.sessions_closed(&account).await;
    assert!(gw.balance(&account).await >= Amount::ZERO);
    gw.audit_account(&account).await;
    gw.stop().await;
}

#[tokio::test]
async fn refusals_are_googles_before_and_after_the_setup() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    // Before the upgrade, in Google's statuses: no key (403, an unregistered caller), a wrong
    // key (400, `API_KEY_INVALID`).
    let bare = format!("ws://{}{PATH}", gw.addr)
        .into_client_request()
        .unwrap();
    match tokio_tungstenite::connect_async(bare).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 403),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        connect(&gw, "tg-wrong").await.err(),
        Some(http::StatusCode::BAD_REQUEST)
    );
    // A model not served here: closed as Google closes it.
    let mut socket = connect(&gw, &key).await.unwrap();
    send(
        &mut socket,
        json!({"setup": {"model": "models/no-such-model"}}),
    )
    .await;
    let (_, closed) = read_until(&mut socket, |_| false).await;
    let (code, reason) = closed.unwrap();
    assert_eq!(code, 1008);
    assert!(
        reason.contains("models/no-such-model is not found"),
        "{reason}"
    );
    // A message no Live API client sends: 1007, the field named; nothing stays held.
    let (_, mut socket) = {
        let mut socket = connect(&gw, &key).await.unwrap();
        send(&mut socket, json!({"setup": {"model": "models/live-1"}})).await;
        read_until(&mut socket, |m| m.get("setupComplete").is_some()).await;
        ((), socket)
    };
    send(&mut socket, json!({"explode": {}})).await;
    let (_, closed) = read_until(&mut socket, |_| false).await;
    let (code, reason) = closed.unwrap();
    assert_eq!(code, 1007);
    assert!(reason.starts_with("'explode'"), "{reason}");
    // Audio in a format the gateway cannot measure.
    let mut socket = connect(&gw, &key).await.unwrap();
    send(&mut socket, json!({"setup": {"model": "models/live-1"}})).await;
    read_until(&mut socket, |m| m.get("setupComplete").is_some()).await;
    send(
        &mut socket,
        json!({"realtimeInput": {"audio": {"mimeType": "audio/mpeg", "data": "AAAA"}}}),
    )
    .await;
    let (_, closed) = read_until(&mut socket, |_| false).await;
    assert_eq!(closed.unwrap().0, 1007);
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert!(charges(&ledger).is_empty(), "nothing was charged");
    gw.audit_account(&account).await;
    gw.stop().await;
}

#[tokio::test]
async fn a_tool_call_is_relayed_and_its_turn_charged() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    let mut socket = connect(&gw, &key).await.unwrap();
    send(
        &mut socket,
        json!({"setup": {"model": "models/live-1", "generationConfig": {"responseModalities": ["TEXT"]},
            "tools": [{"functionDeclarations": [{"name": "turn_on_the_lights", "description": "Lights on."}]}]}}),
    )
    .await;
    read_until(&mut socket, |m| m.get("setupComplete").is_some()).await;
    send(
        &mut socket,
        json!({"realtime_input": {"text": "Please turn_on_the_lights."}}),
    )
    .await;
    let (seen, _) = read_until(&mut socket, |m| m.get("usageMetadata").is_some()).await;
    let call = seen
        .iter()
        .find(|m| m.get("toolCall").is_some())
        .expect("a tool call");
    let id = call["toolCall"]["functionCalls"][0]["id"].clone();
    send(
        &mut socket,
        json!({"tool_response": {"functionResponses": [{"id": id, "name": "turn_on_the_lights", "response": {"result": "ok"}}]}}),
    )
    .await;
    let (seen, _) = read_until(&mut socket, |m| m.get("usageMetadata").is_some()).await;
    assert!(
        seen.iter()
            .any(|m| m["serverContent"]["modelTurn"]["parts"][0]["text"].is_string())
    );
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(
        charges(&ledger).len(),
        2,
        "the call's turn and the answer's"
    );
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// google-genai connects with `wss://` whenever a key is set: the TLS listener (`[tls]`)
/// serves the same socket, the same session, over TLS, with the certificate its files hold.
#[tokio::test]
async fn the_tls_listener_serves_the_live_socket_over_wss() {
    let dir = std::env::temp_dir().join(format!("tollgate-e2e-tls-{}", common::unique()));
    std::fs::create_dir_all(&dir).unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let config = format!(
        "{CONFIG}\n[tls]\nlisten = \"127.0.0.1:0\"\ncert_file = {cert:?}\nkey_file = {key:?}\n"
    );
    let gw = TestGateway::with_config(&config).await;
    let (account, key) = gw.account("10").await;
    // A client that trusts the certificate, as SSL_CERT_FILE makes google-genai trust it.
    let tls = common::tls_connect(gw.tls_addr.unwrap(), made.cert.der().clone()).await;
    let request = format!("wss://localhost{PATH}?key={key}")
        .into_client_request()
        .unwrap();
    let (mut socket, _) = tokio_tungstenite::client_async(request, tls).await.unwrap();
    socket
        .send(Message::text(
            json!({"setup": {"model": "models/live-1"}}).to_string(),
        ))
        .await
        .unwrap();
    let mut usage = None;
    let mut set_up = false;
    while let Some(Ok(frame)) = socket.next().await {
        let Message::Binary(bytes) = frame else {
            continue;
        };
        let message: Value = serde_json::from_slice(&bytes).unwrap();
        if message.get("setupComplete").is_some() {
            set_up = true;
            let text = json!({"realtimeInput": {"text": "Hello over TLS"}});
            socket.send(Message::text(text.to_string())).await.unwrap();
        }
        if message.get("usageMetadata").is_some() {
            usage = Some(message["usageMetadata"].clone());
            break;
        }
    }
    assert!(set_up && usage.is_some(), "a turn over wss");
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    assert_eq!(
        charges(&ledger),
        vec![Amount::ZERO.checked_sub(price(&usage.unwrap())).unwrap()]
    );
    gw.audit_account(&account).await;
    gw.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

const CONSTRAINED: &str =
    "/ws/google.ai.generativelanguage.v1alpha.GenerativeService.BidiGenerateContentConstrained";

/// A Gemini Live socket opened with an ephemeral token presented as google-genai presents it
/// (`Authorization: Token auth_tokens/…`), or, `in_query`, as @google/genai in a browser does.
async fn connect_with_token(
    gw: &TestGateway,
    token: &str,
    in_query: bool,
) -> Result<Socket, http::StatusCode> {
    let url = if in_query {
        let escaped = token.replace('/', "%2F");
        format!("ws://{}{CONSTRAINED}?access_token={escaped}", gw.addr)
    } else {
        format!("ws://{}{CONSTRAINED}", gw.addr)
    };
    let mut request = url.into_client_request().unwrap();
    if !in_query {
        request
            .headers_mut()
            .insert("authorization", format!("Token {token}").parse().unwrap());
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => Err(response.status()),
        Err(e) => panic!("connect: {e}"),
    }
}

#[tokio::test]
async fn an_ephemeral_token_opens_its_keys_sessions_under_its_constraints_until_it_expires() {
    let config = format!(
        "{CONFIG}\n[models.\"live-2\"]\nkind = \"live\"\nchannels = [\"sim-live\"]\nupstream_model = \"gemini-live-2.5-flash\"\nprice = {{ meter = \"token_classes\", per_million = {{ text_in = \"5\", audio_in = \"30\", text_out = \"20\", audio_out = \"120\" }} }}\n"
    );
    let gw = TestGateway::with_config(&config).await;
    let (account, key) = gw.account("10").await;
    // Minted with the key: one session of live-1, its temperature locked.
    let minted = gw
        .post_json(
            "/v1alpha/auth_tokens",
            &key,
            &json!({"uses": 1, "bidiGenerateContentSetup": {"model": "models/live-1",
                "generationConfig": {"temperature": 0.2}}}),
        )
        .await;
    assert_eq!(minted.status, 200, "{}", minted.text());
    let token = minted.json()["name"].as_str().unwrap().to_owned();
    assert!(token.starts_with("auth_tokens/ek_"), "{token}");
    assert!(minted.json()["expireTime"].as_str().unwrap().ends_with('Z'));
    // The browser's setup asks for the dearer live-2: the token's lock gives it live-1.
    let mut socket = connect_with_token(&gw, &token, false).await.unwrap();
    send(&mut socket, json!({"setup": {"model": "models/live-2"}})).await;
    let (seen, closed) = read_until(&mut socket, |m| m.get("setupComplete").is_some()).await;
    assert!(closed.is_none(), "{seen:?} {closed:?}");
    speak(&mut socket, 1_000, false).await;
    let (_, closed) = read_until(&mut socket, |m| m.get("usageMetadata").is_some()).await;
    assert!(closed.is_none());
    socket.close(None).await.unwrap();
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged: Vec<_> = ledger.iter().filter(|e| e.hold_id.is_some()).collect();
    assert_eq!(charged.len(), 1);
    assert_eq!(
        charged[0].model.as_deref(),
        Some("live-1"),
        "the key's account pays, for live-1"
    );
    // Used once: refused before the upgrade, as a wrong key is.
    let again = connect_with_token(&gw, &token, false).await.err().unwrap();
    assert!(again.is_client_error(), "{again}");
    assert!(
        connect_with_token(&gw, "auth_tokens/ek_nonsense", true)
            .await
            .is_err()
    );

    // Two uses, no constraint, in the query as a browser sends it; its sessions end at its
    // expireTime, told with goAway.
    let ends = tollgate_journal::clock::now_millis() + 2_500;
    let minted = gw
        .post_json(
            "/v1alpha/auth_tokens",
            &key,
            &json!({"uses": 2, "expireTime": tollgate_journal::clock::format_rfc3339(ends)}),
        )
        .await;
    assert_eq!(minted.status, 200, "{}", minted.text());
    let token = minted.json()["name"].as_str().unwrap().to_owned();
    let mut socket = connect_with_token(&gw, &token, true).await.unwrap();
    send(&mut socket, json!({"setup": {"model": "models/live-2"}})).await;
    let (seen, closed) = read_until(&mut socket, |m| m.get("goAway").is_some()).await;
    assert!(closed.is_none(), "{seen:?} {closed:?}");
    assert!(seen.iter().any(|m| m.get("setupComplete").is_some()));
    assert!(
        tollgate_journal::clock::now_millis() >= ends - 1_000,
        "it ended at its expireTime"
    );
    let (_, closed) = read_until(&mut socket, |_| false).await;
    assert_eq!(closed.unwrap().0, 1000);

    // What a minting request may not ask, each refused naming the field.
    for (body, field) in [
        (json!({"expireTime": "2001-01-01T00:00:00Z"}), "expireTime"),
        (
            json!({"newSessionExpireTime": "tomorrow"}),
            "newSessionExpireTime",
        ),
        (
            json!({"bidiGenerateContentSetup": {"model": "models/nope"}}),
            "bidiGenerateContentSetup.model",
        ),
    ] {
        let refused = gw.post_json("/v1alpha/auth_tokens", &key, &body).await;
        assert!(
            refused.status == 400 || refused.status == 404,
            "{}",
            refused.text()
        );
        assert!(
            refused.text().contains(field),
            "{field}: {}",
            refused.text()
        );
    }
    let unknown = gw
        .post_json(
            "/v1alpha/auth_tokens",
            &key,
            &json!({"uses": 1, "bogus": 1}),
        )
        .await;
    assert_eq!(unknown.status, 400, "{}", unknown.text());
    let nobody = gw
        .post_json("/v1alpha/auth_tokens", "tg-wrong", &json!({}))
        .await;
    assert!(
        nobody.status == 400 || nobody.status == 401,
        "{}",
        nobody.text()
    );
    gw.sessions_closed(&account).await;
    gw.audit_account(&account).await;
    gw.stop().await;
}

/// A client that vanishes mid-turn — its TCP connection dropped while the model speaks, no
/// close frame — leaves a turn that is charged once, the bound of what was relayed (marked
/// estimated), and nothing held.
#[tokio::test]
async fn a_client_that_vanishes_mid_turn_pays_what_was_relayed_once() {
    let gw = TestGateway::with_config(CONFIG).await;
    // Paced: the turn is still being spoken when the client goes.
    let paced = KnobSettings {
        frame_interval_ms: Some(100),
        ..KnobSettings::default()
    };
    let (account, mut socket) = opened(&gw, "10", paced).await;
    speak(&mut socket, 2_000, false).await;
    let (seen, closed) = read_until(&mut socket, |m| {
        m.pointer("/serverContent/modelTurn/parts/0/inlineData")
            .is_some()
    })
    .await;
    assert!(closed.is_none(), "{seen:?}");
    assert!(
        !seen.iter().any(|m| m.get("usageMetadata").is_some()),
        "still speaking"
    );
    drop(socket);
    gw.sessions_closed(&account).await;
    let ledger = gw.store.ledger(&account).await.unwrap();
    let charged: Vec<_> = ledger.iter().filter(|e| e.hold_id.is_some()).collect();
    assert_eq!(charged.len(), 1, "the turn cut off is charged once");
    assert!(charged[0].estimated && charged[0].amount < Amount::ZERO);
    assert_eq!(gw.open_holds(&account).await, 0);
    gw.audit_account(&account).await;
    gw.stop().await;
}
