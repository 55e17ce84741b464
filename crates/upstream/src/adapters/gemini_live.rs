//! The `gemini-live` channel format: Gemini Live's socket,
//! `GET {base}/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent`
//! upgraded to a WebSocket with the key in `x-goog-api-key` (as google-genai sends it, never in
//! the URL a proxy logs); the `BidiGenerateContent` messages on it
//! (`tollgate_native_genai::live`); a refusal before the upgrade in Google's `{error:{…}}`
//! shape. The model is named by the session's first message, its `setup`, not by the URL.

use crate::common::google_error_message;
use crate::common::websocket::{ChannelSocket, Dial, dial};
use crate::seams::sessions::SessionDialer;
use crate::{Endpoint, HttpClient, UpstreamError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::HeaderName;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The socket's path on Google's host (and on any that serves the protocol).
pub const PATH: &str =
    "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";

/// The `gemini-live` format behind the live-session seam.
#[derive(Debug, Clone, Copy, Default)]
pub struct GeminiLive;

impl SessionDialer for GeminiLive {
    fn dial<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        _model: &'a str,
        config: WebSocketConfig,
    ) -> BoxFuture<'a, Result<ChannelSocket, UpstreamError>> {
        async move {
            let to = Dial {
                url: endpoint.url(PATH),
                credential: endpoint
                    .api_key
                    .as_ref()
                    .map(|key| (HeaderName::from_static("x-goog-api-key"), key.to_string())),
                read_error: google_error_message,
            };
            dial(client, to, &endpoint.timeouts, config).await
        }
        .boxed()
    }
}
