//! The document's operations. A client endpoint's method, path, security scheme and error
//! shapes come from its row of the route table (`tollgate_gateway::routes::TABLE`), and so do
//! its summary, tag, request and answer schemas and parameters: the row carries its description
//! (`RouteSpec::doc`, written beside its handler), so a route added to the table without it does
//! not compile. The admin API's operations come the same way from its own table
//! (`crate::routes::ADMIN_ROUTES`), each row with its description (`crate::about`).

use crate::routes::ADMIN_ROUTES;
use serde_json::{Value, json};
use tollgate_exchange::errors::Family;
use tollgate_exchange::route_doc::{About, Doc, ok, path_param, r};
use tollgate_request::routes::{
    Clients, Credentials, PathPattern, Route, RouteSpec, Streams, Verb,
};

/// One operation of the document.
pub(super) struct Operation {
    /// The path template (`/v1beta/models/{model}:generateContent`).
    pub path: String,
    /// The method, lower case.
    pub method: &'static str,
    pub summary: &'static str,
    pub tag: &'static str,
    /// The security requirements (`[]`: none).
    pub security: Value,
    /// The answers that are not errors, by status.
    pub answers: Value,
    /// The errors' schema (one per family) and statuses.
    pub errors: Option<(&'static str, &'static [u16])>,
    pub parameters: Vec<Value>,
    pub body: Option<Value>,
}

/// Every error a client endpoint that reads a body may answer.
const CLIENT_ERRORS: &[u16] = &[
    400, 401, 403, 404, 405, 408, 413, 415, 429, 500, 502, 503, 504,
];
/// Every error a client endpoint without a body may answer.
const READ_ERRORS: &[u16] = &[400, 401, 403, 404, 405, 429, 500, 502, 503, 504];
/// Every error of the admin API.
const ADMIN_ERRORS: &[u16] = &[400, 401, 403, 404, 405, 408, 409, 413, 415, 500];
/// Every error the portal's JSON API may answer: the admin API's, and 429 (sign-ins and codes
/// are throttled).
const PORTAL_ERRORS: &[u16] = &[400, 401, 403, 404, 405, 408, 409, 413, 415, 429, 500];

/// What a status means, whatever the family.
pub(super) fn meaning(status: u16) -> &'static str {
    match status {
        400 => "Bad request: a field broke a rule (`param` names it)",
        401 => "No credential, or an unknown one",
        403 => "Disabled, revoked, or refused by an access policy",
        404 => "No such model, task, account or route",
        405 => "Another method is allowed here",
        408 => "The request body stalled",
        409 => "Conflicts with what exists",
        413 => "The body is over the endpoint's limit",
        415 => "The body is not of a type the endpoint takes",
        429 => "Rate limited, over a spend cap, or the balance does not cover the hold",
        500 => "The gateway failed; nothing was charged",
        501 => "Not supported",
        502 => "The upstream failed; nothing was charged",
        503 => "Shutting down, or no channel can take the request",
        504 => "The upstream took too long; nothing was charged",
        _ => "",
    }
}

fn bearer() -> Value {
    json!([{"apiKey": []}])
}

fn native() -> Value {
    json!([{"vendorKey": []}, {"googKey": []}, {"keyQuery": []}, {"apiKey": []}])
}

/// A native client's key header, or a bearer key: the model routes answer either's shape.
fn by_client() -> Value {
    json!([{"apiKey": []}, {"vendorKey": []}, {"googKey": []}])
}

/// The security a row's credentials mean (`both`: a native client's twin row serves the same
/// path, so either way of presenting a key will do).
fn security(credentials: Credentials, both: bool) -> Value {
    match credentials {
        Credentials::Key(_) if both => by_client(),
        Credentials::Key(Family::Google) => native(),
        Credentials::Key(_) => bearer(),
        Credentials::Open | Credentials::Operator | Credentials::Customer => json!([]),
    }
}

/// The errors a row answers: its family's shape (either, with a native twin), the statuses by
/// whether it reads a body.
fn errors(spec: &RouteSpec, both: bool) -> Option<(&'static str, &'static [u16])> {
    let schema = match spec.credentials {
        Credentials::Key(_) if both => "OpenAiOrGoogleError",
        Credentials::Key(Family::OpenAi) => "OpenAiError",
        Credentials::Key(Family::T2a) => "T2aError",
        Credentials::Key(Family::Ark) => "ArkError",
        // Without alt=sse the native stream is a JSON array, and so is its error.
        Credentials::Key(Family::Google) if spec.streams == Streams::Always => "GoogleStreamError",
        Credentials::Key(Family::Google) => "GoogleError",
        Credentials::Open | Credentials::Operator | Credentials::Customer => return None,
    };
    let statuses = if spec.body.is_some() {
        CLIENT_ERRORS
    } else {
        READ_ERRORS
    };
    Some((schema, statuses))
}

