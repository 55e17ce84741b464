//! Benchmark: live sessions (`/v1/realtime`) — memory per idle and per active session, and what
//! the gateway adds to a relayed frame's round trip, beside the simulator reached directly.
//!
//! Run by `bench/realtime.sh`, which starts the simulator and the release gateway as their own
//! processes and passes their addresses, a funded key and the gateway's pid (its resident set is
//! read from `/proc`):
//!
//! 1. With `IDLE` > 0, only that: `IDLE` sessions opened and held (each waits for its
//!    `session.created`): the gateway's resident set before and after, per session.
//! 2. Otherwise `ACTIVE` sessions through the gateway, then as many straight to the simulator, each
//!    sending 100 ms of audio every 100 ms (real time) followed by `input_audio_buffer.clear`,
//!    `ROUNDS` times, and timing the clear to its `input_audio_buffer.cleared`: the round trip
//!    of a frame each way, inspected and measured both ways through the gateway. The added
//!    latency is the gateway's percentile less the direct one's; the resident set is sampled
//!    mid-run.
//!
//! With `TOLLGATE_BENCH_LIVE=gemini`, the idle sessions are Gemini Live's (each set up, waiting
//! for its `setupComplete`); the active run is OpenAI Realtime's only.
//!
//! ```sh
//! bash bench/realtime.sh 1000        # 1,000 idle sessions
//! bash bench/realtime.sh 0 100 100   # 100 active sessions, 100 rounds each
//! TOLLGATE_BENCH_LIVE=gemini bash bench/realtime.sh 1000
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The resident set of `pid`, in KiB.
fn rss(pid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap()
}

/// Whether the sessions are Gemini Live's (`TOLLGATE_BENCH_LIVE=gemini`) rather than OpenAI
/// Realtime's.
fn gemini() -> bool {
    std::env::var("TOLLGATE_BENCH_LIVE").is_ok_and(|v| v == "gemini")
}

/// A Gemini Live session of the embedded default's model, set up.
async fn open_gemini(addr: &str, key: &str) -> Socket {
    let path = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";
    let request = format!("ws://{addr}{path}?key={key}")
        .into_client_request()
        .unwrap();
    let (mut socket, _) = tokio_tungstenite::connect_async_with_config(request, None, true)
        .await
        .unwrap();
    let setup = json!({"setup": {"model": "models/gemini-live-2.5-flash"}});
    socket.send(Message::text(setup.to_string())).await.unwrap();
    loop {
        match socket.next().await {
            Some(Ok(Message::Binary(bytes))) if bytes.starts_with(b"{\"setupComplete\"") => {
                return socket;
            }
            Some(Ok(_)) => {}
            other => panic!("the socket ended waiting for setupComplete: {other:?}"),
        }
    }
}

async fn open(addr: &str, key: &str) -> Socket {
    if gemini() {
        return open_gemini(addr, key).await;
    }
    let mut request = format!("ws://{addr}/v1/realtime?model=gpt-realtime")
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {key}").parse().unwrap());
    // Nagle off, as a voice client's socket is: small events are sent at once.
    let (mut socket, _) = tokio_tungstenite::connect_async_with_config(request, None, true)
        .await
        .unwrap();
    until(&mut socket, "session.created").await;
    socket
}

async fn until(socket: &mut Socket, kind: &str) {
    loop {
        match socket.next().await {
            Some(Ok(Message::Text(text))) => {
                let event: Value = serde_json::from_str(text.as_str()).unwrap();
                if event["type"] == kind {
                    return;
                }
                assert_ne!(event["type"], "error", "{event}");
            }
            Some(Ok(_)) => {}
            other => panic!("the socket ended waiting for {kind}: {other:?}"),
        }
    }
}

/// `rounds` real-time rounds on `socket`: the clear-to-cleared time of each, in microseconds.
async fn rounds(mut socket: Socket, rounds: usize) -> Vec<u64> {
    let audio = base64::engine::general_purpose::STANDARD.encode(vec![0x10u8; 4_800]);
    let append = json!({"type": "input_audio_buffer.append", "audio": audio}).to_string();
    let clear = json!({"type": "input_audio_buffer.clear"}).to_string();
    let mut times = Vec::with_capacity(rounds);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    for _ in 0..rounds {
        tick.tick().await;
        socket.send(Message::text(append.clone())).await.unwrap();
        let sent = Instant::now();
        socket.send(Message::text(clear.clone())).await.unwrap();
        until(&mut socket, "input_audio_buffer.cleared").await;
        times.push(u64::try_from(sent.elapsed().as_micros()).unwrap());
    }
    let _ = socket.close(None).await;
    times
}

async fn run(addr: &str, key: &str, sessions: usize, n: usize) -> Vec<u64> {
    let mut opened = Vec::new();
    for _ in 0..sessions {
        opened.push(open(addr, key).await);
    }
    let runs: Vec<_> = opened
        .into_iter()
        .map(|s| tokio::spawn(rounds(s, n)))
        .collect();
    let mut all = Vec::new();
    for run in runs {
        all.extend(run.await.unwrap());
    }
    all.sort_unstable();
    all
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (gateway, sim, key, pid) = (&args[0], &args[1], &args[2], &args[3]);
    let idle: usize = args.get(4).map_or(1_000, |a| a.parse().unwrap());
    let active: usize = args.get(5).map_or(100, |a| a.parse().unwrap());
    let n: usize = args.get(6).map_or(100, |a| a.parse().unwrap());

    // Warm: one session opened and closed, so that what is made once is not counted.
    let warm = open(gateway, key).await;
    drop(warm);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss(pid);
    if idle > 0 {
        let mut held = Vec::with_capacity(idle);
        for _ in 0..idle {
            held.push(open(gateway, key).await);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let with_idle = rss(pid);
        println!(
            "idle: {idle} sessions, gateway RSS {before} KiB -> {with_idle} KiB, {} bytes a session",
            (with_idle.saturating_sub(before)) * 1024 / idle as u64
        );
        return;
    }
    let sampler = {
        let pid = pid.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100 * n as u64 / 2 + 1_000)).await;
            rss(&pid)
        })
    };
    assert!(!gemini(), "the active run is OpenAI Realtime's");
    let through = run(gateway, key, active, n).await;
    let mid = sampler.await.unwrap();
    let direct = run(sim, key, active, n).await;
    println!(
        "active: {active} sessions, gateway RSS {before} KiB -> {mid} KiB mid-run, {} bytes a session",
        mid.saturating_sub(before) * 1024 / active.max(1) as u64
    );
    for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (d, t) = (pct(&direct, p), pct(&through, p));
        println!(
            "round trip {name}: direct {d} µs, through the gateway {t} µs, added {} µs",
            t.saturating_sub(d)
        );
    }
}
