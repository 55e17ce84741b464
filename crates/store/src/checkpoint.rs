//! Signed checkpoints of the chained ledger (docs/architecture.md, "The chained ledger"): every
//! account's chain head, signed with the operator's Ed25519 key. A chain rewritten by someone
//! who can write the database (hashes recomputed after an edit) no longer passes through the
//! heads a checkpoint signed; the key never is in the database.
//!
//! The signed text, byte for byte:
//!
//! ```text
//! "tollgate-checkpoint-v1\n" ID "\n" CREATED_AT "\n" ( ACCOUNT_ID " " SEQ " " HASH "\n" )*
//! ```
//!
//! accounts in byte order of their ids.

use crate::{Store, StoreError, new_id, now_millis};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// One checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// `ckpt_…`
    pub id: String,
    /// When it was made, Unix milliseconds.
    pub created_at: i64,
    /// Each account's chain head then: its last row's `seq` and hash.
    pub heads: BTreeMap<String, (i64, String)>,
    /// The signing key's id ([`key_id`]).
    pub key_id: String,
    /// The Ed25519 public key, hex.
    pub public_key: String,
    /// The signature of [`Checkpoint::signed_text`], hex.
    pub signature: String,
}

impl Checkpoint {
    /// The text the signature covers.
    pub fn signed_text(&self) -> String {
        signed_text(&self.id, self.created_at, &self.heads)
    }

    /// Whether the signature is the public key's over the text, and the key's id is its id.
    pub fn verify(&self) -> Result<(), String> {
        let key = parse_public_key(&self.public_key)?;
        if key_id(&key) != self.key_id {
            return Err(format!(
                "key id {} does not name the public key {}",
                self.key_id, self.public_key
            ));
        }
        let signature = hex::decode(&self.signature)
            .ok()
            .and_then(|b| Signature::from_slice(&b).ok())
            .ok_or_else(|| "the signature is not an Ed25519 signature in hex".to_owned())?;
        key.verify(self.signed_text().as_bytes(), &signature)
            .map_err(|_| format!("checkpoint {}: the signature does not verify", self.id))
    }
}

fn signed_text(id: &str, created_at: i64, heads: &BTreeMap<String, (i64, String)>) -> String {
    let mut text = format!("tollgate-checkpoint-v1\n{id}\n{created_at}\n");
    for (account, (seq, hash)) in heads {
        text.push_str(&format!("{account} {seq} {hash}\n"));
    }
    text
}

/// A key's id: the first 16 hex digits of the SHA-256 of its public key.
pub fn key_id(key: &VerifyingKey) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))[..16].to_owned()
}

/// A public key in hex, as checkpoints and `/.well-known/tollgate-ledger-keys` carry it.
pub fn public_key_hex(key: &VerifyingKey) -> String {
    hex::encode(key.as_bytes())
}

/// A public key from its hex.
pub fn parse_public_key(text: &str) -> Result<VerifyingKey, String> {
    let bytes: [u8; 32] = hex::decode(text.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| "a public key is 64 hex digits".to_owned())?;
    VerifyingKey::from_bytes(&bytes).map_err(|e| format!("not an Ed25519 public key: {e}"))
}

/// A new signing key: 32 random bytes.
pub fn generate_key() -> SigningKey {
    use rand::RngCore;
    let mut seed = [0u8; 32];
    rand::rng().fill_bytes(&mut seed);
    SigningKey::from_bytes(&seed)
}

/// The key file's text: `tollgate-ledger-key-v1 SEED_HEX`.
pub fn key_file_text(key: &SigningKey) -> String {
    format!("tollgate-ledger-key-v1 {}\n", hex::encode(key.to_bytes()))
}

/// A signing key from its file's text ([`key_file_text`]).
pub fn parse_key_file(text: &str) -> Result<SigningKey, String> {
    let seed = text
        .trim()
        .strip_prefix("tollgate-ledger-key-v1 ")
        .ok_or_else(|| {
            "not a tollgate ledger key (make one with `tollgate ledger keygen`)".to_owned()
        })?;
    let bytes: [u8; 32] = hex::decode(seed.trim())
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| "the key's seed is 64 hex digits".to_owned())?;
    Ok(SigningKey::from_bytes(&bytes))
}

type CheckpointRow = (String, i64, String, String, String, String);

