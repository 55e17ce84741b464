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
    let mut random = [0u8; 6];
    rand::rng().fill_bytes(&mut random);
    let millis = millis.clamp(0, 0xffff_ffff_ffff) as u64;
    // Written a digit at a time: two ids a billed request, and `format!` with `hex::encode`
    // cost 4,000 instructions each (`docs/benchmarks.md`, "Instructions per request").
    let mut time = [0u8; 6];
    time.copy_from_slice(&millis.to_be_bytes()[2..]);
    let mut id = String::with_capacity(prefix.len() + 25);
    id.push_str(prefix);
    id.push('_');
    push_hex(&mut id, &time);
    push_hex(&mut id, &random);
    id
}

/// `bytes` as lowercase hex (what `hex::encode` writes, without its per-character iterator:
/// a key's hash and a ledger row's are written on every billed request).
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    out
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
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
    format!("{prefix}-{}", hex(&bytes))
}

/// The stored form of a secret: its SHA-256, hex-encoded. The secret itself is never stored.
pub fn hash_secret(secret: &str) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(secret.as_bytes()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_id_is_its_prefix_twelve_hex_digits_of_time_and_twelve_random() {
        for millis in [
            0,
            1,
            0xabc,
            1_764_201_600_123,
            0xffff_ffff_ffff,
            -5,
            i64::MAX,
        ] {
            let id = new_id_at("led", millis);
            let clamped = millis.clamp(0, 0xffff_ffff_ffff);
            assert_eq!(&id[..16], format!("led_{clamped:012x}"), "{millis}");
            assert_eq!(id.len(), 4 + 24);
            assert!(
                id[4..]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            );
            assert_eq!(id_millis(&id), Some(clamped));
        }
        let ids: std::collections::HashSet<String> =
            (0..1000).map(|_| new_id_at("hold", 7)).collect();
        assert_eq!(ids.len(), 1000, "48 random bits each");
    }

    #[test]
    fn hex_is_what_the_hex_crate_writes() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(hex(&all), ::hex::encode(&all));
        assert_eq!(hex(&[]), "");
        assert_eq!(
            hash_secret("tg-secret"),
            ::hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"tg-secret"))
        );
    }
}
