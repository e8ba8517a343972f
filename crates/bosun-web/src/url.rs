//! The one check of a URL a web tool is given or redirected to.

use reqwest::Url;

use crate::WebError;

/// `text` as an http(s) URL with a host and no credentials.
pub fn checked_url(text: &str) -> Result<Url, WebError> {
    let url = Url::parse(text.trim())
        .map_err(|error| WebError::NotAUrl { url: text.to_owned(), reason: error.to_string() })?;
    check(url)
}

/// The same checks on a parsed URL (a redirect's target).
pub(crate) fn check(mut url: Url) -> Result<Url, WebError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(WebError::Scheme { url: url.to_string(), scheme: url.scheme().to_owned() });
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Shown without them: the error reaches the model and the journal.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        return Err(WebError::Credentials { url: url.to_string() });
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(WebError::NoHost { url: url.to_string() });
    }
    Ok(url)
}

/// Whether a redirect from `from` to `to` stays on the same site: the same
/// host and port, or the same host moving up from http to https on the
/// default ports; never down from https to http.
pub(crate) fn same_site(from: &Url, to: &Url) -> bool {
    if from.host_str() != to.host_str() {
        return false;
    }
    match (from.scheme(), to.scheme()) {
        (a, b) if a == b => from.port_or_known_default() == to.port_or_known_default(),
        ("http", "https") => from.port().is_none() && to.port().is_none(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn only_http_urls_with_a_host_and_no_credentials_pass() {
        assert!(checked_url("https://example.org/a?b=c").is_ok());
        assert!(checked_url(" http://127.0.0.1:8080/ ").is_ok());
        for (text, says) in [
            ("file:///etc/passwd", "only http and https"),
            ("ftp://example.org/", "only http and https"),
            ("javascript:alert(1)", "only http and https"),
            ("data:text/html,hi", "only http and https"),
            ("https://user:secret@example.org/", "holds credentials"),
            ("https://token@example.org/", "holds credentials"),
            ("example.org", "is not a URL"),
        ] {
            let error = checked_url(text).unwrap_err().to_string();
            assert!(error.contains(says), "{text}: {error}");
            assert!(!error.contains("secret"), "{error}");
        }
    }

    #[test]
    fn a_site_is_its_host_and_port_and_https_is_not_given_up() {
        let url = |text: &str| Url::parse(text).unwrap();
        assert!(same_site(&url("https://a.org/x"), &url("https://a.org:443/y")));
        assert!(same_site(&url("http://a.org/x"), &url("https://a.org/y")));
        assert!(!same_site(&url("https://a.org/x"), &url("http://a.org/y")));
        assert!(!same_site(&url("https://a.org/x"), &url("https://b.org/x")));
        assert!(!same_site(&url("http://a.org:8080/"), &url("http://a.org:8081/")));
    }
}
