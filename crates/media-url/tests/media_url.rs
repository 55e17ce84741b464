//! docs/api.md §2.7 content rule 4: media URLs must be public. A table of accepted and refused URLs
//! (encoded-IP tricks, IPv6 literals, userinfo, ports, special names), inline data URLs, and
//! `is_public_ip`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr};

use proptest::prelude::*;
use tollgate_media_url::{
    Host, MAX_INLINE_IMAGE_BYTES, UrlProblem, check_audio_url, check_image_url, check_video_url,
    is_public_ip, parse_http_url,
};

/// How a URL is judged, for the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Ok,
    Empty,
    Scheme,
    Malformed,
    Userinfo,
    Ambiguous,
    PrivateIp,
    PrivateName,
    DataNotAllowed,
}

fn judge(result: Result<(), UrlProblem>) -> Want {
    match result {
        Ok(()) => Want::Ok,
        Err(UrlProblem::Empty) => Want::Empty,
        Err(UrlProblem::Scheme(_)) => Want::Scheme,
        Err(UrlProblem::Malformed(_)) => Want::Malformed,
        Err(UrlProblem::Userinfo) => Want::Userinfo,
        Err(UrlProblem::AmbiguousIp(_)) => Want::Ambiguous,
        Err(UrlProblem::NotPublicIp(_)) => Want::PrivateIp,
        Err(UrlProblem::NotPublicName(_)) => Want::PrivateName,
        Err(UrlProblem::DataNotAllowed) => Want::DataNotAllowed,
        Err(other) => panic!("unexpected {other:?}"),
    }
}

