//! The model's plan: the `update_plan` tool, the [`Plan`] it sets, and how a
//! session finds the plan in its history.
//!
//! The plan is the arguments of the last successful `update_plan` call, so
//! the journal keeps it with no record of its own and a resumed session
//! knows it. The session announces each accepted plan as
//! [`Event::PlanUpdated`](crate::Event::PlanUpdated).

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::message::{ContentPart, Message};
use crate::tool::{Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput};

/// The plan tool's name.
pub const UPDATE_PLAN: &str = "update_plan";

/// The most steps a plan holds.
pub const MAX_STEPS: usize = 50;

/// The longest step, in characters.
pub const MAX_STEP_CHARS: usize = 400;

/// The longest explanation, in characters.
pub const MAX_EXPLANATION_CHARS: usize = 2_000;

/// What a turn's prompt carries in plan mode, as its last part: the model
/// learns the mode from its own context, whatever front end runs it.
pub const PLAN_MODE_NOTE: &str = "[plan mode] Only reading tools run in this mode; edits and commands are \
    refused. Look at what you need, then set out your plan (with `update_plan` when you have it, and a short \
    summary) and end your turn. The person approves the plan before anything changes.";

/// What a front end sends as the next prompt once the person approved the
/// plan and chose the mode to go on in.
pub const PLAN_APPROVED: &str = "The plan is approved. Carry it out now, step by step, keeping the plan \
    updated with `update_plan` as steps finish.";

/// Adds [`PLAN_MODE_NOTE`] to a turn's prompt, once.
pub(crate) fn note_plan_mode(content: &mut Vec<ContentPart>) {
    if !content.iter().any(is_plan_mode_note) {
        content.push(ContentPart::text(PLAN_MODE_NOTE));
    }
}

/// Whether `part` is the note plan mode added to a prompt: what a front end
/// leaves out when it shows or edits what the person typed.
pub fn is_plan_mode_note(part: &ContentPart) -> bool {
    matches!(part, ContentPart::Text { text } if text == PLAN_MODE_NOTE)
}

/// The text of a prompt as the person wrote it: its text parts without the
/// note plan mode added.
pub fn typed_text(message: &Message) -> String {
    let typed: Vec<ContentPart> =
        message.content().iter().filter(|p| !is_plan_mode_note(p)).cloned().collect();
    crate::message::concat_text(&typed)
}

/// Where a step stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on; at most one step at a time.
    InProgress,
    /// Done.
    Completed,
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PlanStep {
    /// What the step does, in a few words.
    pub step: String,
    /// Where it stands.
    pub status: StepStatus,
}

impl PlanStep {
    /// A step.
    pub fn new(step: impl Into<String>, status: StepStatus) -> Self {
        Self { step: step.into(), status }
    }
}

