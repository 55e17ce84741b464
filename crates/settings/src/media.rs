//! Links to finished videos (DESIGN §5, docs/api.md §4 rule 7) and to drawn images.
//!
//! In `signed` mode a task record carries the gateway's own link,
//! `{base}/v1/media/{task_id}.mp4?expires={unix}&signature={hex}`, signed with HMAC-SHA256 under a
//! key every replica shares (kept in the database), valid for `link_ttl_seconds` after the task
//! finished. The link streams the upstream's file through the gateway, so it works for remote
//! clients even when the upstream is on a private network. In `direct` mode the record carries
//! the upstream's URL as it is.
//!
//! A drawn image answered by link (`response_format: "url"`) is always the gateway's own:
//! `{base}/v1/media/images/{id}.{ext}?expires={unix}&digest={hex}&signature={hex}`, signed over
//! `images/{id}/{digest}` (so a video's signature never opens an image, and the bytes served are
//! the bytes linked), valid `image_ttl_seconds` (docs/decisions.md, "Images by the picture").

use crate::config::{MediaConfig, MediaMode};
use hmac::{Hmac, Mac};
use http::HeaderMap;
use sha2::Sha256;

/// The `settings` row that holds the signing key.
pub const SIGNING_KEY_SETTING: &str = "media_link_key";

/// The path prefix of signed links.
pub const MEDIA_PATH: &str = "/v1/media/";

/// The path prefix of drawn images' signed links.
pub const IMAGES_PATH: &str = "/v1/media/images/";

/// What an image's link signs: its id under its own name space, and its bytes' digest.
fn image_subject(id: &str, digest: &str) -> String {
    format!("images/{id}/{digest}")
}

/// Makes and checks links.
#[derive(Clone)]
pub struct MediaLinks {
    mode: MediaMode,
    ttl_seconds: i64,
    image_ttl_seconds: i64,
    public_base_url: Option<String>,
    key: Vec<u8>,
}

impl std::fmt::Debug for MediaLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaLinks")
            .field("mode", &self.mode)
            .field("ttl_seconds", &self.ttl_seconds)
            .field("public_base_url", &self.public_base_url)
            .finish_non_exhaustive()
    }
}

/// Why a link was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkError {
    /// The signature does not match (altered or forged).
    BadSignature,
    /// Past its expiry.
    Expired,
}

impl MediaLinks {
    /// Links per `config`, signed with `key`.
    pub fn new(config: &MediaConfig, key: &[u8]) -> MediaLinks {
        MediaLinks {
            mode: config.mode,
            ttl_seconds: i64::try_from(config.link_ttl_seconds).unwrap_or(i64::MAX),
            image_ttl_seconds: i64::try_from(config.image_ttl_seconds).unwrap_or(i64::MAX),
            public_base_url: config
                .public_base_url
                .as_ref()
                .map(|u| u.trim_end_matches('/').to_owned()),
            key: key.to_vec(),
        }
    }

    /// Links per `config`, signed with the key every replica shares (made by the first one to
    /// start, kept in the database).
    pub async fn load(
        config: &MediaConfig,
        store: &tollgate_store::Store,
    ) -> Result<MediaLinks, tollgate_store::StoreError> {
        let secret = store.shared_secret(SIGNING_KEY_SETTING).await?;
        Ok(MediaLinks::new(config, secret.as_bytes()))
    }

    /// The link a record hands out for the video of task `id`, finished at `finished_at` (Unix
    /// seconds), whose upstream file is at `upstream_url`, to a request that came by `origin`;
    /// and when it expires (signed mode). A file with no public link (`upstream_url` empty: an
    /// `openai-videos` channel's, fetched with the channel's key) is linked signed in either
    /// mode: the client could not fetch it from the vendor.
    pub fn link(
        &self,
        origin: &Origin,
        id: &str,
        finished_at: i64,
        upstream_url: &str,
    ) -> (String, Option<i64>) {
        match self.mode {
            MediaMode::Direct if !upstream_url.is_empty() => (upstream_url.to_owned(), None),
            MediaMode::Direct | MediaMode::Signed => {
                let expires = finished_at.saturating_add(self.ttl_seconds);
                let signature = self.signature(id, expires);
                let base = self.base_url(origin);
                (
                    format!("{base}{MEDIA_PATH}{id}.mp4?expires={expires}&signature={signature}"),
                    Some(expires),
                )
            }
        }
    }

    /// When an image kept at `now` (Unix seconds) lapses: its link's expiry.
    pub const fn image_expiry(&self, now: i64) -> i64 {
        now.saturating_add(self.image_ttl_seconds)
    }

    /// The link to kept image `id` (a file of type `ext`: `png`) whose bytes have `digest`,
    /// expiring at `expires`, for a request that came by `origin`.
    pub fn image_link(
        &self,
        origin: &Origin,
        (id, ext): (&str, &str),
        digest: &str,
        expires: i64,
    ) -> String {
        let signature = self.signature(&image_subject(id, digest), expires);
        let base = self.base_url(origin);
        format!(
            "{base}{IMAGES_PATH}{id}.{ext}?expires={expires}&digest={digest}&signature={signature}"
        )
    }

