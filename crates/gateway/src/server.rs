//! Serving a [`Gateway`] on a listener: HTTP/1.1 and HTTP/2 (h2c) with the connection limits of
//! `[server]` (`docs/decisions.md`, "Connection hygiene"), and graceful shutdown — on the
//! signal, `/readyz` fails while requests are still served for `drain_seconds`, then the
//! listener closes and in-flight requests get up to a deadline to finish.

use crate::service::Gateway;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tollgate_request::connections::{Admitted, Class, Connections};
use tollgate_settings::config::ServerConfig;

/// The protocol settings of `[server]`.
fn builder(server: &ServerConfig) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(server.header_read_timeout_seconds));
    let keep_alive = Duration::from_secs(server.http2_keep_alive_seconds);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(keep_alive)
        .keep_alive_timeout(keep_alive)
        .max_concurrent_streams(server.http2_max_concurrent_streams)
        .max_header_list_size(server.http2_max_header_list_size)
        .max_pending_accept_reset_streams(server.http2_max_pending_accept_reset_streams)
        .max_local_error_reset_streams(server.http2_max_local_error_reset_streams);
    builder
}

/// HTTP/2's connection preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Waits, at most `within`, until the first bytes of a connection tell HTTP/1.1 from HTTP/2.
/// hyper's protocol detection has no deadline of its own and its header timer only starts
/// after it, so without this a client that sends nothing (or the preface one byte at a time)
/// would hold its connection for ever.
async fn shows_its_protocol(stream: &tokio::net::TcpStream, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    let mut first = [0u8; 24];
    loop {
        let n = match tokio::time::timeout_at(deadline, stream.peek(&mut first)).await {
            Ok(Ok(n)) => n,
            Ok(Err(_)) | Err(_) => return false,
        };
        if n == 0 {
            return false;
        }
        if n == first.len() || first[..n] != H2_PREFACE[..n] {
            return true;
        }
        // A prefix of the preface: real clients send it whole, so this is rare; peek again soon.
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How many connections may wait in the kernel to be accepted (Linux caps it at
/// `net.core.somaxconn`, 4096 by default). Under a flood the accept loop closes or admits each
/// at once, so a long queue costs nothing, while a short one drops the SYNs of real clients
/// (who then wait a second to retry).
const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `addr` with [`LISTEN_BACKLOG`].
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As std's and tokio's own bind: a restarted gateway may listen at once on the port its
    // predecessor's closed connections still hold in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// The TLS listener beside the plain one (`[tls]`): its socket and its acceptor
/// (`crate::tls::Certs`).
pub struct TlsListener {
    /// The socket.
    pub listener: TcpListener,
    /// The handshake, with the certificate in force.
    pub acceptor: TlsAcceptor,
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener")
            .field("listener", &self.listener)
            .finish_non_exhaustive()
    }
}

impl TlsListener {
    /// The TLS listener `config` describes, with its certificate (kept, to be read again on
    /// reload: `crate::reload::Reloader::with_tls`).
    pub fn bind(
        config: &tollgate_settings::config::TlsConfig,
    ) -> Result<(TlsListener, std::sync::Arc<crate::tls::Certs>), String> {
        let certs = crate::tls::Certs::load(config)?;
        let acceptor = certs.acceptor()?;
        let addr: std::net::SocketAddr = config
            .listen
            .parse()
            .map_err(|e| format!("[tls] listen {:?}: {e}", config.listen))?;
        let listener = listen(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        Ok((TlsListener { listener, acceptor }, certs))
    }
}

/// A connection accepted on either listener.
type Accepted = std::io::Result<(TcpStream, std::net::SocketAddr)>;

/// The next connection on the TLS listener; never, when there is none.
async fn accept_tls(tls: Option<&TlsListener>) -> Accepted {
    match tls {
        Some(tls) => tls.listener.accept().await,
        None => std::future::pending().await,
    }
}

/// What admitting and serving a connection needs, the same for both listeners.
struct Acceptor {
    gateway: Gateway,
    connections: std::sync::Arc<Connections>,
    builder: auto::Builder<TokioExecutor>,
    graceful: GracefulShutdown,
    header_timeout: Duration,
}

impl Acceptor {
    /// Admits a connection (or closes it at once when every one that could give way is busy)
    /// and serves it: over TLS when `tls` is given, after a handshake within the header
    /// timeout.
    async fn take(&self, accepted: Accepted, tls: Option<TlsAcceptor>) {
        let (stream, peer) = match accepted {
            Ok(conn) => conn,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                return;
            }
        };
        let gateway = &self.gateway;
        let metrics = &gateway.state().metrics;
        let served = gateway.for_peer(peer.ip());
        let served = if tls.is_some() {
            served.over_tls()
        } else {
            served
        };
        let admitted = match self
            .connections
            .admit(peer.ip(), served.from_trusted_proxy())
        {
            Ok(admitted) => admitted,
            Err(cap) => {
                // Closed at once: the client learns now, not after a timeout.
                metrics.connection_refused(cap);
                tracing::debug!(%peer, cap = cap.label(), "connection refused: every connection that could give way is busy");
                drop(stream);
                return;
            }
        };
        for cap in &admitted.evicted {
            metrics.connection_evicted(*cap);
        }
        let served = served.on_connection(admitted.ticket.clone());
        let served = match admitted.class {
            Class::Full => served,
            Class::Reserve => served.ops_only(),
        };
        let open = tollgate_request::metrics::OpenConnection::new(gateway.state().clone());
        let _ = stream.set_nodelay(true);
        let header_timeout = self.header_timeout;
        let builder = self.builder.clone();
        let watcher = self.graceful.watcher();
        let Admitted {
            ticket, give_way, ..
        } = admitted;
        tokio::spawn(async move {
            let serve = async {
                match tls {
                    None => {
                        if !shows_its_protocol(&stream, header_timeout).await {
                            tracing::debug!(%peer, "connection closed: no request within header_read_timeout");
                            return;
                        }
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(stream), served);
                        if let Err(e) = watcher.watch(conn.into_owned()).await {
                            tracing::debug!(%peer, error = %e, "connection ended with an error");
                        }
                    }
                    Some(acceptor) => {
                        let Ok(Ok(stream)) =
                            tokio::time::timeout(header_timeout, acceptor.accept(stream)).await
                        else {
                            tracing::debug!(%peer, "connection closed: no TLS handshake within header_read_timeout");
                            return;
                        };
                        // The protocol is the one ALPN agreed: HTTP/1.1's header timer then runs
                        // from the first byte (no detection that could wait for ever).
                        let builder = if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                            builder.http2_only()
                        } else {
                            builder.http1_only()
                        };
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(stream), served);
                        if let Err(e) = watcher.watch(conn.into_owned()).await {
                            tracing::debug!(%peer, error = %e, "connection ended with an error");
                        }
                    }
                }
            };
            tokio::select! {
                () = serve => {}
                Ok(()) = give_way => {
                    tracing::debug!(%peer, "connection closed: idle longest, it gave way to a new one");
                }
            }
            drop((ticket, open));
        });
    }
}

