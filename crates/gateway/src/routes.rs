//! The route table (DESIGN §2 step 1): one row per endpoint — every fact the request path needs
//! about it (`RouteSpec`: method and path, credentials, policy name, limits, usage logging,
//! body limit, error shape) and its handler — read by routing, credentials, the access
//! policies, admission, the usage log, body limits and the OpenAPI document
//! (`docs/architecture.md`, "Adding an endpoint"). Nothing else lists endpoints, and nothing
//! else dispatches: the service is handed [`TABLE`] and calls the row's handler, so a row
//! without one does not compile. A row's type and the lookup are [`crate::endpoint`].

use crate::endpoint::{Endpoint, Handler, Table, unknown_url};
use crate::handlers;
use http::{HeaderValue, Request, Response, header};
use hyper::body::Incoming;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_native_genai::live;
use tollgate_request::context::RequestCtx;
use tollgate_request::routes::{
    Credentials, PathPattern, Route, Streams, Verb, family_of, item, row,
};
use tollgate_settings::limits::Endpoint as Body;

/// A client handler `f(ctx, principal, request)`.
macro_rules! client {
    ($f:path) => {
        Handler::Client(|ctx, principal, request| Box::pin($f(ctx, principal, request)))
    };
    // One whose path names an item (a task, a video, a request id): `f(…, &id)`.
    ($f:path, item) => {
        Handler::Client(|ctx, principal, request| {
            Box::pin(async move {
                let id = item(request.uri().path()).to_owned();
                $f(ctx, principal, request, &id).await
            })
        })
    };
}

/// An open handler `f(ctx, request)`.
macro_rules! open {
    ($f:path) => {
        Handler::Open(|ctx, request| Box::pin($f(ctx, request)))
    };
}

use Credentials::Key;
use PathPattern::{Exact, Item, ItemThen, Model, Under};
use tollgate_exchange::errors::Family::{Ark, Google, OpenAi, T2a};

