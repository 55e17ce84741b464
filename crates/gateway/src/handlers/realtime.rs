//! `GET /v1/realtime?model=…` upgraded to a WebSocket (docs/api.md §4.20): an OpenAI Realtime
//! session, relayed frame by frame and billed per response on a hold that grows
//! (`crate::live_session`; docs/decisions.md, "Live voice sessions"). Everything that can be
//! refused is refused before the upgrade, in OpenAI's error shape: the key (as a Bearer token
//! or the browser's subprotocol), the model, its access rule, the first step of the hold, the
//! channel.

use crate::admission;
use crate::live_session::openai::OpenAiRealtime;
use crate::live_session::{self, LiveSession};
use crate::relay;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tollgate_exchange::body;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::Family;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{About, query};
use tollgate_metering::session::{SessionMeter, SessionRates};
use tollgate_request::auth;
use tollgate_request::auth::query_param;
use tollgate_request::context::RequestCtx;
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::config::{ModelKind, SessionSettings};
use tollgate_store::{Principal, SecretTerms, SessionOpening, is_client_secret};
use tollgate_upstream::registry;

/// The subprotocol OpenAI's browser clients name beside their key.
const REALTIME_PROTOCOL: &str = "realtime";

/// The request flow of DESIGN §2, top to bottom, ending in the upgrade.
pub async fn connect(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    // 2. The caller is its key's, or the key's that minted the client secret it presented
    // (`admission::authenticate`); such a secret may bind the model.
    let minted_for = minted_for(&ctx, &request).await?;

    // 3. The upgrade, as RFC 6455 §4.2.1 asks it.
    let accept = upgrade_key(request.headers())?;

    // 4. The model from the query (or the one the client secret was minted for): a realtime
    // model served here.
    let asked = request.uri().query().and_then(|q| query_param(q, "model"));
    let Some(model) = asked.or_else(|| minted_for.clone()) else {
        return Err(ApiError::invalid(
            "model",
            "missing_required_parameter",
            "Missing required parameter: 'model'.",
        ));
    };
    let entry = realtime_model(&ctx, &model)?;
    if let Some(minted_for) = minted_for.filter(|m| *m != entry.public) {
        return Err(ApiError::new(
            ErrorKind::Forbidden,
            format!("This client secret was minted for the model '{minted_for}', not '{model}'"),
        )
        .param("model")
        .code("model_not_allowed"));
    }

    // 5–7. The model rule, the price, the caller's units and budgets for the first step, and
    // a slot among the key's open streams for the session's life.
    let step = live_session::step_usage(&entry.session, 1);
    let price = ctx.state.prices.at(
        &entry.public,
        &entry.tariff,
        tollgate_journal::clock::now_millis(),
    );
    let priced = admission::admit(&ctx, &principal, &entry.public, &price, &step).await?;
    let audio = admission::admit_units(
        &ctx,
        &principal,
        &live_session::step_audio(&entry.session, 1),
    )
    .await?;
    let permit = admission::open_stream(&ctx)?;
    let live = admission::live_slot(&ctx, &principal)?;

    // 8. The session's hold: its first step, in the database (it must survive the replica).
    let opened = ctx
        .state
        .store
        .open_session(&SessionOpening {
            account_id: principal.account_id.clone(),
            key_id: principal.key_id.clone(),
            model: entry.public.clone(),
            request_id: ctx.request_id.clone(),
            first_step: priced.amount,
        })
        .await
        .map_err(admission::store_refused)?;

    // 9. The channel's socket, failing over at connect time like every call.
    let dialed = dial(&ctx, &entry).await;
    let (upstream, channel) = match dialed {
        Ok(dialed) => dialed,
        Err(e) => {
            let _ = ctx
                .state
                .store
                .close_session(&opened.id, Some(&opened.hold), None, None, "no channel")
                .await;
            return Err(e);
        }
    };

    // 10. The answer: 101, and the relay on the upgraded connection.
    let session = LiveSession {
        state: ctx.state.clone(),
        id: opened.id,
        hold: opened.hold,
        step: priced.amount,
        entry: entry.clone(),
        tariff: priced.tariff,
        price_group: priced.price_group,
        price_version: priced.price_version,
        request_id: ctx.request_id.clone(),
        channel: channel.name.clone(),
        meter: SessionMeter::new(rates(&entry.session)),
        spend: live_session::Spend::of(priced.spend, audio),
        principal,
        limits: ctx.state.realtime,
        live,
        _permit: permit,
        responses: 0,
        audio_charged_ms: 0,
        endpoint: "realtime",
    };
    let offered_realtime = offers_protocol(request.headers(), REALTIME_PROTOCOL);
    // A span for the session's life, under the upgrade's request span; a child per response.
    let span = tracing::info_span!(
        "live_session",
        session = %session.id,
        gen_ai.request.model = %entry.public,
        tollgate.channel = %channel.name,
        responses = tracing::field::Empty,
    );
    let protocol = Box::new(OpenAiRealtime::new(
        &entry.public,
        &entry.upstream_model,
        ctx.state.realtime.max_frame_bytes,
    ));
    let relay = live_session::run(session, protocol, hyper::upgrade::on(request), upstream);
    tokio::spawn(tracing::Instrument::instrument(relay, span));
    let mut response = Response::new(tollgate_exchange::response::full(bytes::Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    // A browser that offered subprotocols needs one chosen back, or it drops the socket.
    if offered_realtime {
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(REALTIME_PROTOCOL),
        );
    }
    Ok(response)
}

/// The model the client secret presented was minted for, if it names one.
async fn minted_for(
    ctx: &RequestCtx,
    request: &Request<Incoming>,
) -> Result<Option<String>, ApiError> {
    let (headers, query) = (request.headers(), request.uri().query());
    let Some(secret) =
        auth::presented_secret(Family::OpenAi, headers, query).filter(|s| is_client_secret(s))
    else {
        return Ok(None);
    };
    ctx.state
        .store
        .client_secret_model(&secret)
        .await
        .map_err(|e| ApiError::internal("reading a client secret", e))
}

/// `model` (a public name or an alias) as a realtime model served here, or the 404.
fn realtime_model(ctx: &RequestCtx, model: &str) -> Result<Arc<ModelEntry>, ApiError> {
    ctx.settings
        .catalog
        .resolve(model, ModelKind::Realtime)
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                ErrorKind::NotFound,
                format!(
                    "The model '{model}' does not exist or is not a realtime model served here"
                ),
            )
            .param("model")
            .code("model_not_found")
        })
}

