//! The crate's error type.

/// Why `bosun acp` stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcpError {
    /// The ACP connection (its handshake or transport) failed.
    #[error("ACP connection: {0}")]
    Protocol(String),
    /// The shell call an editor's terminal was given could not be run.
    #[error("sandboxed shell: {0}")]
    Shell(String),
}
