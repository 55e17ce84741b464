//! The CLI contracts of DESIGN §3, run as a user would: the built binary, a temporary database.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

struct Cli {
    db: String,
}

impl Cli {
    fn new() -> Cli {
        let dir = std::env::temp_dir().join(format!(
            "tollgate-cli-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        Cli {
            db: format!("sqlite://{}/t.db", dir.display()),
        }
    }

    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(args)
            .args(["--database-url", &self.db])
            .env_remove("TOLLGATE_CONFIG")
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args);
        assert!(ok, "tollgate {args:?} failed: {stderr}");
        stdout
    }
}

#[test]
fn keys_create_prints_the_secret_alone_and_show_json_has_decimal_strings() {
    let cli = Cli::new();
    let out = cli.ok(&["keys", "create", "--name", "a", "--balance", "1.5"]);
    let lines: Vec<_> = out.lines().collect();
    assert_eq!(lines.len(), 1, "only the key on stdout: {out:?}");
    assert!(lines[0].starts_with("tg-") && lines[0].len() == 51, "{out}");

    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["keys", "show", "a", "--json"])).unwrap();
    assert_eq!(shown["name"], "a");
    assert_eq!(shown["balance"], "1.5");
    assert_eq!(shown["held"], "0");
    assert_eq!(shown["open_holds"], 0);

    cli.ok(&["keys", "credit", "a", "0.25"]);
    cli.ok(&["keys", "credit", "a", "-0.5"]);
    let listed: serde_json::Value =
        serde_json::from_str(&cli.ok(&["keys", "list", "--json"])).unwrap();
    assert_eq!(listed[0]["balance"], "1.25");
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["keys", "show", "a", "--json"])).unwrap();
    assert_eq!(shown["ledger_rows"], 3);
    assert_eq!(shown["ledger_sum"], "1.25");

    // Found by id too; disabled shows in the listing.
    let id = shown["id"].as_str().unwrap().to_owned();
    cli.ok(&["keys", "disable", &id]);
    assert!(cli.ok(&["keys", "list"]).contains("disabled"));
}

#[test]
fn bad_amounts_and_names_fail_with_a_message() {
    let cli = Cli::new();
    let (ok, _, err) = cli.run(&["keys", "create", "--name", "b", "--balance", "1e3"]);
    assert!(!ok);
    assert!(err.contains("not an amount"), "{err}");
    cli.ok(&["keys", "create", "--name", "b", "--balance", "1"]);
    let (ok, _, err) = cli.run(&["keys", "create", "--name", "b", "--balance", "1"]);
    assert!(!ok && err.contains("already exists"), "{err}");
    let (ok, _, err) = cli.run(&["keys", "show", "nobody"]);
    assert!(!ok && err.contains("not found"), "{err}");
}

#[test]
fn config_default_prints_the_embedded_configuration() {
    let cli = Cli::new();
    let text = cli.ok(&["config", "default"]);
    assert!(text.starts_with("# tollgate configuration."));
    let config = tollgate_settings::Config::parse(&text).unwrap();
    assert_eq!(config.listen, "127.0.0.1:8080");
    assert_eq!(text, tollgate_settings::config::DEFAULT_CONFIG);
}

#[test]
fn read_only_commands_never_create_a_database_and_say_which_one_they_used() {
    let cli = Cli::new();
    let path = cli.db.trim_start_matches("sqlite://").to_owned();
    for args in [
        &["keys", "list"][..],
        &["keys", "show", "a"],
        &["keys", "credit", "a", "1"],
        &["keys", "disable", "a"],
        &["audit"],
    ] {
        let (ok, stdout, err) = cli.run(args);
        assert!(!ok, "{args:?} succeeded on a missing database: {stdout}");
        assert!(err.contains("no database at"), "{args:?}: {err}");
        assert!(err.contains("--database-url"), "{args:?}: {err}");
        assert!(
            !std::path::Path::new(&path).exists(),
            "{args:?} created {path}"
        );
    }
    // `keys create` makes it, and every command names it on stderr (stdout stays the output).
    let (ok, stdout, err) = cli.run(&["keys", "create", "--name", "a", "--balance", "1"]);
    assert!(ok, "{err}");
    assert!(err.contains(&format!("database: {}", cli.db)), "{err}");
    assert!(!stdout.contains("database"), "{stdout}");
    let (ok, stdout, err) = cli.run(&["keys", "list", "--json"]);
    assert!(ok && err.contains("database: "), "{err}");
    serde_json::from_str::<serde_json::Value>(&stdout).unwrap();
}

