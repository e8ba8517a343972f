//! bosun's events as ACP `session/update` notifications: text and reasoning
//! as message and thought chunks, tool calls with their kind, locations,
//! status and (for file edits) a diff, the plan as plan entries. A stored
//! session's history is replayed through the same shapes.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    Content, ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionNotification, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use bosun_core::plan::StepStatus;
use bosun_core::{CallId, ContentPart, Event, EventSink, Message, SinkError};
use serde_json::Value;

/// How the editor shows a tool: by bosun's tool names, an MCP server's tool
/// (`mcp__SERVER__TOOL`) as `other`.
pub(crate) fn kind(tool: &str) -> ToolKind {
    match tool {
        "read_file" | "list_files" | "read_artifact" => ToolKind::Read,
        "write_file" | "edit_file" | "apply_patch" => ToolKind::Edit,
        "search" => ToolKind::Search,
        "shell" | "test_runner" => ToolKind::Execute,
        "web_fetch" | "web_search" => ToolKind::Fetch,
        bosun_core::plan::UPDATE_PLAN => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// The paths a call names (its `path` argument, or each of `paths`), made
/// absolute against the workspace so the editor can open them.
fn locations(arguments: &Value, workspace: &Path) -> Vec<ToolCallLocation> {
    let one = arguments.get("path").and_then(Value::as_str).map(str::to_owned);
    let many =
        arguments.get("paths").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
    one.into_iter()
        .chain(many.map(str::to_owned))
        .map(|path| ToolCallLocation::new(absolute(workspace, &path)))
        .collect()
}

fn absolute(workspace: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() { path.to_owned() } else { workspace.join(path) }
}

/// A file edit's change as a diff: `write_file`'s new content, `edit_file`'s
/// replaced text and its replacement.
fn diff(tool: &str, arguments: &Value, workspace: &Path) -> Option<ToolCallContent> {
    let path = absolute(workspace, arguments.get("path").and_then(Value::as_str)?);
    let text = |name| arguments.get(name).and_then(Value::as_str).map(str::to_owned);
    match tool {
        "write_file" => Some(ToolCallContent::Diff(Diff::new(path, text("content")?))),
        "edit_file" => {
            Some(ToolCallContent::Diff(Diff::new(path, text("new_text")?).old_text(text("old_text"))))
        }
        _ => None,
    }
}

fn title(tool: &str, arguments: &Value) -> String {
    let detail = ["path", "command", "pattern", "url", "query"]
        .iter()
        .find_map(|key| arguments.get(*key).and_then(Value::as_str));
    match detail {
        Some(detail) => format!("{tool}: {}", detail.chars().take(120).collect::<String>()),
        None => tool.to_owned(),
    }
}

/// What the editor is told about a proposed call.
pub(crate) fn tool_call_fields(tool: &str, arguments: &Value, workspace: &Path) -> ToolCallUpdateFields {
    ToolCallUpdateFields::new()
        .title(title(tool, arguments))
        .kind(kind(tool))
        .locations(locations(arguments, workspace))
        .raw_input(arguments.clone())
        .content(diff(tool, arguments, workspace).map(|d| vec![d]))
}

fn proposed(id: &CallId, tool: &str, arguments: &Value, workspace: &Path) -> ToolCall {
    ToolCall::new(id.to_string(), title(tool, arguments))
        .kind(kind(tool))
        .status(ToolCallStatus::Pending)
        .locations(locations(arguments, workspace))
        .raw_input(arguments.clone())
        .content(diff(tool, arguments, workspace).into_iter().collect())
}

fn text_block(text: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

fn finished(id: &CallId, is_error: bool, output: &str) -> ToolCallUpdate {
    let status = if is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
    let mut fields = ToolCallUpdateFields::new().status(status);
    if !output.is_empty() {
        fields = fields.content(vec![ToolCallContent::Content(Content::new(text_block(output)))]);
    }
    ToolCallUpdate::new(id.to_string(), fields)
}

fn plan(plan: &bosun_core::plan::Plan) -> Plan {
    Plan::new(
        plan.steps
            .iter()
            .map(|step| {
                let status = match step.status {
                    StepStatus::Pending => PlanEntryStatus::Pending,
                    StepStatus::InProgress => PlanEntryStatus::InProgress,
                    StepStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(step.step.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// The update an event makes, if the editor shows it.
fn update(event: Event, workspace: &Path, open: &mut HashSet<CallId>) -> Option<SessionUpdate> {
    Some(match event {
        Event::TextDelta { text } => SessionUpdate::AgentMessageChunk(ContentChunk::new(text_block(text))),
        Event::ReasoningDelta { text } => {
            SessionUpdate::AgentThoughtChunk(ContentChunk::new(text_block(text)))
        }
        Event::ToolCallProposed { call_id, name, arguments } => {
            open.insert(call_id);
            SessionUpdate::ToolCall(proposed(&call_id, &name, &arguments, workspace))
        }
        Event::ToolStart { call_id, .. } => SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_string(),
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        )),
        Event::ToolProgress { call_id, message } => SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_string(),
            ToolCallUpdateFields::new().raw_output(serde_json::json!({ "progress": message })),
        )),
        // A running command's newest lines, shown in place as it runs.
        Event::ToolOutput { call_id, tail, lines } => SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_string(),
            ToolCallUpdateFields::new()
                .content(vec![ToolCallContent::Content(Content::new(text_block(tail.join("\n"))))])
                .raw_output(serde_json::json!({ "lines": lines })),
        )),
        Event::ToolEnd { call_id, is_error, output, .. } => {
            open.remove(&call_id);
            SessionUpdate::ToolCallUpdate(finished(&call_id, is_error, &output))
        }
        Event::PlanUpdated { plan: steps, .. } => SessionUpdate::Plan(plan(&steps)),
        _ => return None,
    })
}

/// The sink a turn's events go through: each one the editor shows is sent
/// as a `session/update` at once.
pub(crate) struct UpdateSink {
    connection: ConnectionTo<Client>,
    session: String,
    workspace: PathBuf,
    /// Calls proposed and not yet ended (a cancelled turn's are marked
    /// failed at its end, so the editor shows no call still running).
    open: HashSet<CallId>,
}

impl UpdateSink {
    pub(crate) fn new(connection: ConnectionTo<Client>, session: String, workspace: PathBuf) -> Self {
        Self { connection, session, workspace, open: HashSet::new() }
    }

    fn send(&self, update: SessionUpdate) -> Result<(), SinkError> {
        self.connection
            .send_notification(SessionNotification::new(self.session.clone(), update))
            .map_err(|e| SinkError::new(e.to_string()))
    }

    /// Marks the calls that never ended (a cancelled or failed turn) as
    /// failed.
    pub(crate) fn close_open_calls(&mut self) {
        for id in std::mem::take(&mut self.open) {
            let _ = self.send(SessionUpdate::ToolCallUpdate(finished(&id, true, "")));
        }
    }

    /// Replays a stored history: the person's messages, the answers, the
    /// reasoning, each call and its result.
    pub(crate) fn replay(&self, history: &[Message]) -> Result<(), SinkError> {
        let mut names: HashMap<CallId, String> = HashMap::new();
        for message in history {
            match message {
                Message::User { content } => {
                    for part in content {
                        if let ContentPart::Text { text } = part {
                            self.send(SessionUpdate::UserMessageChunk(ContentChunk::new(text_block(
                                text.clone(),
                            ))))?;
                        }
                    }
                }
                Message::Assistant { content, .. } => {
                    for part in content {
                        let update = match part {
                            ContentPart::Text { text } => {
                                SessionUpdate::AgentMessageChunk(ContentChunk::new(text_block(text.clone())))
                            }
                            ContentPart::Reasoning { text, .. } => {
                                SessionUpdate::AgentThoughtChunk(ContentChunk::new(text_block(text.clone())))
                            }
                            ContentPart::ToolCall { id, name, arguments, .. } => {
                                names.insert(*id, name.clone());
                                SessionUpdate::ToolCall(proposed(id, name, arguments, &self.workspace))
                            }
                            _ => continue,
                        };
                        self.send(update)?;
                    }
                }
                Message::ToolResult { call_id, content, is_error, .. } => {
                    let output = bosun_core::message::concat_text(content);
                    self.send(SessionUpdate::ToolCallUpdate(finished(call_id, *is_error, &output)))?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl EventSink for UpdateSink {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        let workspace = self.workspace.clone();
        match update(event, &workspace, &mut self.open) {
            Some(update) => self.send(update),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_file_edit_is_an_edit_with_its_absolute_location_and_a_diff() {
        let args = json!({"path": "src/a.rs", "old_text": "x", "new_text": "y"});
        let call = proposed(&CallId::new_v7(), "edit_file", &args, Path::new("/ws"));
        assert_eq!(call.kind, ToolKind::Edit);
        assert_eq!(call.status, ToolCallStatus::Pending);
        assert_eq!(call.locations[0].path, Path::new("/ws/src/a.rs"));
        let ToolCallContent::Diff(diff) = &call.content[0] else { panic!("no diff: {:?}", call.content) };
        assert_eq!((diff.old_text.as_deref(), diff.new_text.as_str()), (Some("x"), "y"));
    }

    #[test]
    fn tools_map_to_kinds_by_name() {
        assert_eq!(kind("shell"), ToolKind::Execute);
        assert_eq!(kind("read_file"), ToolKind::Read);
        assert_eq!(kind("search"), ToolKind::Search);
        assert_eq!(kind("web_fetch"), ToolKind::Fetch);
        assert_eq!(kind("mcp__gh__issues"), ToolKind::Other);
    }
}

#[cfg(test)]
mod plan_tests {
    use super::*;
    use bosun_core::plan::PlanStep;

    #[test]
    fn a_plan_becomes_entries_with_their_status() {
        let steps = bosun_core::plan::Plan::new(vec![
            PlanStep::new("read", StepStatus::Completed),
            PlanStep::new("fix", StepStatus::InProgress),
            PlanStep::new("test", StepStatus::Pending),
        ]);
        let shown = plan(&steps);
        let got: Vec<_> = shown.entries.iter().map(|e| (e.content.as_str(), e.status.clone())).collect();
        assert_eq!(
            got,
            [
                ("read", PlanEntryStatus::Completed),
                ("fix", PlanEntryStatus::InProgress),
                ("test", PlanEntryStatus::Pending)
            ]
        );
    }
}
