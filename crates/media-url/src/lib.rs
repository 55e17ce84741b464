//! # tollgate-media-url
//!
//! Media URL checks (docs/api.md §2.7 content rule 4: image and video URLs must be publicly
//! accessible), and the address rule of tollgate's guard against server-side request forgery
//! ([`is_public_ip`]; the guard itself — checking the addresses a connection is about to use —
//! is `tollgate_upstream::common::resolve`). Sans-IO: the format crates check a request's URLs with it,
//! the gateway and the simulator read hosts with it, the guard asks it about each address.
//!
//! The gateway may itself fetch a reference video (a bounded range read of its length), and the
//! upstream fetches every URL, so a URL must name a public host unambiguously. The URL is parsed
//! by hand, strictly:
//!
//! - the scheme is `http` or `https` (any case), followed by `//`; anything else (`file:`,
//!   `ftp:`, `gopher:`, `javascript:`, `http:/x`, ...) is refused;
//! - no whitespace, control characters or backslashes anywhere (parsers disagree about them);
//! - no userinfo (`http://user@127.0.0.1/`);
//! - the host is ASCII (a non-ASCII name must be given in its `xn--` form, because IDNA mapping
//!   turns full-width digits into an IP address), without percent-escapes; the port, if any, is
//!   a number from 1 to 65535;
//! - an IPv6 literal in brackets must be a public address ([`is_public_ip`]); zone ids are
//!   refused;
//! - a host whose last label is a number (decimal, or `0x` hex; the WHATWG "ends in a number"
//!   rule) is an IPv4 address. Only the canonical dotted-quad (`93.184.216.34`) is accepted, and
//!   only when public; the other forms browsers accept (`2130706433`, `0x7f.1`, `0177.0.0.1`,
//!   `127.1`) are refused, because parsers read them differently (`010.0.0.1` is 8.0.0.1 to a
//!   browser and 10.0.0.1 to others);
//! - a name must have at least two labels (a single label resolves through search domains to
//!   internal hosts: `http://metadata/`), and must not be `localhost` or end in `.localhost`,
//!   `.local`, `.localdomain`, `.internal`, `.home.arpa` or `.lan`. Whether a name *resolves* to
//!   a public address is for the gateway to check when it connects ([`is_public_ip`]).
//!
//! Images may also be inline: `data:image/<type>;base64,<payload>` with a type from
//! [`INLINE_IMAGE_TYPES`], the standard base64 alphabet, and at most
//! [`MAX_INLINE_IMAGE_BYTES`] characters of payload. Videos are URLs only (wire-formats §5.1).
//! Audio (wire-formats §5.1, not in docs/api.md §2.7) is treated like images, with `data:audio/...`.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The largest inline image accepted, counted in characters of the base64 payload of a
/// `data:image/...;base64,` URL: 10 MiB, about 7.5 MiB of image.
///
/// docs/api.md §2.7 allows inline images without a size; this bound keeps one image well inside the
/// 16 MiB body limit of the clip-task endpoint (docs/decisions.md), which bounds all of them
/// together.
pub const MAX_INLINE_IMAGE_BYTES: usize = 10 * 1024 * 1024;

/// The image types accepted inline (`data:image/<type>;base64,`), lower case.
pub const INLINE_IMAGE_TYPES: [&str; 10] = [
    "jpeg", "jpg", "png", "webp", "bmp", "tiff", "tif", "gif", "heic", "heif",
];

/// The audio types accepted inline (`data:audio/<type>;base64,`), lower case.
pub const INLINE_AUDIO_TYPES: [&str; 7] = ["mpeg", "mp3", "wav", "x-wav", "aac", "mp4", "ogg"];

/// Names (and their subdomains) that never name a public host.
pub const NON_PUBLIC_SUFFIXES: [&str; 6] = [
    "localhost",
    "local",
    "localdomain",
    "internal",
    "home.arpa",
    "lan",
];

