//! The TLS listener's certificate (docs/operations.md, "TLS"): read from `[tls]`'s PEM files at
//! start and again on every reload, so a renewed certificate is served from the next handshake
//! without a restart; a pair that does not read (or whose key is not the certificate's) is
//! refused and the one in force keeps serving.
//!
//! rustls does the TLS (ring's primitives, as every upstream call's): the most used TLS stack
//! written in Rust, already in the binary for the channels.

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::sync::{Arc, PoisonError, RwLock};
use tokio_rustls::TlsAcceptor;
use tollgate_settings::config::TlsConfig;

/// The certificate in force, swapped whole by a reload.
#[derive(Debug)]
pub struct Certs {
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
}

impl Certs {
    /// The certificate and key `config` names, or why they do not serve.
    pub fn load(config: &TlsConfig) -> Result<Arc<Certs>, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let current = read(config, &provider)?;
        Ok(Arc::new(Certs {
            provider,
            current: RwLock::new(Arc::new(current)),
        }))
    }

    /// Reads the files again; on success the next handshake serves them, on failure the
    /// certificate in force stays.
    pub fn reload(&self, config: &TlsConfig) -> Result<(), String> {
        let next = read(config, &self.provider)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        Ok(())
    }

    /// An acceptor of TLS connections with this certificate, offering HTTP/2 and HTTP/1.1
    /// (a WebSocket upgrade takes HTTP/1.1).
    pub fn acceptor(self: &Arc<Self>) -> Result<TlsAcceptor, String> {
        let mut config = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

impl ResolvesServerCert for Certs {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }
}

/// The certificate chain and key of `config`, checked to belong together.
fn read(config: &TlsConfig, provider: &CryptoProvider) -> Result<CertifiedKey, String> {
    let chain = CertificateDer::pem_file_iter(&config.cert_file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("[tls] cert_file {}: {e}", config.cert_file.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "[tls] cert_file {}: no certificate in it",
            config.cert_file.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&config.key_file)
        .map_err(|e| format!("[tls] key_file {}: {e}", config.key_file.display()))?;
    CertifiedKey::from_der(chain, key, provider)
        .map_err(|e| format!("[tls] the key is not the certificate's, or does not read: {e}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A self-signed certificate for `name`, written as PEM files under `dir`.
    fn pair(dir: &Path, name: &str) -> TlsConfig {
        let made = rcgen::generate_simple_self_signed(vec![name.to_owned()]).unwrap();
        let (cert_file, key_file) = (
            dir.join(format!("{name}.crt")),
            dir.join(format!("{name}.key")),
        );
        std::fs::write(&cert_file, made.cert.pem()).unwrap();
        std::fs::write(&key_file, made.signing_key.serialize_pem()).unwrap();
        TlsConfig {
            listen: "127.0.0.1:0".into(),
            cert_file,
            key_file,
        }
    }

    fn leaf(certs: &Certs) -> Vec<u8> {
        certs.current.read().unwrap().cert[0].to_vec()
    }

    #[test]
    fn a_reload_serves_the_renewed_certificate_and_keeps_the_old_one_on_a_bad_pair() {
        let dir = std::env::temp_dir().join(format!("tollgate-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = pair(&dir, "first.test");
        let certs = Certs::load(&first).unwrap();
        let served = leaf(&certs);
        let renewed = pair(&dir, "renewed.test");
        certs.reload(&renewed).unwrap();
        assert_ne!(leaf(&certs), served, "the renewed certificate is served");
        // A key of another certificate: refused, the renewed one stays.
        let mismatched = TlsConfig {
            key_file: first.key_file.clone(),
            ..renewed.clone()
        };
        let now = leaf(&certs);
        assert!(
            certs
                .reload(&mismatched)
                .unwrap_err()
                .contains("not the certificate's")
        );
        let missing = TlsConfig {
            cert_file: dir.join("none.crt"),
            ..renewed
        };
        assert!(certs.reload(&missing).unwrap_err().contains("cert_file"));
        assert_eq!(leaf(&certs), now);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
