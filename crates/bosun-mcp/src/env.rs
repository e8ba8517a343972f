//! The environment of a stdio server. It starts empty; `PATH`, `HOME` and
//! the locale (`LANG`, `LC_*`) come from bosun's own, then the names the
//! server's configuration passes through, then its own values. Nothing else,
//! so a provider key a person exported never reaches a third-party program.
//!
//! bosun's environment is handed in as a [`ParentEnv`], never read here, so
//! the caller (and each test) decides what "bosun's own" is.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;

use crate::config::StdioTransport;

/// Variables every server gets from bosun's own, when set.
const BASE: &[&str] = &["PATH", "HOME", "LANG"];

/// The environment a server's is drawn from: bosun's own, or what a test
/// says it is.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ParentEnv {
    vars: BTreeMap<OsString, OsString>,
}

impl ParentEnv {
    /// This process's environment, read once, now.
    pub fn from_process() -> Self {
        Self { vars: std::env::vars_os().collect() }
    }

    /// An environment holding exactly `vars`.
    pub fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        Self { vars: vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect() }
    }

    /// The value of `name`.
    pub fn get(&self, name: impl AsRef<OsStr>) -> Option<&OsStr> {
        self.vars.get(name.as_ref()).map(OsString::as_os_str)
    }
}

// Values may be keys: show the names only.
impl fmt::Debug for ParentEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParentEnv").field("names", &self.vars.keys().collect::<Vec<_>>()).finish()
    }
}

/// The whole environment of a server started with `config`.
pub(crate) fn child_env(parent: &ParentEnv, config: &StdioTransport) -> BTreeMap<OsString, OsString> {
    let mut env = BTreeMap::new();
    for (name, value) in &parent.vars {
        let locale = name.to_str().is_some_and(|n| n.starts_with("LC_"));
        if locale || BASE.iter().any(|b| OsStr::new(b) == name) {
            env.insert(name.clone(), value.clone());
        }
    }
    for name in &config.env_vars {
        if let Some(value) = parent.get(name) {
            env.insert(OsString::from(name), value.to_owned());
        }
    }
    for (name, value) in &config.env {
        env.insert(OsString::from(name), OsString::from(value));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_base_the_passed_through_and_the_configured_reach_the_child() {
        let parent = ParentEnv::from_vars([
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("GITHUB_TOKEN", "ghp-pass"),
            ("UNRELATED", "x"),
        ]);
        let config = StdioTransport::new("srv")
            .env_var("GITHUB_TOKEN")
            .env_var("NOT_SET")
            .env("PATH", "/opt/srv/bin")
            .env("MODE", "test");
        let env = child_env(&parent, &config);
        let names: Vec<_> = env.keys().filter_map(|k| k.to_str()).collect();
        assert_eq!(names, ["GITHUB_TOKEN", "HOME", "LANG", "LC_ALL", "MODE", "PATH"]);
        assert_eq!(env[OsStr::new("PATH")], "/opt/srv/bin", "the config's own value wins");
        assert!(!format!("{parent:?}").contains("sk-secret"));
    }
}
