//! Rate limits and spend caps (`docs/decisions.md`, "Rate limits and spend caps"): the driver of
//! the sans-IO windowed quotas (`tollgate_ledger::quota`). Each account and key whose policy
//! sets limits has, per quota, a counter in memory served from slices the database grants, so a
//! request costs no round trip until its replica's slice runs out; concurrency is counted in
//! memory.
//!
//! A request is admitted twice: when it is authenticated (requests per minute, concurrency —
//! [`Quotas::admit_request`]) and when its hold is placed (per-minute units of its meter, daily
//! and monthly spend — [`Quotas::admit_spend`]). Each admission is an owned [`Admitted`] that
//! gives back on drop what a request that was not charged did not use, and is trued up by the
//! settlement ([`Admitted::settle`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tollgate_billing::{Amount, Meter, Usage};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_journal::clock::{civil_from_days, days_from_civil, now_millis_unsigned};
use tollgate_ledger::quota::{Admission, Quota, SliceAsk, Window};
use tollgate_store::{AccessPolicy, Principal, Store};

/// What a windowed quota counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaName {
    /// Billable requests per minute.
    Requests,
    /// Units of a meter per minute.
    Units(Meter),
    /// Images asked for per minute (`per_minute.images`): counted when a request asks, given
    /// back if it is not charged (docs/decisions.md, "Images").
    Images,
    /// Money (nano-units) per UTC day.
    SpendDay,
    /// Money (nano-units) per UTC calendar month.
    SpendMonth,
}

impl QuotaName {
    /// Its name in the database and in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaName::Requests => "requests",
            QuotaName::Units(meter) => meter.as_str(),
            QuotaName::Images => IMAGES,
            QuotaName::SpendDay => "spend_day",
            QuotaName::SpendMonth => "spend_month",
        }
    }

    /// The window `now` (Unix ms) falls in.
    pub fn window(self, now: u64) -> Window {
        match self {
            QuotaName::Requests | QuotaName::Units(_) | QuotaName::Images => {
                let start = now - now % 60_000;
                Window {
                    start,
                    end: start + 60_000,
                }
            }
            QuotaName::SpendDay => {
                let start = now - now % 86_400_000;
                Window {
                    start,
                    end: start + 86_400_000,
                }
            }
            QuotaName::SpendMonth => {
                let days = i64::try_from(now / 86_400_000).unwrap_or(0);
                let (year, month, _) = civil_from_days(days);
                let (next_year, next_month) = if month == 12 {
                    (year + 1, 1)
                } else {
                    (year, month + 1)
                };
                let day_ms = |d: i64| u64::try_from(d).unwrap_or(0) * 86_400_000;
                Window {
                    start: day_ms(days_from_civil(year, month, 1)),
                    end: day_ms(days_from_civil(next_year, next_month, 1)),
                }
            }
        }
    }

    /// Whether a refusal is a rate limit (retry after the window) or a spend cap (a quota).
    fn is_spend(self) -> bool {
        matches!(self, QuotaName::SpendDay | QuotaName::SpendMonth)
    }
}

/// The quotas of one replica. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Quotas {
    core: Arc<Core>,
}

#[derive(Debug)]
struct Core {
    store: Store,
    counters: Mutex<Counters>,
    /// Wakes requests waiting for another request's slice answer.
    answered: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Counters {
    /// By holder (`acct_…`, `key_…`): looked up by `&str`, no allocation per request.
    holders: HashMap<Arc<str>, Holder>,
    /// Refusals by limit (a quota's name, or `concurrency`), for `/metrics`.
    refusals: std::collections::BTreeMap<&'static str, u64>,
}

/// One holder's counters on this replica.
#[derive(Debug, Default)]
struct Holder {
    /// Its quotas (a handful: a linear search beats hashing).
    quotas: Vec<(QuotaName, Quota)>,
    /// Slots held now: requests in flight, streams open.
    open: [u32; 2],
}

/// A counted slot, held for as long as what it counts lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// A billable request in flight (`concurrency`).
    Request,
    /// A streamed answer open (`streams`).
    Stream,
}

