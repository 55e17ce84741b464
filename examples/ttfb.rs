//! Benchmark: time to the first byte of a stream, straight from the simulator and through the
//! gateway, with a known upstream delay.
//!
//! Starts the simulator (added latency `DELAY_MS`, 200 by default) and a gateway in-process, then
//! `N` times (50 by default), one at a time, each timed to its first body byte:
//! - `speech` (the default): a streamed `/v1/t2a_v2` request straight to the simulator, and a
//!   streamed `/v1/audio/speech` request through the gateway (auth, validation, hold,
//!   translation, relay);
//! - `native`: `:streamGenerateContent?alt=sse` straight to the simulator and through the gateway
//!   (auth, decode, validation, token estimate, hold, relay of the first event).
//!
//! ```sh
//! cargo run --release -p tollgate-e2e --example ttfb -- [N] [DELAY_MS] [speech|native]
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;

const TEXT: &str = "The quick brown fox jumps over the lazy dog. It streams as it is spoken.";

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(50, |a| a.parse().unwrap());
    let delay: u64 = args.next().map_or(200, |a| a.parse().unwrap());
    let native = args.next().as_deref() == Some("native");

    let stack = support::start(
        tollgate_sim::KnobSettings {
            latency_ms: delay,
            ..Default::default()
        },
        None,
    )
    .await;

    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let direct_body = serde_json::json!({
        "model": "speech-2.8-turbo", "text": TEXT, "stream": true,
        "stream_options": {"exclude_aggregated_audio": true},
        "voice_setting": {"voice_id": "English_Graceful_Lady"},
        "audio_setting": {"format": "mp3", "sample_rate": 32000, "channel": 1},
        "output_format": "hex"
    });
    let gateway_body = serde_json::json!({"model": "tts-1", "input": TEXT, "voice": "alloy"});
    let native_body =
        serde_json::json!({"contents": [{"role": "user", "parts": [{"text": TEXT}]}]});
    let native_path = "/v1beta/models/gen-2.5-flash:streamGenerateContent?alt=sse";
    let bearer = format!("Bearer {}", stack.key);
    let mut direct = Vec::new();
    let mut through = Vec::new();
    for _ in 0..n {
        if native {
            let sim = format!("{}{native_path}", stack.sim.base_url());
            direct.push(first_byte(&client, &sim, ("x-goog-api-key", "sim"), &native_body).await);
            let gw = format!("{}{native_path}", stack.gateway);
            through
                .push(first_byte(&client, &gw, ("x-goog-api-key", &stack.key), &native_body).await);
            continue;
        }
        direct.push(
            first_byte(
                &client,
                &format!("{}/v1/t2a_v2", stack.sim.base_url()),
                ("x-none", ""),
                &direct_body,
            )
            .await,
        );
        through.push(
            first_byte(
                &client,
                &format!("{}/v1/audio/speech", stack.gateway),
                ("authorization", &bearer),
                &gateway_body,
            )
            .await,
        );
    }
    direct.sort();
    through.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let what = if native {
        "native generations"
    } else {
        "syntheses"
    };
    println!("{n} streamed {what}, simulator delay {delay} ms");
    for (name, v) in [
        ("simulator directly", &direct),
        ("through the gateway", &through),
    ] {
        println!(
            "{name:<22} first byte p50 {:.3} ms  p90 {:.3} ms  max {:.3} ms",
            ms(v[v.len() / 2]),
            ms(v[v.len() * 9 / 10]),
            ms(v[v.len() - 1])
        );
    }
    println!(
        "added at p50: {:.3} ms, at p90: {:.3} ms",
        ms(through[n / 2]) - ms(direct[n / 2]),
        ms(through[n * 9 / 10]) - ms(direct[n * 9 / 10])
    );
}

/// Time from sending the request to the first byte of its body; the rest is read and dropped.
async fn first_byte(
    client: &Client<HttpConnector, Full<Bytes>>,
    url: &str,
    credential: (&str, &str),
    body: &serde_json::Value,
) -> Duration {
    let request = hyper::Request::post(url)
        .header("content-type", "application/json")
        .header(credential.0, credential.1)
        .body(Full::new(Bytes::from(serde_json::to_vec(body).unwrap())))
        .unwrap();
    let started = Instant::now();
    let response = client.request(request).await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let mut body = response.into_body();
    let mut first = None;
    while let Some(frame) = body.frame().await {
        if frame.unwrap().is_data() && first.is_none() {
            first = Some(started.elapsed());
        }
    }
    first.unwrap()
}
