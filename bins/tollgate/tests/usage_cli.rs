//! `tollgate usage` as an operator runs it: a real `tollgate serve` on the embedded default
//! (simulated vendors) takes requests, and the command reads them back — listed, totalled per
//! model and per day, as a table, JSON and CSV — agreeing with the account's ledger.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Command;
use std::time::{Duration, Instant};
use support::{Gateway, Scratch, http};

fn tollgate(db: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(args)
        .args(["--database-url", db])
        .env_remove("TOLLGATE_CONFIG")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn ok(db: &str, args: &[&str]) -> String {
    let (ok, stdout, stderr) = tollgate(db, args);
    assert!(ok, "tollgate {args:?} failed: {stderr}");
    stdout
}

#[tokio::test]
async fn usage_lists_and_totals_what_the_gateway_served() {
    let scratch = Scratch::new("usage-cli");
    let db = scratch.sqlite_url();
    let config = scratch.dir.join("tollgate.toml");
    std::fs::write(&config, ok(&db, &["config", "default"])).unwrap();
    let key = ok(&db, &["keys", "create", "--name", "shop", "--balance", "5"]);
    let key = key.trim();
    let gateway = Gateway::start(&scratch, "gateway", &config, &db).await;

    let embed = r#"{"model": "text-embedding-3-small", "input": "The quick brown fox."}"#;
    let speech = r#"{"model": "speech-2.8-hd", "text": "Hello there.",
                     "voice_setting": {"voice_id": "English_Graceful_Lady"}}"#;
    for (path, body) in [
        ("/v1/embeddings", embed),
        ("/v1/embeddings", embed),
        ("/v1/t2a_v2", speech),
    ] {
        let (status, text) = http(&gateway.addr, "POST", path, Some(key), Some(body))
            .await
            .unwrap();
        assert_eq!(status, 200, "{path}: {}", &text[..text.len().min(300)]);
    }
    // Records are journaled within milliseconds of the answers.
    let deadline = Instant::now() + Duration::from_secs(20);
    let listed = loop {
        let listed: serde_json::Value =
            serde_json::from_str(&ok(&db, &["usage", "--account", "shop", "--json"])).unwrap();
        if listed["records"].as_array().unwrap().len() == 3 {
            break listed;
        }
        assert!(
            Instant::now() < deadline,
            "records did not arrive: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let records = listed["records"].as_array().unwrap();
    // Newest first; amounts are decimal strings, times RFC 3339.
    assert_eq!(records[0]["endpoint"], "t2a");
    assert_eq!(records[0]["meter"], "characters");
    assert_eq!(records[0]["units"], 12);
    assert!(
        records
            .iter()
            .all(|r| r["charge"].is_string() && r["status"] == 200)
    );
    assert!(records[0]["time"].as_str().unwrap().ends_with('Z'));
    let shown: serde_json::Value =
        serde_json::from_str(&ok(&db, &["keys", "show", "shop", "--json"])).unwrap();
    let spent: tollgate_billing::Amount =
        records
            .iter()
            .fold(tollgate_billing::Amount::ZERO, |sum, r| {
                sum.checked_add(r["charge"].as_str().unwrap().parse().unwrap())
                    .unwrap()
            });
    let balance: tollgate_billing::Amount = shown["balance"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        balance.checked_add(spent).unwrap(),
        "5".parse().unwrap(),
        "the records' charges are what the balance lost"
    );

    // Per model, as CSV: a header, then one row per model and meter.
    let csv = ok(
        &db,
        &["usage", "--account", "shop", "--group-by", "model", "--csv"],
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "group,meter,requests,errors,units,charge");
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[1].starts_with("speech-2.8-hd,characters,1,0,12,"),
        "{csv}"
    );
    assert!(
        lines[2].starts_with("text-embedding-3-small,tokens,2,0,"),
        "{csv}"
    );
    // Per day, as a table: today's bucket.
    let table = ok(&db, &["usage", "--group-by", "day", "--account", "shop"]);
    assert!(table.contains("T00:00:00Z"), "{table}");
    // Filters narrow; an empty result says so.
    let none = ok(
        &db,
        &["usage", "--account", "shop", "--since", "2999-01-01"],
    );
    assert!(none.contains("no usage records match"), "{none}");
    let speech_only: serde_json::Value = serde_json::from_str(&ok(
        &db,
        &[
            "usage",
            "--endpoint",
            "t2a",
            "--model",
            "speech-2.8-hd",
            "--json",
        ],
    ))
    .unwrap();
    assert_eq!(speech_only["records"].as_array().unwrap().len(), 1);
    // Bad flags are named.
    let (good, _, err) = tollgate(&db, &["usage", "--group-by", "week"]);
    assert!(!good && err.contains("--group-by"), "{err}");
    let (good, _, err) = tollgate(&db, &["usage", "--since", "yesterday"]);
    assert!(!good && err.contains("--since"), "{err}");
    let (good, _, err) = tollgate(&db, &["usage", "--endpoint", "video"]);
    assert!(!good && err.contains("--endpoint"), "{err}");
    drop(gateway);
}
