//! Signed checkpoints of the chained ledger (docs/architecture.md, "The chained ledger"): every
//! account's chain head, signed with the operator's Ed25519 key. A chain rewritten by someone
//! who can write the database (hashes recomputed after an edit) no longer passes through the
//! heads a checkpoint signed; the key never is in the database.
//!
//! A checkpoint signs the Merkle root of the heads (`crate::merkle`), so that a statement can
//! prove its own account's head with an inclusion proof and disclose no other account. The
//! signed text, byte for byte:
//!
//! ```text
//! "tollgate-checkpoint-v2\n" ID "\n" CREATED_AT "\n" ACCOUNTS "\n" ROOT "\n"
//! ```
//!
//! `ACCOUNTS` the number of heads and `ROOT` the tree's root in lowercase hex. Checkpoints of
//! earlier versions (`tollgate-checkpoint-v1`) signed every head in their text — `"\n"`-ended
//! lines of `ACCOUNT_ID " " SEQ " " HASH` after the id and time, accounts in byte order of
//! their ids; they are still checked by the audit, and never put in a statement.
//!
//! Checkpoints are kept in the database, and — where the operator names one — appended to a log
//! outside it ([`PublishedLog`]), which someone who can write the database cannot rewrite: the
//! audit compares the chains with every checkpoint of both.

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
    /// The format of its signed text: 2 (a Merkle root), or 1 (every head).
    #[serde(default = "version_one")]
    pub version: u32,
    /// Version 2: how many heads the root is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounts: Option<u64>,
    /// Version 2: the Merkle root of the heads (`crate::merkle`), lowercase hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Each account's chain head then: its last row's `seq` and hash. Kept in the database and
    /// the published log; a statement carries a version 2 checkpoint without them
    /// ([`Checkpoint::without_heads`]) and its own head's proof instead.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub heads: BTreeMap<String, (i64, String)>,
    /// The signing key's id ([`key_id`]): a name for people, never a stand-in for the key.
    pub key_id: String,
    /// The Ed25519 public key, hex.
    pub public_key: String,
    /// The signature of [`Checkpoint::signed_text`], hex.
    pub signature: String,
}

fn version_one() -> u32 {
    1
}

/// An account's head in a checkpoint, and the proof that the checkpoint's root covers it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InclusionProof {
    /// The account.
    pub account_id: String,
    /// Its head's `seq`.
    pub seq: i64,
    /// Its head's hash.
    pub hash: String,
    /// The leaf's place among the checkpoint's heads (in byte order of their account ids).
    pub index: u64,
    /// The sibling hashes from the leaf up, lowercase hex (`crate::merkle::proof`).
    pub path: Vec<String>,
}

impl Checkpoint {
    /// The text the signature covers.
    pub fn signed_text(&self) -> String {
        match self.version {
            1 => signed_text_v1(&self.id, self.created_at, &self.heads),
            _ => signed_text_v2(
                &self.id,
                self.created_at,
                self.accounts.unwrap_or_default(),
                self.root.as_deref().unwrap_or_default(),
            ),
        }
    }

    /// Whether the signature is the public key's over the text, the key's id is its id, and —
    /// for a version 2 checkpoint that carries its heads — the root and count are theirs.
    pub fn verify(&self) -> Result<(), String> {
        let key = parse_public_key(&self.public_key)?;
        if key_id(&key) != self.key_id {
            return Err(format!(
                "key id {} does not name the public key {}",
                self.key_id, self.public_key
            ));
        }
        if self.version == 2 && !self.heads.is_empty() {
            let root = hex::encode(heads_root(&self.heads));
            if self.root.as_deref() != Some(root.as_str())
                || self.accounts != Some(self.heads.len() as u64)
            {
                return Err(format!(
                    "checkpoint {}: its heads do not make the root it signed",
                    self.id
                ));
            }
        }
        if !matches!(self.version, 1 | 2) {
            return Err(format!(
                "checkpoint {}: version {} is not known",
                self.id, self.version
            ));
        }
        let signature = hex::decode(&self.signature)
            .ok()
            .and_then(|b| Signature::from_slice(&b).ok())
            .ok_or_else(|| "the signature is not an Ed25519 signature in hex".to_owned())?;
        key.verify(self.signed_text().as_bytes(), &signature)
            .map_err(|_| format!("checkpoint {}: the signature does not verify", self.id))
    }

    /// Whether it is signed by one of `keys` (public keys in hex): only a key stands for a key,
    /// never its id.
    pub fn signed_by(&self, keys: &[String]) -> bool {
        keys.iter()
            .any(|k| k.trim().eq_ignore_ascii_case(&self.public_key))
    }

    /// The checkpoint as a statement carries it: the signed root, without the heads.
    pub fn without_heads(&self) -> Checkpoint {
        Checkpoint {
            heads: BTreeMap::new(),
            ..self.clone()
        }
    }

