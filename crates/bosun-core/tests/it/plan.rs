//! The model's plan (`update_plan`) and plan mode: updates announced as
//! events and kept in the journal; plan mode refuses every change, tells
//! the model so, and ends when the front end sets another mode.

use crate::common;

use bosun_core::plan::{PLAN_MODE_NOTE, Plan, PlanTool, StepStatus, UPDATE_PLAN};
use bosun_core::{ContentPart, Event, InMemoryJournal, Message, Mode, Session, ToolCategory};
use bosun_testing::{FnTool, RecordingApprover, ScriptedModel};
use common::TestResult;
use serde_json::json;

fn plan(statuses: &[&str]) -> serde_json::Value {
    let steps: Vec<_> = statuses
        .iter()
        .zip(["read the code", "fix the bug", "run the tests"])
        .map(|(status, step)| json!({"step": step, "status": status}))
        .collect();
    json!({"explanation": "as I go", "plan": steps})
}

fn plans(events: &[Event]) -> Vec<Vec<StepStatus>> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::PlanUpdated { plan, .. } => Some(plan.steps.iter().map(|s| s.status).collect()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn plan_updates_over_three_rounds_are_events_and_the_journal_keeps_the_last() -> TestResult {
    let model = ScriptedModel::new()
        .tool_call(UPDATE_PLAN, plan(&["in_progress", "pending", "pending"]))
        .tool_call(UPDATE_PLAN, plan(&["completed", "in_progress", "pending"]))
        .tool_call(UPDATE_PLAN, plan(&["in_progress", "in_progress", "pending"]))
        .tool_call(UPDATE_PLAN, plan(&["completed", "completed", "in_progress"]))
        .answer("done");
    let journal = InMemoryJournal::new();
    let mut session =
        Session::builder(model.clone()).tool(PlanTool::new()).journal(journal.clone()).build().await?;
    let mut events = Vec::new();
    session.run("fix it", &mut events).await?;
    use StepStatus::{Completed, InProgress, Pending};
    assert_eq!(
        plans(&events),
        [
            vec![InProgress, Pending, Pending],
            vec![Completed, InProgress, Pending],
            vec![Completed, Completed, InProgress]
        ],
        "the update with two steps in progress was refused and not announced"
    );
    let refused = model.requests()[3].messages.iter().rev().find(|m| m.is_error()).cloned();
    let said = refused.map(|m| format!("{m:?}")).unwrap_or_default();
    assert!(said.contains("keep exactly one step in_progress"), "the model is told why: {said}");
    let resumed = Session::builder(ScriptedModel::new()).tool(PlanTool::new()).resume(journal).await?;
    let kept = resumed.plan().map(|p| p.steps.iter().map(|s| s.status).collect::<Vec<_>>());
    assert_eq!(kept, Some(vec![Completed, Completed, InProgress]), "a resumed session knows its plan");
    assert_eq!(resumed.plan().and_then(|p| p.explanation), Some("as I go".to_owned()));
    Ok(())
}

#[tokio::test]
async fn plan_mode_refuses_changes_tells_the_model_and_ends_with_another_mode() -> TestResult {
    let write = FnTool::text("write_file", ToolCategory::Write, |_| "written".to_owned());
    let model = ScriptedModel::new()
        .tool_call("write_file", json!({"path": "a"}))
        .tool_call(UPDATE_PLAN, plan(&["pending", "pending", "pending"]))
        .answer("Here is the plan.")
        .tool_call("write_file", json!({"path": "a"}))
        .answer("Done.");
    let mut session = Session::builder(model.clone())
        .tool(PlanTool::new())
        .tool(write.clone())
        .approver(RecordingApprover::approve_all())
        .mode(Mode::Plan)
        .build()
        .await?;
    let mut events = Vec::new();
    session.run("plan the fix", &mut events).await?;
    assert!(write.calls().is_empty(), "plan mode ran a write even with an approver that allows all");
    let requests = model.requests();
    let prompt = &requests[0].messages[0];
    assert!(
        matches!(prompt, Message::User { content } if content.iter().any(bosun_core::plan::is_plan_mode_note)),
        "the model is told the mode: {prompt:?}"
    );
    let refusal = format!("{:?}", requests[1].messages.last());
    assert!(refusal.contains("plan mode"), "the refusal names plan mode: {refusal}");
    assert_eq!(session.plan().map(|p| p.steps.len()), Some(3));

    session.set_mode(Mode::Write);
    session.run(bosun_core::plan::PLAN_APPROVED, &mut events).await?;
    assert_eq!(write.calls().len(), 1, "the approved plan's mode runs the write");
    let approved = &model.requests()[3].messages;
    let last_prompt = approved.iter().rev().find(|m| matches!(m, Message::User { .. }));
    let noted = last_prompt.is_some_and(|m| match m {
        Message::User { content } => {
            content.iter().any(|p| matches!(p, ContentPart::Text { text } if text == PLAN_MODE_NOTE))
        }
        _ => false,
    });
    assert!(!noted, "outside plan mode the prompt carries no note");
    Ok(())
}

#[test]
fn the_plan_tool_runs_in_every_mode() {
    for mode in [Mode::ReadOnly, Mode::Plan, Mode::Propose, Mode::Write, Mode::Autonomous] {
        assert_eq!(
            bosun_core::permission::mode_default(mode, bosun_core::Tool::category(&PlanTool::new())),
            bosun_core::Permission::Allow,
            "{mode}"
        );
    }
    assert!(Plan::from_tool_arguments(&plan(&["completed"])).is_ok());
}
