//! [`Gateway`]: the request pipeline as a hyper `Service`. It routes, runs the handler, renders
//! errors in the route's family shape, and adds what every response carries: a request id,
//! a log line and metrics.

use crate::auth;
use crate::body::ResponseBody;
use crate::errors::{ApiError, ErrorKind};
use crate::handlers::{self, Context, UpstreamTime};
use crate::routes::{self, Route};
use crate::state::State;
use crate::usage::{self, Recorder};
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
    /// `[server] trusted_proxies`, parsed.
    trusted_proxies: Arc<[Cidr]>,
}

impl Gateway {
    /// A gateway over `state`.
    pub fn new(state: Arc<State>) -> Gateway {
        let trusted_proxies = state.server.trusted_proxies.as_slice().into();
        Gateway {
            state,
            ops_only: false,
            peer: None,
            trusted_proxies,
        }
    }

    /// The same gateway for a connection from `peer`.
    pub fn for_peer(&self, peer: IpAddr) -> Gateway {
        Gateway {
            peer: Some(peer),
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

    /// Its shared state.
    pub fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// Handles one request (what the `Service` impl calls).
    pub async fn handle(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        let started = Instant::now();
        let request_id = request_id(&request);
        let mut routed = routes::route(request.method(), request.uri().path());
        // `GET /v1/models[/{id}]` is the native list for a native client (its SDK calls there):
        // its errors then take the native shape too.
        if matches!(routed.route, Route::ListModels | Route::ModelGet)
            && handlers::native::is_native_client(&request)
        {
            routed.family = crate::errors::Family::Google;
        }
        let _in_flight = self.state.metrics.enter();
        // The path only: the query may carry a key (`?key=`).
        // account, key and model are recorded by authentication and the hold, charge by the
        // settlement (`charge.rs`), so the access line says who spent what on which model.
        let span = tracing::info_span!(
            "request",
            id = %request_id,
            method = %request.method(),
            path = %request.uri().path(),
            account = tracing::field::Empty,
            key = tracing::field::Empty,
            model = tracing::field::Empty,
            charge = tracing::field::Empty,
        );
        let recorder = Recorder::start(&self.state.ledger, routed.route, &request_id);
        let ctx = Context {
            state: self.state.clone(),
            request_id: request_id.clone(),
            route: routed.route,
            client: auth::client_address(self.peer, request.headers(), &self.trusted_proxies),
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
            let work = usage::scope(recorder.clone(), dispatch(ctx, routed.route, request));
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
        if let Some(rule) = outcome.as_ref().err().and_then(auth::policy_rule) {
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
        let upstream = response.extensions().get::<UpstreamTime>().map(|u| u.0);
        let elapsed = started.elapsed();
        let status = response
            .extensions()
            .get::<crate::errors::ErrorStatus>()
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

async fn dispatch(
    ctx: Context,
    route: Route,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    match route {
        Route::Healthz => Ok(handlers::ops::healthz()),
        Route::Readyz => Ok(handlers::ops::readyz(&ctx).await),
        Route::Metrics => Ok(handlers::ops::metrics(&ctx)),
        Route::ListModels if handlers::native::is_native_client(&request) => {
            handlers::native::list_models(ctx, request).await
        }
        Route::ListModels => handlers::ops::list_models(ctx, request).await,
        Route::Embeddings => handlers::embeddings::create(ctx, request).await,
        Route::Speech => handlers::speech::create(ctx, request).await,
        Route::T2a => handlers::t2a::create(ctx, request).await,
        Route::Transcriptions => handlers::transcriptions::create(ctx, request).await,
        Route::SpeechToText => handlers::speech_to_text::create(ctx, request).await,
        Route::ClipTaskCreate => handlers::clip_tasks::create(ctx, request).await,
        Route::ClipTaskList => handlers::clip_tasks::list(ctx, request).await,
        Route::ClipTaskGet => {
            let id = routes::last_segment(request.uri().path()).to_owned();
            handlers::clip_tasks::get(ctx, request, &id).await
        }
        Route::ClipTaskDelete => {
            let id = routes::last_segment(request.uri().path()).to_owned();
            handlers::clip_tasks::delete(ctx, request, &id).await
        }
        Route::VideoCreate => handlers::video_generations::create(ctx, request).await,
        Route::VideoGet => {
            let id = routes::last_segment(request.uri().path()).to_owned();
            handlers::video_generations::get(ctx, request, &id).await
        }
        Route::Media => {
            let file = routes::last_segment(request.uri().path()).to_owned();
            handlers::media::get(ctx, request, &file).await
        }
        Route::NativeGenerate => handlers::native::generate(ctx, request, false).await,
        Route::NativeStream => handlers::native::generate(ctx, request, true).await,
        Route::NativeCountTokens => handlers::native::count_tokens(ctx, request).await,
        Route::NativeListModels => handlers::native::list_models(ctx, request).await,
        Route::ModelGet => {
            if handlers::native::is_native_client(&request)
                || request.uri().path().starts_with("/v1beta/")
            {
                handlers::native::get_model(ctx, request).await
            } else {
                handlers::ops::get_model(ctx, request).await
            }
        }
        Route::ChatCompletions => handlers::chat::create(ctx, request).await,
        Route::Responses => handlers::responses::create(ctx, request).await,
        Route::Translations => Err(handlers::ops::translations_unsupported()),
        Route::Admin => {
            crate::admin::reachable(&ctx)?;
            crate::admin::handle(ctx, request).await
        }
        Route::OpenApi => Ok(crate::admin::openapi::response()),
        Route::Console => {
            crate::admin::reachable(&ctx)?;
            Ok(crate::admin::console::asset(request.uri().path()))
        }
        Route::MethodNotAllowed(allow) => {
            let e = ApiError::new(
                ErrorKind::MethodNotAllowed,
                format!("{} is not allowed here; use {allow}", request.method()),
            );
            let mut response = e.into_response(routes::family_of(request.uri().path()));
            if let Ok(v) = HeaderValue::from_str(allow) {
                response.headers_mut().insert(header::ALLOW, v);
            }
            Ok(response)
        }
        Route::NotFound => Err(ApiError::new(
            ErrorKind::NotFound,
            format!(
                "Unknown request URL: {} {}",
                request.method(),
                request.uri().path()
            ),
        )
        .code("unknown_url")),
    }
}

/// The client's `x-request-id` when it is short and printable, otherwise a new one.
fn request_id<B>(request: &Request<B>) -> String {
    request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .unwrap_or_else(|| {
            let mut bytes = [0u8; 12];
            rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
            format!("req_{}", hex::encode(bytes))
        })
}

impl hyper::service::Service<Request<Incoming>> for Gateway {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let gateway = self.clone();
        Box::pin(async move { Ok(gateway.handle(request).await) })
    }
}
