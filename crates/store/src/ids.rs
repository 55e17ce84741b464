//! Identifiers. Rows carry text ids with a type prefix (`acct_`, `key_`, `hold_`, `led_`, …) so
//! that an id in a log line says what it names, and so that the same DDL works on both engines
//! (no auto-increment, which SQLite and PostgreSQL spell differently).

use rand::RngCore;

/// A new id: `prefix_` followed by 24 hex digits — 12 of Unix milliseconds, then 12 random (48
/// bits). Time first, so that ids sort by creation and each new row lands at the right edge of
/// its B-tree index instead of on a random page: the ledger takes thousands of rows a second.
pub fn new_id(prefix: &str) -> String {
    new_id_at(prefix, crate::now_millis())
}

/// A new id whose time part is `millis` (Unix milliseconds).
pub(crate) fn new_id_at(prefix: &str, millis: i64) -> String {
    let mut bytes = [0u8; 6];
    rand::rng().fill_bytes(&mut bytes);
    let millis = millis.clamp(0, 0xffff_ffff_ffff);
    format!("{prefix}_{millis:012x}{}", hex::encode(bytes))
}

/// The Unix milliseconds an id of [`new_id`] was made at; `None` for any other text.
pub(crate) fn id_millis(id: &str) -> Option<i64> {
    let (_, rest) = id.split_once('_')?;
    i64::from_str_radix(rest.get(..12)?, 16).ok()
}

/// A new API key secret: `tg-` followed by 48 hex digits (192 random bits).
pub(crate) fn new_secret() -> String {
    new_secret_with("tg")
}

/// A new secret `prefix-` + 48 hex digits: `tg` for API keys, `tga` for admin tokens, so that
/// a secret says which door it opens.
pub(crate) fn new_secret_with(prefix: &str) -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}-{}", hex::encode(bytes))
}

/// The stored form of a secret: its SHA-256, hex-encoded. The secret itself is never stored.
pub fn hash_secret(secret: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(secret.as_bytes()))
}
