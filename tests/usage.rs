//! The usage log end to end (`docs/decisions.md`, "The usage log"): one record per billable
//! request — charged, refused, failed upstream, streamed — and per finished task, agreeing with
//! the ledger to the nano-unit, written in the ledger's own journal batches, and reported by
//! `Store::usage_summary` as `tollgate usage --group-by` prints it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TestGateway;
use serde_json::json;
use std::time::{Duration, Instant};
use tollgate_billing::Amount;
use tollgate_sim::KnobSettings;
use tollgate_store::{
    AccessPolicy, JournalEntry, JournalWriter, LedgerKind, PolicyHolder, UsageFilter, UsageGroup,
    UsageRecord,
};

const CONFIG: &str = r#"
[[channels]]
name = "openai"
format = "openai-embeddings"
base_url = "sim"

[[channels]]
name = "t2a"
format = "t2a"
base_url = "sim"
first_byte_timeout_ms = 3000
idle_timeout_ms = 3000

[[channels]]
name = "ark"
format = "ark"
base_url = "sim"
first_byte_timeout_ms = 3000
idle_timeout_ms = 3000

[tasks]
first_poll_ms = 100
poll_interval_ms = 200
max_backoff_ms = 400
sweep_interval_seconds = 1

[models."text-embedding-3-small"]
kind = "embeddings"
channels = ["openai"]
price = { meter = "tokens", per_million_tokens = "0.02" }

[models."text-embedding-3-large"]
kind = "embeddings"
channels = ["openai"]
price = { meter = "tokens", per_million_tokens = "0.13" }

[models."speech-2.8-hd"]
kind = "speech"
channels = ["t2a"]
price = { meter = "characters", per_million_characters = "100" }

[models."clipgen-cn-2.0-260128"]
kind = "clip-video"
channels = ["ark"]
price = { meter = "video_tokens", per_million_tokens = "2.4" }
"#;

async fn records(gw: &TestGateway, account: &str) -> Vec<UsageRecord> {
    gw.state.ledger.flush().await;
    let filter = UsageFilter {
        account_id: Some(account.to_owned()),
        ..UsageFilter::default()
    };
    let mut records = gw.store.usage_records(&filter, 1000, None).await.unwrap();
    records.reverse();
    records
}

fn embed(model: &str) -> serde_json::Value {
    json!({"model": model, "input": "The quick brown fox jumps over the lazy dog."})
}

