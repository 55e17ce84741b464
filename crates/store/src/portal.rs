//! The customer portal's people and sessions (docs/decisions.md, "The customer portal"): a
//! person belongs to one account, is invited by the operator with a one-time link, sets a
//! password (kept as the portal's argon2id hash: the store never sees the password), may turn
//! on TOTP with recovery codes, and signs in to a server-side session.
//!
//! Every secret the portal hands out — an invitation, a session, a recovery code — is 256 or
//! 130 random bits and kept here only as its SHA-256, so a reader of the database can use none
//! of them. Sessions expire (absolutely, and when idle) and are revoked when the person's
//! password is set again or the person is removed.

use crate::ids::{hash_secret, hex, new_id};
use crate::{AdminChange, Store, StoreError, now_millis};
use rand::RngCore;
use serde::Serialize;
use sqlx::Row as _;

/// A person of an account, as the operator sees them.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Person {
    /// `per_…`
    pub id: String,
    /// Their account.
    pub account_id: String,
    /// How they sign in: an email address, kept in lower case.
    pub email: String,
    /// Their name, as the operator wrote it.
    pub name: String,
    /// They have set a password (accepted an invitation).
    pub active: bool,
    /// TOTP is on.
    pub totp: bool,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// What signing in needs of a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The person.
    pub person: Person,
    /// Their password's argon2id hash (PHC string); `None` before they accepted.
    pub password_hash: Option<String>,
    /// Their TOTP secret (base 32), when TOTP is on or being set up.
    pub totp_secret: Option<String>,
    /// The last TOTP time step accepted: a code is never accepted twice (RFC 6238 §5.2).
    pub totp_last_step: Option<i64>,
}

/// A signed-in session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortalSession {
    /// Its id (`pss_…`), for listing and revoking; not the cookie.
    pub id: String,
    /// Who.
    pub person: Person,
    /// The token every write must carry in `x-csrf-token`.
    pub csrf: String,
    /// Unix milliseconds.
    pub expires_at: i64,
}

/// A new random secret: 32 bytes as 64 hex digits.
fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex(&bytes)
}

const PERSON_COLUMNS: &str = "p.id, p.account_id, p.email, p.name, p.password_hash, \
    p.totp_secret, p.totp_enabled, p.totp_last_step, p.created_at";

type PersonRow = (
    String,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    i64,
    Option<i64>,
    i64,
);

fn credentials_from_row(r: PersonRow) -> Credentials {
    Credentials {
        person: Person {
            id: r.0,
            account_id: r.1,
            email: r.2,
            name: r.3,
            active: r.4.is_some(),
            totp: r.6 != 0,
            created_at: r.8,
        },
        password_hash: r.4,
        totp_secret: r.5,
        totp_last_step: r.7,
    }
}

