//! The price book's versions as an operator uses them (docs/architecture.md, "Prices"): the
//! built binary serving, `tollgate prices set` changing a price mid-run, requests after the change
//! charged at the new version, a task submitted before it settled at the old one, every charge
//! re-derived by `tollgate audit --recompute`, and restarts that keep the operator's version or
//! take the configuration's new one, saying so in the log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Gateway, Scratch, audit, http};
use tollgate_billing::Amount;
use tollgate_sim::KnobSettings;
use tollgate_store::{LedgerKind, Store};

const EMBEDDING_MODEL: &str = "text-embedding-3-small";
const VIDEO_MODEL: &str = "wave-3-0-video";

fn write_config(scratch: &Scratch, sim: &str, video_per_second: &str) -> PathBuf {
    let text = format!(
        r#"
[simulator]
enabled = false

[tasks]
first_poll_ms = 200
poll_interval_ms = 300
sweep_interval_seconds = 1

[[channels]]
name = "emb"
format = "openai-embeddings"
base_url = "{sim}"

[[channels]]
name = "video"
format = "generic-video"
base_url = "{sim}"

[models."{EMBEDDING_MODEL}"]
kind = "embeddings"
channels = ["emb"]
price = {{ meter = "tokens", per_million_tokens = "0.02" }}

[models."{VIDEO_MODEL}"]
kind = "generic-video"
channels = ["video"]
price = {{ meter = "video_seconds", per_second = "{video_per_second}" }}
"#
    );
    let path = scratch.dir.join("tollgate.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `tollgate ARGS… --config CONFIG --database-url DB`: what it printed, or a panic.
fn tollgate(config: &Path, db: &str, args: &[&str]) -> String {
    let run = support::cli(config, db, args);
    assert!(run.ok, "tollgate {args:?}: {}", run.said());
    run.stdout
}

/// `tollgate ARGS…`, passing or not: whether it passed, and everything it printed.
fn tollgate_status(config: &Path, db: &str, args: &[&str]) -> (bool, String) {
    let run = support::cli(config, db, args);
    (run.ok, run.said())
}

async fn submit_video(addr: &str, key: &str, seconds: u32) -> String {
    let body = serde_json::json!({"model": VIDEO_MODEL, "prompt": "prices", "seconds": seconds.to_string()});
    let (status, answer) = http(
        addr,
        "POST",
        "/v1/video/generations",
        Some(key),
        Some(&body.to_string()),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{answer}");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    answer["id"].as_str().unwrap().to_owned()
}

/// Embedding requests until one is charged at `version`: its charge row.
async fn embed_until_version(
    addr: &str,
    key: &str,
    store: &Store,
    account: &str,
    version: i64,
) -> tollgate_store::LedgerEntry {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let body = serde_json::json!({"model": EMBEDDING_MODEL, "input": "price versions"});
        let (status, answer) = http(
            addr,
            "POST",
            "/v1/embeddings",
            Some(key),
            Some(&body.to_string()),
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{answer}");
        let newest = store
            .ledger(account)
            .await
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == LedgerKind::Charge && r.task_id.is_none())
            .max_by_key(|r| r.created_at)
            .unwrap();
        if newest.price_version == Some(version) {
            return newest;
        }
        assert!(
            Instant::now() < deadline,
            "no embedding charged at version {version}: {newest:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_price_change_mid_run_prices_each_charge_at_its_own_version() {
    let scratch = Scratch::new("prices");
    let sim = tollgate_sim::start(
        "127.0.0.1:0".parse().unwrap(),
        KnobSettings {
            task_queued_ms: Some(1_500),
            task_running_ms: Some(4_000),
            ..KnobSettings::default()
        },
    )
    .await
    .unwrap();
    let db = scratch.sqlite_url();
    let config = write_config(&scratch, &sim.base_url(), "0.1");
    let gateway = Gateway::start(&scratch, "a", &config, &db).await;
    let store = Store::connect(&db).await.unwrap();
    let (account, key) = store
        .create_account(&format!("prices-{}", scratch.tag), "100".parse().unwrap())
        .await
        .unwrap();

    // Version 1 of each, from the configuration, in effect from the start.
    let history = tollgate(&config, &db, &["prices", "history", VIDEO_MODEL, "--json"]);
    let history: serde_json::Value = serde_json::from_str(&history).unwrap();
    assert_eq!(history["data"][0]["version"], 1, "{history:#}");
    assert_eq!(history["data"][0]["source"], "config", "{history:#}");

    let first = embed_until_version(&gateway.addr, &key.secret, &store, &account.id, 1).await;
    // A task submitted at version 1, still running when the price changes.
    let before = submit_video(&gateway.addr, &key.secret, 3).await;

    let said = tollgate(
        &config,
        &db,
        &["prices", "set", VIDEO_MODEL, "per_second=0.2"],
    );
    assert!(said.contains("version 2"), "{said}");
    tollgate(
        &config,
        &db,
        &["prices", "set", EMBEDDING_MODEL, "per_million_tokens=0.04"],
    );

    // The running gateway follows; the same request now costs twice as much.
    let second = embed_until_version(&gateway.addr, &key.secret, &store, &account.id, 2).await;
    assert_eq!(first.quantity, second.quantity);
    assert_eq!(
        second.amount.nanos(),
        2 * first.amount.nanos(),
        "{first:?} {second:?}"
    );
    let after = submit_video(&gateway.addr, &key.secret, 3).await;

    // The task submitted before the change settles at the old price, the one after at the new.
    let old = support::task_charge(&store, &account.id, &before).await;
    assert_eq!(old.price_version, Some(1), "{old:?}");
    assert_eq!(old.amount, "-0.3".parse::<Amount>().unwrap(), "{old:?}");
    let new = support::task_charge(&store, &account.id, &after).await;
    assert_eq!(new.price_version, Some(2), "{new:?}");
    assert_eq!(new.amount, "-0.6".parse::<Amount>().unwrap(), "{new:?}");

    // Every charge re-derives from its own version.
    let (report, ok) = audit(&db, Some(&config));
    assert!(ok, "audit: {report:#}");
    assert!(
        report["recompute"]["recomputed"].as_u64().unwrap() >= 4,
        "{report:#}"
    );
    assert_eq!(report["recompute"]["violation_count"], 0, "{report:#}");

    // A restart with the configuration as it was keeps the operator's version, and says so.
    drop(gateway);
    let gateway = Gateway::start(&scratch, "b", &config, &db).await;
    let log = std::fs::read_to_string(&gateway.log).unwrap();
    assert!(
        log.contains("an operator's price version is in effect"),
        "{log}"
    );
    let shown = tollgate(&config, &db, &["prices", "show", VIDEO_MODEL, "--json"]);
    assert!(shown.contains("\"version\":2"), "{shown}");

    // A restart with a new price in the configuration makes a version of it, and says so.
    drop(gateway);
    let config = write_config(&scratch, &sim.base_url(), "0.15");
    let gateway = Gateway::start(&scratch, "c", &config, &db).await;
    let log = std::fs::read_to_string(&gateway.log).unwrap();
    assert!(log.contains("the configuration's price changed"), "{log}");
    let history = tollgate(&config, &db, &["prices", "history", VIDEO_MODEL]);
    assert_eq!(history.lines().count(), 3, "{history}");
    assert!(history.lines().nth(1).unwrap().contains("cli"), "{history}");
    let third = submit_video(&gateway.addr, &key.secret, 2).await;
    let charged = support::task_charge(&store, &account.id, &third).await;
    assert_eq!(charged.price_version, Some(3), "{charged:?}");
    assert_eq!(
        charged.amount,
        "-0.3".parse::<Amount>().unwrap(),
        "{charged:?}"
    );

    // An operator's mistakes, refused: another meter, a negative price, an unknown model.
    for args in [
        &[
            "prices",
            "set",
            VIDEO_MODEL,
            "meter=tokens",
            "per_million_tokens=1",
        ][..],
        &["prices", "set", VIDEO_MODEL, "per_second=-1"][..],
        &["prices", "set", "no-such-model", "per_second=1"][..],
    ] {
        assert!(!tollgate_status(&config, &db, args).0, "{args:?} was taken");
    }
    let (report, ok) = audit(&db, Some(&config));
    assert!(ok, "audit: {report:#}");
    drop(gateway);
    store.close().await;
    sim.shutdown().await;
}

/// A real excerpt of a public price list (`tests/data/price-lists/README.md`).
fn price_list(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/price-lists")
        .join(name)
        .display()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_price_list_is_compared_then_imported_as_versions() {
    let scratch = Scratch::new("price-import");
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let db = scratch.sqlite_url();
    // The embedding at 0.025 a million tokens (the list says 0.02), the video at 0.05 a second
    // (the list's sora-2 says 0.1: twice as dear).
    let config = write_config(&scratch, &sim.base_url(), "0.05");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "per_million_tokens = \"0.02\"",
        "per_million_tokens = \"0.025\"",
    );
    std::fs::write(&config, text).unwrap();
    let gateway = Gateway::start(&scratch, "a", &config, &db).await;
    let store = Store::connect(&db).await.unwrap();
    let (account, key) = store
        .create_account(&format!("import-{}", scratch.tag), "100".parse().unwrap())
        .await
        .unwrap();
    let litellm = price_list("litellm-excerpt.json");
    let maps = [
        "--map",
        "text-embedding-3-small=text-embedding-3-small",
        "--map",
        "wave-3-0-video=sora-2",
    ];

    // Without --apply: the differences, and nothing changes.
    let mut args = vec!["prices", "import", litellm.as_str(), "--json"];
    args.extend(maps);
    let (ok, said) = tollgate_status(&config, &db, &args);
    assert!(ok, "{said}");
    let shown: serde_json::Value = serde_json::from_str(said.lines().next().unwrap()).unwrap();
    assert_eq!(shown["format"], "litellm", "{shown:#}");
    let rows = shown["models"].as_array().unwrap();
    assert_eq!(rows[0]["listed"]["per_million_tokens"], "0.02", "{shown:#}");
    assert_eq!(rows[0]["change_percent"], "-20", "{shown:#}");
    assert_eq!(rows[1]["listed"]["per_second"], "0.1", "{shown:#}");
    assert_eq!(rows[1]["change_percent"], "+100", "{shown:#}");
    assert!(
        rows[1]["status"].as_str().unwrap().starts_with("held back"),
        "{shown:#}"
    );
    let history = tollgate(&config, &db, &["prices", "history", EMBEDDING_MODEL]);
    assert_eq!(history.lines().count(), 1, "{history}");

    // --apply: the fall becomes version 2; the doubling is held back, and the command says so.
    args.push("--apply");
    let (ok, said) = tollgate_status(&config, &db, &args);
    assert!(!ok, "a held-back rise must fail the import: {said}");
    assert!(said.contains("1 change(s) held back"), "{said}");
    let history = tollgate(&config, &db, &["prices", "history", VIDEO_MODEL]);
    assert_eq!(history.lines().count(), 1, "{history}");
    // The running gateway charges the next embedding at the imported price.
    let charged = embed_until_version(&gateway.addr, &key.secret, &store, &account.id, 2).await;
    let shown = tollgate(&config, &db, &["prices", "show", EMBEDDING_MODEL, "--json"]);
    assert!(shown.contains("\"per_million_tokens\":\"0.02\""), "{shown}");
    assert_eq!(charged.price_version, Some(2));

    // --force applies the rise; a second import finds everything unchanged and adds nothing.
    args.push("--force");
    let (ok, said) = tollgate_status(&config, &db, &args);
    assert!(ok, "{said}");
    let (ok, said) = tollgate_status(&config, &db, &args);
    assert!(ok, "{said}");
    assert_eq!(said.matches("\"unchanged\"").count(), 2, "{said}");
    let history = tollgate(&config, &db, &["prices", "history", VIDEO_MODEL]);
    assert_eq!(history.lines().count(), 2, "{history}");

    // Issue 42: a list that drops a price to zero (or more than halves it) is held back: every
    // request would be charged nothing from then on.
    for (price, why) in [
        ("0", "falls to zero"),
        ("0.000000001", "falls more than 50%"),
    ] {
        let free = scratch.dir.join(format!("free-{price}.json"));
        std::fs::write(
            &free,
            format!(
                r#"{{"text-embedding-3-small": {{"input_cost_per_token": {price}, "litellm_provider": "openai", "mode": "embedding"}}}}"#
            ),
        )
        .unwrap();
        let (ok, said) = tollgate_status(
            &config,
            &db,
            &[
                "prices",
                "import",
                free.to_str().unwrap(),
                "--map",
                "text-embedding-3-small=text-embedding-3-small",
                "--apply",
            ],
        );
        assert!(!ok, "{said}");
        assert!(said.contains(why), "{said}");
        let history = tollgate(&config, &db, &["prices", "history", EMBEDDING_MODEL]);
        assert_eq!(history.lines().count(), 2, "no version added: {history}");
    }

    // models.dev's layout: per-million token prices and per-minute audio; ids are
    // provider/model. ada-002's 0.10 is five times the embedding's 0.02: held back; an id the
    // list lacks and a model the configuration lacks fail the import, naming each.
    let models_dev = price_list("models-dev-excerpt.json");
    let (ok, said) = tollgate_status(
        &config,
        &db,
        &[
            "prices",
            "import",
            &models_dev,
            "--map",
            "text-embedding-3-small=openai/text-embedding-ada-002",
            "--map",
            "text-embedding-3-small=openai/no-such-model",
            "--map",
            "no-such-model=google/gemini-2.5-flash",
        ],
    );
    assert!(!ok, "{said}");
    assert!(said.contains("(models.dev)"), "{said}");
    assert!(said.contains("(+400%)"), "{said}");
    assert!(
        said.contains("\"openai/no-such-model\" is not in the list"),
        "{said}"
    );
    assert!(said.contains("not a configured model"), "{said}");
    assert!(said.contains("2 mapping(s) could not be priced"), "{said}");

    // Every charge, before and after the import, re-derives from its own version.
    let (report, ok) = audit(&db, Some(&config));
    assert!(ok, "audit: {report:#}");
    assert_eq!(report["recompute"]["violation_count"], 0, "{report:#}");
    drop(gateway);

    // Issue 42 item 12. The adversary: an insider who edits a price version's tariff (a row
    // never updated). Only a re-derivation sees it, and plain `tollgate audit` now re-derives;
    // `--quick` is the check without it.
    let path = db.strip_prefix("sqlite://").unwrap().to_owned();
    let edited = scratch.dir.join("edited-price.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(&format!("VACUUM INTO '{}'", edited.display()), [])
        .unwrap();
    drop(conn);
    let conn = rusqlite::Connection::open(&edited).unwrap();
    let changed = conn
        .execute(
            "UPDATE price_versions SET tariff = '{\"meter\":\"tokens\",\"per_million_tokens\":\"0.2\"}'
             WHERE model = ?1 AND version = 2",
            [EMBEDDING_MODEL],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    let edited_url = format!("sqlite://{}", edited.display());
    let (ok, said) = tollgate_status(&config, &edited_url, &["audit"]);
    assert!(!ok, "the plain audit saw nothing: {said}");
    assert!(said.contains("VIOLATION"), "{said}");
    let (ok, said) = tollgate_status(&config, &edited_url, &["audit", "--quick"]);
    assert!(ok, "the quick check does not re-derive: {said}");
}