/// The path template of a row (`param`: the name of its last segment's parameter).
fn template(pattern: PathPattern, param: &str) -> String {
    match pattern {
        PathPattern::Exact(path) => path.to_owned(),
        PathPattern::Item(prefix) => format!("{prefix}{{{param}}}"),
        PathPattern::ItemThen(prefix, suffix) => format!("{prefix}{{{param}}}{suffix}"),
        PathPattern::Under(prefix) => format!("{prefix}{{{param}}}"),
        PathPattern::Model(None) => "/v1beta/models/{model}".to_owned(),
        PathPattern::Model(Some(action)) => format!("/v1beta/models/{{model}}:{action}"),
    }
}

fn method(verb: Verb) -> &'static str {
    match verb {
        Verb::Get => "get",
        Verb::Post => "post",
        Verb::Delete => "delete",
        Verb::Any => "any",
    }
}

/// One server-sent event, as a media type of an answer.
fn sse() -> Value {
    json!({
        "schema": {
            "type": "object",
            "description": "One server-sent event; its data is JSON in the family's frame shape (docs/api.md).",
            "properties": {"data": {"type": "string"}, "event": {"type": "string"}, "id": {"type": "string"}},
        }
    })
}

/// The row's operations: what the row says, with [`about`] it. `table`: every row, for a
/// path served by two (a native client's row and everyone else's), documented once.
pub(super) fn of_row(spec: &RouteSpec, table: &[&RouteSpec]) -> Vec<Operation> {
    // A prefix routed within: the admin API ([`admin`]) and the console's assets (not API).
    // A native client's row is documented with the row after it.
    if matches!(spec.path, PathPattern::Under(_)) || spec.clients == Clients::Native {
        return Vec::new();
    }
    let both = table.iter().any(|other| {
        other.clients == Clients::Native
            && (other.route, other.path, other.method) == (spec.route, spec.path, spec.method)
    });
    let About {
        summary,
        tag,
        param,
        mut answers,
        parameters,
        body,
    } = match spec.doc {
        Doc::About(about) => about(),
        Doc::Elsewhere | Doc::Missing => return Vec::new(),
    };
    if spec.streams != Streams::No
        && let Some(content) = answers.pointer_mut("/200/content")
        && let Some(content) = content.as_object_mut()
    {
        content.insert("text/event-stream".to_owned(), sse());
    }
    let mut operation = Operation {
        path: template(spec.path, param),
        method: method(spec.method),
        summary,
        tag,
        security: security(spec.credentials, both),
        answers,
        errors: errors(spec, both),
        parameters,
        body,
    };
    match spec.route {
        // Served at both `/v1/models/{model}` (either shape) and `/v1beta/models/{model}`.
        Route::ModelGet => {
            let v1 = Operation {
                path: "/v1/models/{model}".to_owned(),
                method: operation.method,
                summary: "One model (the native shape for a native key header)",
                tag: "models",
                security: by_client(),
                answers: ok(json!({"anyOf": [r("Model"), r("NativeModel")]})),
                errors: operation.errors,
                parameters: vec![path_param("model", "A model or alias")],
                body: None,
            };
            operation.security = native();
            operation.errors = Some(("GoogleError", READ_ERRORS));
            vec![v1, operation]
        }
        // A refusal that still needs a key, to say so only to a client.
        Route::Translations => {
            operation.security = bearer();
            operation.errors = Some(("OpenAiError", &[401, 501]));
            vec![operation]
        }
        Route::Media | Route::MediaImage => {
            operation.errors = Some(("OpenAiError", &[400, 403, 404, 502]));
            vec![operation]
        }
        _ => vec![operation],
    }
}

/// The admin API's operations (docs/operations.md): one per row of its own route table
/// ([`ADMIN_ROUTES`]).
pub(super) fn admin() -> Vec<Operation> {
    ADMIN_ROUTES
        .iter()
        .map(|row| {
            let path = format!("/admin/v1{}", row.path);
            let security = json!([{"adminToken": []}]);
            described(path, &row.method, (row.about)(), security, ADMIN_ERRORS)
        })
        .collect()
}

/// The operations of the customer portal's JSON API (`tollgate_portal::routes::PORTAL_ROUTES`):
/// a session cookie, and on a write its CSRF token.
pub(super) fn portal() -> Vec<Operation> {
    tollgate_portal::routes::PORTAL_ROUTES
        .iter()
        .map(|row| {
            let security = match row.door {
                tollgate_portal::auth::Door::Open => json!([]),
                tollgate_portal::auth::Door::Session => json!([{"portalSession": []}]),
            };
            let path = format!("/portal/v1{}", row.path);
            described(path, &row.method, (row.about)(), security, PORTAL_ERRORS)
        })
        .collect()
}

/// An operation of a side's own route table, from its row's description.
fn described(
    path: String,
    method: &http::Method,
    about: About,
    security: Value,
    errors: &'static [u16],
) -> Operation {
    let About {
        summary,
        tag,
        answers,
        parameters,
        body,
        ..
    } = about;
    Operation {
        path,
        method: lower(method),
        summary,
        tag,
        security,
        answers,
        errors: Some(("OpenAiError", errors)),
        parameters,
        body,
    }
}

fn lower(method: &http::Method) -> &'static str {
    match *method {
        http::Method::POST => "post",
        http::Method::PUT => "put",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "get",
    }
}
