//! Live sessions against the adversaries that own time and processes (docs/decisions.md, "Live
//! voice sessions"): a replica killed with `kill -9` mid-response, and a replica stopped
//! (SIGSTOP) past its session's staleness while another replica sweeps it. The built binary,
//! real sockets, `tollgate audit`: the response in progress is charged once, from what was
//! journaled and never past the hold, and the paused replica is fenced when it wakes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::time::Duration;
use support::{Gateway, Scratch, audit, signal, violations_of, wait_for};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tollgate_billing::Amount;
use tollgate_sim::KnobSettings;
use tollgate_store::{LedgerEntry, Store};

/// One realtime model on a channel at `upstream`; sessions stale after 3 s (a beat every
/// 0.5 s), swept every second.
fn config(scratch: &Scratch, upstream: &str) -> std::path::PathBuf {
    let text = format!(
        r#"
[log]
filter = "info"

[simulator]
enabled = false

[tasks]
workers = false

[realtime]
stale_session_seconds = 3

[[channels]]
name = "voice"
format = "openai-realtime"
base_url = "{upstream}"

[models."voice-1"]
kind = "realtime"
channels = ["voice"]
price = {{ meter = "token_classes", per_million = {{ text_in = "4", audio_in = "32", text_out = "16", audio_out = "64" }} }}
session = {{ step_seconds = 30 }}

[[channels]]
name = "live"
format = "gemini-live"
base_url = "{upstream}"

[models."live-1"]
kind = "live"
channels = ["live"]
upstream_model = "gemini-live-2.5-flash"
price = {{ meter = "token_classes", per_million = {{ text_in = "0.5", audio_in = "3", text_out = "2", audio_out = "12" }} }}
session = {{ step_seconds = 30, audio_in_tokens_per_second = 32, audio_out_tokens_per_second = 32 }}
"#
    );
    let path = scratch.dir.join("tollgate.toml");
    std::fs::write(&path, text).unwrap();
    path
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A session on `gateway` whose response is being spoken: 1 s of audio sent, a response
/// asked for, and its first audio deltas received.
async fn mid_response(gateway: &Gateway, key: &str) -> Socket {
    let mut request = format!("ws://{}/v1/realtime?model=voice-1", gateway.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {key}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let pcm = vec![0x10u8; 48_000];
    for chunk in pcm.chunks(9_600) {
        let audio = base64::engine::general_purpose::STANDARD.encode(chunk);
        let event = json!({"type": "input_audio_buffer.append", "audio": audio});
        socket.send(Message::text(event.to_string())).await.unwrap();
    }
    for event in [
        json!({"type": "input_audio_buffer.commit"}),
        json!({"type": "response.create"}),
    ] {
        socket.send(Message::text(event.to_string())).await.unwrap();
    }
    let mut deltas = 0;
    while deltas < 8 {
        let Some(Ok(Message::Text(text))) = socket.next().await else {
            panic!("the session ended before its response was spoken");
        };
        let event: Value = serde_json::from_str(text.as_str()).unwrap();
        if event["type"] == "response.output_audio.delta" {
            deltas += 1;
        }
    }
    socket
}

/// A Gemini Live session on `gateway` whose turn is being spoken: set up, 1 s of 16 kHz audio
/// sent and its turn ended, and the first audio of the model's turn received.
async fn mid_turn(gateway: &Gateway, key: &str) -> Socket {
    let path = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";
    let request = format!("ws://{}{path}?key={key}", gateway.addr)
        .into_client_request()
        .unwrap();
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let setup = json!({"setup": {"model": "models/live-1"}});
    socket.send(Message::text(setup.to_string())).await.unwrap();
    let audio = base64::engine::general_purpose::STANDARD.encode(vec![0x10u8; 32_000]);
    for message in [
        json!({"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000", "data": audio}}}),
        json!({"realtimeInput": {"audioStreamEnd": true}}),
    ] {
        socket
            .send(Message::text(message.to_string()))
            .await
            .unwrap();
    }
    loop {
        let text = match socket.next().await {
            Some(Ok(Message::Binary(bytes))) => String::from_utf8(bytes.to_vec()).unwrap(),
            Some(Ok(Message::Text(text))) => text.as_str().to_owned(),
            Some(Ok(_)) => continue,
            other => panic!("the session ended before its turn was spoken: {other:?}"),
        };
        let message: Value = serde_json::from_str(&text).unwrap();
        if message
            .pointer("/serverContent/modelTurn/parts/0/inlineData")
            .is_some()
        {
            return socket;
        }
    }
}