    /// `account_id`'s head and its inclusion proof (version 2, with its heads).
    pub fn proof(&self, account_id: &str) -> Option<InclusionProof> {
        let index = self.heads.keys().position(|a| a == account_id)?;
        let (seq, hash) = self.heads.get(account_id)?;
        let leaves = leaf_hashes(&self.heads);
        Some(InclusionProof {
            account_id: account_id.to_owned(),
            seq: *seq,
            hash: hash.clone(),
            index: index as u64,
            path: crate::merkle::proof(&leaves, index)
                .iter()
                .map(hex::encode)
                .collect(),
        })
    }

    /// Whether `proof` shows its head under this (version 2) checkpoint's signed root.
    pub fn includes(&self, proof: &InclusionProof) -> bool {
        let (Some(root), Some(size)) = (&self.root, self.accounts) else {
            return false;
        };
        let Ok(root) = hex::decode(root).map(|r| <[u8; 32]>::try_from(r.as_slice())) else {
            return false;
        };
        let Ok(root) = root else {
            return false;
        };
        let mut path = Vec::with_capacity(proof.path.len());
        for step in &proof.path {
            match hex::decode(step)
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
            {
                Some(step) => path.push(step),
                None => return false,
            }
        }
        let leaf = crate::merkle::leaf_hash(&crate::merkle::leaf(
            &proof.account_id,
            proof.seq,
            &proof.hash,
        ));
        crate::merkle::verify(proof.index, size, &leaf, &path, &root)
    }
}

fn signed_text_v1(id: &str, created_at: i64, heads: &BTreeMap<String, (i64, String)>) -> String {
    let mut text = format!("tollgate-checkpoint-v1\n{id}\n{created_at}\n");
    for (account, (seq, hash)) in heads {
        text.push_str(&format!("{account} {seq} {hash}\n"));
    }
    text
}

fn signed_text_v2(id: &str, created_at: i64, accounts: u64, root: &str) -> String {
    format!("tollgate-checkpoint-v2\n{id}\n{created_at}\n{accounts}\n{root}\n")
}

fn leaf_hashes(heads: &BTreeMap<String, (i64, String)>) -> Vec<crate::merkle::Digest32> {
    heads
        .iter()
        .map(|(account, (seq, hash))| {
            crate::merkle::leaf_hash(&crate::merkle::leaf(account, *seq, hash))
        })
        .collect()
}

/// The Merkle root of `heads`.
pub fn heads_root(heads: &BTreeMap<String, (i64, String)>) -> crate::merkle::Digest32 {
    crate::merkle::root(&leaf_hashes(heads))
}

/// Signs `heads` as a version 2 checkpoint, made now.
pub fn sign(key: &SigningKey, heads: BTreeMap<String, (i64, String)>) -> Checkpoint {
    let id = new_id("ckpt");
    let created_at = now_millis();
    let root = hex::encode(heads_root(&heads));
    let accounts = heads.len() as u64;
    let signature = key.sign(signed_text_v2(&id, created_at, accounts, &root).as_bytes());
    let public = key.verifying_key();
    Checkpoint {
        id,
        created_at,
        version: 2,
        accounts: Some(accounts),
        root: Some(root),
        heads,
        key_id: key_id(&public),
        public_key: hex::encode(public.as_bytes()),
        signature: hex::encode(signature.to_bytes()),
    }
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

/// What the chain checks believe (`tollgate audit`, docs/decisions.md "What the audit checks").
#[derive(Debug, Clone, Default)]
pub struct Checkpoints {
    /// The operator's public keys (hex): only checkpoints signed by one of them are believed.
    /// `None`: any that verifies (a deployment without a key).
    pub trusted: Option<Vec<String>>,
    /// Checkpoints published outside the database ([`PublishedLog`]), read by
    /// the caller: believed beside the table's, which an intruder can empty.
    pub published: Vec<Checkpoint>,
    /// With a key configured: a chained row written longer ago than this that no believed
    /// checkpoint covers is a violation (`checkpoint_stale`, `checkpoint_missing`).
    pub stale_after_ms: Option<i64>,
}

type CheckpointRow = (
    String,
    i64,
    String,
    String,
    String,
    String,
    i64,
    Option<String>,
);

const COLUMNS: &str = "id, created_at, heads, key_id, public_key, signature, version, root";

fn from_row(row: CheckpointRow) -> Result<Checkpoint, StoreError> {
    let (id, created_at, heads, key_id, public_key, signature, version, root) = row;
    let heads: BTreeMap<String, (i64, String)> = serde_json::from_str(&heads)
        .map_err(|e| StoreError::Corrupt(format!("checkpoint {id}: {e}")))?;
    let version = u32::try_from(version).unwrap_or(0);
    Ok(Checkpoint {
        accounts: (version == 2).then_some(heads.len() as u64),
        id,
        created_at,
        version,
        root,
        heads,
        key_id,
        public_key,
        signature,
    })
}

/// Every checkpoint in the database, newest first.
pub(crate) async fn newest_first(
    db: &mut sqlx::AnyConnection,
) -> Result<Vec<Checkpoint>, StoreError> {
    let rows: Vec<CheckpointRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM ledger_checkpoints ORDER BY created_at DESC, id DESC"
    )))
    .fetch_all(&mut *db)
    .await?;
    rows.into_iter().map(from_row).collect()
}

