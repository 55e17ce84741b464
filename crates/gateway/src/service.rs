//! [`Gateway`]: the request pipeline as a hyper `Service`. It routes, runs the handler, renders
//! errors in the route's family shape, and adds what every response carries: a request id,
//! a log line and metrics.

use crate::admission;
use crate::handlers;
use futures_util::FutureExt;
use http::{HeaderValue, Request, Response, header};
use hyper::body::Incoming;
use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;
use tollgate_gateway_core::auth;
use tollgate_gateway_core::body::ResponseBody;
use tollgate_gateway_core::connections::{self, Ticket};
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::{ApiError, ErrorKind, Family};
use tollgate_gateway_core::operator::OperatorSide;
use tollgate_gateway_core::policy;
use tollgate_gateway_core::response::UpstreamTime;
use tollgate_gateway_core::routes::{self, Credentials, Route};
use tollgate_gateway_core::state::State;
use tollgate_gateway_core::usage::Recorder;
use tollgate_store::{Cidr, Principal};
use tracing::Instrument;

/// The gateway; cheap to clone (one per connection).
#[derive(Debug, Clone)]
pub struct Gateway {
    state: Arc<State>,
    /// A connection accepted past `max_connections`, in the reserve: it answers only the
    /// operational routes (`docs/decisions.md`, "Connection hygiene").
    ops_only: bool,
    /// The connection's peer, when served on a socket.
    peer: Option<IpAddr>,
    /// The peer is one of `[server] trusted_proxies`.
    from_trusted_proxy: bool,
    /// The connection's place in the registry, when served on a socket: requests mark it busy
    /// so that it is not chosen to give way (`tollgate_gateway_core::connections`).
    connection: Option<Arc<Ticket>>,
    /// `[server] trusted_proxies`, parsed.
    trusted_proxies: Arc<[Cidr]>,
    /// What serves the operator's routes, when mounted (`tollgate-admin`); without one they
    /// are 404.
    operator: Option<Arc<dyn OperatorSide>>,
}

impl Gateway {
    /// A gateway over `state`.
    pub fn new(state: Arc<State>) -> Gateway {
        let trusted_proxies = state.server.trusted_proxies.as_slice().into();
        Gateway {
            state,
            ops_only: false,
            peer: None,
            from_trusted_proxy: false,
            connection: None,
            trusted_proxies,
            operator: None,
        }
    }

    /// The same gateway with `side` serving the operator's routes (the admin API, the console,
    /// the OpenAPI document).
    pub fn with_operator_side(self, side: Arc<dyn OperatorSide>) -> Gateway {
        Gateway {
            operator: Some(side),
            ..self
        }
    }

    /// The same gateway for a connection from `peer`.
    pub fn for_peer(&self, peer: IpAddr) -> Gateway {
        Gateway {
            peer: Some(peer),
            from_trusted_proxy: self.trusted_proxies.iter().any(|t| t.contains(peer)),
            ..self.clone()
        }
    }

    /// The same gateway for the admitted connection holding `ticket`.
    pub fn on_connection(&self, ticket: Arc<Ticket>) -> Gateway {
        Gateway {
            connection: Some(ticket),
            ..self.clone()
        }
    }

    /// The same gateway for a connection of the reserve: `/healthz`, `/readyz` and `/metrics`
    /// answer; everything else is 503 and the connection closes.
    pub fn ops_only(&self) -> Gateway {
        Gateway {
            ops_only: true,
            ..self.clone()
        }
    }

    /// Whether the connection's peer is one of `[server] trusted_proxies`.
    pub fn from_trusted_proxy(&self) -> bool {
        self.from_trusted_proxy
    }

