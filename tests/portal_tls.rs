//! The customer portal on the gateway's own TLS listener (`[tls]`): its session cookie is
//! `Secure`, so a browser never sends it over plain HTTP (docs/operations.md, "The customer
//! portal"). On the plain listener, without a trusted proxy saying `https`, it is not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TestGateway;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tollgate_store::AdminChange;

/// A sign-in's answer head, over `stream`.
async fn sign_in<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut stream: S,
    body: &str,
) -> String {
    let request = format!(
        "POST /portal/v1/sessions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    text.split("\r\n\r\n").next().unwrap().to_ascii_lowercase()
}

#[tokio::test]
async fn the_session_cookie_is_secure_over_tls_only() {
    let dir = std::env::temp_dir().join(format!("tollgate-e2e-portal-tls-{}", common::unique()));
    std::fs::create_dir_all(&dir).unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let config =
        format!("[tls]\nlisten = \"127.0.0.1:0\"\ncert_file = {cert:?}\nkey_file = {key:?}\n");
    let gw = TestGateway::with_config(&config).await;
    let (account, _) = gw.account("1").await;
    let operator = AdminChange {
        actor: "test".into(),
        action: "portal.invite".into(),
        target: account.clone(),
        before: None,
        after: None,
        request_id: None,
    };
    let email = format!("tls-{}@example.com", common::unique());
    let (_, token) = gw
        .store
        .invite_person(&account, &email, "tls", i64::MAX, &operator)
        .await
        .unwrap();
    let hash = tollgate_portal::auth::hash_password("a long enough password").unwrap();
    gw.store
        .accept_invite(&token, &hash)
        .await
        .unwrap()
        .unwrap();
    let body =
        serde_json::json!({"email": email, "password": "a long enough password"}).to_string();

    let tls = common::tls_connect(gw.tls_addr.unwrap(), made.cert.der().clone()).await;
    let head = sign_in(tls, &body).await;
    assert!(head.starts_with("http/1.1 201"), "{head}");
    let cookie = head.lines().find(|l| l.starts_with("set-cookie:")).unwrap();
    assert!(
        cookie.contains("; secure") && cookie.contains("httponly"),
        "{cookie}"
    );

    let plain = TcpStream::connect(gw.addr).await.unwrap();
    let head = sign_in(plain, &body).await;
    assert!(head.starts_with("http/1.1 201"), "{head}");
    let cookie = head.lines().find(|l| l.starts_with("set-cookie:")).unwrap();
    assert!(!cookie.contains("secure"), "{cookie}");
    gw.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