/// `POST /v1/realtime/client_secrets`: a secret a browser connects with instead of the key —
/// bound to the key that minted it (its balance, policy and limits), for the model the
/// session names, for `expires_after.seconds` (10 to 7,200; `[realtime]
/// client_secret_seconds` when not given) and `[realtime] sessions_per_client_secret`
/// sessions. Minting costs nothing; the session it opens is billed as any.
pub async fn create_client_secret(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let raw = body::read_limited(&parts.headers, body, ctx.body_bounds()).await?;
    let asked: ClientSecretRequest = body::decode_json(&raw)?;
    let limits = ctx.state.realtime;
    let lifetime = asked.lifetime(limits.client_secret_seconds)?;
    let (model, session) = match &asked.session {
        Some(session) => {
            let head = SessionHead::of(session)?;
            let model = match head.model {
                Some(model) => {
                    let entry =
                        realtime_model(&ctx, &model).map_err(|e| e.param("session.model"))?;
                    admission::admit_model(&principal, &entry.public)?;
                    Some(entry.public.clone())
                }
                None => None,
            };
            (model, Some(session.get().to_owned()))
        }
        None => (None, None),
    };
    let minted = ctx
        .state
        .store
        .mint_client_secret(&SecretTerms {
            key_id: principal.key_id.clone(),
            model: model.clone(),
            session: session.clone(),
            lifetime_ms: i64::try_from(lifetime.saturating_mul(1_000)).unwrap_or(i64::MAX),
            sessions: limits.sessions_per_client_secret,
        })
        .await
        .map_err(|e| ApiError::internal("minting a client secret", e))?;
    // The session as OpenAI describes it: the configuration given, named and typed.
    let mut described = session
        .and_then(|s| serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&s).ok())
        .unwrap_or_default();
    described.insert("type".into(), "realtime".into());
    described.insert("object".into(), "realtime.session".into());
    described.insert("id".into(), tollgate_store::new_id("sess").into());
    described.insert(
        "model".into(),
        model.map_or(serde_json::Value::Null, Into::into),
    );
    let answer = serde_json::json!({
        "value": minted.value,
        "expires_at": minted.expires_at / 1_000,
        "session": described,
    });
    Ok(tollgate_exchange::response::json_response(
        StatusCode::OK,
        &answer,
    ))
}

/// `POST /v1/realtime/client_secrets`' body (OpenAI's `ClientSecretCreateParams`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientSecretRequest {
    #[serde(default)]
    expires_after: Option<ExpiresAfter>,
    #[serde(default)]
    session: Option<Box<RawValue>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpiresAfter {
    #[serde(default)]
    anchor: Option<String>,
    #[serde(default)]
    seconds: Option<u64>,
}

/// What the gateway reads of the session a secret is minted for; the rest is the vendor's.
#[derive(Debug, Deserialize)]
struct SessionHead {
    #[serde(rename = "type")]
    kind: Option<String>,
    model: Option<String>,
}

impl SessionHead {
    /// The session's type (a realtime session: transcription sessions are not served) and
    /// model.
    fn of(session: &RawValue) -> Result<SessionHead, ApiError> {
        let head: SessionHead = serde_json::from_str(session.get()).map_err(|e| {
            ApiError::invalid(
                "session",
                "invalid_type",
                format!("'session' must be an object: {e}"),
            )
        })?;
        match head.kind.as_deref() {
            Some("realtime") => Ok(head),
            Some("transcription") => Err(ApiError::invalid(
                "session.type",
                "unsupported_value",
                "Transcription sessions are not served here; use 'realtime'.",
            )),
            _ => Err(ApiError::invalid(
                "session.type",
                "missing_required_parameter",
                "'session.type' must be 'realtime'.",
            )),
        }
    }
}

