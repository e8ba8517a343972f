//! An example agent session: a scripted model fixes a typo in a temporary
//! workspace by reading a file, editing it and running it.
//!
//! Run it with `scripts/demo` (or `cargo run -p bosun-tools --example demo`).
//! Every event of the turn is printed on stdout as one JSON line; approvals are
//! printed on stderr. The model is scripted (it plays the same four replies
//! whatever the tools return) until the local model lands; the tools are the
//! real workspace tools: descriptor-anchored file access, atomic writes, a
//! shell in its own process group with a cleared environment.

use std::error::Error;
use std::io::Write;
use std::process::ExitCode;

use bosun_core::permission::ApprovalFuture;
use bosun_core::{
    ApprovalDecision, ApprovalHandler, ApprovalRequest, Event, EventSink, InMemoryJournal, Mode, Session,
    SinkError, Usage,
};
use bosun_testing::{Reply, ScriptedModel};
use bosun_tools::{Workspace, WorkspaceTools};
use serde_json::json;

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("demo failed: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    // A workspace with one small script that has a typo.
    let workspace = tempfile::tempdir()?;
    let root = workspace.path().to_path_buf();
    std::fs::write(root.join("greet.sh"), "echo \"hello, wrold\"\n")?;

    // What the model will say, one reply per model round.
    let model = ScriptedModel::new()
        .reply(
            Reply::new()
                .reasoning("The greeting is misspelled somewhere. ")
                .reasoning("I should read the script before changing it.")
                .text("Let me look at greet.sh.")
                .tool_call("read_file", json!({ "path": "greet.sh" }))
                .usage(Usage::new(120, 24)),
        )
        .reply(
            Reply::new()
                .text("It says \"wrold\"; ")
                .text("fixing the typo.")
                .tool_call(
                    "edit_file",
                    json!({ "path": "greet.sh", "old_text": "wrold", "new_text": "world" }),
                )
                .usage(Usage::new(160, 30)),
        )
        .reply(
            Reply::new()
                .text("Now let me run it to check.")
                .tool_call("shell", json!({ "command": "bash greet.sh" }))
                .usage(Usage::new(200, 18)),
        )
        .reply(
            Reply::new()
                .text("Fixed the typo in greet.sh: ")
                .text("it now prints \"hello, world\".")
                .usage(Usage::new(230, 16)),
        );

    // Reads run on their own in `propose` mode; edits and commands ask the approver.
    let workspace_handle = Workspace::open(&root)?;
    let mut session = Session::builder(model)
        .system_prompt("You are a careful coding agent working in a small workspace.")
        .workspace(workspace_handle.identity().clone())
        .tools(WorkspaceTools::new(workspace_handle).build())
        .journal(InMemoryJournal::new())
        .mode(Mode::Propose)
        .approver(ApproveAndSay)
        .build()
        .await?;

    let mut sink = JsonLines::default();
    let outcome = session.run("The greeting in greet.sh is wrong. Please fix it.", &mut sink).await?;
    eprintln!("answer: {}", outcome.answer);

    // Check that the work was really done.
    let fixed = std::fs::read_to_string(root.join("greet.sh"))?;
    if fixed != "echo \"hello, world\"\n" {
        return Err(format!("greet.sh was not fixed; it reads {fixed:?}").into());
    }
    let shell_output = sink.events.iter().find_map(|event| match event {
        Event::ToolEnd { name, is_error: false, output, .. } if name == "shell" => Some(output.as_str()),
        _ => None,
    });
    match shell_output {
        Some(output) if output.contains("hello, world") => Ok(()),
        Some(output) => Err(format!("the shell output lacks \"hello, world\": {output:?}").into()),
        None => Err("the shell tool did not run successfully".into()),
    }
}

/// Prints each event as one JSON line on stdout and keeps it for the checks.
/// If stdout fails (a closed pipe), the sink fails and the session cancels the turn.
#[derive(Debug, Default)]
struct JsonLines {
    events: Vec<Event>,
}

impl EventSink for JsonLines {
    fn emit(&mut self, event: Event) -> Result<(), SinkError> {
        let line = serde_json::to_string(&event).map_err(SinkError::new)?;
        writeln!(std::io::stdout().lock(), "{line}").map_err(SinkError::new)?;
        self.events.push(event);
        Ok(())
    }
}

/// Approves every call it is asked about, saying so on stderr. A real
/// program would ask a person here.
#[derive(Debug)]
struct ApproveAndSay;

impl ApprovalHandler for ApproveAndSay {
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        eprintln!("approve: {} {}", request.tool, request.arguments);
        Box::pin(async { ApprovalDecision::ApproveOnce })
    }
}
