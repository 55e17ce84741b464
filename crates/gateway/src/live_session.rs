//! A live voice session's relay (docs/decisions.md, "Live voice sessions"): one loop that
//! carries each frame across as it came — judged by the session's [`Protocol`] (OpenAI
//! Realtime's in [`openai`], Gemini Live's in [`gemini`]), measured by the session's meter
//! (`tollgate_metering::session`) — grows the session's hold ahead of what the response in
//! progress could be charged, charges each response its vendor reports done on its own hold,
//! and ends the session exactly once, whichever side ends it.
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
use tollgate_metering::session::{Claim, ResponseBound, SessionMeter};
use tollgate_request::live::LiveSlot;
use tollgate_request::quotas::{Admitted, RateHeaders, StreamPermit};
use tollgate_request::state::State;
use tollgate_settings::catalog::ModelEntry;
use tollgate_settings::config::{RealtimeConfig, SessionSettings};
use tollgate_store::{Hold, PriceGroup, Principal, Settlement, Step, UsageRecord};
use tollgate_upstream::common::websocket::ChannelSocket;

pub mod gemini;
pub mod open;
pub mod openai;

/// What the relay asks of a session's protocol: a file per protocol, each judging its own
/// frames and speaking its own words; the money and the loop are the relay's.
pub trait Protocol: Send {
    /// Judges a client's frame: relayed with what it put in, answered without relaying it,
    /// or the end of the session.
    fn judge_client(&mut self, message: Message) -> FromClient;
    /// Vets a vendor's frame: relayed with what it delivered or claimed, or not relayed.
    fn vet_vendor(&mut self, message: Message) -> FromVendor;
    /// What the client is told before the close, in the protocol's words (OpenAI: an `error`
    /// event; Gemini: `goAway` when the gateway goes, its close's reason otherwise); `told` is
    /// [`End::told`].
    fn farewell(&mut self, end: &End, told: Option<&Told>) -> Option<Message>;
    /// The close frame's reason.
    fn close_reason(&self, end: &End, told: Option<&Told>) -> String;
}

/// A client's frame, judged.
#[derive(Debug)]
pub enum FromClient {
    /// Relay it; it put this into the conversation.
    Relay(Message, Heard),
    /// Not relayed: the client is answered (a refusal the session survives).
    Answer(Message),
    /// Not relayed: the session ends.
    End(End),
    /// Nothing to relay (a ping, a pong).
    Skip,
}

/// A vendor's frame, vetted.
#[derive(Debug)]
pub enum FromVendor {
    /// Relay it; this is what it delivered or claimed.
    Relay(Message, News),
    /// Not relayed: why, when it is worth a warning.
    Skip(Option<String>),
    /// The vendor ended the session.
    End(End),
}

/// What a client's frame put into the conversation, as the gateway measured it.
#[derive(Debug, Clone, Default)]
pub struct Heard {
    /// Milliseconds of audio.
    pub audio_ms: u64,
    /// Bytes of text.
    pub text_bytes: u64,
    /// Images.
    pub images: u64,
    /// The session's input transcription from now on, when the frame sets it: the model it
    /// is charged at (a transcription model served here, the caller's to use), or none.
    pub transcriber: Option<Option<Arc<ModelEntry>>>,
}

/// What a vendor's frame delivered, stated or claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct News {
    /// Bytes of the session as the vendor states it (input it reads).
    pub stated_text: u64,
    /// The response the frame belongs to, as the protocol keys it (`0` where it names none):
    /// responses run side by side are metered apart.
    pub response: u64,
    /// A response began.
    pub started: bool,
    /// Milliseconds of audio the response delivered.
    pub delivered_audio_ms: u64,
    /// Bytes of text (and tool calls) the response delivered.
    pub delivered_text_bytes: u64,
    /// The response is done (and charged now).
    pub done: bool,
    /// Its usage as the vendor claims it.
    pub claim: Option<Claim>,
    /// An input transcription is done (and charged now, at the transcription model's price):
    /// the milliseconds of audio the vendor says it transcribed, when it says.
    pub transcribed: Option<Option<u64>>,
}

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
    /// The endpoint's label for its usage records (`realtime`, `live`).
    pub endpoint: &'static str,
    /// The input transcription's model and price, while the session transcribes.
    pub transcriber: Option<Transcriber>,
    /// Milliseconds of audio heard when the last transcription was charged.
    pub transcribed_ms: u64,
}

