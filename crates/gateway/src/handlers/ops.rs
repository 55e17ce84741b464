//! Operational endpoints and the answers for routes that are not built yet.

use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde_json::json;
use tollgate_gateway_core::body::{self, ResponseBody};
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::{ApiError, ErrorKind};
use tollgate_gateway_core::policy;
use tollgate_store::Principal;

/// `GET /healthz`: the process is alive.
pub fn healthz() -> Response<ResponseBody> {
    body::json_response(StatusCode::OK, &json!({"status": "ok"}))
}

/// `GET /.well-known/tollgate-ledger-keys`: the Ed25519 public keys whose signatures on ledger
/// checkpoints the operator stands behind (docs/architecture.md, "The chained ledger"), so that a
/// customer can check a statement (`tollgate verify`) against a key they fetched themselves.
pub fn ledger_keys(ctx: &RequestCtx) -> Response<ResponseBody> {
    let keys: Vec<_> = ctx
        .state
        .ledger_keys
        .iter()
        .filter_map(|hex| tollgate_store::checkpoint::parse_public_key(hex).ok())
        .map(|key| {
            json!({
                "key_id": tollgate_store::checkpoint::key_id(&key),
                "algorithm": "Ed25519",
                "public_key": hex::encode(key.as_bytes()),
            })
        })
        .collect();
    body::json_response(StatusCode::OK, &json!({"keys": keys}))
}

/// How long `/readyz` waits for the database.
const STORE_ANSWERS_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// `GET /readyz`: the store answers (within [`STORE_ANSWERS_WITHIN`]) and shutdown has not
/// begun.
pub async fn readyz(ctx: &RequestCtx) -> Response<ResponseBody> {
    if ctx.state.is_draining() {
        return body::json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "draining"}),
        );
    }
    // A database that does not answer (a partition) fails the check in time for the load
    // balancer's own timeout, instead of hanging it.
    let ping = tokio::time::timeout(STORE_ANSWERS_WITHIN, ctx.state.store.ping())
        .await
        .map_err(|_| format!("no answer within {STORE_ANSWERS_WITHIN:?}"))
        .and_then(|answer| answer.map_err(|e| e.to_string()));
    match ping {
        Ok(()) => body::json_response(StatusCode::OK, &json!({"status": "ready"})),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            body::json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"status": "store unreachable"}),
            )
        }
    }
}

/// Per-channel health on `GET /metrics`: calls by outcome, the circuit (0 closed, 1 half-open,
/// 2 open), calls in flight, latency percentiles, keys resting, the operator's switch.
fn channel_metrics(
    channels: &[std::sync::Arc<tollgate_gateway_core::catalog::Channel>],
    out: &mut String,
) {
    use std::fmt::Write;
    let now = std::time::Instant::now();
    let label = |c: &tollgate_gateway_core::catalog::Channel| {
        tollgate_gateway_core::metrics::label(&c.name)
    };
    let series = [
        (
            "tollgate_channel_calls_total",
            "counter",
            "Upstream calls by outcome.",
        ),
        (
            "tollgate_channel_circuit_state",
            "gauge",
            "0 closed, 1 half-open, 2 open.",
        ),
        ("tollgate_channel_in_flight", "gauge", "Calls in flight."),
        (
            "tollgate_channel_latency_ms",
            "gauge",
            "Latency percentiles of recent calls.",
        ),
        (
            "tollgate_channel_keys",
            "gauge",
            "Upstream keys, and those resting after a refusal.",
        ),
        (
            "tollgate_channel_switched_off",
            "gauge",
            "1 when an operator switched it off.",
        ),
        (
            "tollgate_channel_upstream_errors_total",
            "counter",
            "Error answers of the upstream, by HTTP status (401, 403: it refused the gateway's credentials).",
        ),
    ];
    for (name, kind, help) in series {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for c in channels {
            let r = c.health.report();
            let l = label(c);
            match name {
                "tollgate_channel_calls_total" => {
                    let _ = writeln!(
                        out,
                        "{name}{{channel=\"{l}\",outcome=\"success\"}} {}",
                        r.successes
                    );
                    let _ = writeln!(
                        out,
                        "{name}{{channel=\"{l}\",outcome=\"failure\"}} {}",
                        r.failures
                    );
                }
                "tollgate_channel_circuit_state" => {
                    let state = match r.circuit {
                        tollgate_gateway_core::channels::CircuitState::Closed => 0,
                        tollgate_gateway_core::channels::CircuitState::HalfOpen => 1,
                        tollgate_gateway_core::channels::CircuitState::Open => 2,
                    };
                    let _ = writeln!(out, "{name}{{channel=\"{l}\"}} {state}");
                }
                "tollgate_channel_in_flight" => {
                    let busy = c
                        .max_concurrency
                        .saturating_sub(c.permits.available_permits());
                    let _ = writeln!(out, "{name}{{channel=\"{l}\"}} {busy}");
                }
                "tollgate_channel_latency_ms" => {
                    for (q, v) in [
                        ("0.5", r.latency_ms.p50),
                        ("0.95", r.latency_ms.p95),
                        ("0.99", r.latency_ms.p99),
                    ] {
                        if let Some(v) = v {
                            let _ = writeln!(out, "{name}{{channel=\"{l}\",quantile=\"{q}\"}} {v}");
                        }
                    }
                }
                "tollgate_channel_keys" => {
                    let _ = writeln!(
                        out,
                        "{name}{{channel=\"{l}\",state=\"all\"}} {}",
                        c.keys.len()
                    );
                    let _ = writeln!(
                        out,
                        "{name}{{channel=\"{l}\",state=\"resting\"}} {}",
                        c.keys.resting(now)
                    );
                }
                "tollgate_channel_upstream_errors_total" => {
                    for (status, n) in c.health.refusals() {
                        let _ = writeln!(out, "{name}{{channel=\"{l}\",status=\"{status}\"}} {n}");
                    }
                }
                _ => {
                    let _ = writeln!(out, "{name}{{channel=\"{l}\"}} {}", u8::from(r.disabled));
                }
            }
        }
    }
}

