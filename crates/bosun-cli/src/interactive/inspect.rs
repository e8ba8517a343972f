//! `/permissions` (the rules and grants calls are decided by; a rule added
//! for the session, or saved to the user's config too), `/mcp` (the MCP
//! servers, their state and tools) and `/review` (the model reviews what
//! the session changed).

use bosun_agent::config::TypedRule;
use bosun_core::permission::RuleOrigin;
use bosun_tui::{FromUi, NoticeKind};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Conversation, Flow};

/// Most bytes of the session's diff a review prompt carries; the model
/// reads the rest from the files.
const MAX_REVIEW_DIFF_BYTES: usize = 48 * 1024;

/// What `/review` asks when the session changed nothing itself.
const REVIEW_WORKTREE: &str = "Review the uncommitted changes in this workspace (run `git diff` and \
    `git status` to see them) as a careful senior reviewer: correctness bugs first, then missing tests, \
    unclear code and risky changes. Quote file and line for each finding, say how sure you are, and do not \
    change any file.";

impl Conversation<'_> {
    pub(super) fn permissions(&mut self, args: &str) -> anyhow::Result<()> {
        let (args, save) = match args.strip_suffix("--save") {
            Some(rest) => (rest.trim(), true),
            None => (args.trim(), false),
        };
        if args.is_empty() {
            self.notice(NoticeKind::Info, self.permissions_report());
            return Ok(());
        }
        if let Some(number) = args.strip_prefix("remove") {
            let number: usize = number.trim().parse().map_err(|_| {
                anyhow::anyhow!("`/permissions remove N`: N is a rule's number in `/permissions`")
            })?;
            let removed = number.checked_sub(1).and_then(|index| self.session.remove_rule(index));
            let Some(rule) = removed else {
                anyhow::bail!("there is no rule {number}: `/permissions` lists them")
            };
            self.notice(
                NoticeKind::Info,
                format!(
                    "removed for this session: {} (a config file's rule is back when the session is resumed)",
                    rule.describe()
                ),
            );
            return Ok(());
        }
        let typed = TypedRule::parse(args)?;
        if save {
            let file = crate::config::user_file(self.env)
                .ok_or_else(|| anyhow::anyhow!("no user config file: HOME is not set"))?;
            typed.save(&file)?;
            self.notice(NoticeKind::Info, format!("saved to {}", file.display()));
        }
        for rule in typed.rules {
            self.notice(NoticeKind::Info, format!("added for this session: {}", rule.describe()));
            self.session.add_rule(rule);
        }
        Ok(())
    }

    fn permissions_report(&self) -> String {
        let mut lines = vec![format!("mode: {}", self.session.mode())];
        let rules = self.session.rules();
        if rules.is_empty() {
            lines.push("rules: none (the mode decides)".to_owned());
        } else {
            lines.push("rules (deny wins over ask, ask over allow):".to_owned());
            for (number, rule) in rules.iter().enumerate() {
                let from = if rule.origin == RuleOrigin::Project { "" } else { " (yours)" };
                lines.push(format!("  {}. {}{from}", number + 1, rule.describe()));
            }
        }
        let grants = self.session.grants();
        if grants.is_empty() {
            lines.push("approved for the session: nothing yet".to_owned());
        } else {
            lines.push("approved for the session:".to_owned());
            lines.extend(grants.into_iter().map(|grant| format!("  {grant}")));
        }
        lines.push(
            "`/permissions allow|ask|deny NAME [COMMAND WORDS] [--save]` adds a rule (saved to your config with \
             --save); `/permissions remove N` removes one for this session"
                .to_owned(),
        );
        lines.join("\n")
    }

    pub(super) fn mcp_report(&self) {
        let Some(servers) = self.agent.mcp_servers().filter(|servers| !servers.server_names().is_empty())
        else {
            self.notice(NoticeKind::Info, "no MCP servers (`bosun mcp add` adds one)");
            return;
        };
        let tools: Vec<String> = servers.tools().iter().map(|tool| tool.definition().name.clone()).collect();
        let mut lines = Vec::new();
        for name in servers.server_names() {
            let state = match (servers.unavailable(&name), servers.process_id(&name)) {
                (Some(why), _) => format!("down: {why}"),
                (None, Some(pid)) => format!("running (pid {pid})"),
                (None, None) => "connected".to_owned(),
            };
            let prefix = format!("mcp__{name}__");
            let own: Vec<&str> = tools.iter().filter_map(|tool| tool.strip_prefix(&prefix)).collect();
            let listed = if own.is_empty() { "no tools offered".to_owned() } else { own.join(", ") };
            lines.push(format!("{name}: {state}; {} tools: {listed}", own.len()));
        }
        self.notice(NoticeKind::Info, lines.join("\n"));
    }

    /// `/review [FOCUS]`: a turn asking the model to review the session's
    /// changes (its diffs in the prompt), or the workspace's uncommitted
    /// ones when the session made none.
    pub(super) async fn review(&mut self, focus: &str, from_ui: &mut UnboundedReceiver<FromUi>) -> Flow {
        let (mut diffs, written) = self.session_changes();
        let mut prompt = if diffs.is_empty() && written.is_empty() {
            REVIEW_WORKTREE.to_owned()
        } else {
            if diffs.len() > MAX_REVIEW_DIFF_BYTES {
                let mut cut = MAX_REVIEW_DIFF_BYTES;
                while !diffs.is_char_boundary(cut) {
                    cut -= 1;
                }
                diffs.truncate(cut);
                diffs.push_str("\n[… the rest of the diff is left out: read the files]\n");
            }
            let mut text = String::from(
                "Review the changes made in this session as a careful senior reviewer: correctness bugs first, \
                 then missing tests, unclear code and risky changes. Quote file and line for each finding, say \
                 how sure you are, and do not change any file.\n",
            );
            if !written.is_empty() {
                text.push_str(&format!("\nFiles written whole (read them): {}\n", written.join("; ")));
            }
            if !diffs.is_empty() {
                text.push_str(&format!("\n```diff\n{diffs}```\n"));
            }
            text
        };
        if !focus.is_empty() {
            prompt.push_str(&format!("\nFocus on: {focus}\n"));
        }
        self.notice(NoticeKind::Info, "› /review: the model reviews this session's changes");
        self.turn(Some(prompt.into()), from_ui).await
    }
}
