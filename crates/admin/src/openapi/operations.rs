//! The document's operations. A client endpoint's method, path, security scheme and error
//! shapes come from its row of the route table (`tollgate_gateway::routes::TABLE`); what
//! the table does not hold — a summary, a tag, the request and answer schemas, parameters — is
//! [`about`], one arm per [`Route`], so a route added to the table without its documentation
//! does not compile. The admin API's operations come the same way from its own table
//! (`crate::routes::ADMIN_ROUTES`) and [`admin_about`].

use super::schemas::r;
use crate::api::Holder;
use crate::routes::{ADMIN_ROUTES, AdminOp};
use serde_json::{Value, json};
use tollgate_gateway_core::errors::Family;
use tollgate_gateway_core::routes::{
    Clients, Credentials, PathPattern, Route, RouteSpec, Streams, Verb,
};

/// One operation of the document.
pub(super) struct Operation {
    /// The path template (`/v1beta/models/{model}:generateContent`).
    pub path: String,
    /// The method, lower case.
    pub method: &'static str,
    pub summary: &'static str,
    pub tag: &'static str,
    /// The security requirements (`[]`: none).
    pub security: Value,
    /// The answers that are not errors, by status.
    pub answers: Value,
    /// The errors' schema (one per family) and statuses.
    pub errors: Option<(&'static str, &'static [u16])>,
    pub parameters: Vec<Value>,
    pub body: Option<Value>,
}

/// Every error a client endpoint that reads a body may answer.
const CLIENT_ERRORS: &[u16] = &[
    400, 401, 403, 404, 405, 408, 413, 415, 429, 500, 502, 503, 504,
];
/// Every error a client endpoint without a body may answer.
const READ_ERRORS: &[u16] = &[400, 401, 403, 404, 405, 429, 500, 502, 503, 504];
/// Every error of the admin API.
const ADMIN_ERRORS: &[u16] = &[400, 401, 403, 404, 405, 408, 409, 413, 415, 500];

/// What a status means, whatever the family.
pub(super) fn meaning(status: u16) -> &'static str {
    match status {
        400 => "Bad request: a field broke a rule (`param` names it)",
        401 => "No credential, or an unknown one",
        403 => "Disabled, revoked, or refused by an access policy",
        404 => "No such model, task, account or route",
        405 => "Another method is allowed here",
        408 => "The request body stalled",
        409 => "Conflicts with what exists",
        413 => "The body is over the endpoint's limit",
        415 => "The body is not of a type the endpoint takes",
        429 => "Rate limited, over a spend cap, or the balance does not cover the hold",
        500 => "The gateway failed; nothing was charged",
        501 => "Not supported",
        502 => "The upstream failed; nothing was charged",
        503 => "Shutting down, or no channel can take the request",
        504 => "The upstream took too long; nothing was charged",
        _ => "",
    }
}

fn bearer() -> Value {
    json!([{"apiKey": []}])
}

fn native() -> Value {
    json!([{"vendorKey": []}, {"googKey": []}, {"keyQuery": []}, {"apiKey": []}])
}

/// A native client's key header, or a bearer key: the model routes answer either's shape.
fn by_client() -> Value {
    json!([{"apiKey": []}, {"vendorKey": []}, {"googKey": []}])
}

/// The security a row's credentials mean (`both`: a native client's twin row serves the same
/// path, so either way of presenting a key will do).
fn security(credentials: Credentials, both: bool) -> Value {
    match credentials {
        Credentials::Key(_) if both => by_client(),
        Credentials::Key(Family::Google) => native(),
        Credentials::Key(_) => bearer(),
        Credentials::Open | Credentials::Operator => json!([]),
    }
}

/// The errors a row answers: its family's shape (either, with a native twin), the statuses by
/// whether it reads a body.
fn errors(spec: &RouteSpec, both: bool) -> Option<(&'static str, &'static [u16])> {
    let schema = match spec.credentials {
        Credentials::Key(_) if both => "OpenAiOrGoogleError",
        Credentials::Key(Family::OpenAi) => "OpenAiError",
        Credentials::Key(Family::T2a) => "T2aError",
        Credentials::Key(Family::Ark) => "ArkError",
        // Without alt=sse the native stream is a JSON array, and so is its error.
        Credentials::Key(Family::Google) if spec.streams == Streams::Always => "GoogleStreamError",
        Credentials::Key(Family::Google) => "GoogleError",
        Credentials::Open | Credentials::Operator => return None,
    };
    let statuses = if spec.body.is_some() {
        CLIENT_ERRORS
    } else {
        READ_ERRORS
    };
    Some((schema, statuses))
}