/// An append-only log of checkpoints outside the database (`[ledger] publish_checkpoints`): a
/// file of one JSON checkpoint a line, heads included, each line synced to disk before the
/// checkpoint counts as made. Whoever can write the database cannot reach it; the audit reads
/// it beside the database's table and believes what the operator's key signed in either.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedLog {
    path: std::path::PathBuf,
}

impl PublishedLog {
    /// The log at `path` (created at its first checkpoint).
    pub fn new(path: impl Into<std::path::PathBuf>) -> PublishedLog {
        PublishedLog { path: path.into() }
    }

    /// Where it is.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Appends `checkpoint` as one line, and syncs it.
    pub fn append(&self, checkpoint: &Checkpoint) -> Result<(), String> {
        use std::io::Write as _;
        let mut line = serde_json::to_string(checkpoint).map_err(|e| e.to_string())?;
        line.push('\n');
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.path)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        file.write_all(line.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }

    /// Every checkpoint in it, oldest first (none when the file is not there yet). A line that
    /// is not a checkpoint is an error: the log is not to be edited.
    pub fn read(&self) -> Result<Vec<Checkpoint>, String> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        };
        text.lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(n, line)| {
                serde_json::from_str(line)
                    .map_err(|e| format!("{} line {}: {e}", self.path.display(), n + 1))
            })
            .collect()
    }
}

