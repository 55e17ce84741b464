//! The routing table: method and path → endpoint, its error family, and its handler
//! (DESIGN §2 step 1). Every endpoint of docs/api.md §4 is here; those that later versions build answer
//! 501 in their family's shape until then.

use crate::errors::Family;
use http::Method;

/// What a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /healthz`
    Healthz,
    /// `GET /readyz`
    Readyz,
    /// `GET /metrics`
    Metrics,
    /// `GET /v1/models`
    ListModels,
    /// `POST /v1/embeddings`
    Embeddings,
    /// `POST /v1/audio/speech`
    Speech,
    /// `POST /v1/t2a_v2`
    T2a,
    /// `POST /v1/audio/transcriptions`
    Transcriptions,
    /// `POST /v1/speech_to_text`
    SpeechToText,
    /// `POST /api/v3/contents/generations/tasks`
    ClipTaskCreate,
    /// `GET /api/v3/contents/generations/tasks`
    ClipTaskList,
    /// `GET /api/v3/contents/generations/tasks/{id}`
    ClipTaskGet,
    /// `DELETE /api/v3/contents/generations/tasks/{id}`
    ClipTaskDelete,
    /// `POST /v1/video/generations`
    VideoCreate,
    /// `GET /v1/video/generations/{task_id}`
    VideoGet,
    /// `GET /v1/media/{task_id}.mp4` — a signed link to a finished video.
    Media,
    /// `POST /v1beta/models/{model}:generateContent` (also under `/v1/models/`)
    NativeGenerate,
    /// `POST /v1beta/models/{model}:streamGenerateContent` (also under `/v1/models/`)
    NativeStream,
    /// `POST /v1beta/models/{model}:countTokens` (also under `/v1/models/`)
    NativeCountTokens,
    /// `GET /v1beta/models`
    NativeListModels,
    /// `GET /v1beta/models/{model}`, or `GET /v1/models/{model}` (the shape follows the
    /// credential: the native one for a native client's key header, OpenAI's otherwise)
    ModelGet,
    /// `POST /v1/chat/completions` with a native model (docs/api.md §4 rule 4)
    ChatCompletions,
    /// `POST /v1/responses` with a native model (the Responses bridge)
    Responses,
    /// `POST /v1/audio/translations` — not supported (docs/api.md §4 rule 5).
    Translations,
    /// Anything under `/admin/v1/` — the admin API, which routes within itself.
    Admin,
    /// `GET /openapi.json`
    OpenApi,
    /// `GET /console` and its assets under `/console/`.
    Console,
    /// A known path with another method; the value is the `Allow` header.
    MethodNotAllowed(&'static str),
    /// Nothing here.
    NotFound,
}

impl Route {
    /// The operator's side: reachable only from `[server] admin_networks` (`admin::reachable`,
    /// `docs/operations.md`), whatever else it asks for.
    pub fn operators_side(self) -> bool {
        matches!(
            self,
            Route::Admin | Route::Console | Route::Metrics | Route::OpenApi
        )
    }

    /// Whether requests on the route can spend, and so are admitted against the key's rate and
    /// concurrency limits and written to the usage log (the reads — task polls, model
    /// listings, media links — and operational routes are not; metrics count them).
    pub fn is_metered(self) -> bool {
        matches!(
            self,
            Route::Embeddings
                | Route::Speech
                | Route::T2a
                | Route::Transcriptions
                | Route::SpeechToText
                | Route::ClipTaskCreate
                | Route::VideoCreate
                | Route::NativeGenerate
                | Route::NativeStream
                | Route::ChatCompletions
                | Route::Responses
        )
    }
}

/// The endpoint names an access policy's `endpoints` list may use (`docs/decisions.md`,
/// "Access policies"): one per billed endpoint family, covering its task reads too.
pub const POLICY_ENDPOINTS: &[&str] = &[
    "embeddings",
    "speech",
    "t2a",
    "transcriptions",
    "speech_to_text",
    "clip_tasks",
    "video_generations",
    "native",
    "chat",
    "responses",
];

