//! Ephemeral client secrets for live sessions (docs/api.md §2.11, §2.12): what a server mints
//! with its key so that a browser opens a session without ever holding the key — OpenAI's
//! client secrets (`ek_…`) and Gemini's ephemeral tokens (`auth_tokens/ek_…`, the same secret
//! under Google's resource name). A secret is stored as
//! its hash, bound to the key that minted it (the session it opens is that key's: its balance,
//! policy and limits), lives until `expires_at`, and opens at most `sessions` sessions — taken
//! one at a time by a conditional update, so two pages racing with one secret cannot both
//! open a session past its count.

use crate::ids::{hash_secret, hex, new_id};
use crate::{Store, StoreError, now_millis};
use rand::RngCore;

/// What a secret is minted with.
#[derive(Debug, Clone)]
pub struct SecretTerms {
    /// The key it stands for.
    pub key_id: String,
    /// The model it is for; `None`: whichever realtime model the connection names.
    pub model: Option<String>,
    /// The session configuration the minting request gave (JSON): OpenAI's, kept to describe
    /// it; Gemini's constraints on the setup, applied to each session it opens.
    pub session: Option<String>,
    /// How long it may open sessions, in milliseconds.
    pub lifetime_ms: i64,
    /// How many sessions it may open.
    pub sessions: u32,
    /// When the sessions it opened must end (Unix milliseconds; Gemini's `expireTime`).
    pub sessions_end_at: Option<i64>,
}

/// What a secret was minted for, as a connection presenting it reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretHeld {
    /// The model it is for (`None`: any the connection names).
    pub model: Option<String>,
    /// The session configuration it was minted with (JSON).
    pub session: Option<String>,
    /// When the sessions it opened must end (Unix milliseconds).
    pub sessions_end_at: Option<i64>,
}

/// A minted secret: the value (shown once, never stored) and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintedSecret {
    /// `ek_…`
    pub value: String,
    /// Unix milliseconds.
    pub expires_at: i64,
}

/// What presenting a secret came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redeemed {
    /// It opens a session of `key_id`, for `model` when it names one.
    Opened {
        /// The key whose session it is.
        key_id: String,
        /// The model it was minted for.
        model: Option<String>,
    },
    /// No such secret.
    Unknown,
    /// It expired.
    Expired,
    /// It opened all the sessions it may.
    Spent,
}

/// Google's resource name for a secret: `auth_tokens/` before it.
pub const AUTH_TOKENS: &str = "auth_tokens/";

/// Whether `secret` is written as a client secret (`ek_…`, or Gemini's `auth_tokens/ek_…`)
/// rather than a key.
pub fn is_client_secret(secret: &str) -> bool {
    bare(secret).starts_with("ek_")
}

/// The secret under a resource name.
fn bare(secret: &str) -> &str {
    secret.strip_prefix(AUTH_TOKENS).unwrap_or(secret)
}

impl Store {
    /// Mints a secret for `terms.key_id`.
    pub async fn mint_client_secret(
        &self,
        terms: &SecretTerms,
    ) -> Result<MintedSecret, StoreError> {
        let mut bytes = [0u8; 24];
        rand::rng().fill_bytes(&mut bytes);
        let value = format!("ek_{}", hex(&bytes));
        let now = now_millis();
        let expires_at = now.saturating_add(terms.lifetime_ms);
        sqlx::query(
            "INSERT INTO client_secrets (id, secret_hash, key_id, model, session, sessions_left, created_at, expires_at, sessions_end_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(new_id("csec"))
        .bind(hash_secret(&value))
        .bind(&terms.key_id)
        .bind(terms.model.clone())
        .bind(terms.session.clone())
        .bind(i64::from(terms.sessions))
        .bind(now)
        .bind(expires_at)
        .bind(terms.sessions_end_at)
        .execute(self.writer())
        .await?;
        Ok(MintedSecret { value, expires_at })
    }

    /// Takes one session of `secret`, if it has one left and has not expired.
    pub async fn redeem_client_secret(&self, secret: &str) -> Result<Redeemed, StoreError> {
        let hash = hash_secret(bare(secret));
        let now = now_millis();
        let taken: Option<(String, Option<String>)> = sqlx::query_as(
            "UPDATE client_secrets SET sessions_left = sessions_left - 1
             WHERE secret_hash = $1 AND sessions_left > 0 AND expires_at > $2
             RETURNING key_id, model",
        )
        .bind(&hash)
        .bind(now)
        .fetch_optional(self.writer())
        .await?;
        if let Some((key_id, model)) = taken {
            return Ok(Redeemed::Opened { key_id, model });
        }
        let found: Option<(i64, i64)> = sqlx::query_as(
            "SELECT sessions_left, expires_at FROM client_secrets WHERE secret_hash = $1",
        )
        .bind(&hash)
        .fetch_optional(self.pool())
        .await?;
        Ok(match found {
            None => Redeemed::Unknown,
            Some((_, expires_at)) if expires_at <= now => Redeemed::Expired,
            Some(_) => Redeemed::Spent,
        })
    }

    /// What `secret` was minted for (`None`: no such secret).
    pub async fn client_secret(&self, secret: &str) -> Result<Option<SecretHeld>, StoreError> {
        let found: Option<(Option<String>, Option<String>, Option<i64>)> = sqlx::query_as(
            "SELECT model, session, sessions_end_at FROM client_secrets WHERE secret_hash = $1",
        )
        .bind(hash_secret(bare(secret)))
        .fetch_optional(self.pool())
        .await?;
        Ok(found.map(|(model, session, sessions_end_at)| SecretHeld {
            model,
            session,
            sessions_end_at,
        }))
    }

    /// Deletes the secrets that expired more than `after` ago; returns how many.
    pub async fn prune_client_secrets(
        &self,
        after: std::time::Duration,
    ) -> Result<u64, StoreError> {
        let cutoff =
            now_millis().saturating_sub(i64::try_from(after.as_millis()).unwrap_or(i64::MAX));
        let done = sqlx::query("DELETE FROM client_secrets WHERE expires_at < $1")
            .bind(cutoff)
            .execute(self.writer())
            .await?;
        Ok(done.rows_affected())
    }
}