impl Store {
    /// Invites `email` to `account_id` (or invites again a person already there, to set a new
    /// password): answers the person and the invitation's token, valid until `expires_at`
    /// (Unix milliseconds) and only once.
    pub async fn invite_person(
        &self,
        account_id: &str,
        email: &str,
        name: &str,
        expires_at: i64,
        audit: &AdminChange,
    ) -> Result<(Person, String), StoreError> {
        let email = email.trim().to_lowercase();
        let now = now_millis();
        let mut tx = self.write_tx().await?;
        let found: Option<PersonRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {PERSON_COLUMNS} FROM portal_people p WHERE p.email = $1"
        )))
        .bind(&email)
        .fetch_optional(&mut *tx)
        .await?;
        let person = match found.map(credentials_from_row) {
            Some(c) if c.person.account_id != account_id => {
                return Err(StoreError::AlreadyExists(format!(
                    "{email} is a person of another account"
                )));
            }
            Some(c) => c.person,
            None => {
                let exists: Option<(String,)> =
                    sqlx::query_as("SELECT id FROM accounts WHERE id = $1")
                        .bind(account_id)
                        .fetch_optional(&mut *tx)
                        .await?;
                if exists.is_none() {
                    return Err(StoreError::NotFound(format!("account {account_id:?}")));
                }
                let person = Person {
                    id: new_id("per"),
                    account_id: account_id.to_owned(),
                    email: email.clone(),
                    name: name.trim().to_owned(),
                    active: false,
                    totp: false,
                    created_at: now,
                };
                sqlx::query(
                    "INSERT INTO portal_people (id, account_id, email, name, totp_enabled,
                         created_at)
                     VALUES ($1, $2, $3, $4, 0, $5)",
                )
                .bind(&person.id)
                .bind(&person.account_id)
                .bind(&person.email)
                .bind(&person.name)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                person
            }
        };
        // An earlier invitation not yet used stops working: one link at a time.
        sqlx::query(
            "UPDATE portal_invites SET used_at = $1 WHERE person_id = $2 AND used_at IS NULL",
        )
        .bind(now)
        .bind(&person.id)
        .execute(&mut *tx)
        .await?;
        let token = new_token();
        sqlx::query(
            "INSERT INTO portal_invites (hash, person_id, created_at, expires_at)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(hash_secret(&token))
        .bind(&person.id)
        .bind(now)
        .bind(expires_at)
        .execute(&mut *tx)
        .await?;
        let mut audit = audit.clone();
        audit.target = person.account_id.clone();
        audit.after = Some(serde_json::json!({"person": person.id, "email": person.email}));
        crate::changes::insert_change(&mut tx, &audit).await?;
        tx.commit().await?;
        Ok((person, token))
    }

    /// Uses an invitation: sets the person's password hash, once, while the invitation is
    /// valid, and ends every session they had. `None` for an unknown, used or lapsed one.
    pub async fn accept_invite(
        &self,
        token: &str,
        password_hash: &str,
    ) -> Result<Option<Person>, StoreError> {
        let now = now_millis();
        let mut tx = self.write_tx().await?;
        let claimed: Option<(String,)> = sqlx::query_as(
            "UPDATE portal_invites SET used_at = $1
             WHERE hash = $2 AND used_at IS NULL AND expires_at > $1
             RETURNING person_id",
        )
        .bind(now)
        .bind(hash_secret(token))
        .fetch_optional(&mut *tx)
        .await?;
        let Some((person_id,)) = claimed else {
            return Ok(None);
        };
        sqlx::query("UPDATE portal_people SET password_hash = $1 WHERE id = $2")
            .bind(password_hash)
            .bind(&person_id)
            .execute(&mut *tx)
            .await?;
        end_sessions(&mut tx, &person_id, now).await?;
        tx.commit().await?;
        Ok(self
            .person_credentials_by_id(&person_id)
            .await?
            .map(|c| c.person))
    }

    /// The credentials of the person signing in as `email`.
    pub async fn person_credentials(&self, email: &str) -> Result<Option<Credentials>, StoreError> {
        self.credentials_where("p.email", &email.trim().to_lowercase())
            .await
    }

    /// The credentials of person `id`.
    pub async fn person_credentials_by_id(
        &self,
        id: &str,
    ) -> Result<Option<Credentials>, StoreError> {
        self.credentials_where("p.id", id).await
    }

    /// The credentials of the person whose `column` (a unique one: `p.email`, `p.id`) is
    /// `value`.
    async fn credentials_where(
        &self,
        column: &'static str,
        value: &str,
    ) -> Result<Option<Credentials>, StoreError> {
        let row: Option<PersonRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {PERSON_COLUMNS} FROM portal_people p WHERE {column} = $1"
        )))
        .bind(value)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(credentials_from_row))
    }

    /// An account's people.
    pub async fn account_people(&self, account_id: &str) -> Result<Vec<Person>, StoreError> {
        let rows: Vec<PersonRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {PERSON_COLUMNS} FROM portal_people p WHERE p.account_id = $1
             ORDER BY p.created_at, p.id"
        )))
        .bind(account_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| credentials_from_row(r).person)
            .collect())
    }

    /// Removes a person: their sessions end and they can no longer sign in.
    pub async fn remove_person(&self, id: &str, audit: &AdminChange) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        let done = sqlx::query("DELETE FROM portal_people WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("person {id:?}")));
        }
        end_sessions(&mut tx, id, now_millis()).await?;
        for table in ["portal_invites", "portal_recovery"] {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE person_id = $1"
            )))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        crate::changes::insert_change(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Opens a session for `person` until `expires_at`: answers its cookie token (random,
    /// kept only as its hash) and the session.
    pub async fn open_portal_session(
        &self,
        person: &Person,
        expires_at: i64,
        address: Option<&str>,
    ) -> Result<(String, PortalSession), StoreError> {
        let token = new_token();
        let session = PortalSession {
            id: new_id("pss"),
            person: person.clone(),
            csrf: new_token(),
            expires_at,
        };
        let now = now_millis();
        sqlx::query(
            "INSERT INTO portal_sessions (hash, id, person_id, csrf, created_at, expires_at,
                 last_seen, address)
             VALUES ($1, $2, $3, $4, $5, $6, $5, $7)",
        )
        .bind(hash_secret(&token))
        .bind(&session.id)
        .bind(&person.id)
        .bind(&session.csrf)
        .bind(now)
        .bind(expires_at)
        .bind(address)
        .execute(self.writer())
        .await?;
        Ok((token, session))
    }

    /// The live session of cookie `token` at `now`: not revoked, not past its expiry, seen
    /// within `idle_ms`, its person still there — one read, the session joined to its person.
    /// Marks it seen (at most once a minute).
    pub async fn portal_session(
        &self,
        token: &str,
        now: i64,
        idle_ms: i64,
    ) -> Result<Option<PortalSession>, StoreError> {
        let hash = hash_secret(token);
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT s.id AS session_id, s.csrf, s.expires_at, s.last_seen, {PERSON_COLUMNS}
             FROM portal_sessions s JOIN portal_people p ON p.id = s.person_id
             WHERE s.hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2"
        )))
        .bind(&hash)
        .bind(now)
        .fetch_optional(self.pool())
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let last_seen: i64 = row.try_get("last_seen")?;
        if now.saturating_sub(last_seen) > idle_ms {
            return Ok(None);
        }
        let person: PersonRow = (
            row.try_get("id")?,
            row.try_get("account_id")?,
            row.try_get("email")?,
            row.try_get("name")?,
            row.try_get("password_hash")?,
            row.try_get("totp_secret")?,
            row.try_get("totp_enabled")?,
            row.try_get("totp_last_step")?,
            row.try_get("created_at")?,
        );
        let session = PortalSession {
            id: row.try_get("session_id")?,
            person: credentials_from_row(person).person,
            csrf: row.try_get("csrf")?,
            expires_at: row.try_get("expires_at")?,
        };
        if now - last_seen > 60_000 {
            sqlx::query("UPDATE portal_sessions SET last_seen = $1 WHERE hash = $2")
                .bind(now)
                .bind(&hash)
                .execute(self.writer())
                .await?;
        }
        Ok(Some(session))
    }

    /// Ends the session of cookie `token`.
    pub async fn close_portal_session(&self, token: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE portal_sessions SET revoked_at = $1 WHERE hash = $2")
            .bind(now_millis())
            .bind(hash_secret(token))
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Starts setting up TOTP: keeps `secret` (base 32) for the person, not yet required.
    pub async fn begin_totp(&self, person_id: &str, secret: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE portal_people SET totp_secret = $1, totp_last_step = NULL
             WHERE id = $2 AND totp_enabled = 0",
        )
        .bind(secret)
        .bind(person_id)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Turns TOTP on once the first code checked at `step`, with new recovery codes (their
    /// hashes; earlier ones stop working).
    pub async fn enable_totp(
        &self,
        person_id: &str,
        step: i64,
        recovery: &[String],
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        sqlx::query("UPDATE portal_people SET totp_enabled = 1, totp_last_step = $1 WHERE id = $2")
            .bind(step)
            .bind(person_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM portal_recovery WHERE person_id = $1")
            .bind(person_id)
            .execute(&mut *tx)
            .await?;
        for code in recovery {
            sqlx::query("INSERT INTO portal_recovery (hash, person_id) VALUES ($1, $2)")
                .bind(hash_secret(code))
                .bind(person_id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Records a TOTP code accepted at `step`: true when no code of that step or a later one
    /// was accepted before (a code is good once: RFC 6238 §5.2).
    pub async fn take_totp_step(&self, person_id: &str, step: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE portal_people SET totp_last_step = $1
             WHERE id = $2 AND (totp_last_step IS NULL OR totp_last_step < $1)",
        )
        .bind(step)
        .bind(person_id)
        .execute(self.writer())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Uses a recovery code, once: true when it was one of the person's and unused.
    pub async fn use_recovery_code(&self, person_id: &str, code: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE portal_recovery SET used_at = $1
             WHERE hash = $2 AND person_id = $3 AND used_at IS NULL",
        )
        .bind(now_millis())
        .bind(hash_secret(code))
        .bind(person_id)
        .execute(self.writer())
        .await?;
        Ok(done.rows_affected() == 1)
    }
}

/// Ends every open session of a person.
async fn end_sessions(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    person_id: &str,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE portal_sessions SET revoked_at = $1 WHERE person_id = $2 AND revoked_at IS NULL",
    )
    .bind(now)
    .bind(person_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