const URLS: &[(&str, Want)] = &[
    // Public.
    ("https://example.com/a.png", Want::Ok),
    ("http://example.com:8080/a.png", Want::Ok),
    ("HTTPS://CDN.Example.COM/Path/A.PNG", Want::Ok),
    ("https://example.com./a.png", Want::Ok),
    ("https://example.com?sig=abc", Want::Ok),
    ("https://example.com#frag", Want::Ok),
    ("https://example.com:/a.png", Want::Ok),
    ("https://a.b.example.co.uk/p/q?x=1&y=%20#z", Want::Ok),
    ("https://xn--fiqs8s.xn--fiqz9s/a.png", Want::Ok),
    ("https://my_bucket.s3.amazonaws.com/v.mp4", Want::Ok),
    ("http://93.184.216.34/a.png", Want::Ok),
    ("http://8.8.8.8:80/", Want::Ok),
    ("http://172.32.0.1/", Want::Ok),
    ("http://100.128.0.1/", Want::Ok),
    (
        "http://[2606:2800:220:1:248:1893:25c8:1946]/a.png",
        Want::Ok,
    ),
    (
        "http://[2606:2800:220:1:248:1893:25c8:1946]:8443/a.png",
        Want::Ok,
    ),
    ("http://[::ffff:8.8.8.8]/", Want::Ok),
    // A name is judged by name; resolution is the gateway's (is_public_ip on each address).
    ("http://10.0.0.1.nip.io/", Want::Ok),
    // Not a URL, or another scheme.
    ("", Want::Empty),
    ("file:///etc/passwd", Want::Scheme),
    ("ftp://example.com/a.png", Want::Scheme),
    ("gopher://example.com:70/_GET", Want::Scheme),
    ("javascript:alert(1)", Want::Scheme),
    ("dict://127.0.0.1:11211/stat", Want::Scheme),
    ("example.com/a.png", Want::Malformed),
    ("//example.com/a.png", Want::Malformed),
    ("http:/example.com/a.png", Want::Malformed),
    ("http:example.com/a.png", Want::Malformed),
    ("http://", Want::Malformed),
    ("http:///a.png", Want::Malformed),
    (" https://example.com/a.png", Want::Malformed),
    ("https://exa mple.com/a.png", Want::Malformed),
    ("https://example.com/a\tb.png", Want::Malformed),
    ("http://example.com\\@127.0.0.1/", Want::Malformed),
    ("http://a..b.com/", Want::Malformed),
    ("http://exa!mple.com/", Want::Malformed),
    ("http://%31%32%37.0.0.1/", Want::Malformed),
    ("http://１２７.０.０.１/", Want::Malformed),
    ("http://bücher.example/", Want::Malformed),
    // Ports.
    ("http://example.com:0/", Want::Malformed),
    ("http://example.com:65536/", Want::Malformed),
    ("http://example.com:80abc/", Want::Malformed),
    ("http://example.com:-1/", Want::Malformed),
    ("http://example.com:8080:90/", Want::Malformed),
    // Userinfo.
    ("http://user@127.0.0.1/", Want::Userinfo),
    ("http://user:pass@example.com/", Want::Userinfo),
    ("http://example.com@127.0.0.1/", Want::Userinfo),
    ("http://@example.com/", Want::Userinfo),
    // Private, loopback, link-local, ... IPv4.
    ("http://127.0.0.1/", Want::PrivateIp),
    ("http://127.1.2.3:8080/a.png", Want::PrivateIp),
    ("http://127.0.0.1./", Want::PrivateIp),
    ("http://10.0.0.5/", Want::PrivateIp),
    ("http://172.16.0.1/", Want::PrivateIp),
    ("http://172.31.255.255/", Want::PrivateIp),
    ("http://192.168.1.1/", Want::PrivateIp),
    ("http://169.254.169.254/latest/meta-data/", Want::PrivateIp),
    ("http://0.0.0.0/", Want::PrivateIp),
    ("http://100.64.0.1/", Want::PrivateIp),
    ("http://100.127.255.255/", Want::PrivateIp),
    ("http://224.0.0.1/", Want::PrivateIp),
    ("http://255.255.255.255/", Want::PrivateIp),
    ("http://198.18.0.1/", Want::PrivateIp),
    ("http://192.0.2.10/", Want::PrivateIp),
    // IPv6 literals.
    ("http://[::1]/", Want::PrivateIp),
    ("http://[::1]:8080/", Want::PrivateIp),
    ("http://[::]/", Want::PrivateIp),
    ("http://[fe80::1]/", Want::PrivateIp),
    ("http://[fc00::1]/", Want::PrivateIp),
    ("http://[fd12:3456::1]/", Want::PrivateIp),
    ("http://[fec0::1]/", Want::PrivateIp),
    ("http://[ff02::1]/", Want::PrivateIp),
    ("http://[2001:db8::1]/", Want::PrivateIp),
    ("http://[::ffff:127.0.0.1]/", Want::PrivateIp),
    ("http://[::ffff:7f00:1]/", Want::PrivateIp),
    ("http://[::ffff:169.254.169.254]/", Want::PrivateIp),
    ("http://[::ffff:10.0.0.1]/", Want::PrivateIp),
    ("http://[::127.0.0.1]/", Want::PrivateIp),
    ("http://[64:ff9b::7f00:1]/", Want::PrivateIp),
    ("http://[2002:7f00:1::]/", Want::PrivateIp),
    ("http://[2001::1]/", Want::PrivateIp),
    ("http://[fe80::1%25eth0]/", Want::Malformed),
    ("http://[::1/", Want::Malformed),
    ("http://[::1]x/", Want::Malformed),
    ("http://[not-an-ip]/", Want::Malformed),
    // Encoded IPv4 hosts that browsers read as addresses.
    ("http://2130706433/", Want::Ambiguous),
    ("http://0x7f000001/", Want::Ambiguous),
    ("http://0x7f.1/", Want::Ambiguous),
    ("http://0x7F.0.0.1/", Want::Ambiguous),
    ("http://0177.0.0.1/", Want::Ambiguous),
    ("http://017700000001/", Want::Ambiguous),
    ("http://127.1/", Want::Ambiguous),
    ("http://127.0.1/", Want::Ambiguous),
    ("http://010.0.0.1/", Want::Ambiguous),
    ("http://127.0.0.1.5/", Want::Ambiguous),
    ("http://256.1.1.1/", Want::Ambiguous),
    ("http://example.0x1/", Want::Ambiguous),
    ("http://example.123/", Want::Ambiguous),
    ("http://0x/", Want::Ambiguous),
    ("http://8.8.8.08/", Want::Ambiguous),
    // Names that are never public.
    ("http://localhost/", Want::PrivateName),
    ("http://LOCALHOST./a.png", Want::PrivateName),
    ("http://localhost:3000/", Want::PrivateName),
    ("http://foo.localhost/", Want::PrivateName),
    ("http://printer.local/", Want::PrivateName),
    (
        "http://metadata.google.internal/computeMetadata/v1/",
        Want::PrivateName,
    ),
    ("http://db.localdomain/", Want::PrivateName),
    ("http://router.home.arpa/", Want::PrivateName),
    ("http://nas.lan/", Want::PrivateName),
    ("http://intranet/", Want::PrivateName),
    ("http://metadata/", Want::PrivateName),
];

#[test]
fn url_table_for_images_and_videos() {
    assert!(URLS.len() >= 30);
    for (url, want) in URLS {
        assert_eq!(judge(check_image_url(url)), *want, "image {url:?}");
        assert_eq!(judge(check_video_url(url)), *want, "video {url:?}");
    }
}