fn charges(ledger: &[LedgerEntry]) -> Vec<&LedgerEntry> {
    ledger.iter().filter(|e| e.hold_id.is_some()).collect()
}

async fn open_sessions(store: &Store, account: &str) -> usize {
    store
        .open_sessions(Some(account), 10_000)
        .await
        .unwrap()
        .iter()
        .filter(|s| s.account_id == account)
        .count()
}

/// `kill -9` mid-response: the session's row, its hold and its journal survive the process;
/// the next replica's sweeper charges what was journaled (at most the hold) and closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_mid_response_is_charged_what_it_journaled() {
    let scratch = Scratch::new("session-kill");
    let sim = tollgate_sim::start(
        "127.0.0.1:0".parse().unwrap(),
        KnobSettings {
            frame_interval_ms: Some(100),
            ..KnobSettings::default()
        },
    )
    .await
    .unwrap();
    let config = config(&scratch, &sim.base_url());
    let db = scratch.sqlite_url();
    let store = Store::connect(&db).await.unwrap();
    let name = format!("kill-{}", scratch.tag);
    let (account, key) = store
        .create_account(&name, "5".parse().unwrap())
        .await
        .unwrap();
    let mut a = Gateway::start(&scratch, "a", &config, &db).await;
    let socket = mid_response(&a, &key.secret).await;
    // A beat has journaled what the response delivered so far.
    tokio::time::sleep(Duration::from_millis(800)).await;
    a.kill();
    drop(socket);
    assert_eq!(
        open_sessions(&store, &account.id).await,
        1,
        "the session outlives its replica"
    );
    assert!(store.open_holds_total(&account.id).await.unwrap() > Amount::ZERO);

    let _b = Gateway::start(&scratch, "b", &config, &db).await;
    wait_for(
        "the sweeper closes the session",
        Duration::from_secs(20),
        async || open_sessions(&store, &account.id).await == 0,
    )
    .await;
    let ledger = store.ledger(&account.id).await.unwrap();
    let charges = charges(&ledger);
    assert_eq!(charges.len(), 1, "the response in progress, charged once");
    assert!(charges[0].amount < Amount::ZERO && charges[0].estimated);
    assert!(charges[0].note.as_deref().unwrap_or("").contains("swept"));
    assert_eq!(
        store.open_holds_total(&account.id).await.unwrap(),
        Amount::ZERO
    );
    let (report, _) = audit(&db, Some(&config));
    let mine = violations_of(&report, &[&account.id]);
    assert!(mine.is_empty(), "{mine:?}");
}