#[test]
fn a_credit_that_would_leave_a_balance_negative_needs_allow_negative() {
    let cli = Cli::new();
    cli.ok(&["keys", "create", "--name", "bob", "--balance", "0.4"]);
    let (ok, _, err) = cli.run(&["keys", "credit", "bob", "-5"]);
    assert!(!ok, "a balance was driven below zero without a word");
    assert!(err.contains("--allow-negative"), "{err}");
    assert!(err.contains("below zero"), "{err}");
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["keys", "show", "bob", "--json"])).unwrap();
    assert_eq!(shown["balance"], "0.4", "nothing was written");
    // Within the balance it needs nothing; beyond it, the flag.
    cli.ok(&["keys", "credit", "bob", "-0.4"]);
    let out = cli.ok(&["keys", "credit", "bob", "-1", "--allow-negative"]);
    assert!(out.contains("balance -1"), "{out}");
}

#[test]
fn an_empty_name_is_called_a_name_problem() {
    let cli = Cli::new();
    let (ok, _, err) = cli.run(&["keys", "create", "--name", " ", "--balance", "1"]);
    assert!(!ok);
    assert!(err.contains("invalid name"), "{err}");
    assert!(!err.contains("amount"), "{err}");
}

#[test]
fn keys_add_revoke_and_enable_manage_one_key_at_a_time() {
    let cli = Cli::new();
    let first = cli.ok(&["keys", "create", "--name", "k", "--balance", "1"]);
    let second = cli.ok(&["keys", "add", "k", "--name", "ci"]);
    assert_eq!(
        second.lines().count(),
        1,
        "only the key on stdout: {second:?}"
    );
    assert!(second.starts_with("tg-") && second.trim() != first.trim());
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["keys", "show", "k", "--json"])).unwrap();
    let keys = shown["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    let second_id = keys[1]["id"].as_str().unwrap().to_owned();

    assert!(cli.ok(&["keys", "revoke", &second_id]).contains("revoked"));
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["keys", "show", "k", "--json"])).unwrap();
    assert_eq!(shown["keys"][1]["revoked"], true);
    assert_eq!(shown["keys"][0]["disabled"], false);
    // A revoked key stays revoked; revoke names a key, not an account.
    let (ok, _, stderr) = cli.run(&["keys", "enable", &second_id]);
    assert!(!ok && stderr.contains("revoked"), "{stderr}");
    let (ok, _, stderr) = cli.run(&["keys", "revoke", "k"]);
    assert!(!ok && stderr.contains("not a key id"), "{stderr}");

    // An account disabled and enabled again.
    cli.ok(&["keys", "disable", "k"]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&cli.ok(&["keys", "show", "k", "--json"]))
            .unwrap()["disabled"],
        true
    );
    assert!(cli.ok(&["keys", "enable", "k"]).contains("enabled"));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&cli.ok(&["keys", "show", "k", "--json"]))
            .unwrap()["disabled"],
        false
    );
}

#[test]
fn policy_set_show_and_clear_on_accounts_and_keys() {
    let cli = Cli::new();
    cli.ok(&["keys", "create", "--name", "p", "--balance", "1"]);
    let out = cli.ok(&[
        "policy",
        "set",
        "p",
        "--models",
        "text-embedding-*, tts-1",
        "--expires",
        "2027-01-31T08:00:00+08:00",
    ]);
    assert!(out.contains("text-embedding-*,tts-1"), "{out}");
    // A second set changes only what it names.
    cli.ok(&["policy", "set", "p", "--ips", "10.0.0.0/8,2001:db8::/32"]);
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["policy", "show", "p", "--json"])).unwrap();
    assert_eq!(
        shown["models"],
        serde_json::json!(["text-embedding-*", "tts-1"])
    );
    assert_eq!(shown["expires_at"], "2027-01-31T00:00:00Z");
    assert_eq!(
        shown["ips"],
        serde_json::json!(["10.0.0.0/8", "2001:db8::/32"])
    );
    assert_eq!(shown["endpoints"], serde_json::Value::Null);
    assert!(shown["account"].as_str().unwrap().starts_with("acct_"));

    // A key has a policy of its own.
    let account: serde_json::Value =
        serde_json::from_str(&cli.ok(&["keys", "show", "p", "--json"])).unwrap();
    let key_id = account["keys"][0]["id"].as_str().unwrap().to_owned();
    cli.ok(&["policy", "set", &key_id, "--endpoints", "embeddings"]);
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["policy", "show", &key_id, "--json"])).unwrap();
    assert_eq!(shown["key"], key_id.as_str());
    assert_eq!(shown["endpoints"], serde_json::json!(["embeddings"]));
    assert_eq!(shown["models"], serde_json::Value::Null);

    // Bad input changes nothing and says why.
    for (args, says) in [
        (vec!["--endpoints", "embedding"], "not an endpoint"),
        (vec!["--ips", "10.0.0.0/33"], "prefix length"),
        (vec!["--expires", "next week"], "RFC 3339"),
        (vec!["--models", " , "], "at least one"),
        (vec![], "nothing to set"),
    ] {
        let mut full = vec!["policy", "set", "p"];
        full.extend(args);
        let (ok, _, stderr) = cli.run(&full);
        assert!(!ok && stderr.contains(says), "{full:?}: {stderr}");
    }
    let (ok, _, stderr) = cli.run(&["policy", "show", "nobody"]);
    assert!(!ok && stderr.contains("nobody"), "{stderr}");

    cli.ok(&["policy", "clear", "p"]);
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["policy", "show", "p", "--json"])).unwrap();
    assert_eq!(shown["models"], serde_json::Value::Null);
    assert_eq!(shown["expires_at"], serde_json::Value::Null);
    assert!(
        cli.ok(&["policy", "show", "p"])
            .contains("expires     never")
    );
}

