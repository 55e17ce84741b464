//! Load benchmark: video tasks through the gateway.
//!
//! Starts the simulator and a gateway in-process (the embedded default configuration: its
//! pollers, SQLite in a temporary directory or `TOLLGATE_LOAD_DATABASE_URL`), submits N clip tasks
//! at concurrency C, and waits until the store has every one terminal. Prints the submit
//! latency (row + hold + upstream create + answer), submits per second, the time until the last
//! task was settled, and the upstream polls spent per task. The simulator finishes a task 1 s
//! after its creation.
//!
//! ```sh
//! cargo run --release --example tasks_load -- [TASKS] [CONCURRENCY]
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const BODY: &str = r#"{"model": "clipgen-cn-2.0-260128", "duration": 4, "resolution": "480p",
    "ratio": "16:9", "content": [{"type": "text", "text": "A lighthouse in a storm"}]}"#;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let tasks: usize = args.next().map_or(500, |a| a.parse().unwrap());
    let concurrency: usize = args.next().map_or(32, |a| a.parse().unwrap());
    let stack = support::start(
        Default::default(),
        std::env::var("TOLLGATE_LOAD_DATABASE_URL").ok(),
    )
    .await;
    println!(
        "{tasks} clip tasks, concurrency {concurrency}, store {:?}",
        stack.state.store.backend()
    );
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let url = format!("{}/api/v3/contents/generations/tasks", stack.gateway);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, url, key, next) =
                (client.clone(), url.clone(), stack.key.clone(), next.clone());
            tokio::spawn(async move {
                let mut done = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < tasks {
                    let t = Instant::now();
                    let request = hyper::Request::post(&url)
                        .header("authorization", format!("Bearer {key}"))
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from_static(BODY.as_bytes())))
                        .unwrap();
                    let response = client.request(request).await.unwrap();
                    assert!(response.status().is_success(), "{}", response.status());
                    let body = response.into_body().collect().await.unwrap().to_bytes();
                    let id = serde_json::from_slice::<serde_json::Value>(&body).unwrap()["id"]
                        .as_str()
                        .unwrap()
                        .to_owned();
                    done.push((t.elapsed(), id));
                }
                done
            })
        })
        .collect();
    let mut latencies = Vec::new();
    let mut ids = Vec::new();
    for w in workers {
        for (latency, id) in w.await.unwrap() {
            latencies.push(latency);
            ids.push(id);
        }
    }
    let submitted = started.elapsed();
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let pct = |p: f64| latencies[((p / 100.0) * (latencies.len() - 1) as f64).round() as usize];
    println!(
        "submit: {:.0} tasks/s  p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        ids.len() as f64 / submitted.as_secs_f64(),
        ms(pct(50.0)),
        ms(pct(90.0)),
        ms(pct(99.0)),
        ms(*latencies.last().unwrap()),
    );
    loop {
        let mut live = 0;
        for id in &ids {
            if !stack
                .state
                .store
                .task(id)
                .await
                .unwrap()
                .unwrap()
                .state
                .is_terminal()
            {
                live += 1;
            }
        }
        if std::env::var("TASKS_LOAD_TRACE").is_ok() {
            println!("{:.2} s: {live} live", started.elapsed().as_secs_f64());
        }
        if live == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let polls = stack
        .sim
        .knobs()
        .served("GET /api/v3/contents/generations/tasks/{id}");
    println!(
        "all {} settled {:.2} s after the first submit; {:.2} upstream polls per task",
        ids.len(),
        started.elapsed().as_secs_f64(),
        polls as f64 / ids.len() as f64,
    );
}
