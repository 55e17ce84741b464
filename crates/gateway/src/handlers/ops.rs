//! Operational endpoints, the OpenAI model list, and the refusal of what is not supported. Each
//! open route takes the request's context and the request, as the route table calls it.

use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;
use serde_json::json;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{About, described, ok, ok_json, r, text};
use tollgate_request::context::RequestCtx;
use tollgate_request::policy;
use tollgate_settings::catalog::{ModelList, ModelObject};
use tollgate_store::Principal;

/// What an open route answers.
type Answer = Result<Response<ResponseBody>, ApiError>;

/// `GET /healthz`: the process is alive.
pub async fn healthz(_ctx: RequestCtx, _request: Request<Incoming>) -> Answer {
    Ok(body::json_response(
        StatusCode::OK,
        &json!({"status": "ok"}),
    ))
}

/// `GET /.well-known/tollgate-ledger-keys`: the Ed25519 public keys whose signatures on ledger
/// checkpoints the operator stands behind (docs/architecture.md, "The chained ledger"), so that a
/// customer can check a statement (`tollgate verify`) against a key they fetched themselves.
pub async fn ledger_keys(ctx: RequestCtx, _request: Request<Incoming>) -> Answer {
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
    Ok(body::json_response(StatusCode::OK, &json!({"keys": keys})))
}

/// How long `/readyz` waits for the database.
const STORE_ANSWERS_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// How long the ledger's writer may fail to commit a batch before the replica is not ready.
const JOURNAL_STALLED_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// `GET /readyz`: the store answers (within [`STORE_ANSWERS_WITHIN`]), the ledger's writer is
/// committing (not failing for [`JOURNAL_STALLED_AFTER`]: charges that cannot be written must
/// not be taken on), and shutdown has not begun.
pub async fn readyz(ctx: RequestCtx, _request: Request<Incoming>) -> Answer {
    Ok(readiness(&ctx).await)
}

/// What `/readyz` answers.
async fn readiness(ctx: &RequestCtx) -> Response<ResponseBody> {
    if ctx.state.is_draining() {
        return body::json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "draining"}),
        );
    }
    if let Some(failing) = ctx.state.ledger.writer_failing_for()
        && failing >= JOURNAL_STALLED_AFTER
    {
        tracing::warn!(
            ?failing,
            "readiness check failed: the ledger's journal cannot be written"
        );
        return body::json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"status": "ledger writer failing"}),
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
/// 2 open), calls in flight, latency percentiles, keys resting, the operator's switch, and
/// error answers of the upstream by status — read from each channel's health at the scrape.
fn register_channel_metrics(
    channels: &[std::sync::Arc<tollgate_settings::catalog::Channel>],
    registry: &mut Registry,
) {
    use tollgate_settings::channels::CircuitState;
    type Labels = Vec<(&'static str, String)>;
    let now = std::time::Instant::now();
    let calls: Family<Labels, Counter> = Family::default();
    let circuit: Family<Labels, Gauge> = Family::default();
    let in_flight: Family<Labels, Gauge> = Family::default();
    let latency: Family<Labels, Gauge> = Family::default();
    let keys: Family<Labels, Gauge> = Family::default();
    let switched_off: Family<Labels, Gauge> = Family::default();
    let errors: Family<Labels, Counter> = Family::default();
    let gauge = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
    for c in channels {
        let r = c.health.report();
        let channel = || vec![("channel", c.name.clone())];
        let with = |name: &'static str, value: &str| {
            let mut labels = channel();
            labels.push((name, value.to_owned()));
            labels
        };
        calls
            .get_or_create(&with("outcome", "success"))
            .inc_by(r.successes);
        calls
            .get_or_create(&with("outcome", "failure"))
            .inc_by(r.failures);
        circuit.get_or_create(&channel()).set(match r.circuit {
            CircuitState::Closed => 0,
            CircuitState::HalfOpen => 1,
            CircuitState::Open => 2,
        });
        in_flight.get_or_create(&channel()).set(gauge(
            c.max_concurrency
                .saturating_sub(c.permits.available_permits()),
        ));
        for (q, v) in [
            ("0.5", r.latency_ms.p50),
            ("0.95", r.latency_ms.p95),
            ("0.99", r.latency_ms.p99),
        ] {
            if let Some(v) = v {
                latency
                    .get_or_create(&with("quantile", q))
                    .set(i64::from(v));
            }
        }
        keys.get_or_create(&with("state", "all"))
            .set(gauge(c.keys.len()));
        keys.get_or_create(&with("state", "resting"))
            .set(gauge(c.keys.resting(now)));
        switched_off
            .get_or_create(&channel())
            .set(i64::from(r.disabled));
        for (status, n) in c.health.refusals() {
            errors
                .get_or_create(&with("status", &status.to_string()))
                .inc_by(n);
        }
    }
    registry.register("tollgate_channel_calls", "Upstream calls by outcome", calls);
    registry.register(
        "tollgate_channel_circuit_state",
        "0 closed, 1 half-open, 2 open",
        circuit,
    );
    registry.register("tollgate_channel_in_flight", "Calls in flight", in_flight);
    registry.register(
        "tollgate_channel_latency_ms",
        "Latency percentiles of recent calls",
        latency,
    );
    registry.register(
        "tollgate_channel_keys",
        "Upstream keys, and those resting after a refusal",
        keys,
    );
    registry.register(
        "tollgate_channel_switched_off",
        "1 when an operator switched it off",
        switched_off,
    );
    registry.register(
        "tollgate_channel_upstream_errors",
        "Error answers of the upstream, by HTTP status (401, 403: it refused the gateway's credentials)",
        errors,
    );
}

