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

use crate::live_session::gemini::{GeminiLive, fit_reason};
use crate::live_session::{self, ClientSocket, open};
use futures_util::StreamExt;
use http::{Request, Response};
use hyper::body::Incoming;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tollgate_exchange::body::ResponseBody;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::About;
use tollgate_native_genai::live;
use tollgate_request::context::RequestCtx;
use tollgate_settings::config::ModelKind;
use tollgate_store::Principal;

/// How long a new socket may wait before its `setup`.
const SETUP_WAIT: Duration = Duration::from_secs(30);

/// The request flow of DESIGN §2, top to bottom: the checks that need no model before the
/// upgrade, the rest on the setup.
pub async fn connect(
    ctx: RequestCtx,
    principal: Principal,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    // 2. The caller is its key's (`admission::authenticate`, the native family's credentials).
    // 3. The upgrade, as RFC 6455 §4.2.1 asks it.
    let accept = open::accept_key(request.headers())?;
    // 5. A slot among the key's open streams and live sessions, for the session's life.
    let slots = open::Slots::take(&ctx, &principal)?;
    // 6–10. The answer: 101; the session opens on the setup, then relays.
    let upgrade = hyper::upgrade::on(request);
    tokio::spawn(async move {
        let max_frame = ctx.state.realtime.max_frame_bytes;
        match live_session::accept(upgrade, max_frame).await {
            Ok(client) => on_setup(ctx, principal, slots, client).await,
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
    mut client: ClientSocket,
) {
    let first = match tokio::time::timeout(SETUP_WAIT, first_message(&mut client)).await {
        Ok(Some(first)) => first,
        Ok(None) => return,
        Err(_) => {
            let why = format!("no setup within {} s", SETUP_WAIT.as_secs());
            return refuse(client, CloseCode::Policy, &why).await;
        }
    };
    // 4. The model the setup names: a live model served here.
    let text = match &first {
        Message::Text(text) => text.as_str(),
        Message::Binary(bytes) => std::str::from_utf8(bytes).unwrap_or_default(),
        _ => "",
    };
    let model = match live::setup_model(text) {
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
    // 5–9. The model rule, the price, the first step against the balance and the limits,
    // held in the database; the channel's socket.
    let (session, upstream) = match open::open(&ctx, principal, &entry, slots, "live").await {
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

/// The endpoint's entry in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "A Gemini Live session over a WebSocket: upgrade with 'Upgrade: websocket'; the key as '?key=' or 'x-goog-api-key'; the first message is the 'setup' naming the model (docs/api.md §2.12)",
        "native",
        serde_json::json!({"101": {"description": "Switching Protocols: the session's messages follow on the socket"}}),
    )
}
