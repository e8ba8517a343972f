//! Telling the model (and the person) that the sandbox, not the command,
//! refused something. The kernel does not say which rule refused an access,
//! so the output is read for the errors a refusal produces, and the lines
//! carrying them are quoted: they name the path or the call.

use crate::SandboxMode;

/// Error texts a refusal of the sandbox shows up as.
const SIGNS: &[&str] = &[
    "Read-only file system",
    "Permission denied",
    "Operation not permitted",
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "No such device or address",
];
/// Lines quoted at most.
const QUOTED: usize = 3;
/// Characters of a quoted line kept.
const LINE_CHARS: usize = 200;

/// The sandbox one call ran in, for its note.
#[derive(Clone, Debug)]
pub(crate) struct Refusals {
    mode: SandboxMode,
    network: bool,
}

impl Refusals {
    pub(crate) fn new(mode: SandboxMode, network: bool) -> Self {
        Self { mode, network }
    }

    /// The note, when `output` shows a refusal.
    pub(crate) fn explain(&self, output: &str) -> Option<String> {
        let lines: Vec<String> = output
            .lines()
            .filter(|line| SIGNS.iter().any(|sign| line.contains(sign)))
            .take(QUOTED)
            .map(|line| line.trim().chars().take(LINE_CHARS).collect())
            .collect();
        if lines.is_empty() {
            return None;
        }
        let writes = match self.mode {
            SandboxMode::ReadOnly => "every write (but to the call's temporary folder)",
            _ => {
                "writes outside the workspace and the call's temporary folder, writes to protected paths (.git, .bosun, AGENTS.md, …)"
            }
        };
        let network = if self.network { "" } else { ", the network" };
        Some(format!(
            "[sandbox ({mode}): {writes}, reads of secret folders{network} and debugging other processes are \
             refused. The output shows: {quoted}. If this call needs more, run it again with \"sandbox\": \
             \"network\" (network on) or \"sandbox\": \"off\" (no sandbox); the person is always asked]",
            mode = self.mode,
            quoted = lines.iter().map(|line| format!("`{line}`")).collect::<Vec<_>>().join("; "),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_named_with_the_line_that_shows_it() {
        let refusals = Refusals::new(SandboxMode::WorkspaceWrite, false);
        let note = refusals.explain("exit\nbash: /root/.bashrc: Read-only file system\n").unwrap_or_default();
        assert!(note.contains("`bash: /root/.bashrc: Read-only file system`"), "{note}");
        assert!(note.contains("the network"), "{note}");
        assert!(refusals.explain("all good\n").is_none());
    }
}
