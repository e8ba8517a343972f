//! API keys: held, sent in a header, never printed.

use std::fmt;

/// An API key. `Debug` and `Display` print `<redacted>`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key; surrounding whitespace (a trailing newline from a file or
    /// an environment variable) is trimmed.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into().trim().to_owned())
    }

    /// The key, for the one place that sends it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the key is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_print() {
        let key = ApiKey::new(" sk-secret-123\n");
        assert_eq!(key.expose(), "sk-secret-123");
        assert!(!format!("{key:?} {key}").contains("secret"));
    }
}