/// The path template of a row (`param`: the name of its last segment's parameter).
fn template(pattern: PathPattern, param: &str) -> String {
    match pattern {
        PathPattern::Exact(path) => path.to_owned(),
        PathPattern::Item(prefix) => format!("{prefix}{{{param}}}"),
        PathPattern::ItemThen(prefix, suffix) => format!("{prefix}{{{param}}}{suffix}"),
        PathPattern::Under(prefix) => format!("{prefix}{{{param}}}"),
        PathPattern::Model(None) => "/v1beta/models/{model}".to_owned(),
        PathPattern::Model(Some(action)) => format!("/v1beta/models/{{model}}:{action}"),
    }
}

fn method(verb: Verb) -> &'static str {
    match verb {
        Verb::Get => "get",
        Verb::Post => "post",
        Verb::Delete => "delete",
        Verb::Any => "any",
    }
}

pub(super) fn path_param(name: &str, description: &str) -> Value {
    json!({
        "name": name,
        "in": "path",
        "required": true,
        "schema": {"type": "string", "minLength": 1, "pattern": "^[^/]+$"},
        "description": description,
    })
}

pub(super) fn query(name: &str, description: &str) -> Value {
    query_as(name, description, json!({"type": "string"}))
}

pub(super) fn query_as(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "required": false, "schema": schema, "description": description})
}

fn json_body(schema: Value) -> Value {
    json!({"required": true, "content": {"application/json": {"schema": schema}}})
}

fn ok_json(schema: Value) -> Value {
    described(schema, "OK")
}