#[test]
fn policy_set_takes_rate_limits_budgets_and_task_limits() {
    let cli = Cli::new();
    cli.ok(&["keys", "create", "--name", "limited", "--balance", "1"]);
    cli.ok(&[
        "policy",
        "set",
        "limited",
        "--rpm",
        "60",
        "--per-minute",
        "tokens=1000",
        "--per-minute",
        "characters=500",
        "--concurrency",
        "4",
        "--streams",
        "2",
        "--daily-budget",
        "2.5",
        "--monthly-budget",
        "40",
        "--tasks-in-flight",
        "2",
    ]);
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["policy", "show", "limited", "--json"])).unwrap();
    assert_eq!(shown["rpm"], 60);
    assert_eq!(shown["per_minute"]["tokens"], 1000);
    assert_eq!(shown["per_minute"]["characters"], 500);
    assert_eq!(shown["concurrency"], 4);
    assert_eq!(shown["streams"], 2);
    assert_eq!(shown["daily_budget"], "2.5");
    assert_eq!(shown["monthly_budget"], "40");
    assert_eq!(shown["tasks_in_flight"], 2);
    // Another meter joins; the others stay.
    cli.ok(&["policy", "set", "limited", "--per-minute", "tokens=2000"]);
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["policy", "show", "limited", "--json"])).unwrap();
    assert_eq!(shown["per_minute"]["tokens"], 2000);
    assert_eq!(shown["per_minute"]["characters"], 500);
    for (args, flag) in [
        (&["--rpm", "0"][..], "--rpm"),
        (&["--per-minute", "words=5"][..], "--per-minute"),
        (&["--per-minute", "tokens"][..], "--per-minute"),
        (&["--daily-budget", "-1"][..], "--daily-budget"),
        (&["--monthly-budget", "lots"][..], "--monthly-budget"),
    ] {
        let mut all = vec!["policy", "set", "limited"];
        all.extend_from_slice(args);
        let (ok, _, err) = cli.run(&all);
        assert!(!ok && err.contains(flag), "{args:?}: {err}");
    }
}

#[test]
fn groups_are_made_listed_and_assigned_by_name() {
    let cli = Cli::new();
    cli.ok(&["keys", "create", "--name", "g", "--balance", "1"]);
    assert!(
        cli.ok(&["groups", "set", "gold", "--multiplier", "0.80"])
            .contains("× 0.8")
    );
    cli.ok(&["groups", "set", "premium", "--multiplier", "1.5"]);
    cli.ok(&["groups", "set", "gold", "--multiplier", "0.75"]);
    let listed: serde_json::Value =
        serde_json::from_str(&cli.ok(&["groups", "list", "--json"])).unwrap();
    assert_eq!(
        listed,
        serde_json::json!([
            {"name": "gold", "multiplier": "0.75"},
            {"name": "premium", "multiplier": "1.5"},
        ])
    );
    for (args, says) in [
        (vec!["groups", "set", "x", "--multiplier", "-1"], "negative"),
        (
            vec!["groups", "set", "x", "--multiplier", "lots"],
            "decimal",
        ),
        (
            vec!["policy", "set", "g", "--group", "silver"],
            "no price group",
        ),
    ] {
        let (ok, _, stderr) = cli.run(&args);
        assert!(!ok && stderr.contains(says), "{args:?}: {stderr}");
    }
    cli.ok(&["policy", "set", "g", "--group", "gold"]);
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["policy", "show", "g", "--json"])).unwrap();
    assert_eq!(shown["group"], "gold");
    // A model of its own in a group; the group's multiplier stays.
    let out = cli.ok(&["groups", "set", "gold", "--model", "gen-2.5-pro=0.5"]);
    assert!(
        out.contains("× 0.75") && out.contains("gen-2.5-pro × 0.5"),
        "{out}"
    );
    let listed: serde_json::Value =
        serde_json::from_str(&cli.ok(&["groups", "list", "--json"])).unwrap();
    assert_eq!(listed[0]["models"]["gen-2.5-pro"], "0.5");
    cli.ok(&["groups", "set", "gold", "--drop-model", "gen-2.5-pro"]);
    let listed: serde_json::Value =
        serde_json::from_str(&cli.ok(&["groups", "list", "--json"])).unwrap();
    assert!(listed[0].get("models").is_none(), "{listed}");
    let (ok, _, err) = cli.run(&["groups", "set", "silver", "--model", "x=1"]);
    assert!(!ok && err.contains("--multiplier"), "{err}");
    let (ok, _, err) = cli.run(&["groups", "set", "gold", "--model", "x"]);
    assert!(!ok && err.contains("MODEL=X"), "{err}");
}