fn from_row(row: CheckpointRow) -> Result<Checkpoint, StoreError> {
    let (id, created_at, heads, key_id, public_key, signature) = row;
    let heads = serde_json::from_str(&heads)
        .map_err(|e| StoreError::Corrupt(format!("checkpoint {id}: {e}")))?;
    Ok(Checkpoint {
        id,
        created_at,
        heads,
        key_id,
        public_key,
        signature,
    })
}

/// Every checkpoint, newest first.
pub(crate) async fn newest_first(
    db: &mut sqlx::AnyConnection,
) -> Result<Vec<Checkpoint>, StoreError> {
    let rows: Vec<CheckpointRow> = sqlx::query_as(
        "SELECT id, created_at, heads, key_id, public_key, signature FROM ledger_checkpoints
         ORDER BY created_at DESC, id DESC",
    )
    .fetch_all(&mut *db)
    .await?;
    rows.into_iter().map(from_row).collect()
}

impl Store {
    /// Signs every account's chain head now with `key`, and keeps the checkpoint.
    pub async fn make_checkpoint(&self, key: &SigningKey) -> Result<Checkpoint, StoreError> {
        let heads: Vec<(String, i64, String)> = sqlx::query_as(
            "SELECT id, ledger_seq, ledger_head FROM accounts
             WHERE ledger_head IS NOT NULL ORDER BY id",
        )
        .fetch_all(self.pool())
        .await?;
        let heads: BTreeMap<String, (i64, String)> = heads
            .into_iter()
            .map(|(account, seq, hash)| (account, (seq, hash)))
            .collect();
        let id = new_id("ckpt");
        let created_at = now_millis();
        let signature = key.sign(signed_text(&id, created_at, &heads).as_bytes());
        let public = key.verifying_key();
        let checkpoint = Checkpoint {
            id,
            created_at,
            heads,
            key_id: key_id(&public),
            public_key: hex::encode(public.as_bytes()),
            signature: hex::encode(signature.to_bytes()),
        };
        let heads = serde_json::to_string(&checkpoint.heads)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        sqlx::query(
            "INSERT INTO ledger_checkpoints (id, created_at, heads, key_id, public_key, signature)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&checkpoint.id)
        .bind(checkpoint.created_at)
        .bind(heads)
        .bind(&checkpoint.key_id)
        .bind(&checkpoint.public_key)
        .bind(&checkpoint.signature)
        .execute(self.writer())
        .await?;
        Ok(checkpoint)
    }

    /// The newest checkpoint, if any.
    pub async fn last_checkpoint(&self) -> Result<Option<Checkpoint>, StoreError> {
        let row: Option<CheckpointRow> = sqlx::query_as(
            "SELECT id, created_at, heads, key_id, public_key, signature FROM ledger_checkpoints
             ORDER BY created_at DESC, id DESC LIMIT 1",
        )
        .fetch_optional(self.pool())
        .await?;
        row.map(from_row).transpose()
    }

    /// The first checkpoint made at or after `at` (Unix milliseconds), if any.
    pub async fn checkpoint_after(&self, at: i64) -> Result<Option<Checkpoint>, StoreError> {
        let row: Option<CheckpointRow> = sqlx::query_as(
            "SELECT id, created_at, heads, key_id, public_key, signature FROM ledger_checkpoints
             WHERE created_at >= $1 ORDER BY created_at, id LIMIT 1",
        )
        .bind(at)
        .fetch_optional(self.pool())
        .await?;
        row.map(from_row).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_verifies_until_anything_in_it_changes() {
        let key = generate_key();
        let heads: BTreeMap<String, (i64, String)> =
            [("acct_a".to_owned(), (3, "ab".repeat(32)))].into();
        let text = signed_text("ckpt_1", 5, &heads);
        let public = key.verifying_key();
        let mut checkpoint = Checkpoint {
            id: "ckpt_1".into(),
            created_at: 5,
            heads,
            key_id: key_id(&public),
            public_key: hex::encode(public.as_bytes()),
            signature: hex::encode(key.sign(text.as_bytes()).to_bytes()),
        };
        assert_eq!(checkpoint.verify(), Ok(()));
        checkpoint
            .heads
            .insert("acct_a".into(), (3, "cd".repeat(32)));
        assert!(checkpoint.verify().is_err());
        let again = parse_key_file(&key_file_text(&key)).unwrap();
        assert_eq!(again.to_bytes(), key.to_bytes());
        assert!(parse_key_file("nonsense").is_err());
    }
}
