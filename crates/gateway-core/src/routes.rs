//! The route table (DESIGN §2 step 1): one row per endpoint — method and path, and every fact
//! the request path needs about it — read by routing, credentials, the access policies,
//! admission, the usage log, body limits and the OpenAPI check (`docs/architecture.md`, "Adding
//! an endpoint"). Nothing else lists endpoints.

use crate::errors::Family;
use crate::limits;
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
    /// `POST /v1/videos` — the OpenAI Videos API.
    VideosCreate,
    /// `GET /v1/videos`
    VideosList,
    /// `GET /v1/videos/{video_id}`
    VideosGet,
    /// `DELETE /v1/videos/{video_id}`
    VideosDelete,
    /// `GET /v1/videos/{video_id}/content`
    VideosContent,
    /// `POST /v1/videos/{video_id}/remix`
    VideosRemix,
    /// `POST /v1/videos/edits`, `/extensions`, `/characters`: what no video model served here
    /// can do, refused with a 400 the SDKs do not retry.
    VideosUnsupported,
    /// `GET /v1/videos/characters/{character_id}`: refused the same way.
    VideosCharacter,
    /// `GET /v1/media/{task_id}.mp4` — a signed link to a finished video.
    Media,
    /// `GET /v1/charges/{request_id}` — what one of the caller's requests was charged, and why.
    Charges,
    /// `GET /.well-known/tollgate-ledger-keys` — the public keys that sign ledger checkpoints.
    LedgerKeys,
    /// `POST /v1beta/models/{model}:generateContent` (also under `/v1/models/`)
    NativeGenerate,
    /// `POST /v1beta/models/{model}:streamGenerateContent` (also under `/v1/models/`)
    NativeStream,
    /// `POST /v1beta/models/{model}:countTokens` (also under `/v1/models/`)
    NativeCountTokens,
    /// `GET /v1beta/models`
    NativeListModels,
    /// `POST /v1beta/models/{model}:embedContent` (also under `/v1/models/`)
    NativeEmbed,
    /// `POST /v1beta/models/{model}:batchEmbedContents` (also under `/v1/models/`)
    NativeBatchEmbed,
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
    MethodNotAllowed(Allow),
    /// Nothing here.
    NotFound,
}

/// A row's method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// `GET`
    Get,
    /// `POST`
    Post,
    /// `DELETE`
    Delete,
    /// Any method: the route routes within itself.
    Any,
}

impl Verb {
    const NAMED: [(Verb, Method, &'static str); 3] = [
        (Verb::Get, Method::GET, "GET"),
        (Verb::Post, Method::POST, "POST"),
        (Verb::Delete, Method::DELETE, "DELETE"),
    ];

    fn admits(self, method: &Method) -> bool {
        self == Verb::Any
            || Verb::NAMED
                .iter()
                .any(|(v, m, _)| *v == self && m == method)
    }
}

/// The methods a path allows, for a 405's `Allow` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Allow(u8);

impl Allow {
    fn with(self, verb: Verb) -> Allow {
        let bit = Verb::NAMED
            .iter()
            .position(|(v, _, _)| *v == verb)
            .map_or(0, |i| 1 << i);
        Allow(self.0 | bit)
    }
}

impl std::fmt::Display for Allow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = Verb::NAMED
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, (_, _, name))| *name)
            .collect();
        f.write_str(&names.join(", "))
    }
}