/// `GET /metrics`: Prometheus text, written by `prometheus_client` from a registry made for the
/// scrape — the request path's books, the ledger, limits and budgets, channels, SQLite's
/// write-ahead log (docs/metrics-series.txt lists every series).
pub async fn metrics(ctx: RequestCtx, _request: Request<Incoming>) -> Answer {
    let mut scrape = Registry::default();
    ctx.state.metrics.register_metrics(&mut scrape);
    ctx.state.ledger.register_metrics(&mut scrape);
    ctx.state.quotas.register_metrics(&mut scrape);
    register_channel_metrics(&ctx.settings.catalog.channels(), &mut scrape);
    let settings = &ctx.state.settings;
    scrape.register(
        "tollgate_config_generation",
        "The generation of the reloadable settings in force: 1 at start, one more for each reload that changed something",
        ConstGauge::new(i64::try_from(settings.generation()).unwrap_or(i64::MAX)),
    );
    scrape.register(
        "tollgate_config_reloads_refused",
        "Reloads refused (the file did not read, did not fit together, or changed what needs a restart); the settings in force kept serving",
        ConstCounter::new(settings.refused()),
    );
    let live = &ctx.state.live;
    scrape.register(
        "tollgate_live_sessions_open",
        "Live voice sessions (/v1/realtime) open on this replica",
        ConstGauge::new(i64::try_from(live.open()).unwrap_or(i64::MAX)),
    );
    scrape.register(
        "tollgate_live_sessions_opened",
        "Live voice sessions opened on this replica since it started",
        ConstCounter::new(live.opened()),
    );
    if let Some(wal) = ctx.state.store.wal_bytes() {
        scrape.register(
            "tollgate_sqlite_wal_bytes",
            "The size of SQLite's write-ahead log",
            ConstGauge::new(i64::try_from(wal).unwrap_or(i64::MAX)),
        );
    }
    let mut text = String::new();
    tollgate_request::metrics::encode(&mut text, &scrape);
    let mut response = Response::new(body::full(text));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(tollgate_request::metrics::CONTENT_TYPE),
    );
    Ok(response)
}

/// `GET /v1/models`: the public models and their aliases, in OpenAI's list shape (what OpenAI
/// clients call to discover models; an alias is accepted everywhere a model is).
pub async fn list_models(
    ctx: RequestCtx,
    principal: Principal,
    _request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let catalog = &ctx.settings.catalog;
    let data: Vec<_> = catalog
        .client_names()
        .into_iter()
        .filter(|name| {
            catalog
                .lookup(name)
                .is_some_and(|entry| policy::may_use_model(&principal, &entry.public))
        })
        .map(ModelObject::named)
        .collect();
    Ok(body::json_response(
        StatusCode::OK,
        &ModelList {
            object: "list",
            data,
        },
    ))
}

