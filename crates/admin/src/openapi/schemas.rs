//! The document's schemas (`components.schemas`): the shapes of docs/api.md (client endpoints)
//! and docs/operations.md (the admin API). Every shape with fields is derived from the type the
//! gateway reads or writes ([`super::derived`]); the two here only join derived ones, for the
//! answers that take either of two shapes (docs/decisions.md, "The OpenAPI document").

use serde_json::{Map, Value, json};
use tollgate_exchange::route_doc::r;

/// Every schema, by name: the derived ones and their unions.
pub(super) fn schemas() -> Map<String, Value> {
    let mut all = unions();
    all.extend(super::derived::schemas());
    all
}

/// The answers that take either of two derived shapes.
fn unions() -> Map<String, Value> {
    let named = [
        (
            "OpenAiOrGoogleError",
            json!({
                "description": "The OpenAI shape, or the native one when the key came in a native header (x-vendor-api-key, x-goog-api-key).",
                "anyOf": [r("OpenAiError"), r("GoogleError")],
            }),
        ),
        (
            "GoogleStreamError",
            json!({
                "description": "Without alt=sse the native stream is a JSON array, and so is its error (wire-formats §6.3).",
                "anyOf": [r("GoogleError"), {"type": "array", "items": r("GoogleError")}],
            }),
        ),
    ];
    named
        .into_iter()
        .map(|(name, schema)| (name.to_owned(), schema))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_union_shadows_a_derived_schema() {
        let unions = super::unions();
        for name in super::super::derived::schemas().keys() {
            assert!(!unions.contains_key(name), "{name} is derived and a union");
        }
    }
}