/// Which paths a row answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathPattern {
    /// This path exactly.
    Exact(&'static str),
    /// One non-empty segment (a task id, a media file) after this prefix.
    Item(&'static str),
    /// One non-empty segment after the prefix, then this suffix (`/v1/videos/{id}/content`).
    ItemThen(&'static str, &'static str),
    /// Anything under this prefix (a router of its own).
    Under(&'static str),
    /// A model under `/v1beta/models/` or `/v1/models/`: `{model}` alone (`None`) or
    /// `{model}:{action}`.
    Model(Option<&'static str>),
}

/// How a route's clients present their key (docs/api.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// The way this family's clients send it (`crate::auth::presented_secret`).
    Key(Family),
    /// The native way for a native client (its key header or `?key=`, or any path under
    /// `/v1beta/`), OpenAI's otherwise; the answer takes the same shape.
    KeyByClient,
    /// No client key: operations, a signed media link, an unsupported endpoint's refusal.
    Open,
    /// The operator's side: reachable only from `[server] admin_networks`, with its own tokens.
    Operator,
}

/// Whether a route answers with a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    /// Never.
    No,
    /// When the request asks (`stream: true`, a form field).
    OnRequest,
    /// Always.
    Always,
}

/// One endpoint: everything the request path knows of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    /// The handler's name (the service's dispatch).
    pub route: Route,
    /// The method.
    pub method: Verb,
    /// The paths.
    pub path: PathPattern,
    /// The label for metrics and logs.
    pub label: &'static str,
    /// How its clients present their key.
    pub credentials: Credentials,
    /// The name an access policy's `endpoints` list must include to call it (`None`: every key
    /// may).
    pub policy: Option<&'static str>,
    /// It can spend: admitted against the key's rate and concurrency limits and written to the
    /// usage log.
    pub metered: bool,
    /// The body limit it reads its body under (`[limits]`), if it takes a body.
    pub body: Option<limits::Endpoint>,
    /// Whether it answers with a stream (which needs a `StreamPermit`).
    pub streams: Streams,
}

/// A row; most facts default to an open, unmetered, bodiless route.
const fn row(route: Route, method: Verb, path: PathPattern, label: &'static str) -> RouteSpec {
    RouteSpec {
        route,
        method,
        path,
        label,
        credentials: Credentials::Open,
        policy: None,
        metered: false,
        body: None,
        streams: Streams::No,
    }
}

impl RouteSpec {
    const fn key(mut self, credentials: Credentials, policy: Option<&'static str>) -> RouteSpec {
        self.credentials = credentials;
        self.policy = policy;
        self
    }

    const fn metered(mut self, body: limits::Endpoint, streams: Streams) -> RouteSpec {
        self.metered = true;
        self.body = Some(body);
        self.streams = streams;
        self
    }

    /// A body read under `body`, on a route that does not spend.
    const fn reads(mut self, body: limits::Endpoint) -> RouteSpec {
        self.body = Some(body);
        self
    }

    const fn operator(mut self) -> RouteSpec {
        self.credentials = Credentials::Operator;
        self
    }
}

use Credentials::{Key, KeyByClient};
use Family::{Ark, Google, OpenAi, T2a};
use PathPattern::{Exact, Item, ItemThen, Model, Under};
use limits::Endpoint as Body;

const GET: Verb = Verb::Get;
const POST: Verb = Verb::Post;
const DELETE: Verb = Verb::Delete;
const TASKS: &str = "/api/v3/contents/generations/tasks";
const TASK: &str = "/api/v3/contents/generations/tasks/";