impl Slot {
    fn index(self) -> usize {
        match self {
            Slot::Request => 0,
            Slot::Stream => 1,
        }
    }

    /// Its limit in `policy`.
    fn limit(self, policy: &AccessPolicy) -> Option<u32> {
        match self {
            Slot::Request => policy.concurrency,
            Slot::Stream => policy.streams,
        }
    }

    /// Its name in metrics, and what a refusal says is too many.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Slot::Request => ("concurrency", "requests in flight"),
            Slot::Stream => ("streams", "streams open"),
        }
    }
}

impl Holder {
    fn quota(&mut self, name: QuotaName, limit: u64) -> &mut Quota {
        let at = match self.quotas.iter().position(|(n, _)| *n == name) {
            Some(at) => at,
            None => {
                self.quotas.push((name, Quota::new(limit)));
                self.quotas.len() - 1
            }
        };
        &mut self.quotas[at].1
    }
}

impl Counters {
    fn holder(&mut self, holder: &Arc<str>) -> &mut Holder {
        self.holders.entry(holder.clone()).or_default()
    }

    fn quota(&mut self, holder: &str, name: QuotaName) -> Option<&mut Quota> {
        let h = self.holders.get_mut(holder)?;
        h.quotas
            .iter_mut()
            .find(|(n, _)| *n == name)
            .map(|(_, q)| q)
    }
}

/// One quota's share of an admission.
#[derive(Debug)]
struct Taken {
    holder: Arc<str>,
    name: QuotaName,
    window: Window,
    units: u64,
}

/// The per-minute quota of images asked (`per_minute.images`), beside the meters' names: the
/// name of the images meter too (`Meter::Images`, Imagen's), whose units it counts.
pub const IMAGES: &str = "images";

/// What one admission holds: units of windowed quotas and concurrency slots. Dropped without
/// [`Admitted::settle`], it gives back the units of use-based quotas (the request was not
/// charged) and always the concurrency slots — so every exit of a request, cancellation
/// included, releases what it held.
#[derive(Debug)]
pub struct Admitted {
    core: Arc<Core>,
    taken: Vec<Taken>,
    slots: Vec<(Arc<str>, Slot)>,
    /// The request went ahead: its requests stay counted when it ends. An admission refused
    /// half-way gives back even the requests it took.
    committed: bool,
    /// For the response's rate-limit headers.
    pub headers: RateHeaders,
}

/// Leave to open one client stream, from [`Quotas::admit_stream`]: it holds the stream's slots
/// of the open-streams limits, released when the stream's sender — which owns the permit —
/// is dropped at the stream's end (`tollgate_gateway::stream_body`).
#[derive(Debug)]
pub struct StreamPermit {
    _slots: Option<Admitted>,
}

/// The `x-ratelimit-*` figures of the tightest limit of each kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateHeaders {
    /// Requests per minute: limit, remaining, milliseconds to the reset.
    pub requests: Option<(u64, u64, u64)>,
    /// Tokens per minute: limit, remaining, milliseconds to the reset.
    pub tokens: Option<(u64, u64, u64)>,
}

impl RateHeaders {
    fn note(slot: &mut Option<(u64, u64, u64)>, figure: (u64, u64, u64)) {
        if slot.is_none_or(|(_, remaining, _)| figure.1 < remaining) {
            *slot = Some(figure);
        }
    }

    /// Notes `figure` for a quota the headers report (requests; tokens, text tokens and
    /// tokens by class).
    fn note_quota(&mut self, name: QuotaName, figure: (u64, u64, u64)) {
        match name {
            QuotaName::Requests => Self::note(&mut self.requests, figure),
            QuotaName::Units(Meter::Tokens | Meter::TextTokens | Meter::TokenClasses) => {
                Self::note(&mut self.tokens, figure);
            }
            _ => {}
        }
    }

