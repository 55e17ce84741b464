//! A live voice session's relay (docs/decisions.md, "Live voice sessions"): one loop that
//! carries each frame across as it came — inspected by `tollgate-realtime`, measured by the
//! session's meter (`tollgate_metering::session`) — grows the session's hold ahead of what the
//! response in progress could be charged, charges each `response.done` on its own hold, and
//! ends the session exactly once, whichever side ends it.
//!
//! The money is the store's (`tollgate_store::sessions`): a durable hold, so that a replica
//! killed mid-session leaves the sweeper what it journaled, and fenced by the hold's state, so
//! that a replica back from a pause past the sweep charges nothing twice.

use futures_util::{SinkExt, StreamExt};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tollgate_billing::{Amount, Measure, Tariff, TokenClasses, Usage};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_metering::Bound;
use tollgate_metering::session::{ResponseBound, SessionMeter, claimed};
use tollgate_realtime::audio::AudioFormat;
use tollgate_realtime::client::{self, ClientKind};
use tollgate_realtime::error::{ErrorType, error_event};
use tollgate_realtime::server::{self, ServerKind};
use tollgate_request::live::LiveSlot;
use tollgate_request::quotas::{Admitted, RateHeaders, StreamPermit};
use tollgate_request::state::State;
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::config::{RealtimeConfig, SessionSettings};
use tollgate_store::{Hold, PriceGroup, Principal, Settlement, Step, UsageRecord};
use tollgate_upstream::common::websocket::ChannelSocket;

/// The framing both sockets use.
///
/// Sized for many quiet sockets: tungstenite allocates its read buffer eagerly (128 KiB by
/// default: two sockets a session made an idle session 268 KB, docs/benchmarks.md), so reads
/// start at 8 KiB and grow for a large frame; each event is written as it is sent (the relay
/// flushes every one anyway); and what waits to be written is bounded — a receiver that stops
/// reading stalls its own session (see [`SLOW_RECEIVER`]), never the gateway's memory.
pub fn socket_config(max_frame: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(8 << 10)
        .write_buffer_size(0)
        .max_write_buffer_size(max_frame.saturating_mul(2))
        .max_message_size(Some(max_frame))
        .max_frame_size(Some(max_frame))
}

/// The longest a relayed event may wait to be taken by its receiver — the client, or the
/// vendor — before the session ends: a slow receiver holds its own session, for so long.
pub const SLOW_RECEIVER: Duration = Duration::from_secs(30);

/// A session admitted and held, with its channel's socket open.
#[derive(Debug)]
pub struct LiveSession {
    /// The gateway's state.
    pub state: Arc<State>,
    /// `ses_…`
    pub id: String,
    /// The hold of the response in progress.
    pub hold: Hold,
    /// A step of the hold.
    pub step: Amount,
    /// The model.
    pub entry: Arc<ModelEntry>,
    /// Its tariff as the caller pays it.
    pub tariff: Tariff,
    /// The caller's price group, for the ledger rows.
    pub price_group: Option<Arc<PriceGroup>>,
    /// The price version.
    pub price_version: Option<i64>,
    /// The caller: its key, and the limits its spending counts against.
    pub principal: Principal,
    /// The upgrade's request id.
    pub request_id: String,
    /// The channel that serves it.
    pub channel: String,
    /// What the session relayed.
    pub meter: SessionMeter,
    /// What the response in progress holds of the caller's budgets and per-minute quotas.
    pub spend: Spend,
    /// Its limits (`[realtime]`).
    pub limits: RealtimeConfig,
    /// Its place among the replica's live sessions (its key's slot, the drain signal).
    pub live: LiveSlot,
    /// The key's open-streams slot, for the session's life.
    pub _permit: StreamPermit,
    /// Responses charged so far.
    pub responses: u64,
    /// Milliseconds of audio, both ways, counted in the responses charged so far.
    pub audio_charged_ms: u64,
}

/// What the response in progress holds of the caller's limits, beside the balance: its money
/// in the daily and monthly budgets and its tokens in the per-minute `token_classes` quotas
/// (`Quotas::admit_spend`), and its audio in the per-minute `audio_seconds` quotas
/// (`Quotas::admit_units`). It grows with the hold, a step at a time, and is trued up with
/// the response's charge; dropped, it gives back what was not spent.
#[derive(Debug, Default)]
pub struct Spend(Option<Admitted>);