/// The CLI is the admin API's scriptable twin (issue 13): the same operations, checked and
/// recorded in the admin audit log by the same code.
#[test]
fn admin_tokens_idempotent_credits_rotation_channels_and_the_change_log() {
    let cli = Cli::new();
    let token = cli.ok(&["admin", "token", "create", "--name", "billing"]);
    assert!(
        token.trim().starts_with("tga-") && token.lines().count() == 1,
        "{token}"
    );
    let (ok, _, err) = cli.run(&["admin", "token", "create", "--name", "billing"]);
    assert!(!ok && err.contains("already exists"), "{err}");
    cli.ok(&[
        "admin",
        "token",
        "create",
        "--name",
        "viewer",
        "--read-only",
    ]);
    let listed: serde_json::Value =
        serde_json::from_str(&cli.ok(&["admin", "token", "list", "--json"])).unwrap();
    assert_eq!(listed[1]["read_only"], true);
    assert!(
        !cli.ok(&["admin", "token", "list"]).contains(token.trim()),
        "never the secret"
    );
    cli.ok(&["admin", "token", "revoke", "viewer"]);

    cli.ok(&["keys", "create", "--name", "shop"]);
    for _ in 0..2 {
        cli.ok(&[
            "keys",
            "credit",
            "shop",
            "3",
            "--reason",
            "payment pi_9",
            "--idempotency-key",
            "pi_9",
        ]);
    }
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["keys", "show", "shop", "--json"])).unwrap();
    assert_eq!(shown["balance"], "3", "credited once");
    let (ok, _, err) = cli.run(&["keys", "credit", "shop", "3", "--reason", " "]);
    assert!(!ok && err.contains("--reason"), "{err}");

    let key = shown["keys"][0]["id"].as_str().unwrap().to_owned();
    let new = cli.ok(&["keys", "rotate", &key]);
    assert!(new.trim().starts_with("tg-"));
    let shown: serde_json::Value =
        serde_json::from_str(&cli.ok(&["keys", "show", "shop", "--json"])).unwrap();
    assert_eq!(shown["keys"][0]["revoked"], true);
    assert_eq!(shown["keys"][1]["revoked"], false);

    // The embedded configuration's channels.
    assert!(cli.ok(&["channels", "list"]).contains("sim-openai"));
    cli.ok(&["channels", "disable", "sim-openai"]);
    assert!(
        cli.ok(&["channels", "list"])
            .contains("sim-openai               off")
    );
    let (ok, _, err) = cli.run(&["channels", "disable", "nope"]);
    assert!(!ok && err.contains("no channel named"), "{err}");
    cli.ok(&["channels", "enable", "sim-openai"]);
    assert!(cli.ok(&["tasks", "list"]).contains("CREATED"));
    let (ok, _, err) = cli.run(&["tasks", "cancel", "cgt-nope"]);
    assert!(!ok && err.contains("no task"), "{err}");

    let changes: serde_json::Value =
        serde_json::from_str(&cli.ok(&["admin", "changes", "--json"])).unwrap();
    let actions: Vec<&str> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "channel.enable",
            "channel.disable",
            "key.rotate",
            "account.credit",
            "account.create",
            "admin_token.revoke",
            "admin_token.create",
            "admin_token.create",
        ]
    );
    let ledger: serde_json::Value =
        serde_json::from_str(&cli.ok(&["keys", "ledger", "shop", "--json"])).unwrap();
    assert_eq!(ledger["rows"][0]["note"], "payment pi_9");
    assert!(cli.ok(&["keys", "ledger", "shop"]).contains("payment pi_9"));
    assert!(
        changes["changes"][0]["actor"]
            .as_str()
            .unwrap()
            .starts_with("cli:")
    );
}
