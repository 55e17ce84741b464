//! [`Gateway`]: the request pipeline as a hyper `Service`, a request in phases — begin (its id,
//! its row of the route table, its span), admit, serve (the row's handler), finish (the one
//! end hook: the error's shape, what every response carries, the metrics and the access line).

use crate::admission;
use crate::endpoint::{Endpoint, Handler, Routed, Table};
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
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::{ApiError, ErrorKind, ErrorStatus, Shape};
use tollgate_exchange::response::UpstreamTime;
use tollgate_journal::usage::Recorder;
use tollgate_request::admission::Admission;
use tollgate_request::auth;
use tollgate_request::connections::{self, Ticket};
use tollgate_request::context::RequestCtx;
use tollgate_request::policy;
use tollgate_request::routes::{self, Route};
use tollgate_request::side::Side;
use tollgate_request::state::State;
use tollgate_store::Cidr;
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
    /// The connection came to the TLS listener.
    over_tls: bool,
    /// The connection's place in the registry, when served on a socket: requests mark it busy
    /// so that it is not chosen to give way (`tollgate_request::connections`).
    connection: Option<Arc<Ticket>>,
    /// `[server] trusted_proxies`, parsed.
    trusted_proxies: Arc<[Cidr]>,
    /// What serves the operator's routes, when mounted (`tollgate-admin`); without one they
    /// are 404.
    operator: Option<Arc<dyn Side>>,
    /// What serves the customer's routes, when mounted (`tollgate-portal`); without one they
    /// are 404.
    customer: Option<Arc<dyn Side>>,
    /// The route table it serves (`crate::routes::TABLE`).
    table: &'static Table,
}

impl Gateway {
    /// A gateway over `state` serving `table` (`tollgate_gateway::routes::TABLE`).
    pub fn new(state: Arc<State>, table: &'static Table) -> Gateway {
        let trusted_proxies = state.server.trusted_proxies.as_slice().into();
        Gateway {
            state,
            ops_only: false,
            peer: None,
            from_trusted_proxy: false,
            over_tls: false,
            connection: None,
            trusted_proxies,
            operator: None,
            customer: None,
            table,
        }
    }

    /// The same gateway with `side` serving the operator's routes (the admin API, the console,
    /// the OpenAPI document).
    pub fn with_operator_side(self, side: Arc<dyn Side>) -> Gateway {
        Gateway {
            operator: Some(side),
            ..self
        }
    }

