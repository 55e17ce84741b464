//! Upstreams that never stop: a streamed answer whose one event never ends is cut at its bound
//! with a protocol error, on a real socket, instead of buffering without limit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use futures_util::StreamExt;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tollgate_upstream::adapters::genai;
use tollgate_upstream::{ClientConfig, Endpoint, HttpClient, Timeouts, UpstreamError};

/// An HTTP server that answers every request with an SSE stream whose first event never ends.
async fn endless_event_upstream() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            transfer-encoding: chunked\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let piece = [b'x'; 64 << 10];
                let mut chunk = format!("{:x}\r\ndata: ", piece.len() + 6).into_bytes();
                chunk.extend_from_slice(&piece);
                chunk.extend_from_slice(b"\r\n");
                if socket.write_all(&chunk).await.is_err() {
                    return;
                }
                let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
                chunk.extend_from_slice(&piece);
                chunk.extend_from_slice(b"\r\n");
                // Until the client hangs up.
                while socket.write_all(&chunk).await.is_ok() {}
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn an_event_that_never_ends_is_cut_at_its_bound() {
    let endpoint = Endpoint {
        base_url: endless_event_upstream().await,
        api_key: None,
        timeouts: Timeouts::default(),
        traceparent: None,
    };
    let client = HttpClient::new(&ClientConfig::default()).unwrap();
    let body = Bytes::from_static(br#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#);
    let mut frames = genai::stream(&client, &endpoint, "gen-2.5-flash", body)
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(60), frames.next())
        .await
        .expect("the bound ends the stream");
    match first {
        Some(Err(UpstreamError::Protocol(message))) => {
            assert!(message.contains("an event larger than"), "{message}");
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    assert!(frames.next().await.is_none(), "nothing after the error");
}

/// A fetch of a URL a client gave connects only to addresses the guard allows, checked on the
/// addresses the connector got — a name that resolves to loopback is refused at connect time,
/// whatever an earlier check saw.
#[tokio::test]
async fn a_guarded_client_does_not_connect_to_a_private_address() {
    let base = endless_event_upstream().await;
    let port = base.rsplit(':').next().unwrap().to_owned();
    let url = format!("http://localhost:{port}/video.mp4");
    let fetch = |client: HttpClient| {
        let url = url.clone();
        async move {
            let request = http::Request::get(url)
                .body(tollgate_upstream::full_body(Bytes::new()))
                .unwrap();
            client.send(request, &Timeouts::default()).await.map(|_| ())
        }
    };
    let guard = |trusted: Vec<String>| tollgate_upstream::AddressGuard {
        allows: |ip| !ip.is_loopback(),
        trusted_hosts: trusted,
    };
    let guarded = HttpClient::new(&ClientConfig {
        address_guard: Some(guard(Vec::new())),
        ..ClientConfig::default()
    })
    .unwrap();
    match fetch(guarded).await {
        Err(UpstreamError::Connect(message)) => {
            assert!(message.contains("non-public address"), "{message}");
        }
        other => panic!("expected a refused connect, got {other:?}"),
    }
    // The operator's trusted host, and the unguarded channel client, connect.
    let trusting = HttpClient::new(&ClientConfig {
        address_guard: Some(guard(vec!["localhost".into()])),
        ..ClientConfig::default()
    })
    .unwrap();
    assert!(fetch(trusting).await.is_ok());
    let plain = HttpClient::new(&ClientConfig::default()).unwrap();
    assert!(fetch(plain).await.is_ok());
}
