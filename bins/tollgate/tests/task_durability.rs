//! Durability of video tasks (DESIGN §5), run as an operator would: the built binary as real
//! processes, the simulator in this test process (so several gateways share one upstream), and
//! the store read directly to prove that every task ends exactly once and that the money adds up
//! to the nano-unit — on SQLite, on PostgreSQL with two replicas, and across a SIGKILL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::{Gateway, Scratch, http};

use rust_decimal::Decimal;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{Duration, Instant};
use tollgate_billing::Amount;
use tollgate_sim::{KnobSettings, SimHandle};
use tollgate_store::{LedgerKind, Store, Task, TaskFilter, TaskState};

const CLIP_MODEL: &str = "clipgen-cn-2.0-260128";
const CLIP_PER_MILLION_TOKENS: &str = "2.4";
const VIDEO_MODEL: &str = "wave-3-0-video";
const VIDEO_PER_SECOND: &str = "0.1";
const OPENING_BALANCE: &str = "1000";
const CLIP_PATH: &str = "/api/v3/contents/generations/tasks";
const VIDEO_PATH: &str = "/v1/video/generations";
const VIDEOS_PATH: &str = "/v1/videos";

// ---- simulator, configuration ----

fn knobs(queued_ms: u64, running_ms: u64) -> KnobSettings {
    KnobSettings {
        task_queued_ms: Some(queued_ms),
        task_running_ms: Some(running_ms),
        task_fail_every: Some(10),
        ..KnobSettings::default()
    }
}

async fn start_sim(settings: KnobSettings) -> SimHandle {
    tollgate_sim::start("127.0.0.1:0".parse().unwrap(), settings)
        .await
        .unwrap()
}