#[tokio::test]
async fn every_billable_request_leaves_one_record_that_agrees_with_the_ledger() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;

    // Charged, whole answer.
    let ok = gw
        .post_json("/v1/embeddings", &key, &embed("text-embedding-3-small"))
        .await;
    assert_eq!(ok.status, 200);
    let request_id = ok.headers["x-request-id"].to_str().unwrap().to_owned();
    // Charged, streamed.
    let streamed = gw
        .post_json(
            "/v1/t2a_v2",
            &key,
            &json!({"model": "speech-2.8-hd", "text": "Hello there, world.", "stream": true,
                    "voice_setting": {"voice_id": "English_Graceful_Lady"}}),
        )
        .await;
    assert_eq!(streamed.status, 200);
    // Refused by the key's policy: 403, before any hold.
    let narrow = gw.store.create_key(&account, "narrow").await.unwrap();
    gw.store
        .set_policy(
            &PolicyHolder::Key(narrow.id.clone()),
            &AccessPolicy {
                models: Some(vec!["text-embedding-3-small".into()]),
                ..AccessPolicy::default()
            },
        )
        .await
        .unwrap();
    let refused = gw
        .post_json(
            "/v1/embeddings",
            &narrow.secret,
            &embed("text-embedding-3-large"),
        )
        .await;
    assert_eq!(refused.status, 403);
    // The upstream fails: held, released, nothing charged.
    gw.set_knobs(KnobSettings {
        fail_status: Some(500),
        ..KnobSettings::default()
    });
    let failed = gw
        .post_json("/v1/embeddings", &key, &embed("text-embedding-3-small"))
        .await;
    assert!(failed.status >= 500, "{}", failed.status);
    gw.set_knobs(KnobSettings::default());
    // Not logged: reads, and requests nobody could be named for.
    assert_eq!(gw.get("/v1/models", &key).await.status, 200);
    assert_eq!(
        gw.post_json(
            "/v1/embeddings",
            "tg-nobody",
            &embed("text-embedding-3-small")
        )
        .await
        .status,
        401
    );

    gw.settled(&account).await;
    let records = records(&gw, &account).await;
    assert_eq!(records.len(), 4, "{records:#?}");
    let charges: Vec<_> = gw
        .store
        .ledger(&account)
        .await
        .unwrap()
        .into_iter()
        .filter(|row| row.kind == LedgerKind::Charge)
        .collect();
    assert_eq!(charges.len(), 2);

    let r = &records[0];
    assert_eq!(
        (r.kind, r.endpoint.as_str(), r.status),
        ("request", "embeddings", 200)
    );
    assert_eq!(r.model.as_deref(), Some("text-embedding-3-small"));
    assert_eq!(r.channel.as_deref(), Some("openai"));
    assert_eq!(r.request_id.as_deref(), Some(request_id.as_str()));
    assert_eq!(r.meter.as_deref(), Some("tokens"));
    assert!(r.units > 0);
    let row = charges
        .iter()
        .find(|c| c.request_id.as_deref() == Some(request_id.as_str()))
        .unwrap();
    assert_eq!(
        r.charge,
        Amount::from_nanos(-row.amount.nanos()),
        "the record's charge is the ledger's"
    );
    assert_eq!(r.quantity, row.quantity);
    assert!(r.hold >= r.charge && r.hold.is_positive());
    assert!(r.upstream_ms.is_some());
    assert!(r.key_id.as_deref().is_some_and(|k| k.starts_with("key_")));

    let s = &records[1];
    assert_eq!((s.endpoint.as_str(), s.status), ("t2a", 200));
    assert_eq!(s.meter.as_deref(), Some("characters"));
    assert_eq!(s.units, 19, "\"Hello there, world.\" is 19 characters");
    let row = charges
        .iter()
        .find(|c| c.request_id == s.request_id)
        .unwrap();
    assert_eq!(s.charge, Amount::from_nanos(-row.amount.nanos()));

    let x = &records[2];
    assert_eq!((x.endpoint.as_str(), x.status), ("embeddings", 403));
    assert_eq!(x.key_id.as_deref(), Some(narrow.id.as_str()));
    assert_eq!(x.model.as_deref(), Some("text-embedding-3-large"));
    assert_eq!((x.charge, x.hold), (Amount::ZERO, Amount::ZERO));
    assert_eq!(x.meter, None);

    let f = &records[3];
    assert!(f.status >= 500);
    assert_eq!(f.charge, Amount::ZERO);
    assert!(f.hold.is_positive(), "it was held before the upstream call");
    assert_eq!(f.channel.as_deref(), Some("openai"));

    // The report: per model and meter, the sums of the records.
    let summary = gw
        .store
        .usage_summary(
            &UsageFilter {
                account_id: Some(account.clone()),
                ..UsageFilter::default()
            },
            UsageGroup::Model,
        )
        .await
        .unwrap();
    let small: Vec<_> = summary
        .iter()
        .filter(|s| s.group == "text-embedding-3-small")
        .collect();
    assert_eq!(
        small.len(),
        2,
        "tokens, and the failure that counted nothing"
    );
    let tokens = small
        .iter()
        .find(|s| s.meter.as_deref() == Some("tokens"))
        .unwrap();
    assert_eq!((tokens.requests, tokens.errors), (1, 0));
    assert_eq!(tokens.charge, r.charge.into());
    let nothing = small.iter().find(|s| s.meter.is_none()).unwrap();
    assert_eq!((nothing.requests, nothing.errors), (1, 1));
    let total = summary
        .iter()
        .fold(tollgate_billing::Total::ZERO, |sum, s| sum.plus(s.charge));
    assert_eq!(total, r.charge.checked_add(s.charge).unwrap().into());
    gw.stop().await;
}

#[tokio::test]
async fn a_charged_requests_record_rides_in_its_charges_transaction() {
    let gw = TestGateway::with_config(CONFIG).await;
    let (account, key) = gw.account("10").await;
    // The first request takes the lease (its own transaction).
    let reply = gw
        .post_json("/v1/embeddings", &key, &embed("text-embedding-3-small"))
        .await;
    assert_eq!(reply.status, 200);
    gw.settled(&account).await;
    let before = ledger_batches(&gw).await;
    let n = 20;
    for _ in 0..n {
        let reply = gw
            .post_json("/v1/embeddings", &key, &embed("text-embedding-3-small"))
            .await;
        assert_eq!(reply.status, 200);
    }
    gw.settled(&account).await;
    // One at a time, each charge is a batch of its own; a record in a batch of its own would
    // double that. A lease renewal or two may add a batch.
    let added = ledger_batches(&gw).await - before;
    assert!(
        added <= n + 2,
        "{added} journal transactions for {n} requests"
    );
    assert_eq!(records(&gw, &account).await.len(), n as usize + 1);
    gw.stop().await;
}

