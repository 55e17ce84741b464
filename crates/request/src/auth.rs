//! Credentials, read the way each family's own clients send them (DESIGN §2 step 2, docs/api.md §5),
//! and looked up through a cache; what the caller may then do is `tollgate_gateway::admission`'s.

use http::HeaderMap;
use http::header::AUTHORIZATION;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tollgate_exchange::errors::{ApiError, Family};
use tollgate_store::{Cidr, Principal, Store, StoreError, hash_secret};

/// How long a key lookup is trusted: a key or account disabled, or a key created, elsewhere
/// (the CLI, another replica) takes effect within this (DESIGN §4, `docs/decisions.md`).
pub const KEY_TTL: Duration = Duration::from_secs(1);
/// Past this many cached keys, expired entries are dropped before a new one is added.
const KEY_CACHE_PRUNE_AT: usize = 100_000;

/// Recent key lookups by secret hash, so that a request needs no database read to
/// authenticate (DESIGN §2 step 2) while a change made elsewhere still bites within
/// [`KEY_TTL`].
#[derive(Debug, Default)]
pub struct KeyCache {
    entries: Mutex<HashMap<String, (Instant, Lookup)>>,
}

/// A key lookup's outcome.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// The key works: whose it is.
    Found(Principal),
    /// No such key, or one revoked for good: a credential that does not exist (401).
    Unknown,
    /// The key or its account is disabled (403): it exists, and may be enabled again.
    Disabled,
}

impl KeyCache {
    fn get(&self, hash: &str) -> Option<Lookup> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(hash)
            .filter(|(at, _)| at.elapsed() < KEY_TTL)
            .map(|(_, lookup)| lookup.clone())
    }

    fn put(&self, hash: String, lookup: Lookup) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= KEY_CACHE_PRUNE_AT {
            entries.retain(|_, (at, _)| at.elapsed() < KEY_TTL);
        }
        entries.insert(hash, (Instant::now(), lookup));
    }

    /// Forgets every lookup: a change made through this replica's admin API bites at once
    /// here (other replicas within [`KEY_TTL`]).
    pub fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// The subprotocol a browser's WebSocket names its key with (a browser cannot set headers on
/// one): `Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.<key>`.
pub const KEY_SUBPROTOCOL: &str = "openai-insecure-api-key.";

/// The presented secret, if any: `Authorization: Bearer` for the OpenAI, t2a and Ark families
/// (or, on a WebSocket upgrade, the [`KEY_SUBPROTOCOL`] the browser offers);
/// `x-vendor-api-key`, `x-goog-api-key`, the `key` query parameter (or a Bearer token, which
/// some native-format clients send) for the Google family.
pub fn presented_secret(
    family: Family,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Option<String> {
    let bearer = || scheme_token(headers, "bearer");
    match family {
        Family::OpenAi => bearer().or_else(|| subprotocol_key(headers)),
        Family::T2a | Family::Ark => bearer(),
        Family::Google => ["x-vendor-api-key", "x-goog-api-key"]
            .iter()
            .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .or_else(|| query_param(query?, "key"))
            .or_else(bearer)
            // Gemini's ephemeral tokens: `Authorization: Token auth_tokens/…` (google-genai),
            // `?access_token=auth_tokens/…` (@google/genai in a browser).
            .or_else(|| scheme_token(headers, "token"))
            .or_else(|| query_param(query?, "access_token")),
    }
}

/// The token of an `Authorization: <scheme> <token>` header, when its scheme is `scheme`
/// (ASCII case ignored).
fn scheme_token(headers: &HeaderMap, scheme: &str) -> Option<String> {
    headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (said, token) = v.trim().split_once(' ')?;
            said.eq_ignore_ascii_case(scheme)
                .then(|| token.trim().to_owned())
        })
        .filter(|t| !t.is_empty())
}

