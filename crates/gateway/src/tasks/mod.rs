//! Asynchronous video tasks, as both task endpoints share them (DESIGN §5): the pricing snapshot
//! held at submit, the submit flow (row and hold first, then the upstream), the owner-only,
//! once-a-second client poll, and what a poll of the upstream observed.
//!
//! - [`worker`]: the pollers and the sweeper that move tasks to their end;
//! - [`inputs`]: the checks of media URLs in task content that need the network (DNS, the
//!   length of a reference video).

pub mod inputs;
pub mod record;
pub mod worker;

use crate::admission::store_refused;
use crate::relay;
use crate::tasks::record::{Pricing, Quote};
use std::sync::Arc;
use std::time::Duration;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_request::context::RequestCtx;
use tollgate_request::state::State;
use tollgate_settings::catalog::ModelEntry;
use tollgate_store::{NewTask, Outcome, Poll, Principal, Task};
use tollgate_upstream::registry;
use tollgate_upstream::seams::tasks::TaskRequest;

pub use tollgate_settings::config::TaskSettings;

/// A task about to be submitted: the row's contents, priced.
#[derive(Debug)]
pub struct Submission {
    /// `clip` or `generic`.
    pub format: &'static str,
    /// Our public id.
    pub id: String,
    /// What the request asks to be held for, priced at submit.
    pub quote: Quote,
    /// The client's request, as JSON, for the row.
    pub request: serde_json::Value,
}

/// DESIGN §2 steps 5–8 for a task: the row and its hold in one transaction (a balance that
/// cannot cover the hold refuses the submit before any upstream call), then the upstream's
/// create through the model's channels, then the row moves to `queued` with the upstream's id.
/// An upstream refusal fails the row and releases the hold, and the client hears the upstream's
/// error. Runs to completion even when the client goes away: an upstream that has the task bills
/// for it, so the row must learn its id.
pub async fn submit(
    ctx: &RequestCtx,
    principal: &Principal,
    entry: &Arc<ModelEntry>,
    submission: Submission,
    request: TaskRequest,
) -> Result<Task, ApiError> {
    let state = &ctx.state;
    // The price version in effect now prices the task to its end, whenever that is.
    let price = state.prices.at(
        &entry.public,
        &entry.tariff,
        tollgate_journal::clock::now_millis(),
    );
    // A tariff priced by size prices the size asked (validated against the model's sizes, not
    // measured: the vendor bills the size asked, and the hold bounds the charge either way); the
    // quantity names it, so the charge re-derives from its row.
    let mut submission = submission;
    if price.tariff.prices_by_size() {
        submission.quote.estimate = submission.quote.estimate.at_size(submission.quote.size());
    }
    let priced = crate::admission::admit(
        ctx,
        principal,
        &entry.public,
        &price,
        &submission.quote.estimate,
    )
    .await?;
    // The caller's tariff, price group and price version, snapshot with the quote.
    let pricing = Pricing::snapshot(
        submission.quote,
        priced.tariff,
        priced.price_group.as_deref().cloned(),
        priced.price_version,
    );
    let amount = priced.amount;
    let first_channel = entry
        .channels
        .first()
        .map(|c| c.name.clone())
        .ok_or_else(|| ApiError::internal("submitting the task", "the model has no channel"))?;
    let submission_estimate = pricing.estimate;
    let pricing =
        serde_json::to_value(&pricing).map_err(|e| ApiError::internal("recording the task", e))?;
    let new_task = NewTask {
        id: submission.id,
        format: submission.format.to_owned(),
        account_id: principal.account_id.clone(),
        key_id: principal.key_id.clone(),
        model: entry.public.clone(),
        channel: first_channel,
        upstream_model: entry.upstream_model.clone(),
        pricing,
        request: submission.request,
        request_id: Some(ctx.request_id.clone()),
        in_flight_limits: in_flight_limits(principal),
        deadline: state.tasks.deadline,
        // Its polls and settlement continue this request's trace (`crate::trace::task_span`).
        traceparent: crate::trace::traceparent(),
    };
    // A task counts against the caller's per-minute units and budgets at its estimate and hold
    // when it is created (`charge::admit`); it is charged later, on whichever replica polls it
    // to its end.
    let (task, hold) = state
        .store
        .create_task(new_task, amount)
        .await
        .map_err(store_refused)?;
    if let Some(spend) = priced.spend {
        spend.settle(&submission_estimate, amount);
    }
    // The creating request's record: the hold, no charge; the task's own record carries the
    // charge or the refund when it ends (`tollgate_store`'s `finish_task`).
    ctx.note(|record| {
        record.hold = hold.amount;
        record.task_id = Some(task.id.clone());
        record.note = Some("task created; charged when it finishes".into());
    });

    let (state, entry) = (state.clone(), entry.clone());
    let (usage, admission) = (ctx.usage.clone(), ctx.admission.clone());
    crate::trace::spawn_for_request(async move {
        // The request's admission (its concurrency slot) lasts as long as its submission.
        let _admission = admission;
        let called = relay::with_failover(&entry, usage.as_ref(), |channel, endpoint| {
            let (state, request) = (state.clone(), &request);
            async move {
                let created = registry::video_tasks(channel.format)?
                    .create(&state.http, &endpoint, request)
                    .await?;
                Ok(created.body)
            }
        })
        .await;
        match called {
            Ok((upstream_id, channel)) => {
                let recorded = state
                    .store
                    .task_submitted(&task.id, &channel.name, &upstream_id, state.tasks.first_poll)
                    .await;
                match recorded {
                    Ok(true) => {}
                    // The sweeper refunded the row meanwhile (the create outlasted the submission
                    // timeout, which `check_submission_timeout` keeps above the channels' own):
                    // the client must not be told a refunded task was accepted.
                    Ok(false) => {
                        tracing::error!(task = %task.id, upstream_id, channel = %channel.name,
                            "the upstream accepted a task already refunded as interrupted; the upstream may bill it");
                        state.metrics.task_event("accepted_after_refund");
                        return Err(ApiError::new(
                            ErrorKind::UpstreamTimeout,
                            "The upstream took too long to accept the task; it was not charged",
                        ));
                    }
                    // The upstream has it; the row stays `submitting` and the sweeper refunds
                    // it after the submission timeout. Log loudly: the upstream will bill.
                    Err(e) => tracing::error!(task = %task.id, upstream_id, error = %e,
                        "recording the upstream task id failed"),
                }
                state.metrics.task_event("submitted");
                state
                    .store
                    .task(&task.id)
                    .await
                    .ok()
                    .flatten()
                    .ok_or_else(|| ApiError::internal("reading the task", "the row vanished"))
            }
            Err(e) => {
                tracing::warn!(task = %task.id, error = %e, "upstream refused the task");
                let error =
                    serde_json::json!({"code": "upstream_refused", "message": e.to_string()});
                match state
                    .store
                    .finish_task(&task.id, Outcome::Failed { error }, None)
                    .await
                {
                    Ok(_) => {
                        // The client never got an id: the row is kept for the record only.
                        let _ = state.store.hide_task(&task.id, &task.account_id).await;
                    }
                    Err(e) => tracing::error!(task = %task.id, error = %e,
                        "failing a refused task failed; the sweeper will refund it"),
                }
                state.metrics.task_event("refused");
                Err(relay::upstream_error(&e))
            }
        }
    })
    .await
    .map_err(|e| ApiError::internal("submitting the task", e))?
}

