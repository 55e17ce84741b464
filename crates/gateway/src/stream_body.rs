//! A streamed response body fed by a task: the task sends frames as they arrive from the
//! upstream (DESIGN §8: relayed frame by frame, never collected first), and learns when the
//! client has gone because the body — and with it the receiver — was dropped.

use crate::body::ResponseBody;
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::sync::mpsc;

/// Frames buffered between the relay task and the connection: small, so a slow client slows
/// the relay instead of filling memory.
const BUFFERED_FRAMES: usize = 8;

/// The sending half, owned by the relay task.
#[derive(Debug)]
pub struct BodySender {
    tx: mpsc::Sender<Result<Frame<Bytes>, Box<dyn std::error::Error + Send + Sync>>>,
}

/// The client closed the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientGone;

impl BodySender {
    /// Sends one piece of the body; waits while the client is slower than the upstream.
    pub async fn send(&self, bytes: Bytes) -> Result<(), ClientGone> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.tx
            .send(Ok(Frame::data(bytes)))
            .await
            .map_err(|_| ClientGone)
    }

    /// Ends the body with an error: hyper aborts the response instead of finishing it, so the
    /// client can tell a cut stream from a complete one.
    pub async fn abort(self, reason: String) {
        let _ = self.tx.send(Err(reason.into())).await;
    }

    /// True once the client has gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// A body and the sender that feeds it.
pub fn channel() -> (BodySender, ResponseBody) {
    let (tx, rx) = mpsc::channel(BUFFERED_FRAMES);
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|frame| (frame, rx))
    });
    (BodySender { tx }, StreamBody::new(frames).boxed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn frames_flow_in_order_and_a_dropped_body_is_noticed() {
        let (tx, body) = channel();
        let sender = tokio::spawn(async move {
            tx.send(Bytes::from_static(b"ab")).await.unwrap();
            tx.send(Bytes::from_static(b"cd")).await.unwrap();
        });
        let collected = body.collect().await.unwrap().to_bytes();
        sender.await.unwrap();
        assert_eq!(&collected[..], b"abcd");

        let (tx, body) = channel();
        drop(body);
        assert_eq!(tx.send(Bytes::from_static(b"x")).await, Err(ClientGone));
        assert!(tx.is_closed());
    }
}
