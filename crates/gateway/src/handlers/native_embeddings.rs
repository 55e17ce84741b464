//! `POST /v1beta/models/{model}:embedContent` and `:batchEmbedContents` (also under
//! `/v1/models/`; docs/api.md §2.10, §4.12–4.13): the native embeddings methods, served by the model's
//! embeddings channels and billed by tokens exactly as `/v1/embeddings` is (`crate::embedding`).
//! Each request's text parts become one input of an OpenAI-shaped call; one vector comes back
//! per request. `taskType` and `title` are checked and not forwarded: an embeddings channel has
//! no such fields (`docs/decisions.md`, "Native embeddings").

use crate::embedding;
use crate::translate::embeddings as translate;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use tollgate_embeddings::{EmbeddingInput, EmbeddingRequest, EncodingFormat};
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::response::UpstreamTime;
use tollgate_exchange::route_doc::{About, ok, r};
use tollgate_native_genai::embed::{
    self, BatchEmbedContentsRequest, BatchEmbedContentsResponse, ContentEmbedding,
    EmbedContentRequest, EmbedContentResponse,
};
use tollgate_request::context::RequestCtx;
use tollgate_request::routes::{self, Route};
use tollgate_settings::config::ModelKind;
use tollgate_store::Principal;

/// The request flow of DESIGN §2, top to bottom, for both methods.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let batch = ctx.route.route == Route::NativeBatchEmbed;

    // 3. The body, under the embeddings limit, decoded.
    let raw = body::read_limited(&parts.headers, body, ctx.body_bounds()).await?;
    let requests = if batch {
        body::decode_json::<BatchEmbedContentsRequest>(&raw)?.requests
    } else {
        vec![body::decode_json::<EmbedContentRequest>(&raw)?]
    };

    // 4. The model from the path (an embeddings model), and the requests against the rules.
    let (model, _) = routes::native_model(parts.uri.path());
    let model = model.strip_prefix("models/").unwrap_or(model);
    let entry = ctx
        .settings
        .catalog
        .resolve(model, ModelKind::Embeddings)
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                ErrorKind::NotFound,
                format!("models/{model} is not found, or is not an embedding model served here"),
            )
        })?;
    let asked = embed::texts(&requests, model, batch)?;
    let mut openai = EmbeddingRequest::new(model, EmbeddingInput::Texts(asked.texts));
    openai.dimensions = asked.output_dimensionality;
    // The values are wanted, so their exact and shortest form: base64 of `float32`.
    openai.encoding_format = Some(EncodingFormat::Base64);

    // 5–8. The checks against the model, the hold, the upstream, the settlement.
    let (values, upstream_time) = embedding::embed(
        &ctx,
        &principal,
        entry,
        openai,
        raw.len(),
        translate::to_values,
    )
    .await
    .map_err(|e| in_native_terms(e, batch))?;

    let embeddings: Vec<ContentEmbedding> = values
        .into_iter()
        .map(|values| ContentEmbedding { values })
        .collect();
    let mut response = if batch {
        body::json_response(StatusCode::OK, &BatchEmbedContentsResponse { embeddings })
    } else {
        let embedding = embeddings.into_iter().next().unwrap_or_default();
        body::json_response(StatusCode::OK, &EmbedContentResponse { embedding })
    };
    response
        .extensions_mut()
        .insert(UpstreamTime(upstream_time));
    Ok(response)
}

/// An error of the shared embeddings checks, naming the native request's fields: `dimensions`
/// is `outputDimensionality`, `input[i]` the `i`th request's `content`.
fn in_native_terms(mut e: ApiError, batch: bool) -> ApiError {
    let Some(param) = e.param.clone() else {
        return e;
    };
    let native = if param == "dimensions" {
        if batch {
            "requests[0].outputDimensionality".to_owned()
        } else {
            "outputDimensionality".to_owned()
        }
    } else if let Some(index) = param
        .strip_prefix("input[")
        .and_then(|rest| rest.strip_suffix(']'))
    {
        if batch {
            format!("requests[{index}].content")
        } else {
            "content".to_owned()
        }
    } else if param == "input" {
        if batch { "requests" } else { "content" }.to_owned()
    } else {
        return e;
    };
    e.message = e
        .message
        .replace(&format!("'{param}'"), &format!("'{native}'"));
    e.param = Some(native);
    e
}

/// `POST /v1beta/models/{model}:embedContent`, in the OpenAPI document.
pub fn about_embed() -> About {
    About::native_model(
        "Native embeddings: one vector (served by embeddings channels, billed by tokens)",
        ok(r("EmbedContentResponse")),
        r("EmbedContentRequest"),
    )
    .tag("embeddings")
    .param("model", "An embeddings model")
}

/// `POST /v1beta/models/{model}:batchEmbedContents`, in the OpenAPI document.
pub fn about_batch_embed() -> About {
    About::native_model(
        "Native embeddings: one vector per request, up to 100",
        ok(r("BatchEmbedContentsResponse")),
        r("BatchEmbedContentsRequest"),
    )
    .tag("embeddings")
    .param("model", "An embeddings model")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_native_fields() {
        let e = ApiError::invalid(
            "dimensions",
            "out_of_range",
            "'dimensions' must be at most 8",
        );
        let native = in_native_terms(e, false);
        assert_eq!(native.param.as_deref(), Some("outputDimensionality"));
        assert_eq!(native.message, "'outputDimensionality' must be at most 8");
        let e = ApiError::invalid("input[2]", "too_many_tokens", "'input[2]' has 9000 tokens");
        let native = in_native_terms(e, true);
        assert_eq!(native.param.as_deref(), Some("requests[2].content"));
        assert_eq!(native.message, "'requests[2].content' has 9000 tokens");
    }
}
