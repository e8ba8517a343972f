//! `allowed_key_hosts`: the origins besides a provider's own that may
//! receive its key when a project's config set the base URL (invariant 20).
//! An entry is a scheme, a host and a port, https unless written otherwise:
//! `api.example.com` is `https://api.example.com:443` only, and a plain-http
//! server must be written as such (`http://localhost:8080`).

use std::fmt;

use crate::error::{Result, bail};
use reqwest::Url;

/// One origin that may receive a provider's key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyHost {
    scheme: String,
    host: String,
    port: u16,
}

impl KeyHost {
    /// An entry as written in the user's config; what it cannot mean
    /// exactly (a path, credentials, another scheme) is an error.
    pub fn parse(entry: &str) -> Result<Self> {
        let shown = bosun_core::sanitize::line(entry);
        let example = "write a host (`api.example.com`, https on 443) or an origin (`http://localhost:8080`)";
        let text = entry.trim();
        if text.is_empty() {
            bail!("allowed_key_hosts entry `{shown}` is empty: {example}");
        }
        let written = if text.contains("://") { text.to_owned() } else { format!("https://{text}") };
        let url = Url::parse(&written)
            .map_err(|e| crate::error::invalid!("allowed_key_hosts entry `{shown}`: {e}; {example}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            bail!("allowed_key_hosts entry `{shown}` is not http or https: {example}");
        }
        let extra = !url.username().is_empty()
            || url.password().is_some()
            || !matches!(url.path(), "" | "/")
            || url.query().is_some()
            || url.fragment().is_some();
        if extra {
            bail!("allowed_key_hosts entry `{shown}` holds more than a scheme, host and port: {example}");
        }
        let (Some(host), Some(port)) =
            (url.host_str().filter(|h| !h.is_empty()), url.port_or_known_default())
        else {
            bail!("allowed_key_hosts entry `{shown}` has no host: {example}");
        };
        Ok(Self { scheme: url.scheme().to_owned(), host: host.to_ascii_lowercase(), port })
    }

    /// Whether `url` is this origin.
    pub fn allows(&self, url: &Url) -> bool {
        url.scheme() == self.scheme
            && url.host_str().is_some_and(|host| host.eq_ignore_ascii_case(&self.host))
            && url.port_or_known_default() == Some(self.port)
    }

    /// The shortest entry that allows `url`: the bare host for https on
    /// 443, the whole origin otherwise.
    pub fn entry_for(url: &Url) -> Option<String> {
        let host = url.host_str().filter(|h| !h.is_empty())?;
        let port = url.port_or_known_default()?;
        Some(match (url.scheme(), port) {
            ("https", 443) => host.to_owned(),
            (scheme, port) => format!("{scheme}://{host}:{port}"),
        })
    }
}

impl fmt::Display for KeyHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn invariant_20_a_bare_host_is_https_on_443_only() {
        let host = KeyHost::parse("api.example.com").unwrap();
        assert!(host.allows(&url("https://api.example.com/v1")));
        assert!(host.allows(&url("https://API.example.com:443/v1")));
        assert!(!host.allows(&url("http://api.example.com/v1")), "plain http");
        assert!(!host.allows(&url("https://api.example.com:8443/v1")), "another port");
        assert!(!host.allows(&url("http://api.example.com:443/v1")), "http on 443");
        assert!(!host.allows(&url("https://api.example.com.evil.test/v1")));
        assert_eq!(host.to_string(), "https://api.example.com:443");
        let with_port = KeyHost::parse("api.example.com:8443").unwrap();
        assert!(with_port.allows(&url("https://api.example.com:8443/")));
        assert!(!with_port.allows(&url("https://api.example.com/")));
    }

    #[test]
    fn invariant_20_plain_http_and_its_port_must_be_written() {
        let local = KeyHost::parse("http://localhost:8080").unwrap();
        assert!(local.allows(&url("http://localhost:8080/v1")));
        assert!(!local.allows(&url("http://localhost:8081/v1")));
        assert!(!local.allows(&url("https://localhost:8080/v1")));
        assert!(!KeyHost::parse("localhost").unwrap().allows(&url("http://localhost:8080/v1")));
        let default_port = KeyHost::parse("http://127.0.0.1").unwrap();
        assert!(default_port.allows(&url("http://127.0.0.1:80/")));
        assert!(KeyHost::parse("http://[::1]:9000").unwrap().allows(&url("http://[::1]:9000/v1")));
    }

    #[test]
    fn entries_that_are_not_origins_are_errors_naming_them() {
        for entry in [
            "",
            "ftp://files.example.com",
            "https://api.example.com/v1",
            "user@api.example.com",
            "https://x.test/?q",
        ] {
            let error = KeyHost::parse(entry).unwrap_err().to_string();
            assert!(
                error.contains(&format!("`{entry}`")) && error.contains("allowed_key_hosts"),
                "{entry}: {error}"
            );
        }
    }

    #[test]
    fn the_suggested_entry_is_the_shortest_that_allows_the_url() {
        for (base, entry) in [
            ("https://api.example.com/v1", "api.example.com"),
            ("https://api.example.com:8443/v1", "https://api.example.com:8443"),
            ("http://127.0.0.1:4010", "http://127.0.0.1:4010"),
            ("http://localhost/v1", "http://localhost:80"),
        ] {
            let suggested = KeyHost::entry_for(&url(base)).unwrap();
            assert_eq!(suggested, entry);
            assert!(KeyHost::parse(&suggested).unwrap().allows(&url(base)), "{base}");
        }
    }
}