impl Store {
    /// Signs every account's chain head now with `key`, keeps the checkpoint and appends it to
    /// `log`. Refused when the heads contradict the newest earlier checkpoint of the same key
    /// (in the database or the log): an account it signed is gone, its chain is behind the head
    /// signed, or no longer passes through it — a database rewritten since is never signed
    /// over (issue 42).
    pub async fn make_checkpoint(
        &self,
        key: &SigningKey,
        log: Option<&PublishedLog>,
    ) -> Result<Checkpoint, StoreError> {
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
        let public = hex::encode(key.verifying_key().as_bytes());
        // The key's newest checkpoints only: the table keeps every one, with every head.
        let rows: Vec<CheckpointRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM ledger_checkpoints WHERE public_key = $1
             ORDER BY created_at DESC, id DESC LIMIT 8"
        )))
        .bind(&public)
        .fetch_all(self.pool())
        .await?;
        let mut earlier = rows
            .into_iter()
            .map(from_row)
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(log) = log {
            earlier.extend(log.read().map_err(StoreError::Corrupt)?);
        }
        let newest = earlier
            .into_iter()
            .filter(|c| c.public_key.eq_ignore_ascii_case(&public) && c.verify().is_ok())
            .max_by_key(|c| (c.created_at, c.id.clone()));
        if let Some(newest) = newest {
            let contradictions = self.contradictions(&newest, &heads).await?;
            if !contradictions.is_empty() {
                return Err(StoreError::Corrupt(format!(
                    "not signed: the ledger contradicts checkpoint {}: {}",
                    newest.id,
                    contradictions.join("; ")
                )));
            }
        }
        let checkpoint = sign(key, heads);
        let heads = serde_json::to_string(&checkpoint.heads)
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        sqlx::query(
            "INSERT INTO ledger_checkpoints (id, created_at, heads, key_id, public_key, signature,
                                             version, root)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&checkpoint.id)
        .bind(checkpoint.created_at)
        .bind(heads)
        .bind(&checkpoint.key_id)
        .bind(&checkpoint.public_key)
        .bind(&checkpoint.signature)
        .bind(i64::from(checkpoint.version))
        .bind(&checkpoint.root)
        .execute(self.writer())
        .await?;
        if let Some(log) = log {
            log.append(&checkpoint).map_err(|e| {
                StoreError::Corrupt(format!(
                    "checkpoint {} was made but not published: {e}",
                    checkpoint.id
                ))
            })?;
        }
        Ok(checkpoint)
    }

    /// Where `heads` (the accounts' heads now) contradict `earlier`: each account it signed
    /// must still exist, its chain must reach the `seq` it signed, the row there must keep the
    /// hash signed, and every row since must link from it to the head now.
    async fn contradictions(
        &self,
        earlier: &Checkpoint,
        heads: &BTreeMap<String, (i64, String)>,
    ) -> Result<Vec<String>, StoreError> {
        let mut found = Vec::new();
        let mut conn = self.pool().acquire().await?;
        for (account, (signed_seq, signed)) in &earlier.heads {
            let Some((seq, head)) = heads.get(account) else {
                found.push(format!(
                    "account {account} (signed at seq {signed_seq}) is gone"
                ));
                continue;
            };
            // Unchanged since: nothing to walk (a rewrite behind an unchanged head is the
            // audit's to find, which walks every chain whole).
            if (seq, head) == (signed_seq, signed) {
                continue;
            }
            if seq < signed_seq {
                found.push(format!(
                    "account {account}'s chain ends at seq {seq}, before seq {signed_seq}"
                ));
                continue;
            }
            let lines =
                crate::chain::read_lines(&mut conn, account, *signed_seq, *seq, i64::MAX).await?;
            let mut rows = lines.iter();
            match rows.next() {
                Some((line, stored))
                    if line.seq == *signed_seq && stored.as_deref() == Some(signed) => {}
                _ => {
                    found.push(format!(
                        "account {account}'s row at seq {signed_seq} no longer has the hash signed"
                    ));
                    continue;
                }
            }
            let walked =
                crate::chain::walk(signed, rows.map(|(line, stored)| (line, stored.as_deref())));
            match walked {
                Ok(reached) if reached == *head => {}
                Ok(reached) => found.push(format!(
                    "account {account}'s chain from seq {signed_seq} reaches {reached}, not its head {head}"
                )),
                Err(broken) => found.push(format!(
                    "account {account}: row {} (seq {}): {}",
                    broken.id, broken.seq, broken.why
                )),
            }
        }
        Ok(found)
    }

    /// The newest checkpoint, if any.
    pub async fn last_checkpoint(&self) -> Result<Option<Checkpoint>, StoreError> {
        let row: Option<CheckpointRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM ledger_checkpoints ORDER BY created_at DESC, id DESC LIMIT 1"
        )))
        .fetch_optional(self.pool())
        .await?;
        row.map(from_row).transpose()
    }

    /// The first version 2 checkpoint made at or after `at` (Unix milliseconds), if any.
    pub async fn checkpoint_after(&self, at: i64) -> Result<Option<Checkpoint>, StoreError> {
        let row: Option<CheckpointRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM ledger_checkpoints
             WHERE created_at >= $1 AND version = 2 ORDER BY created_at, id LIMIT 1"
        )))
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
        let heads: BTreeMap<String, (i64, String)> = [
            ("acct_a".to_owned(), (3, "ab".repeat(32))),
            ("acct_b".to_owned(), (7, "cd".repeat(32))),
            ("acct_c".to_owned(), (1, "ef".repeat(32))),
        ]
        .into();
        let mut checkpoint = sign(&key, heads);
        assert_eq!(checkpoint.verify(), Ok(()));
        // Each account's proof verifies under the signed root alone, and no other's does.
        let root_only = checkpoint.without_heads();
        assert_eq!(root_only.verify(), Ok(()));
        for account in ["acct_a", "acct_b", "acct_c"] {
            let proof = checkpoint.proof(account).unwrap();
            assert!(root_only.includes(&proof), "{account}");
            let mut lied = proof.clone();
            lied.seq += 1;
            assert!(!root_only.includes(&lied));
            let mut moved = proof.clone();
            moved.account_id = "acct_z".into();
            assert!(!root_only.includes(&moved));
        }
        // A head changed under the signature: refused.
        checkpoint
            .heads
            .insert("acct_a".into(), (3, "00".repeat(32)));
        assert!(checkpoint.verify().is_err());
        // Only the key stands for the key.
        let signed = sign(&key, BTreeMap::new());
        assert!(signed.signed_by(&[hex::encode(key.verifying_key().as_bytes())]));
        assert!(!signed.signed_by(std::slice::from_ref(&signed.key_id)));
        let again = parse_key_file(&key_file_text(&key)).unwrap();
        assert_eq!(again.to_bytes(), key.to_bytes());
        assert!(parse_key_file("nonsense").is_err());
    }

    #[test]
    fn a_version_one_checkpoint_still_verifies() {
        let key = generate_key();
        let heads: BTreeMap<String, (i64, String)> =
            [("acct_a".to_owned(), (3, "ab".repeat(32)))].into();
        let text = signed_text_v1("ckpt_1", 5, &heads);
        let public = key.verifying_key();
        let checkpoint = Checkpoint {
            id: "ckpt_1".into(),
            created_at: 5,
            version: 1,
            accounts: None,
            root: None,
            heads,
            key_id: key_id(&public),
            public_key: hex::encode(public.as_bytes()),
            signature: hex::encode(key.sign(text.as_bytes()).to_bytes()),
        };
        assert_eq!(checkpoint.verify(), Ok(()));
    }
}
