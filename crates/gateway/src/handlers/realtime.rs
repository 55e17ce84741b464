//! `GET /v1/realtime?model=…` upgraded to a WebSocket (docs/api.md §2.11): an OpenAI Realtime
//! session, relayed frame by frame and billed per response on a hold that grows
//! (`crate::live_session`; docs/decisions.md, "Live voice sessions"). Everything that can be
//! refused is refused before the upgrade, in OpenAI's error shape: the key (as a Bearer token
//! or the browser's subprotocol), the model, its access rule, the first step of the hold, the
//! channel.

use crate::admission;
use crate::live_session::openai::OpenAiRealtime;
use crate::live_session::{self, open};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::sync::Arc;
use tollgate_exchange::body;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::Family;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{About, query};
use tollgate_request::auth;
use tollgate_request::auth::query_param;
use tollgate_request::context::RequestCtx;
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::config::ModelKind;
use tollgate_store::{Principal, SecretTerms};

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
    let (headers, query) = (request.headers(), request.uri().query());
    let secret = open::presented_secret(&ctx, headers, query, Family::OpenAi).await?;
    let minted_for = secret.and_then(|held| held.model);

    // 3. The upgrade, as RFC 6455 §4.2.1 asks it.
    let accept = open::accept_key(request.headers())?;

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

    // 5–9. A slot among the key's open streams and live sessions for the session's life; the
    // model rule, the price, the first step against the balance and the limits, held in the
    // database; the channel's socket.
    let slots = open::Slots::take(&ctx, &principal)?;
    let (session, upstream) = open::open(&ctx, principal, &entry, slots, "realtime").await?;

    // 10. The answer: 101, and the relay on the upgraded connection.
    let protocol = Box::new(OpenAiRealtime::new(
        &entry.public,
        &entry.upstream_model,
        ctx.state.realtime.max_frame_bytes,
        ctx.settings.clone(),
        session.principal.clone(),
        entry.session.stock_voice.clone(),
    ));
    let offered = auth::offered_subprotocols(request.headers()).any(|p| p == REALTIME_PROTOCOL);
    let span = session.span();
    let relay = live_session::run(session, protocol, hyper::upgrade::on(request), upstream);
    tokio::spawn(tracing::Instrument::instrument(relay, span));
    Ok(open::switching_protocols(
        &accept,
        offered.then_some(REALTIME_PROTOCOL),
    ))
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
            sessions_end_at: None,
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

/// The endpoint's entry in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "An OpenAI Realtime session over a WebSocket: upgrade with 'Upgrade: websocket'; the key as a Bearer token or the subprotocol 'openai-insecure-api-key.<key>' (docs/api.md §2.11)",
        "realtime",
        serde_json::json!({"101": {"description": "Switching Protocols: the session's events follow on the socket"}}),
    )
    .parameter(query("model", "The realtime model"))
}
