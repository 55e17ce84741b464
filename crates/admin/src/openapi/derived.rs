//! The schemas derived from the wire types themselves (`schemars::JsonSchema`, behind each
//! protocol crate's `schema` feature): a field added to a type is in the document without
//! anyone writing it, and a field the document names is one the type has (docs/decisions.md,
//! "The OpenAPI document"). A request's schema says what the gateway reads (the type's
//! `Deserialize`), an answer's what it writes (its `Serialize`); the rules a field must also
//! keep are the protocol crate's validation, named on the type where a schema can say them
//! (`#[schemars(range(min = 1))]`). [`super::schemas`] only joins derived shapes.

use schemars::generate::{Contract, SchemaSettings};
use schemars::transform::RecursiveTransform;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};

/// Every derived schema, by name: the requests', the answers' and every named type under them,
/// referenced where the document keeps its schemas (`#/components/schemas/…`).
pub(super) fn schemas() -> Map<String, Value> {
    let (mut named, answers) = both_directions();
    named.extend(answers);
    named
}

/// What the gateway reads, and what it writes.
fn both_directions() -> (Map<String, Value>, Map<String, Value>) {
    // What the gateway reads: a client's request, or a vendor's answer it relays as it came
    // (the native generation answers), which a reader takes with every field optional.
    let mut requests = generator(Contract::Deserialize);
    requests.subschema_for::<tollgate_compat_audio::SpeechRequest>();
    requests.subschema_for::<tollgate_vendor_audio::T2aRequest>();
    requests.subschema_for::<tollgate_openai_videos::CreateVideoBody>();
    requests.subschema_for::<tollgate_images::ImageRequest>();
    requests.subschema_for::<tollgate_generic_tasks::CreateVideoRequest>();
    requests.subschema_for::<tollgate_embeddings::EmbeddingRequest>();
    requests.subschema_for::<tollgate_clip_tasks::CreateTaskRequest>();
    requests.subschema_for::<tollgate_native_genai::GenerateContentRequest>();
    requests.subschema_for::<tollgate_native_genai::GenerateContentResponse>();
    requests.subschema_for::<tollgate_native_genai::CountTokensResponse>();
    requests.subschema_for::<tollgate_native_genai::embed::EmbedContentRequest>();
    requests.subschema_for::<tollgate_native_genai::embed::BatchEmbedContentsRequest>();
    requests.subschema_for::<tollgate_native_genai::predict::PredictRequest>();
    requests.subschema_for::<tollgate_native_genai::ResponsesRequest>();
    // The chat bridge's answer shares its message with the request: one shape, the reader's.
    requests.subschema_for::<tollgate_native_genai::ChatCompletionRequest>();
    requests.subschema_for::<tollgate_native_genai::ChatCompletion>();
    // The operator's: the admin API's request bodies.
    requests.subschema_for::<crate::api::NewAccount>();
    requests.subschema_for::<crate::api::NewCredit>();
    requests.subschema_for::<crate::api::NewKeyInput>();
    requests.subschema_for::<crate::api::GroupInput>();
    requests.subschema_for::<crate::api::PriceInput>();
    requests.subschema_for::<crate::ops::PolicyEdit>();
    requests.subschema_for::<tollgate_alerts::RuleConfig>();
    requests.subschema_for::<crate::codes::NewBatch>();
    requests.subschema_for::<crate::people::NewPerson>();
    // What the gateway writes.
    let mut answers = generator(Contract::Serialize);
    answers.subschema_for::<tollgate_embeddings::EmbeddingResponse>();
    answers.subschema_for::<tollgate_native_genai::predict::PredictResponse>();
    answers.subschema_for::<tollgate_vendor_audio::T2aResponse>();
    answers.subschema_for::<tollgate_compat_audio::transcription::JsonResponse>();
    answers.subschema_for::<tollgate_compat_audio::transcription::VerboseJsonResponse>();
    answers.subschema_for::<tollgate_clip_tasks::CreateTaskResponse>();
    answers.subschema_for::<tollgate_clip_tasks::Task>();
    answers.subschema_for::<tollgate_clip_tasks::ListResponse>();
    answers.subschema_for::<tollgate_generic_tasks::VideoTask>();
    answers.subschema_for::<tollgate_openai_videos::Video>();
    answers.subschema_for::<tollgate_openai_videos::VideoList>();
    answers.subschema_for::<tollgate_openai_videos::VideoDeleted>();
    answers.subschema_for::<tollgate_images::ImagesResponse>();
    answers.subschema_for::<tollgate_images::StreamEvent>();
    answers.subschema_for::<tollgate_native_genai::Model>();
    answers.subschema_for::<tollgate_native_genai::ListModelsResponse>();
    answers.subschema_for::<tollgate_native_genai::embed::EmbedContentResponse>();
    answers.subschema_for::<tollgate_native_genai::embed::BatchEmbedContentsResponse>();
    answers.subschema_for::<tollgate_native_genai::Response>();
    answers.subschema_for::<tollgate_native_genai::responses::InputTokens>();
    // Errors, in each family's shape, and OpenAI's model list.
    answers.subschema_for::<tollgate_exchange::errors::OpenAiError>();
    answers.subschema_for::<tollgate_exchange::errors::ArkError>();
    answers.subschema_for::<tollgate_exchange::errors::T2aError>();
    answers.subschema_for::<tollgate_exchange::errors::GoogleError>();
    answers.subschema_for::<tollgate_settings::catalog::ModelList>();
    // The operator's: the admin API's answers (`crate::views`).
    answers.subschema_for::<crate::views::AccountPage>();
    answers.subschema_for::<crate::views::AccountDetail>();
    answers.subschema_for::<crate::views::CreatedAccount>();
    answers.subschema_for::<crate::views::Credited>();
    answers.subschema_for::<crate::views::KeyState>();
    answers.subschema_for::<crate::views::Group>();
    answers.subschema_for::<crate::views::ModelPrices>();
    answers.subschema_for::<crate::views::RequestCharges>();
    answers.subschema_for::<crate::views::Page<crate::views::LedgerRow>>();
    answers.subschema_for::<crate::views::Page<crate::views::UsageRecord>>();
    answers.subschema_for::<crate::views::UsageTotals>();
    answers.subschema_for::<crate::views::Lease>();
    answers.subschema_for::<crate::views::Audit>();
    answers.subschema_for::<tollgate_store::OpenHold>();
    answers.subschema_for::<tollgate_store::OpenSession>();
    answers.subschema_for::<crate::views::Page<tollgate_store::AdminChangeRecord>>();
    answers.subschema_for::<crate::views::Page<crate::views::TaskView>>();
    answers.subschema_for::<crate::views::ConfigStatus>();
    answers.subschema_for::<crate::views::Overview>();
    answers.subschema_for::<crate::views::Channel>();
    answers.subschema_for::<crate::views::CatalogModel>();
    answers.subschema_for::<crate::alerts::RuleInForce>();
    answers.subschema_for::<crate::alerts::Event>();
    answers.subschema_for::<crate::alerts::Delivery>();
    answers.subschema_for::<tollgate_settings::reload::Reloaded>();
    answers.subschema_for::<tollgate_store::CodeBatch>();
    answers.subschema_for::<tollgate_store::CodeRedeemed>();
    answers.subschema_for::<crate::codes::IssuedBatch>();
    answers.subschema_for::<crate::codes::BatchReport>();
    answers.subschema_for::<tollgate_store::Person>();
    answers.subschema_for::<tollgate_store::Payment>();
    answers.subschema_for::<crate::views::Page<tollgate_store::Payment>>();
    answers.subschema_for::<tollgate_store::BalanceAlert>();
    answers.subschema_for::<crate::people::Invited>();
    (
        requests.take_definitions(true),
        answers.take_definitions(true),
    )
}