/// Serves on `listener` (and on `tls`, when configured) until `shutdown` resolves, then drains
/// for at most `grace`.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsListener>,
    gateway: Gateway,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let server = gateway.state().server.clone();
    let accepting = Acceptor {
        builder: builder(&server),
        graceful: GracefulShutdown::new(),
        // Who is connected, and who gives way when full (`tollgate_request::connections`).
        connections: Connections::new(tollgate_request::connections::Caps {
            full: server.max_connections,
            reserve: server.reserved_connections,
            per_source: server.max_connections_per_source,
        }),
        header_timeout: Duration::from_secs(server.header_read_timeout_seconds),
        gateway: gateway.clone(),
    };
    let drain = Duration::from_secs(server.drain_seconds);
    let mut drain_ends: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => accepting.take(accepted, None).await,
            accepted = accept_tls(tls.as_ref()) => {
                let acceptor = tls.as_ref().map(|t| t.acceptor.clone());
                accepting.take(accepted, acceptor).await;
            }
            () = &mut shutdown, if drain_ends.is_none() => {
                gateway.state().start_draining();
                tracing::info!(?drain, "shutting down: /readyz fails while requests are still served");
                drain_ends = Some(Box::pin(tokio::time::sleep(drain)));
            }
            () = async { if let Some(d) = drain_ends.as_mut() { d.await } }, if drain_ends.is_some() => break,
        }
    }
    drop(tls);
    let graceful = accepting.graceful;
    drop(listener);
    tracing::info!(
        connections = graceful.count(),
        "shutting down: listener closed, draining in-flight requests"
    );
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(grace) => tracing::warn!(?grace, "grace period over; closing the remaining connections"),
    }
    // Live sessions were told when the drain began (`tollgate_request::live`); each ends with
    // its response in progress charged. One that outlives the grace is the sweeper's.
    let live = &gateway.state().live;
    if !live.ended(grace).await {
        tracing::warn!(
            open = live.open(),
            "live sessions still open after the grace period; the sweeper settles them from their journal"
        );
    }
}

/// Resolves on SIGTERM or Ctrl-C (SIGINT).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C received"),
        () = term => tracing::info!("SIGTERM received"),
    }
}