/// `GET /v1/models/{model}`: one configured model, OpenAI's shape.
pub async fn get_model(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let id = tollgate_request::routes::last_segment(request.uri().path());
    let entry = ctx.settings.catalog.lookup(id).ok_or_else(|| {
        ApiError::new(
            ErrorKind::NotFound,
            format!("The model '{id}' does not exist"),
        )
        .code("model_not_found")
    })?;
    crate::admission::admit_model(&principal, &entry.public)?;
    Ok(body::json_response(StatusCode::OK, &ModelObject::named(id)))
}

/// `/v1/audio/translations` (docs/api.md §4 rule 5): 404, not 501 — the OpenAI SDKs retry every 5xx
/// (three round trips and a back-off to learn the same thing) and none of them retries a 404.
pub async fn translations_unsupported(_ctx: RequestCtx, _request: Request<Incoming>) -> Answer {
    Err(ApiError::new(
        ErrorKind::NotFound,
        "Speech translation (/v1/audio/translations) is not supported; use /v1/audio/transcriptions",
    )
    .code("unsupported_endpoint"))
}

/// `GET /healthz`, in the OpenAPI document.
pub fn about_healthz() -> About {
    About::new(
        "Liveness",
        "operations",
        ok(json!({"type": "object", "properties": {"status": {"type": "string"}}})),
    )
}

/// `GET /readyz`, in the OpenAPI document.
pub fn about_readyz() -> About {
    About::new(
        "Readiness: the database answers and shutdown has not begun",
        "operations",
        json!({
            "200": ok_json(json!({"type": "object"})),
            "503": described(json!({"type": "object"}), "Draining or the database is down"),
        }),
    )
}

/// `GET /metrics`, in the OpenAPI document.
pub fn about_metrics() -> About {
    About::new(
        "Prometheus metrics",
        "operations",
        json!({"200": {"description": "Prometheus text format", "content": {"text/plain": text()}}}),
    )
}

/// `GET /openapi.json` (served by the operator's side), in the OpenAPI document.
pub fn about_openapi() -> About {
    About::new("This document", "operations", ok(json!({"type": "object"})))
}

/// `GET /console` (served by the operator's side), in the OpenAPI document.
pub fn about_console() -> About {
    About::new(
        "The web console (HTML, signs in with an admin token)",
        "operations",
        json!({"200": {"description": "The page", "content": {"text/html": text()}}}),
    )
}

/// `GET /portal`, in the OpenAPI document (its JSON API is listed route by route).
pub fn about_portal() -> About {
    About::new(
        "The customer portal (HTML; people of an account sign in with their password)",
        "portal",
        json!({"200": {"description": "The page", "content": {"text/html": text()}}}),
    )
}

/// `GET /.well-known/tollgate-ledger-keys`, in the OpenAPI document.
pub fn about_ledger_keys() -> About {
    About::new(
        "The Ed25519 public keys that sign ledger checkpoints",
        "billing",
        ok(json!({
            "type": "object",
            "required": ["keys"],
            "properties": {"keys": {"type": "array", "items": {
                "type": "object",
                "required": ["key_id", "algorithm", "public_key"],
                "properties": {
                    "key_id": {"type": "string"},
                    "algorithm": {"const": "Ed25519"},
                    "public_key": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                },
            }}},
        })),
    )
}

/// `GET /v1/models`, in the OpenAPI document.
pub fn about_list_models() -> About {
    About::new(
        "Models and aliases a key may call (the native list for a native key header)",
        "models",
        ok(json!({"anyOf": [r("ModelList"), r("NativeModelList")]})),
    )
}

/// `POST /v1/audio/translations`, in the OpenAPI document.
pub fn about_translations() -> About {
    About::new(
        "Not supported (docs/api.md §4 rule 5)",
        "recognition",
        json!({}),
    )
}
