//! An endpoint of the route table — a row's facts and its handler — and a [`Table`] of them:
//! how a request finds its row (`docs/architecture.md`, "Adding an endpoint"). The table itself,
//! with every handler, is [`crate::routes`]; the service is handed it and knows no handler by
//! name (as a tower router is built above the server that serves it).

use futures_util::future::BoxFuture;
use http::{Method, Request, Response};
use hyper::body::Incoming;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::Doc;
use tollgate_request::context::RequestCtx;
use tollgate_request::routes::{Allow, Credentials, RouteSpec};
use tollgate_store::Principal;

/// What a handler answers.
pub type Answer = BoxFuture<'static, Result<Response<ResponseBody>, ApiError>>;

/// Who serves a row.
#[derive(Clone, Copy)]
pub enum Handler {
    /// A client route: called once its caller is authenticated and admitted, with the caller.
    Client(fn(RequestCtx, Principal, Request<Incoming>) -> Answer),
    /// A route without a client key (operations, a signed media link, a refusal).
    Open(fn(RequestCtx, Request<Incoming>) -> Answer),
    /// The operator's side mounted on the gateway (`tollgate-admin`; without one, 404).
    OperatorSide,
    /// The customer's side mounted on the gateway (`tollgate-portal`; without one, 404).
    CustomerSide,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Handler::Client(_) => "Client",
            Handler::Open(_) => "Open",
            Handler::OperatorSide => "OperatorSide",
            Handler::CustomerSide => "CustomerSide",
        })
    }
}

/// One endpoint: its facts and its handler.
#[derive(Debug)]
pub struct Endpoint {
    /// Everything the request path knows of it (a request's context carries it).
    pub spec: RouteSpec,
    /// Who answers it.
    pub handler: Handler,
}

impl Endpoint {
    /// A row. A handler that does not fit the credentials — a client handler on a route that
    /// takes no key, or the reverse — or a row without its description in the OpenAPI document
    /// stops the build (the table is evaluated at compile time).
    pub const fn new(spec: RouteSpec, handler: Handler) -> Endpoint {
        match (spec.credentials, &handler) {
            (Credentials::Key(_), Handler::Client(_))
            | (Credentials::Open, Handler::Open(_))
            | (Credentials::Operator, Handler::Open(_) | Handler::OperatorSide)
            | (Credentials::Customer, Handler::CustomerSide) => {}
            _ => panic!("a row's handler does not fit its credentials"),
        }
        if let Doc::Missing = spec.doc {
            panic!("a row without its description (RouteSpec::about)");
        }
        Endpoint { spec, handler }
    }
}

/// A route table: its rows in the order paths are matched, and the rows that answer what none
/// of them serves.
#[derive(Debug)]
pub struct Table {
    /// Every endpoint, first match wins.
    pub rows: &'static [Endpoint],
    /// The row of a path nothing serves: 404 in the path's family.
    pub not_found: &'static Endpoint,
    /// The row of a known path asked with another method: 405 with `Allow`.
    pub method_not_allowed: &'static Endpoint,
}

/// A routed request: its row, and the label for metrics and logs.
#[derive(Debug, Clone, Copy)]
pub struct Routed {
    /// The row that serves it (a fallback row for 404 and 405).
    pub endpoint: &'static Endpoint,
    /// Label for metrics and logs: the row's, or for a 405 the label of the path's first row.
    pub label: &'static str,
}

impl Table {
    /// Routes a request: the first row whose path, method and clients match (`native`: the
    /// client presents its key natively, `tollgate_request::routes::is_native_client`); a
    /// path some row has with another method is 405 with the methods it allows.
    pub fn route(&self, method: &Method, path: &str, native: bool) -> Routed {
        // A path that starts with several slashes is routed as with one: @google/genai joins
        // its base URL's `/` to the socket's path (`ws://host//ws/…`), and Google serves it.
        let path = match path.trim_start_matches('/') {
            rest if rest.len() + 1 < path.len() => &path[path.len() - rest.len() - 1..],
            _ => path,
        };
        if let Some(endpoint) = self
            .rows
            .iter()
            .find(|e| e.spec.serves(method, path, native))
        {
            return Routed {
                endpoint,
                label: endpoint.spec.label,
            };
        }
        match self.rows.iter().find(|e| e.spec.path.matches(path)) {
            Some(first) => Routed {
                endpoint: self.method_not_allowed,
                label: first.spec.label,
            },
            None => Routed {
                endpoint: self.not_found,
                label: self.not_found.spec.label,
            },
        }
    }

    /// The methods the table serves `path` with, for a 405's `Allow` header.
    pub fn allowed(&self, path: &str) -> Allow {
        self.rows
            .iter()
            .filter(|e| e.spec.path.matches(path))
            .fold(Allow::default(), |allow, e| allow.with(e.spec.method))
    }

    /// Every row's facts, for what documents the table (the operator's side builds the OpenAPI
    /// document from them).
    pub fn specs(&self) -> Vec<&'static RouteSpec> {
        self.rows.iter().map(|e| &e.spec).collect()
    }
}

/// 404 for a path nothing here serves (also the operator's paths with no operator's side
/// mounted).
pub async fn unknown_url(
    _ctx: RequestCtx,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    Err(ApiError::new(
        ErrorKind::NotFound,
        format!(
            "Unknown request URL: {} {}",
            request.method(),
            request.uri().path()
        ),
    )
    .code("unknown_url"))
}