/// Refuses a configuration in which a submission could outlast `submission_timeout_seconds`:
/// the sweeper would refund a task the upstream is about to accept. A submit may wait a
/// channel slot (up to its first-byte timeout) and then connect and wait the answer.
pub fn check_submission_timeout(
    catalog: &tollgate_settings::catalog::Catalog,
    settings: &TaskSettings,
) -> Result<(), String> {
    for channel in catalog.channels() {
        if !channel.format.is_video_tasks() {
            continue;
        }
        let t = &channel.endpoint.timeouts;
        let longest = t.connect + t.first_byte * 2;
        if settings.submission_timeout <= longest {
            return Err(format!(
                "[tasks] submission_timeout_seconds ({} s) must be longer than a submission to channel {:?} can take (connect + 2 × first byte = {} s)",
                settings.submission_timeout.as_secs(),
                channel.name,
                longest.as_secs_f64()
            ));
        }
    }
    Ok(())
}

/// A client's `GET` of a task (docs/api.md §4 rules 2 and 6): the owner's own task of this `format`,
/// at most once a second; anyone else's, the other format's, or an unknown id, is 404.
pub async fn client_poll(
    state: &State,
    principal: &Principal,
    id: &str,
    format: &str,
) -> Result<Task, ApiError> {
    match state
        .store
        .poll_task(
            id,
            &principal.account_id,
            format,
            MIN_CLIENT_POLL_INTERVAL.saturating_sub(POLL_GRACE),
        )
        .await
    {
        Ok(Poll::Task(task)) => Ok(*task),
        Ok(Poll::TooSoon) => Err(ApiError::new(
            ErrorKind::RateLimited,
            format!("Task {id} was polled less than a second ago; poll every 5 to 10 seconds"),
        )
        .retry_after(1)),
        Ok(Poll::NotFound) => Err(task_not_found(id)),
        Err(e) => Err(ApiError::internal("reading the task", e)),
    }
}

/// docs/api.md §4 rule 6 and §8: never more than one poll a second.
pub const MIN_CLIENT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// What a poll may come early by and still be served: clients that wait a second between polls
/// (the OpenAI SDKs' `poll`) land a hair under it when the previous answer was slow to leave or
/// their clock is coarse (`docs/decisions.md`, "Video tasks").
pub const POLL_GRACE: Duration = Duration::from_millis(100);

/// 404 for a task the caller cannot see.
pub fn task_not_found(id: &str) -> ApiError {
    ApiError::new(
        ErrorKind::NotFound,
        format!("The task {id} does not exist or does not belong to this key's account"),
    )
    .param("task_id")
    .code("task_not_found")
}

/// The account's and the key's limits of video tasks in flight.
fn in_flight_limits(principal: &Principal) -> (Option<u32>, Option<u32>) {
    let limit = |id: &str| {
        principal
            .limited_by
            .iter()
            .find(|(holder, _)| &**holder == id)
            .and_then(|(_, policy)| policy.tasks_in_flight)
    };
    (limit(&principal.account_id), limit(&principal.key_id))
}