/// Why a media URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    /// The URL is empty.
    #[error("the URL is empty")]
    Empty,
    /// A scheme other than `http` and `https` (or `data:` where it is allowed).
    #[error("the scheme '{0}' is not accepted; use http or https")]
    Scheme(String),
    /// The URL cannot be read unambiguously.
    #[error("the URL is malformed: {0}")]
    Malformed(&'static str),
    /// The URL has userinfo (`user:pass@`).
    #[error("the URL must not contain user information ('@' before the host)")]
    Userinfo,
    /// A numeric host that is not a canonical dotted-quad IPv4 address.
    #[error("the host '{0}' is a numeric address that is not a dotted-quad IPv4 address")]
    AmbiguousIp(String),
    /// An IP address that is not public.
    #[error("the address {0} is not a public address")]
    NotPublicIp(IpAddr),
    /// A name that is not public.
    #[error("the host '{0}' is not a public name")]
    NotPublicName(String),
    /// An inline `data:` URL that is not of an accepted media type.
    #[error("inline data must be {0}")]
    DataType(&'static str),
    /// An inline `data:` URL whose payload is not valid base64.
    #[error("the inline data is not valid base64")]
    Base64,
    /// An inline `data:` URL whose payload is too large.
    #[error("the inline data has {size} characters of base64, more than the {max} allowed")]
    TooLarge {
        /// The payload's length in characters.
        size: usize,
        /// The most allowed.
        max: usize,
    },
    /// A `data:` URL where only a URL is accepted (videos).
    #[error("inline data is not accepted here; give a public http(s) URL")]
    DataNotAllowed,
}

/// The host of an accepted `http(s)` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A public IP literal.
    Ip(IpAddr),
    /// A name, lower case, without a trailing dot; resolve it and check with [`is_public_ip`].
    Name(String),
}

/// The parts of an accepted `http(s)` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// `true` for `https`.
    pub https: bool,
    /// The host.
    pub host: Host,
    /// The port, explicit or the scheme's default (80, 443).
    pub port: u16,
}

/// Checks an image URL: a public `http(s)` URL, or inline `data:image/<type>;base64,<payload>`
/// of at most [`MAX_INLINE_IMAGE_BYTES`] payload characters.
///
/// ```
/// use tollgate_media_url::{check_image_url, UrlProblem};
///
/// assert_eq!(check_image_url("https://cdn.example.com/cat.png"), Ok(()));
/// assert_eq!(check_image_url("data:image/png;base64,iVBORw0KGgo="), Ok(()));
/// assert!(matches!(check_image_url("http://127.0.0.1/x.png"), Err(UrlProblem::NotPublicIp(_))));
/// assert!(matches!(check_image_url("http://2130706433/"), Err(UrlProblem::AmbiguousIp(_))));
/// assert!(matches!(check_image_url("file:///etc/passwd"), Err(UrlProblem::Scheme(_))));
/// ```
pub fn check_image_url(url: &str) -> Result<(), UrlProblem> {
    check_with_data(
        url,
        "image",
        &INLINE_IMAGE_TYPES,
        "data:image/<type>;base64,<data>",
    )
}

/// Checks a video URL: a public `http(s)` URL, not empty; no inline data (wire-formats §5.1).
///
/// ```
/// use tollgate_media_url::{check_video_url, UrlProblem};
///
/// assert_eq!(check_video_url("https://cdn.example.com/ref.mp4"), Ok(()));
/// assert_eq!(check_video_url(""), Err(UrlProblem::Empty));
/// assert_eq!(check_video_url("data:video/mp4;base64,AAAA"), Err(UrlProblem::DataNotAllowed));
/// ```
pub fn check_video_url(url: &str) -> Result<(), UrlProblem> {
    if url.is_empty() {
        return Err(UrlProblem::Empty);
    }
    if scheme_of(url).is_some_and(|scheme| scheme.eq_ignore_ascii_case("data")) {
        return Err(UrlProblem::DataNotAllowed);
    }
    parse_http_url(url).map(|_| ())
}

/// Checks an audio URL: a public `http(s)` URL, or inline `data:audio/<type>;base64,<payload>`
/// bounded like an image.
pub fn check_audio_url(url: &str) -> Result<(), UrlProblem> {
    check_with_data(
        url,
        "audio",
        &INLINE_AUDIO_TYPES,
        "data:audio/<type>;base64,<data>",
    )
}

fn check_with_data(
    url: &str,
    top: &str,
    types: &[&str],
    shape: &'static str,
) -> Result<(), UrlProblem> {
    if url.is_empty() {
        return Err(UrlProblem::Empty);
    }
    if scheme_of(url).is_some_and(|scheme| scheme.eq_ignore_ascii_case("data")) {
        return check_data_url(url, top, types, shape);
    }
    parse_http_url(url).map(|_| ())
}