impl Spend {
    /// The admissions of a step (either may be `None`: nothing limits it).
    pub fn of(money: Option<Admitted>, audio: Option<Admitted>) -> Spend {
        let mut spend = Spend(money);
        spend.join(Spend(audio));
        spend
    }

    /// Joins a step's admissions to the response's.
    fn join(&mut self, step: Spend) {
        match (&mut self.0, step.0) {
            (Some(held), Some(step)) => held.absorb(step),
            (None, step) => self.0 = step,
            (Some(_), None) => {}
        }
    }

    /// Trues the limits up with what the response was charged: its token classes, its
    /// audio seconds, its money.
    fn settle(&mut self, classes: &Usage, audio: &Usage, charge: Amount) {
        if let Some(admitted) = self.0.take() {
            admitted.settle_measured(&[classes, audio], charge);
        }
    }
}

/// `steps` steps of a session's hold: `step_seconds` of audio heard and spoken each.
pub fn step_usage(settings: &SessionSettings, steps: u64) -> Usage {
    let seconds = settings.step_seconds.max(1).saturating_mul(steps);
    Usage::TokenClasses(TokenClasses {
        audio_in: seconds.saturating_mul(settings.audio_in_tokens_per_second),
        audio_out: seconds.saturating_mul(settings.audio_out_tokens_per_second),
        ..TokenClasses::default()
    })
}

/// The audio of `steps` steps, heard and spoken, as the per-minute `audio_seconds` quotas
/// count it.
pub fn step_audio(settings: &SessionSettings, steps: u64) -> Usage {
    let seconds = settings.step_seconds.max(1).saturating_mul(steps);
    Usage::AudioSeconds(seconds.saturating_mul(2))
}

/// Why a session ended: the reason written on its row and, for the client, its close frame.
#[derive(Debug, Clone, PartialEq, Eq)]
enum End {
    /// The client closed or went away.
    Client,
    /// The channel closed or broke.
    Vendor(String),
    /// The balance or the account refused the next step.
    Balance(String),
    /// A limit of the key or its account refused the next step: a budget (`rate: false`) or
    /// a per-minute quota (`rate: true`), in its refusal's words.
    Limit { rate: bool, message: String },
    /// The sweeper closed the session (this replica was paused past its heartbeat).
    Fenced,
    /// The store failed.
    Store(String),
    /// The replica drains (SIGTERM).
    Drained,
    /// The session reached `[realtime] max_session_seconds`.
    TooLong(u64),
    /// No frame either way for `[realtime] idle_timeout_seconds`.
    Idle(u64),
    /// The client sent a frame over `[realtime] max_frame_bytes` (refused by the framing
    /// before it was read whole).
    FrameTooLarge(usize),
    /// A receiver (the client, or the vendor) did not take an event for [`SLOW_RECEIVER`].
    SlowReceiver(&'static str),
}

impl End {
    /// A limit's refusal of the next step.
    fn limit(refused: ApiError) -> End {
        End::Limit {
            rate: refused.kind == ErrorKind::RateLimited,
            message: refused.message,
        }
    }

    fn reason(&self) -> String {
        match self {
            End::Client => "client closed".into(),
            End::Vendor(why) => format!("vendor closed: {why}"),
            End::Balance(why) => format!("balance: {why}"),
            End::Limit { message, .. } => format!("limit: {message}"),
            End::Fenced => "fenced: swept while this replica was paused".into(),
            End::Store(why) => format!("store: {why}"),
            End::Drained => "the gateway drains".into(),
            End::TooLong(seconds) => format!("the session reached its {seconds} s"),
            End::Idle(seconds) => format!("no frame for {seconds} s"),
            End::FrameTooLarge(limit) => format!("a client frame over {limit} bytes"),
            End::SlowReceiver(who) => format!("{who} stopped reading"),
        }
    }

