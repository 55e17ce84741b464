//! `POST /v1/embeddings` (docs/api.md §2.6, §4.5; wire-formats §2).

use crate::embedding;
use crate::translate::embeddings as translate;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use tollgate_embeddings::EmbeddingRequest;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::ApiError;
use tollgate_exchange::response::UpstreamTime;
use tollgate_exchange::route_doc::{About, ok, r};
use tollgate_request::context::RequestCtx;
use tollgate_settings::config::ModelKind;
use tollgate_store::Principal;

/// The request flow of DESIGN §2, top to bottom.
pub async fn create(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();

    // 3. The body, under the endpoint's limit, decoded and checked.
    let (request, size): (EmbeddingRequest, _) =
        body::read_json(ctx.body_bounds(), &parts.headers, body).await?;

    // 4. The model.
    let entry = ctx
        .settings
        .catalog
        .require(&request.model, ModelKind::Embeddings)?;

    // 5–8. The checks against the model, the hold, the upstream, the settlement.
    let (answer, upstream_time) =
        embedding::embed(&ctx, &principal, entry, request, size, translate::to_client).await?;

    let mut response = body::json_bytes_response(StatusCode::OK, answer);
    response
        .extensions_mut()
        .insert(UpstreamTime(upstream_time));
    Ok(response)
}

/// `POST /v1/embeddings`, in the OpenAPI document.
pub fn about() -> About {
    About::new("Embeddings", "embeddings", ok(r("EmbeddingsResponse"))).posting("EmbeddingsRequest")
}