#[test]
fn names_ending_like_special_names_are_still_public() {
    for url in [
        "https://mylocalhost.com/a.png",
        "https://local.example.com/a.png",
        "https://internal.example.com/a.png",
        "https://notlocal/a.png",
    ] {
        let want = if url.contains("notlocal") {
            Want::PrivateName
        } else {
            Want::Ok
        };
        assert_eq!(judge(check_image_url(url)), want, "{url}");
    }
}

#[test]
fn parsed_parts() {
    let url = parse_http_url("http://Example.COM./x").unwrap();
    assert_eq!(
        (url.https, url.host, url.port),
        (false, Host::Name("example.com".into()), 80)
    );
    let url = parse_http_url("https://[2606:4700::1111]:444/").unwrap();
    assert_eq!(url.port, 444);
    assert_eq!(url.host, Host::Ip("2606:4700::1111".parse().unwrap()));
    assert_eq!(parse_http_url("https://1.1.1.1").unwrap().port, 443);
    assert_eq!(
        parse_http_url("http://10.1.1.1/").unwrap_err(),
        UrlProblem::NotPublicIp(IpAddr::V4(Ipv4Addr::new(10, 1, 1, 1)))
    );
    assert_eq!(
        parse_http_url("file:///x").unwrap_err(),
        UrlProblem::Scheme("file".into())
    );
}

#[test]
fn problems_read_well() {
    assert_eq!(
        UrlProblem::NotPublicIp(IpAddr::V4(Ipv4Addr::LOCALHOST)).to_string(),
        "the address 127.0.0.1 is not a public address"
    );
    assert_eq!(
        UrlProblem::Scheme("ftp".into()).to_string(),
        "the scheme 'ftp' is not accepted; use http or https"
    );
}

// ---------------------------------------------------------------------------------------------
// Inline data
// ---------------------------------------------------------------------------------------------

#[test]
fn inline_images() {
    for ok in [
        "data:image/png;base64,iVBORw0KGgo=",
        "data:image/jpeg;base64,/9j/4AAQSkZJRg==",
        "data:image/webp;base64,UklGRg==",
        "data:image/gif;base64,R0lGODlh",
        "DATA:IMAGE/PNG;BASE64,AAAA",
        "data:image/png;base64,AAA",
        "data:image/png;base64,AA",
        "data:image/heic;base64,AA+/",
    ] {
        assert_eq!(check_image_url(ok), Ok(()), "{ok}");
    }
}

#[test]
fn inline_images_of_the_wrong_type() {
    for bad in [
        "data:text/plain;base64,AAAA",
        "data:image/svg+xml;base64,AAAA",
        "data:video/mp4;base64,AAAA",
        "data:audio/wav;base64,AAAA",
        "data:image/png,AAAA",
        "data:image/png;charset=utf-8;base64,AAAA",
        "data:;base64,AAAA",
        "data:image/;base64,AAAA",
        "data:image/png;base64",
        "data:,hello",
    ] {
        assert!(
            matches!(check_image_url(bad), Err(UrlProblem::DataType(_))),
            "{bad}: {:?}",
            check_image_url(bad)
        );
    }
}

#[test]
fn inline_images_with_bad_base64() {
    for bad in [
        "data:image/png;base64,",
        "data:image/png;base64,A",
        "data:image/png;base64,AAAAA",
        "data:image/png;base64,AAA*",
        "data:image/png;base64,AAAA=",
        "data:image/png;base64,AA==AA",
        "data:image/png;base64,A===",
        "data:image/png;base64,====",
        "data:image/png;base64,-_AA",
        "data:image/png;base64,AA AA",
        "data:image/png;base64,AA%3D",
        "data:image/png;base64,ÀÀÀÀ",
    ] {
        assert_eq!(check_image_url(bad), Err(UrlProblem::Base64), "{bad}");
    }
}

#[test]
fn inline_images_are_bounded() {
    let at_limit = format!(
        "data:image/png;base64,{}",
        "A".repeat(MAX_INLINE_IMAGE_BYTES)
    );
    assert_eq!(check_image_url(&at_limit), Ok(()));
    let over = format!(
        "data:image/png;base64,{}",
        "A".repeat(MAX_INLINE_IMAGE_BYTES + 4)
    );
    assert_eq!(
        check_image_url(&over),
        Err(UrlProblem::TooLarge {
            size: MAX_INLINE_IMAGE_BYTES + 4,
            max: MAX_INLINE_IMAGE_BYTES
        })
    );
}

