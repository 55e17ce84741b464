//! The customer portal over real sockets (docs/operations.md, "The customer portal"): an
//! operator invites a person with `tollgate accounts invite`; the person sets a password,
//! signs in, redeems a code, turns TOTP on and signs in with it and with a recovery code.
//! The adversaries: a guesser of passwords (throttled per person and per address), a site
//! that plants a session cookie (fixation) or posts without the CSRF token, a person of
//! another account, an operator removing a person mid-session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::portal::{Signed, accept, call, invitation, sign_in};
use support::{Gateway, Scratch, cli};
use tollgate_sim::KnobSettings;

/// Bob, a person of the other account, sets his password with `token` and signs in.
async fn bob_signs_in(addr: &str, token: &str) -> Signed {
    let password = "bob's long password";
    assert_eq!(accept(addr, token, password).await.status, 200);
    let body = json!({"email": "bob@example.com", "password": password});
    sign_in(addr, body).await.ok().unwrap()
}

/// A scratch directory, its SQLite database, a configuration and the simulator it points at.
async fn setup(name: &str) -> (Scratch, String, std::path::PathBuf, tollgate_sim::SimHandle) {
    let scratch = Scratch::new(name);
    let db = scratch.sqlite_url();
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), KnobSettings::default())
        .await
        .unwrap();
    let config = support::embeddings_config(&scratch, &sim.base_url(), "openai");
    (scratch, db, config, sim)
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_redeems_and_turns_totp_on() {
    let (scratch, db, config, _sim) = setup("portal").await;
    for name in ["acme", "other"] {
        assert!(
            cli(
                &config,
                &db,
                &["keys", "create", "--name", name, "--balance", "1"]
            )
            .ok
        );
    }
    let token = invitation(&config, &db, "acme", "Ada@Example.com");
    let other_token = invitation(&config, &db, "other", "bob@example.com");
    let gateway = Gateway::start(&scratch, "gateway", &config, &db).await;
    let addr = gateway.addr.as_str();

    // The page itself: no inline script allowed, not frameable.
    let page = call(addr, "GET", "/portal", None, None, None).await;
    assert_eq!(page.status, 200);
    assert!(
        page.head.contains("script-src 'self'") && page.head.contains("frame-ancestors 'none'")
    );

    // The invitation: a weak password refused, then set once.
    let weak = accept(addr, &token, "short").await;
    assert_eq!(weak.status, 400, "{}", weak.body);
    assert!(
        weak.body.contains("\"param\":\"password\""),
        "{}",
        weak.body
    );
    let password = "correct horse battery staple";
    let set = accept(addr, &token, password).await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(set.json()["email"], "ada@example.com");
    let again = accept(addr, &token, "another long password").await;
    assert_eq!(again.status, 404, "a link works once: {}", again.body);

    // Signed in: the cookie's flags; a planted cookie is not the session (fixation).
    let planted = "ab".repeat(32);
    let answer = call(
        addr,
        "POST",
        "/portal/v1/sessions",
        Some(&planted),
        None,
        Some(json!({"email": "ada@example.com", "password": password})),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    let cookie_line = answer
        .head
        .lines()
        .find(|l| l.starts_with("set-cookie:"))
        .unwrap()
        .to_owned();
    for flag in [
        "httponly",
        "samesite=strict",
        "path=/portal",
        "max-age=43200",
    ] {
        assert!(cookie_line.contains(flag), "{cookie_line}");
    }
    assert!(
        !cookie_line.contains("secure"),
        "plain http: no Secure flag ({cookie_line})"
    );
    let ada = Signed {
        cookie: answer.cookie().unwrap(),
        csrf: answer.json()["csrf_token"].as_str().unwrap().to_owned(),
    };
    assert_ne!(ada.cookie, planted);
    let fixed = call(
        addr,
        "GET",
        "/portal/v1/session",
        Some(&planted),
        None,
        None,
    )
    .await;
    assert_eq!(fixed.status, 401);
    let me = call(
        addr,
        "GET",
        "/portal/v1/session",
        Some(&ada.cookie),
        None,
        None,
    )
    .await;
    assert_eq!(me.status, 200);
    assert_eq!(me.json()["person"]["email"], "ada@example.com");

    // A code, redeemed: without the CSRF token refused, with it credited.
    let out = scratch.dir.join("codes.txt");
    assert!(
        cli(
            &config,
            &db,
            &[
                "codes",
                "create",
                "--amount",
                "3",
                "--count",
                "1",
                "--out",
                out.to_str().unwrap()
            ]
        )
        .ok
    );
    let code = std::fs::read_to_string(&out).unwrap().trim().to_owned();
    let forged = call(
        addr,
        "POST",
        "/portal/v1/redemptions",
        Some(&ada.cookie),
        None,
        Some(json!({"code": code})),
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(forged.body.contains("csrf_token_missing"));
    let wrong_csrf = call(
        addr,
        "POST",
        "/portal/v1/redemptions",
        Some(&ada.cookie),
        Some(&"0".repeat(64)),
        Some(json!({"code": code})),
    )
    .await;
    assert_eq!(wrong_csrf.status, 403);
    let redeemed = call(
        addr,
        "POST",
        "/portal/v1/redemptions",
        Some(&ada.cookie),
        Some(&ada.csrf),
        Some(json!({"code": code})),
    )
    .await;
    assert_eq!(redeemed.status, 201, "{}", redeemed.body);
    assert_eq!(redeemed.json()["balance"], "4");
    let account = call(
        addr,
        "GET",
        "/portal/v1/account",
        Some(&ada.cookie),
        None,
        None,
    )
    .await;
    assert_eq!(account.json()["balance"], "4");
    assert_eq!(account.json()["name"], "acme");
    let ledger = call(
        addr,
        "GET",
        "/portal/v1/ledger",
        Some(&ada.cookie),
        None,
        None,
    )
    .await
    .json();
    assert_eq!(ledger["data"][0]["kind"], "redemption");
    let acme_row = ledger["data"][0]["id"].as_str().unwrap().to_owned();

    // Another account's person sees only theirs, whatever cursor they send.
    let bob = bob_signs_in(addr, &other_token).await;
    let bob_ledger = call(
        addr,
        "GET",
        &format!("/portal/v1/ledger?before={acme_row}"),
        Some(&bob.cookie),
        None,
        None,
    )
    .await
    .json();
    let rows = bob_ledger["data"].as_array().unwrap();
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r["id"] != acme_row.as_str()),
        "{bob_ledger}"
    );
    let bob_account = call(
        addr,
        "GET",
        "/portal/v1/account",
        Some(&bob.cookie),
        None,
        None,
    )
    .await
    .json();
    assert_eq!(bob_account["name"], "other");

    // TOTP on: the secret, a code, recovery codes.
    let begun = call(
        addr,
        "POST",
        "/portal/v1/totp",
        Some(&ada.cookie),
        Some(&ada.csrf),
        None,
    )
    .await;
    assert_eq!(begun.status, 200, "{}", begun.body);
    let secret = begun.json()["secret"].as_str().unwrap().to_owned();
    assert!(
        begun.json()["otpauth_uri"]
            .as_str()
            .unwrap()
            .starts_with("otpauth://totp/tollgate:ada%40example.com?secret=")
    );
    let wrong = call(
        addr,
        "POST",
        "/portal/v1/totp/confirm",
        Some(&ada.cookie),
        Some(&ada.csrf),
        Some(json!({"code": "000000"})),
    )
    .await;
    assert!(
        wrong.status == 400
            || tollgate_portal::auth::totp_code(&secret, now()).unwrap() == "000000"
    );
    let first = tollgate_portal::auth::totp_code(&secret, now()).unwrap();
    let confirmed = call(
        addr,
        "POST",
        "/portal/v1/totp/confirm",
        Some(&ada.cookie),
        Some(&ada.csrf),
        Some(json!({"code": first})),
    )
    .await;
    assert_eq!(confirmed.status, 200, "{}", confirmed.body);
    let recovery: Vec<String> = confirmed.json()["recovery_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(recovery.len(), 10);

    // Signed out: the cookie cleared and the session over.
    let out_answer = call(
        addr,
        "DELETE",
        "/portal/v1/session",
        Some(&ada.cookie),
        Some(&ada.csrf),
        None,
    )
    .await;
    assert_eq!(out_answer.status, 200);
    assert!(out_answer.head.contains("max-age=0"));
    assert_eq!(
        call(
            addr,
            "GET",
            "/portal/v1/session",
            Some(&ada.cookie),
            None,
            None
        )
        .await
        .status,
        401
    );

    // Password alone is not enough now; the code already used is not taken again; the next
    // step's code is.
    let half = sign_in(
        addr,
        json!({"email": "ada@example.com", "password": password}),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(half.status, 401);
    assert!(half.body.contains("totp_required"), "{}", half.body);
    let replay = sign_in(
        addr,
        json!({"email": "ada@example.com", "password": password, "code": first}),
    )
    .await
    .err()
    .unwrap();
    assert!(
        replay.body.contains("wrong_code"),
        "a code is good once: {}",
        replay.body
    );
    let next = tollgate_portal::auth::totp_code(&secret, now() + 30).unwrap();
    assert!(
        sign_in(
            addr,
            json!({"email": "ada@example.com", "password": password, "code": next})
        )
        .await
        .is_ok()
    );
    // A recovery code, once.
    let with_recovery = json!({"email": "ada@example.com", "password": password, "recovery_code": recovery[3].to_lowercase()});
    assert!(sign_in(addr, with_recovery.clone()).await.is_ok());
    assert!(sign_in(addr, with_recovery).await.is_err());

    // The operator removes Bob: his session ends at once.
    let bob_id = cli(&config, &db, &["accounts", "people", "other", "--json"]);
    let bob_id = serde_json::from_str::<Value>(&bob_id.stdout).unwrap()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(cli(&config, &db, &["accounts", "remove-person", &bob_id]).ok);
    assert_eq!(
        call(
            addr,
            "GET",
            "/portal/v1/account",
            Some(&bob.cookie),
            None,
            None
        )
        .await
        .status,
        401
    );

    let (report, clean) = support::audit(&db, Some(&config));
    assert!(clean, "{report}");
}

/// The adversary: a guesser of passwords. Five wrong passwords for one person lock that person
/// for the window, even with the right password then; thirty from one address lock the address
/// for every person. A wrong email costs the same as a wrong password and says the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_are_throttled_per_person_and_address() {
    let (scratch, db, config, _sim) = setup("portal-guess").await;
    assert!(
        cli(
            &config,
            &db,
            &["keys", "create", "--name", "acme", "--balance", "1"]
        )
        .ok
    );
    let token = invitation(&config, &db, "acme", "ada@example.com");
    let gateway = Gateway::start(&scratch, "gateway", &config, &db).await;
    let addr = gateway.addr.as_str();
    let password = "correct horse battery staple";
    let set = accept(addr, &token, password).await;
    assert_eq!(set.status, 200);

    let unknown = sign_in(
        addr,
        json!({"email": "nobody@example.com", "password": password}),
    )
    .await
    .err()
    .unwrap();
    let wrong = sign_in(
        addr,
        json!({"email": "ada@example.com", "password": "not the password"}),
    )
    .await
    .err()
    .unwrap();
    assert_eq!((unknown.status, wrong.status), (401, 401));
    assert_eq!(
        unknown.json()["error"]["message"],
        wrong.json()["error"]["message"]
    );
    for _ in 0..4 {
        let wrong = sign_in(
            addr,
            json!({"email": "ADA@example.com", "password": "not the password"}),
        )
        .await
        .err()
        .unwrap();
        assert_eq!(wrong.status, 401);
    }
    let locked = sign_in(
        addr,
        json!({"email": "ada@example.com", "password": password}),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(locked.status, 429, "{}", locked.body);
    assert!(locked.head.contains("retry-after:"));
    assert!(locked.body.contains("too_many_sign_ins"));
    // Seven attempts from this address so far (a refused one counts too); twenty-three more,
    // each for another person, and the address is closed to everyone.
    for n in 0..23 {
        let wrong = sign_in(
            addr,
            json!({"email": format!("guess{n}@example.com"), "password": "x"}),
        )
        .await
        .err()
        .unwrap();
        assert_eq!(wrong.status, 401, "{}", wrong.body);
    }
    let closed = sign_in(
        addr,
        json!({"email": "someone@example.com", "password": "x"}),
    )
    .await
    .err()
    .unwrap();
    assert_eq!(closed.status, 429, "{}", closed.body);
    assert!(closed.body.contains("this address"), "{}", closed.body);
}

/// Keys, usage and statements as a person of the account sees them: a key made with limits
/// inside the account's policy (one above it refused, naming the field), used with its secret
/// (shown once), its request in the usage with its explanation, another account's key and
/// request as unknown as none, the key revoked; the statement downloaded and verified offline
/// against the operator's public key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_usage_and_a_statement_verified_offline() {
    let (scratch, db, config, _sim) = setup("portal-keys").await;
    // A signing key for the ledger's checkpoints.
    let key_file = scratch.dir.join("ledger.key");
    let made = cli(
        &config,
        &db,
        &["ledger", "keygen", "--out", key_file.to_str().unwrap()],
    );
    assert!(made.ok, "{}", made.said());
    let public = made
        .said()
        .lines()
        .find_map(|l| l.strip_prefix("public key  "))
        .unwrap()
        .trim()
        .to_owned();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "{text}\n[ledger]\nsigning_key_file = {:?}\n",
            key_file.display().to_string()
        ),
    )
    .unwrap();
    for name in ["acme", "other"] {
        assert!(
            cli(
                &config,
                &db,
                &["keys", "create", "--name", name, "--balance", "5"]
            )
            .ok
        );
    }
    assert!(
        cli(
            &config,
            &db,
            &[
                "policy",
                "set",
                "acme",
                "--rpm",
                "100",
                "--daily-budget",
                "2"
            ]
        )
        .ok
    );
    let token = invitation(&config, &db, "acme", "ada@example.com");
    let gateway = Gateway::start(&scratch, "gateway", &config, &db).await;
    let addr = gateway.addr.as_str();
    assert_eq!(
        accept(addr, &token, "correct horse battery staple")
            .await
            .status,
        200
    );
    let ada = sign_in(
        addr,
        json!({"email": "ada@example.com", "password": "correct horse battery staple"}),
    )
    .await
    .ok()
    .unwrap();
    let post = |path: &'static str, body: Value| {
        let (cookie, csrf) = (ada.cookie.clone(), ada.csrf.clone());
        async move { call(addr, "POST", path, Some(&cookie), Some(&csrf), Some(body)).await }
    };

    // Limits above the account's own are refused by name; within them, a key.
    let above = post(
        "/portal/v1/keys",
        json!({"name": "app", "limits": {"rpm": 500}}),
    )
    .await;
    assert_eq!(above.status, 400, "{}", above.body);
    assert!(above.body.contains("limits.rpm"), "{}", above.body);
    let over = post(
        "/portal/v1/keys",
        json!({"name": "app", "limits": {"daily_budget": "3"}}),
    )
    .await;
    assert!(over.body.contains("limits.daily_budget"), "{}", over.body);
    let group = post(
        "/portal/v1/keys",
        json!({"name": "app", "limits": {"group": "cheap"}}),
    )
    .await;
    assert_eq!(
        group.status, 400,
        "a price group is the operator's: {}",
        group.body
    );
    let created = post(
        "/portal/v1/keys",
        json!({"name": "app", "limits": {"rpm": 50, "daily_budget": "1"}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let secret = created.json()["secret"].as_str().unwrap().to_owned();
    let key_id = created.json()["id"].as_str().unwrap().to_owned();
    let listed = call(
        addr,
        "GET",
        "/portal/v1/keys",
        Some(&ada.cookie),
        None,
        None,
    )
    .await;
    assert!(!listed.body.contains(&secret), "a secret is shown once");
    let shown = cli(&config, &db, &["policy", "show", &key_id, "--json"]);
    assert!(
        shown.stdout.contains("\"rpm\": 50") || shown.stdout.contains("\"rpm\":50"),
        "{}",
        shown.said()
    );

    // The key works; its request shows in the usage, explained, without the channel.
    let (status, _) = support::http(
        addr,
        "POST",
        "/v1/embeddings",
        Some(&secret),
        Some(r#"{"model":"text-embedding-3-small","input":"portal"}"#),
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    let usage = call(
        addr,
        "GET",
        "/portal/v1/usage",
        Some(&ada.cookie),
        None,
        None,
    )
    .await
    .json();
    let record = &usage["data"][0];
    assert_eq!(record["model"], "text-embedding-3-small");
    assert!(record.get("channel").is_none(), "{record}");
    let request_id = record["request_id"].as_str().unwrap().to_owned();
    let why = call(
        addr,
        "GET",
        &format!("/portal/v1/charges/{request_id}"),
        Some(&ada.cookie),
        None,
        None,
    )
    .await;
    assert_eq!(why.status, 200, "{}", why.body);
    assert_eq!(why.json()["data"][0]["model"], "text-embedding-3-small");

    // Another account's person: Ada's request and key are unknown to them.
    let bob_token = invitation(&config, &db, "other", "bob@example.com");
    let bob = bob_signs_in(addr, &bob_token).await;
    let theirs = call(
        addr,
        "GET",
        &format!("/portal/v1/charges/{request_id}"),
        Some(&bob.cookie),
        None,
        None,
    )
    .await;
    assert_eq!(theirs.status, 404);
    let revoke_path = format!("/portal/v1/keys/{key_id}/revoke");
    let stolen = call(
        addr,
        "POST",
        &revoke_path,
        Some(&bob.cookie),
        Some(&bob.csrf),
        None,
    )
    .await;
    assert_eq!(stolen.status, 404, "{}", stolen.body);
    let bob_usage = call(
        addr,
        "GET",
        "/portal/v1/usage",
        Some(&bob.cookie),
        None,
        None,
    )
    .await
    .json();
    assert!(
        bob_usage["data"].as_array().unwrap().is_empty(),
        "{bob_usage}"
    );

    // Revoked by its own account: the key stops at once.
    let revoked = call(
        addr,
        "POST",
        &revoke_path,
        Some(&ada.cookie),
        Some(&ada.csrf),
        None,
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let (status, _) = support::http(
        addr,
        "POST",
        "/v1/embeddings",
        Some(&secret),
        Some(r#"{"model":"text-embedding-3-small","input":"portal"}"#),
    )
    .await
    .unwrap();
    assert_eq!(status, 401);
    let log = cli(&config, &db, &["admin", "changes", "--json"]);
    assert!(
        log.stdout.contains("portal:ada@example.com"),
        "{}",
        log.said()
    );

    // The statement, signed by the operator's checkpoint, verifies offline; edited, it fails.
    assert!(cli(&config, &db, &["ledger", "checkpoint"]).ok);
    let statement = call(
        addr,
        "GET",
        "/portal/v1/statement",
        Some(&ada.cookie),
        None,
        None,
    )
    .await;
    assert_eq!(statement.status, 200, "{}", statement.body);
    assert!(statement.head.contains("content-disposition: attachment"));
    let file = scratch.dir.join("statement.json");
    std::fs::write(&file, &statement.body).unwrap();
    let verified = cli(
        &config,
        &db,
        &["verify", file.to_str().unwrap(), "--key", &public],
    );
    assert!(
        verified.ok && verified.said().contains("verified"),
        "{}",
        verified.said()
    );
    let edited = statement.body.replacen("\"-0.0000", "\"-0.0001", 1);
    assert_ne!(edited, statement.body);
    std::fs::write(&file, edited).unwrap();
    assert!(
        !cli(
            &config,
            &db,
            &["verify", file.to_str().unwrap(), "--key", &public]
        )
        .ok
    );
}