/// The subprotocols a WebSocket upgrade offers (`Sec-WebSocket-Protocol`, every header and
/// every comma-separated entry), trimmed.
pub fn offered_subprotocols(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(http::header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
}

/// The key a WebSocket upgrade offers as a subprotocol ([`KEY_SUBPROTOCOL`]).
fn subprotocol_key(headers: &HeaderMap) -> Option<String> {
    offered_subprotocols(headers)
        .find_map(|p| p.strip_prefix(KEY_SUBPROTOCOL))
        .map(str::to_owned)
        .filter(|k| !k.is_empty())
}

/// How long a key the cache does not hold may wait for the database: past it the request is
/// refused quickly, as one that needs credit the database cannot grant is.
pub const LOOKUP_WITHIN: Duration = Duration::from_secs(3);

/// What the store says of a presented secret, through the cache: the key's principal, or why
/// it does not work. A database that does not answer within [`LOOKUP_WITHIN`] (cut off, its
/// pool exhausted) is a quick 503 with `Retry-After`, in the family's shape — not a wait for
/// the pool's 30 s and an internal error (issue 42); any other store error is the request's
/// 500.
pub async fn look_up(keys: &KeyCache, store: &Store, secret: &str) -> Result<Lookup, ApiError> {
    let hash = hash_secret(secret);
    if let Some(lookup) = keys.get(&hash) {
        return Ok(lookup);
    }
    let answer = tokio::time::timeout(LOOKUP_WITHIN, store.authenticate(secret))
        .await
        .map_err(|_| {
            tracing::warn!(within = ?LOOKUP_WITHIN, "a key lookup found no database answer in time");
            unreachable_store()
        })?;
    let lookup = match answer {
        Ok(Some(principal)) => Lookup::Found(principal),
        // A revoked key is answered as a key that does not exist: clients then ask for a new
        // one rather than wait (`docs/decisions.md`, "Access policies").
        Ok(None) | Err(StoreError::Revoked(_)) => Lookup::Unknown,
        Err(StoreError::Disabled(_)) => Lookup::Disabled,
        Err(e) if e.is_unavailable() => {
            tracing::warn!(error = %e, "a key lookup could not reach the database");
            return Err(unreachable_store());
        }
        Err(e) => return Err(ApiError::internal("checking the API key", e)),
    };
    keys.put(hash, lookup.clone());
    Ok(lookup)
}

/// The client's address. The connection's peer, unless it is one of `trusted` proxies: then
/// `X-Forwarded-For` is read from the right (each proxy appends the address it received from),
/// skipping trusted hops, and the first address a trusted proxy did not vouch for *as a proxy*
/// is the client. A malformed entry stops the walk at the last hop that could be believed.
pub fn client_address(
    peer: Option<IpAddr>,
    headers: &HeaderMap,
    trusted: &[Cidr],
) -> Option<IpAddr> {
    let peer = peer?;
    let is_trusted = |ip: IpAddr| trusted.iter().any(|t| t.contains(ip));
    if !is_trusted(peer) {
        return Some(peer);
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        let hop = hop.trim().trim_start_matches('[').trim_end_matches(']');
        let Ok(ip) = hop.parse::<IpAddr>() else {
            break;
        };
        client = ip;
        if !is_trusted(ip) {
            break;
        }
    }
    Some(client)
}

/// A secret as error messages may show it: its first and last few characters.
pub fn redact(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() <= 10 {
        return "*".repeat(chars.len().min(8));
    }
    let head: String = chars[..6].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}…{tail}")
}

/// One query parameter, percent-decoded.
pub fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The refusal of a request whose key could not be checked: the database did not answer.
fn unreachable_store() -> ApiError {
    ApiError::new(
        tollgate_exchange::errors::ErrorKind::Unavailable,
        "The gateway could not reach its database to check the API key in time; nothing was charged. Retry shortly",
    )
    .retry_after(1)
}