const GET: Verb = Verb::Get;
const POST: Verb = Verb::Post;
const DELETE: Verb = Verb::Delete;
const TASKS: &str = "/api/v3/contents/generations/tasks";
const TASK: &str = "/api/v3/contents/generations/tasks/";
/// The table: every endpoint of docs/api.md §4, in the order paths are matched. One row per
/// endpoint (a route with two paths has two; a path that answers native clients in the native
/// shape has a row for them first); kept as a table, a row to a few lines.
#[rustfmt::skip]
static ROUTES: &[Endpoint] = &[
    Endpoint::new(row(Route::Healthz, GET, Exact("/healthz"), "healthz").in_reserve()
        .about(handlers::ops::about_healthz), open!(handlers::ops::healthz)),
    Endpoint::new(row(Route::Readyz, GET, Exact("/readyz"), "readyz").in_reserve()
        .about(handlers::ops::about_readyz), open!(handlers::ops::readyz)),
    Endpoint::new(row(Route::LedgerKeys, GET, Exact("/.well-known/tollgate-ledger-keys"), "ledger_keys")
        .about(handlers::ops::about_ledger_keys), open!(handlers::ops::ledger_keys)),
    Endpoint::new(row(Route::Metrics, GET, Exact("/metrics"), "metrics").operator().in_reserve()
        .about(handlers::ops::about_metrics), open!(handlers::ops::metrics)),
    Endpoint::new(row(Route::OpenApi, GET, Exact("/openapi.json"), "openapi").operator()
        .about(handlers::ops::about_openapi), Handler::OperatorSide),
    Endpoint::new(row(Route::Console, GET, Exact("/console"), "console").operator()
        .about(handlers::ops::about_console), Handler::OperatorSide),
    Endpoint::new(row(Route::Console, GET, Under("/console/"), "console").operator()
        .about(handlers::ops::about_console), Handler::OperatorSide),
    Endpoint::new(row(Route::Admin, Verb::Any, Under("/admin/v1/"), "admin").operator()
        .documented_elsewhere(), Handler::OperatorSide),
    Endpoint::new(row(Route::Portal, GET, Exact("/portal"), "portal").customer()
        .about(handlers::ops::about_portal), Handler::CustomerSide),
    Endpoint::new(row(Route::Portal, Verb::Any, Under("/portal/"), "portal").customer()
        .documented_elsewhere(), Handler::CustomerSide),
    Endpoint::new(row(Route::ListModels, GET, Exact("/v1/models"), "models").native_clients().key(Key(Google), None)
        .about(handlers::ops::about_list_models), client!(handlers::native::list_models)),
    Endpoint::new(row(Route::ListModels, GET, Exact("/v1/models"), "models").key(Key(OpenAi), None)
        .about(handlers::ops::about_list_models), client!(handlers::ops::list_models)),
    Endpoint::new(row(Route::ModelGet, GET, Model(None), "native_model").native_clients().key(Key(Google), None)
        .about(handlers::native::about_model), client!(handlers::native::get_model)),
    Endpoint::new(row(Route::ModelGet, GET, Model(None), "native_model").key(Key(OpenAi), None)
        .about(handlers::native::about_model), client!(handlers::ops::get_model)),
    Endpoint::new(row(Route::NativeListModels, GET, Exact("/v1beta/models"), "native_models").key(Key(Google), None)
        .about(handlers::native::about_list_models), client!(handlers::native::list_models)),
    Endpoint::new(row(Route::Embeddings, POST, Exact("/v1/embeddings"), "embeddings")
        .key(Key(OpenAi), Some("embeddings"))
        .metered(Body::Embeddings, Streams::No)
        .about(handlers::embeddings::about), client!(handlers::embeddings::create)),
    Endpoint::new(row(Route::Speech, POST, Exact("/v1/audio/speech"), "speech")
        .key(Key(OpenAi), Some("speech"))
        .metered(Body::Speech, Streams::OnRequest)
        .about(handlers::speech::about), client!(handlers::speech::create)),
    Endpoint::new(row(Route::T2a, POST, Exact("/v1/t2a_v2"), "t2a")
        .key(Key(T2a), Some("t2a"))
        .metered(Body::T2a, Streams::OnRequest)
        .about(handlers::t2a::about), client!(handlers::t2a::create)),
    Endpoint::new(row(Route::Transcriptions, POST, Exact("/v1/audio/transcriptions"), "transcriptions")
        .key(Key(OpenAi), Some("transcriptions"))
        .metered(Body::Transcriptions, Streams::OnRequest)
        .about(handlers::transcriptions::about), client!(handlers::transcriptions::create)),
    Endpoint::new(row(Route::ImageGenerations, POST, Exact("/v1/images/generations"), "image_generations")
        .key(Key(OpenAi), Some("images"))
        .metered(Body::ImageGenerations, Streams::OnRequest)
        .about(handlers::images::about_generations), client!(handlers::images::generate)),
    Endpoint::new(row(Route::ImageEdits, POST, Exact("/v1/images/edits"), "image_edits")
        .key(Key(OpenAi), Some("images"))
        .metered(Body::ImageEdits, Streams::OnRequest)
        .about(handlers::images::about_edits), client!(handlers::images::edit)),
    Endpoint::new(row(Route::ImageVariations, POST, Exact("/v1/images/variations"), "image_variations")
        .key(Key(OpenAi), Some("images"))
        .metered(Body::ImageEdits, Streams::No)
        .about(handlers::images::about_variations), client!(handlers::images::variations)),
    Endpoint::new(row(Route::Realtime, GET, Exact("/v1/realtime"), "realtime")
        .key(Key(OpenAi), Some("realtime"))
        .session()
        .about(handlers::realtime::about), client!(handlers::realtime::connect)),
    Endpoint::new(row(Route::RealtimeClientSecrets, POST, Exact("/v1/realtime/client_secrets"), "realtime_client_secrets")
        .key(Key(OpenAi), Some("realtime"))
        .reads(Body::ClientSecrets)
        .about(handlers::realtime::about_client_secrets), client!(handlers::realtime::create_client_secret)),
    Endpoint::new(row(Route::GeminiLive, GET, Exact(live::SOCKET), "live")
        .key(Key(Google), Some("live"))
        .session()
        .about(handlers::gemini_live::about), client!(handlers::gemini_live::connect)),
    Endpoint::new(row(Route::GeminiLive, GET, Exact(live::SOCKET_V1), "live")
        .key(Key(Google), Some("live"))
        .session()
        .about(handlers::gemini_live::about), client!(handlers::gemini_live::connect)),
    Endpoint::new(row(Route::GeminiLive, GET, Exact(live::SOCKET_V1ALPHA), "live")
        .key(Key(Google), Some("live"))
        .session()
        .about(handlers::gemini_live::about), client!(handlers::gemini_live::connect)),
    Endpoint::new(row(Route::GeminiLive, GET, Exact(live::CONSTRAINED_SOCKET), "live")
        .key(Key(Google), Some("live"))
        .session()
        .about(handlers::gemini_live::about), client!(handlers::gemini_live::connect)),
    Endpoint::new(row(Route::GeminiLive, GET, Exact(live::CONSTRAINED_SOCKET_V1BETA), "live")
        .key(Key(Google), Some("live"))
        .session()
        .about(handlers::gemini_live::about), client!(handlers::gemini_live::connect)),
    Endpoint::new(row(Route::GeminiAuthTokens, POST, Exact("/v1alpha/auth_tokens"), "live_auth_tokens")
        .key(Key(Google), Some("live"))
        .reads(Body::ClientSecrets)
        .about(handlers::gemini_live::about_auth_tokens), client!(handlers::gemini_live::create_auth_token)),
    Endpoint::new(row(Route::Translations, POST, Exact("/v1/audio/translations"), "translations")
        .about(handlers::ops::about_translations), open!(handlers::ops::translations_unsupported)),
    Endpoint::new(row(Route::SpeechToText, POST, Exact("/v1/speech_to_text"), "speech_to_text")
        .key(Key(OpenAi), Some("speech_to_text"))
        .metered(Body::SpeechToText, Streams::OnRequest)
        .about(handlers::speech_to_text::about), client!(handlers::speech_to_text::create)),
    Endpoint::new(row(Route::ClipTaskList, GET, Exact(TASKS), "clip_tasks").key(Key(Ark), Some("clip_tasks"))
        .about(handlers::clip_tasks::about_list), client!(handlers::clip_tasks::list)),
    Endpoint::new(row(Route::ClipTaskCreate, POST, Exact(TASKS), "clip_tasks")
        .key(Key(Ark), Some("clip_tasks"))
        .metered(Body::ClipTasks, Streams::No)
        .about(handlers::clip_tasks::about_create), client!(handlers::clip_tasks::create)),
    Endpoint::new(row(Route::ClipTaskGet, GET, Item(TASK), "clip_task").key(Key(Ark), Some("clip_tasks"))
        .about(handlers::clip_tasks::about_get), client!(handlers::clip_tasks::get, item)),
    Endpoint::new(row(Route::ClipTaskDelete, DELETE, Item(TASK), "clip_task").key(Key(Ark), Some("clip_tasks"))
        .about(handlers::clip_tasks::about_delete), client!(handlers::clip_tasks::delete, item)),
    Endpoint::new(row(Route::VideoCreate, POST, Exact("/v1/video/generations"), "video_generations")
        .key(Key(OpenAi), Some("video_generations"))
        .metered(Body::VideoGenerations, Streams::No)
        .about(handlers::video_generations::about_create), client!(handlers::video_generations::create)),
    Endpoint::new(row(Route::VideoGet, GET, Item("/v1/video/generations/"), "video_generation")
        .key(Key(OpenAi), Some("video_generations"))
        .about(handlers::video_generations::about_get), client!(handlers::video_generations::get, item)),
    Endpoint::new(row(Route::VideosCreate, POST, Exact("/v1/videos"), "videos")
        .key(Key(OpenAi), Some("videos"))
        .metered(Body::Videos, Streams::No)
        .about(handlers::videos::about_create), client!(handlers::videos::create)),
    Endpoint::new(row(Route::VideosList, GET, Exact("/v1/videos"), "videos").key(Key(OpenAi), Some("videos"))
        .about(handlers::videos::about_list), client!(handlers::videos::list)),
    Endpoint::new(row(Route::VideosGet, GET, Item("/v1/videos/"), "video").key(Key(OpenAi), Some("videos"))
        .about(handlers::videos::about_get), client!(handlers::videos::get, item)),
    Endpoint::new(row(Route::VideosDelete, DELETE, Item("/v1/videos/"), "video").key(Key(OpenAi), Some("videos"))
        .about(handlers::videos::about_delete), client!(handlers::videos::delete, item)),
    Endpoint::new(row(Route::VideosContent, GET, ItemThen("/v1/videos/", "/content"), "video_content")
        .key(Key(OpenAi), Some("videos"))
        .about(handlers::videos::about_content), client!(handlers::videos::content, item)),
    Endpoint::new(row(Route::VideosRemix, POST, ItemThen("/v1/videos/", "/remix"), "video_remix")
        .key(Key(OpenAi), Some("videos"))
        .metered(Body::Videos, Streams::No)
        .about(handlers::videos::about_remix), client!(handlers::videos::remix, item)),
    Endpoint::new(row(Route::VideosUnsupported, POST, Exact("/v1/videos/edits"), "video_edits")
        .key(Key(OpenAi), Some("videos"))
        .reads(Body::Videos)
        .about(handlers::videos::about_unsupported), client!(handlers::videos::unsupported)),
    Endpoint::new(row(Route::VideosUnsupported, POST, Exact("/v1/videos/extensions"), "video_extensions")
        .key(Key(OpenAi), Some("videos"))
        .reads(Body::Videos)
        .about(handlers::videos::about_unsupported), client!(handlers::videos::unsupported)),
    Endpoint::new(row(Route::VideosUnsupported, POST, Exact("/v1/videos/characters"), "video_characters")
        .key(Key(OpenAi), Some("videos"))
        .reads(Body::Videos)
        .about(handlers::videos::about_unsupported), client!(handlers::videos::unsupported)),
    Endpoint::new(row(Route::VideosCharacter, GET, Item("/v1/videos/characters/"), "video_characters")
        .key(Key(OpenAi), Some("videos"))
        .about(handlers::videos::about_character), client!(handlers::videos::unsupported)),
    Endpoint::new(row(Route::Media, GET, Item("/v1/media/"), "media")
        .about(handlers::media::about), open!(handlers::media::get)),
    Endpoint::new(row(Route::MediaImage, GET, Item("/v1/media/images/"), "media")
        .about(handlers::media::about_image), open!(handlers::media::image)),
    Endpoint::new(row(Route::Charges, GET, Item("/v1/charges/"), "charges").native_clients().key(Key(Google), None)
        .about(handlers::charges::about), client!(handlers::charges::get)),
    Endpoint::new(row(Route::Charges, GET, Item("/v1/charges/"), "charges").key(Key(OpenAi), None)
        .about(handlers::charges::about), client!(handlers::charges::get)),
    Endpoint::new(row(Route::Redemptions, POST, Exact("/v1/redemptions"), "redemptions").key(Key(OpenAi), None)
        .reads(Body::Redemptions)
        .about(handlers::redemptions::about), client!(handlers::redemptions::redeem)),
    Endpoint::new(row(Route::StripeWebhook, POST, Exact("/webhooks/stripe"), "stripe_webhook")
        .reads(Body::Webhooks)
        .about(handlers::webhooks::about), open!(handlers::webhooks::stripe)),
    Endpoint::new(row(Route::NativeGenerate, POST, Model(Some("generateContent")), "native")
        .key(Key(Google), Some("native"))
        .metered(Body::Native, Streams::No)
        .about(handlers::native::about_generate), client!(handlers::native::generate)),
    Endpoint::new(row(Route::NativeStream, POST, Model(Some("streamGenerateContent")), "native")
        .key(Key(Google), Some("native"))
        .metered(Body::Native, Streams::Always)
        .about(handlers::native::about_stream), client!(handlers::native::stream)),
    Endpoint::new(row(Route::NativeCountTokens, POST, Model(Some("countTokens")), "native")
        .key(Key(Google), Some("native"))
        .reads(Body::Native)
        .about(handlers::native::about_count_tokens), client!(handlers::native::count_tokens)),
    Endpoint::new(row(Route::NativePredict, POST, Model(Some("predict")), "native_predict")
        .key(Key(Google), Some("images"))
        .metered(Body::Native, Streams::No)
        .about(handlers::native_images::about), client!(handlers::native_images::predict)),
    Endpoint::new(row(Route::NativeEmbed, POST, Model(Some("embedContent")), "native_embed")
        .key(Key(Google), Some("embeddings"))
        .metered(Body::Embeddings, Streams::No)
        .about(handlers::native_embeddings::about_embed), client!(handlers::native_embeddings::create)),
    Endpoint::new(row(Route::NativeBatchEmbed, POST, Model(Some("batchEmbedContents")), "native_embed")
        .key(Key(Google), Some("embeddings"))
        .metered(Body::Embeddings, Streams::No)
        .about(handlers::native_embeddings::about_batch_embed), client!(handlers::native_embeddings::create)),
    Endpoint::new(row(Route::ChatCompletions, POST, Exact("/v1/chat/completions"), "chat")
        .key(Key(OpenAi), Some("chat"))
        .metered(Body::Chat, Streams::OnRequest)
        .about(handlers::chat::about), client!(handlers::chat::create)),
    Endpoint::new(row(Route::Responses, POST, Exact("/v1/responses"), "responses")
        .key(Key(OpenAi), Some("responses"))
        .metered(Body::Responses, Streams::OnRequest)
        .about(handlers::responses::about), client!(handlers::responses::create)),
    Endpoint::new(row(Route::ResponsesInputTokens, POST, Exact("/v1/responses/input_tokens"), "responses_input_tokens")
        .key(Key(OpenAi), Some("responses"))
        .reads(Body::Responses)
        .about(handlers::responses::about_input_tokens), client!(handlers::responses::input_tokens)),
];