/// `GET /metrics`: Prometheus text.
pub fn metrics(ctx: &RequestCtx) -> Response<ResponseBody> {
    let mut text = ctx.state.metrics.render();
    ctx.state.ledger.render_metrics(&mut text);
    ctx.state.quotas.render_metrics(&mut text);
    channel_metrics(&ctx.state.catalog.channels(), &mut text);
    if let Some(wal) = ctx.state.store.wal_bytes() {
        use std::fmt::Write;
        let _ = writeln!(
            text,
            "# HELP tollgate_sqlite_wal_bytes The size of SQLite's write-ahead log.\n\
             # TYPE tollgate_sqlite_wal_bytes gauge\n\
             tollgate_sqlite_wal_bytes {wal}"
        );
    }
    let mut response = Response::new(body::full(text));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    response
}

/// `GET /v1/models`: the public models and their aliases, in OpenAI's list shape (what OpenAI
/// clients call to discover models; an alias is accepted everywhere a model is).
pub async fn list_models(
    ctx: RequestCtx,
    principal: Principal,
    _request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let catalog = &ctx.state.catalog;
    let data: Vec<_> = catalog
        .client_names()
        .into_iter()
        .filter(|name| {
            catalog
                .lookup(name)
                .is_some_and(|entry| policy::may_use_model(&principal, &entry.public))
        })
        .map(model_object)
        .collect();
    Ok(body::json_response(
        StatusCode::OK,
        &json!({"object": "list", "data": data}),
    ))
}

/// `GET /v1/models/{model}`: one configured model, OpenAI's shape.
pub async fn get_model(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let id = tollgate_gateway_core::routes::last_segment(request.uri().path());
    let entry = ctx.state.catalog.lookup(id).ok_or_else(|| {
        ApiError::new(
            ErrorKind::NotFound,
            format!("The model '{id}' does not exist"),
        )
        .code("model_not_found")
    })?;
    policy::admit_model(&principal, &entry.public)?;
    Ok(body::json_response(StatusCode::OK, &model_object(id)))
}

/// OpenAI's model object for a name a client may use.
fn model_object(id: &str) -> serde_json::Value {
    json!({"id": id, "object": "model", "created": 0, "owned_by": "tollgate"})
}

/// `/v1/audio/translations` (docs/api.md §4 rule 5): 404, not 501 — the OpenAI SDKs retry every 5xx
/// (three round trips and a back-off to learn the same thing) and none of them retries a 404.
pub fn translations_unsupported() -> ApiError {
    ApiError::new(
        ErrorKind::NotFound,
        "Speech translation (/v1/audio/translations) is not supported; use /v1/audio/transcriptions",
    )
    .code("unsupported_endpoint")
}