/// The text before the first `:`, when it looks like a scheme.
fn scheme_of(url: &str) -> Option<&str> {
    let (scheme, _) = url.split_once(':')?;
    let mut bytes = scheme.bytes();
    let first = bytes.next()?;
    (first.is_ascii_alphabetic()
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))
    .then_some(scheme)
}

fn check_data_url(
    url: &str,
    top: &str,
    types: &[&str],
    shape: &'static str,
) -> Result<(), UrlProblem> {
    // "data:" is five bytes of ASCII (checked by the caller), so slicing there is on a boundary.
    let rest = url.get(5..).unwrap_or_default();
    let (header, payload) = rest.split_once(',').ok_or(UrlProblem::DataType(shape))?;
    let header = header.to_ascii_lowercase();
    let mime = header
        .strip_suffix(";base64")
        .ok_or(UrlProblem::DataType(shape))?;
    let (mime_top, subtype) = mime.split_once('/').ok_or(UrlProblem::DataType(shape))?;
    if mime_top != top || !types.contains(&subtype) {
        return Err(UrlProblem::DataType(shape));
    }
    if payload.len() > MAX_INLINE_IMAGE_BYTES {
        return Err(UrlProblem::TooLarge {
            size: payload.len(),
            max: MAX_INLINE_IMAGE_BYTES,
        });
    }
    if is_base64(payload) {
        Ok(())
    } else {
        Err(UrlProblem::Base64)
    }
}

/// Standard base64 (RFC 4648 §4): non-empty, the `A–Z a–z 0–9 + /` alphabet, at most two `=`
/// at the end; with padding the length is a multiple of 4, without it the length is not 1
/// modulo 4.
fn is_base64(payload: &str) -> bool {
    let bytes = payload.as_bytes();
    let body_len = bytes.len() - bytes.iter().rev().take_while(|&&b| b == b'=').count();
    let padding = bytes.len() - body_len;
    if body_len == 0 || padding > 2 {
        return false;
    }
    let alphabet_ok = bytes[..body_len]
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    let length_ok = if padding > 0 {
        bytes.len().is_multiple_of(4)
    } else {
        body_len % 4 != 1
    };
    alphabet_ok && length_ok
}

/// The host of an `http(s)` URL as written, lower case, without port or brackets — for
/// comparing with a list of hosts, not for deciding whether it is public (see
/// [`parse_http_url`]).
///
/// ```
/// use tollgate_media_url::url_host;
///
/// assert_eq!(url_host("http://CDN.internal:9000/a.mp4").as_deref(), Some("cdn.internal"));
/// assert_eq!(url_host("https://[::1]:8443/x").as_deref(), Some("::1"));
/// assert_eq!(url_host("data:image/png;base64,AAAA"), None);
/// ```
pub fn url_host(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split_once(']')?.0
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Parses an `http(s)` URL by the rules of the module documentation and returns its parts when
/// its host is public (a public IP literal, or a name that may be public).
///
/// ```
/// use std::net::{IpAddr, Ipv4Addr};
/// use tollgate_media_url::{parse_http_url, Host, UrlProblem};
///
/// let url = parse_http_url("HTTPS://Media.Example.com:8443/a.mp4?sig=1")?;
/// assert_eq!((url.https, url.port), (true, 8443));
/// assert_eq!(url.host, Host::Name("media.example.com".into()));
///
/// let ip = parse_http_url("http://93.184.216.34/v.mp4")?;
/// assert_eq!(ip.host, Host::Ip(IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34))));
///
/// assert_eq!(parse_http_url("http://user@example.com/"), Err(UrlProblem::Userinfo));
/// # Ok::<(), UrlProblem>(())
/// ```
pub fn parse_http_url(url: &str) -> Result<HttpUrl, UrlProblem> {
    if url.is_empty() {
        return Err(UrlProblem::Empty);
    }
    if url
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
    {
        return Err(UrlProblem::Malformed(
            "whitespace, control characters and backslashes are not allowed",
        ));
    }
    let Some(scheme) = scheme_of(url) else {
        return Err(UrlProblem::Malformed("not an absolute URL"));
    };
    let https = if scheme.eq_ignore_ascii_case("https") {
        true
    } else if scheme.eq_ignore_ascii_case("http") {
        false
    } else {
        return Err(UrlProblem::Scheme(scheme.to_ascii_lowercase()));
    };
    // The scheme is ASCII, so the byte after it is the ':'.
    let after_scheme = url.get(scheme.len() + 1..).unwrap_or_default();
    let Some(rest) = after_scheme.strip_prefix("//") else {
        return Err(UrlProblem::Malformed("'//' must follow the scheme"));
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    if authority.contains('@') {
        return Err(UrlProblem::Userinfo);
    }
    let (host_text, port_text) = split_host_port(authority)?;
    let default_port = if https { 443 } else { 80 };
    let port = match port_text {
        None | Some("") => default_port,
        Some(text) => parse_port(text)?,
    };
    let host = check_host(host_text)?;
    Ok(HttpUrl { https, host, port })
}

fn split_host_port(authority: &str) -> Result<(&str, Option<&str>), UrlProblem> {
    if let Some(bracketed) = authority.strip_prefix('[') {
        let (inside, after) = bracketed
            .split_once(']')
            .ok_or(UrlProblem::Malformed("unclosed '[' in the host"))?;
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or(UrlProblem::Malformed("unexpected text after ']'"))?,
            ),
        };
        // Keep the brackets so that check_host knows it is an IPv6 literal.
        let literal = &authority[..inside.len() + 2];
        return Ok((literal, port));
    }
    Ok(match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    })
}