    /// Its shared state.
    pub fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// Handles one request (what the `Service` impl calls).
    pub async fn handle(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        let started = Instant::now();
        let (request_id, replaced_id) = request_id(&request);
        let mut routed = routes::route(request.method(), request.uri().path());
        // `GET /v1/models[/{id}]` is the native list for a native client (its SDK calls there):
        // its errors then take the native shape too.
        if routed.route.spec().map(|s| s.credentials) == Some(Credentials::KeyByClient)
            && handlers::native::is_native_client(&request)
        {
            routed.family = tollgate_gateway_core::errors::Family::Google;
        }
        let _in_flight = self.state.metrics.enter();
        // The path only: the query may carry a key (`?key=`).
        // account, key and model are recorded by authentication and the hold, charge by the
        // settlement (`charge.rs`), so the access line says who spent what on which model.
        // With traces on it is the trace's server span, under the client's `traceparent`
        // (docs/decisions.md, "Traces"); the GenAI and tollgate attributes are recorded as the
        // request learns them.
        let span = tracing::info_span!(
            "request",
            id = %request_id,
            method = %request.method(),
            path = %request.uri().path(),
            otel.name = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
            gen_ai.operation.name = tracing::field::Empty,
            tollgate.account = tracing::field::Empty,
            tollgate.key = tracing::field::Empty,
            gen_ai.request.model = tracing::field::Empty,
            tollgate.channel = tracing::field::Empty,
            tollgate.meter = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            tollgate.charge = tracing::field::Empty,
            http.response.status_code = tracing::field::Empty,
        );
        crate::trace::server_span(&span, request.method(), routed.endpoint, request.headers());
        if let Some(sent) = &replaced_id {
            span.in_scope(|| {
                tracing::info!(
                    client_request_id = ?sent,
                    "the client's x-request-id was replaced: only 1 to 128 of [A-Za-z0-9._:-] are kept"
                );
            });
        }
        // Metered requests are logged, under their policy endpoint's name.
        let recorder = routed
            .route
            .policy_endpoint()
            .filter(|_| routed.route.is_metered())
            .map(|endpoint| Recorder::start(&self.state.ledger, endpoint, &request_id));
        let ctx = RequestCtx {
            state: self.state.clone(),
            settings: self.state.settings.snapshot(),
            request_id: request_id.clone(),
            route: routed.route,
            client: auth::client_address(self.peer, request.headers(), &self.trusted_proxies),
            from_trusted_proxy: self.from_trusted_proxy,
            usage: recorder.clone(),
        };
        let over_limit = self.ops_only
            && !matches!(
                routed.route,
                Route::Healthz | Route::Readyz | Route::Metrics
            );
        let outcome = if over_limit {
            Err(ApiError::new(
                ErrorKind::Unavailable,
                "The gateway is at its connection limit; retry shortly",
            ))
        } else {
            // A panic in a handler becomes a 500; its hold is released by the hold's drop guard.
            let work = dispatch(ctx, routed.route, request, self.operator.clone());
            AssertUnwindSafe(work.instrument(span.clone()))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    Err(ApiError::new(
                        ErrorKind::Internal,
                        "Internal error; the request was not charged",
                    ))
                })
        };
        if let Some(rule) = outcome.as_ref().err().and_then(policy::policy_rule) {
            self.state.metrics.policy_refusal(rule);
        }
        let mut response = outcome.unwrap_or_else(|e| e.into_response(routed.family));
        if over_limit {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if let Ok(v) = HeaderValue::from_str(&request_id) {
            response.headers_mut().insert("x-request-id", v);
        }
        if matches!(routed.route, Route::Admin | Route::Console) {
            // The operator's side answers secrets (new keys, tokens) and account data: no cache
            // on the way may keep any of it (`docs/decisions.md`, "The admin API").
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
        let upstream = response.extensions().get::<UpstreamTime>().map(|u| u.0);
        let elapsed = started.elapsed();
        let status = response
            .extensions()
            .get::<tollgate_gateway_core::errors::ErrorStatus>()
            .map_or(response.status(), |honest| honest.0)
            .as_u16();
        self.state
            .metrics
            .record(routed.endpoint, status, elapsed, upstream);
        if let Some(recorder) = recorder {
            recorder.answered(status);
            for (name, value) in recorder.rate_headers() {
                if let Ok(v) = HeaderValue::from_str(&value) {
                    response.headers_mut().insert(name, v);
                }
            }
            // A whole answer was charged before it is sent: it says what it cost (docs/api.md,
            // "What a request cost"). A stream says it in its last event.
            if let Some(charged) = recorder.charged() {
                for (name, value) in charge_headers(&charged) {
                    if let Ok(v) = HeaderValue::from_str(&value) {
                        response.headers_mut().insert(name, v);
                    }
                }
            }
        }
        if crate::trace::exporting() {
            span.record("http.response.status_code", status);
        }
        span.in_scope(|| {
            tracing::info!(
                status,
                endpoint = routed.endpoint,
                ms = elapsed.as_secs_f64() * 1000.0,
                upstream_ms = upstream.map(|u| u.as_secs_f64() * 1000.0),
                "request"
            );
        });
        response
    }
}

