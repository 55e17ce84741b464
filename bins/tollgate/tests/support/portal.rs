//! The customer portal as a browser speaks to it (HTTP/1.1, its cookie and CSRF header), for the
//! tests of the portal and of payments.

use super::cli;
use serde_json::{Value, json};

/// An answer: status, head (lower-cased header lines), body.
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The session token the answer sets, if any.
    pub fn cookie(&self) -> Option<String> {
        self.head
            .lines()
            .find_map(|l| l.strip_prefix("set-cookie: tollgate_portal="))
            .map(|rest| rest.split(';').next().unwrap_or_default().to_owned())
            .filter(|t| !t.is_empty())
    }
}

/// One HTTP/1.1 exchange with the portal: `cookie` as the session, `csrf` as its header.
pub async fn call(
    addr: &str,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    csrf: Option<&str>,
    body: Option<Value>,
) -> Answer {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let cookie = cookie.map(|c| format!("tollgate_portal={c}"));
    let mut headers = Vec::new();
    if let Some(cookie) = &cookie {
        headers.push(("Cookie", cookie.as_str()));
    }
    if let Some(csrf) = csrf {
        headers.push(("x-csrf-token", csrf));
    }
    if method != "GET" {
        headers.push(("Content-Type", "application/json"));
    }
    let (status, head, body) = super::exchange(addr, method, path, &headers, body.as_bytes()).await;
    Answer { status, head, body }
}

/// `GET path` as the signed-in `who`.
pub async fn get(addr: &str, who: &Signed, path: &str) -> Answer {
    call(addr, "GET", path, Some(&who.cookie), None, None).await
}

/// A signed-in session: its cookie and CSRF token.
pub struct Signed {
    pub cookie: String,
    pub csrf: String,
}

pub async fn sign_in(addr: &str, body: Value) -> Result<Signed, Answer> {
    let answer = call(addr, "POST", "/portal/v1/sessions", None, None, Some(body)).await;
    if answer.status != 201 {
        return Err(answer);
    }
    Ok(Signed {
        cookie: answer.cookie().unwrap(),
        csrf: answer.json()["csrf_token"].as_str().unwrap().to_owned(),
    })
}

/// `POST /portal/v1/invitations/accept`.
pub async fn accept(addr: &str, token: &str, password: &str) -> Answer {
    let body = json!({"token": token, "password": password});
    call(
        addr,
        "POST",
        "/portal/v1/invitations/accept",
        None,
        None,
        Some(body),
    )
    .await
}

/// The token of an invitation link (`…/portal#/invite/TOKEN`).
pub fn invitation(config: &std::path::Path, db: &str, account: &str, email: &str) -> String {
    let invited = cli(
        config,
        db,
        &["accounts", "invite", account, "--email", email],
    );
    assert!(invited.ok, "{}", invited.said());
    let link = invited.stdout.trim();
    assert!(link.contains("/portal#/invite/"), "{link}");
    link.rsplit('/').next().unwrap().to_owned()
}