fn described(schema: Value, description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

/// The 200 answer of JSON `schema`.
fn ok(schema: Value) -> Value {
    json!({"200": ok_json(schema)})
}

/// One server-sent event, as a media type of an answer.
fn sse() -> Value {
    json!({
        "schema": {
            "type": "object",
            "description": "One server-sent event; its data is JSON in the family's frame shape (docs/api.md).",
            "properties": {"data": {"type": "string"}, "event": {"type": "string"}, "id": {"type": "string"}},
        }
    })
}

fn binary() -> Value {
    json!({"schema": {"type": "string", "format": "binary"}})
}

fn text() -> Value {
    json!({"schema": {"type": "string"}})
}

/// The row's operations: what the row says, with [`about`] it. `table`: every row, for a
/// path served by two (a native client's row and everyone else's), documented once.
pub(super) fn of_row(spec: &RouteSpec, table: &[&RouteSpec]) -> Vec<Operation> {
    // A prefix routed within: the admin API ([`admin`]) and the console's assets (not API).
    // A native client's row is documented with the row after it.
    if matches!(spec.path, PathPattern::Under(_)) || spec.clients == Clients::Native {
        return Vec::new();
    }
    let both = table.iter().any(|other| {
        other.clients == Clients::Native
            && (other.route, other.path, other.method) == (spec.route, spec.path, spec.method)
    });
    let About {
        summary,
        tag,
        param,
        mut answers,
        parameters,
        body,
    } = match about(spec.route) {
        Some(about) => about,
        None => return Vec::new(),
    };
    if spec.streams != Streams::No
        && let Some(content) = answers.pointer_mut("/200/content")
        && let Some(content) = content.as_object_mut()
    {
        content.insert("text/event-stream".to_owned(), sse());
    }
    let mut operation = Operation {
        path: template(spec.path, param),
        method: method(spec.method),
        summary,
        tag,
        security: security(spec.credentials, both),
        answers,
        errors: errors(spec, both),
        parameters,
        body,
    };
    match spec.route {
        // Served at both `/v1/models/{model}` (either shape) and `/v1beta/models/{model}`.
        Route::ModelGet => {
            let v1 = Operation {
                path: "/v1/models/{model}".to_owned(),
                method: operation.method,
                summary: "One model (the native shape for a native key header)",
                tag: "models",
                security: by_client(),
                answers: ok(json!({"anyOf": [r("Model"), r("NativeModel")]})),
                errors: operation.errors,
                parameters: vec![path_param("model", "A model or alias")],
                body: None,
            };
            operation.security = native();
            operation.errors = Some(("GoogleError", READ_ERRORS));
            vec![v1, operation]
        }
        // A refusal that still needs a key, to say so only to a client.
        Route::Translations => {
            operation.security = bearer();
            operation.errors = Some(("OpenAiError", &[401, 501]));
            vec![operation]
        }
        Route::Media => {
            operation.errors = Some(("OpenAiError", &[400, 403, 404, 502]));
            vec![operation]
        }
        _ => vec![operation],
    }
}

/// What the route table does not say about a route.
struct About {
    summary: &'static str,
    tag: &'static str,
    /// The name of the path's parameter, for a path with one.
    param: &'static str,
    /// The answers that are not errors (an event stream is added for a streaming route).
    answers: Value,
    parameters: Vec<Value>,
    body: Option<Value>,
}

fn about(route: Route) -> Option<About> {
    let plain = |summary, tag, answers| About {
        summary,
        tag,
        param: "",
        answers,
        parameters: Vec::new(),
        body: None,
    };
    let posting = |summary, tag, answers, request: &str| About {
        body: Some(json_body(r(request))),
        ..plain(summary, tag, answers)
    };
    let native_model = |summary, answers, request: Value| About {
        param: "model",
        parameters: vec![path_param("model", "A native model")],
        body: Some(json_body(request)),
        ..plain(summary, "native", answers)
    };
    Some(match route {
        Route::Healthz => plain(
            "Liveness",
            "operations",
            ok(json!({"type": "object", "properties": {"status": {"type": "string"}}})),
        ),
        Route::Readyz => plain(
            "Readiness: the database answers and shutdown has not begun",
            "operations",
            json!({
                "200": ok_json(json!({"type": "object"})),
                "503": described(json!({"type": "object"}), "Draining or the database is down"),
            }),
        ),
        Route::Metrics => plain(
            "Prometheus metrics",
            "operations",
            json!({"200": {"description": "Prometheus text format", "content": {"text/plain": text()}}}),
        ),
        Route::OpenApi => plain("This document", "operations", ok(json!({"type": "object"}))),
        Route::LedgerKeys => plain(
            "The Ed25519 public keys that sign ledger checkpoints",
            "billing",
            ok(json!({
                "type": "object",
                "required": ["keys"],
                "properties": {"keys": {"type": "array", "items": {
                    "type": "object",
                    "required": ["key_id", "algorithm", "public_key"],
                    "properties": {
                        "key_id": {"type": "string"},
                        "algorithm": {"const": "Ed25519"},
                        "public_key": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                    },
                }}},
            })),
        ),
        Route::Console => plain(
            "The web console (HTML, signs in with an admin token)",
            "operations",
            json!({"200": {"description": "The page", "content": {"text/html": text()}}}),
        ),
        Route::ListModels => plain(
            "Models and aliases a key may call (the native list for a native key header)",
            "models",
            ok(json!({"anyOf": [r("ModelList"), r("NativeModelList")]})),
        ),
        Route::ModelGet => About {
            param: "model",
            parameters: vec![path_param("model", "A model")],
            ..plain("One native model", "native", ok(r("NativeModel")))
        },
        Route::NativeListModels => plain("Native models", "native", ok(r("NativeModelList"))),
        Route::Embeddings => posting(
            "Embeddings",
            "embeddings",
            ok(r("EmbeddingsResponse")),
            "EmbeddingsRequest",
        ),
        Route::Speech => posting(
            "Speech synthesis (OpenAI format)",
            "speech",
            json!({"200": {
                "description": "The audio (or SSE with `stream_format: sse`)",
                "content": {
                    "audio/mpeg": binary(),
                    "audio/wav": binary(),
                    "audio/flac": binary(),
                    "audio/pcm": binary(),
                },
            }}),
            "SpeechRequest",
        ),
        Route::T2a => posting(
            "Speech synthesis (vendor t2a_v2 format: hex audio, SSE)",
            "speech",
            json!({"200": {
                "description": "JSON with hex audio, or SSE chunks; errors also answer 200 with `base_resp`",
                "content": {"application/json": {"schema": r("T2aResponse")}},
            }}),
            "T2aRequest",
        ),
        Route::Transcriptions => About {
            body: Some(multipart(json!({
                "model": {"type": "string", "examples": ["whisper-1", "asr-1.0"]},
                "file": {"type": "string", "format": "binary"},
                "response_format": {"type": "string", "enum": ["json", "verbose_json", "srt", "vtt", "text"]},
                "language": {"type": "string"},
                "timestamp_granularities[]": {"type": "string"},
                "stream": {"type": "boolean"},
            }))),
            ..plain(
                "Speech recognition (OpenAI format, multipart)",
                "recognition",
                json!({"200": {"description": "By response_format", "content": {
                    "application/json": {"schema": r("Transcription")},
                    "text/plain": text(),
                }}}),
            )
        },
        Route::Translations => plain(
            "Not supported (docs/api.md §4 rule 5)",
            "recognition",
            json!({}),
        ),
        Route::SpeechToText => About {
            body: Some(multipart(json!({
                "model": {"type": "string"},
                "file": {"type": "string", "format": "binary"},
                "response_format": {"type": "string", "enum": ["json", "verbose_json", "srt", "vtt"]},
                "timestamp_level": {"type": "string", "enum": ["sentence", "word"]},
                "stream": {"type": "boolean"},
            }))),
            parameters: vec![
                json!({"name": "language", "in": "header", "required": false, "schema": {"type": "string"}}),
            ],
            ..plain(
                "Speech recognition (vendor format, multipart)",
                "recognition",
                json!({"200": {"description": "By response_format", "content": {
                    "application/json": {"schema": {"type": "object"}},
                    "text/plain": text(),
                    "text/vtt": text(),
                }}}),
            )
        },
        Route::ClipTaskCreate => posting(
            "Create a clip-format video task",
            "video",
            ok(r("ClipTaskCreated")),
            "ClipTaskRequest",
        ),
        Route::ClipTaskList => About {
            parameters: vec![
                query_as(
                    "page_num",
                    "From 1",
                    json!({"type": "integer", "minimum": 1}),
                ),
                query_as(
                    "page_size",
                    "1 to 100",
                    json!({"type": "integer", "minimum": 1, "maximum": 100}),
                ),
                query("filter.status", "A status"),
                query("filter.task_ids", "Task ids"),
                query("filter.model", "A model"),
            ],
            ..plain(
                "List the key's account's clip tasks",
                "video",
                ok(r("ClipTaskList")),
            )
        },
        Route::ClipTaskGet => task(plain("A clip task", "video", ok(r("ClipTask")))),
        Route::ClipTaskDelete => task(plain(
            "Cancel a queued task (refunded) or remove a finished one from the list",
            "video",
            ok(json!({"type": "object"})),
        )),
        Route::VideoCreate => posting(
            "Create a generic-format video task",
            "video",
            ok(r("VideoTask")),
            "VideoRequest",
        ),
        Route::VideoGet => task(plain("A generic video task", "video", ok(r("VideoTask")))),
        Route::VideosCreate => About {
            body: Some(json!({"required": true, "content": {
                "application/json": {"schema": r("CreateVideoBody")},
                "multipart/form-data": {"schema": {
                    "type": "object",
                    "required": ["prompt"],
                    "properties": {
                        "model": {"type": "string"},
                        "prompt": {"type": "string"},
                        "seconds": {"type": "string"},
                        "size": {"type": "string"},
                        "input_reference": {"type": "string", "format": "binary", "description": "An image: a clip model's first frame"},
                    },
                }},
            }})),
            ..plain(
                "Create a video (OpenAI Videos API)",
                "video",
                ok(r("Video")),
            )
        },
        Route::VideosList => About {
            parameters: vec![
                query("after", "The id of the previous page's last video"),
                query_as(
                    "limit",
                    "1 to 100 (default 20)",
                    json!({"type": "integer", "minimum": 1, "maximum": 100}),
                ),
                query_as(
                    "order",
                    "asc or desc (default)",
                    json!({"type": "string", "enum": ["asc", "desc"]}),
                ),
            ],
            ..plain("The key's account's videos", "video", ok(r("VideoList")))
        },
        Route::VideosGet => video(plain(
            "A video (OpenAI Videos API)",
            "video",
            ok(r("Video")),
        )),
        Route::VideosDelete => video(plain(
            "Delete a finished video",
            "video",
            json!({
                "200": ok_json(r("VideoDeleted")),
                "409": described(r("OpenAiError"), "The video is still generating"),
            }),
        )),
        Route::VideosRemix => About {
            body: Some(json_body(json!({
                "type": "object",
                "required": ["prompt"],
                "properties": {"prompt": {"type": "string", "minLength": 1, "maxLength": 4000}},
            }))),
            ..video(plain(
                "A new video from a completed one's model, seconds and size, with a new prompt (billed as a new generation)",
                "video",
                json!({
                    "200": ok_json(r("Video")),
                    "409": described(r("OpenAiError"), "The video is not completed"),
                }),
            ))
        },
        Route::VideosUnsupported => plain(
            "Refused: edits, extensions and characters, which no video model served here can do (400 unsupported_operation)",
            "video",
            json!({}),
        ),
        Route::VideosCharacter => About {
            param: "character_id",
            parameters: vec![path_param("character_id", "A character's id")],
            ..plain(
                "Refused: no video model served here makes characters (400 unsupported_operation)",
                "video",
                json!({}),
            )
        },
        Route::VideosContent => About {
            parameters: vec![
                path_param("video_id", "The video's id"),
                query_as(
                    "variant",
                    "video (default); thumbnail and spritesheet where the model makes them",
                    json!({"type": "string", "enum": ["video", "thumbnail", "spritesheet"]}),
                ),
            ],
            ..video(plain(
                "A finished video's content, streamed (Range supported)",
                "video",
                json!({"200": {"description": "The MP4 (variant=video), the thumbnail (WebP) or the spritesheet (JPEG)",
                               "content": {"video/mp4": binary(), "image/webp": binary(), "image/jpeg": binary()}},
                       "206": {"description": "The range asked",
                               "content": {"video/mp4": binary(), "image/webp": binary(), "image/jpeg": binary()}}}),
            ))
        },
        Route::Charges => About {
            param: "request_id",
            parameters: vec![path_param(
                "request_id",
                "The request's id (its x-request-id answer header)",
            )],
            ..plain(
                "What one of this key's requests was charged, and why",
                "billing",
                ok(r("RequestCharges")),
            )
        },
        Route::Media => About {
            param: "file",
            parameters: vec![
                path_param("file", "TASK_ID.mp4"),
                query("expires", "Unix seconds"),
                query("sig", "Signature"),
            ],
            ..plain(
                "A finished video through a signed link",
                "video",
                json!({
                    "200": {"description": "The video", "content": {"video/mp4": binary()}},
                    "302": {"description": "Redirect to the upstream's file"},
                }),
            )
        },
        Route::NativeGenerate => native_model(
            "Native text generation",
            ok(r("GenerateContentResponse")),
            r("GenerateContentRequest"),
        ),
        Route::NativeStream => About {
            parameters: vec![
                path_param("model", "A native model"),
                query_as(
                    "alt",
                    "sse for a stream",
                    json!({"type": "string", "enum": ["sse"]}),
                ),
            ],
            ..native_model(
                "Native text generation, streamed (SSE with alt=sse)",
                json!({"200": {"description": "SSE frames with alt=sse, else a JSON array", "content": {
                    "application/json": {"schema": {"type": "array", "items": r("GenerateContentResponse")}},
                }}}),
                r("GenerateContentRequest"),
            )
        },
        Route::NativeCountTokens => native_model(
            "Count tokens (not billed)",
            ok(r("CountTokensResponse")),
            json!({"type": "object"}),
        ),
        Route::NativeEmbed => About {
            tag: "embeddings",
            parameters: vec![path_param("model", "An embeddings model")],
            ..native_model(
                "Native embeddings: one vector (served by embeddings channels, billed by tokens)",
                ok(r("EmbedContentResponse")),
                r("EmbedContentRequest"),
            )
        },
        Route::NativeBatchEmbed => About {
            tag: "embeddings",
            parameters: vec![path_param("model", "An embeddings model")],
            ..native_model(
                "Native embeddings: one vector per request, up to 100",
                ok(r("BatchEmbedContentsResponse")),
                r("BatchEmbedContentsRequest"),
            )
        },
        Route::ChatCompletions => posting(
            "Chat completions with a native model (docs/api.md §4 rule 4)",
            "native",
            json!({"200": {"description": "A completion, or SSE chunks with stream", "content": {
                "application/json": {"schema": r("ChatResponse")},
            }}}),
            "ChatRequest",
        ),
        Route::Responses => posting(
            "The Responses API with a native model",
            "native",
            json!({"200": {"description": "A response, or SSE events with stream", "content": {
                "application/json": {"schema": r("ResponsesResponse")},
            }}}),
            "ResponsesRequest",
        ),
        // Documented operation by operation ([`admin`]).
        Route::Admin => return None,
        // Not rows of the table.
        Route::MethodNotAllowed | Route::NotFound => return None,
    })
}

/// A task's route: the path names the task.
fn video(about: About) -> About {
    About {
        param: "video_id",
        parameters: vec![path_param("video_id", "The id the create answer gave")],
        ..about
    }
}

fn task(about: About) -> About {
    About {
        param: "task_id",
        parameters: vec![path_param("task_id", "The id the create answer gave")],
        ..about
    }
}

fn multipart(properties: Value) -> Value {
    json!({"required": true, "content": {"multipart/form-data": {"schema": {
        "type": "object",
        "required": ["model", "file"],
        "properties": properties,
    }}}})
}

/// The admin API's operations (docs/operations.md): one per row of its own route table
/// ([`ADMIN_ROUTES`]).
pub(super) fn admin() -> Vec<Operation> {
    ADMIN_ROUTES
        .iter()
        .map(|row| {
            let AdminAbout {
                summary,
                answers,
                parameters,
                body,
            } = admin_about(row.op);
            Operation {
                path: format!("/admin/v1{}", row.path),
                method: lower(&row.method),
                summary,
                tag: "admin",
                security: json!([{"adminToken": []}]),
                answers,
                errors: Some(("OpenAiError", ADMIN_ERRORS)),
                parameters,
                body,
            }
        })
        .collect()
}

fn lower(method: &http::Method) -> &'static str {
    match *method {
        http::Method::POST => "post",
        http::Method::PUT => "put",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "get",
    }
}

