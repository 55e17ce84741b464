//! Gemini Live's socket, `GET /ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent`
//! upgraded to a WebSocket (docs/api.md §2.12): a live voice session of the native family,
//! relayed frame by frame and billed per turn on a hold that grows (`crate::live_session`;
//! docs/decisions.md, "Live voice sessions").
//!
//! Unlike OpenAI's, this socket names its model in its first message (`setup`), not in its URL:
//! the key (`?key=` or `x-goog-api-key`), the handshake and the key's slots are refused before
//! the upgrade in Google's error shape; the model, its rule, the first step and the channel are
//! judged on the setup, and a refusal then is Google's own — the socket closed with the reason
//! (1007 for a message that breaks a rule, 1008 for one the gateway will not serve, 1011 when
//! no channel takes it).
//!
//! A browser connects with an ephemeral token its server minted (`POST /v1alpha/auth_tokens`,
//! [`create_auth_token`]) in place of the key, at the `BidiGenerateContentConstrained` socket:
//! the session is the minting key's, its setup under the token's constraints, and it ends at
//! the token's `expireTime`.

use crate::admission;
use crate::live_session::gemini::{GeminiLive, fit_reason, text_of};
use crate::live_session::{self, ClientSocket, open};
use futures_util::StreamExt;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::{ApiError, ErrorKind, Family};
use tollgate_exchange::route_doc::About;
use tollgate_journal::clock::{format_rfc3339, now_millis, parse_rfc3339};
use tollgate_native_genai::live::{self, SetupConstraints};
use tollgate_request::context::RequestCtx;
use tollgate_settings::config::ModelKind;
use tollgate_store::{AUTH_TOKENS, Principal, SecretHeld, SecretTerms};

/// The request flow of DESIGN §2, top to bottom: the checks that need no model before the
/// upgrade, the rest on the setup.
pub async fn connect(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    // 2. The caller is its key's, or the key's that minted the ephemeral token it presented
    // (`admission::authenticate`, the native family's credentials); a token's terms bind the
    // session.
    let (headers, query) = (request.headers(), request.uri().query());
    let token = open::presented_secret(&ctx, headers, query, Family::Google).await?;
    // 3. The upgrade, as RFC 6455 §4.2.1 asks it.
    let accept = open::accept_key(request.headers())?;
    // 5. A slot among the key's open streams and live sessions, for the session's life.
    let slots = open::Slots::take(&ctx, &principal)?;
    // 6–10. The answer: 101; the session opens on the setup, then relays.
    let upgrade = hyper::upgrade::on(request);
    tokio::spawn(async move {
        let max_frame = ctx.state.realtime.max_frame_bytes;
        match live_session::accept(upgrade, max_frame).await {
            Ok(client) => on_setup(ctx, principal, slots, token, client).await,
            Err(e) => tracing::warn!(error = %e, "the client's upgrade failed"),
        }
    });
    Ok(open::switching_protocols(&accept, None))
}

/// Reads the setup, opens the session it names, and relays it; or closes the socket with the
/// reason, as Google does.
async fn on_setup(
    ctx: RequestCtx,
    principal: Principal,
    slots: open::Slots,
    token: Option<SecretHeld>,
    mut client: ClientSocket,
) {
    let wait = ctx.state.realtime.setup_timeout_seconds;
    let first_came = tokio::time::timeout(Duration::from_secs(wait), first_message(&mut client));
    let mut first = match first_came.await {
        Ok(Some(first)) => first,
        Ok(None) => return,
        Err(_) => {
            let why = format!("no setup within {wait} s");
            return refuse(client, CloseCode::Policy, &why).await;
        }
    };
    // 4. The model the setup names — under the token's constraints, when one opened the
    // session — a live model served here.
    let constraints = token
        .as_ref()
        .and_then(|t| t.session.as_deref())
        .and_then(|s| serde_json::from_str::<SetupConstraints>(s).ok());
    if let Some(constraints) = &constraints {
        match live::constrain_setup(text_of(&first).unwrap_or_default(), constraints) {
            Ok(constrained) => first = Message::text(constrained),
            Err(e) => return refuse(client, CloseCode::Invalid, &e.message).await,
        }
    }
    let model = match live::setup_model(text_of(&first).unwrap_or_default()) {
        Ok(model) => model,
        Err(e) => return refuse(client, CloseCode::Invalid, &e.message).await,
    };
    let Some(entry) = ctx
        .settings
        .catalog
        .resolve(&model, ModelKind::Live)
        .cloned()
    else {
        let why = format!(
            "models/{model} is not found for API version v1beta, or is not supported for bidiGenerateContent"
        );
        return refuse(client, CloseCode::Policy, &why).await;
    };
    if let Some(minted_for) = token
        .as_ref()
        .and_then(|t| t.model.as_deref())
        .filter(|m| *m != entry.public)
    {
        let why = format!("this token was minted for models/{minted_for}");
        return refuse(client, CloseCode::Policy, &why).await;
    }
    // A token's sessions end at its `expireTime`.
    let left_ms = token
        .as_ref()
        .and_then(|t| t.sessions_end_at)
        .map(|end| end.saturating_sub(now_millis()));
    if left_ms.is_some_and(|ms| ms <= 0) {
        return refuse(client, CloseCode::Policy, "the ephemeral token has expired").await;
    }
    // 5–9. The model rule, the price, the first step against the balance and the limits,
    // held in the database; the channel's socket.
    let (mut session, upstream) = match open::open(&ctx, principal, &entry, slots, "live").await {
        Ok(opened) => opened,
        Err(e) => {
            let code = match e.kind {
                ErrorKind::UpstreamFailed | ErrorKind::Internal | ErrorKind::Unavailable => {
                    CloseCode::Error
                }
                _ => CloseCode::Policy,
            };
            return refuse(client, code, &e.message).await;
        }
    };
    if let Some(ms) = left_ms {
        let seconds = u64::try_from(ms).unwrap_or(0).div_ceil(1_000);
        session.limits.max_session_seconds = session.limits.max_session_seconds.min(seconds);
    }
    let protocol = Box::new(GeminiLive::new(
        &entry.public,
        &entry.upstream_model,
        ctx.state.realtime.max_frame_bytes,
    ));
    let span = session.span();
    let relay = live_session::relay(session, protocol, client, Some(first), upstream);
    tracing::Instrument::instrument(relay, span).await;
}

