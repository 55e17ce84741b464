//! Who a portal request comes from (docs/decisions.md, "The customer portal"): passwords as
//! argon2id hashes, TOTP codes (RFC 6238) and recovery codes, the session cookie, and the CSRF
//! token every write carries. Time is passed in, so the tests can step it.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use rand::RngCore;
use std::sync::LazyLock;
use totp_rs::{Builder, Secret, Totp};

/// Who may call a route of the portal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// Anyone: signing in, accepting an invitation.
    Open,
    /// A signed-in person; a write carries the session's CSRF token.
    Session,
}

/// The session cookie's name.
pub const COOKIE: &str = "tollgate_portal";
/// The header every write carries its session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Shortest and longest password accepted (bytes; NIST SP 800-63B asks for at least 8 and
/// room for 64).
pub const PASSWORD_BYTES: std::ops::RangeInclusive<usize> = 10..=256;
/// How many recovery codes TOTP comes with.
pub const RECOVERY_CODES: usize = 10;

/// Hashes a password as an argon2id PHC string with a fresh salt.
pub fn hash_password(password: &str) -> Result<String, String> {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt).map_err(|e| e.to_string())?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| e.to_string())
}

/// Whether `password` is the one `hash` was made from. An unreadable hash matches nothing.
pub fn verify_password(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A hash of no one's password: verified against when the email is unknown, so that a wrong
/// email takes as long as a wrong password and does not tell which people exist.
pub static NOBODY: LazyLock<String> =
    LazyLock::new(|| hash_password("no one's password").unwrap_or_default());

/// Why a new password is refused.
pub fn password_rule(password: &str, email: &str) -> Option<String> {
    if !PASSWORD_BYTES.contains(&password.len()) {
        return Some(format!(
            "a password has {} to {} bytes",
            PASSWORD_BYTES.start(),
            PASSWORD_BYTES.end()
        ));
    }
    if password.trim().eq_ignore_ascii_case(email.trim()) {
        return Some("a password may not be the email address".into());
    }
    None
}

/// A new TOTP secret: 160 random bits (RFC 4226 §4), in base 32 as authenticator apps take it.
pub fn new_totp_secret() -> String {
    let mut bytes = [0u8; 20];
    rand::rng().fill_bytes(&mut bytes);
    Secret::new(Box::new(bytes)).to_base32()
}

fn totp(secret: &str) -> Option<Totp> {
    let secret = Secret::try_from_base32(secret).ok()?;
    Builder::new().with_secret(secret).build().ok()
}

/// The time step `code` is right for at `now` (Unix seconds), one step either way allowed for
/// a clock's drift (RFC 6238 §5.2); `None` when it is wrong.
pub fn totp_step(secret: &str, code: &str, now: u64) -> Option<i64> {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    totp(secret)?
        .check(&code, now)
        .and_then(|step| i64::try_from(step).ok())
}

/// The code of `secret` at `now` (for tests, and the simulator of a person's phone).
pub fn totp_code(secret: &str, now: u64) -> Option<String> {
    Some(totp(secret)?.generate(now).to_string())
}

/// The `otpauth://` URI an authenticator app reads (Google's Key Uri Format).
pub fn otpauth_uri(secret: &str, issuer: &str, email: &str) -> String {
    let label = format!("{}:{}", encode(issuer), encode(email));
    format!(
        "otpauth://totp/{label}?secret={secret}&issuer={}&algorithm=SHA1&digits=6&period=30",
        encode(issuer)
    )
}

/// Percent-encodes everything but unreserved characters (RFC 3986 §2.3).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// New recovery codes: each 50 random bits as ten symbols of Crockford's base 32,
/// `XXXXX-XXXXX`.
pub fn new_recovery_codes() -> Vec<String> {
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    (0..RECOVERY_CODES)
        .map(|_| {
            let mut random = [0u8; 10];
            rand::rng().fill_bytes(&mut random);
            let symbols: String = random
                .iter()
                .map(|b| char::from(ALPHABET[usize::from(b & 31)]))
                .collect();
            format!("{}-{}", &symbols[..5], &symbols[5..])
        })
        .collect()
}

/// A recovery code as it is kept: upper case, without dashes or spaces.
pub fn normalize_recovery(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// The session token of a request's `Cookie` headers, when it carries ours.
pub fn session_cookie(headers: &http::HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The `Set-Cookie` value of a session: only sent back to `/portal`, never readable by a
/// script, never sent by another site's request, `Secure` when the portal is reached over TLS.
pub fn set_cookie(token: &str, max_age_seconds: u64, secure: bool) -> String {
    format!(
        "{COOKIE}={token}; Path=/portal; Max-Age={max_age_seconds}; HttpOnly; SameSite=Strict{}",
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn clear_cookie(secure: bool) -> String {
    set_cookie("", 0, secure)
}

/// Compares two secrets in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_verifies_against_its_hash_only() {
        let hash = hash_password("correct horse battery").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password(&hash, "correct horse battery"));
        assert!(!verify_password(&hash, "correct horse batterY"));
        assert!(!verify_password("not a hash", "anything"));
        assert!(!verify_password(&NOBODY, "correct horse battery"));
        assert!(password_rule("short", "a@b.c").is_some());
        assert!(password_rule("a@example.com", "A@example.com").is_some());
        assert!(password_rule("a long enough one", "a@b.c").is_none());
    }

    #[test]
    fn a_totp_code_is_right_for_its_step_and_one_either_side() {
        let secret = new_totp_secret();
        let now = 1_800_000_000;
        let code = totp_code(&secret, now).unwrap();
        assert_eq!(totp_step(&secret, &code, now), Some(60_000_000));
        assert_eq!(totp_step(&secret, &code, now + 30), Some(60_000_000));
        assert_eq!(totp_step(&secret, &code, now + 90), None);
        assert_eq!(totp_step(&secret, "12345", now), None);
        assert_eq!(totp_step(&secret, "abcdef", now), None);
        // RFC 6238's test vector: "12345678901234567890", T = 59 → 287082 (6 digits).
        let rfc = Secret::new(Box::new(*b"12345678901234567890")).to_base32();
        assert_eq!(totp_code(&rfc, 59).unwrap(), "287082");
    }

    #[test]
    fn the_cookie_is_ours_and_well_formed() {
        let mut headers = http::HeaderMap::new();
        let token = "ab".repeat(32);
        headers.insert(
            http::header::COOKIE,
            format!("other=1; {COOKIE}={token}; x=y").parse().unwrap(),
        );
        assert_eq!(session_cookie(&headers), Some(token.clone()));
        headers.insert(
            http::header::COOKIE,
            format!("{COOKIE}=<script>").parse().unwrap(),
        );
        assert_eq!(session_cookie(&headers), None);
        let set = set_cookie(&token, 60, true);
        for flag in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/portal"] {
            assert!(set.contains(flag), "{set}");
        }
        assert!(!set_cookie(&token, 60, false).contains("Secure"));
    }

    #[test]
    fn recovery_codes_are_many_and_read_back() {
        let codes = new_recovery_codes();
        assert_eq!(codes.len(), RECOVERY_CODES);
        assert_eq!(normalize_recovery(&codes[0].to_lowercase()).len(), 10);
        assert!(otpauth_uri("ABC", "tollgate", "a b@c.d").contains("a%20b%40c.d"));
    }
}
