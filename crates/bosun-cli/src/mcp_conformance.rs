//! `bosun mcp conformance URL` (hidden): runs bosun-agent's client for the
//! official MCP conformance suite ([`bosun_agent::mcp_conformance`]) and
//! prints what it found: each call and its answer on stdout, the scenario,
//! each authorization visited and each tool left out on stderr. An error
//! when the server could not be used or a call failed.

use anyhow::Result;
use bosun_agent::{Notices, mcp_conformance};

use crate::config::Env;
use crate::sanitize;

/// Runs the scenario against `url`.
pub async fn run(url: &str, env: &Env) -> Result<()> {
    let notices = Notices::new(|notice| eprintln!("bosun: {}", sanitize::line(notice.text())));
    let report = mcp_conformance::run(url, env, &notices).await?;
    for call in &report.calls {
        crate::output::outln(format_args!("call {} {}", call.tool, call.arguments))?;
        // What the server said is shown, never obeyed.
        crate::output::outln(format_args!(
            "  {}{}",
            if call.is_error { "error: " } else { "" },
            sanitize::block(&call.text)
        ))?;
    }
    report.check()?;
    Ok(())
}
