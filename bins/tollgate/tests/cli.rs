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
    let config = tollgate_gateway::Config::parse(&text).unwrap();
    assert_eq!(config.listen, "127.0.0.1:8080");
    assert_eq!(text, tollgate_gateway::config::DEFAULT_CONFIG);
}
