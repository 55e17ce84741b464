//! The simulator's HTTP server.

use crate::genai::{Genai, LastRequest};
use crate::knobs::{Fault, KnobSettings, Knobs};
use crate::tasks::{ARK_TASKS_PATH, GENERIC_PATH, OPENAI_PATH, Tasks, VIDEOS_PATH, VideoReply};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Response bodies: whole, or streamed frame by frame.
type SimBody = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// The largest request body the simulator reads.
const MAX_BODY: usize = 64 << 20;

/// A running simulator.
#[derive(Debug)]
pub struct SimHandle {
    addr: SocketAddr,
    knobs: Arc<Knobs>,
    genai: Arc<Genai>,
    shutdown: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl SimHandle {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its base URL, `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its knobs and counters.
    pub fn knobs(&self) -> &Arc<Knobs> {
        &self.knobs
    }

    /// The body of the last request the native text-generation (`genai`) routes received, byte
    /// for byte (also served at `GET /_sim/genai/last-request`).
    pub fn genai_last_request(&self) -> Option<Bytes> {
        self.genai.last().map(|last| last.body)
    }

    /// Stops accepting and waits for the accept loop to end.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

/// Binds `addr` (port 0 picks a free port) and serves the simulated vendors until shut down.
pub async fn start(addr: SocketAddr, settings: KnobSettings) -> std::io::Result<SimHandle> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let knobs = Arc::new(Knobs::new(settings));
    let tasks = Arc::new(Tasks::new(format!("http://{addr}")));
    let genai = Arc::new(Genai::default());
    let served_genai = genai.clone();
    let stripe = crate::stripe::Stripe::new(format!("http://{addr}"));
    let (shutdown, mut stop) = watch::channel(false);
    let served_knobs = knobs.clone();
    let task = tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(conn) => conn,
                    Err(e) => {
                        tracing::warn!(error = %e, "simulator accept failed");
                        continue;
                    }
                },
                _ = stop.changed() => break,
            };
            // As a vendor's edge does: a small frame (a realtime event) is not held back.
            let _ = stream.set_nodelay(true);
            let knobs = served_knobs.clone();
            let tasks = tasks.clone();
            let genai = served_genai.clone();
            let stripe = stripe.clone();
            let mut stop = stop.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    handle(
                        knobs.clone(),
                        tasks.clone(),
                        genai.clone(),
                        stripe.clone(),
                        req,
                    )
                });
                let builder = auto::Builder::new(TokioExecutor::new());
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                tokio::pin!(conn);
                tokio::select! {
                    _ = conn.as_mut() => {}
                    _ = stop.changed() => {}
                }
            });
        }
    });
    tracing::info!(%addr, "simulator listening");
    Ok(SimHandle {
        addr,
        knobs,
        genai,
        shutdown,
        task,
    })
}

/// The 101 of a WebSocket upgrade taken (its headers), or the 400 of one that is not.
fn switching(accepted: Result<http::HeaderMap, &'static str>) -> Response<SimBody> {
    match accepted {
        Ok(headers) => {
            let mut response = Response::new(empty_body());
            *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
            *response.headers_mut() = headers;
            response
        }
        Err(why) => openai_error(400, "invalid_request_error", None, None, why),
    }
}

async fn handle(
    knobs: Arc<Knobs>,
    tasks: Arc<Tasks>,
    genai: Arc<Genai>,
    stripe: crate::stripe::Stripe,
    request: Request<Incoming>,
) -> Result<Response<SimBody>, Infallible> {
    let (mut parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return Ok(openai_error(
                413,
                "invalid_request_error",
                None,
                None,
                &e.to_string(),
            ));
        }
    };
    let path = parts.uri.path();
    // Which key each call bore (`served("key KEY")`), and the keys the knobs revoked.
    if let Some(key) = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        knobs.count(&format!("key {key}"));
        if knobs.get().refuse_keys.iter().any(|k| k == key) {
            // As the vendor words it: the key's head and tail quoted back.
            let chars: Vec<char> = key.chars().collect();
            let head: String = chars.iter().take(3).collect();
            let tail: String = chars[chars.len().saturating_sub(4)..].iter().collect();
            return Ok(openai_error(
                401,
                "authentication_error",
                Some("invalid_api_key"),
                None,
                &format!(
                    "Incorrect API key provided: {head}*****{tail}. You can find your API key at https://platform.example/account/api-keys."
                ),
            ));
        }
    }
    if crate::stripe::Stripe::serves(path) {
        knobs.count(&format!("{} {path}", parts.method));
        let answer = stripe.handle(&parts.method, path, &parts.headers, &body);
        return Ok(stripe_answer(answer));
    }
    if parts.method == Method::GET && crate::gemini_live::PATHS.contains(&path) {
        let upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
        return Ok(switching(crate::gemini_live::accept(
            knobs,
            &parts.headers,
            upgrade,
        )));
    }
    if parts.method == Method::GET && path == "/v1/realtime" {
        let upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
        return Ok(switching(crate::realtime::accept(
            knobs,
            &parts.headers,
            parts.uri.query(),
            upgrade,
        )));
    }
    Ok(match (&parts.method, path) {
        (&Method::GET, "/_sim/knobs") => json(StatusCode::OK, &knobs.get()),
        (&Method::PUT, "/_sim/knobs") => match serde_json::from_slice::<KnobSettings>(&body) {
            Ok(settings) => {
                knobs.set(settings.clone());
                json(StatusCode::OK, &settings)
            }
            Err(e) => openai_error(400, "invalid_request_error", None, None, &e.to_string()),
        },
        (&Method::GET, "/_sim/stats") => json(StatusCode::OK, &knobs.stats()),
        (&Method::POST, "/v1/t2a_v2") => {
            let route = "POST /v1/t2a_v2";
            match admit(&knobs, route).await {
                Some(status) => json(StatusCode::OK, &crate::t2a::failure(status)),
                None => match crate::t2a::respond(&body).await {
                    crate::t2a::Answer::Whole(answer) => {
                        json(StatusCode::OK, &lying(&knobs, &answer))
                    }
                    crate::t2a::Answer::Stream(frames) => {
                        stream(frames, crate::t2a::error_frame(), &knobs.get())
                    }
                },
            }
        }
        (&Method::POST, "/v1/speech_to_text") => {
            let route = "POST /v1/speech_to_text";
            match admit(&knobs, route).await {
                Some(status) => openai_error(
                    status,
                    error_type(status),
                    None,
                    None,
                    "simulated upstream failure",
                ),
                None => {
                    let value = |name: &str| parts.headers.get(name)?.to_str().ok();
                    let content_type = value(header::CONTENT_TYPE.as_str());
                    let language = value(tollgate_vendor_audio::stt::LANGUAGE_HEADER);
                    match crate::stt::respond(content_type, language, body).await {
                        crate::stt::Answer::Whole { content_type, body } => {
                            let body = match knobs.get().report_usage {
                                Some(n) => crate::lies::overstate_piece(&body, n),
                                None => body,
                            };
                            raw(StatusCode::OK, content_type, body)
                        }
                        crate::stt::Answer::Stream(frames) => {
                            stream(frames, crate::stt::error_frame(), &knobs.get())
                        }
                        crate::stt::Answer::Refused(status, error) => json(
                            StatusCode::from_u16(status)
                                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                            &error,
                        ),
                    }
                }
            }
        }
        (&Method::POST, "/v1/audio/speech") => {
            let route = "POST /v1/audio/speech";
            match admit(&knobs, route).await {
                Some(status) => simulated_failure(status),
                None => openai_audio(crate::openai_audio::speech(&body).await, &knobs),
            }
        }
        (&Method::POST, "/v1/audio/transcriptions") => {
            let route = "POST /v1/audio/transcriptions";
            match admit(&knobs, route).await {
                Some(status) => simulated_failure(status),
                None => {
                    let content_type = parts
                        .headers
                        .get(header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok());
                    openai_audio(
                        crate::openai_audio::transcription(content_type, body).await,
                        &knobs,
                    )
                }
            }
        }
        (&Method::POST, "/v1/images/generations") => {
            match admit(&knobs, "POST /v1/images/generations").await {
                Some(status) => simulated_failure(status),
                None => images(crate::images::generate(&body, &knobs.get()), &knobs),
            }
        }
        (&Method::POST, path @ ("/v1/images/edits" | "/v1/images/variations")) => {
            let operation = if path.ends_with("edits") {
                tollgate_images::Operation::Edit
            } else {
                tollgate_images::Operation::Variation
            };
            match admit(&knobs, &format!("POST {path}")).await {
                Some(status) => simulated_failure(status),
                None => {
                    let content_type = parts
                        .headers
                        .get(header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok());
                    images(
                        crate::images::edit(content_type, body, operation, &knobs.get()).await,
                        &knobs,
                    )
                }
            }
        }
        (&Method::POST, "/v1/embeddings") => {
            let route = "POST /v1/embeddings";
            match admit(&knobs, route).await {
                Some(status) => openai_error(
                    status,
                    error_type(status),
                    None,
                    None,
                    "simulated upstream failure",
                ),
                None => match crate::embeddings::respond(&body) {
                    // Written as OpenAI writes it: numbers in `float32`'s shortest form.
                    Ok(mut answer) => {
                        if let Some(n) = knobs.get().report_usage {
                            answer.usage =
                                tollgate_embeddings::EmbeddingUsage::from_prompt_tokens(n);
                        }
                        raw(
                            StatusCode::OK,
                            "application/json",
                            Bytes::from(answer.to_json()),
                        )
                    }
                    Err((status, kind, code, param, message)) => {
                        openai_error(status, kind, code, param, &message)
                    }
                },
            }
        }
        (&Method::POST, ARK_TASKS_PATH) => {
            let route = "POST /api/v3/contents/generations/tasks";
            match admit(&knobs, route).await {
                Some(status) => reply(crate::tasks::ark_failure(status)),
                None => {
                    let seconds = crate::tasks::reference_video_seconds(&body).await;
                    reply(tasks.ark_create(&body, &knobs.get(), seconds))
                }
            }
        }
        (&Method::GET, ARK_TASKS_PATH) => {
            let route = "GET /api/v3/contents/generations/tasks";
            match admit(&knobs, route).await {
                Some(status) => reply(crate::tasks::ark_failure(status)),
                None => reply(tasks.ark_list(parts.uri.query().unwrap_or(""))),
            }
        }
        (&Method::GET, p) if task_id(p, ARK_TASKS_PATH).is_some() => {
            let route = "GET /api/v3/contents/generations/tasks/{id}";
            match (admit(&knobs, route).await, task_id(p, ARK_TASKS_PATH)) {
                (Some(status), _) => reply(crate::tasks::ark_failure(status)),
                (None, id) => task_reply(&knobs, tasks.ark_get(id.unwrap_or_default())),
            }
        }
        (&Method::DELETE, p) if task_id(p, ARK_TASKS_PATH).is_some() => {
            let route = "DELETE /api/v3/contents/generations/tasks/{id}";
            match (admit(&knobs, route).await, task_id(p, ARK_TASKS_PATH)) {
                (Some(status), _) => reply(crate::tasks::ark_failure(status)),
                (None, id) => reply(tasks.ark_delete(id.unwrap_or_default())),
            }
        }
        (&Method::POST, GENERIC_PATH) => {
            let route = "POST /v1/video/generations";
            match admit(&knobs, route).await {
                Some(status) => simulated_failure(status),
                None => reply(tasks.generic_create(&body, &knobs.get())),
            }
        }
        (&Method::GET, p) if task_id(p, GENERIC_PATH).is_some() => {
            let route = "GET /v1/video/generations/{id}";
            match (admit(&knobs, route).await, task_id(p, GENERIC_PATH)) {
                (Some(status), _) => simulated_failure(status),
                (None, id) => task_reply(&knobs, tasks.generic_get(id.unwrap_or_default())),
            }
        }
        (&Method::POST, OPENAI_PATH) => {
            let route = "POST /v1/videos";
            match admit(&knobs, route).await {
                Some(status) => simulated_failure(status),
                None => reply(tasks.openai_create(&body, &knobs.get())),
            }
        }
        (&Method::POST, p) if openai_item(p, "/remix").is_some() => {
            let route = "POST /v1/videos/{id}/remix";
            let id = openai_item(p, "/remix").unwrap_or_default();
            match admit(&knobs, route).await {
                Some(status) => simulated_failure(status),
                None => reply(tasks.openai_remix(id, &body, &knobs.get())),
            }
        }
        (&Method::GET, p) if openai_item(p, "/content").is_some() => {
            let route = "GET /v1/videos/{id}/content";
            let id = openai_item(p, "/content").unwrap_or_default();
            let query = parts.uri.query().unwrap_or_default();
            let variant = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("variant="));
            let range = parts
                .headers
                .get(header::RANGE)
                .and_then(|v| v.to_str().ok());
            match admit(&knobs, route).await {
                Some(status) => simulated_failure(status),
                None => match tasks.openai_content(id, variant, range).await {
                    Ok(file) => video(file),
                    Err(refused) => reply(refused),
                },
            }
        }
        (&Method::GET, p) if task_id(p, OPENAI_PATH).is_some() => {
            let route = "GET /v1/videos/{id}";
            match (admit(&knobs, route).await, task_id(p, OPENAI_PATH)) {
                (Some(status), _) => simulated_failure(status),
                (None, id) => task_reply(&knobs, tasks.openai_get(id.unwrap_or_default())),
            }
        }
        (&Method::DELETE, p) if task_id(p, OPENAI_PATH).is_some() => {
            let route = "DELETE /v1/videos/{id}";
            match (admit(&knobs, route).await, task_id(p, OPENAI_PATH)) {
                (Some(status), _) => simulated_failure(status),
                (None, id) => reply(tasks.openai_delete(id.unwrap_or_default())),
            }
        }
        (&Method::GET, p) if task_id(p, VIDEOS_PATH.trim_end_matches('/')).is_some() => {
            let route = "GET /_sim/videos/{id}.mp4";
            let file = task_id(p, VIDEOS_PATH.trim_end_matches('/')).unwrap_or_default();
            let range = parts
                .headers
                .get(header::RANGE)
                .and_then(|v| v.to_str().ok());
            match admit(&knobs, route).await {
                Some(status) => simulated_failure(status),
                None => video(tasks.video(file, range).await),
            }
        }
        (&Method::GET, "/_sim/genai/last-request") => last_request(&genai),
        (_, p) if crate::genai::is_native_path(p) => native(&knobs, &genai, &parts, body).await,
        _ => openai_error(
            404,
            "invalid_request_error",
            Some("unknown_url"),
            None,
            &format!("Unknown request URL: {} {}", parts.method, path),
        ),
    })
}

/// The native text-generation routes (`genai`, wire-formats §6): the body is recorded for
/// `/_sim/genai/last-request`, then the knobs, the key, and the answer.
async fn native(
    knobs: &Knobs,
    genai: &Genai,
    parts: &http::request::Parts,
    body: Bytes,
) -> Response<SimBody> {
    use crate::genai::Mode;
    let query = parts.uri.query();
    let Some(route) = crate::genai::route(&parts.method, parts.uri.path()) else {
        let message = format!("Method not found: {} {}", parts.method, parts.uri.path());
        return genai_reply(crate::genai::refuse(Mode::Whole, 404, &message), knobs);
    };
    let mode = route.mode(query);
    let auth = crate::genai::auth(&parts.headers, query);
    if parts.method == Method::POST {
        genai.record(LastRequest {
            line: format!("{} {}", parts.method, parts.uri),
            auth: auth.unwrap_or("none"),
            body: body.clone(),
        });
    }
    let reply = match admit(knobs, &route.stats_key()).await {
        Some(status) => crate::genai::failure(mode, status),
        None if auth.is_none() => crate::genai::forbidden(mode),
        None => {
            // What the request names by URI is fetched first, as the vendor does.
            let mut files = crate::genai::Files::new();
            for uri in crate::genai::file_uris(&body) {
                if let Some(bytes) = crate::fetch::fetch(&uri).await {
                    files.insert(uri, bytes);
                }
            }
            let scale = knobs.get().image_scale.unwrap_or(1);
            crate::genai::respond(&route, mode, &body, &files, scale)
        }
    };
    genai_reply(reply, knobs)
}

/// `value` as JSON, its usage figures overstated when the knobs say so.
fn lying<T: serde::Serialize>(knobs: &Knobs, value: &T) -> serde_json::Value {
    let mut value = serde_json::to_value(value).unwrap_or_default();
    if let Some(n) = knobs.get().report_usage {
        crate::lies::overstate(&mut value, n);
    }
    value
}

fn genai_reply(reply: crate::genai::Reply, knobs: &Knobs) -> Response<SimBody> {
    use crate::genai::Reply;
    match reply {
        Reply::Json(status, body) => json(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &lying(knobs, &body),
        ),
        Reply::Sse(frames) => paced(
            frames,
            |_| crate::genai::sse_error_frame(),
            "text/event-stream",
            &knobs.get(),
        ),
        Reply::Array(pieces) => paced(
            pieces,
            crate::genai::array_error_frame,
            "application/json",
            &knobs.get(),
        ),
    }
}

/// `GET /_sim/genai/last-request`: the last native body as received, with its request line and
/// how it authenticated in `x-sim-request` and `x-sim-auth`.
fn last_request(genai: &Genai) -> Response<SimBody> {
    let Some(last) = genai.last() else {
        return json(
            StatusCode::NOT_FOUND,
            &crate::genai::error_body(404, "no native request received yet"),
        );
    };
    let mut response = raw(StatusCode::OK, "application/json", last.body);
    let headers = response.headers_mut();
    if let Ok(line) = header::HeaderValue::try_from(last.line) {
        headers.insert("x-sim-request", line);
    }
    headers.insert("x-sim-auth", header::HeaderValue::from_static(last.auth));
    response
}

/// The id in `{prefix}/{id}`: not empty, without a further `/`.
fn task_id<'a>(path: &'a str, prefix: &str) -> Option<&'a str> {
    let id = path.strip_prefix(prefix)?.strip_prefix('/')?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// A JSON answer of the task routes.
fn reply((status, body): crate::tasks::Reply) -> Response<SimBody> {
    json(
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &body,
    )
}

/// A task answer, its usage figures overstated when the knobs say so.
fn task_reply(knobs: &Knobs, (status, body): crate::tasks::Reply) -> Response<SimBody> {
    reply((status, lying(knobs, &body)))
}

/// The OpenAI-style answer to a failure injected by the knobs.
fn simulated_failure(status: u16) -> Response<SimBody> {
    openai_error(
        status,
        error_type(status),
        None,
        None,
        "simulated upstream failure",
    )
}

/// The id of `/v1/videos/{id}{tail}` (`/content`, `/remix`).
fn openai_item<'a>(path: &'a str, tail: &str) -> Option<&'a str> {
    let id = path
        .strip_prefix(OPENAI_PATH)?
        .strip_prefix('/')?
        .strip_suffix(tail)?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// The answer of `GET /_sim/videos/{id}.mp4` and of `GET /v1/videos/{id}/content`.
fn video(answer: VideoReply) -> Response<SimBody> {
    match answer {
        VideoReply::Video {
            status,
            body,
            content_range,
            content_type,
        } => {
            let length = body.len();
            let mut response = raw(
                StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
                content_type,
                body,
            );
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_LENGTH, header::HeaderValue::from(length));
            headers.insert(
                header::ACCEPT_RANGES,
                header::HeaderValue::from_static("bytes"),
            );
            if let Some(range) = content_range.and_then(|r| header::HeaderValue::try_from(r).ok()) {
                headers.insert(header::CONTENT_RANGE, range);
            }
            response
        }
        VideoReply::Unsatisfiable(total) => {
            let mut response = openai_error(
                416,
                "invalid_request_error",
                None,
                None,
                "the requested range lies outside the video",
            );
            if let Ok(range) = header::HeaderValue::try_from(format!("bytes */{total}")) {
                response.headers_mut().insert(header::CONTENT_RANGE, range);
            }
            response
        }
        VideoReply::Refused(status, message) => openai_error(
            status,
            error_type(status),
            (status == 404).then_some("not_found"),
            None,
            &message,
        ),
    }
}

/// Applies the knobs to one request: waits out the latency, or forever when stalled; returns the
/// status to fail with, if any.
async fn admit(knobs: &Knobs, route: &str) -> Option<u16> {
    let (latency, fault) = knobs.admit(route);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match fault {
        Fault::None => None,
        Fault::Status(status) => Some(status),
        Fault::Stall => std::future::pending().await,
    }
}

fn openai_audio(answer: crate::openai_audio::Answer, knobs: &Knobs) -> Response<SimBody> {
    use crate::openai_audio::Answer;
    match answer {
        Answer::Whole { content_type, body } => raw(StatusCode::OK, content_type, body),
        Answer::Stream {
            content_type,
            pieces,
        } => paced(pieces, |_| Bytes::new(), content_type, &knobs.get()),
        Answer::Refused(status, error) => json(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            &error,
        ),
    }
}

fn images(answer: crate::images::Answer, knobs: &Knobs) -> Response<SimBody> {
    use crate::images::Answer;
    match answer {
        Answer::Whole(answer) => json(StatusCode::OK, &answer),
        Answer::Stream(frames) => {
            // The knobs' lie is already in the events' usage; the pacing and faults are here.
            let mut settings = knobs.get();
            settings.report_usage = None;
            stream(
                frames,
                Bytes::from_static(
                    b"event: error\ndata: {\"type\":\"error\",\"error\":{\"message\":\"simulated stream failure\",\"type\":\"server_error\"}}\n\n",
                ),
                &settings,
            )
        }
        Answer::Refused(status, code, param, message) => openai_error(
            status,
            error_type(status),
            Some(code),
            param.as_deref(),
            &message,
        ),
    }
}

fn error_type(status: u16) -> &'static str {
    match status {
        429 => "rate_limit_exceeded",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    }
}

/// An SSE response that sends `frames` one by one, paced and faulted by the knobs;
/// `error_frame` is the vendor's error frame sent when `error_after_frames` strikes.
fn stream(frames: Vec<Bytes>, error_frame: Bytes, knobs: &KnobSettings) -> Response<SimBody> {
    paced(
        frames,
        move |_| error_frame.clone(),
        "text/event-stream",
        knobs,
    )
}

/// A streamed response of this `Content-Type` that sends `frames` one by one, paced and faulted
/// by the knobs; `error_frame(n)` is what is sent instead of frame `n` when `error_after_frames`
/// strikes there.
fn paced(
    frames: Vec<Bytes>,
    error_frame: impl Fn(u32) -> Bytes + Send + 'static,
    content_type: &'static str,
    knobs: &KnobSettings,
) -> Response<SimBody> {
    let (tx, rx) = tokio::sync::mpsc::channel::<
        Result<hyper::body::Frame<Bytes>, Box<dyn std::error::Error + Send + Sync>>,
    >(4);
    let interval = knobs.frame_interval();
    let (cut, error) = (knobs.cut_after_frames, knobs.error_after_frames);
    let frames: Vec<Bytes> = match knobs.report_usage {
        Some(n) => frames
            .iter()
            .map(|f| crate::lies::overstate_piece(f, n))
            .collect(),
        None => frames,
    };
    tokio::spawn(async move {
        for (i, frame) in frames.into_iter().enumerate() {
            let sent = u32::try_from(i).unwrap_or(u32::MAX);
            if i > 0 {
                tokio::time::sleep(interval).await;
            }
            if cut == Some(sent) {
                let _ = tx.send(Err("simulated cut".into())).await;
                return;
            }
            if error == Some(sent) {
                let _ = tx
                    .send(Ok(hyper::body::Frame::data(error_frame(sent))))
                    .await;
                return;
            }
            if tx.send(Ok(hyper::body::Frame::data(frame))).await.is_err() {
                return;
            }
        }
    });
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|frame| (frame, rx))
    });
    let mut response = Response::new(StreamBody::new(frames).boxed());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}

/// A whole body with this `Content-Type`.
/// An empty body (a `101`'s).
/// An answer of the simulated Stripe as a response.
fn stripe_answer(answer: crate::stripe::Answer) -> Response<SimBody> {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = raw(status, answer.content_type, answer.body);
    if let Some(location) = answer
        .location
        .and_then(|l| http::HeaderValue::from_str(&l).ok())
    {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

fn empty_body() -> SimBody {
    Full::new(Bytes::new())
        .map_err(|never| match never {})
        .boxed()
}

fn raw(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<SimBody> {
    let full = Full::new(body).map_err(|never| match never {}).boxed();
    let mut response = Response::new(full);
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}

fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> Response<SimBody> {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let full = Full::new(Bytes::from(body))
        .map_err(|never| match never {})
        .boxed();
    let mut response = Response::new(full);
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn openai_error(
    status: u16,
    kind: &str,
    code: Option<&str>,
    param: Option<&str>,
    message: &str,
) -> Response<SimBody> {
    let body = serde_json::json!({
        "error": {"message": message, "type": kind, "param": param, "code": code}
    });
    json(
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &body,
    )
}
