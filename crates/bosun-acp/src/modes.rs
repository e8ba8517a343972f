//! bosun's permission modes as ACP session modes. The editor is offered
//! only the modes no looser than the user's own for the workspace
//! (`bosun_agent::config::looseness`), and `session/set_mode` is held to
//! the same bound.

use agent_client_protocol::v1::schema::{SessionMode, SessionModeState};
use bosun_agent::config::looseness;
use bosun_core::Mode;

const ALL: [(Mode, &str, &str); 5] = [
    (Mode::ReadOnly, "Read-only", "Reads the workspace; changes nothing."),
    (Mode::Plan, "Plan", "Reads and makes a plan; changes nothing."),
    (Mode::Propose, "Propose", "Asks before each change or command."),
    (Mode::Write, "Write", "Edits files freely; asks before commands."),
    (Mode::Autonomous, "Autonomous", "Acts without asking, inside the sandbox."),
];

/// The mode an ACP mode id names.
pub(crate) fn parse(id: &str) -> Option<Mode> {
    ALL.iter().map(|(mode, ..)| *mode).find(|mode| mode.to_string() == id)
}

/// Whether `asked` is allowed under the user's own mode.
pub(crate) fn allowed(asked: Mode, user: Mode) -> bool {
    looseness(asked) <= looseness(user)
}

/// The modes offered, with `current` selected.
pub(crate) fn state(current: Mode, user: Mode) -> SessionModeState {
    let available = ALL
        .iter()
        .filter(|(mode, ..)| allowed(*mode, user))
        .map(|(mode, name, description)| SessionMode::new(mode.to_string(), *name).description(*description))
        .collect();
    SessionModeState::new(current.to_string(), available)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_mode_looser_than_the_users_is_offered() {
        let offered = state(Mode::Propose, Mode::Propose);
        let ids: Vec<_> = offered.available_modes.iter().map(|m| m.id.0.to_string()).collect();
        assert_eq!(ids, ["read-only", "plan", "propose"]);
        assert!(!allowed(Mode::Write, Mode::Propose));
        assert_eq!(parse("autonomous"), Some(Mode::Autonomous));
        assert_eq!(parse("yolo"), None);
    }
}