/// The client's first data frame (`None`: it went away first).
async fn first_message(client: &mut ClientSocket) -> Option<Message> {
    while let Some(Ok(message)) = client.next().await {
        match message {
            Message::Text(_) | Message::Binary(_) => return Some(message),
            Message::Close(_) => return None,
            _ => {}
        }
    }
    None
}

/// Closes the socket with `code` and `reason` (cut to what a close frame holds).
async fn refuse(mut client: ClientSocket, code: CloseCode, reason: &str) {
    let close = CloseFrame {
        code,
        reason: fit_reason(reason.to_owned()).into(),
    };
    live_session::close_client(&mut client, close).await;
}

/// How long a token may open sessions, and how long its sessions may last, when its minting
/// request does not say (Google's defaults: a minute, and 30 minutes).
const NEW_SESSIONS_FOR_MS: i64 = 60_000;
const SESSIONS_FOR_MS: i64 = 30 * 60_000;
/// The furthest either may be (Google's rule: less than 20 hours ahead).
const MOST_AHEAD_MS: i64 = 20 * 3_600_000;

/// `POST /v1alpha/auth_tokens`: an ephemeral token a browser opens Gemini Live sessions with
/// in place of the key — Google's `AuthToken` resource, its name `auth_tokens/…`. Bound to the
/// key that minted it (its balance, policy and limits), it opens sessions until
/// `newSessionExpireTime` (a minute by default), `uses` of them (1 by default; 0: no count),
/// each under the constraints of `bidiGenerateContentSetup` and `fieldMask` and ended at
/// `expireTime` (30 minutes by default). Minting costs nothing; the sessions are billed as any.
pub async fn create_auth_token(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let (parts, body) = request.into_parts();
    let raw = body::read_limited(&parts.headers, body, ctx.body_bounds()).await?;
    let asked: AuthTokenRequest = body::decode_json(&raw)?;
    let now = now_millis();
    let expire = asked.time(
        "expireTime",
        asked.expire_time.as_deref(),
        now,
        SESSIONS_FOR_MS,
    )?;
    let new_sessions = asked.time(
        "newSessionExpireTime",
        asked.new_session_expire_time.as_deref(),
        now,
        NEW_SESSIONS_FOR_MS,
    )?;
    let uses = asked.uses.unwrap_or(1);
    let constraints = SetupConstraints {
        setup: asked.setup.unwrap_or_default(),
        field_mask: asked.field_mask.filter(|m| !m.trim().is_empty()),
    };
    // The model the token binds: the one its setup names, when the setup's model is locked.
    let model_locked = constraints
        .field_mask
        .as_deref()
        .is_none_or(|mask| mask.split(',').any(|path| path.trim() == "model"));
    let model = match constraints.setup.get("model") {
        None => None,
        Some(named) => {
            let field = "bidiGenerateContentSetup.model";
            let named = named.as_str().ok_or_else(|| {
                ApiError::invalid(field, "invalid_type", format!("'{field}' must be a string"))
            })?;
            let name = named.strip_prefix("models/").unwrap_or(named);
            let entry = ctx
                .settings
                .catalog
                .resolve(name, ModelKind::Live)
                .ok_or_else(|| {
                    ApiError::new(
                        ErrorKind::NotFound,
                        format!("'{field}': models/{name} is not found, or is not supported for bidiGenerateContent"),
                    )
                    .param(field)
                })?;
            admission::admit_model(&principal, &entry.public)?;
            model_locked.then(|| entry.public.clone())
        }
    };
    let session = (!constraints.setup.is_empty() || constraints.field_mask.is_some())
        .then(|| serde_json::to_string(&constraints).unwrap_or_default());
    let minted = ctx
        .state
        .store
        .mint_client_secret(&SecretTerms {
            key_id: principal.key_id.clone(),
            model,
            session,
            // No session opens after the token's sessions must end.
            lifetime_ms: new_sessions.min(expire).saturating_sub(now),
            sessions: if uses == 0 { u32::MAX } else { uses },
            sessions_end_at: Some(expire),
        })
        .await
        .map_err(|e| ApiError::internal("minting an ephemeral token", e))?;
    let mut answer = serde_json::json!({
        "name": format!("{AUTH_TOKENS}{}", minted.value),
        "expireTime": format_rfc3339(expire),
        "newSessionExpireTime": format_rfc3339(new_sessions),
        "uses": uses,
    });
    if !constraints.setup.is_empty() {
        answer["bidiGenerateContentSetup"] = serde_json::Value::Object(constraints.setup);
    }
    if let Some(mask) = constraints.field_mask {
        answer["fieldMask"] = mask.into();
    }
    Ok(tollgate_exchange::response::json_response(
        StatusCode::OK,
        &answer,
    ))
}

