//! OpenAI Realtime's side of a live session (docs/api.md §2.11): its events judged and vetted
//! by `tollgate-realtime`, the session's model spliced (the public name toward the client, the
//! channel's toward the vendor), and the gateway's own words as Realtime `error` events.

use super::{Blame, End, FromClient, FromVendor, Heard, News, Protocol, Told};
use std::sync::Arc;
use tokio_tungstenite::tungstenite::Message;
use tollgate_compat_audio::speech::is_stock_voice;
use tollgate_exchange::splice;
use tollgate_metering::session::Claim;
use tollgate_realtime::audio::AudioFormat;
use tollgate_realtime::client::{self, ClientKind};
use tollgate_realtime::error::{ErrorType, error_event};
use tollgate_realtime::server::{self, ServerKind, TranscriptionUsage};
use tollgate_request::state::Settings;
use tollgate_settings::config::ModelKind;
use tollgate_store::Principal;

/// An OpenAI Realtime session as the relay sees it.
#[derive(Debug)]
pub struct OpenAiRealtime {
    /// The session as a client's event is judged by it.
    judged: client::Session,
    /// The format of the audio the vendor speaks.
    output_format: AudioFormat,
    /// The public model and the channel's.
    public: String,
    upstream: String,
    /// The vendor's voice for an OpenAI stock voice, when the model's vendor does not know
    /// those names (`[models.NAME.session] stock_voice`).
    stock_voice: Option<String>,
    /// Events the gateway wrote itself, for their ids.
    events: u64,
    /// The catalog the session was opened with, and its caller: a transcription model the
    /// session names is one of its models the caller may use.
    settings: Arc<Settings>,
    principal: Principal,
}

impl OpenAiRealtime {
    /// A session of `public` (served as `upstream` by its channel) taking frames of at most
    /// `max_frame` bytes, for `principal` on the catalog of `settings`; `stock_voice` is the
    /// model's vendor voice for OpenAI's stock names, if it has one.
    pub fn new(
        public: &str,
        upstream: &str,
        max_frame: usize,
        settings: Arc<Settings>,
        principal: Principal,
        stock_voice: Option<String>,
    ) -> OpenAiRealtime {
        OpenAiRealtime {
            judged: client::Session {
                model: public.to_owned(),
                input_format: AudioFormat::Pcm16,
                // Decoded, a frame's base64 holds three bytes in four.
                max_audio_bytes: max_frame / 4 * 3,
            },
            output_format: AudioFormat::Pcm16,
            public: public.to_owned(),
            upstream: upstream.to_owned(),
            stock_voice,
            events: 0,
            settings,
            principal,
        }
    }

    /// The transcription model a `session.update` names, as a model of the catalog the caller
    /// may use; or the refusal, naming the field.
    fn transcriber(
        &mut self,
        name: &str,
        path: &[&str],
    ) -> Result<Arc<tollgate_settings::catalog::ModelEntry>, Message> {
        let field = path.join(".");
        let Some(entry) = self
            .settings
            .catalog
            .resolve(name, ModelKind::Transcription)
            .cloned()
        else {
            let message = format!("The transcription model '{name}' is not served here");
            return Err(self.error(
                Blame::Request,
                "model_not_found",
                &message,
                Some(&field),
                None,
            ));
        };
        if let Err(refused) = tollgate_request::policy::admit_model(&self.principal, &entry.public)
        {
            return Err(self.error(
                Blame::Request,
                "model_not_allowed",
                &refused.message,
                Some(&field),
                None,
            ));
        }
        Ok(entry)
    }

    fn event_id(&mut self) -> String {
        self.events += 1;
        format!("event_tg_{}", self.events)
    }

    fn error(
        &mut self,
        blame: Blame,
        code: &str,
        message: &str,
        param: Option<&str>,
        about: Option<&str>,
    ) -> Message {
        let kind = match blame {
            Blame::Request => ErrorType::InvalidRequest,
            Blame::Quota => ErrorType::InsufficientQuota,
            Blame::Rate => ErrorType::RateLimit,
            Blame::Server => ErrorType::Server,
        };
        let id = self.event_id();
        Message::text(error_event(&id, kind, code, message, param, about))
    }
}

/// The key a response is metered under: its id, hashed (responses run side by side, out of
/// band, are metered apart); `0` for an event that names none.
fn response_key(id: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    id.map_or(0, |id| {
        let mut hasher = std::hash::DefaultHasher::new();
        id.hash(&mut hasher);
        hasher.finish()
    })
}

/// `frame` with its `session.model` spliced to `model`; as it came when it names none.
fn with_model(frame: &str, model: &str) -> Result<Option<String>, splice::SpliceError> {
    splice::string_at(frame, &["session", "model"], model)
}

