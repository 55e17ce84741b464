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
    #[error("the upstream answered {status}{}", said(*status, message.as_deref()))]
    Status {
        /// The upstream's HTTP status.
        status: u16,
        /// The vendor's own error message, read from an error body in its format; `None` when
        /// the body was not one (an HTML page, plain text, nothing). Only such a message may
        /// reach a client, and never one of a refusal of the gateway's own credentials
        /// (`docs/decisions.md`, "Upstream errors").
        message: Option<String>,
        /// What the body said, cut to 512 bytes: for the operator's log, never a client.
        detail: String,
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

impl UpstreamError {
    /// A refusal: `status`, the error body `body` (its message read by `read`, the vendor
    /// format's reader of error bodies) and `Retry-After`.
    pub fn refused(
        status: u16,
        body: &[u8],
        read: impl Fn(&[u8]) -> Option<String>,
        retry_after: Option<u64>,
    ) -> UpstreamError {
        UpstreamError::Status {
            status,
            message: read(body),
            detail: excerpt(body),
            retry_after,
        }
    }

    /// Whether the upstream refused the gateway's own credentials (401, 403).
    pub fn refused_credentials(&self) -> bool {
        matches!(
            self,
            UpstreamError::Status {
                status: 401 | 403,
                ..
            }
        )
    }
}

/// How a refusal's [`Display`](std::fmt::Display) ends: the vendor's message when it had one in
/// its format, except for a refusal of the gateway's credentials, whose message may quote the
/// key (`Incorrect API key provided: sk-…abcd`).
fn said(status: u16, message: Option<&str>) -> String {
    match message {
        _ if matches!(status, 401 | 403) => {
            ": the upstream refused the gateway's credentials".into()
        }
        Some(message) if !message.is_empty() => format!(": {}", redacted(message)),
        _ => String::new(),
    }
}

/// The first 512 bytes of an error body, as text, for the log.
pub fn excerpt(body: &[u8]) -> String {
    let cut = body.len().min(512);
    String::from_utf8_lossy(&body[..cut]).into_owned()
}

/// Words that start like an API key, in any vendor's spelling: a recognised error message may
/// still quote one (`Incorrect API key provided: sk-…`), so such words are masked.
const KEY_PREFIXES: [&str; 11] = [
    "sk-", "sk_", "pk_", "rk_", "tg-", "tga-", "AIza", "key-", "gsk_", "xai-", "Bearer",
];

/// Words that start like an account's, an organisation's or a project's id at a vendor: the
/// operator's own, never a client's business (issue 42: `org-…` in a 4xx message).
const ID_PREFIXES: [&str; 8] = [
    "org-", "org_", "proj_", "proj-", "project-", "user-", "acct_", "acct-",
];

/// Host names that name the vendor's inside, not a public service.
const INTERNAL_SUFFIXES: [&str; 7] = [
    ".internal",
    ".local",
    ".lan",
    ".svc",
    ".cluster.local",
    ".corp",
    ".localdomain",
];

/// `message` with what a client must not read masked: every word that starts like a key or a
/// vendor account's id (`[redacted]`), and every address — a URL, an IP address with or without
/// its port, an internal host name, an e-mail address (`[address]`).
///
/// ```
/// use tollgate_upstream::common::error::redacted;
/// assert_eq!(redacted("key sk-abc123def is invalid"), "key [redacted] is invalid");
/// assert_eq!(redacted("model gen-2.5 is busy"), "model gen-2.5 is busy");
/// assert_eq!(
///     redacted("quota of org-7Hk2x exceeded (shard 10.4.2.17:8443)"),
///     "quota of [redacted] exceeded (shard [address])"
/// );
/// assert_eq!(
///     redacted("see http://inference-7.svc/healthz or ops@vendor.example."),
///     "see [address] or [address]."
/// );
/// ```
pub fn redacted(message: &str) -> String {
    message
        .split(' ')
        .map(|word| {
            let start = word
                .find(|c: char| !matches!(c, '"' | '\'' | '(' | '[' | '<' | '`'))
                .unwrap_or(word.len());
            let lead = &word[..start];
            let bare = word[start..]
                .trim_end_matches(['"', '\'', ')', ']', '>', '`', ',', '.', ';', ':', '!', '?']);
            let tail = &word[start + bare.len()..];
            let masked = if bare.len() > 6
                && KEY_PREFIXES
                    .iter()
                    .chain(ID_PREFIXES.iter())
                    .any(|p| bare.starts_with(p))
            {
                "[redacted]"
            } else if is_address(bare) {
                "[address]"
            } else {
                return word.to_owned();
            };
            format!("{lead}{masked}{tail}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `word` is an address: a URL, an IP address (with a port or not), an e-mail address,
/// or a host name of an internal suffix.
fn is_address(word: &str) -> bool {
    if word.contains("://") {
        return true;
    }
    if word.parse::<std::net::IpAddr>().is_ok() || word.parse::<std::net::SocketAddr>().is_ok() {
        return true;
    }
    let host = word.rsplit_once(':').map_or(word, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) && !port.is_empty() {
            h
        } else {
            word
        }
    });
    if host.parse::<std::net::Ipv4Addr>().is_ok() {
        return true;
    }
    if let Some((user, domain)) = host.split_once('@') {
        return !user.is_empty() && domain.contains('.');
    }
    let lower = host.to_ascii_lowercase();
    lower.contains('.')
        && INTERNAL_SUFFIXES
            .iter()
            .any(|s| lower.ends_with(s) || lower == s[1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_work_free_failures_fail_over() {
        assert!(UpstreamError::Connect("refused".into()).may_fail_over());
        let status = |s| UpstreamError::refused(s, b"", |_| None, None);
        assert!(status(503).may_fail_over());
        assert!(status(429).may_fail_over());
        assert!(!status(500).may_fail_over());
        assert!(!status(400).may_fail_over());
        assert!(
            !UpstreamError::Timeout {
                phase: Phase::FirstByte,
                after: std::time::Duration::from_secs(1)
            }
            .may_fail_over()
        );
    }
}
