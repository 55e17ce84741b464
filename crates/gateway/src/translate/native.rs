//! Native text generation (docs/api.md §2.9, wire-formats §6): the model objects of
//! `GET /v1beta/models`. (The hold's local estimate of a prompt and the usage that settles are
//! `tollgate_metering::prompt` and `tollgate_metering::text`.)

use serde_json::{Value, json};
use tollgate_native_genai::models::ModelLimits;
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::config::ModelKind;

/// Imagen's prompt limit and its answer's, as the vendor lists them.
const IMAGEN_LIMITS: (u32, u32) = (480, 8_192);

/// A configured native model as the vendor's model object: a text model's methods, or an image
/// model's priced by the picture (`predict`).
pub fn model_object(entry: &ModelEntry, limits: Option<&ModelLimits>) -> Value {
    if entry.kind == ModelKind::NativeImages {
        return json!({
            "name": format!("models/{}", entry.public),
            "version": entry.upstream_model,
            "displayName": entry.public,
            "description": format!("{} through tollgate", entry.public),
            "inputTokenLimit": IMAGEN_LIMITS.0,
            "outputTokenLimit": IMAGEN_LIMITS.1,
            "supportedGenerationMethods": ["predict"],
            "thinking": false,
        });
    }
    let (input, output, thinking) = limits.map_or((0, 0, false), |l| {
        (l.input_token_limit, l.max_output_tokens, l.thinks())
    });
    json!({
        "name": format!("models/{}", entry.public),
        "version": entry.upstream_model,
        "displayName": entry.public,
        "description": format!("{} through tollgate", entry.public),
        "inputTokenLimit": input,
        "outputTokenLimit": output,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
        "thinking": thinking,
    })
}
