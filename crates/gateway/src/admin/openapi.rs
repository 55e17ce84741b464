//! `GET /openapi.json`: the OpenAPI 3.1 document of every client endpoint and of the admin API
//! (`assets/openapi.json`, written by hand against `docs/api.md`: the client endpoints'
//! rules are validation functions, not types a generator could read — see
//! `docs/decisions.md`, "The OpenAPI document"). Tests check it names every route the gateway
//! serves and that the gateway's answers agree with it (schemathesis in CI).

use crate::body::{self, ResponseBody};
use http::{Response, StatusCode};

/// The document.
pub const DOCUMENT: &str = include_str!("assets/openapi.json");

/// The document as a response.
pub fn response() -> Response<ResponseBody> {
    body::json_bytes_response(StatusCode::OK, DOCUMENT.as_bytes().to_vec())
}
