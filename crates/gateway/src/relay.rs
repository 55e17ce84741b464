//! Calling a model's channels in priority order (DESIGN §6): the next channel is tried only when
//! nothing reached the upstream or it refused before doing work. Within a priority level the
//! channels split the calls by weight, and a channel's keys take turns (`docs/decisions.md`,
//! "Channel pools").

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_journal::usage::Recorder;
use tollgate_settings::catalog::{Channel, ModelEntry};
use tollgate_settings::channels::{Admit, rest_for};
use tollgate_upstream::common::error::redacted;
use tollgate_upstream::{Endpoint, UpstreamError};

/// Calls `call` on each channel of `entry` — with the endpoint and key this call is to use —
/// until one answers, respecting each channel's concurrency limit and health
/// (`docs/decisions.md`, "Channel health"): a channel switched off is never called; one whose
/// circuit is open is called only after every other has failed. The channel that served (or
/// was tried last) and its time are noted on the request's `usage` record.
pub async fn with_failover<T, F, Fut>(
    entry: &ModelEntry,
    usage: Option<&Recorder>,
    mut call: F,
) -> Result<(T, Arc<Channel>), UpstreamError>
where
    F: FnMut(Arc<Channel>, Endpoint) -> Fut,
    Fut: Future<Output = Result<T, UpstreamError>>,
{
    let mut last = UpstreamError::Config(format!("model {} has no channel", entry.public));
    let mut failing = Vec::new();
    for channel in entry.call_order() {
        let Some(permit) = acquire(channel, &mut last).await else {
            continue;
        };
        // After the permit: a trial call of a half-open circuit is then sure to be made.
        match channel.health.admit() {
            Admit::Yes => {}
            Admit::SwitchedOff => {
                last =
                    UpstreamError::NoChannel(format!("channel {} is switched off", channel.name));
                continue;
            }
            Admit::CircuitOpen => {
                failing.push(channel.clone());
                continue;
            }
        }
        match attempt(channel, usage, &mut call, permit).await {
            Ok(done) => return done,
            Err(e) => last = e,
        }
    }
    for channel in &failing {
        let Some(permit) = acquire(channel, &mut last).await else {
            continue;
        };
        tracing::debug!(channel = %channel.name, "its circuit is open, but no other channel answered");
        match attempt(channel, usage, &mut call, permit).await {
            Ok(done) => return done,
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A permit of the channel's concurrency limit, waiting at most its first-byte timeout; `None`
/// (with `last` saying why) when it stays saturated.
async fn acquire(
    channel: &Arc<Channel>,
    last: &mut UpstreamError,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    let wait = channel.endpoint.timeouts.first_byte;
    match tokio::time::timeout(wait, channel.permits.clone().acquire_owned()).await {
        Ok(Ok(permit)) => Some(permit),
        _ => {
            tracing::warn!(channel = %channel.name, "channel saturated");
            *last = UpstreamError::NoChannel(format!(
                "channel {} is at its concurrency limit",
                channel.name
            ));
            None
        }
    }
}

/// The calls on `channel`, their outcomes told to the channel's health. `Ok` ends the failover
/// (an answer, or an error the next channel must not be tried after); `Err` is a refusal that
/// may fail over. A channel with several keys tries the next one when the upstream refuses a
/// key (401, 403, 429), which then rests; that refusal is the key's, not the channel's, so the
/// circuit does not count it.
async fn attempt<T, F, Fut>(
    channel: &Arc<Channel>,
    usage: Option<&Recorder>,
    call: &mut F,
    _permit: tokio::sync::OwnedSemaphorePermit,
) -> Result<Result<(T, Arc<Channel>), UpstreamError>, UpstreamError>
where
    F: FnMut(Arc<Channel>, Endpoint) -> Fut,
    Fut: Future<Output = Result<T, UpstreamError>>,
{
    let pooled = channel.keys.len() > 1;
    let mut refused = None;
    loop {
        let Some((index, key)) = channel.keys.pick(Instant::now()) else {
            // The channel cannot take the call (its circuit hears so, which also ends a
            // half-open trial); no work was done on any key, so the next channel may be tried.
            channel.health.record_unavailable();
            return Err(refused.unwrap_or_else(|| {
                UpstreamError::NoChannel(format!(
                    "every key of channel {} is resting after the upstream refused it",
                    channel.name
                ))
            }));
        };
        // The attempt's client span (docs/decisions.md, "Traces"): a debug span, so that with
        // traces off it is never made.
        let span = tracing::debug_span!(
            "upstream",
            otel.name = %format_args!("{} {}", channel.format.name(), channel.name),
            otel.kind = "client",
            tollgate.channel = %channel.name,
            tollgate.key = index,
            http.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let endpoint = Endpoint {
            api_key: key.map(str::to_owned),
            traceparent: span.in_scope(crate::trace::traceparent),
            ..channel.endpoint.clone()
        };
        let called = Instant::now();
        let result =
            tracing::Instrument::instrument(call(channel.clone(), endpoint), span.clone()).await;
        let elapsed = called.elapsed();
        match &result {
            // The channel that served, on the request's span.
            Ok(_) if crate::trace::exporting() => {
                tracing::Span::current().record("tollgate.channel", channel.name.as_str());
            }
            Ok(_) => {}
            Err(UpstreamError::Status { status, .. }) => {
                span.record("http.response.status_code", status);
                span.record("error.type", status);
            }
            Err(e) => {
                span.record("error.type", tracing::field::display(e));
            }
        }
        if let Some(usage) = usage {
            usage.note_channel(&channel.name, elapsed);
        }
        if let Err(e) = &result {
            log_refusal(channel, index, e);
        }
        let rest = match &result {
            Err(UpstreamError::Status {
                status,
                retry_after,
                ..
            }) if pooled => rest_for(*status, *retry_after),
            _ => None,
        };
        if let Some(rest) = rest {
            channel.keys.rest(index, Instant::now() + rest);
            tracing::warn!(channel = %channel.name, key = index, rest_s = rest.as_secs(), "the upstream refused a key; it rests");
            refused = result.err();
            continue;
        }
        channel
            .health
            .record(!matches!(&result, Err(e) if e.may_fail_over()), elapsed);
        return match result {
            Ok(value) => Ok(Ok((value, channel.clone()))),
            Err(e) if e.may_fail_over() => {
                tracing::warn!(channel = %channel.name, error = %e, "upstream refused; trying the next channel");
                Err(e)
            }
            Err(e) => Ok(Err(e)),
        };
    }
}

/// An upstream's error answer, for the operator (`docs/decisions.md`, "Upstream errors"): the
/// body's excerpt goes to the log — in the request's span, so with its id — and never to the
/// client; each is counted on the channel by status.
fn log_refusal(channel: &Channel, key: usize, e: &UpstreamError) {
    let UpstreamError::Status { status, detail, .. } = e else {
        return;
    };
    channel.health.record_refusal(*status);
    if e.refused_credentials() {
        tracing::warn!(channel = %channel.name, key, status, detail, "the upstream refused the channel's credentials");
    } else {
        tracing::info!(channel = %channel.name, status, detail, "the upstream answered an error");
    }
}

/// How an upstream failure reaches the client. No byte of a vendor's body reaches it unless it
/// was a recognised error message in the vendor's format, and never for a refusal of the
/// gateway's own credentials, whose message may quote the key (`docs/decisions.md`, "Upstream
/// errors").
pub fn upstream_error(e: &UpstreamError) -> ApiError {
    match e {
        UpstreamError::Timeout { after, .. } => ApiError::new(
            ErrorKind::UpstreamTimeout,
            format!(
                "The upstream did not answer within {} s; the request was not charged",
                after.as_secs_f64()
            ),
        ),
        UpstreamError::Status {
            status: 429,
            retry_after,
            ..
        } => ApiError::new(
            ErrorKind::RateLimited,
            "The upstream is rate limiting requests; retry later",
        )
        .retry_after(retry_after.unwrap_or(1)),
        UpstreamError::Status {
            status: 401 | 403, ..
        } => ApiError::new(
            ErrorKind::UpstreamFailed,
            "The upstream refused the gateway's credentials; the request was not charged",
        )
        .code("upstream_credentials_refused"),
        UpstreamError::Status {
            status: 400 | 404 | 422,
            message,
            ..
        } => ApiError::new(
            ErrorKind::InvalidRequest,
            match message {
                Some(message) => {
                    format!("The upstream rejected the request: {}", redacted(message))
                }
                None => "The upstream rejected the request".to_owned(),
            },
        )
        .code("upstream_rejected"),
        UpstreamError::Status {
            status, message, ..
        } => ApiError::new(
            ErrorKind::UpstreamFailed,
            match message {
                Some(message) => format!(
                    "The upstream failed with HTTP {status}: {}; the request was not charged",
                    redacted(message)
                ),
                None => {
                    format!("The upstream failed with HTTP {status}; the request was not charged")
                }
            },
        ),
        UpstreamError::NoChannel(why) => ApiError::new(
            ErrorKind::Unavailable,
            format!("No upstream channel can take the request now ({why}); retry shortly"),
        )
        .retry_after(1),
        UpstreamError::Connect(_) | UpstreamError::Config(_) => ApiError::new(
            ErrorKind::UpstreamFailed,
            "The upstream could not be reached; the request was not charged",
        ),
        UpstreamError::Protocol(_) | UpstreamError::Transport(_) => ApiError::new(
            ErrorKind::UpstreamFailed,
            "The upstream's answer was broken; the request was not charged",
        ),
    }
}

/// Runs the rest of a request — the upstream call, the translation back and the settlement — to
/// completion even if the client goes away: once the upstream has the request it does (and
/// bills) the work, so the charge must be recorded whatever the client does. The work runs in
/// the handler's own task (no task, no cross-thread wake-ups on the common path); if the
/// handler is dropped first, what is left of the work moves to a task of its own
/// ([`RunToCompletion`]).
pub async fn to_completion<T, Fut>(work: Fut) -> Result<T, ApiError>
where
    Fut: Future<Output = Result<T, ApiError>> + Send + 'static,
    T: Send + 'static,
{
    RunToCompletion {
        work: Some(Box::pin(tracing::Instrument::instrument(
            work,
            tracing::Span::current(),
        ))),
    }
    .await
}

/// A future polled in place that, dropped before it finished, spawns its remainder: the boxed
/// work keeps its address, so it can change tasks halfway.
struct RunToCompletion<F: Future + Send + 'static>
where
    F::Output: Send + 'static,
{
    work: Option<Pin<Box<F>>>,
}

impl<F: Future + Send + 'static> Future for RunToCompletion<F>
where
    F::Output: Send + 'static,
{
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let Some(work) = self.work.as_mut() else {
            // Polled after it finished: a contract breach of the caller; never ready again.
            return Poll::Pending;
        };
        let output = std::task::ready!(work.as_mut().poll(cx));
        self.work = None;
        Poll::Ready(output)
    }
}

impl<F: Future + Send + 'static> Drop for RunToCompletion<F>
where
    F::Output: Send + 'static,
{
    fn drop(&mut self) {
        let Some(work) = self.work.take() else {
            return;
        };
        // Outside a runtime (its shutdown) the work is dropped: an open hold is released by
        // its own drop, exactly once.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                work.await;
            });
        }
    }
}

