//! Example turns shown to a local model before each conversation
//! (`local_examples`): a question answered from a file read, a change made
//! by reading then editing, a script run and its output reported. A 0.5B
//! model repeats its call after a result instead of answering
//! (docs/benchmarks.md); shown a turn that goes call, result, answer, it has
//! a pattern to follow.
//!
//! The names in them (`team.txt`, `theme.cfg`, `report.sh`) are unlikely in
//! a real workspace: a model that copies an example's path gets a "does not
//! exist" naming the paths that do, and with `local_path_grammar` on it
//! cannot name it at all.

use bosun_core::Message;
use serde_json::json;

/// The examples, for the brief tool set (they call `read_file`, `edit_file` and `shell`).
pub fn local_examples() -> Vec<Message> {
    let turns = json!([
        {"role": "user", "content": [{"type": "text", "text": "Who is named in team.txt?"}]},
        {"role": "assistant", "stop_reason": "tool_use", "content": [{"type": "tool_call",
            "id": "01900000-0000-7000-8000-00000000e001", "name": "read_file", "arguments": {"path": "team.txt"}}]},
        {"role": "tool_result", "call_id": "01900000-0000-7000-8000-00000000e001", "tool_name": "read_file",
            "content": [{"type": "text", "text": "     1\tlead: Ada Okafor\n     2\tsince: 2021\n"}], "is_error": false},
        {"role": "assistant", "stop_reason": "stop", "content": [{"type": "text", "text": "team.txt names Ada Okafor, the lead since 2021."}]},
        {"role": "user", "content": [{"type": "text", "text": "Make the colour in theme.cfg blue."}]},
        {"role": "assistant", "stop_reason": "tool_use", "content": [{"type": "tool_call",
            "id": "01900000-0000-7000-8000-00000000e002", "name": "read_file", "arguments": {"path": "theme.cfg"}}]},
        {"role": "tool_result", "call_id": "01900000-0000-7000-8000-00000000e002", "tool_name": "read_file",
            "content": [{"type": "text", "text": "     1\tcolour = red\n     2\tsize = 12\n"}], "is_error": false},
        {"role": "assistant", "stop_reason": "tool_use", "content": [{"type": "tool_call",
            "id": "01900000-0000-7000-8000-00000000e003", "name": "edit_file",
            "arguments": {"path": "theme.cfg", "old_text": "colour = red", "new_text": "colour = blue"}}]},
        {"role": "tool_result", "call_id": "01900000-0000-7000-8000-00000000e003", "tool_name": "edit_file",
            "content": [{"type": "text", "text": "edited `theme.cfg`: 1 replacement\n--- a/theme.cfg\n+++ b/theme.cfg\n@@ -1,2 +1,2 @@\n-colour = red\n+colour = blue\n size = 12"}], "is_error": false},
        {"role": "assistant", "stop_reason": "stop", "content": [{"type": "text", "text": "theme.cfg now sets colour = blue."}]},
        {"role": "user", "content": [{"type": "text", "text": "What does report.sh print when it runs?"}]},
        {"role": "assistant", "stop_reason": "tool_use", "content": [{"type": "tool_call",
            "id": "01900000-0000-7000-8000-00000000e004", "name": "shell", "arguments": {"command": "bash report.sh"}}]},
        {"role": "tool_result", "call_id": "01900000-0000-7000-8000-00000000e004", "tool_name": "shell",
            "content": [{"type": "text", "text": "exit code: 0\nreport ready: 12 rows\n"}], "is_error": false},
        {"role": "assistant", "stop_reason": "stop", "content": [{"type": "text", "text": "report.sh prints \"report ready: 12 rows\"."}]}
    ]);
    // Written by hand above and checked by the test below: a failure here
    // is a typo in this file, and showing no examples is the safe outcome.
    serde_json::from_value(turns).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_examples_parse_and_form_a_valid_history() {
        let examples = local_examples();
        assert_eq!(examples.len(), 14);
        let calls: usize = examples.iter().map(|m| m.tool_calls().count()).sum();
        assert_eq!(calls, 4);
        assert!(
            bosun_core::validate_history(&examples).is_ok(),
            "{:?}",
            bosun_core::validate_history(&examples)
        );
    }
}