fn parse_port(text: &str) -> Result<u16, UrlProblem> {
    if text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UrlProblem::Malformed(
            "the port is not a number from 1 to 65535",
        ));
    }
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(UrlProblem::Malformed(
            "the port is not a number from 1 to 65535",
        )),
    }
}

fn check_host(host: &str) -> Result<Host, UrlProblem> {
    if host.is_empty() {
        return Err(UrlProblem::Malformed("the URL has no host"));
    }
    if let Some(literal) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        if literal.contains('%') {
            return Err(UrlProblem::Malformed("IPv6 zone ids are not allowed"));
        }
        let ip: Ipv6Addr = literal
            .parse()
            .map_err(|_| UrlProblem::Malformed("the IPv6 address in brackets is not valid"))?;
        return public_ip(IpAddr::V6(ip));
    }
    if !host.is_ascii() {
        return Err(UrlProblem::Malformed(
            "the host must be ASCII; give an international name in its xn-- form",
        ));
    }
    if host.contains('%') {
        return Err(UrlProblem::Malformed(
            "percent-escapes are not allowed in the host",
        ));
    }
    let lower = host.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    let labels: Vec<&str> = name.split('.').collect();
    if labels.iter().any(|label| label.is_empty()) {
        return Err(UrlProblem::Malformed("the host has an empty label"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    {
        return Err(UrlProblem::Malformed(
            "the host has characters a host name cannot have",
        ));
    }
    if labels.last().is_some_and(|last| is_ipv4_number(last)) {
        // The WHATWG URL parser reads this host as an IPv4 address; accept only the canonical
        // dotted-quad form.
        return match parse_dotted_quad(&labels) {
            Some(ip) => public_ip(IpAddr::V4(ip)),
            None => Err(UrlProblem::AmbiguousIp(host.to_owned())),
        };
    }
    if labels.len() < 2 {
        return Err(UrlProblem::NotPublicName(name.to_owned()));
    }
    if NON_PUBLIC_SUFFIXES.iter().any(|suffix| {
        name == *suffix
            || name
                .strip_suffix(suffix)
                .is_some_and(|head| head.ends_with('.'))
    }) {
        return Err(UrlProblem::NotPublicName(name.to_owned()));
    }
    Ok(Host::Name(name.to_owned()))
}

/// The WHATWG "ends in a number" test for the last label: all decimal digits, or `0x`/`0X`
/// followed by hex digits (possibly none).
fn is_ipv4_number(label: &str) -> bool {
    if let Some(hex) = label
        .strip_prefix("0x")
        .or_else(|| label.strip_prefix("0X"))
    {
        return hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    !label.is_empty() && label.bytes().all(|b| b.is_ascii_digit())
}

/// Four decimal parts from 0 to 255 without leading zeros.
fn parse_dotted_quad(labels: &[&str]) -> Option<Ipv4Addr> {
    if labels.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (octet, label) in octets.iter_mut().zip(labels) {
        let canonical = !label.is_empty()
            && label.len() <= 3
            && label.bytes().all(|b| b.is_ascii_digit())
            && (label.len() == 1 || !label.starts_with('0'));
        if !canonical {
            return None;
        }
        *octet = label.parse().ok()?;
    }
    Some(Ipv4Addr::from(octets))
}

fn public_ip(ip: IpAddr) -> Result<Host, UrlProblem> {
    if is_public_ip(ip) {
        Ok(Host::Ip(ip))
    } else {
        Err(UrlProblem::NotPublicIp(ip))
    }
}

/// Whether an address is public: globally routable unicast, not a special-purpose address.
///
/// Refused IPv4: `0.0.0.0/8` (this network, unspecified), `10/8`, `100.64/10` (CGNAT),
/// `127/8` (loopback), `169.254/16` (link-local), `172.16/12`, `192.0.0/24` (protocol
/// assignments), `192.0.2/24`, `198.51.100/24`, `203.0.113/24` (documentation), `192.88.99/24`
/// (6to4 relay), `192.168/16`, `198.18/15` (benchmarking), `224/4` (multicast), `240/4`
/// (reserved, broadcast).
///
/// IPv6 is public only within `2000::/3` (global unicast), except `2001::/23` (protocol
/// assignments, Teredo), `2001:db8::/32` and `3fff::/20` (documentation) and `2002::/16` (6to4,
/// which embeds an IPv4 address). IPv4-mapped (`::ffff:a.b.c.d`) and NAT64 (`64:ff9b::/96`)
/// addresses are public when the IPv4 address they carry is. Everything else is refused: `::`,
/// `::1`, IPv4-compatible `::a.b.c.d`, `fc00::/7` (unique local), `fe80::/10` (link-local),
/// `fec0::/10` (site-local), `ff00::/8` (multicast), `100::/64` (discard), ...
///
/// The gateway calls this on every address a name resolves to before connecting.
///
/// ```
/// use tollgate_media_url::is_public_ip;
///
/// assert!(is_public_ip("93.184.216.34".parse().unwrap()));
/// assert!(is_public_ip("2606:2800:220:1:248:1893:25c8:1946".parse().unwrap()));
/// assert!(!is_public_ip("10.1.2.3".parse().unwrap()));
/// assert!(!is_public_ip("::ffff:127.0.0.1".parse().unwrap()));
/// assert!(!is_public_ip("fe80::1".parse().unwrap()));
/// ```
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_ipv4(v4),
        IpAddr::V6(v6) => is_public_ipv6(v6),
    }
}

fn is_public_ipv4(ip: Ipv4Addr) -> bool {
    const REFUSED: [([u8; 4], u8); 15] = [
        ([0, 0, 0, 0], 8),
        ([10, 0, 0, 0], 8),
        ([100, 64, 0, 0], 10),
        ([127, 0, 0, 0], 8),
        ([169, 254, 0, 0], 16),
        ([172, 16, 0, 0], 12),
        ([192, 0, 0, 0], 24),
        ([192, 0, 2, 0], 24),
        ([192, 88, 99, 0], 24),
        ([192, 168, 0, 0], 16),
        ([198, 18, 0, 0], 15),
        ([198, 51, 100, 0], 24),
        ([203, 0, 113, 0], 24),
        ([224, 0, 0, 0], 4),
        ([240, 0, 0, 0], 4),
    ];
    let bits = u32::from(ip);
    !REFUSED.iter().any(|(net, len)| {
        let mask = u32::MAX << (32 - u32::from(*len));
        bits & mask == u32::from_be_bytes(*net) & mask
    })
}

fn is_public_ipv6(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    let in_net = |net: u128, len: u32| {
        let mask = u128::MAX << (128 - len);
        bits & mask == net & mask
    };
    let embedded_v4 = || Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if in_net(0xffff_0000_0000, 96) || in_net(0x0064_ff9b << 96, 96) {
        // IPv4-mapped ::ffff:0:0/96 and NAT64 64:ff9b::/96.
        return is_public_ipv4(embedded_v4());
    }
    in_net(0x2000 << 112, 3)
        && !in_net(0x2001 << 112, 23)
        && !in_net(0x2001_0db8 << 96, 32)
        && !in_net(0x2002 << 112, 16)
        && !in_net(0x3fff << 112, 20)
}