impl Route {
    /// The endpoint name an access policy's `endpoints` list must include for this route;
    /// `None` where every key may call (health, the model listings, a signed media link).
    pub fn policy_endpoint(self) -> Option<&'static str> {
        Some(match self {
            Route::Embeddings => "embeddings",
            Route::Speech => "speech",
            Route::T2a => "t2a",
            Route::Transcriptions => "transcriptions",
            Route::SpeechToText => "speech_to_text",
            Route::ClipTaskCreate
            | Route::ClipTaskList
            | Route::ClipTaskGet
            | Route::ClipTaskDelete => "clip_tasks",
            Route::VideoCreate | Route::VideoGet => "video_generations",
            Route::NativeGenerate | Route::NativeStream | Route::NativeCountTokens => "native",
            Route::ChatCompletions => "chat",
            Route::Responses => "responses",
            Route::Healthz
            | Route::Readyz
            | Route::Metrics
            | Route::ListModels
            | Route::NativeListModels
            | Route::ModelGet
            | Route::Media
            | Route::Translations
            | Route::Admin
            | Route::OpenApi
            | Route::Console
            | Route::MethodNotAllowed(_)
            | Route::NotFound => return None,
        })
    }
}

/// The model and the action of a native path, `…/models/{model}:{action}` (the action empty for
/// `…/models/{model}`).
pub fn native_model(path: &str) -> (&str, &str) {
    let last = last_segment(path);
    last.split_once(':').unwrap_or((last, ""))
}

/// The last path segment: the task id (or media file) of a routed task path.
pub fn last_segment(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or_default()
}

/// A routed request: its metrics label, its error family and its route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Routed {
    /// Label for metrics and logs.
    pub endpoint: &'static str,
    /// Error shape.
    pub family: Family,
    /// Handler.
    pub route: Route,
}

/// Routes a request.
pub fn route(method: &Method, path: &str) -> Routed {
    let family = family_of(path);
    let routed = |endpoint, route| Routed {
        endpoint,
        family,
        route,
    };
    let only = |allowed: &Method, endpoint, route, allow| {
        if method == allowed {
            routed(endpoint, route)
        } else {
            routed(endpoint, Route::MethodNotAllowed(allow))
        }
    };
    let get = Method::GET;
    let post = Method::POST;
    match path {
        "/healthz" => only(&get, "healthz", Route::Healthz, "GET"),
        "/readyz" => only(&get, "readyz", Route::Readyz, "GET"),
        "/metrics" => only(&get, "metrics", Route::Metrics, "GET"),
        "/openapi.json" => only(&get, "openapi", Route::OpenApi, "GET"),
        "/console" => only(&get, "console", Route::Console, "GET"),
        "/v1/models" => only(&get, "models", Route::ListModels, "GET"),
        "/v1/embeddings" => only(&post, "embeddings", Route::Embeddings, "POST"),
        "/v1/audio/speech" => only(&post, "speech", Route::Speech, "POST"),
        "/v1/audio/transcriptions" => only(&post, "transcriptions", Route::Transcriptions, "POST"),
        "/v1/audio/translations" => only(&post, "translations", Route::Translations, "POST"),
        "/v1/t2a_v2" => only(&post, "t2a", Route::T2a, "POST"),
        "/v1/speech_to_text" => only(&post, "speech_to_text", Route::SpeechToText, "POST"),
        "/v1/chat/completions" => only(&post, "chat", Route::ChatCompletions, "POST"),
        "/v1/responses" => only(&post, "responses", Route::Responses, "POST"),
        "/v1beta/models" => only(&get, "native_models", Route::NativeListModels, "GET"),
        "/v1/video/generations" => only(&post, "video_generations", Route::VideoCreate, "POST"),
        "/api/v3/contents/generations/tasks" => {
            if method == get {
                routed("clip_tasks", Route::ClipTaskList)
            } else if method == post {
                routed("clip_tasks", Route::ClipTaskCreate)
            } else {
                routed("clip_tasks", Route::MethodNotAllowed("GET, POST"))
            }
        }
        _ => route_prefixed(method, path, family),
    }
}