    /// Both sets merged, the tighter of each kind kept.
    pub fn merge(&mut self, other: &RateHeaders) {
        if let Some(r) = other.requests {
            Self::note(&mut self.requests, r);
        }
        if let Some(t) = other.tokens {
            Self::note(&mut self.tokens, t);
        }
    }

    /// The headers, with OpenAI's spelling of a duration (`"1m30s"`, `"250ms"`).
    pub fn render(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (kind, figure) in [("requests", self.requests), ("tokens", self.tokens)] {
            let Some((limit, remaining, reset_ms)) = figure else {
                continue;
            };
            let (limit_name, remaining_name, reset_name) = match kind {
                "requests" => (
                    "x-ratelimit-limit-requests",
                    "x-ratelimit-remaining-requests",
                    "x-ratelimit-reset-requests",
                ),
                _ => (
                    "x-ratelimit-limit-tokens",
                    "x-ratelimit-remaining-tokens",
                    "x-ratelimit-reset-tokens",
                ),
            };
            out.push((limit_name, limit.to_string()));
            out.push((remaining_name, remaining.to_string()));
            out.push((reset_name, duration_text(reset_ms)));
        }
        out
    }
}

/// OpenAI's duration spelling: `"250ms"`, `"12s"`, `"1m30s"`, `"23h59m0s"`.
pub fn duration_text(ms: u64) -> String {
    if ms < 1_000 {
        return format!("{ms}ms");
    }
    let s = ms.div_ceil(1_000);
    match (s / 3_600, s % 3_600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, min, sec) => format!("{min}m{sec}s"),
        (h, min, sec) => format!("{h}h{min}m{sec}s"),
    }
}

impl Core {
    fn lock(&self) -> MutexGuard<'_, Counters> {
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Why a quota refused.
struct Refused {
    name: QuotaName,
    limit: u64,
    reset_at: u64,
}

impl Quotas {
    /// The quotas of a replica on `store`.
    pub fn new(store: Store) -> Quotas {
        Quotas {
            core: Arc::new(Core {
                store,
                counters: Mutex::new(Counters::default()),
                answered: tokio::sync::Notify::new(),
            }),
        }
    }

    fn empty(&self) -> Admitted {
        Admitted {
            core: self.core.clone(),
            taken: Vec::new(),
            slots: Vec::new(),
            committed: false,
            headers: RateHeaders::default(),
        }
    }

    /// Admits a billable request at authentication: a concurrency slot and one request of the
    /// per-minute rate, for the account and for the key. `None` when neither limits. The
    /// rate-limit figures, of an admission or a refusal, go to `headers`.
    pub async fn admit_request(
        &self,
        principal: &Principal,
        headers: &mut RateHeaders,
    ) -> Result<Option<Admitted>, ApiError> {
        if principal.limited_by.is_empty() {
            return Ok(None);
        }
        let mut admitted = self.empty();
        let result = self.admit_request_into(principal, &mut admitted).await;
        headers.merge(&admitted.headers);
        result?;
        admitted.committed = true;
        Ok(Some(admitted))
    }

    async fn admit_request_into(
        &self,
        principal: &Principal,
        admitted: &mut Admitted,
    ) -> Result<(), ApiError> {
        for (holder, policy) in principal.limited_by.iter() {
            self.take_slot(admitted, holder, policy, Slot::Request)?;
            if let Some(rpm) = policy.rpm {
                self.take(admitted, holder, QuotaName::Requests, rpm, 1)
                    .await?;
            }
        }
        Ok(())
    }

    /// Admits a streamed answer about to be opened: one of the open streams each holder with a
    /// limit in `limited_by` allows (none: a permit that holds nothing). The only way to a
    /// [`StreamPermit`], without which no client stream can be opened
    /// (`tollgate_gateway::stream_body::channel`).
    pub fn admit_stream(
        &self,
        limited_by: Option<&[(Arc<str>, AccessPolicy)]>,
    ) -> Result<StreamPermit, ApiError> {
        let mut admitted = self.empty();
        for (holder, policy) in limited_by.unwrap_or_default() {
            self.take_slot(&mut admitted, holder, policy, Slot::Stream)?;
        }
        admitted.committed = true;
        Ok(StreamPermit {
            _slots: (!admitted.slots.is_empty()).then_some(admitted),
        })
    }

