//! W3C trace context in and out (`docs/decisions.md`, "Traces"): a request continues the trace
//! its client's `traceparent` names, and each upstream attempt sends its own span's
//! `traceparent` on. With traces off (no OpenTelemetry layer installed) both are no-ops.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Spawns work of a request that outlives its handler (a stream's relay, a task's submission)
/// inside the request's span, so that every line it logs carries the request id, account and
/// model. What the work needs of the request — its usage draft among it — it takes by value.
pub fn spawn_for_request<F>(work: F) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(tracing::Instrument::instrument(
        work,
        tracing::Span::current(),
    ))
}

/// Whether spans are exported: set once by the binary when it installs the OpenTelemetry layer
/// (the subscriber is process-wide too). Until then nothing here does any work, so a gateway
/// that does not export pays for nothing but this load (docs/benchmarks.md).
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Says that spans are exported from now on.
pub fn set_exporting() {
    EXPORTING.store(true, Ordering::Relaxed);
}

/// Whether spans are exported.
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Names the request's span for the trace (its name, its kind, the GenAI operation) and makes
/// it a child of the client's span, when spans are exported.
pub fn server_span(
    span: &tracing::Span,
    method: &http::Method,
    endpoint: &str,
    headers: &http::HeaderMap,
) {
    if !exporting() {
        return;
    }
    span.record(
        "otel.name",
        tracing::field::display(format_args!("{method} {endpoint}")),
    );
    span.record("otel.kind", "server");
    if let Some(operation) = operation_name(endpoint) {
        span.record("gen_ai.operation.name", operation);
    }
    continue_trace(span, headers);
}

/// A request's headers, as the propagator reads them.
struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Makes `span` a child of the span the client's `traceparent` (and `tracestate`) name, when it
/// sent a valid one.
fn continue_trace(span: &tracing::Span, headers: &http::HeaderMap) {
    if !headers.contains_key("traceparent") {
        return;
    }
    let parent = TraceContextPropagator::new().extract(&Headers(headers));
    // Without the OpenTelemetry layer there is nothing to attach it to.
    let _ = span.set_parent(parent);
}

/// The `traceparent` naming the current span, for an upstream call; `None` when traces are off.
pub fn traceparent() -> Option<String> {
    if !exporting() {
        return None;
    }
    struct Traceparent(Option<String>);
    impl Injector for Traceparent {
        fn set(&mut self, key: &str, value: String) {
            if key == "traceparent" {
                self.0 = Some(value);
            }
        }
    }
    let context = tracing::Span::current().context();
    let mut out = Traceparent(None);
    TraceContextPropagator::new().inject_context(&context, &mut out);
    out.0
}

/// The span of one poll of a video task (`docs/decisions.md`, "Traces"): when spans are
/// exported and the submitting request's `traceparent` was kept on the task's row, a child of
/// that request's span with a link to it, so that a task's life — its submit, each poll on
/// whichever replica, the settlement — is one trace.
pub fn task_span(task: &tollgate_store::Task) -> tracing::Span {
    let span = tracing::info_span!(
        "task_poll",
        otel.name = "task poll",
        tollgate.task = %task.id,
        tollgate.channel = %task.channel,
        gen_ai.request.model = %task.model,
        tollgate.task.state = tracing::field::Empty,
        tollgate.charge = tracing::field::Empty,
    );
    if !exporting() {
        return span;
    }
    if let Some(traceparent) = &task.traceparent {
        let mut carrier = http::HeaderMap::new();
        if let Ok(value) = http::HeaderValue::from_str(traceparent) {
            carrier.insert("traceparent", value);
        }
        let submit = TraceContextPropagator::new().extract(&Headers(&carrier));
        let linked = opentelemetry::trace::TraceContextExt::span(&submit)
            .span_context()
            .clone();
        let _ = span.set_parent(submit);
        if linked.is_valid() {
            span.add_link(linked);
        }
    }
    span
}

/// Notes how a task's poll ended it on the poll's span: its state and, when it succeeded, the
/// charge.
pub fn record_task_end(state: &str, charge: Option<tollgate_billing::Amount>) {
    let span = tracing::Span::current();
    span.record("tollgate.task.state", state);
    if let Some(charge) = charge {
        span.record("tollgate.charge", tracing::field::display(charge));
    }
}

/// The OpenTelemetry GenAI `gen_ai.operation.name` of an endpoint (its metrics label), where
/// the conventions name one.
fn operation_name(endpoint: &str) -> Option<&'static str> {
    match endpoint {
        "embeddings" | "native_embeddings" => Some("embeddings"),
        "chat" | "responses" => Some("chat"),
        "native" => Some("generate_content"),
        _ => None,
    }
}

/// Notes a settled charge on the request's span: the amount (the log line shows it) and, when
/// spans are exported, its meter and the tokens the GenAI conventions name.
pub fn record_charge(usage: &tollgate_billing::Usage, charge: tollgate_billing::Amount) {
    use tollgate_billing::Usage;
    let span = tracing::Span::current();
    span.record("tollgate.charge", tracing::field::display(charge));
    if !exporting() {
        return;
    }
    span.record("tollgate.meter", usage.meter().as_str());
    match *usage {
        Usage::Tokens(input) => {
            span.record("gen_ai.usage.input_tokens", input);
        }
        Usage::TextTokens { input, output } => {
            span.record("gen_ai.usage.input_tokens", input);
            span.record("gen_ai.usage.output_tokens", output);
        }
        Usage::TokenClasses(classes) => {
            span.record("gen_ai.usage.input_tokens", classes.input());
            span.record("gen_ai.usage.output_tokens", classes.output());
        }
        _ => {}
    }
}