/// DESIGN §2 after routing: a client route's caller is authenticated here, once for every
/// handler, in the way its family's clients present keys, and the handler is handed the
/// principal; the other routes need no client key.
async fn dispatch(
    ctx: RequestCtx,
    route: Route,
    request: Request<Incoming>,
    operator: Option<Arc<dyn OperatorSide>>,
) -> Result<Response<ResponseBody>, ApiError> {
    let Some(family) = credentials(route, &request) else {
        return open(ctx, route, request, operator).await;
    };
    let query = request.uri().query();
    let principal = match admission::authenticate(&ctx, family, request.headers(), query).await {
        Ok(principal) => principal,
        Err(e) if route == Route::NativeStream => {
            return handlers::native::refused_stream(&request, e);
        }
        Err(e) => return Err(e),
    };
    client(ctx, principal, family, route, request).await
}

/// How a route's clients present their key — its row's `credentials` (docs/api.md §5) — or
/// `None` for a route that takes no client key (operations, signed media links, the operator's
/// side with its own tokens).
fn credentials(route: Route, request: &Request<Incoming>) -> Option<Family> {
    match route.spec()?.credentials {
        Credentials::Key(family) => Some(family),
        Credentials::KeyByClient => Some(
            if handlers::native::is_native_client(request)
                || request.uri().path().starts_with("/v1beta/")
            {
                Family::Google
            } else {
                Family::OpenAi
            },
        ),
        Credentials::Open | Credentials::Operator => None,
    }
}

/// The client routes, with their caller and how it presented its key (which also says whether
/// the model routes answer in the native shape).
async fn client(
    ctx: RequestCtx,
    principal: Principal,
    family: Family,
    route: Route,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let id = || routes::item(request.uri().path()).to_owned();
    match route {
        Route::ListModels if family == Family::Google => {
            handlers::native::list_models(ctx, principal, request).await
        }
        Route::ListModels => handlers::ops::list_models(ctx, principal, request).await,
        Route::Embeddings => handlers::embeddings::create(ctx, principal, request).await,
        Route::Speech => handlers::speech::create(ctx, principal, request).await,
        Route::T2a => handlers::t2a::create(ctx, principal, request).await,
        Route::Transcriptions => handlers::transcriptions::create(ctx, principal, request).await,
        Route::SpeechToText => handlers::speech_to_text::create(ctx, principal, request).await,
        Route::ClipTaskCreate => handlers::clip_tasks::create(ctx, principal, request).await,
        Route::ClipTaskList => handlers::clip_tasks::list(ctx, principal, request).await,
        Route::ClipTaskGet => {
            let id = id();
            handlers::clip_tasks::get(ctx, principal, request, &id).await
        }
        Route::ClipTaskDelete => {
            let id = id();
            handlers::clip_tasks::delete(ctx, principal, request, &id).await
        }
        Route::VideoCreate => handlers::video_generations::create(ctx, principal, request).await,
        Route::VideoGet => {
            let id = id();
            handlers::video_generations::get(ctx, principal, request, &id).await
        }
        Route::VideosCreate => handlers::videos::create(ctx, principal, request).await,
        Route::VideosList => handlers::videos::list(ctx, principal, request).await,
        Route::VideosGet => {
            let id = id();
            handlers::videos::get(ctx, principal, request, &id).await
        }
        Route::VideosDelete => {
            let id = id();
            handlers::videos::delete(ctx, principal, request, &id).await
        }
        Route::VideosContent => {
            let id = id();
            handlers::videos::content(ctx, principal, request, &id).await
        }
        Route::VideosRemix => {
            let id = id();
            handlers::videos::remix(ctx, principal, request, &id).await
        }
        Route::VideosUnsupported | Route::VideosCharacter => {
            handlers::videos::unsupported(ctx, request).await
        }
        Route::Charges => {
            let id = id();
            handlers::charges::get(ctx, principal, &id).await
        }
        Route::NativeGenerate => handlers::native::generate(ctx, principal, request, false).await,
        Route::NativeStream => handlers::native::generate(ctx, principal, request, true).await,
        Route::NativeCountTokens => handlers::native::count_tokens(ctx, principal, request).await,
        Route::NativeListModels => handlers::native::list_models(ctx, principal, request).await,
        Route::NativeEmbed | Route::NativeBatchEmbed => {
            handlers::native_embeddings::create(ctx, principal, request).await
        }
        Route::ModelGet if family == Family::Google => {
            handlers::native::get_model(ctx, principal, request).await
        }
        Route::ModelGet => handlers::ops::get_model(ctx, principal, request).await,
        Route::ChatCompletions => handlers::chat::create(ctx, principal, request).await,
        Route::Responses => handlers::responses::create(ctx, principal, request).await,
        // `credentials` sends no other route here.
        _ => open(ctx, route, request, None).await,
    }
}

