//! The ledger's keys and checkpoints as `[ledger]` names them (docs/operations.md): the signing key
//! read from its file, the keys whose checkpoints are believed, the published log. Apart from
//! `config.rs`, which stays plain data, because these read files.

use crate::config::LedgerConfig;
use tollgate_store::checkpoint;

/// The key file in force: `TOLLGATE_LEDGER_KEY_FILE`, else the configuration's.
fn key_file(ledger: &LedgerConfig) -> Option<String> {
    std::env::var("TOLLGATE_LEDGER_KEY_FILE")
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| ledger.signing_key_file.clone())
}

/// The signing key, read from its file; `Ok(None)` without one.
pub fn signing_key(ledger: &LedgerConfig) -> Result<Option<ed25519_dalek::SigningKey>, String> {
    let Some(path) = key_file(ledger) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("[ledger] signing_key_file {path}: {e}"))?;
    checkpoint::parse_key_file(&text)
        .map(Some)
        .map_err(|e| format!("[ledger] signing_key_file {path}: {e}"))
}

/// The published log of checkpoints, when one is named.
pub fn published_log(ledger: &LedgerConfig) -> Option<checkpoint::PublishedLog> {
    ledger
        .publish_checkpoints
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .map(checkpoint::PublishedLog::new)
}

/// What the audit checks the chains against: the trusted keys, the published checkpoints,
/// and — with a key — the age past which a chained row must be signed: two checkpoint
/// periods and a minute.
pub fn audited_checkpoints(ledger: &LedgerConfig) -> Result<checkpoint::Checkpoints, String> {
    let trusted = trusted_keys(ledger)?;
    let published = match published_log(ledger) {
        Some(log) => log
            .read()
            .map_err(|e| format!("[ledger] publish_checkpoints: {e}"))?,
        None => Vec::new(),
    };
    let seconds = |s: u64| {
        i64::try_from(s)
            .unwrap_or(i64::MAX / 1000)
            .saturating_mul(1000)
    };
    let stale_after_ms = match ledger.checkpoint_stale_seconds {
        Some(s) => seconds(s),
        None => seconds(ledger.checkpoint_every_seconds.max(1))
            .saturating_mul(2)
            .saturating_add(60_000),
    };
    Ok(checkpoint::Checkpoints {
        stale_after_ms: (!trusted.is_empty()).then_some(stale_after_ms),
        trusted: (!trusted.is_empty()).then_some(trusted),
        published,
    })
}

/// Every public key (hex) whose checkpoints are believed: the signing key's and
/// `verify_keys`.
pub fn trusted_keys(ledger: &LedgerConfig) -> Result<Vec<String>, String> {
    let mut keys: Vec<String> = signing_key(ledger)?
        .iter()
        .map(|k| hex::encode(k.verifying_key().as_bytes()))
        .collect();
    for key in &ledger.verify_keys {
        checkpoint::parse_public_key(key)
            .map_err(|e| format!("[ledger] verify_keys {key:?}: {e}"))?;
        keys.push(key.trim().to_lowercase());
    }
    Ok(keys)
}
