//! Load benchmark: the gateway's added latency for `/v1/embeddings`.
//!
//! Starts the simulator and a gateway in-process (SQLite in a temporary directory), then sends the
//! same request N times at concurrency C twice — straight to the simulator, and through the
//! gateway (auth, validation, token count, hold, relay, settle) — and prints latency percentiles
//! and throughput for both. The difference is what the gateway adds.
//!
//! ```sh
//! cargo run --release --example load -- [REQUESTS] [CONCURRENCY]
//! TOLLGATE_LOAD_DATABASE_URL=postgres://postgres@127.0.0.1/test cargo run --release --example load
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;

const BODY: &str = r#"{"model":"text-embedding-3-small","input":["The quick brown fox jumps over the lazy dog.","A second input to embed."]}"#;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let requests: usize = args.next().map_or(2000, |a| a.parse().unwrap());
    let concurrency: usize = args.next().map_or(16, |a| a.parse().unwrap());

    let stack = support::start(
        Default::default(),
        std::env::var("TOLLGATE_LOAD_DATABASE_URL").ok(),
    )
    .await;
    println!(
        "{requests} requests, concurrency {concurrency}, body {} bytes, store {:?}",
        BODY.len(),
        stack.state.store.backend()
    );
    let direct = run(
        &format!("{}/v1/embeddings", stack.sim.base_url()),
        None,
        requests,
        concurrency,
    )
    .await;
    let through = run(
        &format!("{}/v1/embeddings", stack.gateway),
        Some(&stack.key),
        requests,
        concurrency,
    )
    .await;
    report("simulator directly", &direct);
    report("through the gateway", &through);
    for p in [50.0, 90.0, 99.0] {
        let added =
            pct(&through.latencies, p).as_secs_f64() - pct(&direct.latencies, p).as_secs_f64();
        println!("added at p{p}: {:.3} ms", added * 1000.0);
    }
}

struct Run {
    latencies: Vec<Duration>,
    elapsed: Duration,
    failures: usize,
}

async fn run(url: &str, key: Option<&str>, requests: usize, concurrency: usize) -> Run {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    // Warm the connection pool and caches.
    for _ in 0..concurrency.min(32) {
        let _ = once(&client, url, key).await;
    }
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, url, key, next) = (
                client.clone(),
                url.to_owned(),
                key.map(str::to_owned),
                next.clone(),
            );
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut failures = 0;
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < requests {
                    let t = Instant::now();
                    if once(&client, &url, key.as_deref()).await {
                        latencies.push(t.elapsed());
                    } else {
                        failures += 1;
                    }
                }
                (latencies, failures)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut failures = 0;
    for w in workers {
        let (l, f) = w.await.unwrap();
        latencies.extend(l);
        failures += f;
    }
    let elapsed = started.elapsed();
    latencies.sort();
    Run {
        latencies,
        elapsed,
        failures,
    }
}

async fn once(client: &Client<HttpConnector, Full<Bytes>>, url: &str, key: Option<&str>) -> bool {
    let mut request = hyper::Request::post(url).header("content-type", "application/json");
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let Ok(response) = client
        .request(
            request
                .body(Full::new(Bytes::from_static(BODY.as_bytes())))
                .unwrap(),
        )
        .await
    else {
        return false;
    };
    let ok = response.status().is_success();
    let _ = response.into_body().collect().await;
    ok
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn report(name: &str, run: &Run) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<22} {:>8.0} req/s  p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  max {:.3} ms  failures {}",
        run.latencies.len() as f64 / run.elapsed.as_secs_f64(),
        ms(pct(&run.latencies, 50.0)),
        ms(pct(&run.latencies, 90.0)),
        ms(pct(&run.latencies, 99.0)),
        ms(run.latencies.last().copied().unwrap_or_default()),
        run.failures,
    );
}
