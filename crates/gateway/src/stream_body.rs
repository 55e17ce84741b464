//! A streamed response body fed by a task: the task sends frames as they arrive from the
//! upstream (DESIGN §8: relayed frame by frame, never collected first), and learns when the
//! client has gone because the body — and with it the receiver — was dropped.

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc;
use tollgate_exchange::body::ResponseBody;
use tollgate_request::quotas::StreamPermit;

/// Frames buffered between the relay task and the connection: small, so a slow client slows
/// the relay instead of filling memory.
const BUFFERED_FRAMES: usize = 8;

type Item = (
    Result<Frame<Bytes>, Box<dyn std::error::Error + Send + Sync>>,
    u64,
);

/// The sending half, owned by the relay task.
#[derive(Debug)]
pub struct BodySender {
    tx: mpsc::Sender<Item>,
    /// The weight of the pieces the connection has taken (see [`BodySender::send_weighed`]).
    taken: Arc<AtomicU64>,
    /// The stream's place under the caller's open-streams limits, given back with the sender.
    _permit: StreamPermit,
}

/// The client closed the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientGone;

impl BodySender {
    /// Sends one piece of the body; waits while the client is slower than the upstream.
    pub async fn send(&self, bytes: Bytes) -> Result<(), ClientGone> {
        self.send_weighed(bytes, 0).await
    }

    /// Sends one piece that carries `weight` (say, bytes of audio): [`BodySender::taken`] counts
    /// it once the connection takes the piece to write it, not when it is queued — what a client
    /// that leaves is charged for is what reached its connection.
    pub async fn send_weighed(&self, bytes: Bytes, weight: u64) -> Result<(), ClientGone> {
        if bytes.is_empty() {
            self.taken.fetch_add(weight, Ordering::Relaxed);
            return Ok(());
        }
        self.tx
            .send((Ok(Frame::data(bytes)), weight))
            .await
            .map_err(|_| ClientGone)
    }

    /// The weight of the pieces the connection has taken so far.
    pub fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    /// Ends the body with an error: hyper aborts the response instead of finishing it, so the
    /// client can tell a cut stream from a complete one.
    pub async fn abort(self, reason: String) {
        let _ = self.tx.send((Err(reason.into()), 0)).await;
    }

    /// True once the client has gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// A body and the sender that feeds it, opened under `permit` (`tollgate_gateway::admission::open_stream`):
/// no client stream without one.
pub fn channel(permit: StreamPermit) -> (BodySender, ResponseBody) {
    let (tx, rx) = mpsc::channel::<Item>(BUFFERED_FRAMES);
    let taken = Arc::new(AtomicU64::new(0));
    let counter = taken.clone();
    let frames = futures_util::stream::unfold((rx, counter), |(mut rx, counter)| async move {
        let (frame, weight) = rx.recv().await?;
        counter.fetch_add(weight, Ordering::Relaxed);
        Some((frame, (rx, counter)))
    });
    (
        BodySender {
            tx,
            taken,
            _permit: permit,
        },
        StreamBody::new(frames).boxed(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// A permit that holds no slot, from real quotas: there is no other way to one.
    async fn permit() -> StreamPermit {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("quotas.db").display());
        let store = tollgate_store::Store::connect(&url).await.unwrap();
        tollgate_request::quotas::Quotas::new(store)
            .admit_stream(None)
            .unwrap()
    }

    #[tokio::test]
    async fn frames_flow_in_order_and_a_dropped_body_is_noticed() {
        let (tx, body) = channel(permit().await);
        let sender = tokio::spawn(async move {
            tx.send(Bytes::from_static(b"ab")).await.unwrap();
            tx.send(Bytes::from_static(b"cd")).await.unwrap();
        });
        let collected = body.collect().await.unwrap().to_bytes();
        sender.await.unwrap();
        assert_eq!(&collected[..], b"abcd");

        let (tx, body) = channel(permit().await);
        drop(body);
        assert_eq!(tx.send(Bytes::from_static(b"x")).await, Err(ClientGone));
        assert!(tx.is_closed());
    }

    #[tokio::test]
    async fn weight_counts_only_what_the_connection_took() {
        let (tx, mut body) = channel(permit().await);
        tx.send_weighed(Bytes::from_static(b"aaaa"), 4)
            .await
            .unwrap();
        tx.send_weighed(Bytes::from_static(b"bb"), 2).await.unwrap();
        // Queued, not taken.
        assert_eq!(tx.taken(), 0);
        let first = body.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), Bytes::from_static(b"aaaa"));
        assert_eq!(tx.taken(), 4);
        drop(body);
        assert_eq!(
            tx.taken(),
            4,
            "the second piece never reached the connection"
        );
    }
}
