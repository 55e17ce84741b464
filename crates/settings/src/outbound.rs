//! The one address rule for every URL the gateway fetches from or posts to that its operator did
//! not configure as a channel (`docs/decisions.md`, "One address rule"): a client's media (a
//! reference video's length), a vendor's record (a finished video's link), an alert's webhook.
//! Each of them is written by someone the gateway does not trust with its network — the lying
//! client, the compromised vendor, the admin-token holder who adds an alert rule — so each may
//! name only a public host: the URL is read strictly (`tollgate_media_url::parse_http_url`: no
//! private or encoded IP literal, no single-label or `.internal` name), and the connection is
//! made by a client whose resolver keeps only public addresses at connect time, so a name that
//! answered a public address at the check and a private one at the fetch is refused too
//! (`tollgate_upstream::common::resolve`).
//!
//! The exception is explicit: `[outbound] trusted_hosts` (with the older `[tasks]
//! trusted_media_hosts`) names internal receivers — an internal CDN, a webhook relay on the
//! operator's network — which pass by name. A vendor's own origin (its channel's base URL) is
//! configured by the operator and needs no listing: the gateway already talks to it.

use http::{Request, Response, Uri};
use hyper::body::Incoming;
use tollgate_media_url::{UrlProblem, parse_http_url, url_host};
use tollgate_upstream::{Body, HttpClient, Timeouts, UpstreamError};

/// The address rule, its allow-list and the guarded client that applies it at connect time.
#[derive(Clone, Debug)]
pub struct Outbound {
    trusted_hosts: Vec<String>,
    client: Option<HttpClient>,
}

impl Default for Outbound {
    fn default() -> Outbound {
        Outbound::new(&[], tollgate_upstream::ClientConfig::default())
    }
}

impl Outbound {
    /// The rule with `trusted_hosts` (host names or IP literals, compared exactly, any case)
    /// allowed though not public; its client is `client` (its roots, its limits) with the
    /// address guard added.
    pub fn new(trusted_hosts: &[String], client: tollgate_upstream::ClientConfig) -> Outbound {
        let trusted_hosts: Vec<String> = trusted_hosts
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        let config = tollgate_upstream::ClientConfig {
            address_guard: Some(tollgate_upstream::AddressGuard {
                allows: tollgate_media_url::is_public_ip,
                trusted_hosts: trusted_hosts.clone(),
            }),
            ..client
        };
        let client = HttpClient::new(&config)
            .map_err(|e| tracing::error!(error = %e, "the outbound client could not be built"))
            .ok();
        Outbound {
            trusted_hosts,
            client,
        }
    }

    /// The hosts allowed though not public, lower case.
    pub fn trusted_hosts(&self) -> &[String] {
        &self.trusted_hosts
    }

    /// Whether `url`'s host is on the allow-list.
    pub fn is_trusted(&self, url: &str) -> bool {
        is_trusted(url, &self.trusted_hosts)
    }

    /// [`check_url`] with this rule's allow-list.
    pub fn check(&self, url: &str) -> Result<(), UrlProblem> {
        check_url(url, &self.trusted_hosts)
    }

    /// The rule for a URL a customer wrote (a portal balance alert's webhook): a public host,
    /// or one of `customer_hosts` (`[portal] alert_hosts`; reached only if also trusted here).
    /// The operator's trusted hosts are not a customer's: naming one is refused, so a
    /// customer cannot post into the operator's network.
    pub fn check_customer(&self, url: &str, customer_hosts: &[String]) -> Result<(), UrlProblem> {
        let customer_hosts: Vec<String> = customer_hosts
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .collect();
        if self.is_trusted(url) && !is_trusted(url, &customer_hosts) {
            return Err(UrlProblem::NotPublicName(url_host(url).unwrap_or_default()));
        }
        check_url(url, &customer_hosts)
    }

    /// Sends `request` if its URL passes [`Outbound::check`], through the guarded client.
    pub async fn send(
        &self,
        request: Request<Body>,
        timeouts: &Timeouts,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let url = request.uri().to_string();
        // Refused before anything is sent: to the caller, a connection that never happened.
        self.check(&url).map_err(|e| {
            UpstreamError::Connect(format!(
                "{} is refused by the address rule: {e}",
                redacted(request.uri())
            ))
        })?;
        let client = self.client.as_ref().ok_or_else(|| {
            UpstreamError::Connect("the outbound client could not be built".into())
        })?;
        client.send(request, timeouts).await
    }
}

