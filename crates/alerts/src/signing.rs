//! Standard Webhooks signing (<https://www.standardwebhooks.com>, `docs/decisions.md`,
//! "Alerts"): each delivery carries `webhook-id` (the message's id, the same on every retry, so
//! a receiver drops a repeat), `webhook-timestamp` (Unix seconds of the attempt) and
//! `webhook-signature`: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret
//! that follows `whsec_` in the operator's secret, itself base64.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The prefix of a secret in its written form.
const PREFIX: &str = "whsec_";
/// The signature scheme this crate writes and reads.
const SCHEME: &str = "v1";

/// A signing secret: the bytes of a `whsec_…` string.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// Why a secret or a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SigningError {
    /// The secret is not `whsec_` and base64 of 24 to 64 bytes.
    #[error("a signing secret is \"whsec_\" and the base64 of 24 to 64 random bytes: {0}")]
    Secret(&'static str),
    /// A header is missing or malformed.
    #[error("{0}")]
    Header(&'static str),
    /// The timestamp is further from now than the tolerance.
    #[error("webhook-timestamp is {0} s from now, beyond the tolerance")]
    Stale(i64),
    /// No `v1` signature in the header matches.
    #[error("no signature in webhook-signature matches")]
    Mismatch,
}

impl std::str::FromStr for Secret {
    type Err = SigningError;

    fn from_str(text: &str) -> Result<Secret, SigningError> {
        let encoded = text
            .trim()
            .strip_prefix(PREFIX)
            .ok_or(SigningError::Secret("it does not start with whsec_"))?;
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| SigningError::Secret("what follows whsec_ is not base64"))?;
        if !(24..=64).contains(&bytes.len()) {
            return Err(SigningError::Secret("it decodes to the wrong length"));
        }
        Ok(Secret(bytes))
    }
}

impl Secret {
    /// A new secret of `random` bytes (the caller draws them: this crate does no I/O).
    pub fn from_random(random: [u8; 32]) -> Secret {
        Secret(random.to_vec())
    }

    /// Its written form, `whsec_` and base64 — what a receiver is given to verify with.
    pub fn reveal(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(&self.0))
    }

    fn mac(&self, id: &str, timestamp: i64, body: &[u8]) -> HmacSha256 {
        // An HMAC takes a key of any length: `new_from_slice` cannot fail for it.
        let mut mac = match HmacSha256::new_from_slice(&self.0) {
            Ok(mac) => mac,
            Err(_) => unreachable!("HMAC accepts keys of any length"),
        };
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The `webhook-signature` value of `body` sent as message `id` at `timestamp` (Unix s).
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let tag = self.mac(id, timestamp, body).finalize().into_bytes();
        format!("{SCHEME},{}", STANDARD.encode(tag))
    }

    /// The three headers of one attempt, in the order the standard lists them.
    pub fn headers(&self, id: &str, timestamp: i64, body: &[u8]) -> [(&'static str, String); 3] {
        [
            ("webhook-id", id.to_owned()),
            ("webhook-timestamp", timestamp.to_string()),
            ("webhook-signature", self.sign(id, timestamp, body)),
        ]
    }

    /// What a receiver does: the timestamp within `tolerance` seconds of `now` (Unix s), and one
    /// of the space-separated `v1,…` signatures that of `body` (compared in constant time).
    pub fn verify(
        &self,
        id: &str,
        timestamp: &str,
        signatures: &str,
        body: &[u8],
        now: i64,
        tolerance: i64,
    ) -> Result<(), SigningError> {
        let at: i64 = timestamp
            .trim()
            .parse()
            .map_err(|_| SigningError::Header("webhook-timestamp is not Unix seconds"))?;
        if (now - at).abs() > tolerance {
            return Err(SigningError::Stale(now - at));
        }
        for signature in signatures.split_whitespace() {
            let Some((SCHEME, encoded)) = signature.split_once(',') else {
                continue;
            };
            let Ok(tag) = STANDARD.decode(encoded) else {
                continue;
            };
            if self.mac(id, at, body).verify_slice(&tag).is_ok() {
                return Ok(());
            }
        }
        Err(SigningError::Mismatch)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_drawn_secret_reads_back_as_written() {
        let secret = Secret::from_random([7; 32]);
        let written = secret.reveal();
        assert!(written.starts_with("whsec_"));
        assert_eq!(written.parse::<Secret>().unwrap(), secret);
    }

    /// The example of the Standard Webhooks specification and its reference libraries.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const AT: i64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn signs_the_specifications_example() {
        let secret: Secret = SECRET.parse().unwrap();
        assert_eq!(secret.sign(ID, AT, BODY), SIGNATURE);
        let headers = secret.headers(ID, AT, BODY);
        assert_eq!(headers[0], ("webhook-id", ID.to_owned()));
        assert_eq!(headers[1], ("webhook-timestamp", AT.to_string()));
        assert_eq!(headers[2], ("webhook-signature", SIGNATURE.to_owned()));
    }

    #[test]
    fn verifies_as_a_receiver_does() {
        let secret: Secret = SECRET.parse().unwrap();
        let at = AT.to_string();
        assert_eq!(
            secret.verify(ID, &at, SIGNATURE, BODY, AT + 60, 300),
            Ok(())
        );
        // Several signatures (a rotated secret): any one matching is enough.
        let two = format!("v1,bm90IGl0 {SIGNATURE}");
        assert_eq!(secret.verify(ID, &at, &two, BODY, AT, 300), Ok(()));
        assert_eq!(
            secret.verify(ID, &at, SIGNATURE, br#"{"test": 1}"#, AT, 300),
            Err(SigningError::Mismatch)
        );
        assert_eq!(
            secret.verify("msg_other", &at, SIGNATURE, BODY, AT, 300),
            Err(SigningError::Mismatch)
        );
        assert_eq!(
            secret.verify(ID, &at, SIGNATURE, BODY, AT + 301, 300),
            Err(SigningError::Stale(301))
        );
        assert_eq!(
            secret.verify(ID, &at, "v2,abc", BODY, AT, 300),
            Err(SigningError::Mismatch)
        );
    }

    #[test]
    fn refuses_secrets_not_in_the_standard_form() {
        assert!(
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
                .parse::<Secret>()
                .is_err()
        );
        assert!("whsec_not base64!".parse::<Secret>().is_err());
        assert!("whsec_c2hvcnQ=".parse::<Secret>().is_err());
        assert_eq!(
            format!("{:?}", SECRET.parse::<Secret>().unwrap()),
            "Secret(…)"
        );
    }
}
