//! The slash commands the conversation offers, for completion and `/help`.

use bosun_tui::SlashCommand;

/// The commands, for completion and `/help`.
pub(super) fn list() -> Vec<SlashCommand> {
    [
        // `/help` is answered by the UI from this list and its keys.
        ("help", "what the commands and keys do"),
        ("model", "pick the model and its reasoning effort, or `/model PROVIDER/MODEL`"),
        ("effort", "show the reasoning effort, or `/effort low|medium|high|off|default`"),
        ("mode", "show the mode, or `/mode read-only|plan|propose|write|autonomous`"),
        ("new", "start a new session in this workspace"),
        ("clear", "start over in a new session (this one stays stored)"),
        ("status", "session, model, mode, workspace, sandbox, MCP servers and spend"),
        (
            "permissions",
            "the rules and approvals; `/permissions allow|ask|deny NAME [WORDS] [--save]`, `remove N`",
        ),
        ("mcp", "the MCP servers: state and tools"),
        ("review", "the model reviews this session's changes (`/review [FOCUS]`)"),
        ("resume", "pick a recent session of this workspace (or `/resume ID`)"),
        ("fork", "branch this session at its newest message and go on in the branch"),
        ("rewind", "back to the start of a turn: files, conversation or both (`/rewind [TURN]`)"),
        ("compact", "summarize older turns now (history keeps them)"),
        ("cost", "tokens and cost of this session"),
        ("diff", "the changes this session made to the workspace"),
        ("init", "write an AGENTS.md from a look at the project"),
        ("quit", "leave (the session stays stored)"),
    ]
    .into_iter()
    .map(|(name, help)| SlashCommand::new(name, help))
    .collect()
}
