//! Name resolution for the shared client, and the guard against server-side request forgery
//! for fetches of URLs a client gave (`docs/decisions.md`, "Media URLs and SSRF").
//!
//! Checking a URL's host before fetching it leaves a gap: the name is resolved again when the
//! connection is made, and a hostile DNS server can answer a public address the first time and a
//! private one the second ("DNS rebinding"). With an [`AddressGuard`] the check happens inside
//! the connector, on the very addresses it is about to connect to, so there is no second lookup
//! to poison.

use hyper_util::client::legacy::connect::dns::Name;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Which addresses a guarded client may connect to.
#[derive(Clone)]
pub struct AddressGuard {
    /// Whether an address may be connected to (the gateway passes its public-address rule).
    pub allows: fn(IpAddr) -> bool,
    /// Host names exempt from the rule (an operator's own media store), compared exactly.
    pub trusted_hosts: Vec<String>,
}

impl std::fmt::Debug for AddressGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressGuard")
            .field("trusted_hosts", &self.trusted_hosts)
            .finish_non_exhaustive()
    }
}

/// The client's resolver: the system's, optionally keeping only the addresses a guard allows.
#[derive(Clone, Debug, Default)]
pub struct Resolver {
    guard: Option<Arc<AddressGuard>>,
}

impl Resolver {
    /// A resolver that keeps only what `guard` allows (`None`: everything).
    pub fn new(guard: Option<AddressGuard>) -> Resolver {
        Resolver {
            guard: guard.map(Arc::new),
        }
    }
}

/// Applies `guard` to the addresses `name` resolved to: the allowed ones, or an error naming
/// the first refused one when none is allowed.
fn keep_allowed(
    name: &str,
    addrs: Vec<SocketAddr>,
    guard: Option<&AddressGuard>,
) -> io::Result<Vec<SocketAddr>> {
    let Some(guard) = guard.filter(|g| !g.trusted_hosts.iter().any(|t| t == name)) else {
        return Ok(addrs);
    };
    let refused = addrs.iter().find(|a| !(guard.allows)(a.ip())).copied();
    // One non-public address among public ones is a rebinding attempt as much as all of them.
    match refused {
        Some(addr) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{name} resolves to the non-public address {}", addr.ip()),
        )),
        None if addrs.is_empty() => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{name} resolves to no address"),
        )),
        None => Ok(addrs),
    }
}

impl tower_service::Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let guard = self.guard.clone();
        Box::pin(async move {
            // Port 0: the connector sets the URL's port on each address.
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            Ok(keep_allowed(name.as_str(), addrs, guard.as_deref())?.into_iter())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public_only(ip: IpAddr) -> bool {
        !(ip.is_loopback() || ip.is_unspecified())
    }

    fn guard(trusted: &[&str]) -> AddressGuard {
        AddressGuard {
            allows: public_only,
            trusted_hosts: trusted.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn addr(s: &str) -> SocketAddr {
        s.parse()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    #[test]
    fn any_refused_address_refuses_the_name_unless_it_is_trusted() {
        let mixed = vec![addr("93.184.216.34:0"), addr("127.0.0.1:0")];
        let err = keep_allowed("rebind.example", mixed.clone(), Some(&guard(&[])));
        assert!(matches!(err, Err(e) if e.kind() == io::ErrorKind::PermissionDenied));
        assert_eq!(
            keep_allowed(
                "rebind.example",
                mixed.clone(),
                Some(&guard(&["rebind.example"]))
            )
            .map(|a| a.len())
            .ok(),
            Some(2)
        );
        assert_eq!(
            keep_allowed("x", vec![addr("93.184.216.34:0")], Some(&guard(&[])))
                .map(|a| a.len())
                .ok(),
            Some(1)
        );
        assert_eq!(
            keep_allowed("x", mixed, None).map(|a| a.len()).ok(),
            Some(2)
        );
    }

    #[tokio::test]
    async fn the_guard_runs_on_the_addresses_the_connector_gets() {
        use tower_service::Service;
        let mut guarded = Resolver::new(Some(guard(&[])));
        let localhost: Name = "localhost".parse().unwrap_or_else(|_| unreachable!());
        let refused = guarded.call(localhost.clone()).await;
        assert!(refused.is_err(), "localhost is loopback");
        let mut trusting = Resolver::new(Some(guard(&["localhost"])));
        assert!(trusting.call(localhost).await.is_ok());
    }
}
