//! `bosun mcp login NAME` and `bosun mcp logout NAME`: the terminal's part
//! of bosun-agent's OAuth login ([`bosun_agent::mcp_login`]). The
//! authorization URL is printed, sanitised, and opened in the browser with
//! `xdg-open` where there is one; what the login or logout did is printed.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use bosun_agent::mcp_login;
use bosun_mcp::Authorization;

use crate::config::Env;
use crate::sanitize;

/// `bosun mcp login NAME`.
pub async fn login(dir: Option<&Path>, profile: Option<&str>, name: &str, env: &Env) -> Result<()> {
    let login = mcp_login::login(dir, profile, name, env, Arc::new(show)).await?;
    crate::output::outln(format_args!("{login}"))?;
    Ok(())
}

/// `bosun mcp logout NAME`.
pub fn logout(name: &str, env: &Env) -> Result<()> {
    crate::output::outln(format_args!("{}", mcp_login::logout(name, env)?))?;
    Ok(())
}

/// The URL printed and opened: it comes from the authorization server, so
/// it is shown, not obeyed.
fn show(authorization: &Authorization) {
    let url = sanitize::line(&authorization.url);
    eprintln!("bosun: to authorize MCP server `{}`, open this URL:\n\n  {url}\n", authorization.server);
    open_in_browser(&authorization.url);
}

/// `xdg-open URL` when there is one; the URL is printed either way.
fn open_in_browser(url: &str) {
    let spawned = tokio::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            // Reaped in the background; the login does not wait for it.
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
        }
        Err(_) => eprintln!("bosun: (no xdg-open here: open the URL yourself)"),
    }
}