/// Whether the gateway may fetch from or post to `url`: an `http(s)` URL of a public host, or
/// of one of `trusted_hosts` (lower case). A name's addresses are checked again when it is
/// connected to ([`Outbound::send`]).
pub fn check_url(url: &str, trusted_hosts: &[String]) -> Result<(), UrlProblem> {
    if is_trusted(url, trusted_hosts) {
        let scheme = url.split(':').next().unwrap_or_default();
        let rest = &url[scheme.len()..];
        return if matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https")
            && rest.starts_with("://")
            && !url
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '\\')
        {
            Ok(())
        } else {
            Err(UrlProblem::Scheme(scheme.to_owned()))
        };
    }
    parse_http_url(url).map(|_| ())
}

fn is_trusted(url: &str, trusted_hosts: &[String]) -> bool {
    url_host(url).is_some_and(|host| trusted_hosts.contains(&host))
}

/// `uri` without its path and query (which may carry a signature): for errors and logs.
pub fn redacted(uri: &Uri) -> String {
    match (uri.scheme_str(), uri.authority()) {
        (Some(scheme), Some(authority)) => format!("{scheme}://{authority}"),
        _ => "a URL that is not absolute".to_owned(),
    }
}

/// Whether `uri` is on the origin (scheme, host and port) of `base_url`, a channel's: the
/// vendor's own server, which the operator configured.
pub fn same_origin(uri: &Uri, base_url: &str) -> bool {
    let Ok(base) = base_url.parse::<Uri>() else {
        return false;
    };
    let port = |u: &Uri| {
        u.port_u16().or(match u.scheme_str() {
            Some("https") => Some(443),
            Some("http") => Some(80),
            _ => None,
        })
    };
    uri.scheme_str().map(str::to_ascii_lowercase) == base.scheme_str().map(str::to_ascii_lowercase)
        && uri.host().map(str::to_ascii_lowercase) == base.host().map(str::to_ascii_lowercase)
        && port(uri) == port(&base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_customer_reaches_only_public_hosts_and_those_opened_to_customers() {
        let outbound = Outbound::new(
            &["relay.corp".into(), "127.0.0.1".into()],
            Default::default(),
        );
        // An operator's trusted host is not a customer's.
        assert!(
            outbound
                .check_customer("http://relay.corp/hook", &[])
                .is_err()
        );
        assert!(
            outbound
                .check_customer("http://127.0.0.1:9/hook", &[])
                .is_err()
        );
        assert!(
            outbound
                .check_customer("http://10.0.0.1/hook", &[])
                .is_err()
        );
        assert!(outbound.check_customer("javascript:alert(1)", &[]).is_err());
        assert!(
            outbound
                .check_customer("https://hooks.example.com/x", &[])
                .is_ok()
        );
        // Opened to customers by the operator.
        assert!(
            outbound
                .check_customer("http://127.0.0.1:9/hook", &["127.0.0.1".into()])
                .is_ok()
        );
    }

    #[test]
    fn only_public_or_trusted_hosts_pass() {
        let rule = Outbound::new(
            &["Hooks.Corp.Example".into(), "10.0.0.7".into()],
            tollgate_upstream::ClientConfig::default(),
        );
        assert!(rule.check("https://example.com/hook").is_ok());
        assert!(rule.check("http://127.0.0.1:9/latest/meta-data").is_err());
        assert!(rule.check("http://169.254.169.254/").is_err());
        assert!(rule.check("http://metadata/computeMetadata").is_err());
        assert!(rule.check("http://2130706433/").is_err());
        assert!(rule.check("http://relay.internal/").is_err());
        assert!(rule.check("file:///etc/passwd").is_err());
        assert!(rule.check("https://hooks.corp.example/alerts").is_ok());
        assert!(rule.check("http://10.0.0.7:8080/alerts").is_ok());
        assert!(rule.check("ftp://hooks.corp.example/").is_err());
        assert!(
            rule.check("http://hooks.corp.example\\@127.0.0.1/")
                .is_err()
        );
        assert!(rule.check("http://hooks.corp.example@127.0.0.1/").is_err());
    }

    #[test]
    fn the_origin_is_scheme_host_and_port() {
        let uri = |s: &str| s.parse::<Uri>().unwrap();
        let base = "http://127.0.0.1:4000";
        assert!(same_origin(
            &uri("http://127.0.0.1:4000/_sim/videos/a.mp4"),
            base
        ));
        assert!(!same_origin(
            &uri("http://127.0.0.1:4001/latest/meta-data"),
            base
        ));
        assert!(!same_origin(&uri("https://127.0.0.1:4000/a"), base));
        assert!(same_origin(
            &uri("https://cdn.vendor.example/v.mp4"),
            "https://CDN.vendor.example:443/api"
        ));
    }
}