/// The address a throttled attempt (a sign-in, a code guessed) is counted against: an IPv4 address, or an IPv6 client's /64 (one
/// host is handed a whole /64 and may pick any address in it).
pub fn client_scope(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_read_their_own_credentials() {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, "Bearer tg-abc".parse().unwrap());
        assert_eq!(
            presented_secret(Family::OpenAi, &h, None).as_deref(),
            Some("tg-abc")
        );
        let mut g = HeaderMap::new();
        g.insert("x-goog-api-key", "tg-g".parse().unwrap());
        assert_eq!(
            presented_secret(Family::Google, &g, None).as_deref(),
            Some("tg-g")
        );
        assert_eq!(presented_secret(Family::OpenAi, &g, None), None);
        assert_eq!(
            presented_secret(
                Family::Google,
                &HeaderMap::new(),
                Some("alt=sse&key=tg%2Dq")
            )
            .as_deref(),
            Some("tg-q")
        );
        let mut v = HeaderMap::new();
        v.insert("x-vendor-api-key", "tg-v".parse().unwrap());
        assert_eq!(
            presented_secret(Family::Google, &v, Some("key=other")).as_deref(),
            Some("tg-v")
        );
        // Gemini's ephemeral tokens, as google-genai and @google/genai present them.
        let mut t = HeaderMap::new();
        t.insert(AUTHORIZATION, "Token auth_tokens/ek_1".parse().unwrap());
        assert_eq!(
            presented_secret(Family::Google, &t, None).as_deref(),
            Some("auth_tokens/ek_1")
        );
        assert_eq!(presented_secret(Family::OpenAi, &t, None), None);
        assert_eq!(
            presented_secret(
                Family::Google,
                &HeaderMap::new(),
                Some("access_token=auth_tokens%2Fek_2")
            )
            .as_deref(),
            Some("auth_tokens/ek_2")
        );
        // A browser's WebSocket: the key as a subprotocol beside `realtime`, OpenAI's only.
        let mut w = HeaderMap::new();
        w.insert(
            http::header::SEC_WEBSOCKET_PROTOCOL,
            "realtime, openai-insecure-api-key.tg-w".parse().unwrap(),
        );
        assert_eq!(
            presented_secret(Family::OpenAi, &w, None).as_deref(),
            Some("tg-w")
        );
        assert_eq!(presented_secret(Family::Ark, &w, None), None);
        w.insert(AUTHORIZATION, "Bearer tg-h".parse().unwrap());
        assert_eq!(
            presented_secret(Family::OpenAi, &w, None).as_deref(),
            Some("tg-h")
        );
    }

    #[test]
    fn only_a_trusted_proxy_names_the_client() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let trusted: Vec<Cidr> = vec!["10.0.0.0/8".parse().unwrap()];
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "198.51.100.7, 10.1.1.1".parse().unwrap());
        // From a proxy we trust: the rightmost address it did not vouch for as a proxy.
        assert_eq!(
            client_address(Some(ip("10.2.2.2")), &h, &trusted),
            Some(ip("198.51.100.7"))
        );
        // From anyone else: the header is ignored.
        assert_eq!(
            client_address(Some(ip("203.0.113.1")), &h, &trusted),
            Some(ip("203.0.113.1"))
        );
        assert_eq!(
            client_address(Some(ip("10.2.2.2")), &h, &[]),
            Some(ip("10.2.2.2"))
        );
        // A client cannot hide behind a forged leftmost entry.
        h.insert("x-forwarded-for", "1.1.1.1, 198.51.100.7".parse().unwrap());
        assert_eq!(
            client_address(Some(ip("10.2.2.2")), &h, &trusted),
            Some(ip("198.51.100.7"))
        );
        // Garbage stops the walk at the last believable hop.
        h.insert("x-forwarded-for", "nonsense".parse().unwrap());
        assert_eq!(
            client_address(Some(ip("10.2.2.2")), &h, &trusted),
            Some(ip("10.2.2.2"))
        );
        assert_eq!(client_address(None, &h, &trusted), None);
    }

    #[test]
    fn percent_decoding_is_total() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("%4"), "%4");
    }

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(redact("tg-0123456789abcdef"), "tg-012…cdef");
        assert_eq!(redact("short"), "*****");
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1"
            .parse()
            .unwrap_or(IpAddr::from([0; 4]));
        let b: IpAddr = "2001:db8:1:2:bbbb::9"
            .parse()
            .unwrap_or(IpAddr::from([0; 4]));
        assert_eq!(client_scope(a), client_scope(b));
        assert_eq!(client_scope(a), "2001:db8:1:2::/64");
        let mapped: IpAddr = "::ffff:198.51.100.7"
            .parse()
            .unwrap_or(IpAddr::from([0; 4]));
        assert_eq!(client_scope(mapped), "198.51.100.7");
    }
}
