//! The shape every history must have: a system message only first, each
//! assistant tool call followed by exactly one result in call order, call ids
//! unique (invariants 4 and 11).

use std::collections::HashSet;

use crate::message::{CallId, Message};

/// How a history breaks the rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// A system message not at the start.
    #[error("message {index}: a system message may only come first")]
    MisplacedSystem {
        /// Position in the history.
        index: usize,
    },
    /// A call id used twice.
    #[error("message {index}: call id {id} is used twice")]
    DuplicateCallId {
        /// Position in the history.
        index: usize,
        /// The id.
        id: CallId,
    },
    /// A call without its result.
    #[error("message {index}: call {id} has no result")]
    MissingResult {
        /// Position of the assistant message.
        index: usize,
        /// The call without a result.
        id: CallId,
    },
    /// A result where none was expected, or for another call.
    #[error("message {index}: tool result for {id} does not answer the expected call")]
    UnexpectedResult {
        /// Position of the result.
        index: usize,
        /// Its call id.
        id: CallId,
    },
}

/// Checks the structural rules of a history.
pub fn validate_history(messages: &[Message]) -> Result<(), HistoryError> {
    let mut seen = HashSet::new();
    let mut index = 0;
    while index < messages.len() {
        match &messages[index] {
            Message::System { .. } if index != 0 => return Err(HistoryError::MisplacedSystem { index }),
            Message::ToolResult { call_id, .. } => {
                return Err(HistoryError::UnexpectedResult { index, id: *call_id });
            }
            message @ Message::Assistant { .. } => {
                let at = index;
                for call in message.tool_calls() {
                    if !seen.insert(call.id) {
                        return Err(HistoryError::DuplicateCallId { index: at, id: call.id });
                    }
                    index += 1;
                    match messages.get(index) {
                        Some(Message::ToolResult { call_id, .. }) if *call_id == call.id => {}
                        Some(Message::ToolResult { call_id, .. }) => {
                            return Err(HistoryError::UnexpectedResult { index, id: *call_id });
                        }
                        _ => return Err(HistoryError::MissingResult { index: at, id: call.id }),
                    }
                }
            }
            _ => {}
        }
        index += 1;
    }
    Ok(())
}

/// Every call id in a history, in order.
pub(crate) fn call_ids(messages: &[Message]) -> impl Iterator<Item = CallId> + '_ {
    messages.iter().flat_map(|m| m.tool_calls().map(|c| c.id))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::{ContentPart, StopReason, Usage};

    fn call(id: CallId) -> Message {
        Message::Assistant {
            content: vec![ContentPart::ToolCall {
                id,
                name: "t".into(),
                arguments: json!({}),
                provider_data: None,
            }],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        }
    }

    #[test]
    fn complete_batches_pass_and_broken_ones_fail() {
        let (a, b) = (CallId::new_v7(), CallId::new_v7());
        let ok = vec![Message::user("hi"), call(a), Message::tool_result(a, "t", "r", false)];
        assert_eq!(validate_history(&ok), Ok(()));
        let missing = vec![Message::user("hi"), call(a), Message::user("again")];
        assert!(matches!(validate_history(&missing), Err(HistoryError::MissingResult { .. })));
        let wrong = vec![call(a), Message::tool_result(b, "t", "r", false)];
        assert!(matches!(validate_history(&wrong), Err(HistoryError::UnexpectedResult { .. })));
        let dup = vec![
            call(a),
            Message::tool_result(a, "t", "r", false),
            call(a),
            Message::tool_result(a, "t", "r", false),
        ];
        assert!(matches!(validate_history(&dup), Err(HistoryError::DuplicateCallId { .. })));
        let system = vec![Message::user("x"), Message::System { text: "s".into() }];
        assert!(matches!(validate_history(&system), Err(HistoryError::MisplacedSystem { index: 1 })));
    }
}
