//! URLs bosun is given (an MCP server's, `HF_ENDPOINT`, a base URL): http or
//! https with a host, refused with the text shown sanitised.

use crate::error::{Result, bail, fail};

/// `text` as an http(s) URL with a host, or an error naming `what` it is
/// (the base URL, `HF_ENDPOINT`) and why it cannot be used.
pub fn http_url(what: &str, text: &str) -> Result<reqwest::Url> {
    let shown = bosun_core::sanitize::line(text);
    let parsed =
        reqwest::Url::parse(text).map_err(|e| fail!(Invalid: "{what} `{shown}` is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        bail!("{what} `{shown}` must be http:// or https://, not {}://", parsed.scheme());
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        bail!("{what} `{shown}` has no host");
    }
    Ok(parsed)
}