    /// The `error` event the client is told before the close, when it is not the one who
    /// ended the session: its type, code and message.
    fn told(&self) -> Option<(ErrorType, &'static str, String)> {
        match self {
            End::Client => None,
            End::Vendor(_) => Some((
                ErrorType::Server,
                "upstream_closed",
                "The vendor ended the session; what was delivered is charged.".into(),
            )),
            End::Balance(why) => Some((
                ErrorType::InsufficientQuota,
                "insufficient_quota",
                format!(
                    "The session ended: the balance cannot cover its next step ({why}). What was delivered is charged."
                ),
            )),
            End::Limit { rate, message } => Some(if *rate {
                (
                    ErrorType::RateLimit,
                    "rate_limit_exceeded",
                    format!("The session ended: {message}. What was delivered is charged."),
                )
            } else {
                (
                    ErrorType::InsufficientQuota,
                    "insufficient_quota",
                    format!("The session ended: {message}. What was delivered is charged."),
                )
            }),
            End::Fenced | End::Store(_) => Some((
                ErrorType::Server,
                "billing_unavailable",
                "The session ended: it could not be billed. What was delivered is charged once."
                    .into(),
            )),
            End::Drained => Some((
                ErrorType::Server,
                "server_shutting_down",
                "The gateway is restarting: reconnect to go on. What was delivered is charged."
                    .into(),
            )),
            End::TooLong(seconds) => Some((
                ErrorType::InvalidRequest,
                "session_expired",
                format!("Your session hit the maximum duration of {seconds} seconds."),
            )),
            End::Idle(seconds) => Some((
                ErrorType::InvalidRequest,
                "session_idle",
                format!("The session ended after {seconds} seconds without an event either way."),
            )),
            End::SlowReceiver(who) => Some((
                ErrorType::Server,
                "slow_receiver",
                format!(
                    "The session ended: {who} took no event for {} seconds.",
                    SLOW_RECEIVER.as_secs()
                ),
            )),
            End::FrameTooLarge(limit) => Some((
                ErrorType::InvalidRequest,
                "frame_too_large",
                format!("A frame may hold at most {limit} bytes; the session ended."),
            )),
        }
    }

    /// The close frame's code.
    fn close_code(&self) -> CloseCode {
        match self {
            End::Client | End::TooLong(_) | End::Idle(_) => CloseCode::Normal,
            End::Balance(_) | End::Limit { .. } => CloseCode::Policy,
            End::Drained => CloseCode::Away,
            End::FrameTooLarge(_) => CloseCode::Size,
            End::Vendor(_) | End::Fenced | End::Store(_) | End::SlowReceiver(_) => CloseCode::Error,
        }
    }
}

type ClientSocket = WebSocketStream<TokioIo<Upgraded>>;

/// Relays the session until one side ends it, then settles it.
pub async fn run(mut session: LiveSession, upgrade: OnUpgrade, mut upstream: ChannelSocket) {
    let config = socket_config(session.limits.max_frame_bytes);
    let mut client = match upgrade.await {
        Ok(upgraded) => {
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))
                .await
        }
        Err(e) => {
            tracing::warn!(session = %session.id, error = %e, "the client's upgrade failed");
            let _ = upstream.close(None).await;
            session.end(End::Client, false).await;
            return;
        }
    };
    let started = Instant::now();
    let mut relay = Relay {
        judged: client::Session {
            model: session.entry.public.clone(),
            input_format: AudioFormat::Pcm16,
            // Decoded, a frame's base64 holds three bytes in four.
            max_audio_bytes: session.limits.max_frame_bytes / 4 * 3,
        },
        output_format: AudioFormat::Pcm16,
        in_response: false,
        events: 0,
    };
    let mut heartbeat = tokio::time::interval(session.limits.heartbeat());
    heartbeat.tick().await;
    let mut drain = session.live.drain_signal();
    let longest = session.limits.max_session_seconds;
    let deadline = tokio::time::sleep(Duration::from_secs(longest));
    tokio::pin!(deadline);
    let idle = Duration::from_secs(session.limits.idle_timeout_seconds);
    let mut last_frame = Instant::now();
    let end = loop {
        tokio::select! {
            frame = client.next() => match frame {
                Some(Ok(message)) => {
                    last_frame = Instant::now();
                    if let Err(end) = session.on_client_frame(&mut relay, message, &mut client, &mut upstream).await {
                        break end;
                    }
                }
                Some(Err(tokio_tungstenite::tungstenite::Error::Capacity(_))) => {
                    break End::FrameTooLarge(session.limits.max_frame_bytes);
                }
                _ => break End::Client,
            },
            frame = upstream.next() => match frame {
                Some(Ok(message)) => {
                    last_frame = Instant::now();
                    if let Err(end) = session.on_vendor_frame(&mut relay, message, &mut client).await {
                        break end;
                    }
                }
                Some(Err(e)) => break End::Vendor(e.to_string()),
                None => break End::Vendor("the channel's socket closed".into()),
            },
            _ = heartbeat.tick() => {
                if last_frame.elapsed() >= idle {
                    break End::Idle(idle.as_secs());
                }
                if let Err(end) = session.beat(&relay).await {
                    break end;
                }
            }
            () = &mut deadline => break End::TooLong(longest),
            // The borrow the wait returns is dropped at once (it is not `Send`).
            () = async { drop(drain.wait_for(|drains| *drains).await) } => break End::Drained,
        }
    };
    tracing::info!(session = %session.id, reason = %end.reason(), seconds = started.elapsed().as_secs(), "live session ended");
    // Why, in the API's own words, before the close; both sockets closed.
    if let Some((kind, code, message)) = end.told() {
        let id = relay.event_id();
        let _ = send(
            &mut client,
            error_event(&id, kind, code, &message, None, None),
        )
        .await;
    }
    let (code, said) = (
        end.close_code(),
        end.told().map(|(_, code, _)| code).unwrap_or(""),
    );
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let _ = client
            .send(Message::Close(Some(CloseFrame {
                code,
                reason: said.into(),
            })))
            .await;
        let _ = upstream.close(None).await;
    })
    .await;
    let in_response = relay.in_response;
    session.end(end, in_response).await;
}

