//! The session picker: a workspace's recent sessions as choices, each with
//! its short id (the status line's), title, model, size and age. The
//! conversation's `/resume` shows them in its UI; `bosun resume` and `bosun
//! compact` with no session named show them in the same picker on the
//! terminal (`bosun_tui::pick`).

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{Context, Result, bail};
use bosun_store::{ListFilter, Store};
use bosun_tui::PickItem;

use crate::config::{self, Env};

/// How many recent sessions the picker offers.
const RECENT: usize = 20;

/// The characters of an id the status line shows (its random end), which
/// every command accepts for it.
const SHORT_ID: usize = 8;

/// The picker's choices: the workspace's (its identity path's) newest
/// sessions but `except` (the one open now), newest first.
pub(crate) fn recent_items(store: &Store, workspace: &str, except: Option<&str>) -> Result<Vec<PickItem>> {
    let mut filter = ListFilter::workspace(workspace.to_owned());
    filter.limit = Some(RECENT + 1);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let items = store
        .list(&filter)?
        .into_iter()
        .filter(|s| Some(s.id.as_str()) != except)
        .take(RECENT)
        .map(|s| {
            let short = s.id.get(s.id.len().saturating_sub(SHORT_ID)..).unwrap_or(&s.id).to_owned();
            let title =
                s.title.as_deref().map_or_else(|| "(no prompt)".to_owned(), crate::interactive::first_line);
            let model = s.model.as_deref().map(|m| format!(" · {m}")).unwrap_or_default();
            let label = format!(
                "{short}  {title}{model} · {} messages · {}",
                s.message_count,
                age(now - s.updated_at)
            );
            PickItem::new(s.id, label)
        })
        .collect();
    Ok(items)
}

/// A duration in milliseconds, as "5 min ago".
fn age(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    match secs {
        0..60 => "just now".to_owned(),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => format!("{} days ago", secs / 86_400),
    }
}

/// Whether a picker can be shown: keys come from stdin and it is drawn on
/// stderr, both terminals (stdout may be piped).
pub(crate) fn has_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Asks the person, on the terminal, which of the workspace in `dir`'s
/// recent sessions to `verb` (the picker's heading). `None` when they
/// cancelled. Reads the store without writing to it.
pub(crate) async fn pick_session(
    dir: &Path,
    env: &Env,
    settings: &config::Settings,
    verb: &str,
) -> Result<Option<String>> {
    let store = bosun_agent::parts::store_read_only(settings, env)?;
    let workspace = bosun_tools::Workspace::open(dir)?.identity().path.clone();
    let items = recent_items(&store, &workspace, None)?;
    drop(store);
    if items.is_empty() {
        bail!(
            "no session of this workspace to {verb}: `bosun sessions list --all` lists every workspace's, \
             and `bosun {verb} ID` takes any of their ids"
        );
    }
    let color = env.get("NO_COLOR").is_none();
    let title = format!("{verb} a session");
    tokio::task::spawn_blocking(move || bosun_tui::pick(title, items, color))
        .await
        .context("the session picker stopped")?
        .context("the session picker failed on this terminal")
}