/// A generator for one direction of the wire, its references into the document's components.
fn generator(contract: Contract) -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.definitions_path = "/components/schemas".into();
            settings.meta_schema = None;
            settings.contract = contract;
        })
        .with_transform(RecursiveTransform(for_readers as fn(&mut Schema)))
        .into_generator()
}

/// A type's documentation as a reader of the API wants it: its first paragraph (the rest is
/// for Rust users: examples, decoding notes), with rustdoc's links made plain code.
fn for_readers(schema: &mut Schema) {
    if let Some(Value::String(description)) = schema.get_mut("description") {
        let first = description.split("\n\n").next().unwrap_or_default();
        *description = plain_links(first).replace('\n', " ");
    }
}

/// ``[`X`](path)`` and ``[`X`]`` as `` `X` ``.
fn plain_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("[`") {
        let Some(close) = rest[open..].find("`]").map(|i| open + i) else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close + 1]);
        rest = &rest[close + 2..];
        if rest.starts_with('(')
            && let Some(end) = rest.find(')')
        {
            rest = &rest[end + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_a_first_paragraph_without_rustdoc_links() {
        assert_eq!(
            plain_links("absent means [`EncodingFormat::Float`]; see [`Text`](Self::Text)."),
            "absent means `EncodingFormat::Float`; see `Text`."
        );
        let schemas = schemas();
        let request = &schemas["EmbeddingsRequest"]["description"];
        assert_eq!(request, "The body of `POST /v1/embeddings`.");
        for (name, schema) in &schemas {
            let text = serde_json::to_string(schema).unwrap_or_default();
            assert!(
                !text.contains("```") && !text.contains("[`"),
                "{name}: {text}"
            );
        }
    }

    #[test]
    fn the_rules_a_schema_can_say_come_from_the_types() {
        use tollgate_native_genai::embed::{MAX_BATCH, TASK_TYPES};
        let schemas = schemas();
        let property = |schema: &str, field: &str| schemas[schema]["properties"][field].clone();
        assert_eq!(property("EmbeddingsRequest", "dimensions")["minimum"], 1);
        assert_eq!(
            property("EmbedContentRequest", "taskType")["enum"],
            serde_json::json!(TASK_TYPES)
        );
        let batch = property("BatchEmbedContentsRequest", "requests");
        assert_eq!(
            (batch["minItems"].clone(), batch["maxItems"].clone()),
            (1.into(), MAX_BATCH.into())
        );
        assert_eq!(property("Video", "progress")["maximum"], 100);
        assert_eq!(property("EmbeddingsResponse", "object")["const"], "list");
        let required = |schema: &str| schemas[schema]["required"].clone();
        assert_eq!(
            required("BatchEmbedContentsRequest"),
            serde_json::json!(["requests"])
        );
        assert_eq!(
            required("ClipTaskRequest"),
            serde_json::json!(["model", "content"])
        );
        assert_eq!(
            required("SpeechRequest"),
            serde_json::json!(["model", "input", "voice"])
        );
        let known = tollgate_clip_tasks::TaskStatus::KNOWN.map(|s| s.as_str().to_owned());
        assert_eq!(schemas["ClipTaskStatus"]["enum"], serde_json::json!(known));
    }

    #[test]
    fn a_type_read_and_written_is_one_shape() {
        let (read, written) = both_directions();
        for (name, schema) in &written {
            if let Some(other) = read.get(name) {
                assert_eq!(other, schema, "{name} is read and written differently");
            }
        }
    }
}