/// A session's input transcription: charged at its own model's price, by the seconds of
/// audio transcribed, never more than the session heard since the last one.
#[derive(Debug, Clone)]
pub struct Transcriber {
    /// The transcription model.
    pub entry: Arc<ModelEntry>,
    /// Its tariff as the caller pays it.
    pub tariff: Tariff,
    /// The caller's price group, for the ledger row.
    pub price_group: Option<Arc<PriceGroup>>,
    /// The price version.
    pub price_version: Option<i64>,
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
pub enum End {
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
    /// The client sent a message its protocol refuses by closing (Gemini Live): the rule, in
    /// its words.
    Refused(String),
}

/// Who is to blame for an end, as a protocol's error words say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The client's request broke a rule.
    Request,
    /// The caller cannot pay: the balance, a budget.
    Quota,
    /// A rate of the key.
    Rate,
    /// The gateway or the vendor.
    Server,
}

/// What the client is told of an end: who is to blame, a code, a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    /// Who is to blame.
    pub blame: Blame,
    /// A machine-readable code (`insufficient_quota`, …).
    pub code: &'static str,
    /// A sentence for the user.
    pub message: String,
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
            End::Refused(why) => format!("a client message was refused: {why}"),
        }
    }

    /// What the client is told before the close, when it is not the one who ended the
    /// session.
    pub fn told(&self) -> Option<Told> {
        let (blame, code, message) = match self {
            End::Client => return None,
            End::Vendor(_) => (
                Blame::Server,
                "upstream_closed",
                "The vendor ended the session; what was delivered is charged.".into(),
            ),
            End::Balance(why) => (
                Blame::Quota,
                "insufficient_quota",
                format!(
                    "The session ended: the balance cannot cover its next step ({why}). What was delivered is charged."
                ),
            ),
            End::Limit { rate, message } => (
                if *rate { Blame::Rate } else { Blame::Quota },
                if *rate {
                    "rate_limit_exceeded"
                } else {
                    "insufficient_quota"
                },
                format!("The session ended: {message}. What was delivered is charged."),
            ),
            End::Fenced | End::Store(_) => (
                Blame::Server,
                "billing_unavailable",
                "The session ended: it could not be billed. What was delivered is charged once."
                    .into(),
            ),
            End::Drained => (
                Blame::Server,
                "server_shutting_down",
                "The gateway is restarting: reconnect to go on. What was delivered is charged."
                    .into(),
            ),
            End::TooLong(seconds) => (
                Blame::Request,
                "session_expired",
                format!("Your session hit the maximum duration of {seconds} seconds."),
            ),
            End::Idle(seconds) => (
                Blame::Request,
                "session_idle",
                format!("The session ended after {seconds} seconds without an event either way."),
            ),
            End::SlowReceiver(who) => (
                Blame::Server,
                "slow_receiver",
                format!(
                    "The session ended: {who} took no event for {} seconds.",
                    SLOW_RECEIVER.as_secs()
                ),
            ),
            End::FrameTooLarge(limit) => (
                Blame::Request,
                "frame_too_large",
                format!("A frame may hold at most {limit} bytes; the session ended."),
            ),
            End::Refused(why) => (Blame::Request, "invalid_message", why.clone()),
        };
        Some(Told {
            blame,
            code,
            message,
        })
    }

    /// The close frame's code.
    pub fn close_code(&self) -> CloseCode {
        match self {
            End::Client | End::TooLong(_) | End::Idle(_) => CloseCode::Normal,
            End::Balance(_) | End::Limit { .. } => CloseCode::Policy,
            End::Drained => CloseCode::Away,
            End::FrameTooLarge(_) => CloseCode::Size,
            End::Refused(_) => CloseCode::Invalid,
            End::Vendor(_) | End::Fenced | End::Store(_) | End::SlowReceiver(_) => CloseCode::Error,
        }
    }
}