/// `POST /v1alpha/auth_tokens`' body: Google's `AuthToken`, in either spelling.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthTokenRequest {
    /// Output only; ignored when sent.
    #[serde(default, rename = "name")]
    _name: Option<serde::de::IgnoredAny>,
    #[serde(default, rename = "expireTime", alias = "expire_time")]
    expire_time: Option<String>,
    #[serde(
        default,
        rename = "newSessionExpireTime",
        alias = "new_session_expire_time"
    )]
    new_session_expire_time: Option<String>,
    #[serde(default)]
    uses: Option<u32>,
    #[serde(
        default,
        rename = "bidiGenerateContentSetup",
        alias = "bidi_generate_content_setup"
    )]
    setup: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default, rename = "fieldMask", alias = "field_mask")]
    field_mask: Option<String>,
}

impl AuthTokenRequest {
    /// A time of the token (`field`, RFC 3339), `default_ms` from `now` when not given: after
    /// now, and less than 20 hours ahead.
    fn time(
        &self,
        field: &str,
        given: Option<&str>,
        now: i64,
        default_ms: i64,
    ) -> Result<i64, ApiError> {
        let Some(given) = given else {
            return Ok(now.saturating_add(default_ms));
        };
        let at = parse_rfc3339(given).map_err(|_| {
            ApiError::invalid(
                field,
                "invalid_value",
                format!("'{field}' must be an RFC 3339 time such as 2027-01-31T00:00:00Z"),
            )
        })?;
        if at <= now || at >= now.saturating_add(MOST_AHEAD_MS) {
            return Err(ApiError::invalid(
                field,
                "invalid_value",
                format!("'{field}' must be in the future and less than 20 hours ahead"),
            ));
        }
        Ok(at)
    }
}

/// The auth tokens endpoint's entry in the OpenAPI document.
pub fn about_auth_tokens() -> About {
    About::new(
        "An ephemeral token for a browser's Gemini Live sessions, in place of the key (docs/api.md §2.12)",
        "native",
        serde_json::json!({"200": {"description": "The token: its name (auth_tokens/…) is what the client presents",
            "content": {"application/json": {"schema": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "expireTime": {"type": "string"},
                    "newSessionExpireTime": {"type": "string"}, "uses": {"type": "integer"},
                    "bidiGenerateContentSetup": {"type": "object"}, "fieldMask": {"type": "string"}}}}}}}),
    )
    .body(serde_json::json!({"required": true, "content": {"application/json": {"schema": {"type": "object",
        "properties": {"expireTime": {"type": "string"}, "newSessionExpireTime": {"type": "string"},
            "uses": {"type": "integer", "minimum": 0}, "bidiGenerateContentSetup": {"type": "object"},
            "fieldMask": {"type": "string"}}}}}}))
}

/// The endpoint's entry in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "A Gemini Live session over a WebSocket: upgrade with 'Upgrade: websocket'; the key as '?key=' or 'x-goog-api-key', or an ephemeral token as 'Authorization: Token auth_tokens/…' or '?access_token='; the first message is the 'setup' naming the model (docs/api.md §2.12)",
        "native",
        serde_json::json!({"101": {"description": "Switching Protocols: the session's messages follow on the socket"}}),
    )
}