impl Protocol for OpenAiRealtime {
    fn judge_client(&mut self, message: Message) -> FromClient {
        let text = match message {
            Message::Text(text) => text,
            Message::Binary(_) => {
                return FromClient::Answer(self.error(
                    Blame::Request,
                    "invalid_json",
                    "Realtime events are JSON text frames; a binary frame is not one",
                    None,
                    None,
                ));
            }
            Message::Close(_) => return FromClient::End(End::Client),
            // Pings are answered by the framing; pongs and raw frames carry nothing.
            _ => return FromClient::Skip,
        };
        let event = match client::inspect(text.as_str(), &self.judged) {
            Ok(event) => event,
            Err(e) => {
                let about = client::event_id(text.as_str());
                let code = tollgate_field_error::Rule::code(&e.rule);
                return FromClient::Answer(self.error(
                    Blame::Request,
                    code,
                    &e.message,
                    Some(&e.field),
                    about.as_deref(),
                ));
            }
        };
        if let Some(format) = event.change.as_ref().and_then(|c| c.input_format) {
            self.judged.input_format = format;
        }
        let measured = event.measured;
        let mut heard = Heard {
            audio_ms: self.judged.input_format.millis(measured.audio_bytes),
            text_bytes: measured.text_bytes,
            images: measured.images,
            transcriber: None,
        };
        // The models toward the vendor are the channels', and a stock voice the vendor's
        // when it does not know those names; nothing else of the event changes (and an event
        // with nothing to change is relayed as the bytes it came in).
        let mut spliced: Option<String> = None;
        if event.kind == ClientKind::SessionUpdate && self.upstream != self.public {
            spliced = with_model(text.as_str(), &self.upstream).ok().flatten();
        }
        if let (Some(change), Some(vendor_voice)) = (&event.change, &self.stock_voice)
            && change.voice.as_deref().is_some_and(is_stock_voice)
            && !change.voice_path.is_empty()
        {
            let from = spliced.as_deref().unwrap_or(text.as_str());
            if let Ok(Some(voiced)) = splice::string_at(from, change.voice_path, vendor_voice) {
                spliced = Some(voiced);
            }
        }
        if let Some(change) = &event.change
            && let Some(transcription) = &change.transcription
        {
            heard.transcriber = Some(match transcription {
                None => None,
                Some(name) => match self.transcriber(name, change.transcription_path) {
                    // The name goes to the vendor as the client gave it (an alias of the
                    // catalog names a price here, not a model the realtime vendor knows).
                    Ok(entry) => Some(entry),
                    Err(refusal) => return FromClient::Answer(refusal),
                },
            });
        }
        let forward = match spliced {
            Some(spliced) => Message::text(spliced),
            None => Message::Text(text),
        };
        FromClient::Relay(forward, heard)
    }

    fn vet_vendor(&mut self, message: Message) -> FromVendor {
        let text = match message {
            Message::Text(text) => text,
            Message::Close(_) => {
                return FromVendor::End(End::Vendor("the vendor closed the socket".into()));
            }
            // The Realtime API sends JSON text only; anything else is not relayed.
            _ => return FromVendor::Skip(None),
        };
        let event = match server::inspect(text.as_str()) {
            Ok(event) => event,
            Err(unvetted) => return FromVendor::Skip(Some(unvetted.0)),
        };
        let mut news = News {
            response: response_key(event.response_id.as_deref()),
            ..News::default()
        };
        let mut forward = Message::Text(text.clone());
        match event.kind {
            Some(ServerKind::SessionCreated | ServerKind::SessionUpdated) => {
                if let Some(format) = event.output_format {
                    self.output_format = format;
                }
                if let Some(format) = event.input_format {
                    self.judged.input_format = format;
                }
                // The session as the vendor states it is input the vendor reads.
                news.stated_text = event.text_bytes;
                if event.model.is_some() {
                    match with_model(text.as_str(), &self.public) {
                        Ok(Some(spliced)) => forward = Message::text(spliced),
                        Ok(None) => {}
                        Err(e) => return FromVendor::Skip(Some(e.0)),
                    }
                }
            }
            Some(ServerKind::ResponseCreated) => news.started = true,
            Some(ServerKind::AudioDelta) => {
                news.delivered_audio_ms = self.output_format.millis(event.audio_bytes);
            }
            Some(ServerKind::TextDelta) => news.delivered_text_bytes = event.text_bytes,
            Some(ServerKind::ResponseDone) => {
                news.done = true;
                news.claim = event.usage.as_ref().map(Claim::from);
            }
            Some(ServerKind::TranscriptionCompleted) => {
                // Priced by its seconds: a duration said is believed up to what was heard; a
                // usage in tokens says none (the model's price is by the second).
                news.transcribed = Some(match event.transcription {
                    TranscriptionUsage::Seconds(seconds)
                        if seconds.is_finite() && seconds >= 0.0 =>
                    {
                        Some((seconds * 1_000.0).ceil().min(u64::MAX as f64) as u64)
                    }
                    _ => None,
                });
            }
            _ => {}
        }
        FromVendor::Relay(forward, news)
    }

    fn farewell(&mut self, _end: &End, told: Option<&Told>) -> Option<Message> {
        let told = told?;
        Some(self.error(told.blame, told.code, &told.message, None, None))
    }

    fn close_reason(&self, _end: &End, told: Option<&Told>) -> String {
        told.map(|t| t.code.to_owned()).unwrap_or_default()
    }
}