/// What the relay knows of the session beside its meter.
#[derive(Debug)]
struct Relay {
    /// The session as a client's event is judged by it.
    judged: client::Session,
    /// The format of the audio the vendor speaks.
    output_format: AudioFormat,
    /// A response is in progress (created, not done).
    in_response: bool,
    /// Events the gateway wrote itself, for their ids.
    events: u64,
}

impl Relay {
    fn event_id(&mut self) -> String {
        self.events += 1;
        format!("event_tg_{}", self.events)
    }
}

impl LiveSession {
    /// A client's frame: judged, measured and relayed as it came, or refused with an `error`
    /// event that never reaches the vendor.
    async fn on_client_frame(
        &mut self,
        relay: &mut Relay,
        message: Message,
        client: &mut ClientSocket,
        upstream: &mut ChannelSocket,
    ) -> Result<(), End> {
        let text = match message {
            Message::Text(text) => text,
            Message::Binary(_) => {
                let id = relay.event_id();
                let refusal = error_event(
                    &id,
                    ErrorType::InvalidRequest,
                    "invalid_json",
                    "Realtime events are JSON text frames; a binary frame is not one",
                    None,
                    None,
                );
                return send(client, refusal).await;
            }
            Message::Close(_) => return Err(End::Client),
            // Pings are answered by the framing; pongs and raw frames carry nothing.
            _ => return Ok(()),
        };
        let event = match client::inspect(text.as_str(), &relay.judged) {
            Ok(event) => event,
            Err(e) => {
                let about = client::event_id(text.as_str());
                let id = relay.event_id();
                let refusal = error_event(
                    &id,
                    ErrorType::InvalidRequest,
                    tollgate_field_error::Rule::code(&e.rule),
                    &e.message,
                    Some(&e.field),
                    about.as_deref(),
                );
                return send(client, refusal).await;
            }
        };
        if let Some(change) = &event.change
            && let Some(format) = change.input_format
        {
            relay.judged.input_format = format;
        }
        let measured = event.measured;
        self.meter.heard(
            relay.judged.input_format.millis(measured.audio_bytes),
            measured.text_bytes,
            measured.images,
        );
        self.cover().await?;
        // The model toward the vendor is the channel's; nothing else of the event changes.
        let forward = if event.kind == ClientKind::SessionUpdate
            && self.entry.upstream_model != self.entry.public
        {
            match server::with_session_model(text.as_str(), &self.entry.upstream_model) {
                Ok(spliced) => Message::text(spliced),
                Err(_) => Message::Text(text),
            }
        } else {
            Message::Text(text)
        };
        match tokio::time::timeout(SLOW_RECEIVER, upstream.send(forward)).await {
            Ok(sent) => sent.map_err(|e| End::Vendor(e.to_string())),
            Err(_) => Err(End::SlowReceiver("the vendor")),
        }
    }

