use std::time::Duration;

/// Where a timeout struck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Opening the connection (nothing was sent).
    Connect,
    /// Waiting for the response head after the request was sent.
    FirstByte,
    /// Waiting for the next piece of a response body.
    Idle,
}

/// Why an upstream call failed.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The request never reached the upstream (DNS, refused connection, TLS handshake).
    #[error("could not connect to the upstream: {0}")]
    Connect(String),
    /// The upstream took too long.
    #[error("the upstream timed out ({phase:?} after {after:?})")]
    Timeout {
        /// Where it struck.
        phase: Phase,
        /// The limit that was reached.
        after: Duration,
    },
    /// The upstream answered with an error status.
    #[error("the upstream answered {status}: {message}")]
    Status {
        /// The upstream's HTTP status.
        status: u16,
        /// Its error message, taken from the vendor's error body when it has one.
        message: String,
        /// `Retry-After` in seconds, when the upstream sent one.
        retry_after: Option<u64>,
    },
    /// The upstream's answer could not be read as its format says it should be.
    #[error("the upstream's response was not understood: {0}")]
    Protocol(String),
    /// The connection broke while the response was being read.
    #[error("the upstream connection failed: {0}")]
    Transport(String),
    /// The channel is misconfigured (bad base URL, say).
    #[error("the channel is misconfigured: {0}")]
    Config(String),
    /// No channel took the call: each was at its concurrency limit, switched off by an
    /// operator, or skipped by its circuit breaker. Nothing was sent.
    #[error("no channel is available: {0}")]
    NoChannel(String),
}

impl UpstreamError {
    /// True when trying the next channel is safe: nothing reached the upstream, or the upstream
    /// refused the request before doing any work (429, 502, 503). Requests are never retried
    /// after the upstream may have done (and charged for) the work.
    pub fn may_fail_over(&self) -> bool {
        match self {
            UpstreamError::Connect(_) | UpstreamError::Config(_) | UpstreamError::NoChannel(_) => {
                true
            }
            UpstreamError::Timeout { phase, .. } => *phase == Phase::Connect,
            UpstreamError::Status { status, .. } => matches!(status, 429 | 502 | 503),
            UpstreamError::Protocol(_) | UpstreamError::Transport(_) => false,
        }
    }
}