impl ClientSecretRequest {
    /// Seconds the secret lives: 10 to 7,200, anchored at its creation (OpenAI's rule).
    fn lifetime(&self, default: u64) -> Result<u64, ApiError> {
        let Some(after) = &self.expires_after else {
            return Ok(default);
        };
        if after.anchor.as_deref().is_some_and(|a| a != "created_at") {
            return Err(ApiError::invalid(
                "expires_after.anchor",
                "invalid_value",
                "'expires_after.anchor' must be 'created_at'.",
            ));
        }
        match after.seconds {
            None => Ok(default),
            Some(seconds) if (10..=7_200).contains(&seconds) => Ok(seconds),
            Some(seconds) => Err(ApiError::invalid(
                "expires_after.seconds",
                "integer_out_of_range",
                format!("'expires_after.seconds' must be between 10 and 7200; it is {seconds}."),
            )),
        }
    }
}

/// The OpenAPI entry of the client secrets endpoint.
pub fn about_client_secrets() -> About {
    About::new(
        "An ephemeral client secret for a browser's Realtime session (docs/api.md §2.11)",
        "realtime",
        serde_json::json!({"200": {"description": "The secret, its expiry (Unix seconds) and the session it is for",
            "content": {"application/json": {"schema": {"type": "object", "required": ["value", "expires_at", "session"],
                "properties": {"value": {"type": "string"}, "expires_at": {"type": "integer"}, "session": {"type": "object"}}}}}}}),
    )
    .body(serde_json::json!({"required": true, "content": {"application/json": {"schema": {"type": "object",
        "properties": {"expires_after": {"type": "object", "properties": {"anchor": {"type": "string", "enum": ["created_at"]},
            "seconds": {"type": "integer", "minimum": 10, "maximum": 7200}}},
            "session": {"type": "object"}}}}}}))
}

/// The accept key of a WebSocket upgrade, or the 400 that says what is missing. A plain `GET`
/// is refused the way OpenAI refuses it: this path speaks WebSocket only.
fn upgrade_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let has = |name: header::HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if !has(header::UPGRADE, "websocket") || !has(header::CONNECTION, "upgrade") {
        return Err(ApiError::invalid(
            "Upgrade",
            "websocket_required",
            "This endpoint is a WebSocket: connect with 'Connection: Upgrade' and 'Upgrade: websocket'.",
        ));
    }
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_none_or(|v| v.as_bytes() != b"13")
    {
        return Err(ApiError::invalid(
            "Sec-WebSocket-Version",
            "websocket_version",
            "Only WebSocket version 13 is supported ('Sec-WebSocket-Version: 13').",
        ));
    }
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .map(HeaderValue::as_bytes)
        .filter(|k| k.len() == 24)
        .ok_or_else(|| {
            ApiError::invalid(
                "Sec-WebSocket-Key",
                "websocket_key",
                "A WebSocket upgrade needs a 'Sec-WebSocket-Key' of 16 bytes in base64.",
            )
        })?;
    Ok(derive_accept_key(key))
}

fn offers_protocol(headers: &HeaderMap, protocol: &str) -> bool {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == protocol)
}

/// The model's token rates, as its configuration gives them.
pub fn rates(settings: &SessionSettings) -> SessionRates {
    SessionRates {
        audio_in_per_second: settings.audio_in_tokens_per_second,
        audio_out_per_second: settings.audio_out_tokens_per_second,
        tokens_per_image: settings.tokens_per_image,
    }
}

/// Opens the socket of the first channel of `entry` that takes the session.
async fn dial(
    ctx: &RequestCtx,
    entry: &Arc<ModelEntry>,
) -> Result<
    (
        tollgate_upstream::common::websocket::ChannelSocket,
        Arc<tollgate_settings::catalog::Channel>,
    ),
    ApiError,
> {
    let client = ctx.state.live_http.as_ref().unwrap_or(&ctx.state.http);
    let config = live_session::socket_config(ctx.state.realtime.max_frame_bytes);
    relay::with_failover(entry, ctx.usage.as_ref(), |channel, endpoint| async move {
        let dialer = registry::session_dialer(channel.format)?;
        dialer
            .dial(client, &endpoint, &entry.upstream_model, config)
            .await
    })
    .await
    .map_err(|e| relay::upstream_error(&e))
}

/// The endpoint's entry in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "An OpenAI Realtime session over a WebSocket: upgrade with 'Upgrade: websocket'; the key as a Bearer token or the subprotocol 'openai-insecure-api-key.<key>' (docs/api.md §4.20)",
        "realtime",
        serde_json::json!({"101": {"description": "Switching Protocols: the session's events follow on the socket"}}),
    )
    .parameter(query("model", "The realtime model"))
}
