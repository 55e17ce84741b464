//! The JSON Schema of the money types (behind the `schema` feature), for the OpenAPI document
//! (docs/decisions.md, "The OpenAPI document"): an amount is a decimal string, never a float
//! (docs/api.md §8), and so is a price.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use crate::money::{Amount, Total};

/// Both money types are one shape in the document: `Amount`.
fn amount_schema() -> Schema {
    json_schema!({
        "type": "string",
        "pattern": "^-?[0-9]+(\\.[0-9]+)?$",
        "description": "An exact decimal amount of money (never a float).",
    })
}

impl JsonSchema for Amount {
    fn schema_name() -> Cow<'static, str> {
        "Amount".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "tollgate_billing::Amount".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        amount_schema()
    }
}

impl JsonSchema for Total {
    fn schema_name() -> Cow<'static, str> {
        Amount::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        Amount::schema_id()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        amount_schema()
    }
}

/// A price or ratio of a tariff as the price book writes it: a decimal string, never negative
/// (`crate::tariff`; a reader also takes a whole number).
pub(crate) struct Price;

impl JsonSchema for Price {
    fn schema_name() -> Cow<'static, str> {
        "Price".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^[0-9]+(\\.[0-9]+)?$",
            "description": "A price, a decimal string.",
        })
    }
}

/// A video-token tariff's reference-video ratio may be left out (0.6 then), and is always
/// written: one shape for both directions says it may be left out.
pub(crate) fn ratio_may_be_left_out(schema: &mut Schema) {
    if let Some(serde_json::Value::Array(required)) = schema.get_mut("required") {
        required.retain(|field| field != "reference_video_ratio");
    }
}