/// The table: every endpoint of docs/api.md §4, in the order paths are matched. One row per
/// endpoint (a route with two paths has two); kept as a table, one row to a line or three.
#[rustfmt::skip]
pub static ROUTES: &[RouteSpec] = &[
    row(Route::Healthz, GET, Exact("/healthz"), "healthz"),
    row(Route::Readyz, GET, Exact("/readyz"), "readyz"),
    row(Route::LedgerKeys, GET, Exact("/.well-known/tollgate-ledger-keys"), "ledger_keys"),
    row(Route::Metrics, GET, Exact("/metrics"), "metrics").operator(),
    row(Route::OpenApi, GET, Exact("/openapi.json"), "openapi").operator(),
    row(Route::Console, GET, Exact("/console"), "console").operator(),
    row(Route::Console, GET, Under("/console/"), "console").operator(),
    row(Route::Admin, Verb::Any, Under("/admin/v1/"), "admin").operator(),
    row(Route::ListModels, GET, Exact("/v1/models"), "models").key(KeyByClient, None),
    row(Route::ModelGet, GET, Model(None), "native_model").key(KeyByClient, None),
    row(Route::NativeListModels, GET, Exact("/v1beta/models"), "native_models").key(Key(Google), None),
    row(Route::Embeddings, POST, Exact("/v1/embeddings"), "embeddings")
        .key(Key(OpenAi), Some("embeddings"))
        .metered(Body::Embeddings, Streams::No),
    row(Route::Speech, POST, Exact("/v1/audio/speech"), "speech")
        .key(Key(OpenAi), Some("speech"))
        .metered(Body::Speech, Streams::OnRequest),
    row(Route::T2a, POST, Exact("/v1/t2a_v2"), "t2a")
        .key(Key(T2a), Some("t2a"))
        .metered(Body::T2a, Streams::OnRequest),
    row(Route::Transcriptions, POST, Exact("/v1/audio/transcriptions"), "transcriptions")
        .key(Key(OpenAi), Some("transcriptions"))
        .metered(Body::Transcriptions, Streams::OnRequest),
    row(Route::Translations, POST, Exact("/v1/audio/translations"), "translations"),
    row(Route::SpeechToText, POST, Exact("/v1/speech_to_text"), "speech_to_text")
        .key(Key(OpenAi), Some("speech_to_text"))
        .metered(Body::SpeechToText, Streams::OnRequest),
    row(Route::ClipTaskList, GET, Exact(TASKS), "clip_tasks").key(Key(Ark), Some("clip_tasks")),
    row(Route::ClipTaskCreate, POST, Exact(TASKS), "clip_tasks")
        .key(Key(Ark), Some("clip_tasks"))
        .metered(Body::ClipTasks, Streams::No),
    row(Route::ClipTaskGet, GET, Item(TASK), "clip_task").key(Key(Ark), Some("clip_tasks")),
    row(Route::ClipTaskDelete, DELETE, Item(TASK), "clip_task").key(Key(Ark), Some("clip_tasks")),
    row(Route::VideoCreate, POST, Exact("/v1/video/generations"), "video_generations")
        .key(Key(OpenAi), Some("video_generations"))
        .metered(Body::VideoGenerations, Streams::No),
    row(Route::VideoGet, GET, Item("/v1/video/generations/"), "video_generation")
        .key(Key(OpenAi), Some("video_generations")),
    row(Route::VideosCreate, POST, Exact("/v1/videos"), "videos")
        .key(Key(OpenAi), Some("videos"))
        .metered(Body::Videos, Streams::No),
    row(Route::VideosList, GET, Exact("/v1/videos"), "videos").key(Key(OpenAi), Some("videos")),
    row(Route::VideosGet, GET, Item("/v1/videos/"), "video").key(Key(OpenAi), Some("videos")),
    row(Route::VideosDelete, DELETE, Item("/v1/videos/"), "video").key(Key(OpenAi), Some("videos")),
    row(Route::VideosContent, GET, ItemThen("/v1/videos/", "/content"), "video_content")
        .key(Key(OpenAi), Some("videos")),
    row(Route::VideosRemix, POST, ItemThen("/v1/videos/", "/remix"), "video_remix")
        .key(Key(OpenAi), Some("videos"))
        .metered(Body::Videos, Streams::No),
    row(Route::VideosUnsupported, POST, Exact("/v1/videos/edits"), "video_edits")
        .key(Key(OpenAi), Some("videos"))
        .reads(Body::Videos),
    row(Route::VideosUnsupported, POST, Exact("/v1/videos/extensions"), "video_extensions")
        .key(Key(OpenAi), Some("videos"))
        .reads(Body::Videos),
    row(Route::VideosUnsupported, POST, Exact("/v1/videos/characters"), "video_characters")
        .key(Key(OpenAi), Some("videos"))
        .reads(Body::Videos),
    row(Route::VideosCharacter, GET, Item("/v1/videos/characters/"), "video_characters")
        .key(Key(OpenAi), Some("videos")),
    row(Route::Media, GET, Item("/v1/media/"), "media"),
    row(Route::Charges, GET, Item("/v1/charges/"), "charges").key(KeyByClient, None),
    row(Route::NativeGenerate, POST, Model(Some("generateContent")), "native")
        .key(Key(Google), Some("native"))
        .metered(Body::Native, Streams::No),
    row(Route::NativeStream, POST, Model(Some("streamGenerateContent")), "native")
        .key(Key(Google), Some("native"))
        .metered(Body::Native, Streams::Always),
    row(Route::NativeCountTokens, POST, Model(Some("countTokens")), "native")
        .key(Key(Google), Some("native"))
        .reads(Body::Native),
    row(Route::NativeEmbed, POST, Model(Some("embedContent")), "native_embed")
        .key(Key(Google), Some("embeddings"))
        .metered(Body::Embeddings, Streams::No),
    row(Route::NativeBatchEmbed, POST, Model(Some("batchEmbedContents")), "native_embed")
        .key(Key(Google), Some("embeddings"))
        .metered(Body::Embeddings, Streams::No),
    row(Route::ChatCompletions, POST, Exact("/v1/chat/completions"), "chat")
        .key(Key(OpenAi), Some("chat"))
        .metered(Body::Chat, Streams::OnRequest),
    row(Route::Responses, POST, Exact("/v1/responses"), "responses")
        .key(Key(OpenAi), Some("responses"))
        .metered(Body::Responses, Streams::OnRequest),
];

