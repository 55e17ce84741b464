//! Gemini Live's side of a live session (docs/api.md §2.12): its messages judged and vetted by
//! `tollgate_native_genai::live`, the setup's model spliced to the channel's, and the gateway's
//! own words where Google puts them — a close's reason (Google closes a socket whose message it
//! refuses, 1007, and one it will not serve, 1008), and `goAway` before the gateway goes.

use super::{End, FromClient, FromVendor, Heard, News, Protocol, Told};
use tokio_tungstenite::tungstenite::Message;
use tollgate_exchange::splice;
use tollgate_metering::session::Claim;
use tollgate_native_genai::live::{self, ClientKind};

/// A close frame's reason holds at most this many bytes (RFC 6455 §5.5: a control frame's
/// payload is 125 bytes, two of them the code).
const MOST_REASON_BYTES: usize = 123;

/// A Gemini Live session as the relay sees it.
#[derive(Debug)]
pub struct GeminiLive {
    judged: live::Session,
    /// The channel's name for the model.
    upstream: String,
}

impl GeminiLive {
    /// A session of `public` (served as `upstream` by its channel) taking frames of at most
    /// `max_frame` bytes; its setup not yet relayed.
    pub fn new(public: &str, upstream: &str, max_frame: usize) -> GeminiLive {
        GeminiLive {
            judged: live::Session {
                model: public.to_owned(),
                set_up: false,
                max_media_bytes: max_frame / 4 * 3,
            },
            upstream: upstream.to_owned(),
        }
    }
}

/// A frame's text: a text frame's, or a binary frame's when it is UTF-8 (Google sends its
/// messages as binary frames of JSON).
pub fn text_of(message: &Message) -> Option<&str> {
    match message {
        Message::Text(text) => Some(text.as_str()),
        Message::Binary(bytes) => std::str::from_utf8(bytes).ok(),
        _ => None,
    }
}

impl Protocol for GeminiLive {
    fn judge_client(&mut self, message: Message) -> FromClient {
        match &message {
            Message::Close(_) => return FromClient::End(End::Client),
            Message::Text(_) | Message::Binary(_) => {}
            // Pings are answered by the framing; pongs and raw frames carry nothing.
            _ => return FromClient::Skip,
        }
        let Some(text) = text_of(&message) else {
            return FromClient::End(End::Refused("a message must be JSON text (UTF-8)".into()));
        };
        let judged = match live::inspect_client(text, &self.judged) {
            Ok(judged) => judged,
            Err(e) => {
                let at = if e.field.is_empty() {
                    String::new()
                } else {
                    format!("'{}': ", e.field)
                };
                return FromClient::End(End::Refused(format!("{at}{}", e.message)));
            }
        };
        let heard = Heard {
            audio_ms: judged.measured.audio_ms,
            text_bytes: judged.measured.text_bytes,
            images: judged.measured.images,
            ..Heard::default()
        };
        if judged.kind != ClientKind::Setup {
            return FromClient::Relay(message, heard);
        }
        self.judged.set_up = true;
        // The model toward the vendor is the channel's; nothing else of the setup changes.
        let channel_model = format!("models/{}", self.upstream);
        match splice::string_at(text, &["setup", "model"], &channel_model) {
            Ok(Some(spliced)) => FromClient::Relay(Message::text(spliced), heard),
            _ => FromClient::End(End::Refused("'setup.model' must be a string".into())),
        }
    }

    fn vet_vendor(&mut self, message: Message) -> FromVendor {
        if let Message::Close(frame) = &message {
            let why = frame
                .as_ref()
                .map(|f| format!("{} {}", u16::from(f.code), f.reason))
                .unwrap_or_default();
            return FromVendor::End(End::Vendor(format!("the vendor closed the socket {why}")));
        }
        let Some(text) = text_of(&message) else {
            return FromVendor::Skip(None);
        };
        let vetted = match live::inspect_server(text) {
            Ok(vetted) => vetted,
            Err(unvetted) => return FromVendor::Skip(Some(unvetted.0)),
        };
        let news = News {
            delivered_audio_ms: vetted.delivered.audio_ms,
            delivered_text_bytes: vetted.delivered.text_bytes,
            // A turn's usage is its charge: Google reports it once a turn.
            done: vetted.usage.is_some(),
            claim: vetted.usage.as_ref().map(Claim::from),
            ..News::default()
        };
        FromVendor::Relay(message, news)
    }

    fn farewell(&mut self, end: &End, _told: Option<&Told>) -> Option<Message> {
        // The SDKs surface `goAway` as the session's notice to reconnect.
        matches!(end, End::Drained | End::TooLong(_))
            .then(|| Message::text(r#"{"goAway":{"timeLeft":"0s"}}"#))
    }

    fn close_reason(&self, _end: &End, told: Option<&Told>) -> String {
        told.map(|told| fit_reason(told.message.clone()))
            .unwrap_or_default()
    }
}

/// `reason` cut, at a character's boundary, to what a close frame holds.
pub fn fit_reason(mut reason: String) -> String {
    if reason.len() > MOST_REASON_BYTES {
        let mut cut = MOST_REASON_BYTES;
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
    }
    reason
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_setup_is_spliced_and_a_refusal_closes() {
        let mut gemini = GeminiLive::new("live-1", "gemini-live-2.5", 1 << 20);
        let setup = Message::text(r#"{"setup":{"model":"models/live-1","generationConfig":{}}}"#);
        match gemini.judge_client(setup) {
            FromClient::Relay(forward, heard) => {
                assert_eq!(
                    forward.to_text().unwrap(),
                    r#"{"setup":{"model":"models/gemini-live-2.5","generationConfig":{}}}"#
                );
                assert!(heard.text_bytes > 0);
            }
            other => panic!("{other:?}"),
        }
        match gemini.judge_client(Message::text(r#"{"bogus":{}}"#)) {
            FromClient::End(End::Refused(why)) => assert!(why.starts_with("'bogus'"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_reason_fits_a_close_frame() {
        let gemini = GeminiLive::new("m", "m", 1 << 20);
        let long = End::Refused("é".repeat(100));
        let reason = gemini.close_reason(&long, long.told().as_ref());
        assert!(reason.len() <= MOST_REASON_BYTES && reason.len() > 100);
    }
}
