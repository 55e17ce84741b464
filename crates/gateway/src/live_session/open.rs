//! Opening a live session, the same for every protocol (DESIGN §2 steps 5–9): the WebSocket
//! handshake's checks and answer, and a session admitted, held and dialed — its first step
//! against the caller's balance, budgets and per-minute quotas, its hold in the store (it must
//! survive the replica), its channel's socket failing over at connect time like every call.

use super::{LiveSession, Spend, step_audio, step_usage};
use crate::admission;
use crate::relay;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use std::sync::Arc;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::{ApiError, Family};
use tollgate_metering::session::{SessionMeter, SessionRates};
use tollgate_request::auth;
use tollgate_request::context::RequestCtx;
use tollgate_request::live::LiveSlot;
use tollgate_request::quotas::StreamPermit;
use tollgate_settings::catalog::{Channel, ModelEntry};
use tollgate_settings::config::SessionSettings;
use tollgate_store::{Principal, SecretHeld, SessionOpening, is_client_secret};
use tollgate_upstream::common::websocket::ChannelSocket;
use tollgate_upstream::registry;

/// The accept key of a WebSocket upgrade, or the 400 that says what is missing. A plain `GET`
/// is refused the way OpenAI refuses it: a session's path speaks WebSocket only.
pub fn accept_key(headers: &HeaderMap) -> Result<String, ApiError> {
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

/// The 101 that completes the handshake, naming `protocol` back when the client offered one
/// (a browser drops a socket whose offered subprotocol is not chosen).
pub fn switching_protocols(accept: &str, protocol: Option<&'static str>) -> Response<ResponseBody> {
    let mut response = Response::new(tollgate_exchange::response::full(bytes::Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(accept) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    if let Some(protocol) = protocol {
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(protocol),
        );
    }
    response
}

/// What the ephemeral secret the caller presented (`family`'s way) was minted for: `None`
/// when it presented a key. The secret has been redeemed already (`admission::authenticate`).
pub async fn presented_secret(
    ctx: &RequestCtx,
    headers: &HeaderMap,
    query: Option<&str>,
    family: Family,
) -> Result<Option<SecretHeld>, ApiError> {
    let Some(secret) =
        auth::presented_secret(family, headers, query).filter(|s| is_client_secret(s))
    else {
        return Ok(None);
    };
    ctx.state
        .store
        .client_secret(&secret)
        .await
        .map_err(|e| ApiError::internal("reading an ephemeral secret", e))
}

/// The model's token rates, as its configuration gives them.
pub fn rates(settings: &SessionSettings) -> SessionRates {
    SessionRates {
        audio_in_per_second: settings.audio_in_tokens_per_second,
        audio_out_per_second: settings.audio_out_tokens_per_second,
        tokens_per_image: settings.tokens_per_image,
    }
}

/// The slots a session holds for its life, taken before the upgrade: the key's open-streams
/// slot and its place among the key's live sessions.
#[derive(Debug)]
pub struct Slots {
    /// The key's open-streams slot.
    pub permit: StreamPermit,
    /// The key's live-session slot (and the drain signal).
    pub live: LiveSlot,
}

impl Slots {
    /// Takes both for `principal`, or the 429 of the one at its cap.
    pub fn take(ctx: &RequestCtx, principal: &Principal) -> Result<Slots, ApiError> {
        Ok(Slots {
            permit: admission::open_stream(ctx)?,
            live: admission::live_slot(ctx, principal)?,
        })
    }
}

/// Opens a session of `entry` for `principal`: the first step admitted (the model rule, the
/// price, the balance's first step, the budgets and per-minute quotas), held in the store, and
/// the channel's socket dialed. `endpoint` labels its usage records.
pub async fn open(
    ctx: &RequestCtx,
    principal: Principal,
    entry: &Arc<ModelEntry>,
    slots: Slots,
    endpoint: &'static str,
) -> Result<(LiveSession, ChannelSocket), ApiError> {
    let price = ctx.state.prices.at(
        &entry.public,
        &entry.tariff,
        tollgate_journal::clock::now_millis(),
    );
    let step = step_usage(&entry.session, 1);
    let priced = admission::admit(ctx, &principal, &entry.public, &price, &step).await?;
    let audio = admission::admit_units(ctx, &principal, &step_audio(&entry.session, 1)).await?;
    let opened = ctx
        .state
        .store
        .open_session(&SessionOpening {
            account_id: principal.account_id.clone(),
            key_id: principal.key_id.clone(),
            model: entry.public.clone(),
            request_id: ctx.request_id.clone(),
            first_step: priced.amount,
            endpoint: endpoint.to_owned(),
        })
        .await
        .map_err(admission::store_refused)?;
    let (upstream, channel) = match dial(ctx, entry).await {
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
        spend: Spend::of(priced.spend, audio),
        principal,
        limits: ctx.state.realtime,
        live: slots.live,
        _permit: slots.permit,
        responses: 0,
        audio_charged_ms: 0,
        endpoint,
        transcriber: None,
        transcribed_ms: 0,
    };
    Ok((session, upstream))
}

/// Opens the socket of the first channel of `entry` that takes the session.
async fn dial(
    ctx: &RequestCtx,
    entry: &Arc<ModelEntry>,
) -> Result<(ChannelSocket, Arc<Channel>), ApiError> {
    let client = ctx.state.live_http.as_ref().unwrap_or(&ctx.state.http);
    let config = super::socket_config(ctx.state.realtime.max_frame_bytes);
    relay::with_failover(entry, ctx.usage.as_ref(), |channel, endpoint| async move {
        let dialer = registry::session_dialer(channel.format)?;
        dialer
            .dial(client, &endpoint, &entry.upstream_model, config)
            .await
    })
    .await
    .map_err(|e| relay::upstream_error(&e))
}
