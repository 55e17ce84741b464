//! What a row of the route table says about its endpoint (DESIGN §2 step 1): method and path,
//! and every fact the request path needs — read by routing, credentials, the access policies,
//! admission, the usage log, body limits and the OpenAPI document. The table itself, each row
//! with its handler, is the gateway's (`tollgate_gateway::routes::TABLE`, `docs/architecture.md`,
//! "Adding an endpoint"); a request's context carries its row ([`crate::context::RequestCtx::route`]).

use http::Method;
use tollgate_exchange::errors::Family;
use tollgate_exchange::route_doc::{About, Doc};
use tollgate_settings::limits;

/// A row's name: what a request is for.
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
    /// `GET /v1/media/images/{id}.{ext}` — a signed link to a drawn image.
    MediaImage,
    /// `GET /v1/charges/{request_id}` — what one of the caller's requests was charged, and why.
    Charges,
    /// `POST /v1/redemptions` — a redemption code redeemed for the key's account.
    Redemptions,
    /// `POST /webhooks/stripe` — the payment provider's signed events.
    StripeWebhook,
    /// `GET /.well-known/tollgate-ledger-keys` — the public keys that sign ledger checkpoints.
    LedgerKeys,
    /// `POST /v1beta/models/{model}:generateContent` (also under `/v1/models/`)
    NativeGenerate,
    /// `POST /v1beta/models/{model}:streamGenerateContent` (also under `/v1/models/`)
    NativeStream,
    /// `POST /v1beta/models/{model}:countTokens` (also under `/v1/models/`)
    NativeCountTokens,
    /// `POST /v1beta/models/{model}:predict` (also under `/v1/models/`): Imagen's pictures
    NativePredict,
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
    /// `POST /v1/responses/input_tokens`: a Responses request's input tokens, counted (not billed)
    ResponsesInputTokens,
    /// `GET /v1/realtime` upgraded to a WebSocket: an OpenAI Realtime session.
    Realtime,
    /// `POST /v1/realtime/client_secrets`: an ephemeral secret a browser opens a session with.
    RealtimeClientSecrets,
    /// `GET /ws/google.ai.generativelanguage.{v1beta,v1alpha}.GenerativeService.BidiGenerateContent`
    /// upgraded to a WebSocket: a Gemini Live session (`BidiGenerateContentConstrained`: one
    /// opened with an ephemeral token).
    GeminiLive,
    /// `POST /v1alpha/auth_tokens`: an ephemeral token a browser opens Gemini Live sessions
    /// with.
    GeminiAuthTokens,
    /// `POST /v1/images/generations` — OpenAI Images.
    ImageGenerations,
    /// `POST /v1/images/edits` — OpenAI Images, a form of images and a mask.
    ImageEdits,
    /// `POST /v1/images/variations` — the image models served here make none: refused by name.
    ImageVariations,
    /// `POST /v1/audio/translations` — not supported (docs/api.md §4 rule 5).
    Translations,
    /// Anything under `/admin/v1/` — the admin API, which routes within itself.
    Admin,
    /// `GET /openapi.json`
    OpenApi,
    /// `GET /console` and its assets under `/console/`.
    Console,
    /// `/portal` and everything under `/portal/`: the customer portal, its page and its JSON
    /// API (`tollgate-portal`).
    Portal,
    /// A known path with another method (the fallback row answering 405 with `Allow`).
    MethodNotAllowed,
    /// Nothing here (the fallback row answering 404).
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

    /// Whether a request with `method` is this row's.
    pub fn admits(self, method: &Method) -> bool {
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
    /// The same methods and `verb`.
    pub fn with(self, verb: Verb) -> Allow {
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
    /// A model under one of [`MODEL_PREFIXES`]: `{model}` alone (`None`) or
    /// `{model}:{action}`.
    Model(Option<&'static str>),
}

/// Where the native family's models are: the developer API's `/v1beta/models/` and
/// `/v1/models/`, and the vendor's enterprise platform in its express mode (a key, no project),
/// `/v1beta1/publishers/google/models/` and `/v1/publishers/google/models/` — where the SDKs'
/// `generate_images` calls `:predict` (docs/decisions.md, "Imagen, by the picture").
pub const MODEL_PREFIXES: [&str; 4] = [
    "/v1beta/models/",
    "/v1/models/",
    "/v1beta1/publishers/google/models/",
    "/v1/publishers/google/models/",
];

/// How a route's clients present their key (docs/api.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// The way this family's clients send it (`crate::auth::presented_secret`); its errors
    /// take the family's shape.
    Key(Family),
    /// No client key: operations, a signed media link, an unsupported endpoint's refusal.
    Open,
    /// The operator's side: reachable only from `[server] admin_networks`, with its own tokens.
    Operator,
    /// The customer's side (the portal): reachable from anywhere, with its own sessions.
    Customer,
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

/// Which clients a row serves, where one path answers two families (the model list, one model
/// and a charge answer a native client in the native shape, everyone else in OpenAI's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clients {
    /// Every client.
    All,
    /// A native client: its key in a native header or `?key=`, or a path under `/v1beta/`
    /// ([`is_native_client`]).
    Native,
}

/// One endpoint: everything the request path knows of it, and its description.
#[derive(Debug, Clone, Copy)]
pub struct RouteSpec {
    /// The row's name.
    pub route: Route,
    /// The method.
    pub method: Verb,
    /// The paths.
    pub path: PathPattern,
    /// Which clients it serves on them.
    pub clients: Clients,
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
    /// It answers on a connection of the reserve, past `max_connections` (the operational
    /// routes; `docs/decisions.md`, "Connection hygiene").
    pub in_reserve: bool,
    /// What the OpenAPI document says of it beside these facts ([`tollgate_exchange::route_doc`]); a row
    /// still [`Doc::Missing`] stops the build.
    pub doc: Doc,
}

/// A row; most facts default to an open, unmetered, bodiless route for every client.
pub const fn row(route: Route, method: Verb, path: PathPattern, label: &'static str) -> RouteSpec {
    RouteSpec {
        route,
        method,
        path,
        clients: Clients::All,
        label,
        credentials: Credentials::Open,
        policy: None,
        metered: false,
        body: None,
        streams: Streams::No,
        in_reserve: false,
        doc: Doc::Missing,
    }
}

impl RouteSpec {
    /// Called with a key presented as `credentials` say; `policy`: the name an access policy's
    /// `endpoints` must include (one of [`crate::policy::ENDPOINTS`]).
    pub const fn key(
        mut self,
        credentials: Credentials,
        policy: Option<&'static str>,
    ) -> RouteSpec {
        self.credentials = credentials;
        self.policy = policy;
        self
    }

    /// It spends: its body read under `body`, answered as `streams` says.
    pub const fn metered(mut self, body: limits::Endpoint, streams: Streams) -> RouteSpec {
        self.metered = true;
        self.body = Some(body);
        self.streams = streams;
        self
    }

    /// It spends over a WebSocket session: admitted like a stream (an open-streams slot for
    /// the session's life), with no body.
    pub const fn session(mut self) -> RouteSpec {
        self.metered = true;
        self.streams = Streams::Always;
        self
    }

    /// A body read under `body`, on a route that does not spend.
    pub const fn reads(mut self, body: limits::Endpoint) -> RouteSpec {
        self.body = Some(body);
        self
    }

    /// The operator's side: reachable only from `[server] admin_networks`.
    pub const fn operator(mut self) -> RouteSpec {
        self.credentials = Credentials::Operator;
        self
    }

    /// The customer's side (the portal): its own sessions, reachable from anywhere.
    pub const fn customer(mut self) -> RouteSpec {
        self.credentials = Credentials::Customer;
        self
    }

    /// Served to native clients only (the row after it serves the others).
    pub const fn native_clients(mut self) -> RouteSpec {
        self.clients = Clients::Native;
        self
    }

    /// Answered on a connection of the reserve too.
    pub const fn in_reserve(mut self) -> RouteSpec {
        self.in_reserve = true;
        self
    }

    /// Described in the OpenAPI document by `about` (written beside the row's handler).
    pub const fn about(mut self, about: fn() -> About) -> RouteSpec {
        self.doc = Doc::About(about);
        self
    }

    /// Described elsewhere: the admin API, operation by operation; the 404 and 405 rows.
    pub const fn documented_elsewhere(mut self) -> RouteSpec {
        self.doc = Doc::Elsewhere;
        self
    }

    /// The operator's side: reachable only from `[server] admin_networks` (`admission::operator_reachable`,
    /// `docs/operations.md`), whatever else it asks for.
    pub fn operators_side(&self) -> bool {
        self.credentials == Credentials::Operator
    }

    /// Whether the row serves a request with `method` on `path` from a client that presents its
    /// key natively (`native`).
    pub fn serves(&self, method: &Method, path: &str, native: bool) -> bool {
        self.path.matches(path)
            && self.method.admits(method)
            && (self.clients == Clients::All || native)
    }

    /// The shape of the row's errors for a request on `path` with `query`: its key's family,
    /// the path's for a route without one (DESIGN §7); a native stream asked without `alt=sse`
    /// answers in the vendor's JSON-array form, its errors too (wire-formats §6.3).
    pub fn error_shape(&self, path: &str, query: Option<&str>) -> tollgate_exchange::errors::Shape {
        let family = match self.credentials {
            Credentials::Key(family) => family,
            Credentials::Open | Credentials::Operator | Credentials::Customer => family_of(path),
        };
        let array = self.streams == Streams::Always
            && family == Family::Google
            && crate::auth::query_param(query.unwrap_or_default(), "alt").as_deref() != Some("sse");
        tollgate_exchange::errors::Shape { family, array }
    }
}

/// Whether a request's client is a native one: its key in a native header (`x-goog-api-key`,
/// `x-vendor-api-key`) or `?key=`, or a path under `/v1beta/` (docs/api.md §5).
pub fn is_native_client(headers: &http::HeaderMap, path: &str, query: Option<&str>) -> bool {
    headers.contains_key("x-goog-api-key")
        || headers.contains_key("x-vendor-api-key")
        || query.is_some_and(|q| crate::auth::query_param(q, "key").is_some())
        || path.starts_with("/v1beta/")
        || path.starts_with("/v1beta1/")
}

impl PathPattern {
    /// Whether `path` is one of the pattern's.
    pub fn matches(self, path: &str) -> bool {
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
                let Some(rest) = MODEL_PREFIXES
                    .iter()
                    .find_map(|prefix| path.strip_prefix(prefix))
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

/// The error family of a path (DESIGN §7): the shape of its errors, unknown paths included.
pub fn family_of(path: &str) -> Family {
    if path == "/v1/t2a_v2" {
        Family::T2a
    } else if path.starts_with("/api/v3/") {
        Family::Ark
    } else if path.starts_with("/v1beta/")
        || path == "/v1beta"
        || path.starts_with("/v1beta1/")
        || path.starts_with("/v1/publishers/")
        || (path.starts_with("/v1/models/") && path.contains(':'))
    {
        Family::Google
    } else {
        Family::OpenAi
    }
}
