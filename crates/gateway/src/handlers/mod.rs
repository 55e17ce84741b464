//! One module per endpoint family; each handler reads as the request flow of DESIGN §2.

pub mod embeddings;
pub mod ops;
pub mod speech;
pub mod speech_to_text;
pub mod t2a;
pub mod transcriptions;

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
}

/// Set on a response by handlers that called an upstream, so that the metrics can tell the
/// gateway's own time from the upstream's.
#[derive(Debug, Clone, Copy)]
pub struct UpstreamTime(pub Duration);