    /// Takes one of `holder`'s `slot`s into `admitted`, if its policy limits them.
    fn take_slot(
        &self,
        admitted: &mut Admitted,
        holder: &Arc<str>,
        policy: &AccessPolicy,
        slot: Slot,
    ) -> Result<(), ApiError> {
        let Some(limit) = slot.limit(policy) else {
            return Ok(());
        };
        let mut counters = self.core.lock();
        let (metric, what) = slot.names();
        let open = &mut counters.holder(holder).open[slot.index()];
        if *open >= limit {
            *counters.refusals.entry(metric).or_default() += 1;
            return Err(ApiError::too_many(what, holder_kind(holder), limit, "", 1));
        }
        *open += 1;
        admitted.slots.push((holder.clone(), slot));
        Ok(())
    }

    /// Admits a request's spending when its hold is placed: `estimate` units of its meter per
    /// minute and `hold` of the daily and monthly budgets. `None` when nothing limits it.
    pub async fn admit_spend(
        &self,
        principal: &Principal,
        estimate: &Usage,
        hold: Amount,
        headers: &mut RateHeaders,
    ) -> Result<Option<Admitted>, ApiError> {
        if principal.limited_by.is_empty() {
            return Ok(None);
        }
        let mut admitted = self.empty();
        let meter = estimate.meter();
        let spend = u64::try_from(hold.nanos()).unwrap_or(0);
        let mut result = Ok(());
        'holders: for (holder, policy) in principal.limited_by.iter() {
            for (name, limit, units) in spend_quotas(policy, meter, estimate.units(), spend) {
                result = self.take(&mut admitted, holder, name, limit, units).await;
                if result.is_err() {
                    break 'holders;
                }
            }
        }
        headers.merge(&admitted.headers);
        result?;
        admitted.committed = true;
        Ok((!admitted.taken.is_empty()).then_some(admitted))
    }

    /// Admits `usage` on its meter's per-minute quotas alone, money aside: the audio seconds a
    /// live session's step may relay, counted with the recognition endpoints' (docs/decisions.md,
    /// "Live voice sessions"). `None` when nothing limits it.
    pub async fn admit_units(
        &self,
        principal: &Principal,
        usage: &Usage,
        headers: &mut RateHeaders,
    ) -> Result<Option<Admitted>, ApiError> {
        let meter = usage.meter();
        self.admit_per_minute(principal, QuotaName::Units(meter), usage.units(), headers)
            .await
    }

    /// Admits a request for `images` images on the images-per-minute quotas
    /// (`per_minute.images`) of the caller's key and account. `None` when nothing limits it.
    /// Dropped without being settled (the request was not charged), the images are given back.
    pub async fn admit_images(
        &self,
        principal: &Principal,
        images: u64,
        headers: &mut RateHeaders,
    ) -> Result<Option<Admitted>, ApiError> {
        self.admit_per_minute(principal, QuotaName::Images, images, headers)
            .await
    }

    /// Takes `units` of the per-minute quota `name` (`per_minute.<name>`) of each of the
    /// caller's holders that sets one.
    async fn admit_per_minute(
        &self,
        principal: &Principal,
        name: QuotaName,
        units: u64,
        headers: &mut RateHeaders,
    ) -> Result<Option<Admitted>, ApiError> {
        let mut admitted = self.empty();
        let mut result = Ok(());
        for (holder, policy) in principal.limited_by.iter() {
            let Some(limit) = policy
                .per_minute
                .as_ref()
                .and_then(|m| m.get(name.as_str()))
            else {
                continue;
            };
            result = self.take(&mut admitted, holder, name, *limit, units).await;
            if result.is_err() {
                break;
            }
        }
        headers.merge(&admitted.headers);
        result?;
        admitted.committed = true;
        Ok((!admitted.taken.is_empty()).then_some(admitted))
    }