    /// A vendor's frame: vetted, measured, its `response.done` charged, relayed as it came
    /// (the session's model spliced back to the public name).
    async fn on_vendor_frame(
        &mut self,
        relay: &mut Relay,
        message: Message,
        client: &mut ClientSocket,
    ) -> Result<(), End> {
        let text = match message {
            Message::Text(text) => text,
            Message::Close(_) => return Err(End::Vendor("the vendor closed the socket".into())),
            // The Realtime API sends JSON text only; anything else is not relayed.
            _ => return Ok(()),
        };
        let event = match server::inspect(text.as_str()) {
            Ok(event) => event,
            Err(unvetted) => {
                tracing::warn!(session = %self.id, reason = %unvetted.0, "a vendor event was not relayed");
                return Ok(());
            }
        };
        let mut forward = Message::Text(text.clone());
        match event.kind {
            Some(ServerKind::SessionCreated | ServerKind::SessionUpdated) => {
                if let Some(format) = event.output_format {
                    relay.output_format = format;
                }
                if let Some(format) = event.input_format {
                    relay.judged.input_format = format;
                }
                // The session as the vendor states it is input the vendor reads.
                self.meter.heard(0, event.text_bytes, 0);
                if event.model.is_some() {
                    match server::with_session_model(text.as_str(), &self.entry.public) {
                        Ok(spliced) => forward = Message::text(spliced),
                        Err(e) => {
                            tracing::warn!(session = %self.id, reason = %e.0, "a session event was not relayed");
                            return Ok(());
                        }
                    }
                }
            }
            Some(ServerKind::ResponseCreated) => relay.in_response = true,
            Some(ServerKind::AudioDelta) => {
                self.meter
                    .delivered(relay.output_format.millis(event.audio_bytes), 0);
            }
            Some(ServerKind::TextDelta) => self.meter.delivered(0, event.text_bytes),
            Some(ServerKind::ResponseDone) => {
                // Charged first: a client that reads its ledger on `response.done` finds the
                // charge. A refused next step still relays the end of what was delivered.
                relay.in_response = false;
                let charged = self.charge_response(event.usage.as_ref()).await;
                send_message(client, forward).await?;
                return charged;
            }
            _ => {}
        }
        self.cover().await?;
        send_message(client, forward).await
    }

    /// Grows the hold ahead of the response in progress: it always covers what that response
    /// could be charged with half a step to spare, so a frame relayed before the next check
    /// never spends past it. A step refused ends the session (`insufficient_quota`).
    async fn cover(&mut self) -> Result<(), End> {
        let need = self.bound_amount(&self.meter.bound());
        let headroom = Amount::from_nanos(self.step.nanos() / 2);
        let wanted = need.checked_add(headroom).unwrap_or(need);
        if wanted <= self.hold.amount {
            return Ok(());
        }
        let by = wanted
            .checked_sub(self.hold.amount)
            .unwrap_or(Amount::ZERO)
            .max(self.step);
        let step = self.admit_step(by).await?;
        match self
            .state
            .store
            .grow_session_hold(&self.id, &self.hold, by, need)
            .await
        {
            Ok(Step::Held(hold)) => {
                self.hold = hold;
                self.spend.join(step);
                Ok(())
            }
            Ok(Step::Refused(why)) => Err(End::Balance(why.to_string())),
            Ok(Step::Fenced) => Err(End::Fenced),
            Err(e) => Err(End::Store(e.to_string())),
        }
    }