fn route_prefixed(method: &Method, path: &str, family: Family) -> Routed {
    let routed = |endpoint, route| Routed {
        endpoint,
        family,
        route,
    };
    if path.starts_with("/admin/v1/") {
        return routed("admin", Route::Admin);
    }
    if path.starts_with("/console/") {
        return if method == Method::GET {
            routed("console", Route::Console)
        } else {
            routed("console", Route::MethodNotAllowed("GET"))
        };
    }
    if let Some(id) = path.strip_prefix("/api/v3/contents/generations/tasks/")
        && !id.is_empty()
        && !id.contains('/')
    {
        return if method == Method::GET {
            routed("clip_task", Route::ClipTaskGet)
        } else if method == Method::DELETE {
            routed("clip_task", Route::ClipTaskDelete)
        } else {
            routed("clip_task", Route::MethodNotAllowed("GET, DELETE"))
        };
    }
    if let Some(id) = path.strip_prefix("/v1/video/generations/")
        && !id.is_empty()
        && !id.contains('/')
    {
        return if method == Method::GET {
            routed("video_generation", Route::VideoGet)
        } else {
            routed("video_generation", Route::MethodNotAllowed("GET"))
        };
    }
    if let Some(file) = path.strip_prefix("/v1/media/")
        && !file.is_empty()
        && !file.contains('/')
    {
        return if method == Method::GET {
            routed("media", Route::Media)
        } else {
            routed("media", Route::MethodNotAllowed("GET"))
        };
    }
    let native = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"));
    if let Some(rest) = native
        && !rest.is_empty()
        && !rest.contains('/')
    {
        return match rest.split_once(':') {
            None if method == Method::GET => routed("native_model", Route::ModelGet),
            None => routed("native_model", Route::MethodNotAllowed("GET")),
            Some((model, action)) if !model.is_empty() => {
                let route = match action {
                    "generateContent" => Route::NativeGenerate,
                    "streamGenerateContent" => Route::NativeStream,
                    "countTokens" => Route::NativeCountTokens,
                    _ => return routed("unknown", Route::NotFound),
                };
                if method == Method::POST {
                    routed("native", route)
                } else {
                    routed("native", Route::MethodNotAllowed("POST"))
                }
            }
            Some(_) => routed("unknown", Route::NotFound),
        };
    }
    routed("unknown", Route::NotFound)
}

/// The error family of a path (DESIGN §7).
pub fn family_of(path: &str) -> Family {
    if path == "/v1/t2a_v2" {
        Family::T2a
    } else if path.starts_with("/api/v3/") {
        Family::Ark
    } else if path.starts_with("/v1beta/")
        || path == "/v1beta"
        || (path.starts_with("/v1/models/") && path.contains(':'))
    {
        Family::Google
    } else {
        Family::OpenAi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_endpoint_is_routed() {
        let cases = [
            (Method::POST, "/v1/audio/speech", Family::OpenAi),
            (Method::POST, "/v1/audio/transcriptions", Family::OpenAi),
            (Method::POST, "/v1/t2a_v2", Family::T2a),
            (Method::POST, "/v1/speech_to_text", Family::OpenAi),
            (Method::POST, "/v1/embeddings", Family::OpenAi),
            (
                Method::POST,
                "/api/v3/contents/generations/tasks",
                Family::Ark,
            ),
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
            let r = route(&method, path);
            assert_eq!(r.family, family, "{path}");
            assert!(
                !matches!(r.route, Route::NotFound | Route::MethodNotAllowed(_)),
                "{method} {path} → {r:?}"
            );
        }
    }

    #[test]
    fn wrong_methods_and_unknown_paths() {
        assert_eq!(
            route(&Method::GET, "/v1/embeddings").route,
            Route::MethodNotAllowed("POST")
        );
        assert_eq!(route(&Method::GET, "/nope").route, Route::NotFound);
        assert_eq!(route(&Method::GET, "/v1/models").route, Route::ListModels);
        // One model: the native shape or OpenAI's, by the credential (the handler decides).
        assert_eq!(route(&Method::GET, "/v1/models/x").route, Route::ModelGet);
        assert_eq!(route(&Method::GET, "/v1/models/x/y").route, Route::NotFound);
        assert_eq!(
            route(&Method::POST, "/v1beta/models/x:embedContent").route,
            Route::NotFound
        );
        assert_eq!(
            route(&Method::GET, "/v1beta/models/x:generateContent").route,
            Route::MethodNotAllowed("POST")
        );
        assert_eq!(
            native_model("/v1beta/models/gen-2.5-flash:streamGenerateContent"),
            ("gen-2.5-flash", "streamGenerateContent")
        );
    }
}
