//! The store's connection URL, kept with its password and shown without it.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::PgError;

/// How long a connection may take unless the URL says (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A Postgres connection string: a URL (`postgres://user:password@host:port/db`,
/// `postgresql://…`, query parameters such as `?host=/run/postgresql`) or the
/// `key=value` form. Its `Debug` and `Display` never show the password.
#[derive(Clone)]
pub struct PgUrl {
    text: String,
    config: tokio_postgres::Config,
}

impl PgUrl {
    /// Parses `text`.
    ///
    /// # Errors
    /// [`PgError::Url`] when it is not a Postgres connection string.
    pub fn parse(text: &str) -> Result<Self, PgError> {
        let mut config = tokio_postgres::Config::from_str(text)
            .map_err(|e| PgError::Url { url: redact(text), detail: e.to_string() })?;
        // A server that does not answer fails the connection rather than
        // holding it (and a journal's drop, which releases its lease) forever.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        Ok(Self { text: text.to_owned(), config })
    }

    /// Whether it carries a password.
    pub fn has_password(&self) -> bool {
        self.config.get_password().is_some()
    }

    /// The URL with its password replaced by `***`.
    pub fn redacted(&self) -> String {
        redact(&self.text)
    }

    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PgUrl").field(&self.redacted()).finish()
    }
}

impl fmt::Display for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// `text` with every password in it replaced by `***`: the one in a URL's
/// user information, a `password=` query parameter, a `password=` key.
pub(crate) fn redact(text: &str) -> String {
    let mut out = text.to_owned();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..].find(['/', '?']).map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = &out[rest_start..rest_start + at];
            if let Some(colon) = userinfo.find(':') {
                let start = rest_start + colon + 1;
                out.replace_range(start..rest_start + at, "***");
            }
        }
    }
    redact_key(&out)
}

/// Replaces the value of each `password=` (a query parameter or a key of
/// the `key=value` form, quoted or not).
fn redact_key(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = find_password_key(rest) {
        let value_start = found + "password=".len();
        out.push_str(&rest[..value_start]);
        out.push_str("***");
        let value = &rest[value_start..];
        let end = if let Some(quoted) = value.strip_prefix('\'') {
            // A quoted value ends at the first quote not escaped.
            let mut escaped = false;
            let mut end = value.len();
            for (i, c) in quoted.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '\'' if !escaped => {
                        end = i + 2;
                        break;
                    }
                    _ => escaped = false,
                }
            }
            end
        } else {
            value.find(['&', ' ']).unwrap_or(value.len())
        };
        rest = &value[end..];
    }
    out.push_str(rest);
    out
}

/// Where a `password=` key starts: at the start, or after `?`, `&` or a space.
fn find_password_key(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("password=") {
        let at = from + i;
        if at == 0 || matches!(lower.as_bytes()[at - 1], b'?' | b'&' | b' ') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        let cases = [
            ("postgres://bosun:s3cret@db.example:5432/bosun", "postgres://bosun:***@db.example:5432/bosun"),
            ("postgresql://bosun:p%40ss@h/db?sslmode=disable", "postgresql://bosun:***@h/db?sslmode=disable"),
            ("postgres://bosun@h/db?password=s3cret&x=1", "postgres://bosun@h/db?password=***&x=1"),
            ("host=h user=bosun password=s3cret dbname=b", "host=h user=bosun password=*** dbname=b"),
            ("host=h password='a b\\' c' dbname=b", "host=h password=*** dbname=b"),
            ("postgres://h/db", "postgres://h/db"),
        ];
        for (given, shown) in cases {
            assert_eq!(redact(given), shown, "{given}");
        }
        let url = PgUrl::parse("postgres://bosun:s3cret@localhost/bosun").unwrap();
        assert!(!format!("{url:?}").contains("s3cret"), "{url:?}");
        assert!(!url.to_string().contains("s3cret"));
    }

    #[test]
    fn the_documented_forms_parse() {
        for form in [
            "postgres://bosun:pw@db.example:5432/bosun?connect_timeout=3",
            "postgresql://bosun@127.0.0.1:5432/bosun",
            "postgres://bosun@/bosun?host=/run/postgresql",
            "host=127.0.0.1 port=5432 user=bosun dbname=bosun",
            "postgres://bosun@127.0.0.1/bosun?options=-c%20search_path%3Dbosun",
        ] {
            let url = PgUrl::parse(form).unwrap();
            assert!(url.config().get_connect_timeout().is_some(), "{form}");
        }
    }

    #[test]
    fn a_url_that_does_not_parse_is_refused_without_its_password() {
        let error = PgUrl::parse("postgres://bosun:s3cret@h:notaport/db").unwrap_err();
        assert!(matches!(error, PgError::Url { .. }), "{error:?}");
        assert!(!format!("{error:?} {error}").contains("s3cret"));
    }
}
