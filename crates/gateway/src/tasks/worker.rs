//! The pollers and the sweeper (DESIGN §5). Every replica runs them; the store's leases keep two
//! pollers off the same task, and the compare-and-swap of `finish_task` lets only one of them
//! (or the sweeper) settle or refund it.
//!
//! - One poller per task channel leases that channel's due tasks, at most as many as the
//!   channel has free permits (its `max_concurrency`, shared with submits), and polls each.
//! - A poll that answers moves the task on: still live → the next poll in 1 s growing to
//!   `poll_interval`; finished → settled or refunded. A poll that fails (429, 5xx, timeout)
//!   backs off exponentially up to `max_backoff`, honouring `Retry-After`; an upstream that says
//!   three times in a row it does not know the task fails and refunds it.
//! - The sweeper fails and refunds tasks past their deadline and rows orphaned in `submitting`
//!   by a crash. It also runs once at start, so a restarted replica recovers at once; tasks that
//!   were leased by a dead process become due again when their lease runs out.

use crate::tasks::record::{Observation, Pricing, observe};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;
use tollgate_request::state::State;
use tollgate_settings::catalog::Channel;
use tollgate_store::{Outcome, Task};
use tollgate_upstream::registry;
use tollgate_upstream::{Endpoint, Timeouts, UpstreamError};
use tracing::Instrument;

/// The most tasks leased by one poller at a time.
const BATCH: usize = 64;

/// Consecutive "no such task" answers after which the upstream is believed.
const LOST_AFTER: i64 = 3;

/// Starts the pollers of every task channel and the sweeper. Abort the handles to stop them;
/// a poll cut short leaves only a lease, which runs out.
pub fn spawn(state: &Arc<State>) -> Vec<JoinHandle<()>> {
    let owner = worker_id();
    tracing::info!(owner, "task workers starting");
    vec![
        tokio::spawn(follow_channels(state.clone(), owner)),
        tokio::spawn(sweep(state.clone())),
    ]
}

/// Keeps one poller per task channel of the settings in force: a reload that adds a channel
/// starts its poller, one that removes or changes a channel stops the old one (and starts the
/// new one). A removed channel's tasks are then left to the sweeper, as after a restart
/// without it (`docs/decisions.md`, "Reloading"). Aborting this stops every poller it started.
async fn follow_channels(state: Arc<State>, owner: String) {
    let mut generations = state.settings.watch();
    let mut pollers = tokio::task::JoinSet::new();
    let mut running: Vec<(Arc<Channel>, tokio::task::AbortHandle)> = Vec::new();
    loop {
        let channels: Vec<Arc<Channel>> = state
            .settings
            .snapshot()
            .catalog
            .channels()
            .into_iter()
            .filter(|c| c.format.is_video_tasks())
            .collect();
        running.retain(|(channel, poller)| {
            let serving = channels.iter().any(|c| Arc::ptr_eq(c, channel));
            if !serving {
                tracing::info!(channel = %channel.name, "the reload removed or changed the channel: its poller stops");
                poller.abort();
            }
            serving
        });
        for channel in channels {
            if !running.iter().any(|(c, _)| Arc::ptr_eq(c, &channel)) {
                let poller =
                    pollers.spawn(poll_channel(state.clone(), channel.clone(), owner.clone()));
                running.push((channel, poller));
            }
        }
        // Reap the stopped ones.
        while pollers.try_join_next().is_some() {}
        if generations.changed().await.is_err() {
            return;
        }
    }
}

/// This process's name on the leases it takes.
/// This replica's name as the owner of leases (tasks, alert deliveries): its process id and
/// random bits.
pub(crate) fn worker_id() -> String {
    let mut bytes = [0u8; 4];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
    format!("worker-{}-{}", std::process::id(), hex::encode(bytes))
}

