//! The process environment as one value: captured once by a front end (or
//! given by an embedder) and passed down, so what a session reads from the
//! environment is explicit and testable.

use std::collections::BTreeMap;
use std::fmt;

/// The process environment, read once in `main` (or given by an embedder).
#[derive(Clone, Default)]
pub struct Env(BTreeMap<String, String>);

/// Names only: the values include API keys.
impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Env").field(&self.0.keys().collect::<Vec<_>>()).finish()
    }
}

impl Env {
    /// The current process's environment.
    pub fn capture() -> Self {
        Self(std::env::vars().collect())
    }

    /// One variable, if set and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str).filter(|v| !v.trim().is_empty())
    }

    /// Every variable, as captured.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// An environment from pairs, for embedders and tests.
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        Self(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_shows_its_names_but_never_its_values() {
        let env = Env::from_pairs(&[("OPENAI_API_KEY", "sk-secret-value"), ("HOME", "/h")]);
        let shown = format!("{env:?}");
        assert!(shown.contains("OPENAI_API_KEY") && shown.contains("HOME"), "{shown}");
        assert!(!shown.contains("sk-secret-value") && !shown.contains("/h"), "{shown}");
    }
}