/// The model's plan as it last set it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Plan {
    /// Why the plan changed, when the model said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The steps, in order.
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// A plan of these steps.
    pub fn new(steps: Vec<PlanStep>) -> Self {
        Self { explanation: None, steps }
    }

    /// The plan `update_plan`'s arguments (`{explanation?, plan: [...]}`)
    /// set, or what is wrong with them, in words for the model.
    pub fn from_tool_arguments(arguments: &serde_json::Value) -> Result<Self, String> {
        #[derive(Deserialize)]
        struct Arguments {
            #[serde(default)]
            explanation: Option<String>,
            plan: Vec<PlanStep>,
        }
        let Arguments { explanation, plan: steps } = serde_json::from_value(arguments.clone())
            .map_err(|e| format!("the arguments of `{UPDATE_PLAN}` are not a plan: {e}"))?;
        let plan = Plan { explanation, steps };
        if plan.steps.len() > MAX_STEPS {
            return Err(format!("a plan holds at most {MAX_STEPS} steps; this one has {}", plan.steps.len()));
        }
        if let Some(long) = plan.steps.iter().find(|s| s.step.chars().count() > MAX_STEP_CHARS) {
            let start: String = long.step.chars().take(40).collect();
            return Err(format!(
                "step \"{start}…\" is longer than {MAX_STEP_CHARS} characters; say it shorter"
            ));
        }
        if plan.steps.iter().any(|s| s.step.trim().is_empty()) {
            return Err("a step is empty; name what each step does".to_owned());
        }
        if plan.explanation.as_ref().is_some_and(|e| e.chars().count() > MAX_EXPLANATION_CHARS) {
            return Err(format!("the explanation is longer than {MAX_EXPLANATION_CHARS} characters"));
        }
        let working = plan.steps.iter().filter(|s| s.status == StepStatus::InProgress).count();
        if working > 1 {
            return Err(format!(
                "{working} steps are in_progress; keep exactly one step in_progress at a time"
            ));
        }
        Ok(plan)
    }

    /// Steps done, and steps in all.
    pub fn progress(&self) -> (usize, usize) {
        let done = self.steps.iter().filter(|s| s.status == StepStatus::Completed).count();
        (done, self.steps.len())
    }

    /// The plan of the last successful `update_plan` call in `history`.
    pub fn latest(history: &[Message]) -> Option<Self> {
        let mut succeeded = std::collections::HashSet::new();
        for message in history.iter().rev() {
            match message {
                Message::ToolResult { call_id, tool_name, is_error: false, .. }
                    if tool_name == UPDATE_PLAN =>
                {
                    succeeded.insert(*call_id);
                }
                Message::Assistant { content, .. } => {
                    let found = content.iter().rev().find_map(|part| match part {
                        ContentPart::ToolCall { id, name, arguments, .. }
                            if name == UPDATE_PLAN && succeeded.contains(id) =>
                        {
                            Plan::from_tool_arguments(arguments).ok()
                        }
                        _ => None,
                    });
                    if found.is_some() {
                        return found;
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// The `update_plan` tool: the model keeps a short list of steps and their
/// state, which front ends show. It does nothing else, so it runs in every
/// mode.
#[derive(Debug)]
pub struct PlanTool {
    definition: ToolDefinition,
}

impl PlanTool {
    /// The tool.
    pub fn new() -> Self {
        let definition = ToolDefinition::new(
            UPDATE_PLAN,
            "Keep a short plan of the task's steps and where each stands, shown to the person. Use it for \
             work of several steps: send the whole plan each time (steps in order, each pending, \
             in_progress or completed, exactly one in_progress while you work), and update it as steps \
             finish. Skip it for a one-step task.",
            json!({
                "type": "object",
                "properties": {
                    "explanation": {"type": "string", "description": "Why the plan changed, in a sentence (optional)."},
                    "plan": {
                        "type": "array",
                        "description": "The steps, in order.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "step": {"type": "string", "description": "What the step does, in a few words."},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                            },
                            "required": ["step", "status"]
                        }
                    }
                },
                "required": ["plan"]
            }),
        );
        Self { definition }
    }
}

impl Default for PlanTool {
    fn default() -> Self {
        Self::new()
    }
}

impl Tool for PlanTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn execute<'a>(&'a self, arguments: serde_json::Value, _: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            match Plan::from_tool_arguments(&arguments) {
                Ok(plan) => {
                    let (done, all) = plan.progress();
                    ToolOutput::text(format!("Plan updated: {done} of {all} steps completed."))
                }
                Err(error) => ToolOutput::error(error),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::CallId;

    fn arguments(statuses: &[&str]) -> serde_json::Value {
        let steps: Vec<_> = statuses
            .iter()
            .enumerate()
            .map(|(i, s)| json!({"step": format!("step {i}"), "status": s}))
            .collect();
        json!({"plan": steps})
    }

    #[test]
    fn a_plan_keeps_one_step_in_progress() {
        let plan = Plan::from_tool_arguments(&arguments(&["completed", "in_progress", "pending"]));
        assert_eq!(plan.map(|p| p.progress()), Ok((1, 3)));
        let two = Plan::from_tool_arguments(&arguments(&["in_progress", "in_progress"]));
        assert!(two.is_err_and(|e| e.contains("exactly one step in_progress")));
    }

    #[test]
    fn a_plan_is_bounded() {
        let many: Vec<&str> = vec!["pending"; MAX_STEPS + 1];
        assert!(Plan::from_tool_arguments(&arguments(&many)).is_err_and(|e| e.contains("at most 50")));
        let long = json!({"plan": [{"step": "x".repeat(MAX_STEP_CHARS + 1), "status": "pending"}]});
        assert!(Plan::from_tool_arguments(&long).is_err_and(|e| e.contains("longer than")));
        let empty = json!({"plan": [{"step": "  ", "status": "pending"}]});
        assert!(Plan::from_tool_arguments(&empty).is_err());
        let unknown = json!({"plan": [{"step": "a", "status": "blocked"}]});
        assert!(Plan::from_tool_arguments(&unknown).is_err());
    }

    #[test]
    fn the_latest_plan_is_the_last_accepted_call() {
        let call = |id: CallId, statuses: &[&str]| Message::Assistant {
            content: vec![ContentPart::ToolCall {
                id,
                name: UPDATE_PLAN.into(),
                arguments: arguments(statuses),
                provider_data: None,
            }],
            usage: Default::default(),
            stop_reason: crate::message::StopReason::ToolUse,
        };
        let (first, second, refused) = (CallId::new_v7(), CallId::new_v7(), CallId::new_v7());
        let history = vec![
            Message::user("go"),
            call(first, &["in_progress", "pending"]),
            Message::tool_result(first, UPDATE_PLAN, "ok", false),
            call(second, &["completed", "in_progress"]),
            Message::tool_result(second, UPDATE_PLAN, "ok", false),
            call(refused, &["completed", "completed"]),
            Message::tool_result(refused, UPDATE_PLAN, "denied", true),
        ];
        let latest = Plan::latest(&history).map(|p| p.progress());
        assert_eq!(latest, Some((1, 2)), "the refused call does not count; the one before it does");
        assert_eq!(Plan::latest(&history[..1]), None);
    }
}