/// The routes that take no client key; the operator's, through `operator` when one is mounted.
async fn open(
    ctx: RequestCtx,
    route: Route,
    request: Request<Incoming>,
    operator: Option<Arc<dyn OperatorSide>>,
) -> Result<Response<ResponseBody>, ApiError> {
    if route.operators_side() {
        crate::admission::operator_reachable(&ctx)?;
    }
    if matches!(route, Route::Admin | Route::OpenApi | Route::Console) {
        // Without an operator's side mounted, these paths are as unknown as any other.
        return match operator {
            Some(side) => side.serve(ctx, request).await,
            None => Err(unknown_url(&request)),
        };
    }
    match route {
        Route::Healthz => Ok(handlers::ops::healthz()),
        Route::Readyz => Ok(handlers::ops::readyz(&ctx).await),
        Route::Metrics => Ok(handlers::ops::metrics(&ctx)),
        Route::LedgerKeys => Ok(handlers::ops::ledger_keys(&ctx)),
        Route::Media => {
            let file = routes::last_segment(request.uri().path()).to_owned();
            handlers::media::get(ctx, request, &file).await
        }
        Route::Translations => Err(handlers::ops::translations_unsupported()),
        Route::MethodNotAllowed(allow) => {
            let e = ApiError::new(
                ErrorKind::MethodNotAllowed,
                format!("{} is not allowed here; use {allow}", request.method()),
            );
            let mut response = e.into_response(routes::family_of(request.uri().path()));
            if let Ok(v) = HeaderValue::from_str(&allow.to_string()) {
                response.headers_mut().insert(header::ALLOW, v);
            }
            Ok(response)
        }
        // NotFound, and (never) a client route without its caller.
        _ => Err(unknown_url(&request)),
    }
}

/// 404 for a path nothing here serves.
fn unknown_url(request: &Request<Incoming>) -> ApiError {
    ApiError::new(
        ErrorKind::NotFound,
        format!(
            "Unknown request URL: {} {}",
            request.method(),
            request.uri().path()
        ),
    )
    .code("unknown_url")
}

/// The `x-tollgate-charge`, `x-tollgate-units` and `x-tollgate-price` headers of a charged
/// answer.
fn charge_headers(
    charged: &tollgate_gateway_core::usage::Charged,
) -> impl Iterator<Item = (&'static str, String)> + '_ {
    [
        Some(("x-tollgate-charge", charged.amount.to_string())),
        Some(("x-tollgate-units", charged.units.clone())),
        charged.price.clone().map(|p| ("x-tollgate-price", p)),
    ]
    .into_iter()
    .flatten()
}

/// The request's id: the client's `x-request-id` when it is 1 to 128 characters of
/// `[A-Za-z0-9._:-]`, otherwise one of the gateway's own (`docs/api.md` §1). An id that travels
/// into logs, the usage log, its CSV export and the console can carry no formula, markup or
/// control character. Also the client's id when it was replaced, to be logged.
fn request_id<B>(request: &Request<B>) -> (String, Option<String>) {
    let sent = request.headers().get("x-request-id");
    let acceptable = sent
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(is_id_byte));
    match acceptable {
        Some(id) => (id.to_owned(), None),
        None => {
            let replaced = sent.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            // Time first, like every id of the store: the usage log's index by request id
            // then grows at its right edge.
            (tollgate_store::new_id("req"), replaced)
        }
    }
}

/// A byte a request id may have.
fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-')
}

impl hyper::service::Service<Request<Incoming>> for Gateway {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let gateway = self.clone();
        // Busy from the complete head until the response's body is sent or dropped.
        let busy = self.connection.as_ref().map(Ticket::request);
        Box::pin(async move {
            let response = gateway.handle(request).await;
            Ok(match busy {
                Some(busy) => {
                    response.map(|body| ResponseBody::new(connections::WhileBusy::new(body, busy)))
                }
                None => response,
            })
        })
    }
}