/// The gateways' configuration: both task channels on the test's simulator, under names unique
/// to this run (tasks are leased by channel name, and the PostgreSQL database is shared).
fn write_config(scratch: &Scratch, sim: &SimHandle) -> PathBuf {
    let (sim, tag) = (sim.base_url(), &scratch.tag);
    let text = format!(
        r#"
[log]
filter = "info"

[simulator]
enabled = false

[tasks]
first_poll_ms = 200
poll_interval_ms = 500
sweep_interval_seconds = 1
submission_timeout_seconds = 5

[[channels]]
name = "ark-{tag}"
format = "ark"
base_url = "{sim}"
max_concurrency = 32
connect_timeout_ms = 500
first_byte_timeout_ms = 2000
idle_timeout_ms = 3000

[[channels]]
name = "video-{tag}"
format = "generic-video"
base_url = "{sim}"
max_concurrency = 32
connect_timeout_ms = 500
first_byte_timeout_ms = 2000
idle_timeout_ms = 3000

[models."{CLIP_MODEL}"]
kind = "clip-video"
channels = ["ark-{tag}"]
price = {{ meter = "video_tokens", per_million_tokens = "{CLIP_PER_MILLION_TOKENS}" }}

[models."{VIDEO_MODEL}"]
kind = "generic-video"
channels = ["video-{tag}"]
price = {{ meter = "video_seconds", per_second = "{VIDEO_PER_SECOND}" }}
"#
    );
    let path = scratch.dir.join("tollgate.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `tollgate_task_events_total{event="…"}` of a replica.
async fn task_events(gateway: &Gateway, event: &str) -> u64 {
    gateway
        .metric(&format!("tollgate_task_events_total{{event=\"{event}\"}}"))
        .await as u64
}

// ---- accounts, submissions ----

struct Customer {
    id: String,
    key: String,
    opening: Amount,
}

async fn create_accounts(store: &Store, tag: &str, n: usize) -> Vec<Customer> {
    let opening: Amount = OPENING_BALANCE.parse().unwrap();
    let mut customers = Vec::new();
    for i in 0..n {
        let (account, key) = store
            .create_account(&format!("{tag}-{i}"), opening)
            .await
            .unwrap();
        customers.push(Customer {
            id: account.id,
            key: key.secret,
            opening,
        });
    }
    customers
}

/// The `n`th task of a test, with varied lengths: a third clip (Ark format), a third generic, a
/// third through the OpenAI Videos API on either family's model.
fn task_request(n: usize) -> (&'static str, String) {
    match n % 3 {
        0 => {
            let resolution = ["480p", "720p"][n / 3 % 2];
            let body = serde_json::json!({
                "model": CLIP_MODEL,
                "content": [{"type": "text", "text": format!("durability clip {n}")}],
                "duration": 4 + n % 12,
                "resolution": resolution,
            });
            (CLIP_PATH, body.to_string())
        }
        1 => {
            let body = serde_json::json!({
                "model": VIDEO_MODEL,
                "prompt": format!("durability video {n}"),
                "seconds": (2 + n % 9).to_string(),
            });
            (VIDEO_PATH, body.to_string())
        }
        // The OpenAI Videos API, on either family's model.
        _ => {
            let model = [VIDEO_MODEL, CLIP_MODEL][n / 3 % 2];
            let body = serde_json::json!({
                "model": model,
                "prompt": format!("durability openai video {n}"),
                "seconds": (4 + n % 5).to_string(),
            });
            (VIDEOS_PATH, body.to_string())
        }
    }
}

/// Submits the `n`th task to the gateway at `addr`: the task's id on 200, else what happened.
async fn submit(addr: String, key: String, n: usize) -> Result<String, String> {
    let (path, body) = task_request(n);
    match http(&addr, "POST", path, Some(&key), Some(&body)).await {
        Ok((200, answer)) => {
            let answer: serde_json::Value = serde_json::from_str(&answer).map_err(|e| {
                format!("task {n}: 200 with a body that is not JSON ({e}): {answer}")
            })?;
            answer["id"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("task {n}: 200 without an id: {answer}"))
        }
        Ok((status, answer)) => Err(format!("task {n}: {status} {answer}")),
        Err(e) => Err(format!("task {n}: {e}")),
    }
}

/// Submits all of `jobs` (gateway address, key, task number) at once.
fn submit_all(
    jobs: Vec<(String, String, usize)>,
) -> tokio::task::JoinHandle<Vec<Result<String, String>>> {
    submit_staggered(jobs, Duration::ZERO)
}

/// Submits `jobs`, the `i`th one `i × stagger` after the first.
fn submit_staggered(
    jobs: Vec<(String, String, usize)>,
    stagger: Duration,
) -> tokio::task::JoinHandle<Vec<Result<String, String>>> {
    let handles: Vec<_> = (0u32..)
        .zip(jobs)
        .map(|(i, (addr, key, n))| {
            tokio::spawn(async move {
                tokio::time::sleep(stagger * i).await;
                submit(addr, key, n).await
            })
        })
        .collect();
    tokio::spawn(async move {
        let mut results = Vec::new();
        for handle in handles {
            results.push(handle.await.unwrap());
        }
        results
    })
}

fn all_accepted(results: Vec<Result<String, String>>) -> Vec<String> {
    let refused: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        refused.is_empty(),
        "{} of {} submissions refused, e.g. {:?}",
        refused.len(),
        results.len(),
        &refused[..refused.len().min(5)]
    );
    results.into_iter().map(Result::unwrap).collect()
}

// ---- waiting, and the books ----

/// Every task row of these accounts (the ones a client can see).
async fn task_rows(store: &Store, customers: &[Customer]) -> Vec<Task> {
    let mut rows = Vec::new();
    for c in customers {
        let (total, page) = store
            .list_tasks(&c.id, &TaskFilter::default(), 0, 1000)
            .await
            .unwrap();
        assert_eq!(
            usize::try_from(total).unwrap(),
            page.len(),
            "over 1000 tasks"
        );
        rows.extend(page);
    }
    rows
}

fn count_states(tasks: &[Task]) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    for t in tasks {
        *counts.entry(t.state.as_str()).or_default() += 1;
    }
    counts
}