    /// Takes `units` of `holder`'s quota `name` into `admitted`, asking the database for a slice
    /// when the replica has too little in hand.
    async fn take(
        &self,
        admitted: &mut Admitted,
        holder: &Arc<str>,
        name: QuotaName,
        limit: u64,
        units: u64,
    ) -> Result<(), ApiError> {
        loop {
            let now = now_millis_unsigned();
            let window = name.window(now);
            // Registered before the decision, so an answer between the two is not missed.
            let answered = self.core.answered.notified();
            let decision = {
                let mut counters = self.core.lock();
                let quota = counters.holder(holder).quota(name, limit);
                if quota.limit() != limit {
                    quota.set_limit(limit);
                }
                let decision = quota.admit(units, window);
                if matches!(decision, Admission::Admitted) {
                    let figure = (limit, quota.remaining(window), window.end - now);
                    admitted.headers.note_quota(name, figure);
                }
                decision
            };
            match decision {
                Admission::Admitted => {
                    admitted.taken.push(Taken {
                        holder: holder.clone(),
                        name,
                        window,
                        units,
                    });
                    return Ok(());
                }
                Admission::Refused { reset_at } => {
                    *self.core.lock().refusals.entry(name.as_str()).or_default() += 1;
                    let refused = Refused {
                        name,
                        limit,
                        reset_at,
                    };
                    return Err(refusal(holder, &refused, now, &mut admitted.headers));
                }
                Admission::Wait => answered.await,
                Admission::Ask(ask) => self.ask(holder.clone(), name, window, ask).await,
            }
        }
    }