#[tokio::test]
async fn a_task_leaves_a_record_when_created_and_one_when_it_ends() {
    // A channel name of its own: on PostgreSQL every test's gateway shares the tasks table, and
    // another test's worker leasing this task would poll its own simulator, be told 404 and
    // fail the task as lost (a CI run did). tests/video_tasks.rs does the same.
    let channel = format!("ark-{}", common::unique());
    let config = CONFIG
        .replace("name = \"ark\"", &format!("name = \"{channel}\""))
        .replace(
            "channels = [\"ark\"]",
            &format!("channels = [\"{channel}\"]"),
        );
    assert_eq!(config.matches(&channel).count(), 2);
    let gw = TestGateway::with_config(&config).await;
    let (account, key) = gw.account("10").await;
    let created = gw
        .post_json(
            "/api/v3/contents/generations/tasks",
            &key,
            &json!({"model": "clipgen-cn-2.0-260128",
                    "content": [{"type": "text", "text": "A lighthouse at dusk"}]}),
        )
        .await;
    assert_eq!(
        created.status,
        200,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let task_id = created.json()["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let task = gw.store.task(&task_id).await.unwrap().unwrap();
        if task.state.is_terminal() {
            break;
        }
        assert!(Instant::now() < deadline, "the task did not finish");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let records = records(&gw, &account).await;
    assert_eq!(records.len(), 2, "{records:#?}");
    let (request, task) = (&records[0], &records[1]);
    assert_eq!(
        (request.kind, request.endpoint.as_str(), request.status),
        ("request", "clip_tasks", 200)
    );
    assert_eq!(request.task_id.as_deref(), Some(task_id.as_str()));
    assert_eq!(request.charge, Amount::ZERO);
    assert!(request.hold.is_positive());
    assert_eq!(
        (task.kind, task.endpoint.as_str(), task.status),
        ("task", "clip_tasks", 200)
    );
    assert_eq!(task.task_id.as_deref(), Some(task_id.as_str()));
    assert_eq!(task.request_id, request.request_id);
    assert_eq!(task.hold, request.hold);
    assert_eq!(task.meter.as_deref(), Some("video_tokens"));
    let charge = gw
        .store
        .ledger(&account)
        .await
        .unwrap()
        .into_iter()
        .find(|row| row.task_id.as_deref() == Some(task_id.as_str()))
        .unwrap();
    assert_eq!(task.charge, Amount::from_nanos(-charge.amount.nanos()));
    assert_eq!(task.quantity, charge.quantity);
    gw.stop().await;
}

/// On a database of its own (pruning is database-wide, and other tests share PostgreSQL).
#[tokio::test]
async fn old_records_are_pruned_pages_follow_each_other_and_the_ledger_stays() {
    let dir = std::env::temp_dir().join(format!("tollgate-usage-{}", common::unique()));
    let store = tollgate_store::Store::connect(&format!("sqlite://{}/t.db", dir.display()))
        .await
        .unwrap();
    let (account, _) = store
        .create_account("pruned", "1".parse().unwrap())
        .await
        .unwrap();
    let now = tollgate_journal::clock::now_millis();
    let day = 86_400_000;
    let entries: Vec<JournalEntry> = (0..5)
        .map(|i| {
            let mut r = UsageRecord::new("request", &account.id, "embeddings");
            r.stamp_at(now - (5 - i) * day);
            r.status = 200;
            JournalEntry::Usage(r)
        })
        .collect();
    let writer = JournalWriter {
        owner: "test".into(),
        lease_ttl_ms: 30_000,
        grant: |_, _, _| None,
    };
    store.write_journal(&writer, entries).await.unwrap();
    let all = UsageFilter::default();
    // Pages of two, newest first, each after the last id of the one before.
    let first = store.usage_records(&all, 2, None).await.unwrap();
    let second = store
        .usage_records(&all, 2, Some(&first[1].id))
        .await
        .unwrap();
    assert_eq!(first.len() + second.len(), 4);
    assert!(first[0].created_at > first[1].created_at);
    assert!(first[1].created_at > second[0].created_at);
    // By day: five days, one record each.
    let days = store.usage_summary(&all, UsageGroup::Day).await.unwrap();
    assert_eq!(days.len(), 5);
    assert!(days.iter().all(|d| d.requests == 1));
    // Keep two days: three go, two per statement; the ledger's credit row stays.
    let pruned = store.prune_usage(now - 2 * day - 1, 2).await.unwrap();
    assert_eq!(pruned, 3);
    assert_eq!(store.usage_records(&all, 10, None).await.unwrap().len(), 2);
    assert_eq!(store.ledger(&account.id).await.unwrap().len(), 1);
    store.close().await;
}

/// The hourly rollup answers exactly what the records answer, whatever the grouping and however
/// ragged the period (on a database of its own: the rollup's watermark is database-wide).
#[tokio::test]
async fn the_rollup_sums_exactly_what_the_records_sum() {
    let dir = std::env::temp_dir().join(format!("tollgate-rollup-{}", common::unique()));
    let store = tollgate_store::Store::connect(&format!("sqlite://{}/t.db", dir.display()))
        .await
        .unwrap();
    let (a, _) = store
        .create_account("a", "1".parse().unwrap())
        .await
        .unwrap();
    let (b, _) = store
        .create_account("b", "1".parse().unwrap())
        .await
        .unwrap();
    let now = tollgate_journal::clock::now_millis();
    let hour = 3_600_000;
    let models = [Some("m1"), Some("m2"), None];
    let mut seed = 7u64;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let entries: Vec<JournalEntry> = (0..2000)
        .map(|i| {
            let account = if i % 3 == 0 { &b.id } else { &a.id };
            let mut r = UsageRecord::new("request", account, "embeddings");
            // Over the last three days, the last hour included (not rolled up yet).
            r.stamp_at(now - i64::try_from(next(72 * 3600)).unwrap() * 1000);
            r.status = [200, 200, 200, 429, 502][usize::try_from(next(5)).unwrap()];
            r.model = models[usize::try_from(next(3)).unwrap()].map(str::to_owned);
            r.meter = (r.model.is_some()).then(|| "tokens".to_owned());
            // Now and then an upstream's lie: no sum may overflow on it.
            r.units = if i % 500 == 7 { u64::MAX } else { next(1000) };
            r.charge = Amount::from_nanos(i64::try_from(next(1_000_000)).unwrap());
            JournalEntry::Usage(r)
        })
        .collect();
    let writer = JournalWriter {
        owner: "test".into(),
        lease_ttl_ms: 30_000,
        grant: |_, _, _| None,
    };
    store.write_journal(&writer, entries).await.unwrap();

    let filters = [
        UsageFilter::default(),
        UsageFilter {
            account_id: Some(a.id.clone()),
            since: Some(now - 50 * hour + 1234),
            until: Some(now - 3 * hour - 77),
            ..UsageFilter::default()
        },
        UsageFilter {
            model: Some("m2".into()),
            since: Some(now - 24 * hour),
            ..UsageFilter::default()
        },
        UsageFilter {
            until: Some(now - 30 * hour),
            ..UsageFilter::default()
        },
    ];
    let groups = [
        UsageGroup::Day,
        UsageGroup::Hour,
        UsageGroup::Model,
        UsageGroup::Account,
        UsageGroup::Status,
    ];
    let mut before = Vec::new();
    for f in &filters {
        for g in groups {
            before.push(store.usage_summary(f, g).await.unwrap());
        }
    }
    assert_eq!(store.usage_rolled_until().await.unwrap(), None);
    let mut hours = 0;
    loop {
        match store.roll_up_usage(now).await.unwrap() {
            0 => break,
            n => hours += n,
        }
    }
    assert!(hours >= 70, "{hours} hours rolled up");
    let rolled = store.usage_rolled_until().await.unwrap().unwrap();
    assert!(rolled <= now - hour && rolled > now - 2 * hour - 1);
    let mut after = Vec::new();
    for f in &filters {
        for g in groups {
            after.push(store.usage_summary(f, g).await.unwrap());
        }
    }
    assert_eq!(before, after);
    // Nothing more to roll up until another hour ends; pruning takes the rollup's old hours.
    assert_eq!(store.roll_up_usage(now).await.unwrap(), 0);
    store.prune_usage(now - 24 * hour, 5000).await.unwrap();
    let days = store
        .usage_summary(&UsageFilter::default(), UsageGroup::Hour)
        .await
        .unwrap();
    assert!(days.len() <= 26 * 2, "{}", days.len());
    store.close().await;
}

/// The journal transactions committed so far, as `/metrics` says.
async fn ledger_batches(gw: &TestGateway) -> u64 {
    let text =
        String::from_utf8(gw.request("GET", "/metrics", &[], "").await.body.to_vec()).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("tollgate_ledger_batches_total "))
        .unwrap()
        .to_owned();
    line.rsplit(' ').next().unwrap().parse::<u64>().unwrap()
}
