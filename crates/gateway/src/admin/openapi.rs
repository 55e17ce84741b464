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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::DOCUMENT;
    use crate::routes::{Route, route};
    use http::Method;

    fn paths() -> Vec<(Method, String)> {
        let doc: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
        let mut out = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in ["get", "post", "put", "patch", "delete"] {
                if item.get(method).is_some() {
                    // A template's parameters filled in: `{model}` → `x`.
                    let concrete: String = path
                        .split('{')
                        .enumerate()
                        .map(|(i, part)| {
                            if i == 0 {
                                part.to_owned()
                            } else {
                                format!("x{}", part.split_once('}').unwrap().1)
                            }
                        })
                        .collect();
                    out.push((method.to_uppercase().parse().unwrap(), concrete));
                }
            }
        }
        out
    }

    #[test]
    fn every_documented_operation_is_routed() {
        for (method, path) in paths() {
            let routed = route(&method, &path);
            assert!(
                !matches!(routed.route, Route::NotFound | Route::MethodNotAllowed(_)),
                "{method} {path} is documented but not served"
            );
        }
    }

    #[test]
    fn every_client_endpoint_is_documented() {
        let documented = paths();
        for (method, path) in [
            ("POST", "/v1/audio/speech"),
            ("POST", "/v1/audio/transcriptions"),
            ("POST", "/v1/t2a_v2"),
            ("POST", "/v1/speech_to_text"),
            ("POST", "/v1/embeddings"),
            ("POST", "/api/v3/contents/generations/tasks"),
            ("GET", "/api/v3/contents/generations/tasks/x"),
            ("POST", "/v1/video/generations"),
            ("GET", "/v1/video/generations/x"),
            ("POST", "/v1beta/models/x:generateContent"),
            ("POST", "/v1beta/models/x:streamGenerateContent"),
            ("POST", "/v1/chat/completions"),
            ("POST", "/v1/responses"),
            ("POST", "/admin/v1/accounts/x/credits"),
            ("GET", "/admin/v1/usage"),
        ] {
            assert!(
                documented
                    .iter()
                    .any(|(m, p)| m.as_str() == method && p == path),
                "{method} {path} is not in the document"
            );
        }
    }
}