/// The client's side of a session.
pub type ClientSocket = WebSocketStream<TokioIo<Upgraded>>;

/// The client's socket, once its upgrade completes.
pub async fn accept(upgrade: OnUpgrade, max_frame: usize) -> Result<ClientSocket, hyper::Error> {
    let upgraded = upgrade.await?;
    let config = socket_config(max_frame);
    Ok(WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await)
}

/// Relays the session on the client's upgrade until one side ends it, then settles it.
pub async fn run(
    session: LiveSession,
    protocol: Box<dyn Protocol>,
    upgrade: OnUpgrade,
    mut upstream: ChannelSocket,
) {
    match accept(upgrade, session.limits.max_frame_bytes).await {
        Ok(client) => relay(session, protocol, client, None, upstream).await,
        Err(e) => {
            tracing::warn!(session = %session.id, error = %e, "the client's upgrade failed");
            let _ = upstream.close(None).await;
            session.end(End::Client).await;
        }
    }
}

/// Relays the session on the client's socket until one side ends it, then settles it. `first`
/// is a frame the client sent before the session was opened (Gemini Live's `setup`, which
/// names the model), relayed first.
pub async fn relay(
    mut session: LiveSession,
    mut protocol: Box<dyn Protocol>,
    mut client: ClientSocket,
    first: Option<Message>,
    mut upstream: ChannelSocket,
) {
    let started = Instant::now();
    let mut heartbeat = tokio::time::interval(session.limits.heartbeat());
    heartbeat.tick().await;
    let mut drain = session.live.drain_signal();
    let longest = session.limits.max_session_seconds;
    let deadline = tokio::time::sleep(Duration::from_secs(longest));
    tokio::pin!(deadline);
    let idle = Duration::from_secs(session.limits.idle_timeout_seconds);
    let mut last_frame = Instant::now();
    let opened = match first {
        Some(first) => {
            let judged = protocol.judge_client(first);
            session
                .on_client_frame(judged, &mut client, &mut upstream)
                .await
        }
        None => Ok(()),
    };
    let end = if let Err(end) = opened {
        end
    } else {
        loop {
            tokio::select! {
                frame = client.next() => match frame {
                    Some(Ok(message)) => {
                        last_frame = Instant::now();
                        let judged = protocol.judge_client(message);
                        if let Err(end) = session.on_client_frame(judged, &mut client, &mut upstream).await {
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
                        let vetted = protocol.vet_vendor(message);
                        if let Err(end) = session.on_vendor_frame(vetted, &mut client).await {
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
                    if let Err(end) = Box::pin(session.beat()).await {
                        break end;
                    }
                }
                () = &mut deadline => break End::TooLong(longest),
                // The borrow the wait returns is dropped at once (it is not `Send`).
                () = async { drop(drain.wait_for(|drains| *drains).await) } => break End::Drained,
            }
        }
    };
    tracing::info!(session = %session.id, reason = %end.reason(), seconds = started.elapsed().as_secs(), "live session ended");
    // Why, in the protocol's own words, before the close; both sockets closed.
    let told = end.told();
    if let Some(farewell) = protocol.farewell(&end, told.as_ref()) {
        let _ = send_message(&mut client, farewell).await;
    }
    let close = CloseFrame {
        code: end.close_code(),
        reason: protocol.close_reason(&end, told.as_ref()).into(),
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), upstream.close(None)).await;
    close_client(&mut client, close).await;
    Box::pin(session.end(end)).await;
}

/// Closes the client's socket as RFC 6455 §7.1.1 asks: the close frame sent, then what the
/// client still sends read and dropped until its close answers (2 s at most) — a socket shut
/// with unread frames in it is reset by the kernel, and the client would lose the reason.
pub async fn close_client(client: &mut ClientSocket, close: CloseFrame) {
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        if client.send(Message::Close(Some(close))).await.is_err() {
            return;
        }
        while let Some(Ok(_)) = client.next().await {}
    })
    .await;
}

impl LiveSession {
    /// A span for the session's life (its model, channel and the responses charged), under
    /// the upgrade's request span; a child per response.
    pub fn span(&self) -> tracing::Span {
        tracing::info_span!(
            "live_session",
            session = %self.id,
            gen_ai.request.model = %self.entry.public,
            tollgate.channel = %self.channel,
            responses = tracing::field::Empty,
        )
    }