async fn poll_channel(state: Arc<State>, channel: Arc<Channel>, owner: String) {
    let settings = &state.tasks;
    let tick =
        (settings.first_poll / 4).clamp(Duration::from_millis(50), Duration::from_millis(500));
    let timeouts = poll_timeouts(&channel);
    // A lease covers one poll; a process that dies holding one delays that task by at most this.
    let lease = timeouts.connect + timeouts.first_byte + timeouts.idle + Duration::from_secs(5);
    loop {
        // Wait for capacity, then lease as many due tasks as there are free permits: the
        // channel's `max_concurrency` bounds polls and submits together.
        let Ok(first) = channel.permits.clone().acquire_owned().await else {
            return;
        };
        let free = 1 + channel.permits.available_permits().min(BATCH - 1);
        let leased = state
            .store
            .lease_due_tasks(&owner, &channel.name, free as i64, lease)
            .await;
        let tasks = match leased {
            Ok(tasks) => tasks,
            Err(e) => {
                tracing::warn!(channel = %channel.name, error = %e, "leasing due tasks failed");
                drop(first);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let full_batch = tasks.len() == free;
        let mut first = Some(first);
        for task in tasks {
            let permit = match first.take() {
                Some(permit) => permit,
                None => match channel.permits.clone().acquire_owned().await {
                    Ok(permit) => permit,
                    Err(_) => return,
                },
            };
            let (state, channel, owner) = (state.clone(), channel.clone(), owner.clone());
            let span = crate::trace::task_span(&task);
            tokio::spawn(
                async move {
                    poll_one(&state, &channel, &timeouts, task, &owner, permit).await;
                }
                .instrument(span),
            );
        }
        drop(first);
        if !full_batch {
            tokio::time::sleep(tick).await;
        }
    }
}

/// A poll is a small JSON answer: it gets the channel's timeouts, but never more than these, so
/// that a lease (one poll long) stays short and a crashed replica's tasks are soon polled again.
fn poll_timeouts(channel: &Channel) -> Timeouts {
    let t = &channel.endpoint.timeouts;
    Timeouts {
        connect: t.connect.min(Duration::from_secs(5)),
        first_byte: t.first_byte.min(Duration::from_secs(15)),
        idle: t.idle.min(Duration::from_secs(15)),
    }
}

/// Polls one leased task and records what it found.
async fn poll_one(
    state: &State,
    channel: &Channel,
    timeouts: &Timeouts,
    task: Task,
    owner: &str,
    _permit: OwnedSemaphorePermit,
) {
    let pricing = match Pricing::of(&task) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(task = %task.id, error = %e, "unreadable pricing snapshot; refunding the task");
            let error = serde_json::json!({"code": "internal_error", "message": "the gateway could not read the task's pricing; it was refunded"});
            finish(state, &task, Outcome::Failed { error }, "failed").await;
            return;
        }
    };
    let Some(upstream_id) = task.upstream_id.clone() else {
        return;
    };
    let now = tollgate_journal::clock::unix_now();
    let endpoint = Endpoint {
        timeouts: *timeouts,
        traceparent: crate::trace::traceparent(),
        ..channel.endpoint.clone()
    };
    let Ok(tasks) = registry::video_tasks(channel.format) else {
        return;
    };
    let observed: Result<Observation, UpstreamError> = tasks
        .get(&state.http, &endpoint, &upstream_id)
        .await
        .map(|answer| observe(answer.body, &pricing, now));
    match observed {
        Ok(observation) => {
            let word = match &observation {
                Observation::Live { word, .. }
                | Observation::Succeeded { word, .. }
                | Observation::Failed { word, .. } => word.clone(),
            };
            match observation.outcome(&pricing) {
                Some(outcome) => finish(state, &task, outcome, &word).await,
                None => {
                    let Observation::Live {
                        state: live,
                        progress,
                        ..
                    } = observation
                    else {
                        return;
                    };
                    let next = next_poll_in(state, &task);
                    record(state, &task, owner, live, Some(&word), progress, next, 0).await;
                }
            }
        }
        Err(e) => {
            let failures = task.poll_failures.saturating_add(1);
            state.metrics.task_event("poll_error");
            if matches!(e, UpstreamError::Status { status: 404, .. }) && failures >= LOST_AFTER {
                tracing::warn!(task = %task.id, upstream_id, "the upstream does not know the task; refunding it");
                let error = serde_json::json!({"code": "upstream_task_lost", "message": "the upstream no longer knows this task; it was refunded"});
                finish(state, &task, Outcome::Failed { error }, "failed").await;
                return;
            }
            tracing::info!(task = %task.id, error = %e, failures, "polling the upstream failed; backing off");
            let next = backoff(state, failures, &e);
            let word = task.upstream_status.clone();
            record(
                state,
                &task,
                owner,
                task.state,
                word.as_deref(),
                task.progress,
                next,
                failures,
            )
            .await;
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn record(
    state: &State,
    task: &Task,
    owner: &str,
    live: tollgate_store::TaskState,
    word: Option<&str>,
    progress: i64,
    next: Duration,
    failures: i64,
) {
    let recorded = state
        .store
        .record_poll(&task.id, owner, live, word, progress, next, failures)
        .await;
    if let Err(e) = recorded {
        tracing::warn!(task = %task.id, error = %e, "recording a poll failed; the lease will run out");
    }
}

async fn finish(state: &State, task: &Task, outcome: Outcome, word: &str) {
    let succeeded = matches!(outcome, Outcome::Succeeded { .. });
    let charged = match &outcome {
        Outcome::Succeeded { settlement, .. } => Some((
            settlement.price_group.as_ref().map(|g| g.name.clone()),
            settlement.actual.nanos(),
        )),
        Outcome::Failed { .. } => None,
    };
    match state.store.finish_task(&task.id, outcome, Some(word)).await {
        Ok(true) => {
            crate::trace::record_task_end(
                if succeeded { "succeeded" } else { "failed" },
                charged
                    .as_ref()
                    .map(|(_, nanos)| tollgate_billing::Amount::from_nanos(*nanos)),
            );
            if let Some((group, nanos)) = charged {
                state.metrics.charged(group.as_deref(), nanos);
            }
            state
                .metrics
                .task_event(if succeeded { "succeeded" } else { "failed" });
            state
                .metrics
                .hold_closed(if succeeded { "settled" } else { "released" });
        }
        // Someone else (another replica, the sweeper, a cancel) ended it first.
        Ok(false) => {}
        Err(e) => {
            tracing::error!(task = %task.id, error = %e, "finishing the task failed; it will be polled again");
        }
    }
}

/// Polls start at `first_poll` and grow with the task's age to `poll_interval`: most clips take
/// tens of seconds to minutes (docs/api.md §4 rule 6), and a quick one is still seen soon.
fn next_poll_in(state: &State, task: &Task) -> Duration {
    let age = Duration::from_millis(
        u64::try_from(tollgate_journal::clock::now_millis() - task.created_at).unwrap_or(0),
    );
    (age / 4).clamp(
        state.tasks.first_poll,
        state.tasks.poll_interval.max(state.tasks.first_poll),
    )
}

/// `poll_interval × 2^(failures-1)`, at most `max_backoff`, and not before `Retry-After`.
fn backoff(state: &State, failures: i64, e: &UpstreamError) -> Duration {
    let exponent = u32::try_from(failures.clamp(1, 16) - 1).unwrap_or(0);
    let wait = state
        .tasks
        .poll_interval
        .saturating_mul(2u32.saturating_pow(exponent))
        .min(state.tasks.max_backoff);
    match e {
        UpstreamError::Status {
            retry_after: Some(seconds),
            ..
        } => wait.max(Duration::from_secs(*seconds)),
        _ => wait,
    }
}

async fn sweep(state: Arc<State>) {
    loop {
        match state.store.expire_overdue_tasks().await {
            Ok(expired) => {
                for id in expired {
                    tracing::warn!(task = %id, "task passed its deadline; refunded");
                    state.metrics.task_event("expired");
                }
            }
            Err(e) => tracing::warn!(error = %e, "sweeping overdue tasks failed"),
        }
        match state
            .store
            .fail_stale_submissions(state.tasks.submission_timeout)
            .await
        {
            Ok(failed) => {
                for id in failed {
                    tracing::warn!(task = %id, "task orphaned while submitting; refunded");
                    state.metrics.task_event("orphaned");
                }
            }
            Err(e) => tracing::warn!(error = %e, "sweeping orphaned submissions failed"),
        }
        tokio::time::sleep(state.tasks.sweep_interval).await;
    }
}