/// How a stream the upstream cut after delivering something reaches the client: like
/// [`upstream_error`], but saying what was charged for what was delivered (the ledger row says
/// the same), never "not charged".
pub fn stream_cut_error(e: &UpstreamError, charged: Option<tollgate_billing::Amount>) -> ApiError {
    let mut error = upstream_error(e);
    error.message = match charged {
        Some(amount) if amount.is_positive() => format!(
            "The upstream cut the stream ({e}); {amount} was charged for what was delivered"
        ),
        Some(_) => format!("The upstream cut the stream ({e}); nothing was charged"),
        None => format!(
            "The upstream cut the stream ({e}); the charge for what was delivered could not be recorded"
        ),
    };
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Issue 22 item 4: a vendor's refusal of the gateway's key never shows the key, and a body
    /// that is not a recognised error message never reaches the client at all.
    #[test]
    fn vendor_bodies_never_reach_the_client_unvetted() {
        let refused = |status, body: &[u8]| {
            upstream_error(&UpstreamError::refused(
                status,
                body,
                |b| {
                    serde_json::from_slice::<serde_json::Value>(b)
                        .ok()?
                        .pointer("/error/message")?
                        .as_str()
                        .map(str::to_owned)
                },
                None,
            ))
        };
        let key = br#"{"error":{"message":"Incorrect API key provided: sk-proj-abcd1234. You can find your API key at https://example."}}"#;
        for status in [401, 403] {
            let e = refused(status, key);
            assert_eq!(e.kind, ErrorKind::UpstreamFailed);
            assert_eq!(
                e.message,
                "The upstream refused the gateway's credentials; the request was not charged"
            );
            assert_eq!(e.code.as_deref(), Some("upstream_credentials_refused"));
        }
        let e = refused(
            502,
            b"<html><body>nginx: upstream sk-live-123 down</body></html>",
        );
        assert_eq!(
            e.message,
            "The upstream failed with HTTP 502; the request was not charged"
        );
        let e = refused(
            400,
            br#"{"error":{"message":"'voice' is not one of alloy, echo"}}"#,
        );
        assert_eq!(
            e.message,
            "The upstream rejected the request: 'voice' is not one of alloy, echo"
        );
        let e = refused(
            400,
            br#"{"error":{"message":"key sk-abcdef123 has no access to this model"}}"#,
        );
        assert!(!e.message.contains("sk-abcdef123"), "{}", e.message);
        let e = refused(500, b"plain text with nothing recognisable");
        assert!(!e.message.contains("plain text"), "{}", e.message);
    }

    /// The work of a request whose handler was dropped midway (a client that hung up) still
    /// finishes, in a task of its own; undisturbed, it finishes in place.
    #[tokio::test]
    async fn work_outlives_a_dropped_handler() {
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let (done, finished) = tokio::sync::oneshot::channel::<&str>();
        let handler = to_completion(async move {
            let _ = wait.await;
            let _ = done.send("finished");
            Ok::<_, ApiError>(())
        });
        assert!(
            tokio::time::timeout(Duration::from_millis(20), handler)
                .await
                .is_err(),
            "the work waits"
        );
        go.send(()).unwrap();
        assert_eq!(finished.await.unwrap(), "finished");

        assert_eq!(
            to_completion(async { Ok::<_, ApiError>(7) }).await.unwrap(),
            7
        );
    }
}