impl Route {
    /// The route's row (the first, for a route with several paths); `None` for
    /// [`Route::MethodNotAllowed`] and [`Route::NotFound`].
    pub fn spec(self) -> Option<&'static RouteSpec> {
        ROUTES.iter().find(|spec| spec.route == self)
    }

    /// The operator's side: reachable only from `[server] admin_networks` (`admission::operator_reachable`,
    /// `docs/operations.md`), whatever else it asks for.
    pub fn operators_side(self) -> bool {
        self.spec()
            .is_some_and(|s| s.credentials == Credentials::Operator)
    }

    /// Whether requests on the route can spend, and so are admitted against the key's rate and
    /// concurrency limits and written to the usage log (the reads — task polls, model
    /// listings, media links — and operational routes are not; metrics count them).
    pub fn is_metered(self) -> bool {
        self.spec().is_some_and(|s| s.metered)
    }

    /// The endpoint name an access policy's `endpoints` list must include for this route;
    /// `None` where every key may call (health, the model listings, a signed media link).
    pub fn policy_endpoint(self) -> Option<&'static str> {
        self.spec().and_then(|s| s.policy)
    }

    /// The body limit the route reads its body under (its row's `body`), if it takes a body
    /// (`State::body_bounds` applies 1 MiB to one that does not).
    pub fn body_limit(self) -> Option<limits::Endpoint> {
        self.spec().and_then(|s| s.body)
    }
}

/// The endpoint names an access policy's `endpoints` list may use (`docs/decisions.md`,
/// "Access policies"): one per billed endpoint family, covering its task reads too — each
/// once, in the table's order.
pub fn policy_endpoints() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for name in ROUTES.iter().filter_map(|s| s.policy) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

impl PathPattern {
    /// Whether `path` is one of the pattern's.
    fn matches(self, path: &str) -> bool {
        let one_segment = |rest: &str| !rest.is_empty() && !rest.contains('/');
        match self {
            PathPattern::Exact(p) => path == p,
            PathPattern::Item(prefix) => path.strip_prefix(prefix).is_some_and(one_segment),
            PathPattern::ItemThen(prefix, suffix) => path
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_suffix(suffix))
                .is_some_and(one_segment),
            PathPattern::Under(prefix) => path.starts_with(prefix),
            PathPattern::Model(action) => {
                let Some(rest) = path
                    .strip_prefix("/v1beta/models/")
                    .or_else(|| path.strip_prefix("/v1/models/"))
                    .filter(|rest| one_segment(rest))
                else {
                    return false;
                };
                match (rest.split_once(':'), action) {
                    (None, None) => true,
                    (Some((model, asked)), Some(action)) => !model.is_empty() && asked == action,
                    _ => false,
                }
            }
        }
    }
}

/// The model and the action of a native path, `…/models/{model}:{action}` (the action empty for
/// `…/models/{model}`).
pub fn native_model(path: &str) -> (&str, &str) {
    let last = last_segment(path);
    last.split_once(':').unwrap_or((last, ""))
}