    /// A client's frame, judged: measured and relayed as it came, answered, or the end.
    async fn on_client_frame(
        &mut self,
        judged: FromClient,
        client: &mut ClientSocket,
        upstream: &mut ChannelSocket,
    ) -> Result<(), End> {
        let (forward, heard) = match judged {
            FromClient::Relay(forward, heard) => (forward, heard),
            FromClient::Answer(answer) => return send_message(client, answer).await,
            FromClient::End(end) => return Err(end),
            FromClient::Skip => return Ok(()),
        };
        self.meter
            .heard(heard.audio_ms, heard.text_bytes, heard.images);
        if let Some(transcriber) = heard.transcriber {
            self.transcribe_with(transcriber)?;
        }
        self.cover().await?;
        match tokio::time::timeout(SLOW_RECEIVER, upstream.send(forward)).await {
            Ok(sent) => sent.map_err(|e| End::Vendor(e.to_string())),
            Err(_) => Err(End::SlowReceiver("the vendor")),
        }
    }

    /// A vendor's frame, vetted: measured, its response charged when done, relayed as it came.
    async fn on_vendor_frame(
        &mut self,
        vetted: FromVendor,
        client: &mut ClientSocket,
    ) -> Result<(), End> {
        let (forward, news) = match vetted {
            FromVendor::Relay(forward, news) => (forward, news),
            FromVendor::Skip(Some(why)) => {
                tracing::warn!(session = %self.id, reason = %why, "a vendor event was not relayed");
                return Ok(());
            }
            FromVendor::Skip(None) => return Ok(()),
            FromVendor::End(end) => return Err(end),
        };
        self.meter.heard(0, news.stated_text, 0);
        if news.started {
            self.meter.started(news.response);
        }
        if news.delivered_audio_ms > 0 || news.delivered_text_bytes > 0 {
            self.meter.delivered(
                news.response,
                news.delivered_audio_ms,
                news.delivered_text_bytes,
            );
        }
        if let Some(claimed_ms) = news.transcribed {
            let charged = Box::pin(self.charge_transcription(claimed_ms)).await;
            send_message(client, forward).await?;
            return charged;
        }
        if news.done {
            // Charged first: a client that reads its ledger on `response.done` finds the
            // charge. A refused next step still relays the end of what was delivered.
            let charged = Box::pin(self.charge_response(news.response, news.claim.as_ref())).await;
            send_message(client, forward).await?;
            return charged;
        }
        self.cover().await?;
        send_message(client, forward).await
    }

    /// Grows the hold ahead of the response in progress: it always covers what that response
    /// could be charged with half a step to spare, so a frame relayed before the next check
    /// never spends past it. A step refused ends the session (`insufficient_quota`).
    async fn cover(&mut self) -> Result<(), End> {
        let response = self.bound_amount(&self.meter.bound());
        let need = response
            .checked_add(self.transcription_bound().0)
            .unwrap_or(response);
        let headroom = Amount::from_nanos(self.step.nanos() / 2);
        let wanted = need.checked_add(headroom).unwrap_or(need);
        if wanted <= self.hold.amount {
            return Ok(());
        }
        let by = wanted
            .checked_sub(self.hold.amount)
            .unwrap_or(Amount::ZERO)
            .max(self.step);
        // Boxed, here and on the other money paths: a step, a charge or a beat is rare beside
        // the frames, and its futures (the store's, the quotas') would otherwise be carried in
        // every session's state for its whole life (docs/benchmarks.md, memory per session).
        Box::pin(self.grow(by, need)).await
    }

