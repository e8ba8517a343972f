//! The TLS crypto provider of the HTTP clients this crate and rmcp build.
//!
//! As in `bosun_providers::tls` (this crate does not depend on that one):
//! rustls is built with ring alone, and reqwest without a bundled provider
//! panics when no process default is installed.

/// Makes ring the process's default crypto provider unless one is set.
pub(crate) fn install_default_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another thread installing one is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