    /// The series of `/metrics`: refusals by limit, and the daily and monthly budgets left to
    /// the ten holders that spent the most of theirs (as this replica knows them: within one
    /// slice per other replica).
    pub fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        use prometheus_client::metrics::counter::Counter;
        use prometheus_client::metrics::family::Family;
        use prometheus_client::metrics::gauge::Gauge;
        let counters = self.core.lock();
        let refusals: Family<[(&'static str, String); 1], Counter> = Family::default();
        for (limit, n) in &counters.refusals {
            refusals
                .get_or_create(&[("limit", limit.to_string())])
                .inc_by(*n);
        }
        registry.register(
            "tollgate_limit_refusals",
            "Requests a rate limit, concurrency limit or spend cap refused, by limit",
            refusals,
        );
        let now = now_millis_unsigned();
        let mut budgets: Vec<(u64, &str, &str, u64)> = counters
            .holders
            .iter()
            .flat_map(|(holder, h)| {
                h.quotas
                    .iter()
                    .map(move |(name, quota)| (holder, name, quota))
            })
            .filter_map(|(holder, name, quota)| {
                let period = match name {
                    QuotaName::SpendDay => "day",
                    QuotaName::SpendMonth => "month",
                    _ => return None,
                };
                let left = quota.remaining(name.window(now));
                Some((quota.limit().saturating_sub(left), &**holder, period, left))
            })
            .collect();
        budgets.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        let remaining: Family<[(&'static str, String); 2], Gauge> = Family::default();
        for (_, holder, period, left) in budgets.iter().take(10) {
            remaining
                .get_or_create(&[
                    ("holder", (*holder).to_owned()),
                    ("period", (*period).to_owned()),
                ])
                .set(i64::try_from(*left).unwrap_or(i64::MAX));
        }
        registry.register(
            "tollgate_budget_remaining_nanos",
            "Daily and monthly budget left, for the ten holders that spent the most of theirs",
            remaining,
        );
    }

    /// Asks the database for a slice, in a task of its own so that a request that goes away
    /// mid-ask cannot lose the grant.
    async fn ask(&self, holder: Arc<str>, name: QuotaName, window: Window, ask: SliceAsk) {
        let core = self.core.clone();
        let asking = tokio::spawn(async move {
            let answer = core
                .store
                .take_quota_slice(&holder, name.as_str(), &ask)
                .await;
            {
                let mut counters = core.lock();
                if let Some(quota) = counters.quota(&holder, name) {
                    match &answer {
                        Ok((granted, taken)) => quota.granted(window, *granted, *taken),
                        Err(_) => quota.ask_failed(),
                    }
                }
            }
            core.answered.notify_waiters();
            if let Err(e) = answer {
                tracing::error!(error = %e, %holder, quota = name.as_str(), "taking a quota slice failed");
            }
        });
        if asking.await.is_err() {
            tracing::error!("a quota slice request panicked");
        }
    }
}

/// The windowed quotas `policy` puts on a request of `meter`: its per-minute units, and the
/// daily and monthly spend.
fn spend_quotas(
    policy: &AccessPolicy,
    meter: Meter,
    units: u64,
    spend: u64,
) -> Vec<(QuotaName, u64, u64)> {
    let mut out = Vec::new();
    // The images meter's per minute is `per_minute.images`, the images a request asks for,
    // taken by `admit_images` before its hold: counted once, not again as units.
    if let Some(limit) = policy
        .per_minute
        .as_ref()
        .filter(|_| meter != Meter::Images)
        .and_then(|m| m.get(meter.as_str()))
    {
        out.push((QuotaName::Units(meter), *limit, units));
    }
    let nanos = |a: Option<Amount>| a.map(|a| u64::try_from(a.nanos()).unwrap_or(0));
    if let Some(limit) = nanos(policy.daily_budget) {
        out.push((QuotaName::SpendDay, limit, spend));
    }
    if let Some(limit) = nanos(policy.monthly_budget) {
        out.push((QuotaName::SpendMonth, limit, spend));
    }
    out
}

fn holder_kind(holder: &str) -> &'static str {
    if holder.starts_with("key_") {
        "key"
    } else {
        "account"
    }
}

/// The refusal of a quota, in the shape of its kind: a rate limit (`rate_limit_exceeded`,
/// retry after the window) or a spend cap (a quota: `insufficient_quota`, not worth retrying
/// within the window).
fn refusal(holder: &str, refused: &Refused, now: u64, headers: &mut RateHeaders) -> ApiError {
    let wait_ms = refused.reset_at.saturating_sub(now);
    let seconds = wait_ms.div_ceil(1_000).max(1);
    let who = holder_kind(holder);
    headers.note_quota(refused.name, (refused.limit, 0, wait_ms));
    if refused.name.is_spend() {
        let (period, limit) = (
            if refused.name == QuotaName::SpendDay {
                "daily"
            } else {
                "monthly"
            },
            Amount::from_nanos(i64::try_from(refused.limit).unwrap_or(i64::MAX)),
        );
        return ApiError::new(
            ErrorKind::InsufficientBalance,
            format!(
                "You exceeded this {who}'s {period} budget of {limit}; it resets in {}",
                duration_text(wait_ms)
            ),
        )
        .code("insufficient_quota")
        .retry_after(seconds);
    }
    let what = match refused.name {
        QuotaName::Requests => "requests".to_owned(),
        QuotaName::Units(meter) => meter.as_str().replace('_', " "),
        QuotaName::Images => IMAGES.to_owned(),
        _ => String::new(),
    };
    ApiError::new(
        ErrorKind::RateLimited,
        format!(
            "Rate limit reached: this {who} allows {} {what} per minute; try again in {}",
            refused.limit,
            duration_text(wait_ms)
        ),
    )
    .code("rate_limit_exceeded")
    .retry_after(seconds)
}

impl Admitted {
    /// Trues up use-based quotas with what the request was charged: `usage` of its meter and
    /// `charge` of the budgets. Requests and concurrency are unaffected (the slots go when
    /// this is dropped).
    pub fn settle(self, usage: &Usage, charge: Amount) {
        self.settle_measured(&[usage], charge);
    }

    /// [`Admitted::settle`] for an admission that counted several meters (a live session's
    /// token classes and audio seconds): each per-minute quota is trued up with the units of
    /// the usage in `measured` on its meter (none there: nothing was used of it).
    ///
    /// An admission grown by [`Admitted::absorb`] may span windows (a session's response that
    /// crossed a minute): what the earlier windows took stays theirs, and the latest window
    /// takes the rest of what was used.
    pub fn settle_measured(mut self, measured: &[&Usage], charge: Amount) {
        let spent = u64::try_from(charge.nanos()).unwrap_or(0);
        let taken = std::mem::take(&mut self.taken);
        let mut counters = self.core.lock();
        for (at, t) in taken.iter().enumerate() {
            let same = |o: &&Taken| o.holder == t.holder && o.name == t.name;
            if taken[at + 1..].iter().any(|o| same(&o)) {
                continue;
            }
            let earlier: u64 = taken[..at].iter().filter(same).map(|o| o.units).sum();
            let actual = match t.name {
                // Images asked are what was asked: kept as taken once the request is charged.
                QuotaName::Requests | QuotaName::Images => continue,
                QuotaName::Units(meter) => measured
                    .iter()
                    .filter(|u| u.meter() == meter)
                    .map(|u| u.units())
                    .sum(),
                QuotaName::SpendDay | QuotaName::SpendMonth => spent,
            };
            if let Some(quota) = counters.quota(&t.holder, t.name) {
                quota.settle(t.units, actual.saturating_sub(earlier), t.window.start);
            }
        }
    }

    /// Takes what `other` admitted into this admission, to be settled or given back with it:
    /// a live session's hold grows step by step, and each step's spending joins the
    /// response's. Units of one quota in one window add up.
    pub fn absorb(&mut self, mut other: Admitted) {
        for t in other.taken.drain(..) {
            match self.taken.iter_mut().find(|o| {
                o.holder == t.holder && o.name == t.name && o.window.start == t.window.start
            }) {
                Some(o) => o.units = o.units.saturating_add(t.units),
                None => self.taken.push(t),
            }
        }
        self.slots.append(&mut other.slots);
        self.committed |= other.committed;
        self.headers.merge(&other.headers);
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if self.taken.is_empty() && self.slots.is_empty() {
            return;
        }
        let mut counters = self.core.lock();
        for t in self.taken.drain(..) {
            // A request made is a request made; units and money not charged are given back.
            if t.name == QuotaName::Requests && self.committed {
                continue;
            }
            if let Some(quota) = counters.quota(&t.holder, t.name) {
                quota.give_back(t.units, t.window.start);
            }
        }
        for (holder, slot) in self.slots.drain(..) {
            if let Some(h) = counters.holders.get_mut(&*holder) {
                let open = &mut h.open[slot.index()];
                *open = open.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_utc_minutes_days_and_calendar_months() {
        let t =
            u64::try_from(tollgate_journal::clock::parse_rfc3339("2026-02-14T10:20:30Z").unwrap())
                .unwrap();
        let at =
            |s: &str| u64::try_from(tollgate_journal::clock::parse_rfc3339(s).unwrap()).unwrap();
        assert_eq!(
            QuotaName::Requests.window(t),
            Window {
                start: at("2026-02-14T10:20:00Z"),
                end: at("2026-02-14T10:21:00Z")
            }
        );
        assert_eq!(
            QuotaName::SpendDay.window(t).start,
            at("2026-02-14T00:00:00Z")
        );
        assert_eq!(
            QuotaName::SpendMonth.window(t),
            Window {
                start: at("2026-02-01T00:00:00Z"),
                end: at("2026-03-01T00:00:00Z")
            }
        );
        let december = at("2026-12-31T23:59:59Z");
        assert_eq!(
            QuotaName::SpendMonth.window(december).end,
            at("2027-01-01T00:00:00Z")
        );
    }

    #[test]
    fn durations_are_spelled_like_openai() {
        assert_eq!(duration_text(250), "250ms");
        assert_eq!(duration_text(12_000), "12s");
        assert_eq!(duration_text(90_000), "1m30s");
        assert_eq!(duration_text(86_399_000), "23h59m59s");
    }
}
