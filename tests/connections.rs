//! Connection hygiene (`[server]`, `docs/decisions.md` "Connection hygiene"), on real sockets:
//! clients that send nothing, send headers or bodies too slowly, sit idle, or come in past the
//! connection cap (the longest-idle connection gives way; a source is held to its own cap);
//! HTTP/2's advertised limits and its rapid-reset guard; `/readyz` during the
//! drain.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{MODELS, TestGateway};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Short timeouts so that each test takes seconds.
fn config(server: &str) -> String {
    format!("{MODELS}\n[server]\ndrain_seconds = 0\n{server}\n")
}

/// Reads until the peer closes (or `limit` passes): what was read, and whether it closed.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let mut seen = Vec::new();
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (seen, true),
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
            Err(_) => return (seen, false),
        }
    }
}

/// One HTTP/1.1 exchange on an open connection; returns the response head and body as text.
async fn exchange(stream: &mut TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap();
        assert!(n > 0, "closed before answering");
        seen.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&seen).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
    }
}

const HEALTHZ: &str = "GET /healthz HTTP/1.1\r\nhost: t\r\n\r\n";

/// A small billed request, as raw HTTP/1.1.
fn embeddings(key: &str) -> String {
    let body = r#"{"model":"text-embedding-3-small","input":"x"}"#;
    format!(
        "POST /v1/embeddings HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {key}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn a_client_that_sends_nothing_is_closed_after_the_header_timeout() {
    let gw = TestGateway::with_config(&config("header_read_timeout_seconds = 1")).await;
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    let (_, closed) = read_until_closed(&mut stream, Duration::from_secs(6)).await;
    assert!(closed, "a silent connection stayed open");
    gw.stop().await;
}

#[tokio::test]
async fn headers_sent_a_byte_at_a_time_are_cut_off() {
    let gw = TestGateway::with_config(&config("header_read_timeout_seconds = 1")).await;
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    let started = Instant::now();
    let mut closed = false;
    for byte in b"POST /v1/embeddings HTTP/1.1\r\nhost: t\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaa" {
        if stream.write_all(&[*byte]).await.is_err() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        if started.elapsed() > Duration::from_secs(8) {
            break;
        }
    }
    if !closed {
        closed = read_until_closed(&mut stream, Duration::from_secs(3))
            .await
            .1;
    }
    assert!(closed, "a slow-loris header kept its connection");
    gw.stop().await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let gw = TestGateway::with_config(&config("header_read_timeout_seconds = 1")).await;
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    let answer = exchange(&mut stream, HEALTHZ).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_, closed) = read_until_closed(&mut stream, Duration::from_secs(6)).await;
    assert!(closed, "an idle keep-alive connection stayed open");
    gw.stop().await;
}

