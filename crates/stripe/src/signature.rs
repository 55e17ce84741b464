//! `Stripe-Signature` (docs/decisions.md, "Payments"): Stripe signs each webhook delivery with
//! the endpoint's secret (`whsec_…`, the whole string is the HMAC key) over `TIMESTAMP.BODY`,
//! and sends `t=TIMESTAMP,v1=HEX[,v1=HEX…]`. While a secret is being rolled, a delivery carries
//! one `v1` per live secret, and a receiver may hold more than one secret itself; any `v1` that
//! matches any secret passes. Other schemes (`v0`, Stripe's test-mode signature) are ignored,
//! as Stripe's own libraries do. Time is passed in.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The tolerance Stripe's libraries use: a delivery signed more than five minutes away from
/// the receiver's clock is refused (a replay of an old one, or a clock gone wrong).
pub const DEFAULT_TOLERANCE_SECONDS: i64 = 300;

/// An endpoint's signing secret, as Stripe shows it (`whsec_…`).
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(String);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(…)")
    }
}

impl std::str::FromStr for WebhookSecret {
    type Err = SignatureError;

    fn from_str(text: &str) -> Result<WebhookSecret, SignatureError> {
        let text = text.trim();
        match text.strip_prefix("whsec_") {
            Some(rest) if rest.len() >= 16 && rest.bytes().all(|b| b.is_ascii_graphic()) => {
                Ok(WebhookSecret(text.to_owned()))
            }
            _ => Err(SignatureError::Secret),
        }
    }
}

/// Why a delivery's signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A configured secret is not `whsec_` and at least 16 more characters.
    #[error("a webhook signing secret is \"whsec_\" and at least 16 more characters")]
    Secret,
    /// No `Stripe-Signature` header, or one without `t=` or without a `v1=`.
    #[error("Stripe-Signature is missing or is not t=TIMESTAMP,v1=SIGNATURE")]
    Header,
    /// The timestamp is further from now than the tolerance.
    #[error("Stripe-Signature's timestamp is {0} s from now, beyond the tolerance")]
    Stale(i64),
    /// No `v1` signature matches any of the secrets.
    #[error("no v1 signature in Stripe-Signature matches the endpoint's secret")]
    Mismatch,
}

impl WebhookSecret {
    fn mac(&self, timestamp: i64, body: &[u8]) -> HmacSha256 {
        // An HMAC takes a key of any length: `new_from_slice` cannot fail for it.
        let mut mac = match HmacSha256::new_from_slice(self.0.as_bytes()) {
            Ok(mac) => mac,
            Err(_) => unreachable!("HMAC accepts keys of any length"),
        };
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The hex `v1` signature of `body` sent at `timestamp` (Unix seconds).
    pub fn v1(&self, timestamp: i64, body: &[u8]) -> String {
        hex::encode(self.mac(timestamp, body).finalize().into_bytes())
    }
}

/// The `Stripe-Signature` value of `body` sent at `timestamp`, signed with each of `secrets` (as
/// Stripe sends it while a secret is rolled): for the simulator and for tests.
pub fn header(secrets: &[&WebhookSecret], timestamp: i64, body: &[u8]) -> String {
    let mut value = format!("t={timestamp}");
    for secret in secrets {
        value.push_str(",v1=");
        value.push_str(&secret.v1(timestamp, body));
    }
    value
}

/// What a receiver does (Stripe's "Verify manually"): reads `t` and every `v1` of `header`,
/// refuses a timestamp more than `tolerance` seconds from `now` (either way: a delivery from
/// the future is a clock to fix, not one to trust), and accepts when one `v1` is the signature
/// of `body` under one of `secrets`, compared in constant time. Answers the timestamp.
pub fn verify(
    header: &str,
    body: &[u8],
    secrets: &[WebhookSecret],
    now: i64,
    tolerance: i64,
) -> Result<i64, SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for item in header.split(',') {
        match item.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", s)) => {
                if let Ok(bytes) = hex::decode(s) {
                    signatures.push(bytes);
                }
            }
            _ => {}
        }
    }
    let Some(timestamp) = timestamp else {
        return Err(SignatureError::Header);
    };
    if signatures.is_empty() {
        return Err(SignatureError::Header);
    }
    let off = now.saturating_sub(timestamp);
    if off.saturating_abs() > tolerance {
        return Err(SignatureError::Stale(off));
    }
    let matches = secrets.iter().any(|secret| {
        signatures
            .iter()
            .any(|tag| secret.mac(timestamp, body).verify_slice(tag).is_ok())
    });
    if matches {
        Ok(timestamp)
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn secret(s: &str) -> WebhookSecret {
        s.parse().unwrap()
    }

    #[test]
    fn a_known_signature_verifies() {
        // Computed independently: printf '1700000000.{"id":"evt_1"}' |
        //   openssl dgst -sha256 -hmac whsec_test_0123456789abcdef
        let s = secret("whsec_test_0123456789abcdef");
        let body = br#"{"id":"evt_1"}"#;
        let v1 = s.v1(1_700_000_000, body);
        assert_eq!(
            v1,
            "950d8e5fabb3af089049297d5e94a2a84e25776792dfb61711758872d45f2336"
        );
        let h = format!("t=1700000000,v1={v1}");
        assert_eq!(
            verify(&h, body, &[s], 1_700_000_100, 300),
            Ok(1_700_000_000)
        );
    }

    #[test]
    fn rotation_any_v1_under_any_secret() {
        let old = secret("whsec_old_0123456789abcdef");
        let new = secret("whsec_new_0123456789abcdef");
        let body = b"{}";
        let both = header(&[&old, &new], 10, body);
        assert_eq!(
            verify(&both, body, std::slice::from_ref(&new), 10, 300),
            Ok(10)
        );
        assert_eq!(
            verify(&both, body, std::slice::from_ref(&old), 10, 300),
            Ok(10)
        );
        let only_old = header(&[&old], 10, body);
        assert_eq!(
            verify(&only_old, body, &[new.clone(), old.clone()], 10, 300),
            Ok(10)
        );
        assert_eq!(
            verify(&only_old, body, &[new], 10, 300),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn refused_old_future_forged_malformed() {
        let s = secret("whsec_test_0123456789abcdef");
        let body = b"{\"amount\":1}";
        let h = header(&[&s], 1000, body);
        assert_eq!(
            verify(&h, body, std::slice::from_ref(&s), 1301, 300),
            Err(SignatureError::Stale(301))
        );
        assert_eq!(
            verify(&h, body, std::slice::from_ref(&s), 699, 300),
            Err(SignatureError::Stale(-301))
        );
        assert_eq!(
            verify(&h, b"{\"amount\":2}", std::slice::from_ref(&s), 1000, 300),
            Err(SignatureError::Mismatch)
        );
        for bad in ["", "v1=00", "t=1000", "t=x,v1=00", "garbage"] {
            assert!(
                verify(bad, body, std::slice::from_ref(&s), 1000, 300).is_err(),
                "{bad}"
            );
        }
        // v0 (test mode's) alone is not enough.
        let v0 = h.replace("v1=", "v0=");
        assert_eq!(
            verify(&v0, body, std::slice::from_ref(&s), 1000, 300),
            Err(SignatureError::Header)
        );
        assert!("sk_live_x".parse::<WebhookSecret>().is_err());
        assert!("whsec_short".parse::<WebhookSecret>().is_err());
    }
}
