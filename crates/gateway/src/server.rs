//! Serving a [`Gateway`] on a listener: HTTP/1.1 and HTTP/2 (h2c), and graceful shutdown —
//! on the signal, stop accepting, let in-flight requests finish up to a deadline, then close.

use crate::service::Gateway;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;

/// Serves until `shutdown` resolves, then drains for at most `grace`.
pub async fn serve(
    listener: TcpListener,
    gateway: Gateway,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(conn) => conn,
                    Err(e) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), gateway.clone());
                let conn = graceful.watch(conn.into_owned());
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    gateway.state().start_draining();
    tracing::info!(
        connections = graceful.count(),
        "shutting down: draining in-flight requests"
    );
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(grace) => tracing::warn!(?grace, "grace period over; closing the remaining connections"),
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