#[test]
fn videos_are_urls_only_and_audio_may_be_inline() {
    assert_eq!(
        check_video_url("data:video/mp4;base64,AAAA"),
        Err(UrlProblem::DataNotAllowed)
    );
    assert_eq!(
        check_video_url("DATA:image/png;base64,AAAA"),
        Err(UrlProblem::DataNotAllowed)
    );
    assert_eq!(check_audio_url("data:audio/mpeg;base64,SUQz"), Ok(()));
    assert_eq!(check_audio_url("https://e.com/a.mp3"), Ok(()));
    assert!(matches!(
        check_audio_url("data:image/png;base64,AAAA"),
        Err(UrlProblem::DataType(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// is_public_ip
// ---------------------------------------------------------------------------------------------

#[test]
fn public_and_special_addresses() {
    let public = [
        "1.1.1.1",
        "8.8.8.8",
        "93.184.216.34",
        "172.15.255.255",
        "172.32.0.0",
        "100.63.255.255",
        "100.128.0.0",
        "169.253.255.255",
        "223.255.255.255",
        "2606:4700::1111",
        "2a00:1450:4001::200e",
        "::ffff:1.1.1.1",
        "64:ff9b::808:808",
    ];
    let special = [
        "0.0.0.0",
        "0.1.2.3",
        "10.255.255.255",
        "100.64.0.0",
        "127.255.255.255",
        "169.254.0.1",
        "172.16.0.0",
        "192.0.0.8",
        "192.0.2.1",
        "192.88.99.1",
        "192.168.255.255",
        "198.19.255.255",
        "198.51.100.7",
        "203.0.113.9",
        "224.0.0.251",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:192.168.0.1",
        "::10.0.0.1",
        "64:ff9b::a00:1",
        "64:ff9b:1::1",
        "100::1",
        "2001::1",
        "2001:db8::1",
        "2002:c0a8:101::1",
        "3fff::1",
        "fc00::1",
        "fdff:ffff::1",
        "fe80::1",
        "febf::1",
        "fec0::1",
        "ff02::1",
        "1::1",
        "4000::1",
    ];
    for ip in public {
        assert!(is_public_ip(ip.parse().unwrap()), "{ip} should be public");
    }
    for ip in special {
        assert!(
            !is_public_ip(ip.parse().unwrap()),
            "{ip} should not be public"
        );
    }
}

proptest! {
    #[test]
    fn url_checks_never_panic(url in "\\PC{0,80}") {
        let _ = check_image_url(&url);
        let _ = check_video_url(&url);
        let _ = check_audio_url(&url);
    }

    #[test]
    fn url_checks_never_panic_on_url_like_input(
        scheme in "(https?|HTTP|data|file|)",
        rest in "[:/@\\[\\]%.a-z0-9x]{0,40}",
    ) {
        let url = format!("{scheme}:{rest}");
        let _ = check_image_url(&url);
        let _ = check_video_url(&url);
    }

    #[test]
    fn dotted_quads_are_accepted_exactly_when_public(octets in any::<[u8; 4]>(), port in 1u16..) {
        let ip = Ipv4Addr::from(octets);
        let url = format!("http://{ip}:{port}/clip.mp4");
        let result = check_video_url(&url);
        if is_public_ip(IpAddr::V4(ip)) {
            prop_assert_eq!(result, Ok(()));
        } else {
            prop_assert_eq!(result, Err(UrlProblem::NotPublicIp(IpAddr::V4(ip))));
        }
    }

    #[test]
    fn loopback_and_private_v4_are_never_public(
        host in prop_oneof![
            (any::<[u8; 3]>()).prop_map(|[a, b, c]| Ipv4Addr::new(127, a, b, c)),
            (any::<[u8; 3]>()).prop_map(|[a, b, c]| Ipv4Addr::new(10, a, b, c)),
            (16u8..32, any::<[u8; 2]>()).prop_map(|(a, [b, c])| Ipv4Addr::new(172, a, b, c)),
            (any::<[u8; 2]>()).prop_map(|[b, c]| Ipv4Addr::new(192, 168, b, c)),
            (any::<[u8; 2]>()).prop_map(|[b, c]| Ipv4Addr::new(169, 254, b, c)),
        ],
    ) {
        prop_assert!(!is_public_ip(IpAddr::V4(host)));
        prop_assert!(!is_public_ip(IpAddr::V6(host.to_ipv6_mapped())));
        // The integer form of any address is refused as ambiguous.
        let url = format!("http://{}/", u32::from(host));
        prop_assert_eq!(check_image_url(&url), Err(UrlProblem::AmbiguousIp(u32::from(host).to_string())));
    }

    #[test]
    fn standard_base64_of_any_bytes_is_accepted(bytes in proptest::collection::vec(any::<u8>(), 1..300)) {
        let url = format!("data:image/png;base64,{}", encode_base64(&bytes));
        prop_assert_eq!(check_image_url(&url), Ok(()));
        let unpadded = url.trim_end_matches('=');
        prop_assert_eq!(check_image_url(unpadded), Ok(()));
    }
}

/// Standard base64 with padding (RFC 4648 §4), for the property above.
fn encode_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