    /// Checks a presented image link's parts at `now` (Unix seconds).
    pub fn verify_image(
        &self,
        (id, digest): (&str, &str),
        expires: i64,
        signature: &str,
        now: i64,
    ) -> Result<(), LinkError> {
        self.verify(&image_subject(id, digest), expires, signature, now)
    }

    /// Checks a presented link's parts at `now` (Unix seconds).
    pub fn verify(
        &self,
        id: &str,
        expires: i64,
        signature: &str,
        now: i64,
    ) -> Result<(), LinkError> {
        let presented = hex::decode(signature).map_err(|_| LinkError::BadSignature)?;
        if presented.len() != SIGNATURE_BYTES {
            return Err(LinkError::BadSignature);
        }
        // Constant-time comparison of the truncated tag.
        self.mac(id, expires)
            .ok_or(LinkError::BadSignature)?
            .verify_truncated_left(&presented)
            .map_err(|_| LinkError::BadSignature)?;
        if now > expires {
            return Err(LinkError::Expired);
        }
        Ok(())
    }

    fn signature(&self, id: &str, expires: i64) -> String {
        match self.mac(id, expires) {
            Some(mac) => hex::encode(&mac.finalize().into_bytes()[..SIGNATURE_BYTES]),
            None => String::new(),
        }
    }

    /// HMAC takes keys of any length, so this is always `Some`.
    fn mac(&self, id: &str, expires: i64) -> Option<Hmac<Sha256>> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).ok()?;
        mac.update(id.as_bytes());
        mac.update(b"\n");
        mac.update(expires.to_string().as_bytes());
        Some(mac)
    }

    /// `public_base_url`, or where the request says it was addressed to.
    fn base_url(&self, origin: &Origin) -> String {
        if let Some(base) = &self.public_base_url {
            return base.clone();
        }
        format!("{}://{}", origin.scheme, origin.host)
    }

    /// Whether links are built from each request's `Host` (no `public_base_url`): what `serve`
    /// warns about when it listens beyond loopback.
    pub fn follows_the_host_header(&self) -> bool {
        self.mode == MediaMode::Signed && self.public_base_url.is_none()
    }
}

/// Where a request says it was addressed to, for the links handed back to it: its `Host`, and
/// — only from a proxy in `[server] trusted_proxies` — the scheme and host the client used
/// (`X-Forwarded-Proto`, `X-Forwarded-Host`). Anyone else's forwarded headers are ignored, and
/// a host that is not a host name or address (with a port) is `localhost`: a link never
/// carries a path, a user or markup a client slipped into a header (`docs/decisions.md`,
/// "Video tasks").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    scheme: &'static str,
    host: String,
}

impl Origin {
    /// `scheme://host`.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.host)
    }

    /// Whether the client reached the gateway over TLS (its own listener, or as a trusted
    /// proxy says).
    pub fn is_https(&self) -> bool {
        self.scheme == "https"
    }

    /// The same origin reached over the gateway's own TLS listener: `https`.
    pub fn over_tls(self) -> Origin {
        Origin {
            scheme: "https",
            ..self
        }
    }

    /// The origin of a request with `headers`, from a peer that is a trusted proxy or not.
    pub fn of(headers: &HeaderMap, from_trusted_proxy: bool) -> Origin {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|h| h.to_str().ok())
                .map(|v| v.split(',').next().unwrap_or_default().trim())
                .filter(|v| !v.is_empty())
        };
        let forwarded = |name: &str| header(name).filter(|_| from_trusted_proxy);
        let host = forwarded("x-forwarded-host")
            .or_else(|| header(http::header::HOST.as_str()))
            .filter(|h| is_host(h))
            .unwrap_or("localhost");
        let scheme = match forwarded("x-forwarded-proto") {
            Some(p) if p.eq_ignore_ascii_case("https") => "https",
            _ => "http",
        };
        Origin {
            scheme,
            host: host.to_ascii_lowercase(),
        }
    }
}

/// `name[:port]` or `[v6]:port`: letters, digits, dots, hyphens and a port; nothing else.
fn is_host(host: &str) -> bool {
    if host.len() > 255 {
        return false;
    }
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((v6, after)) if v6.parse::<std::net::Ipv6Addr>().is_ok() => ("x", after),
            _ => return false,
        },
        None => match host.rsplit_once(':') {
            Some((name, _)) => (name, &host[name.len()..]),
            None => (host, ""),
        },
    };
    let port_ok = match port.strip_prefix(':') {
        Some(digits) => !digits.is_empty() && digits.parse::<u16>().is_ok(),
        None => port.is_empty(),
    };
    port_ok
        && !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
}