    /// Admits `by` more of the session's hold against the caller's budgets and per-minute
    /// quotas, as so many steps of audio both ways: the limits refuse a session's next step
    /// as they refuse a request.
    async fn admit_step(&self, by: Amount) -> Result<Spend, End> {
        let step = u64::try_from(self.step.nanos()).unwrap_or(0).max(1);
        let steps = u64::try_from(by.nanos()).unwrap_or(0).div_ceil(step).max(1);
        let settings = &self.entry.session;
        let quotas = &self.state.quotas;
        let mut headers = RateHeaders::default();
        let money = quotas
            .admit_spend(
                &self.principal,
                &step_usage(settings, steps),
                by,
                &mut headers,
            )
            .await
            .map_err(End::limit)?;
        let audio = quotas
            .admit_units(&self.principal, &step_audio(settings, steps), &mut headers)
            .await
            .map_err(End::limit)?;
        Ok(Spend::of(money, audio))
    }

    /// The heartbeat: journals what the response in progress could be charged.
    async fn beat(&mut self, relay: &Relay) -> Result<(), End> {
        let unsettled = if relay.in_response {
            self.bound_amount(&self.meter.bound())
        } else {
            Amount::ZERO
        };
        match self
            .state
            .store
            .journal_session(&self.id, &self.hold, unsettled)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(End::Fenced),
            Err(e) => {
                // A database that blips is not a reason to hang up; the sweeper's staleness
                // is the limit.
                tracing::warn!(session = %self.id, error = %e, "a session's heartbeat failed");
                Ok(())
            }
        }
    }

    fn bound_amount(&self, bound: &ResponseBound) -> Amount {
        bound.amount(&self.tariff).unwrap_or(self.hold.amount)
    }

    /// Charges a response that is done: the vendor's claim by class, capped by the bound of
    /// what the gateway relayed; a response the vendor did not report, at that bound.
    async fn charge_response(&mut self, usage: Option<&server::ResponseUsage>) -> Result<(), End> {
        let bound = self.meter.close_response();
        let (settlement, record, classes) = self.settlement(&bound, usage);
        let (charge, audio) = (settlement.actual, self.audio_since_charged());
        self.responses += 1;
        tracing::Span::current().record("responses", self.responses);
        let span = tracing::info_span!(
            "response",
            tollgate.charge = %settlement.actual,
            tollgate.units = record.units,
            estimated = settlement.estimated,
        );
        let settled = self.state.store.settle_response(
            &self.id,
            &self.hold,
            settlement,
            Some(record),
            self.step,
        );
        match tracing::Instrument::instrument(settled, span).await {
            Ok(settled) => match settled.next {
                Step::Held(hold) => {
                    self.spend.settle(&classes, &audio, charge);
                    self.hold = hold;
                    self.spend = self.admit_step(self.step).await?;
                    Ok(())
                }
                Step::Refused(why) => {
                    self.spend.settle(&classes, &audio, charge);
                    Err(End::Balance(why.to_string()))
                }
                Step::Fenced => Err(End::Fenced),
            },
            Err(e) => Err(End::Store(e.to_string())),
        }
    }

    /// The audio relayed both ways since the last response charged, in the whole seconds the
    /// per-minute `audio_seconds` quotas count.
    fn audio_since_charged(&mut self) -> Usage {
        let (heard, spoken) = self.meter.audio_ms();
        let relayed = heard.saturating_add(spoken);
        let since = relayed.saturating_sub(self.audio_charged_ms);
        self.audio_charged_ms = relayed;
        Usage::AudioSeconds(since.div_ceil(1_000))
    }

    /// The settlement and usage record of a response with `bound`, as `usage` claims it.
    fn settlement(
        &self,
        bound: &ResponseBound,
        usage: Option<&server::ResponseUsage>,
    ) -> (Settlement, UsageRecord, Usage) {
        let cap = Bound {
            amount: self.bound_amount(bound),
            basis: "what the session relayed",
        };
        let (classes, measure) = match usage {
            Some(usage) => (claimed(usage, &self.tariff), Measure::Vendor),
            None => (bound.dearest(&self.tariff), Measure::LocalCount),
        };
        let usage = Usage::TokenClasses(classes);
        let quantity = serde_json::to_string(&usage).unwrap_or_default();
        let (actual, anomaly) = cap.charge(&self.tariff, &usage, &quantity);
        let mut settlement = Settlement::new(actual)
            .quantity(quantity.clone())
            .price_group(self.price_group.as_deref().cloned())
            .priced_at(self.price_version, cap.amount, cap.basis)
            .measured(measure);
        if measure == Measure::LocalCount {
            settlement = settlement
                .estimated()
                .note("the vendor reported no usage: charged the bound of what was relayed");
        }
        if let Some(anomaly) = anomaly {
            tracing::warn!(session = %self.id, anomaly, "a response's charge was capped");
            settlement = settlement.anomaly(anomaly);
        }
        let mut record = UsageRecord::new("response", self.hold.account_id.clone(), "realtime");
        record.key_id = Some(self.principal.key_id.clone());
        record.model = Some(self.entry.public.clone());
        record.channel = Some(self.channel.clone());
        record.status = 200;
        record.meter = Some("token_classes".into());
        record.quantity = Some(quantity);
        record.units = classes.total();
        record.charge = actual;
        record.hold = self.hold.amount;
        record.request_id = Some(self.request_id.clone());
        record.estimated = measure == Measure::LocalCount;
        record.note = settlement.note.clone();
        record.price_group = self.price_group.as_ref().map(|g| g.name.clone());
        record.price_version = self.price_version;
        record.measured = Some(measure);
        record.bound_basis = Some(cap.basis.into());
        (settlement, record, usage)
    }

    /// Ends the session exactly once: the response in progress charged as relayed (a response
    /// cut off is charged what it delivered; none in progress releases the hold), the session's
    /// own usage record written, the row closed. Fenced, it changes nothing.
    async fn end(mut self, end: End, in_response: bool) {
        if end == End::Fenced {
            return;
        }
        let last = in_response.then(|| {
            let bound = self.meter.close_response();
            let (settlement, record, classes) = self.settlement(&bound, None);
            let audio = self.audio_since_charged();
            self.spend.settle(&classes, &audio, settlement.actual);
            let settlement = settlement.note(format!(
                "the session ended mid-response ({}): charged the bound of what was relayed",
                end.reason()
            ));
            (settlement, Some(record))
        });
        let (heard, spoken) = self.meter.audio_ms();
        let mut summary = UsageRecord::new("session", self.hold.account_id.clone(), "realtime");
        summary.key_id = Some(self.principal.key_id.clone());
        summary.model = Some(self.entry.public.clone());
        summary.channel = Some(self.channel.clone());
        summary.status = 200;
        summary.request_id = Some(self.request_id.clone());
        summary.note = Some(format!(
            "session {}: {}; audio heard {heard} ms, spoken {spoken} ms",
            self.id,
            end.reason()
        ));
        let closed = self
            .state
            .store
            .close_session(
                &self.id,
                Some(&self.hold),
                last,
                Some(summary),
                &end.reason(),
            )
            .await;
        if let Err(e) = closed {
            tracing::error!(session = %self.id, error = %e, "closing a session failed; the sweeper settles it from its journal");
        }
    }
}