/// SIGSTOP past the staleness, two replicas on PostgreSQL: B sweeps A's session and charges
/// what A journaled; A, woken, finds its session closed — its next heartbeat is fenced — tells
/// the client and charges nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_paused_past_its_session_is_fenced_when_it_wakes() {
    let Ok(db) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else {
        eprintln!("skipped: TOLLGATE_TEST_POSTGRES_URL is not set");
        return;
    };
    let scratch = Scratch::new("session-sigstop");
    let sim = tollgate_sim::start(
        "127.0.0.1:0".parse().unwrap(),
        KnobSettings {
            frame_interval_ms: Some(100),
            ..KnobSettings::default()
        },
    )
    .await
    .unwrap();
    let config = config(&scratch, &sim.base_url());
    let store = Store::connect(&db).await.unwrap();
    let name = format!("sigstop-{}", scratch.tag);
    let (account, key) = store
        .create_account(&name, "5".parse().unwrap())
        .await
        .unwrap();
    let a = Gateway::start(&scratch, "a", &config, &db).await;
    let _b = Gateway::start(&scratch, "b", &config, &db).await;
    let mut socket = mid_response(&a, &key.secret).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    signal(&a, "-STOP");
    wait_for(
        "B sweeps A's session",
        Duration::from_secs(20),
        async || open_sessions(&store, &account.id).await == 0,
    )
    .await;
    let swept = charges(&store.ledger(&account.id).await.unwrap()).len();
    assert_eq!(swept, 1);
    signal(&a, "-CONT");
    // A's next beat is fenced: the client is told and closed.
    let told = tokio::time::timeout(Duration::from_secs(15), async {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Text(text) = message {
                let event: Value = serde_json::from_str(text.as_str()).unwrap();
                if event["type"] == "error" {
                    return Some(event);
                }
            }
        }
        None
    })
    .await
    .unwrap();
    let told = told.expect("the woken replica told the client why the session ended");
    assert_eq!(told["error"]["code"], "billing_unavailable", "{told}");
    // Nothing more is charged, and nothing stays held.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ledger = store.ledger(&account.id).await.unwrap();
    assert_eq!(charges(&ledger).len(), 1, "charged once");
    assert_eq!(
        store.open_holds_total(&account.id).await.unwrap(),
        Amount::ZERO
    );
    let (report, _) = audit(&db, Some(&config));
    let mine = violations_of(&report, &[&account.id]);
    assert!(mine.is_empty(), "{mine:?}");
}

/// The same for Gemini Live, whose woken replica's words are a close reason: SIGSTOP past the
/// staleness on PostgreSQL, the turn in progress swept and charged once by B, A fenced when it
/// wakes — the client closed with 1011 — charging nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gemini_session_paused_past_its_staleness_is_fenced_when_it_wakes() {
    let Ok(db) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else {
        eprintln!("skipped: TOLLGATE_TEST_POSTGRES_URL is not set");
        return;
    };
    let scratch = Scratch::new("live-sigstop");
    let sim = tollgate_sim::start(
        "127.0.0.1:0".parse().unwrap(),
        KnobSettings {
            frame_interval_ms: Some(100),
            ..KnobSettings::default()
        },
    )
    .await
    .unwrap();
    let config = config(&scratch, &sim.base_url());
    let store = Store::connect(&db).await.unwrap();
    let name = format!("live-sigstop-{}", scratch.tag);
    let (account, key) = store
        .create_account(&name, "5".parse().unwrap())
        .await
        .unwrap();
    let a = Gateway::start(&scratch, "a", &config, &db).await;
    let _b = Gateway::start(&scratch, "b", &config, &db).await;
    let mut socket = mid_turn(&a, &key.secret).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    signal(&a, "-STOP");
    wait_for(
        "B sweeps A's session",
        Duration::from_secs(20),
        async || open_sessions(&store, &account.id).await == 0,
    )
    .await;
    assert_eq!(charges(&store.ledger(&account.id).await.unwrap()).len(), 1);
    signal(&a, "-CONT");
    let closed = tokio::time::timeout(Duration::from_secs(15), async {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Close(frame) = message {
                return frame.map(|f| u16::from(f.code));
            }
        }
        None
    })
    .await
    .unwrap();
    assert_eq!(closed, Some(1011), "the woken replica closed the session");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ledger = store.ledger(&account.id).await.unwrap();
    assert_eq!(charges(&ledger).len(), 1, "charged once");
    assert_eq!(
        store.open_holds_total(&account.id).await.unwrap(),
        Amount::ZERO
    );
    let (report, _) = audit(&db, Some(&config));
    let mine = violations_of(&report, &[&account.id]);
    assert!(mine.is_empty(), "{mine:?}");
}
