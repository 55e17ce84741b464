//! The usage record of one request (`docs/decisions.md`, "The usage log"): filled in as the
//! request flow learns who is calling, which model, which channel and what was held, and written
//! exactly once — by construction, like a hold:
//!
//! - a request that is charged writes its record with its charge, in the same journal entry
//!   ([`Recorder::settled`], called by the settlement), so the log costs no transaction of its
//!   own;
//! - any other request writes it at its end, with the answer's status: in the service's end
//!   hook ([`Recorder::end`]) for a whole answer, when a stream's hold lets go at the stream's
//!   end for a stream, and when the request is dropped unanswered — 499, the client left
//!   before any answer.
//!
//! The draft travels in the request's context (`tollgate_request::context::RequestCtx::usage`); work
//! spawned for the request takes a clone by value. Authentication, the hold and the channel
//! choice each note their part on it. It keeps only the record: what admission holds of the
//! key's limits and the rate headers are the request's `tollgate_request::admission::Admission`.

use crate::ledger::Ledger;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tollgate_billing::{Amount, Usage};
use tollgate_store::{Principal, UsageRecord};

/// How a settlement came about, for its usage record (docs/architecture.md, "Explanations").
#[derive(Debug, Clone, Copy)]
pub struct Explained<'a> {
    /// The charge rests on the gateway's own figure.
    pub estimated: bool,
    /// Why, when it is not the ordinary case.
    pub note: Option<&'a str>,
    /// How the quantity was measured.
    pub measured: tollgate_billing::Measure,
    /// Why the bound is what it is.
    pub bound_basis: &'a str,
}

/// What a request was charged, for its answer's `x-tollgate-*` headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charged {
    /// The charge.
    pub amount: Amount,
    /// The quantity in words (`tokens=12`).
    pub units: String,
    /// `model@version`, when the price has a version.
    pub price: Option<String>,
}

/// A request's usage record in the making; cheap to clone. Every clone shares one draft, which
/// is written when the last clone is dropped unless a settlement wrote it first.
#[derive(Debug, Clone)]
pub struct Recorder(Arc<Draft>);

#[derive(Debug)]
struct Draft {
    started: Instant,
    ledger: Ledger,
    fields: Mutex<Fields>,
}

#[derive(Debug)]
struct Fields {
    record: UsageRecord,
    /// Authentication named the account (an anonymous request is not logged).
    authenticated: bool,
    /// The answer's status, once the service has it.
    status: Option<u16>,
    /// Written with a settlement already.
    written: bool,
    /// What the settlement charged, once it has.
    charged: Option<Charged>,
}

impl Recorder {
    /// A draft for a request `request_id` on `endpoint` (its route's policy endpoint name;
    /// the service starts one for each metered route, `tollgate_request::routes::RouteSpec::metered`).
    pub fn start(ledger: &Ledger, endpoint: &str, request_id: &str) -> Recorder {
        let mut record = UsageRecord::new("request", String::new(), endpoint);
        record.request_id = Some(request_id.to_owned());
        Recorder(Arc::new(Draft {
            started: Instant::now(),
            ledger: ledger.clone(),
            fields: Mutex::new(Fields {
                record,
                authenticated: false,
                status: None,
                written: false,
                charged: None,
            }),
        }))
    }

    fn with(&self, f: impl FnOnce(&mut Fields)) {
        let mut fields = self.0.fields.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut fields);
    }

    /// The end hook's part (the service's `finish`): the answer's `status`, and what the
    /// request was charged. When the service holds the draft alone — every answer but a stream,
    /// whose hold keeps it to the stream's end — an uncharged request's record is written now.
    pub fn end(self, status: u16) -> Option<Charged> {
        self.with(|f| f.status = Some(status));
        let charged = self.charged();
        if let Some(mut draft) = Arc::into_inner(self.0) {
            draft.write(status);
        }
        charged
    }

    /// What the request was charged, once its settlement has been made.
    pub fn charged(&self) -> Option<Charged> {
        let mut charged = None;
        self.with(|f| charged.clone_from(&f.charged));
        charged
    }

    /// Builds the record of a settlement and marks the draft written: the caller journals it
    /// with the charge. `None` when the request is not attributable (no authentication seen)
    /// or was written already.
    pub fn settled(
        &self,
        hold_id: &str,
        usage: &Usage,
        quantity: &str,
        charge: Amount,
        how: &Explained<'_>,
    ) -> Option<UsageRecord> {
        let elapsed = self.0.started.elapsed();
        let mut fields = self.0.fields.lock().unwrap_or_else(PoisonError::into_inner);
        if fields.written || !fields.authenticated {
            return None;
        }
        fields.written = true;
        let mut record = std::mem::take(&mut fields.record);
        record.status = fields.status.unwrap_or(200);
        record.set_usage(usage, Some(quantity.to_owned()));
        record.charge = charge;
        record.hold_id = Some(hold_id.to_owned());
        record.estimated = how.estimated;
        record.note = how.note.map(str::to_owned);
        record.measured = Some(how.measured);
        record.bound_basis = Some(how.bound_basis.to_owned());
        fields.charged = Some(Charged {
            amount: charge,
            units: usage.in_words(),
            price: record
                .price_version
                .zip(record.model.as_deref())
                .map(|(version, model)| format!("{model}@{version}")),
        });
        finish(&mut record, elapsed);
        Some(record)
    }
}