#[tokio::test]
async fn a_body_that_stops_arriving_gets_408_in_the_endpoints_shape_and_no_hold() {
    let gw = TestGateway::with_config(&config("body_pause_timeout_seconds = 1")).await;
    let (account, key) = gw.account("1").await;
    // JSON endpoint: 1,000 bytes declared, 9 sent.
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    let head = format!(
        "POST /v1/embeddings HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {key}\r\n\
         content-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"model\":"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (answer, closed) = read_until_closed(&mut stream, Duration::from_secs(8)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert!(answer.contains("\"code\":\"request_timeout\""), "{answer}");
    assert!(closed, "the connection stayed open after 408");

    // Multipart upload: the file part stops half way.
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    let head = format!(
        "POST /v1/audio/transcriptions HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {key}\r\n\
         content-type: multipart/form-data; boundary=XyZ\r\ncontent-length: 100000\r\n\r\n\
         --XyZ\r\ncontent-disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n\
         --XyZ\r\ncontent-disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (answer, _) = read_until_closed(&mut stream, Duration::from_secs(8)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request_timeout"), "{answer}");

    assert_eq!(gw.open_holds(&account).await, 0);
    assert!(
        gw.store.ledger(&account).await.unwrap().len() <= 1,
        "only the credit"
    );
    assert_eq!(
        gw.sim.knobs().stats().values().sum::<u64>(),
        0,
        "nothing reached the upstream"
    );
    gw.stop().await;
}

/// The head of a multipart transcription upload of `length` bytes, up to the file part.
fn upload_head(key: &str, length: usize) -> String {
    format!(
        "POST /v1/audio/transcriptions HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {key}\r\n\
         content-type: multipart/form-data; boundary=XyZ\r\ncontent-length: {length}\r\n\r\n\
         --XyZ\r\ncontent-disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n\
         --XyZ\r\ncontent-disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\nRIFF"
    )
}

/// Issue 22 item 6: a body that trickles in — a byte every half second, never pausing long
/// enough for the pause bound — is cut at the least average rate; one that arrives steadily
/// but goes on for ever is cut at the whole-body deadline. Both 408 in the endpoint's shape.
/// Sends `piece` of a body every `every` until the gateway answers (or closes), at most 15 s;
/// returns what it answered.
async fn send_until_answered(stream: &mut TcpStream, piece: &[u8], every: Duration) -> String {
    let sending = async {
        loop {
            tokio::time::sleep(every).await;
            if stream.write_all(piece).await.is_err() {
                break;
            }
            let mut probe = [0u8; 1];
            if let Ok(Ok(n)) =
                tokio::time::timeout(Duration::from_millis(1), stream.peek(&mut probe)).await
                && n > 0
            {
                break;
            }
        }
        read_until_closed(stream, Duration::from_secs(5)).await
    };
    let (answer, _) = tokio::time::timeout(Duration::from_secs(15), sending)
        .await
        .expect("the body was never cut");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_body_below_the_least_rate_or_past_the_deadline_gets_408() {
    let gw = TestGateway::with_config(&config(
        "body_pause_timeout_seconds = 30\nbody_min_rate_bytes_per_second = 1024\n\
         body_min_rate_window_seconds = 2\nbody_deadline_seconds = 4",
    ))
    .await;
    let (account, key) = gw.account("1").await;

    // A byte every 500 ms: far below 1 KiB/s over a 2 s window.
    let started = Instant::now();
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    stream
        .write_all(upload_head(&key, 10_000_000).as_bytes())
        .await
        .unwrap();
    let answer = send_until_answered(&mut stream, b"x", Duration::from_millis(500)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("less than the 1024 bytes a second"),
        "{answer}"
    );
    let cut_after = started.elapsed();
    assert!(cut_after < Duration::from_secs(6), "{cut_after:?}");

    // 4 KiB every 250 ms (16 KiB/s, well above the rate) without end: the deadline cuts it.
    let started = Instant::now();
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    stream
        .write_all(upload_head(&key, 40_000_000).as_bytes())
        .await
        .unwrap();
    let answer = send_until_answered(&mut stream, &[b'x'; 4096], Duration::from_millis(250)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("longer than 4 s"), "{answer}");
    let cut_after = started.elapsed();
    assert!(
        cut_after >= Duration::from_secs(4) && cut_after < Duration::from_secs(8),
        "{cut_after:?}"
    );
    assert_eq!(gw.open_holds(&account).await, 0);
    gw.stop().await;
}

/// Issue 22 item 6: one key may hold at most `max_uploads_per_key` uploads open; the next is
/// refused at once (429) while another key is not affected, and a finished upload frees its
/// slot.
#[tokio::test]
async fn a_key_may_hold_only_so_many_uploads_open() {
    let gw = TestGateway::with_config(&config(
        "max_uploads_per_key = 2\nbody_pause_timeout_seconds = 30",
    ))
    .await;
    let (_, key) = gw.account("1").await;
    let (_, other) = gw.account("1").await;
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(gw.addr).await.unwrap();
        stream
            .write_all(upload_head(&key, 1_000_000).as_bytes())
            .await
            .unwrap();
        open.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (content_type, body) =
        common::multipart(&[("model", "whisper-1")], "a.wav", &common::wav("Hello."));
    let upload = |key: &str| {
        let (auth, content_type, body) =
            (format!("Bearer {key}"), content_type.clone(), body.clone());
        let gw = &gw;
        async move {
            gw.request(
                "POST",
                "/v1/audio/transcriptions",
                &[("authorization", &auth), ("content-type", &content_type)],
                body,
            )
            .await
        }
    };
    let refused = upload(&key).await;
    assert_eq!(
        refused.status,
        429,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("uploads in flight"),
        "{}",
        refused.json()
    );
    assert_eq!(
        upload(&other).await.status,
        200,
        "another key is not affected"
    );
    drop(open);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if upload(&key).await.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the slots never came back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    gw.stop().await;
}

/// Issue 22 item 16: a client that hangs up 5 ms into a multipart upload is logged 499 (client
/// closed request), in the metrics and in the usage log — not 400, which would blame its body.
#[tokio::test]
async fn a_client_that_leaves_during_its_upload_is_logged_499() {
    let gw = TestGateway::with_config(&config("body_pause_timeout_seconds = 30")).await;
    let (account, key) = gw.account("1").await;
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    stream
        .write_all(upload_head(&key, 1_000_000).as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(5);
    while gw.state.metrics.requests("transcriptions", 499) == 0 {
        assert!(
            Instant::now() < deadline,
            "not logged 499: {}",
            gw.state.metrics.render()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(gw.state.metrics.requests("transcriptions", 400), 0);
    gw.state.ledger.flush().await;
    let records = gw
        .store
        .usage_records(
            &tollgate_store::UsageFilter {
                account_id: Some(account),
                ..Default::default()
            },
            10,
            None,
        )
        .await
        .unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].status, 499);
    gw.stop().await;
}

/// A connection from `source` (a loopback address of its own: another client).
async fn connect_from(source: [u8; 4], to: std::net::SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(std::net::SocketAddr::from((source, 0)))
        .unwrap();
    socket.connect(to).await.unwrap()
}

const UPLOAD_BODY: &str = r#"{"model":"text-embedding-3-small","input":"x"}"#;

/// Starts a billed request whose body is still on its way, and waits until the gateway is
/// serving it (`requests_in_flight` reaches `in_flight`): a busy connection.
async fn start_upload(gw: &TestGateway, stream: &mut TcpStream, key: &str, in_flight: usize) {
    let head = format!(
        "POST /v1/embeddings HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {key}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        UPLOAD_BODY.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
        .write_all(&UPLOAD_BODY.as_bytes()[..5])
        .await
        .unwrap();
    let wanted = format!("tollgate_requests_in_flight {in_flight}\n");
    for _ in 0..200 {
        if gw.state.metrics.render().contains(&wanted) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the upload never started");
}

/// Asserts that the gateway's metrics have `line` (a series and its value).
fn assert_metric(gw: &TestGateway, line: &str) {
    let metrics = gw.state.metrics.render();
    assert!(
        metrics.lines().any(|l| l == line),
        "{line:?} not in\n{metrics}"
    );
}

/// Sends the rest of [`start_upload`]'s body and reads the answer.
async fn finish_upload(stream: &mut TcpStream) -> String {
    exchange(stream, &UPLOAD_BODY[5..]).await
}

#[tokio::test]
async fn when_every_connection_is_busy_the_reserve_answers_health_checks_only() {
    let gw = TestGateway::with_config(&config(
        "max_connections = 2\nreserved_connections = 1\nheader_read_timeout_seconds = 30",
    ))
    .await;
    let (_, key) = gw.account("1").await;
    // Two connections served in full, both busy with an upload.
    let mut first = TcpStream::connect(gw.addr).await.unwrap();
    let mut second = TcpStream::connect(gw.addr).await.unwrap();
    start_upload(&gw, &mut first, &key, 1).await;
    start_upload(&gw, &mut second, &key, 2).await;

    // Nobody can give way: the third is in the reserve. Health checks answer, work does not.
    let mut third = TcpStream::connect(gw.addr).await.unwrap();
    let ready = exchange(&mut third, "GET /readyz HTTP/1.1\r\nhost: t\r\n\r\n").await;
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    let metrics = exchange(&mut third, "GET /metrics HTTP/1.1\r\nhost: t\r\n\r\n").await;
    assert!(metrics.contains("tollgate_connections_open 3"), "{metrics}");
    let work = exchange(&mut third, &embeddings(&key)).await;
    assert!(work.starts_with("HTTP/1.1 503"), "{work}");
    assert!(
        work.to_ascii_lowercase().contains("connection: close"),
        "{work}"
    );
    assert!(work.contains("connection limit"), "{work}");
    assert_eq!(gw.sim.knobs().stats().values().sum::<u64>(), 0);

    // The uploads finish and are served; then the first is idle and gives way to a new one,
    // which is served in full.
    assert!(finish_upload(&mut first).await.starts_with("HTTP/1.1 200"));
    assert!(finish_upload(&mut second).await.starts_with("HTTP/1.1 200"));
    let mut fourth = TcpStream::connect(gw.addr).await.unwrap();
    let answer = exchange(&mut fourth, &embeddings(&key)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_, closed) = read_until_closed(&mut first, Duration::from_secs(3)).await;
    assert!(closed, "the longest-idle connection did not give way");
    assert_metric(&gw, "tollgate_connections_evicted_total{cap=\"total\"} 1");
    drop((second, third, fourth));
    gw.stop().await;
}

#[tokio::test]
async fn a_connection_past_busy_connections_and_the_reserve_is_closed_on_accept() {
    let gw = TestGateway::with_config(&config(
        "max_connections = 1\nreserved_connections = 0\nheader_read_timeout_seconds = 30",
    ))
    .await;
    let (_, key) = gw.account("1").await;
    let mut busy = TcpStream::connect(gw.addr).await.unwrap();
    start_upload(&gw, &mut busy, &key, 1).await;
    let mut refused = TcpStream::connect(gw.addr).await.unwrap();
    let (seen, closed) = read_until_closed(&mut refused, Duration::from_secs(3)).await;
    assert!(
        closed && seen.is_empty(),
        "a connection with no room was kept"
    );
    // The busy one was not touched.
    assert!(finish_upload(&mut busy).await.starts_with("HTTP/1.1 200"));
    assert_metric(&gw, "tollgate_connections_refused_total{cap=\"total\"} 1");
    gw.stop().await;
}

/// The flood: sockets that never send a request (or stop mid-headers) hold the gateway's
/// connections; real clients still get in, because the longest-idle connection gives way.
#[tokio::test]
async fn at_the_cap_the_longest_idle_connection_gives_way_and_busy_ones_never_do() {
    let gw = TestGateway::with_config(&config(
        "max_connections = 3\nreserved_connections = 0\nmax_connections_per_source = 0\n\
         header_read_timeout_seconds = 30",
    ))
    .await;
    let (_, key) = gw.account("1").await;
    // Connected, never sends a thing.
    let mut silent = TcpStream::connect(gw.addr).await.unwrap();
    // Mid-headers.
    let mut halfway = TcpStream::connect(gw.addr).await.unwrap();
    halfway
        .write_all(b"POST /v1/embeddings HTTP/1.1\r\nhost: t\r\n")
        .await
        .unwrap();
    // Busy with an upload.
    let mut busy = TcpStream::connect(gw.addr).await.unwrap();
    start_upload(&gw, &mut busy, &key, 1).await;

    // A real client comes: the silent socket, idle longest, gives way.
    let mut client = connect_from([127, 0, 0, 2], gw.addr).await;
    let answer = exchange(&mut client, &embeddings(&key)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_, closed) = read_until_closed(&mut silent, Duration::from_secs(3)).await;
    assert!(closed, "the silent socket was kept");

    // The next one: the half-sent headers give way, not the client that just finished.
    let mut next = connect_from([127, 0, 0, 3], gw.addr).await;
    assert!(
        exchange(&mut next, HEALTHZ)
            .await
            .starts_with("HTTP/1.1 200")
    );
    let (_, closed) = read_until_closed(&mut halfway, Duration::from_secs(3)).await;
    assert!(closed, "the half-sent headers were kept");
    assert!(
        exchange(&mut client, HEALTHZ)
            .await
            .starts_with("HTTP/1.1 200")
    );

    // The upload was never chosen: it finishes and is charged.
    assert!(finish_upload(&mut busy).await.starts_with("HTTP/1.1 200"));
    assert_metric(&gw, "tollgate_connections_evicted_total{cap=\"total\"} 2");
    assert_metric(&gw, "tollgate_connections_refused_total{cap=\"total\"} 0");
    gw.stop().await;
}

#[tokio::test]
async fn a_source_at_its_cap_displaces_only_its_own_connections() {
    let gw = TestGateway::with_config(&config(
        "max_connections_per_source = 2\ntrusted_proxies = [\"127.0.0.3\"]\n\
         header_read_timeout_seconds = 30",
    ))
    .await;
    let (_, key) = gw.account("1").await;
    const FLOOD: [u8; 4] = [127, 0, 0, 1];
    let mut first = connect_from(FLOOD, gw.addr).await;
    let mut second = connect_from(FLOOD, gw.addr).await;
    let mut other = connect_from([127, 0, 0, 2], gw.addr).await;
    assert!(
        exchange(&mut other, HEALTHZ)
            .await
            .starts_with("HTTP/1.1 200")
    );
    // A third from the flooding source: its own oldest gives way, nobody else's.
    let mut third = connect_from(FLOOD, gw.addr).await;
    let (_, closed) = read_until_closed(&mut first, Duration::from_secs(3)).await;
    assert!(closed, "the source's oldest idle connection was kept");
    assert!(
        exchange(&mut other, HEALTHZ)
            .await
            .starts_with("HTTP/1.1 200")
    );
    // Its connections all busy: the next is closed on accept.
    start_upload(&gw, &mut second, &key, 1).await;
    start_upload(&gw, &mut third, &key, 2).await;
    let mut fourth = connect_from(FLOOD, gw.addr).await;
    let (seen, closed) = read_until_closed(&mut fourth, Duration::from_secs(3)).await;
    assert!(
        closed && seen.is_empty(),
        "a source past its cap got a connection"
    );
    assert!(finish_upload(&mut second).await.starts_with("HTTP/1.1 200"));
    assert!(finish_upload(&mut third).await.starts_with("HTTP/1.1 200"));
    // A trusted proxy carries many clients: it is not held to the cap.
    let mut proxied = Vec::new();
    for _ in 0..4 {
        let mut conn = connect_from([127, 0, 0, 3], gw.addr).await;
        assert!(
            exchange(&mut conn, HEALTHZ)
                .await
                .starts_with("HTTP/1.1 200")
        );
        proxied.push(conn);
    }
    for conn in &mut proxied {
        assert!(exchange(conn, HEALTHZ).await.starts_with("HTTP/1.1 200"));
    }
    assert_metric(
        &gw,
        "tollgate_connections_evicted_total{cap=\"per_source\"} 1",
    );
    assert_metric(
        &gw,
        "tollgate_connections_refused_total{cap=\"per_source\"} 1",
    );
    gw.stop().await;
}

#[tokio::test]
async fn http2_advertises_the_configured_limits() {
    let gw = TestGateway::with_config(&config(
        "http2_max_concurrent_streams = 7\nhttp2_max_header_list_size = 12345",
    ))
    .await;
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    // The client preface and an empty SETTINGS frame (RFC 9113 §3.4, §6.5).
    stream
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    let mut header = [0u8; 9];
    tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut header))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(header[3], 0x4, "the server's first frame is SETTINGS");
    let length =
        usize::from(header[0]) << 16 | usize::from(header[1]) << 8 | usize::from(header[2]);
    let mut payload = vec![0u8; length];
    stream.read_exact(&mut payload).await.unwrap();
    let settings: Vec<(u16, u32)> = payload
        .chunks_exact(6)
        .map(|c| {
            (
                u16::from_be_bytes([c[0], c[1]]),
                u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
            )
        })
        .collect();
    assert!(settings.contains(&(0x3, 7)), "{settings:?}");
    assert!(settings.contains(&(0x6, 12345)), "{settings:?}");
    gw.stop().await;
}

#[tokio::test]
async fn a_connection_that_sends_the_http2_preface_slowly_is_closed() {
    let gw = TestGateway::with_config(&config("header_read_timeout_seconds = 1")).await;
    let mut stream = TcpStream::connect(gw.addr).await.unwrap();
    stream.write_all(b"PRI * HT").await.unwrap();
    let (_, closed) = read_until_closed(&mut stream, Duration::from_secs(6)).await;
    assert!(closed, "half a preface kept its connection");
    gw.stop().await;
}

#[tokio::test]
async fn readyz_fails_during_the_drain_while_requests_are_still_served() {
    let mut gw =
        TestGateway::with_config(&format!("{MODELS}\n[server]\ndrain_seconds = 2\n")).await;
    let addr = gw.addr;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    assert!(
        exchange(&mut stream, "GET /readyz HTTP/1.1\r\nhost: t\r\n\r\n")
            .await
            .starts_with("HTTP/1.1 200")
    );
    gw.trigger_shutdown();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // New connections are still accepted during the drain; /readyz says go elsewhere.
    let mut late = TcpStream::connect(addr).await.unwrap();
    let ready = exchange(&mut late, "GET /readyz HTTP/1.1\r\nhost: t\r\n\r\n").await;
    assert!(ready.starts_with("HTTP/1.1 503"), "{ready}");
    assert!(
        exchange(&mut late, HEALTHZ)
            .await
            .starts_with("HTTP/1.1 200")
    );
    // After it, the listener is closed.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(TcpStream::connect(addr).await.is_err());
    drop((stream, late));
    gw.stop().await;
}

/// The "rapid reset" attack (CVE-2023-44487): a client opens streams and resets each at once, so
/// that the server starts work for requests that no longer count against
/// `max_concurrent_streams`. Past `http2_max_pending_accept_reset_streams` the connection ends
/// with GOAWAY `ENHANCE_YOUR_CALM`; other clients are served meanwhile and nothing stays held.
#[tokio::test]
async fn rapid_reset_streams_end_the_connection_and_leave_nothing_held() {
    let gw = TestGateway::with_config(&config("http2_max_pending_accept_reset_streams = 16")).await;
    let (account, key) = gw.account("10").await;
    let tcp = TcpStream::connect(gw.addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    let driver = tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let mut refused_at = None;
    for n in 0..10_000 {
        let request = http::Request::post(format!("http://{}/v1/embeddings", gw.addr))
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .body(())
            .unwrap();
        // HEADERS without END_STREAM, then RST_STREAM: both leave in one write.
        match client.send_request(request, false) {
            Ok((_, mut body)) => body.send_reset(h2::Reason::CANCEL),
            Err(_) => {
                refused_at = Some(n);
                break;
            }
        }
        if n % 64 == 63 {
            tokio::task::yield_now().await;
            if driver.is_finished() {
                refused_at = Some(n);
                break;
            }
        }
    }
    let refused_at = refused_at.expect("the server let 10,000 reset streams through");
    let ended = tokio::time::timeout(Duration::from_secs(10), driver)
        .await
        .expect("the connection ends")
        .unwrap();
    let error = ended.expect_err("the server ends the connection");
    assert_eq!(
        error.reason(),
        Some(h2::Reason::ENHANCE_YOUR_CALM),
        "{error:?}"
    );
    assert!(refused_at < 10_000, "{refused_at}");

    // The gateway still serves everyone else, and the reset requests hold nothing.
    let mut other = TcpStream::connect(gw.addr).await.unwrap();
    assert!(
        exchange(&mut other, HEALTHZ)
            .await
            .starts_with("HTTP/1.1 200")
    );
    assert!(
        exchange(&mut other, &embeddings(&key))
            .await
            .starts_with("HTTP/1.1 200")
    );
    gw.settled(&account).await;
    assert_eq!(gw.open_holds(&account).await, 0);
    gw.stop().await;
}