/// What the admin route table does not say about an operation.
struct AdminAbout {
    summary: &'static str,
    answers: Value,
    parameters: Vec<Value>,
    body: Option<Value>,
}

fn admin_about(op: AdminOp) -> AdminAbout {
    let plain = |summary, answers| AdminAbout {
        summary,
        answers,
        parameters: Vec::new(),
        body: None,
    };
    let with = |parameters, about: AdminAbout| AdminAbout {
        parameters,
        ..about
    };
    let taking = |schema: Value, about: AdminAbout| AdminAbout {
        body: Some(json_body(schema)),
        ..about
    };
    let data = |item: &str| {
        ok(
            json!({"type": "object", "required": ["data"], "properties": {
                "data": {"type": "array", "items": r(item)},
            }}),
        )
    };
    let created = |schema, description| json!({"201": described(schema, description)});
    let account = || path_param("id", "Its id or name");
    let holder = |kind| match kind {
        Holder::Account => path_param("id", "The account's id or name"),
        Holder::Key => path_param("id", "The key's id"),
    };
    let key = || path_param("id", "The key's id");
    let task = || path_param("id", "The task's id");
    let channel = || path_param("name", "The channel's name");
    let limit = || {
        query_as(
            "limit",
            "Page size, 1 to 1000 (default 50).",
            json!({"type": "integer", "minimum": 1, "maximum": 1000}),
        )
    };
    let before = || query("before", "The `next_cursor` of the previous page.");
    let usage_filters = || {
        vec![
            query(
                "account",
                "An account's id or name, or one of its keys' ids.",
            ),
            query("key", "A key's id."),
            query("model", "A public model."),
            query_as(
                "endpoint",
                "An endpoint name.",
                json!({"type": "string", "enum": tollgate_gateway_core::policy::ENDPOINTS}),
            ),
            query("since", "From this time: RFC 3339 or a UTC date."),
            query("until", "Before this time: RFC 3339 or a UTC date."),
        ]
    };
    let object = || ok(json!({"type": "object"}));
    match op {
        AdminOp::ListAccounts => with(
            vec![
                query("search", "Part of a name, or an exact id"),
                limit(),
                before(),
            ],
            plain(
                "List accounts, newest first, searched by name",
                ok(r("AccountPage")),
            ),
        ),
        AdminOp::CreateAccount => taking(
            r("NewAccount"),
            plain(
                "Create an account and its first key",
                created(r("CreatedAccount"), "Created"),
            ),
        ),
        AdminOp::Account => with(
            vec![account()],
            plain(
                "An account with its keys, usage by model and policy",
                ok(r("AccountDetail")),
            ),
        ),
        AdminOp::DisableAccount => with(
            vec![account()],
            plain("Disable an account (all its keys)", ok(r("Account"))),
        ),
        AdminOp::EnableAccount => with(
            vec![account()],
            plain("Enable an account", ok(r("Account"))),
        ),
        AdminOp::Credit => taking(
            r("NewCredit"),
            with(
                vec![
                    account(),
                    json!({
                        "name": "Idempotency-Key",
                        "in": "header",
                        "required": false,
                        "schema": {"type": "string", "minLength": 1, "maxLength": 500},
                        "description": "A payment's id: a retried webhook does not credit twice.",
                    }),
                ],
                plain(
                    "Credit (or, negative, correct) an account; once per Idempotency-Key",
                    json!({
                        "201": described(r("Credited"), "Credited"),
                        "200": described(r("Credited"), "Already credited under this Idempotency-Key"),
                    }),
                ),
            ),
        ),
        AdminOp::AccountKeys => with(vec![account()], plain("The account's keys", data("Key"))),
        AdminOp::AddKey => AdminAbout {
            body: Some(
                json!({"required": false, "content": {"application/json": {"schema": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 500}},
                }}}}),
            ),
            ..with(
                vec![account()],
                plain(
                    "Add a key (its secret is shown once)",
                    created(r("NewKey"), "Created"),
                ),
            )
        },
        AdminOp::Ledger => with(
            vec![account(), limit(), before()],
            plain("The account's ledger, newest first", ok(r("LedgerPage"))),
        ),
        AdminOp::Policy(kind) => with(
            vec![holder(kind)],
            plain(
                match kind {
                    Holder::Account => "The account's access policy",
                    Holder::Key => "A key's access policy",
                },
                ok(r("Policy")),
            ),
        ),
        AdminOp::SetPolicy(kind) => taking(
            r("PolicyEdit"),
            with(
                vec![holder(kind)],
                plain(
                    match kind {
                        Holder::Account => "Set fields of the policy (the others stay)",
                        Holder::Key => "Set fields of a key's policy",
                    },
                    ok(r("Policy")),
                ),
            ),
        ),
        AdminOp::ClearPolicy(kind) => with(
            vec![holder(kind)],
            plain(
                match kind {
                    Holder::Account => "Remove the policy",
                    Holder::Key => "Remove a key's policy",
                },
                ok(r("Policy")),
            ),
        ),
        AdminOp::RevokeKey => with(vec![key()], plain("Revoke a key for good", object())),
        AdminOp::EnableKey => with(
            vec![key()],
            plain("Enable a disabled (not revoked) key", object()),
        ),
        AdminOp::RotateKey => with(
            vec![key()],
            plain(
                "Replace a key (same label and policy); the old one is revoked",
                created(r("NewKey"), "The new key"),
            ),
        ),
        AdminOp::Groups => plain("Price groups", data("Group")),
        AdminOp::SetGroup => taking(
            r("GroupEdit"),
            with(
                vec![path_param("name", "The group's name")],
                plain("Create or change a price group", ok(r("Group"))),
            ),
        ),
        AdminOp::Prices => plain(
            "Every model's price versions and the one in effect",
            data("ModelPrices"),
        ),
        AdminOp::PriceHistory => with(
            vec![path_param("name", "The public model")],
            plain(
                "A model's price versions and the one in effect",
                ok(r("ModelPrices")),
            ),
        ),
        AdminOp::SetPrice => taking(
            r("PriceEdit"),
            with(
                vec![path_param("name", "The public model")],
                plain(
                    "Add a price version (versions are never edited)",
                    created(r("PriceVersion"), "Created"),
                ),
            ),
        ),
        AdminOp::Statement => with(
            vec![
                account(),
                query("from", "The period's start, Unix milliseconds"),
                query(
                    "until",
                    "The period's end (exclusive), Unix milliseconds; now when left out",
                ),
            ],
            plain(
                "The account's statement: its ledger rows over the period, chained to the last signed checkpoint (`tollgate verify` checks it offline)",
                ok(json!({"type": "object", "required": ["format", "account_id", "rows"]})),
            ),
        ),
        AdminOp::Request => with(
            vec![path_param("id", "The request's id (x-request-id)")],
            plain(
                "What a request was charged, explained; `disagree` lists charges whose arithmetic does not re-derive",
                ok(r("RequestCharges")),
            ),
        ),
        AdminOp::Usage => {
            let mut parameters = usage_filters();
            parameters.extend([limit(), before()]);
            with(
                parameters,
                plain("The usage log, newest first", ok(r("UsagePage"))),
            )
        }
        AdminOp::UsageSummary => {
            let mut parameters = usage_filters();
            parameters.push(query_as(
                "group_by",
                "default day",
                json!({"type": "string", "enum": ["day", "hour", "model", "key", "endpoint", "account", "status"]}),
            ));
            with(
                parameters,
                plain(
                    "Usage totals per time bucket, model, key, endpoint, account or status",
                    ok(r("UsageSummary")),
                ),
            )
        }
        AdminOp::UsageCsv => with(
            usage_filters(),
            plain(
                "The usage log as CSV, streamed",
                json!({"200": {"description": "CSV with a header row", "content": {"text/csv": text()}}}),
            ),
        ),
        AdminOp::Holds => with(
            vec![query("account", "An account's id or name"), limit()],
            plain("Open holds (video tasks)", data("Hold")),
        ),
        AdminOp::Leases => plain("Open credit leases of the running replicas", data("Lease")),
        AdminOp::Audit => with(
            vec![query_as(
                "recompute",
                "Also re-derive every charge from its quantity and price version",
                json!({"type": "string", "enum": ["true", "false"]}),
            )],
            plain("Check every money invariant", ok(r("AuditReport"))),
        ),
        AdminOp::Tasks => with(
            vec![
                query("account", "An account's id or name"),
                query_as(
                    "state",
                    "A state",
                    json!({"type": "string", "enum": ["submitting", "queued", "running", "succeeded", "failed"]}),
                ),
                limit(),
                before(),
            ],
            plain(
                "Video tasks of every account, newest first",
                ok(r("TaskPage")),
            ),
        ),
        AdminOp::Task => with(
            vec![task()],
            plain("A task with its poll history", ok(r("AdminTask"))),
        ),
        AdminOp::CancelTask => with(
            vec![task()],
            plain("Cancel a live task and refund it", ok(r("AdminTask"))),
        ),
        AdminOp::Channels => plain(
            "Channel health: success rate, latency percentiles, in flight, circuit",
            data("Channel"),
        ),
        AdminOp::DisableChannel => with(
            vec![channel()],
            plain("Switch a channel off (every replica)", object()),
        ),
        AdminOp::EnableChannel => {
            with(vec![channel()], plain("Switch a channel back on", object()))
        }
        AdminOp::Models => plain(
            "Models, aliases, channels and prices as configured",
            data("CatalogModel"),
        ),
        AdminOp::Config => plain(
            "The reloadable settings in force: their generation, since when, where they are read from, and the last reload refused",
            ok(r("ConfigStatus")),
        ),
        AdminOp::ReloadConfig => plain(
            "Read the configuration file again and apply its channels, models, aliases, prices, [limits] and [speech] without a restart (requests in flight finish on the settings they started with); refused whole, naming why, when the file does not read, does not fit together or changes a setting only a restart can change",
            ok(r("Reloaded")),
        ),
        AdminOp::Changes => with(
            vec![query("target", "An id or name"), limit(), before()],
            plain(
                "The admin audit log: who changed what, before and after",
                ok(
                    json!({"type": "object", "required": ["data", "next_cursor"], "properties": {
                        "data": {"type": "array", "items": r("AdminChange")},
                        "next_cursor": {"type": ["string", "null"]},
                    }}),
                ),
            ),
        ),
        AdminOp::Alerts => plain(
            "Alert rules in force (the configuration's and the admin API's) and the subjects each fires on",
            data("AlertRuleInForce"),
        ),
        AdminOp::PutAlert => taking(
            r("AlertRule"),
            plain(
                "Add an alert rule, or replace one added here; checked as the configuration's are (its secret_env must be set on this replica)",
                created(r("AlertRuleInForce"), "Added"),
            ),
        ),
        AdminOp::DeleteAlert => with(
            vec![path_param("name", "The rule's name")],
            plain("Remove an alert rule added through the admin API", object()),
        ),
        AdminOp::AlertEvents => with(
            vec![query("rule", "A rule's name"), limit()],
            plain("Alert events, newest first", data("AlertEvent")),
        ),
        AdminOp::AlertDeliveries => with(
            vec![
                query("rule", "A rule's name"),
                query_as(
                    "state",
                    "pending, delivered or failed",
                    json!({"type": "string", "enum": ["pending", "delivered", "failed"]}),
                ),
                limit(),
            ],
            plain(
                "Webhook deliveries of alert events, newest first",
                data("AlertDelivery"),
            ),
        ),
        AdminOp::AlertDelivery => with(
            vec![path_param("id", "The delivery's id (its webhook-id)")],
            plain(
                "A delivery with every attempt: when, by which replica, the answer's status and body",
                ok(r("AlertDelivery")),
            ),
        ),
        AdminOp::Redeliver => with(
            vec![path_param("id", "The delivery's id (its webhook-id)")],
            plain(
                "Post a delivery again now, under the same webhook-id",
                ok(r("AlertDelivery")),
            ),
        ),
        AdminOp::Overview => with(
            vec![query_as(
                "hours",
                "1 to 2160 (default 24)",
                json!({"type": "integer", "minimum": 1, "maximum": 2160}),
            )],
            plain("What the console's overview shows", ok(r("Overview"))),
        ),
    }
}