    /// The same gateway with `side` serving the customer's routes (the portal).
    pub fn with_customer_side(self, side: Arc<dyn Side>) -> Gateway {
        Gateway {
            customer: Some(side),
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

    /// The same gateway for a connection to the TLS listener: the links and cookies it hands
    /// out say `https`.
    pub fn over_tls(&self) -> Gateway {
        Gateway {
            over_tls: true,
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

    /// Handles one request (what the `Service` impl calls), in phases: `begin` names it,
    /// routes it and opens its span and usage record; `serve` admits its caller as the row says
    /// and calls the row's handler; `finish` — the one end hook — shapes an error, adds what
    /// every answer carries, and records the metrics, the answer's status and the access line.
    pub async fn handle(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        let _in_flight = self.state.metrics.enter();
        let begun = begin(&self.state, self.table, &request);
        let ctx = RequestCtx {
            state: self.state.clone(),
            settings: self.state.settings.snapshot(),
            request_id: begun.request_id.clone(),
            route: &begun.routed.endpoint.spec,
            client: auth::client_address(self.peer, request.headers(), &self.trusted_proxies),
            from_trusted_proxy: self.from_trusted_proxy,
            over_tls: self.over_tls,
            usage: begun.usage.clone(),
            admission: begun.admission.clone(),
        };
        let endpoint = begun.routed.endpoint;
        let refused = self.ops_only && !endpoint.spec.in_reserve;
        let outcome = if refused {
            Err(ApiError::new(
                ErrorKind::Unavailable,
                "The gateway is at its connection limit; retry shortly",
            ))
        } else {
            // A panic in a handler becomes a 500; its hold is released by the hold's drop guard.
            // The side a row of one serves (none for the client's routes: nothing cloned).
            let side = match endpoint.handler {
                Handler::OperatorSide => self.operator.clone(),
                Handler::CustomerSide => self.customer.clone(),
                Handler::Client(_) | Handler::Open(_) => None,
            };
            let work = serve(ctx, endpoint, request, side);
            AssertUnwindSafe(work.instrument(begun.span.clone()))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    Err(ApiError::new(
                        ErrorKind::Internal,
                        "Internal error; the request was not charged",
                    ))
                })
        };
        self.finish(begun, outcome, refused)
    }

    /// The end of every request, whatever answered it (pingora's `logging()`): an error in the
    /// row's shape, the headers every answer carries (its id, its rate limits, what it cost),
    /// the metrics, the usage record (written here for a whole answer; a stream's at the
    /// stream's end) and the access line with the span's status.
    fn finish(
        &self,
        begun: Begun,
        outcome: Result<Response<ResponseBody>, ApiError>,
        refused: bool,
    ) -> Response<ResponseBody> {
        let Begun {
            started,
            request_id,
            routed,
            shape,
            span,
            usage,
            admission,
        } = begun;
        if let Some(rule) = outcome.as_ref().err().and_then(policy::policy_rule) {
            self.state.metrics.policy_refusal(rule);
        }
        let mut response = outcome.unwrap_or_else(|e| e.into_response(shape));
        let headers = response.headers_mut();
        if refused {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        if let Ok(v) = HeaderValue::from_str(&request_id) {
            headers.insert("x-request-id", v);
        }
        if matches!(routed.endpoint.spec.route, Route::Admin | Route::Console) {
            // The operator's side answers secrets (new keys, tokens) and account data: no cache
            // on the way may keep any of it (`docs/decisions.md`, "The admin API").
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
        let upstream = response.extensions().get::<UpstreamTime>().map(|u| u.0);
        let elapsed = started.elapsed();
        let status = response
            .extensions()
            .get::<ErrorStatus>()
            .map_or(response.status(), |honest| honest.0)
            .as_u16();
        self.state
            .metrics
            .record(routed.label, status, elapsed, upstream);
        // A whole answer was charged before it is sent: it says what it cost (docs/api.md,
        // "What a request cost"). A stream says it in its last event.
        let charged = usage.and_then(|usage| usage.end(status));
        let charge = charged.iter().flat_map(charge_headers);
        for (name, value) in admission.rate_headers().into_iter().chain(charge) {
            if let Ok(v) = HeaderValue::from_str(&value) {
                response.headers_mut().insert(name, v);
            }
        }
        if crate::trace::exporting() {
            span.record("http.response.status_code", status);
        }
        span.in_scope(|| {
            tracing::info!(
                status,
                endpoint = routed.label,
                ms = elapsed.as_secs_f64() * 1000.0,
                upstream_ms = upstream.map(|u| u.as_secs_f64() * 1000.0),
                "request"
            );
        });
        response
    }
}

/// What the first phase learns of a request, for the others.
struct Begun {
    started: Instant,
    request_id: String,
    routed: Routed,
    /// The shape its errors take.
    shape: Shape,
    /// Its span: the access line's, and with traces on the trace's server span.
    span: tracing::Span,
    /// Its usage record in the making, on a metered route.
    usage: Option<Recorder>,
    /// What admission holds for it.
    admission: Admission,
}

/// The first phase: the request's id, its row of the route table, its error shape, its span
/// and — on a metered route — its usage record.
fn begin(state: &State, table: &'static Table, request: &Request<Incoming>) -> Begun {
    let started = Instant::now();
    let (request_id, replaced_id) = request_id(request);
    let (path, query) = (request.uri().path(), request.uri().query());
    let native = routes::is_native_client(request.headers(), path, query);
    let routed = table.route(request.method(), path, native);
    let spec = &routed.endpoint.spec;
    // The path only: the query may carry a key (`?key=`).
    // account, key and model are recorded by authentication and the hold, charge by the
    // settlement (`hold.rs`), so the access line says who spent what on which model.
    // With traces on it is the trace's server span, under the client's `traceparent`
    // (docs/decisions.md, "Traces"); the GenAI and tollgate attributes are recorded as the
    // request learns them.
    let span = tracing::info_span!(
        "request",
        id = %request_id,
        method = %request.method(),
        path = %path,
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
    crate::trace::server_span(&span, request.method(), routed.label, request.headers());
    if let Some(sent) = &replaced_id {
        span.in_scope(|| {
            tracing::info!(
                client_request_id = ?sent,
                "the client's x-request-id was replaced: only 1 to 128 of [A-Za-z0-9._:-] are kept"
            );
        });
    }
    // Metered requests are logged, under their policy endpoint's name.
    let usage = spec
        .policy
        .filter(|_| spec.metered)
        .map(|endpoint| Recorder::start(&state.ledger, endpoint, &request_id));
    Begun {
        started,
        shape: spec.error_shape(path, query),
        request_id,
        routed,
        span,
        usage,
        admission: Admission::default(),
    }
}

/// The second and third phases (DESIGN §2 after routing): the caller is admitted the way its
/// row says — a client key authenticated once for every client route, the operator's network
/// for the operator's side — and the row's handler serves it.
async fn serve(
    ctx: RequestCtx,
    endpoint: &'static Endpoint,
    request: Request<Incoming>,
    side: Option<Arc<dyn Side>>,
) -> Result<Response<ResponseBody>, ApiError> {
    if endpoint.spec.operators_side() {
        admission::operator_reachable(&ctx)?;
    }
    match endpoint.handler {
        Handler::Client(handler) => {
            let principal = admission::authenticate(&ctx, &request).await?;
            handler(ctx, principal, request).await
        }
        Handler::Open(handler) => handler(ctx, request).await,
        Handler::OperatorSide | Handler::CustomerSide => match side {
            Some(side) => side.serve(ctx, request).await,
            // Without the side mounted, its paths are as unknown as any other.
            None => crate::endpoint::unknown_url(ctx, request).await,
        },
    }
}

/// The `x-tollgate-charge`, `x-tollgate-units` and `x-tollgate-price` headers of a charged
/// answer.
fn charge_headers(
    charged: &tollgate_journal::usage::Charged,
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
