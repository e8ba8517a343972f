//! `bosun rewind ID --to TURN`: a session back to the start of one of its
//! turns (`bosun_agent::rewind`), and how a rewind's report is said, here
//! and in the conversation's `/rewind`.
//!
//! The files are restored in the workspace the session recorded, while
//! this process holds the session's lease (a session another process runs
//! is refused, as `resume` refuses it).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use bosun_agent::rewind::{Restore, RewindReport, RewindRequest};

use crate::cli::RewindArgs;
use crate::config::{self, Env};
use crate::exec::Outcome;
use crate::sanitize;

/// The shortest prefix of `id`, at least 8 characters, that no other of
/// `ids` shares: how a branch is shown, and can be named back.
pub(crate) fn short_id(id: &str, ids: &[&str]) -> String {
    let mut length = bosun_store::MIN_ID_PREFIX.min(id.len());
    while length < id.len() && ids.iter().any(|other| *other != id && other.starts_with(&id[..length])) {
        length += 1;
    }
    id[..length].to_owned()
}

/// The workspace `session` recorded, where its files are restored.
pub(crate) fn session_workspace(store: &bosun_store::Store, session: &str) -> Result<bosun_tools::Workspace> {
    let summary = store.show(session)?.summary;
    let recorded =
        summary.workspace.context("the session recorded no workspace, so it has no files to rewind")?;
    bosun_tools::Workspace::open(&recorded)
        .with_context(|| format!("cannot open the session's workspace {recorded}"))
}

/// What a rewind did, line by line, for a person.
pub(crate) fn report_lines(report: &RewindReport, short: impl Fn(&str) -> String) -> Vec<String> {
    let prompt = report.prompt.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let mut lines = vec![format!(
        "rewound session {} to the start of turn {} ({})",
        report.session,
        report.turn,
        sanitize::line(prompt)
    )];
    match &report.files {
        Some(files) if files.is_empty() => {
            lines.push("files: none changed by bosun from that turn on".to_owned());
        }
        Some(files) => {
            lines.push("files:".to_owned());
            lines.extend(files.iter().map(|file| format!("  {}", sanitize::line(&file.to_string()))));
        }
        None => lines.push("files: left as they are (--conversation)".to_owned()),
    }
    match &report.branch {
        Some(moved) => lines.push(format!(
            "conversation: goes on from before turn {} on branch {}; the branch it left stays (`bosun resume {} \
             --branch {}`)",
            report.turn,
            short(&moved.to),
            report.session,
            short(&moved.from)
        )),
        None => lines.push("conversation: goes on as it is (--files)".to_owned()),
    }
    lines
}

/// `bosun rewind`. Exit 1 when a file was held back (changed since, or a
/// write failed), so a script sees that not everything went back.
pub fn run(dir: Option<&Path>, profile: Option<&str>, args: RewindArgs, env: &Env) -> Result<Outcome> {
    let workdir = config::workdir(dir)?;
    let settings = config::resolve(&workdir, env, profile, &Default::default())?;
    let store = bosun_agent::parts::store(&settings, env)?;
    let id = store.resolve_id(&args.id)?;
    let workspace = session_workspace(&store, &id)?;
    let restore = match (args.files, args.conversation) {
        (true, _) => Restore::Files,
        (_, true) => Restore::Conversation,
        _ => Restore::Both,
    };
    let request = RewindRequest::new(args.to).restoring(restore).forced(args.force);
    // Held while files are written and the branch made: a session another
    // process runs is not rewound under it.
    let lease = store.open_session(&id)?;
    let report = bosun_agent::rewind::rewind(&store, &workspace, &id, &request)?;
    drop(lease);
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        let branches = store.show(&id)?.branches;
        let ids: Vec<&str> = branches.iter().map(|b| b.id.as_str()).collect();
        for line in report_lines(&report, |branch| short_id(branch, &ids)) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(if report.held_back() { Outcome::TurnFailed } else { Outcome::Success })
}

#[cfg(test)]
mod tests {
    use super::short_id;

    #[test]
    fn a_short_id_is_the_shortest_unique_prefix_of_at_least_8() {
        let ids = ["0190aaaa-1111-7000", "0190aaaa-1112-7000", "0190bbbb-0000-7000"];
        assert_eq!(short_id(ids[0], &ids), "0190aaaa-1111");
        assert_eq!(short_id(ids[2], &ids), "0190bbbb");
        assert_eq!(short_id("abc", &["abc"]), "abc");
    }
}
