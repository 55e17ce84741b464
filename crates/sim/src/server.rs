//! The simulator's HTTP server.

use crate::knobs::{Fault, KnobSettings, Knobs};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The largest request body the simulator reads.
const MAX_BODY: usize = 64 << 20;

/// A running simulator.
#[derive(Debug)]
pub struct SimHandle {
    addr: SocketAddr,
    knobs: Arc<Knobs>,
    shutdown: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl SimHandle {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its base URL, `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its knobs and counters.
    pub fn knobs(&self) -> &Arc<Knobs> {
        &self.knobs
    }

    /// Stops accepting and waits for the accept loop to end.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

/// Binds `addr` (port 0 picks a free port) and serves the simulated vendors until shut down.
pub async fn start(addr: SocketAddr, settings: KnobSettings) -> std::io::Result<SimHandle> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let knobs = Arc::new(Knobs::new(settings));
    let (shutdown, mut stop) = watch::channel(false);
    let served_knobs = knobs.clone();
    let task = tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(conn) => conn,
                    Err(e) => {
                        tracing::warn!(error = %e, "simulator accept failed");
                        continue;
                    }
                },
                _ = stop.changed() => break,
            };
            let knobs = served_knobs.clone();
            let mut stop = stop.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| handle(knobs.clone(), req));
                let builder = auto::Builder::new(TokioExecutor::new());
                let conn = builder.serve_connection(TokioIo::new(stream), service);
                tokio::pin!(conn);
                tokio::select! {
                    _ = conn.as_mut() => {}
                    _ = stop.changed() => {}
                }
            });
        }
    });
    tracing::info!(%addr, "simulator listening");
    Ok(SimHandle {
        addr,
        knobs,
        shutdown,
        task,
    })
}

async fn handle(
    knobs: Arc<Knobs>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return Ok(openai_error(
                413,
                "invalid_request_error",
                None,
                None,
                &e.to_string(),
            ));
        }
    };
    let path = parts.uri.path();
    Ok(match (&parts.method, path) {
        (&Method::GET, "/_sim/knobs") => json(StatusCode::OK, &knobs.get()),
        (&Method::PUT, "/_sim/knobs") => match serde_json::from_slice::<KnobSettings>(&body) {
            Ok(settings) => {
                knobs.set(settings.clone());
                json(StatusCode::OK, &settings)
            }
            Err(e) => openai_error(400, "invalid_request_error", None, None, &e.to_string()),
        },
        (&Method::GET, "/_sim/stats") => json(StatusCode::OK, &knobs.stats()),
        (&Method::POST, "/v1/embeddings") => {
            let route = "POST /v1/embeddings";
            match admit(&knobs, route).await {
                Some(status) => openai_error(
                    status,
                    error_type(status),
                    None,
                    None,
                    "simulated upstream failure",
                ),
                None => match crate::embeddings::respond(&body) {
                    Ok(answer) => json(StatusCode::OK, &answer),
                    Err((status, kind, code, param, message)) => {
                        openai_error(status, kind, code, param, &message)
                    }
                },
            }
        }
        _ => openai_error(
            404,
            "invalid_request_error",
            Some("unknown_url"),
            None,
            &format!("Unknown request URL: {} {}", parts.method, path),
        ),
    })
}

/// Applies the knobs to one request: waits out the latency, or forever when stalled; returns the
/// status to fail with, if any.
async fn admit(knobs: &Knobs, route: &str) -> Option<u16> {
    let (latency, fault) = knobs.admit(route);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match fault {
        Fault::None => None,
        Fault::Status(status) => Some(status),
        Fault::Stall => std::future::pending().await,
    }
}

fn error_type(status: u16) -> &'static str {
    match status {
        429 => "rate_limit_exceeded",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    }
}

fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn openai_error(
    status: u16,
    kind: &str,
    code: Option<&str>,
    param: Option<&str>,
    message: &str,
) -> Response<Full<Bytes>> {
    let body = serde_json::json!({
        "error": {"message": message, "type": kind, "param": param, "code": code}
    });
    json(
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &body,
    )
}