async fn send(client: &mut ClientSocket, event: String) -> Result<(), End> {
    send_message(client, Message::text(event)).await
}

async fn send_message(client: &mut ClientSocket, message: Message) -> Result<(), End> {
    match tokio::time::timeout(SLOW_RECEIVER, client.send(message)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) => Err(End::Client),
        Err(_) => Err(End::SlowReceiver("the client")),
    }
}

/// Settles, every third of the staleness, the sessions whose replica stopped beating (killed,
/// or paused past it) from what they journaled (`tollgate_store::sessions`), on any replica;
/// and prunes client secrets a day past their expiry. Runs for the gateway's life.
pub async fn sweep(state: Arc<State>) {
    let stale = state.realtime.stale_after();
    let mut tick = tokio::time::interval(stale / 3);
    loop {
        tick.tick().await;
        match state.store.sweep_sessions(stale).await {
            Ok(0) => {}
            Ok(swept) => tracing::warn!(swept, "live sessions swept: their replica stopped"),
            Err(e) => tracing::warn!(error = %e, "sweeping stale live sessions failed"),
        }
        if let Err(e) = state
            .store
            .prune_client_secrets(Duration::from_secs(86_400))
            .await
        {
            tracing::warn!(error = %e, "pruning expired client secrets failed");
        }
    }
}