/// The item of a routed path: its last segment, or for `/v1/videos/{id}/content` and `…/remix`
/// the segment before.
pub fn item(path: &str) -> &str {
    let mut segments = path.rsplit('/');
    let last = segments.next().unwrap_or_default();
    if path.starts_with("/v1/videos/") && matches!(last, "content" | "remix") {
        segments.next().unwrap_or_default()
    } else {
        last
    }
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

/// Routes a request: the first row whose path and method match; a path some row has with
/// another method is 405 with the methods it allows.
pub fn route(method: &Method, path: &str) -> Routed {
    let family = family_of(path);
    let mut allow = Allow::default();
    let mut label = "unknown";
    for spec in ROUTES.iter().filter(|spec| spec.path.matches(path)) {
        if spec.method.admits(method) {
            return Routed {
                endpoint: spec.label,
                family,
                route: spec.route,
            };
        }
        if allow == Allow::default() {
            label = spec.label;
        }
        allow = allow.with(spec.method);
    }
    let route = if allow == Allow::default() {
        Route::NotFound
    } else {
        Route::MethodNotAllowed(allow)
    };
    Routed {
        endpoint: label,
        family,
        route,
    }
}

/// The error family of a path (DESIGN §7): the shape of its errors, unknown paths included.
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
            let r = route(&method, path);
            assert_eq!(
                (r.route, r.family),
                (want, Family::OpenAi),
                "{method} {path}"
            );
            if path != "/v1/videos" {
                assert_eq!(item(path), "video-1", "{path}");
            }
        }
        assert_eq!(route(&Method::GET, "/v1/videos/a/b").route, Route::NotFound);
        assert_eq!(
            route(&Method::GET, "/v1/videos//content").route,
            Route::NotFound
        );
        assert_eq!(item("/v1/video/generations/content"), "content");
    }

    #[test]
    fn wrong_methods_and_unknown_paths() {
        assert_eq!(
            route(&Method::GET, "/v1/embeddings").route,
            Route::MethodNotAllowed(Allow::default().with(Verb::Post))
        );
        assert_eq!(route(&Method::GET, "/nope").route, Route::NotFound);
        assert_eq!(route(&Method::GET, "/v1/models").route, Route::ListModels);
        // One model: the native shape or OpenAI's, by the credential (the handler decides).
        assert_eq!(route(&Method::GET, "/v1/models/x").route, Route::ModelGet);
        assert_eq!(route(&Method::GET, "/v1/models/x/y").route, Route::NotFound);
        assert_eq!(
            route(&Method::POST, "/v1beta/models/x:embedContent").route,
            Route::NativeEmbed
        );
        assert_eq!(
            route(&Method::POST, "/v1/models/x:batchEmbedContents").route,
            Route::NativeBatchEmbed
        );
        assert_eq!(
            route(&Method::POST, "/v1beta/models/x:predict").route,
            Route::NotFound
        );
        assert_eq!(
            route(&Method::GET, "/v1beta/models/x:generateContent").route,
            Route::MethodNotAllowed(Allow::default().with(Verb::Post))
        );
        assert_eq!(
            native_model("/v1beta/models/gen-2.5-flash:streamGenerateContent"),
            ("gen-2.5-flash", "streamGenerateContent")
        );
        let Route::MethodNotAllowed(allow) = route(&Method::PUT, TASKS).route else {
            panic!("PUT on the task list is 405");
        };
        assert_eq!(allow.to_string(), "GET, POST");
        let Route::MethodNotAllowed(allow) =
            route(&Method::POST, "/api/v3/contents/generations/tasks/cgt-1").route
        else {
            panic!("POST on a task is 405");
        };
        assert_eq!(allow.to_string(), "GET, DELETE");
        assert_eq!(route(&Method::PATCH, "/admin/v1/keys").route, Route::Admin);
        assert_eq!(route(&Method::GET, "/console/app.js").route, Route::Console);
        assert_eq!(
            route(&Method::GET, "/v1beta/models/:generateContent").route,
            Route::NotFound
        );
    }

    #[test]
    fn every_route_but_the_refusals_has_a_row() {
        for spec in ROUTES {
            assert_eq!(spec.route.spec().map(|s| s.route), Some(spec.route));
            // A metered route reads a body and names its policy endpoint.
            if spec.metered {
                assert!(spec.body.is_some() && spec.policy.is_some(), "{spec:?}");
            }
        }
        assert_eq!(
            policy_endpoints(),
            [
                "embeddings",
                "speech",
                "t2a",
                "transcriptions",
                "speech_to_text",
                "clip_tasks",
                "video_generations",
                "videos",
                "native",
                "chat",
                "responses"
            ]
        );
    }
}