/// The gateway's route table: [`ROUTES`] and the rows that answer what none of them serves
/// (what `Gateway::new` is handed).
pub static TABLE: Table = Table {
    rows: ROUTES,
    not_found: &NOT_FOUND,
    method_not_allowed: &METHOD_NOT_ALLOWED,
};

/// The row of a path nothing serves: 404 in the path's family.
static NOT_FOUND: Endpoint = Endpoint::new(
    row(Route::NotFound, Verb::Any, Under("/"), "unknown").documented_elsewhere(),
    open!(unknown_url),
);

/// The row of a known path asked with another method: 405 with `Allow`.
static METHOD_NOT_ALLOWED: Endpoint = Endpoint::new(
    row(Route::MethodNotAllowed, Verb::Any, Under("/"), "unknown").documented_elsewhere(),
    open!(method_not_allowed),
);

/// 405 for a path the table has with other methods, with the `Allow` header naming them.
async fn method_not_allowed(
    _ctx: RequestCtx,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let path = request.uri().path();
    let allow = TABLE.allowed(path).to_string();
    let e = ApiError::new(
        ErrorKind::MethodNotAllowed,
        format!("{} is not allowed here; use {allow}", request.method()),
    );
    let mut response = e.into_response(family_of(path));
    if let Ok(v) = HeaderValue::from_str(&allow) {
        response.headers_mut().insert(header::ALLOW, v);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;
    use tollgate_exchange::errors::Family;
    use tollgate_request::routes::native_model;

    fn name(method: &Method, path: &str) -> Route {
        TABLE.route(method, path, false).endpoint.spec.route
    }

    #[test]
    fn every_spec_endpoint_is_routed() {
        let cases = [
            (Method::POST, "/v1/audio/speech", Family::OpenAi),
            (Method::POST, "/v1/audio/transcriptions", Family::OpenAi),
            (Method::POST, "/v1/t2a_v2", Family::T2a),
            (Method::POST, "/v1/speech_to_text", Family::OpenAi),
            (Method::POST, "/v1/embeddings", Family::OpenAi),
            (Method::POST, TASKS, Family::Ark),
            (
                Method::GET,
                "/api/v3/contents/generations/tasks/cgt-1",
                Family::Ark,
            ),
            (Method::POST, "/v1/video/generations", Family::OpenAi),
            (Method::GET, "/v1/video/generations/vid-1", Family::OpenAi),
            (
                Method::POST,
                "/v1beta/models/gen-2.5-flash:generateContent",
                Family::Google,
            ),
            (
                Method::POST,
                "/v1beta/models/gen-2.5-flash:streamGenerateContent",
                Family::Google,
            ),
            (
                Method::POST,
                "/v1/models/gen-2.5-flash:generateContent",
                Family::Google,
            ),
        ];
        for (method, path, family) in cases {
            let r = TABLE.route(&method, path, false);
            assert_eq!(
                r.endpoint.spec.error_shape(path, None).family,
                family,
                "{path}"
            );
            assert_eq!(family_of(path), family, "{path}");
            assert!(
                !matches!(
                    r.endpoint.spec.route,
                    Route::NotFound | Route::MethodNotAllowed
                ),
                "{method} {path} → {r:?}"
            );
        }
    }

    #[test]
    fn the_videos_api_routes_each_path_and_names_its_item() {
        for (method, path, want) in [
            (Method::POST, "/v1/videos", Route::VideosCreate),
            (Method::GET, "/v1/videos", Route::VideosList),
            (Method::GET, "/v1/videos/video-1", Route::VideosGet),
            (Method::DELETE, "/v1/videos/video-1", Route::VideosDelete),
            (
                Method::GET,
                "/v1/videos/video-1/content",
                Route::VideosContent,
            ),
        ] {
            assert_eq!(name(&method, path), want, "{method} {path}");
            if path != "/v1/videos" {
                assert_eq!(item(path), "video-1", "{path}");
            }
        }
        assert_eq!(name(&Method::GET, "/v1/videos/a/b"), Route::NotFound);
        assert_eq!(name(&Method::GET, "/v1/videos//content"), Route::NotFound);
        assert_eq!(item("/v1/video/generations/content"), "content");
    }

    #[test]
    fn wrong_methods_and_unknown_paths() {
        assert_eq!(
            name(&Method::GET, "/v1/embeddings"),
            Route::MethodNotAllowed
        );
        assert_eq!(TABLE.allowed("/v1/embeddings").to_string(), "POST");
        assert_eq!(
            TABLE.route(&Method::GET, "/v1/embeddings", false).label,
            "embeddings"
        );
        assert_eq!(name(&Method::GET, "/nope"), Route::NotFound);
        assert_eq!(name(&Method::GET, "/v1/models"), Route::ListModels);
        assert_eq!(name(&Method::GET, "/v1/models/x"), Route::ModelGet);
        assert_eq!(name(&Method::GET, "/v1/models/x/y"), Route::NotFound);
        assert_eq!(
            name(&Method::POST, "/v1beta/models/x:embedContent"),
            Route::NativeEmbed
        );
        assert_eq!(
            name(&Method::POST, "/v1/models/x:batchEmbedContents"),
            Route::NativeBatchEmbed
        );
        assert_eq!(
            name(&Method::POST, "/v1beta/models/x:predict"),
            Route::NativePredict
        );
        assert_eq!(
            name(&Method::POST, "/v1beta1/publishers/google/models/x:predict"),
            Route::NativePredict
        );
        assert_eq!(
            name(&Method::POST, "/v1beta/models/x:explode"),
            Route::NotFound
        );
        assert_eq!(
            name(&Method::GET, "/v1beta/models/x:generateContent"),
            Route::MethodNotAllowed
        );
        assert_eq!(
            TABLE
                .allowed("/v1beta/models/x:generateContent")
                .to_string(),
            "POST"
        );
        assert_eq!(
            native_model("/v1beta/models/gen-2.5-flash:streamGenerateContent"),
            ("gen-2.5-flash", "streamGenerateContent")
        );
        assert_eq!(name(&Method::PUT, TASKS), Route::MethodNotAllowed);
        assert_eq!(TABLE.allowed(TASKS).to_string(), "GET, POST");
        assert_eq!(
            TABLE
                .allowed("/api/v3/contents/generations/tasks/cgt-1")
                .to_string(),
            "GET, DELETE"
        );
        assert_eq!(name(&Method::PATCH, "/admin/v1/keys"), Route::Admin);
        assert_eq!(name(&Method::GET, "/console/app.js"), Route::Console);
        assert_eq!(
            name(&Method::GET, "/v1beta/models/:generateContent"),
            Route::NotFound
        );
    }

    /// The model list, one model and a charge answer a native client in the native shape:
    /// rows of their own, not a special case.
    #[test]
    fn a_native_client_gets_the_native_rows() {
        for (path, want) in [
            ("/v1/models", Route::ListModels),
            ("/v1/models/x", Route::ModelGet),
            ("/v1/charges/req-1", Route::Charges),
        ] {
            let native = TABLE.route(&Method::GET, path, true).endpoint;
            let other = TABLE.route(&Method::GET, path, false).endpoint;
            assert_eq!(
                (native.spec.route, other.spec.route),
                (want, want),
                "{path}"
            );
            assert_eq!(
                native.spec.error_shape(path, None).family,
                Family::Google,
                "{path}"
            );
            assert_eq!(
                other.spec.error_shape(path, None).family,
                Family::OpenAi,
                "{path}"
            );
        }
    }

    /// The native stream without `alt=sse` answers a JSON array, its errors too.
    #[test]
    fn the_native_stream_shapes_its_errors_by_alt() {
        let path = "/v1beta/models/x:streamGenerateContent";
        let spec = &TABLE.route(&Method::POST, path, true).endpoint.spec;
        assert!(spec.error_shape(path, None).array);
        assert!(spec.error_shape(path, Some("key=k")).array);
        assert!(!spec.error_shape(path, Some("alt=sse&key=k")).array);
        let whole = &TABLE
            .route(&Method::POST, "/v1beta/models/x:generateContent", true)
            .endpoint
            .spec;
        assert!(!whole.error_shape(path, None).array);
    }

    #[test]
    fn a_path_with_a_doubled_leading_slash_is_routed_as_with_one() {
        let path = "//ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";
        assert_eq!(
            TABLE.route(&Method::GET, path, false).endpoint.spec.route,
            Route::GeminiLive
        );
        assert_eq!(
            TABLE
                .route(&Method::GET, "///healthz", false)
                .endpoint
                .spec
                .route,
            Route::Healthz
        );
    }

    #[test]
    fn every_row_names_a_known_policy_endpoint_and_each_is_named() {
        let mut named: Vec<&str> = Vec::new();
        for endpoint in ROUTES {
            let spec = &endpoint.spec;
            // A metered route reads a body (a live session: its socket instead) and names its
            // policy endpoint.
            if spec.metered {
                let reads = spec.body.is_some()
                    || matches!(spec.route, Route::Realtime | Route::GeminiLive);
                assert!(reads && spec.policy.is_some(), "{spec:?}");
            }
            if let Some(policy) = spec.policy {
                assert!(
                    tollgate_request::policy::ENDPOINTS.contains(&policy),
                    "{spec:?} names an unknown policy endpoint"
                );
                if !named.contains(&policy) {
                    named.push(policy);
                }
            }
        }
        assert_eq!(named, tollgate_request::policy::ENDPOINTS);
    }

    #[test]
    fn only_the_operational_routes_answer_in_the_reserve() {
        let reserve: Vec<Route> = ROUTES
            .iter()
            .filter(|e| e.spec.in_reserve)
            .map(|e| e.spec.route)
            .collect();
        assert_eq!(reserve, [Route::Healthz, Route::Readyz, Route::Metrics]);
    }
}
