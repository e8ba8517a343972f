use bosun_core::{Event, Mode, Session, ToolCategory};
use bosun_testing::{FnTool, Reply, ScriptedModel};
use serde_json::json;

#[tokio::test]
async fn one_tool_call_then_answer() {
    let model = ScriptedModel::new()
        .reply(Reply::new().text("Let me look.").tool_call("echo", json!({"x": 1})))
        .reply(Reply::new().text("Do").text("ne."));
    let echo = FnTool::echo("echo");
    let mut session = Session::builder(model.clone()).tool(echo.clone()).mode(Mode::Propose).build().await.unwrap();
    let mut events = Vec::new();
    let outcome = session.run("hi", &mut events).await.unwrap();
    assert_eq!(outcome.answer, "Done.");
    assert_eq!(echo.calls(), vec![json!({"x": 1})]);
    assert_eq!(session.history().len(), 4);
    assert!(matches!(events.last(), Some(Event::TurnEnd { .. })));
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages.len(), 3);
    let _ = ToolCategory::Read;
}
