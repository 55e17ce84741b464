//! The access policies' parsers and matchers (`docs/decisions.md`, "Access policies"): globs,
//! CIDR networks, the X-Forwarded-For walk and RFC 3339 expiry times. An answer, never a panic,
//! and the properties each promises.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::net::IpAddr;
use tollgate_request::auth::client_address;
use tollgate_journal::clock::{format_rfc3339, parse_rfc3339};
use tollgate_store::{Cidr, glob_matches};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.splitn(4, '\n');
    let (a, b, c, d) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    // Globs: `*` matches anything; a glob without wildcards matches itself alone.
    let _ = glob_matches(a, b);
    assert!(glob_matches("*", b));
    if !a.contains(['*', '?']) {
        assert_eq!(glob_matches(a, b), a == b);
    }
    // Networks: a network contains its own address.
    if let Ok(cidr) = a.parse::<Cidr>() {
        if let Ok(ip) = a.split('/').next().unwrap_or_default().trim().parse::<IpAddr>() {
            assert!(cidr.contains(ip));
        }
        if let Ok(ip) = b.trim().parse::<IpAddr>() {
            let _ = cidr.contains(ip);
            // The walk never invents an address: the client is the peer or one it was told.
            let mut headers = http::HeaderMap::new();
            if let Ok(value) = http::HeaderValue::from_str(c) {
                headers.insert("x-forwarded-for", value);
            }
            if let Some(client) = client_address(Some(ip), &headers, &[cidr]) {
                let told = |hop: &str| {
                    let hop = hop.trim().trim_start_matches('[').trim_end_matches(']');
                    hop.parse::<IpAddr>().is_ok_and(|h| h == client)
                };
                assert!(client == ip || c.split(',').any(told));
            }
        }
    }
    // Expiry times: what parses prints back to the same second.
    if let Ok(millis) = parse_rfc3339(d) {
        let second = millis - millis.rem_euclid(1_000);
        assert_eq!(parse_rfc3339(&format_rfc3339(millis)), Ok(second));
    }
});
