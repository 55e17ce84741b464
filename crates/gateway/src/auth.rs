//! Credentials, read the way each family's own clients send them (DESIGN §2 step 2, docs/api.md §5).

use crate::clock::now_millis;
use crate::errors::{ApiError, ErrorKind, Family};
use crate::handlers::Context;
use http::HeaderMap;
use http::header::AUTHORIZATION;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tollgate_store::{Cidr, Principal, StoreError, hash_secret};

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

#[derive(Debug, Clone)]
enum Lookup {
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

/// The presented secret, if any: `Authorization: Bearer` for the OpenAI, t2a and Ark families;
/// `x-vendor-api-key`, `x-goog-api-key`, the `key` query parameter (or a Bearer token, which
/// some native-format clients send) for the Google family.
pub fn presented_secret(
    family: Family,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Option<String> {
    let bearer = || {
        headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| token.trim().to_owned())
            })
            .filter(|t| !t.is_empty())
    };
    match family {
        Family::OpenAi | Family::T2a | Family::Ark => bearer(),
        Family::Google => ["x-vendor-api-key", "x-goog-api-key"]
            .iter()
            .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .or_else(|| query_param(query?, "key"))
            .or_else(bearer),
    }
}

/// Authenticates a request: the key must exist and be enabled, with its account, and the
/// request must pass their access policies' expiry, endpoint and network rules (the model rule
/// is checked where the model is known: [`admit_model`]).
pub async fn authenticate(
    ctx: &Context,
    family: Family,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<Principal, ApiError> {
    let state = &ctx.state;
    let Some(secret) = presented_secret(family, headers, query) else {
        return Err(ApiError::new(
            ErrorKind::MissingCredential,
            match family {
                Family::Google => {
                    "Method doesn't allow unregistered callers: pass your key in x-vendor-api-key, x-goog-api-key or ?key="
                }
                _ => "You didn't provide an API key: pass it as 'Authorization: Bearer YOUR_KEY'",
            },
        ));
    };
    let hash = hash_secret(&secret);
    let lookup = match state.keys.get(&hash) {
        Some(lookup) => lookup,
        None => {
            let lookup = match state.store.authenticate(&secret).await {
                Ok(Some(principal)) => Lookup::Found(principal),
                // A revoked key is answered as a key that does not exist: clients then ask
                // for a new one rather than wait (`docs/decisions.md`, "Access policies").
                Ok(None) | Err(StoreError::Revoked(_)) => Lookup::Unknown,
                Err(StoreError::Disabled(_)) => Lookup::Disabled,
                Err(e) => return Err(ApiError::internal("checking the API key", e)),
            };
            state.keys.put(hash, lookup.clone());
            lookup
        }
    };
    match lookup {
        Lookup::Found(principal) => {
            let span = tracing::Span::current();
            span.record("account", principal.account_name.as_str());
            span.record("key", principal.key_id.as_str());
            crate::usage::note_principal(&principal);
            admit(&principal, ctx, family, now_millis())?;
            // Rate limits and concurrency count billable requests (the ones logged); what the
            // admission holds lives as long as the request, in its usage draft.
            if crate::usage::is_logged(ctx.route) {
                let mut headers = crate::quotas::RateHeaders::default();
                let admitted = state.quotas.admit_request(&principal, &mut headers).await;
                crate::usage::note_rate_headers(&headers);
                if let Some(admitted) = admitted? {
                    crate::usage::keep(admitted);
                }
            }
            Ok(principal)
        }
        Lookup::Unknown => Err(ApiError::new(
            ErrorKind::InvalidCredential,
            match family {
                // The vendor's own words; its SDK shows them as they are.
                Family::Google => "API key not valid. Please pass a valid API key.".to_owned(),
                _ => format!("Incorrect API key provided: {}", redact(&secret)),
            },
        )),
        Lookup::Disabled => Err(ApiError::new(
            ErrorKind::Forbidden,
            "This API key or its account has been disabled",
        )),
    }
}

/// The access policies' rules that need no model: expiry (401, like an unknown key: the key no
/// longer works), then the endpoint and the client's network (403).
fn admit(principal: &Principal, ctx: &Context, family: Family, now: i64) -> Result<(), ApiError> {
    let policies = &principal.policies;
    // Expiry first, over both layers: a key that no longer works says so, whatever else.
    if policies.iter().any(|p| p.expired(now)) {
        return Err(refused(
            "expired",
            ErrorKind::InvalidCredential,
            match family {
                Family::Google => "API key expired. Please renew the API key.",
                _ => "This API key has expired",
            }
            .to_owned(),
        ));
    }
    if let Some(endpoint) = ctx.route.policy_endpoint()
        && !policies.iter().all(|p| p.admits_endpoint(endpoint))
    {
        return Err(refused(
            "endpoint",
            ErrorKind::Forbidden,
            format!("This API key may not call the {endpoint} endpoint"),
        ));
    }
    if !policies.iter().all(|p| p.admits_client(ctx.client)) {
        let from = ctx
            .client
            .map_or_else(|| "an unknown address".to_owned(), |ip| ip.to_string());
        return Err(refused(
            "network",
            ErrorKind::Forbidden,
            format!("This API key may not be used from {from}"),
        ));
    }
    Ok(())
}

/// The model rule of the access policies: `model` is the public name, aliases resolved.
pub fn admit_model(principal: &Principal, model: &str) -> Result<(), ApiError> {
    if may_use_model(principal, model) {
        return Ok(());
    }
    let mut e = refused(
        "model",
        ErrorKind::Forbidden,
        format!("This API key may not use the model '{model}'"),
    );
    e.param = Some("model".into());
    Err(e)
}

/// Whether the key's policies allow `model` (what a model listing shows it).
pub fn may_use_model(principal: &Principal, model: &str) -> bool {
    principal.policies.iter().all(|p| p.admits_model(model))
}

/// Each access-policy rule: its name on `/metrics`, and the code its refusals carry.
const POLICY_RULES: [(&str, &str); 4] = [
    ("expired", "api_key_expired"),
    ("endpoint", "endpoint_not_allowed"),
    ("network", "network_not_allowed"),
    ("model", "model_not_allowed"),
];

/// The access-policy rule behind an error, for `/metrics`; `None` for any other error.
pub fn policy_rule(e: &ApiError) -> Option<&'static str> {
    let code = e.code.as_deref()?;
    POLICY_RULES
        .iter()
        .find(|(_, c)| *c == code)
        .map(|(rule, _)| *rule)
}

fn refused(rule: &str, kind: ErrorKind, message: String) -> ApiError {
    let code = POLICY_RULES
        .iter()
        .find(|(r, _)| *r == rule)
        .map_or("access_denied", |(_, code)| code);
    ApiError::new(kind, message).code(code)
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
fn redact(secret: &str) -> String {
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
}