/// Waits until every task row of these accounts is terminal, and returns them.
async fn wait_all_terminal(store: &Store, customers: &[Customer], timeout: Duration) -> Vec<Task> {
    let deadline = Instant::now() + timeout;
    loop {
        let rows = task_rows(store, customers).await;
        if rows.iter().all(|t| t.state.is_terminal()) {
            return rows;
        }
        assert!(
            Instant::now() < deadline,
            "tasks not terminal after {timeout:?}: {:?}",
            count_states(&rows)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn decimal(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

/// What a succeeded task must have cost: the upstream's own usage at the configured price,
/// rounded up once to the nano-unit (DESIGN §4).
fn expected_charge(task: &Task) -> Amount {
    let result = task.result.as_ref().expect("a succeeded task has a result");
    assert!(
        result["video_url"].as_str().is_some_and(|u| !u.is_empty()),
        "{}: no video_url in {result}",
        task.id
    );
    let record = &result["record"];
    // A task of /v1/videos is billed by its model's family: tokens for a clip model.
    let family = match (task.format.as_str(), task.model.as_str()) {
        ("openai", CLIP_MODEL) => "clip",
        ("openai", _) => "generic",
        (format, _) => format,
    };
    let exact = match family {
        "clip" => {
            let tokens = record["usage"]["completion_tokens"]
                .as_u64()
                .unwrap_or_else(|| panic!("{}: no completion_tokens in {record}", task.id));
            assert!(tokens > 0, "{}: {record}", task.id);
            Decimal::from(tokens) * decimal(CLIP_PER_MILLION_TOKENS) / Decimal::from(1_000_000)
        }
        "generic" => {
            let seconds = match record["seconds"].as_str() {
                Some(s) => decimal(s).ceil().max(Decimal::ONE),
                None => Decimal::from(
                    task.request["seconds"]
                        .as_str()
                        .unwrap()
                        .parse::<u32>()
                        .unwrap(),
                ),
            };
            seconds * decimal(VIDEO_PER_SECOND)
        }
        other => panic!("{}: unknown format {other}", task.id),
    };
    Amount::from_decimal_ceil(exact).unwrap()
}

/// The books of these accounts, given every task row they have (all terminal): each succeeded
/// task charged its usage exactly once (one ledger row, its hold settled at that amount), each
/// failed one charged nothing (its hold released), no other charge, nothing still held, and
/// balance = opening − charges = the ledger's sum. Returns (succeeded, failed).
async fn check_books(store: &Store, customers: &[Customer], tasks: &[Task]) -> (usize, usize) {
    let mut charges: HashMap<String, Vec<Amount>> = HashMap::new();
    let mut charged: HashMap<String, Amount> = HashMap::new();
    for c in customers {
        let mut total = Amount::ZERO;
        for row in store.ledger(&c.id).await.unwrap() {
            match row.kind {
                LedgerKind::Charge => {
                    let task = row
                        .task_id
                        .unwrap_or_else(|| panic!("a charge without a task: {}", row.id));
                    let amount = row.amount.checked_neg().unwrap();
                    charges.entry(task).or_default().push(amount);
                    total = total.checked_add(amount).unwrap();
                }
                LedgerKind::Credit => assert_eq!(row.amount, c.opening, "{row:?}"),
                LedgerKind::Adjustment
                | LedgerKind::Redemption
                | LedgerKind::Payment
                | LedgerKind::Refund => {
                    panic!("unexpected {} {row:?}", row.kind.as_str())
                }
            }
        }
        charged.insert(c.id.clone(), total);
    }

    let (mut succeeded, mut failed) = (0, 0);
    let ids: HashSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    for task in tasks {
        let hold = task.hold_id.as_deref().expect("every task has a hold");
        let (hold_state, captured) = store.hold_state(hold).await.unwrap();
        let rows = charges.get(&task.id).cloned().unwrap_or_default();
        match task.state {
            TaskState::Succeeded => {
                succeeded += 1;
                let expected = expected_charge(task);
                assert_eq!(rows, vec![expected], "{}: charge rows", task.id);
                assert_eq!(hold_state, "settled", "{}", task.id);
                assert_eq!(captured, Some(expected), "{}", task.id);
            }
            TaskState::Failed => {
                failed += 1;
                assert!(rows.is_empty(), "{}: failed but charged {rows:?}", task.id);
                assert_eq!(hold_state, "released", "{}: {:?}", task.id, task.error);
            }
            other => panic!("{} is still {other:?}", task.id),
        }
    }
    for task in charges.keys() {
        assert!(
            ids.contains(task.as_str()),
            "a charge for unknown task {task}"
        );
    }

    for c in customers {
        let report = store.report(&c.id).await.unwrap();
        let expected = c.opening.checked_sub(charged[&c.id]).unwrap();
        assert_eq!(report.account.balance, expected, "{}: balance", c.id);
        assert_eq!(
            report.ledger_sum,
            report.account.balance.into(),
            "{}: ledger",
            c.id
        );
        assert_eq!(report.account.held, Amount::ZERO, "{}: held", c.id);
        assert_eq!(report.open_holds, 0, "{}: open holds", c.id);
        assert_eq!(store.open_holds_total(&c.id).await.unwrap(), Amount::ZERO);
    }
    (succeeded, failed)
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

// ---- the tests ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_tasks_sqlite() {
    let started = Instant::now();
    let scratch = Scratch::new("durability-sqlite");
    let sim = start_sim(knobs(100, 400)).await;
    let db = scratch.sqlite_url();
    let store = Store::connect(&db).await.unwrap();
    let customers = create_accounts(&store, &scratch.tag, 5).await;
    let config = write_config(&scratch, &sim);
    let gateway = Gateway::start(&scratch, "gateway", &config, &db).await;

    let jobs = (0..500)
        .map(|n| (gateway.addr.clone(), customers[n % 5].key.clone(), n))
        .collect();
    let ids = all_accepted(submit_all(jobs).await.unwrap());
    let submitted = started.elapsed();

    let tasks = wait_all_terminal(&store, &customers, Duration::from_secs(120)).await;
    assert_eq!(
        sorted(tasks.iter().map(|t| t.id.clone()).collect()),
        sorted(ids)
    );
    let (succeeded, failed) = check_books(&store, &customers, &tasks).await;
    assert_eq!((succeeded, failed), (450, 50));
    assert_eq!(task_events(&gateway, "succeeded").await, 450);
    eprintln!(
        "five_hundred_tasks_sqlite: 500 accepted in {submitted:?}, all settled in {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_tasks_postgres_two_processes() {
    let Ok(db) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") else {
        eprintln!("skipped: TOLLGATE_TEST_POSTGRES_URL is not set");
        return;
    };
    let started = Instant::now();
    let scratch = Scratch::new("durability-pg");
    let sim = start_sim(knobs(100, 400)).await;
    let store = Store::connect(&db).await.unwrap();
    let customers = create_accounts(&store, &scratch.tag, 5).await;
    let config = write_config(&scratch, &sim);
    let (a, b) = tokio::join!(
        Gateway::start(&scratch, "gateway-a", &config, &db),
        Gateway::start(&scratch, "gateway-b", &config, &db)
    );

    let jobs = (0..500)
        .map(|n| {
            // Half to each replica, both formats to both.
            let addr = if n % 4 < 2 { &a.addr } else { &b.addr };
            (addr.clone(), customers[n % 5].key.clone(), n)
        })
        .collect();
    let ids = all_accepted(submit_all(jobs).await.unwrap());
    let submitted = started.elapsed();

    let tasks = wait_all_terminal(&store, &customers, Duration::from_secs(120)).await;
    assert_eq!(
        sorted(tasks.iter().map(|t| t.id.clone()).collect()),
        sorted(ids)
    );
    let (succeeded, failed) = check_books(&store, &customers, &tasks).await;
    assert_eq!((succeeded, failed), (450, 50));
    // Both replicas polled, and between them finished every success exactly once.
    let (by_a, by_b) = (
        task_events(&a, "succeeded").await,
        task_events(&b, "succeeded").await,
    );
    assert!(by_a > 0 && by_b > 0, "succeeded: a {by_a}, b {by_b}");
    assert_eq!(by_a + by_b, 450, "succeeded: a {by_a}, b {by_b}");
    eprintln!(
        "five_hundred_tasks_postgres_two_processes: 500 accepted in {submitted:?}, all settled in \
         {:?} (succeeded by a: {by_a}, by b: {by_b})",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_with_tasks_in_flight_loses_nothing() {
    let started = Instant::now();
    let scratch = Scratch::new("durability-kill");
    let sim = start_sim(knobs(100, 500)).await;
    let db = scratch.sqlite_url();
    let store = Store::connect(&db).await.unwrap();
    let customers = create_accounts(&store, &scratch.tag, 3).await;
    let config = write_config(&scratch, &sim);
    let mut a = Gateway::start(&scratch, "gateway-a", &config, &db).await;
    let jobs = |range: std::ops::Range<usize>, addr: &str| -> Vec<(String, String, usize)> {
        range
            .map(|n| (addr.to_owned(), customers[n % 3].key.clone(), n))
            .collect()
    };

    // 20 quick tasks, then 80 that run for 3 s: the quick ones finish while the rest are in
    // flight. These 100 are the simulator's first, so exactly 10 of them fail upstream.
    let mut first = all_accepted(submit_all(jobs(0..20, &a.addr)).await.unwrap());
    sim.knobs().set(knobs(100, 3000));
    first.extend(all_accepted(
        submit_all(jobs(20..100, &a.addr)).await.unwrap(),
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rows = task_rows(&store, &customers).await;
        if rows
            .iter()
            .filter(|t| t.state == TaskState::Succeeded)
            .count()
            >= 3
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "nothing succeeded: {:?}",
            count_states(&rows)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A slow upstream and a second batch arriving one every 10 ms, so that at the crash some of
    // it has been answered, some waits in `submitting`, and some never arrives.
    sim.knobs().set(KnobSettings {
        latency_ms: 100,
        ..knobs(100, 3000)
    });
    let second = submit_staggered(jobs(100..140, &a.addr), Duration::from_millis(10));
    tokio::time::sleep(Duration::from_millis(400)).await;
    a.kill();
    let at_kill = count_states(&task_rows(&store, &customers).await);
    sim.knobs().set(knobs(100, 3000));
    let second = second.await.unwrap();
    let second_accepted: Vec<String> = second.into_iter().filter_map(Result::ok).collect();
    let live_at_kill: usize = ["submitting", "queued", "running"]
        .iter()
        .map(|s| at_kill.get(s).copied().unwrap_or(0))
        .sum();
    assert!(
        live_at_kill > 0,
        "nothing was in flight at the kill: {at_kill:?}"
    );

    // Another replica on the same database picks everything up: tasks leased by the dead one
    // once their lease runs out, orphaned submissions after the submission timeout.
    let b = Gateway::start(&scratch, "gateway-b", &config, &db).await;
    let tasks = wait_all_terminal(&store, &customers, Duration::from_secs(90)).await;
    let by_id: HashMap<&str, &Task> = tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    for id in first.iter().chain(&second_accepted) {
        assert!(
            by_id.contains_key(id.as_str()),
            "accepted task {id} is not in the store"
        );
    }
    let first_failed = first
        .iter()
        .filter(|id| by_id[id.as_str()].state == TaskState::Failed)
        .count();
    assert_eq!(
        first_failed, 10,
        "of the first 100, only the simulator's failures fail"
    );
    let (succeeded, failed) = check_books(&store, &customers, &tasks).await;
    let orphaned = tasks
        .iter()
        .filter(|t| {
            t.error
                .as_ref()
                .is_some_and(|e| e["code"] == "submission_interrupted")
        })
        .count();
    eprintln!(
        "sigkill_with_tasks_in_flight_loses_nothing: at the kill {at_kill:?}; second batch: {} of \
         40 accepted; {} rows: {succeeded} succeeded, {failed} failed ({orphaned} orphaned in \
         submitting, refunded); b: {} succeeded, {} failed; {:?} in all",
        second_accepted.len(),
        tasks.len(),
        task_events(&b, "succeeded").await,
        task_events(&b, "failed").await,
        started.elapsed()
    );
}
