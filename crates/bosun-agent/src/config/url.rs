//! URLs the configuration names (an MCP server's, `HF_ENDPOINT`, a base URL):
//! http or https with a host, refused with the text shown sanitised. The
//! check is bosun-models' (the hub's endpoint is checked there too).

use crate::error::Result;

/// `text` as an http(s) URL with a host, or an error naming `what` it is
/// (the base URL, `HF_ENDPOINT`) and why it cannot be used.
pub fn http_url(what: &str, text: &str) -> Result<reqwest::Url> {
    Ok(bosun_models::http_url(what, text)?)
}
