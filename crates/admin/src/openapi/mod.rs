//! `GET /openapi.json`: the OpenAPI 3.1 document of every client endpoint and of the admin API,
//! built here in Rust (docs/decisions.md, "The OpenAPI document"): each client operation's
//! method, path, security and error shapes from its row of the route table
//! (`tollgate_gateway::routes::TABLE`, handed to [`crate::Admin::new`]), the rest from [`operations`] (one arm per route: a
//! route without its documentation does not compile) and the shapes from [`schemas`]. Tests
//! check it names every route the gateway serves; schemathesis checks in CI that the gateway's
//! answers agree with it (`tests/api/run.sh`).

mod derived;
mod operations;
mod schemas;

use bytes::Bytes;
use http::{Response, StatusCode};
use operations::Operation;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_request::routes::RouteSpec;

/// The document's bytes, built once when the operator's side is made; every answer shares them.
pub fn bytes(table: &[&RouteSpec]) -> Bytes {
    Bytes::from(serde_json::to_vec_pretty(&document(table)).unwrap_or_default())
}

/// The document as a response.
pub fn response(document: Bytes) -> Response<ResponseBody> {
    body::json_bytes_response(StatusCode::OK, document)
}

/// The document of the client routes in `table` (every row of the route table) and the admin API.
pub fn document(table: &[&RouteSpec]) -> Value {
    let mut operations: Vec<Operation> = table
        .iter()
        .flat_map(|spec| operations::of_row(spec, table))
        .collect();
    operations.extend(operations::admin());
    operations.extend(operations::portal());
    let mut paths = Map::new();
    // The errors' answers, shared by name (`OpenAiError400`) under `components.responses`.
    let mut shared = BTreeSet::new();
    for operation in operations {
        let mut responses = match operation.answers {
            Value::Object(answers) => answers,
            _ => Map::new(),
        };
        if let Some((schema, statuses)) = operation.errors {
            for status in statuses {
                let name = format!("{schema}{status}");
                responses.insert(
                    status.to_string(),
                    json!({"$ref": format!("#/components/responses/{name}")}),
                );
                shared.insert((schema, *status));
            }
        }
        let mut entry = json!({
            "summary": operation.summary,
            "tags": [operation.tag],
            "responses": responses,
            "security": operation.security,
        });
        if !operation.parameters.is_empty() {
            entry["parameters"] = Value::Array(operation.parameters);
        }
        if let Some(body) = operation.body {
            entry["requestBody"] = body;
        }
        let item = paths
            .entry(operation.path)
            .or_insert_with(|| Value::Object(Map::new()));
        item[operation.method] = entry;
    }
    let responses: Map<String, Value> = shared
        .into_iter()
        .map(|(schema, status)| {
            (
                format!("{schema}{status}"),
                json!({
                    "description": operations::meaning(status),
                    "content": {"application/json": {"schema": tollgate_exchange::route_doc::r(schema)}},
                }),
            )
        })
        .collect();
    let tags: Vec<Value> = [
        "speech",
        "recognition",
        "embeddings",
        "video",
        "native",
        "models",
        "billing",
        "admin",
        "portal",
        "operations",
    ]
    .iter()
    .map(|name| json!({"name": name}))
    .collect();
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "tollgate",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A metered gateway for generative-media APIs: the client endpoints (docs/api.md), the admin API and the customer portal's JSON API (docs/operations.md). Amounts are decimal strings; times are Unix milliseconds unless named otherwise.",
        },
        "servers": [{"url": "/"}],
        "tags": tags,
        "paths": paths,
        "components": {
            "schemas": schemas::schemas(),
            "responses": responses,
            "securitySchemes": {
                "apiKey": {"type": "http", "scheme": "bearer", "description": "A client API key, tg-…"},
                "vendorKey": {"type": "apiKey", "in": "header", "name": "x-vendor-api-key"},
                "googKey": {"type": "apiKey", "in": "header", "name": "x-goog-api-key"},
                "keyQuery": {"type": "apiKey", "in": "query", "name": "key"},
                "adminToken": {"type": "http", "scheme": "bearer", "description": "An admin token, tga-… (`tollgate admin token create`); never a client key"},
                "portalSession": {"type": "apiKey", "in": "cookie", "name": "tollgate_portal", "description": "The customer portal's session (POST /portal/v1/sessions); a change also carries its x-csrf-token header"},
            },
        },
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::document;
    use http::Method;
    use tollgate_gateway::routes::TABLE;
    use tollgate_request::routes::{PathPattern, Route, Verb};

    fn paths() -> Vec<(Method, String)> {
        let doc = document(&TABLE.specs());
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
            let routed = TABLE.route(&method, &path, false).endpoint.spec.route;
            assert!(
                !matches!(routed, Route::NotFound | Route::MethodNotAllowed),
                "{method} {path} is documented but not served"
            );
        }
    }

    /// A concrete path of a route table row; `None` for a router of its own (the admin API,
    /// whose operations the document lists one by one).
    fn sample(pattern: PathPattern) -> Option<String> {
        Some(match pattern {
            PathPattern::Exact(p) => p.to_owned(),
            PathPattern::Item(prefix) => format!("{prefix}x"),
            PathPattern::ItemThen(prefix, suffix) => format!("{prefix}x{suffix}"),
            PathPattern::Model(None) => "/v1beta/models/x".to_owned(),
            PathPattern::Model(Some(action)) => format!("/v1beta/models/x:{action}"),
            PathPattern::Under(_) => return None,
        })
    }

    #[test]
    fn every_row_of_the_route_table_is_documented() {
        let documented = paths();
        for spec in TABLE.specs() {
            let Some(path) = sample(spec.path) else {
                continue;
            };
            let method = match spec.method {
                Verb::Get => Method::GET,
                Verb::Post => Method::POST,
                Verb::Delete => Method::DELETE,
                Verb::Any => continue,
            };
            assert!(
                documented.iter().any(|(m, p)| *m == method && *p == path),
                "{method} {path} ({:?}) is in the route table but not in the document",
                spec.route
            );
        }
        for (method, path) in [
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
