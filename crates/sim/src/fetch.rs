//! The simulated vendors fetch what a request names by URL, as the real ones do: a native
//! request's `fileData` and an Ark task's reference videos. They bill what they fetched — never
//! what the gateway measured, which is the point (`docs/decisions.md`, "Bounded settlement").
//!
//! Plain `http://` only (the test servers and the simulator's own videos are on loopback); an
//! `https://` URL or one that does not answer is not fetched, and the caller says so as its
//! vendor would.

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// The most a fetched file may be.
const MAX_BYTES: usize = 256 << 20;

/// How long a fetch may take in all.
const TIME_LIMIT: Duration = Duration::from_secs(20);

/// The whole body of `url`, when it is an `http://` URL that answers 2xx within the time limit
/// and is at most 256 MiB; `None` otherwise.
pub(crate) async fn fetch(url: &str) -> Option<Bytes> {
    if !url.starts_with("http://") {
        return None;
    }
    let uri: http::Uri = url.parse().ok()?;
    let client: Client<_, http_body_util::Empty<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let work = async {
        let response = client.get(uri).await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let mut body = response.into_body();
        let mut out = BytesMut::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.ok()?.into_data() {
                if out.len() + data.len() > MAX_BYTES {
                    return None;
                }
                out.extend_from_slice(&data);
            }
        }
        Some(out.freeze())
    };
    tokio::time::timeout(TIME_LIMIT, work).await.ok().flatten()
}