    /// Grows the hold by `by` (at least a step), admitted against the caller's limits first.
    async fn grow(&mut self, by: Amount, need: Amount) -> Result<(), End> {
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
    async fn beat(&mut self) -> Result<(), End> {
        let unsettled = if self.meter.responding() {
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
    async fn charge_response(&mut self, response: u64, claim: Option<&Claim>) -> Result<(), End> {
        let bound = self.meter.close_response(response);
        let (settlement, record, classes) = self.settlement(&bound, claim);
        let audio = self.audio_since_charged();
        self.responses += 1;
        tracing::Span::current().record("responses", self.responses);
        let span = tracing::info_span!(
            "response",
            tollgate.charge = %settlement.actual,
            tollgate.units = record.units,
            estimated = settlement.estimated,
        );
        let settled = self.settle_on_hold(settlement, record, &classes, &audio);
        tracing::Instrument::instrument(settled, span).await?;
        // Another response still runs (out of band): the new hold covers it at once, so its
        // journal is never more than the hold.
        if self.meter.responding() {
            self.cover().await?;
        }
        Ok(())
    }

    /// Settles `settlement` on the session's hold and places the next: the caller's limits
    /// trued up with `charge` (and the units of `classes` and `audio`), the next step admitted.
    async fn settle_on_hold(
        &mut self,
        settlement: Settlement,
        record: UsageRecord,
        classes: &Usage,
        audio: &Usage,
    ) -> Result<(), End> {
        let charge = settlement.actual;
        let settled = self
            .state
            .store
            .settle_response(&self.id, &self.hold, settlement, Some(record), self.step)
            .await;
        match settled {
            Ok(settled) => match settled.next {
                Step::Held(hold) => {
                    self.spend.settle(classes, audio, charge);
                    self.hold = hold;
                    self.spend = self.admit_step(self.step).await?;
                    Ok(())
                }
                Step::Refused(why) => {
                    self.spend.settle(classes, audio, charge);
                    Err(End::Balance(why.to_string()))
                }
                Step::Fenced => Err(End::Fenced),
            },
            Err(e) => Err(End::Store(e.to_string())),
        }
    }

    /// Sets (or ends) the session's input transcription: priced for this caller from now on.
    fn transcribe_with(&mut self, transcriber: Option<Arc<ModelEntry>>) -> Result<(), End> {
        let Some(entry) = transcriber else {
            self.transcriber = None;
            return Ok(());
        };
        let price = self.state.prices.at(
            &entry.public,
            &entry.tariff,
            tollgate_journal::clock::now_millis(),
        );
        let (tariff, price_group) =
            crate::hold::priced(&self.principal, &entry.public, &price.tariff)
                .map_err(|e| End::Store(e.message))?;
        self.transcriber = Some(Transcriber {
            entry,
            tariff,
            price_group,
            price_version: price.version,
        });
        Ok(())
    }

    /// The most the transcription of what was heard since the last one may be charged, and
    /// those seconds (nothing while the session does not transcribe).
    fn transcription_bound(&self) -> (Amount, Usage) {
        let (heard, _) = self.meter.audio_ms();
        let seconds =
            Usage::AudioSeconds(heard.saturating_sub(self.transcribed_ms).div_ceil(1_000));
        let amount = self
            .transcriber
            .as_ref()
            .and_then(|t| t.tariff.charge(&seconds).ok())
            .unwrap_or(Amount::ZERO);
        (amount, seconds)
    }

    /// Charges an input transcription at its model's price: the seconds the vendor says it
    /// transcribed, capped by the seconds the session heard since the last one; those when
    /// it does not say. A transcription the session never asked for is not charged (the
    /// vendor started it; the gateway cannot price it) and is logged.
    async fn charge_transcription(&mut self, claimed_ms: Option<u64>) -> Result<(), End> {
        let (cap_amount, heard) = self.transcription_bound();
        self.transcribed_ms = self.meter.audio_ms().0;
        let Some(t) = self.transcriber.clone() else {
            tracing::warn!(session = %self.id, "a transcription the session did not ask for was not charged");
            return Ok(());
        };
        let cap = Bound {
            amount: cap_amount,
            basis: "the audio the session heard",
        };
        let (usage, measure) = match claimed_ms {
            Some(ms) => (Usage::AudioSeconds(ms.div_ceil(1_000)), Measure::Vendor),
            None => (heard, Measure::LocalCount),
        };
        let settlement = capped(
            &self.id,
            cap,
            (&t.tariff, t.price_group.as_deref(), t.price_version),
            &usage,
            measure,
            "the vendor said no duration: charged the seconds the session heard",
        )
        .for_model(t.entry.public.clone());
        let record = self.charge_record(
            "transcription",
            &t.entry.public,
            "audio_seconds",
            usage.units(),
            &settlement,
        );
        // Money only: the session's audio counts in the per-minute quotas with its responses.
        let none = Usage::AudioSeconds(0);
        self.settle_on_hold(settlement, record, &none, &none).await
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
        claim: Option<&Claim>,
    ) -> (Settlement, UsageRecord, Usage) {
        let cap = Bound {
            amount: self.bound_amount(bound),
            basis: "what the session relayed",
        };
        let (classes, measure) = match claim {
            Some(claim) => (claim.classes(&self.tariff), Measure::Vendor),
            None => (bound.dearest(&self.tariff), Measure::LocalCount),
        };
        let usage = Usage::TokenClasses(classes);
        let settlement = capped(
            &self.id,
            cap,
            (
                &self.tariff,
                self.price_group.as_deref(),
                self.price_version,
            ),
            &usage,
            measure,
            "the vendor reported no usage: charged the bound of what was relayed",
        );
        let record = self.charge_record(
            "response",
            &self.entry.public,
            "token_classes",
            classes.total(),
            &settlement,
        );
        (settlement, record, usage)
    }

    /// A usage record of the session's: who, what, where.
    fn record(&self, kind: &'static str, model: &str) -> UsageRecord {
        let mut record = UsageRecord::new(kind, self.hold.account_id.clone(), self.endpoint);
        record.key_id = Some(self.principal.key_id.clone());
        record.model = Some(model.to_owned());
        record.channel = Some(self.channel.clone());
        record.status = 200;
        record.request_id = Some(self.request_id.clone());
        record
    }

    /// The usage record of a charge on the session's hold, as its settlement states it.
    fn charge_record(
        &self,
        kind: &'static str,
        model: &str,
        meter: &str,
        units: u64,
        settlement: &Settlement,
    ) -> UsageRecord {
        let mut record = self.record(kind, model);
        record.meter = Some(meter.into());
        record.quantity = settlement.quantity.clone();
        record.units = units;
        record.charge = settlement.actual;
        record.hold = self.hold.amount;
        record.estimated = settlement.estimated;
        record.note = settlement.note.clone();
        record.price_group = settlement.price_group.as_ref().map(|g| g.name.clone());
        record.price_version = settlement.price_version;
        record.measured = Some(settlement.measured);
        record.bound_basis = settlement.bound_basis.clone();
        record
    }

    /// Ends the session exactly once: the responses in progress charged as relayed, together
    /// (a response cut off is charged what it delivered; none in progress releases the hold), the session's
    /// own usage record written, the row closed. Fenced, it changes nothing.
    async fn end(mut self, end: End) {
        if end == End::Fenced {
            return;
        }
        let last = self.meter.responding().then(|| {
            let bound = self.meter.close_all();
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
        let mut summary = self.record("session", &self.entry.public);
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

/// A session's charge of `usage` at `priced` (the caller's tariff, price group and version),
/// never past `cap`: as the ledger keeps it — its quantity, how it was measured (estimated,
/// saying `locally` why, when the gateway measured it), and the anomaly when the cap cut a
/// vendor's figure.
fn capped(
    session: &str,
    cap: Bound,
    priced: (&Tariff, Option<&PriceGroup>, Option<i64>),
    usage: &Usage,
    measure: Measure,
    locally: &'static str,
) -> Settlement {
    let (tariff, group, version) = priced;
    let quantity = serde_json::to_string(usage).unwrap_or_default();
    let (actual, anomaly) = cap.charge(tariff, usage, &quantity);
    let mut settlement = Settlement::new(actual)
        .quantity(quantity)
        .price_group(group.cloned())
        .priced_at(version, cap.amount, cap.basis)
        .measured(measure);
    if measure == Measure::LocalCount {
        settlement = settlement.estimated().note(locally);
    }
    if let Some(anomaly) = anomaly {
        tracing::warn!(session, anomaly, "a session's charge was capped");
        settlement = settlement.anomaly(anomaly);
    }
    settlement
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
