//! One module per endpoint family; each handler reads as the request flow of DESIGN §2. Step 2
//! (who is calling) is done once, in the service (`service::dispatch`): a handler of a client
//! route is handed the caller's `Principal`.

pub mod chat;
pub mod clip_tasks;
pub mod embeddings;
pub mod media;
pub mod native;
pub mod ops;
pub mod responses;
pub mod speech;
pub mod speech_to_text;
pub mod t2a;
pub mod transcriptions;
pub mod video_generations;

use crate::state::State;
use std::sync::Arc;
use std::time::Duration;

/// What a handler gets besides the request.
#[derive(Debug, Clone)]
pub struct Context {
    /// Shared state.
    pub state: Arc<State>,
    /// This request's id (also the `x-request-id` response header).
    pub request_id: String,
    /// What the request is for.
    pub route: crate::routes::Route,
    /// The client's address: the connection's peer, or what a trusted proxy says it relayed
    /// for (`[server] trusted_proxies`); `None` when unknown.
    pub client: Option<std::net::IpAddr>,
    /// The connection's peer is one of `[server] trusted_proxies`: only then are forwarded
    /// headers (`X-Forwarded-For`, `-Proto`, `-Host`) believed.
    pub from_trusted_proxy: bool,
}

impl Context {
    /// Where the request says it was addressed to, for links handed back to it.
    pub fn origin(&self, headers: &http::HeaderMap) -> crate::media::Origin {
        crate::media::Origin::of(headers, self.from_trusted_proxy)
    }
}

/// Set on a response by handlers that called an upstream, so that the metrics can tell the
/// gateway's own time from the upstream's.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamTime(pub Duration);

/// A `text/event-stream` response over a streamed body, noting the upstream's time to its first
/// frame for the metrics.
pub fn sse_response(
    body: crate::body::ResponseBody,
    first_frame: Duration,
) -> http::Response<crate::body::ResponseBody> {
    use http::HeaderValue;
    use http::header::{CACHE_CONTROL, CONTENT_TYPE};
    let mut response = http::Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response.extensions_mut().insert(UpstreamTime(first_frame));
    response
}
