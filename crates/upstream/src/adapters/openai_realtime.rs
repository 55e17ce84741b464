//! The `openai-realtime` channel format: `GET {base}/v1/realtime?model=…` upgraded to a
//! WebSocket, `Authorization: Bearer` (wire-formats §1), the GA event protocol on it
//! (`tollgate-realtime`); a refusal before the upgrade in OpenAI's `{error:{…}}` shape.

use crate::common::openai_error_message;
use crate::common::websocket::{ChannelSocket, Dial, dial};
use crate::seams::sessions::SessionDialer;
use crate::{Endpoint, HttpClient, UpstreamError};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::header;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The `openai-realtime` format behind the live-session seam.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiRealtime;

impl SessionDialer for OpenAiRealtime {
    fn dial<'a>(
        &'a self,
        client: &'a HttpClient,
        endpoint: &'a Endpoint,
        model: &'a str,
        config: WebSocketConfig,
    ) -> BoxFuture<'a, Result<ChannelSocket, UpstreamError>> {
        async move {
            let to = Dial {
                url: endpoint.url(&format!("/v1/realtime?model={}", form_urlencoded(model))),
                credential: endpoint
                    .api_key
                    .as_ref()
                    .map(|key| (header::AUTHORIZATION, format!("Bearer {key}"))),
                read_error: openai_error_message,
            };
            dial(client, to, &endpoint.timeouts, config).await
        }
        .boxed()
    }
}

/// `model` as a query value: the unreserved characters as they are, the rest percent-encoded.
fn form_urlencoded(model: &str) -> String {
    let mut out = String::with_capacity(model.len());
    for b in model.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::form_urlencoded;

    #[test]
    fn a_model_is_a_safe_query_value() {
        assert_eq!(form_urlencoded("gpt-realtime"), "gpt-realtime");
        assert_eq!(form_urlencoded("a b&c=d"), "a%20b%26c%3Dd");
    }
}
