//! The TLS crypto provider of every HTTP client bosun builds.
//!
//! rustls is built with ring alone (not aws-lc-rs, reqwest's default): the
//! same protocol support for a model API, a much smaller C build and binary
//! (docs/benchmarks.md). reqwest without a bundled provider takes the
//! process default, and panics when there is none, so whoever builds a
//! client installs ring first; a default someone else installed stays.

/// Makes ring the process's default crypto provider unless one is set.
/// Cheap after the first call.
pub fn install_default_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another thread installing one is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