impl Recorder {
    /// Notes `f`'s part on the draft.
    pub fn note(&self, f: impl FnOnce(&mut UsageRecord)) {
        self.with(|fields| f(&mut fields.record));
    }

    /// Notes who is calling (authentication).
    pub fn note_principal(&self, principal: &Principal) {
        self.with(|fields| {
            fields.authenticated = true;
            fields.record.account_id.clone_from(&principal.account_id);
            fields.record.key_id = Some(principal.key_id.clone());
            fields.record.price_group = principal.price_group.as_ref().map(|g| g.name.clone());
        });
    }

    /// Notes the channel that served (or was tried last), and how long the call took.
    pub fn note_channel(&self, channel: &str, took: Duration) {
        self.note(|record| {
            record.channel = Some(channel.to_owned());
            record.upstream_ms = Some(u64::try_from(took.as_millis()).unwrap_or(u64::MAX));
        });
    }
}

fn finish(record: &mut UsageRecord, elapsed: Duration) {
    record.stamp();
    record.latency_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
}

impl Draft {
    /// Writes the record of a request that was not charged, once: with its answer's status, or
    /// `unanswered` when nobody saw one.
    fn write(&mut self, unanswered: u16) {
        let fields = self
            .fields
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if fields.written || !fields.authenticated {
            return;
        }
        fields.written = true;
        let mut record = std::mem::take(&mut fields.record);
        record.status = fields.status.unwrap_or(unanswered);
        finish(&mut record, self.started.elapsed());
        self.ledger.log_usage(record);
    }
}

impl Drop for Draft {
    /// A stream's end, or a request dropped before its end hook: the client went away first.
    fn drop(&mut self) {
        self.write(499);
    }
}

/// How often the usage log's finished hours are rolled up.
const ROLL_UP_EVERY: Duration = Duration::from_secs(60);

/// Rolls up the usage log's finished hours (`tollgate_store`'s rollup) every minute, so that
/// reports over long periods read sums. Any replica may run it: the watermark is claimed by
/// compare-and-swap, so an hour is summed once.
pub async fn roll_up(store: tollgate_store::Store) {
    let mut tick = tokio::time::interval(ROLL_UP_EVERY);
    loop {
        tick.tick().await;
        // A first run over a long log catches up a week per call.
        loop {
            match store.roll_up_usage(crate::clock::now_millis()).await {
                Ok(0) => break,
                Ok(hours) => tracing::debug!(hours, "rolled up the usage log"),
                Err(e) => {
                    tracing::warn!(error = %e, "rolling up the usage log failed");
                    break;
                }
            }
        }
    }
}

/// How often the usage log is pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(600);
/// Rows per DELETE while pruning.
const PRUNE_CHUNK: u32 = 5_000;

/// Quota windows are kept this long after they began: the longest window is a month.
const QUOTA_WINDOWS_KEPT_MS: i64 = 40 * 86_400_000;

/// Prunes usage records older than `retention_days` (0: never) and quota windows that ended
/// long ago, now and then every ten minutes. Any replica may run it; two running at once
/// delete disjoint rows or nothing.
pub async fn prune(store: tollgate_store::Store, retention_days: u64) {
    let keep = i64::try_from(retention_days.saturating_mul(86_400_000)).unwrap_or(i64::MAX);
    let mut tick = tokio::time::interval(PRUNE_EVERY);
    loop {
        tick.tick().await;
        let now = crate::clock::now_millis();
        if retention_days > 0 {
            match store
                .prune_usage(now.saturating_sub(keep), PRUNE_CHUNK)
                .await
            {
                Ok(0) => {}
                Ok(n) => tracing::info!(pruned = n, retention_days, "pruned the usage log"),
                Err(e) => tracing::warn!(error = %e, "pruning the usage log failed"),
            }
        }
        if let Err(e) = store
            .prune_quota_windows(now.saturating_sub(QUOTA_WINDOWS_KEPT_MS))
            .await
        {
            tracing::warn!(error = %e, "pruning quota windows failed");
        }
    }
}