/// 128 bits of the tag are enough for a link and keep it short.
const SIGNATURE_BYTES: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    fn links(mode: MediaMode) -> MediaLinks {
        let config = MediaConfig {
            mode,
            link_ttl_seconds: 100,
            image_ttl_seconds: 60,
            public_base_url: Some("https://gw.example/".into()),
        };
        MediaLinks::new(&config, b"0123456789abcdef0123456789abcdef")
    }

    fn parts(link: &str) -> (String, i64, String) {
        let rest = link.strip_prefix("https://gw.example/v1/media/").unwrap();
        let (file, query) = rest.split_once('?').unwrap();
        let id = file.strip_suffix(".mp4").unwrap().to_owned();
        let mut expires = 0;
        let mut signature = String::new();
        for pair in query.split('&') {
            match pair.split_once('=').unwrap() {
                ("expires", v) => expires = v.parse().unwrap(),
                ("signature", v) => signature = v.to_owned(),
                _ => {}
            }
        }
        (id, expires, signature)
    }

    fn origin() -> Origin {
        Origin::of(&HeaderMap::new(), false)
    }

    /// Issue 22 item 8: forwarded headers only from a trusted proxy, and a host that is a host.
    #[test]
    fn links_follow_only_what_may_be_believed() {
        let headers = |pairs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(
                    http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            h
        };
        let plain = MediaLinks::new(&MediaConfig::default(), b"k");
        let base = |h: &HeaderMap, trusted| plain.base_url(&Origin::of(h, trusted));
        let forwarded = headers(&[
            ("host", "gw.internal:8080"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "api.example.com"),
        ]);
        assert_eq!(base(&forwarded, true), "https://api.example.com");
        assert_eq!(base(&forwarded, false), "http://gw.internal:8080");
        for bad in [
            "evil.example/x?",
            "user@evil.example",
            "<script>",
            "a b",
            "host:99999",
            "",
        ] {
            assert_eq!(
                base(&headers(&[("host", bad)]), false),
                "http://localhost",
                "{bad:?}"
            );
        }
        assert_eq!(
            base(&headers(&[("host", "[::1]:8080")]), false),
            "http://[::1]:8080"
        );
        assert_eq!(
            base(&headers(&[("host", "127.0.0.1:8080")]), false),
            "http://127.0.0.1:8080"
        );
    }

    #[test]
    fn an_image_link_is_its_own() {
        let l = links(MediaMode::Direct);
        let expires = l.image_expiry(1_000);
        assert_eq!(expires, 1_060);
        let link = l.image_link(&origin(), ("img_1", "png"), "d1", expires);
        let (file, query) = link
            .strip_prefix("https://gw.example/v1/media/images/")
            .unwrap()
            .split_once('?')
            .unwrap();
        assert_eq!(file, "img_1.png");
        assert!(query.contains("digest=d1&"), "{query}");
        let signature = query.split_once("signature=").unwrap().1;
        let one = ("img_1", "d1");
        assert_eq!(l.verify_image(one, expires, signature, 1_060), Ok(()));
        assert_eq!(
            l.verify_image(one, expires, signature, 1_061),
            Err(LinkError::Expired)
        );
        for other in [("img_2", "d1"), ("img_1", "d2")] {
            assert_eq!(
                l.verify_image(other, expires, signature, 1_000),
                Err(LinkError::BadSignature)
            );
        }
        // A video's signature for the same id opens no image, nor the other way round.
        assert_eq!(
            l.verify("img_1", expires, signature, 1_000),
            Err(LinkError::BadSignature)
        );
    }

    #[test]
    fn a_signed_link_verifies_until_it_expires() {
        let l = links(MediaMode::Signed);
        let (link, expires) = l.link(&origin(), "cgt-1-abc", 1_000, "http://up/v.mp4");
        assert_eq!(expires, Some(1_100));
        let (id, exp, sig) = parts(&link);
        assert_eq!((id.as_str(), exp), ("cgt-1-abc", 1_100));
        assert_eq!(l.verify(&id, exp, &sig, 1_050), Ok(()));
        assert_eq!(l.verify(&id, exp, &sig, 1_101), Err(LinkError::Expired));
    }

    #[test]
    fn altered_links_are_refused() {
        let l = links(MediaMode::Signed);
        let (link, _) = l.link(&origin(), "cgt-1-abc", 1_000, "http://up/v.mp4");
        let (id, exp, sig) = parts(&link);
        assert_eq!(
            l.verify("cgt-1-abd", exp, &sig, 0),
            Err(LinkError::BadSignature)
        );
        assert_eq!(
            l.verify(&id, exp + 1, &sig, 0),
            Err(LinkError::BadSignature)
        );
        assert_eq!(
            l.verify(&id, exp, &sig[..8], 0),
            Err(LinkError::BadSignature)
        );
        assert_eq!(l.verify(&id, exp, "zz", 0), Err(LinkError::BadSignature));
        assert_eq!(l.verify(&id, exp, "", 0), Err(LinkError::BadSignature));
        let other = MediaLinks::new(&MediaConfig::default(), b"another key, another gateway....");
        assert_eq!(
            other.verify(&id, exp, &sig, 0),
            Err(LinkError::BadSignature)
        );
    }

    #[test]
    fn direct_mode_hands_out_the_upstream_url() {
        let l = links(MediaMode::Direct);
        assert_eq!(
            l.link(&origin(), "x", 0, "http://up/v.mp4"),
            ("http://up/v.mp4".to_owned(), None)
        );
    }
}
