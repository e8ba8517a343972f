//! An example agent session: a scripted model fixes a typo in a temporary
//! workspace by reading a file, editing it and running it.
//!
//! Run it with `scripts/demo` (or `cargo run -p bosun-testing --example demo`).
//! Every event of the turn is printed on stdout as one JSON line; approvals are
//! printed on stderr. The model is scripted (it plays the same four replies
//! whatever the tools return) until the local model lands; the tools are real,
//! but deliberately small: the workspace tools of `bosun-tools` add what these
//! leave out (atomic writes, symlink-safe paths, a shell in its own process
//! group with a cleared environment, a timeout and an output cap).

use std::error::Error;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::{ExitCode, Stdio};

use bosun_core::permission::ApprovalFuture;
use bosun_core::{
    ApprovalDecision, ApprovalHandler, ApprovalRequest, Event, EventSink, Mode, Session, SinkError, Tool,
    ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput, Usage,
};
use bosun_testing::{Reply, ScriptedModel};
use serde_json::{Value, json};

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
                .tool_call("edit_file", json!({ "path": "greet.sh", "old": "wrold", "new": "world" }))
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
    let mut session = Session::builder(model)
        .system_prompt("You are a careful coding agent working in a small workspace.")
        .tool(ReadFile::new(&root))
        .tool(EditFile::new(&root))
        .tool(Shell::new(&root))
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
        let line = serde_json::to_string(&event).map_err(|e| SinkError(e.to_string()))?;
        writeln!(std::io::stdout().lock(), "{line}").map_err(|e| SinkError(e.to_string()))?;
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

/// Resolves a relative path inside the workspace; refuses absolute paths and `..`.
fn resolve(root: &Path, path: &str) -> Result<PathBuf, String> {
    let relative = Path::new(path);
    if relative.components().all(|c| matches!(c, Component::Normal(_))) {
        Ok(root.join(relative))
    } else {
        Err(format!("`{path}` must be a relative path inside the workspace, without `..`"))
    }
}

/// A string argument; the session has already validated the arguments against
/// the tool's schema, so a missing one here is only a fallback.
fn arg<'a>(arguments: &'a Value, name: &str) -> &'a str {
    arguments.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// `read_file`: the text of a file.
#[derive(Debug)]
struct ReadFile {
    root: PathBuf,
    definition: ToolDefinition,
}

impl ReadFile {
    fn new(root: &Path) -> Self {
        let definition = ToolDefinition::new(
            "read_file",
            "Reads a text file of the workspace.",
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "Path relative to the workspace root." }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        );
        Self { root: root.to_path_buf(), definition }
    }
}

impl Tool for ReadFile {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn execute<'a>(&'a self, arguments: Value, _context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let name = arg(&arguments, "path");
            let path = match resolve(&self.root, name) {
                Ok(path) => path,
                Err(message) => return ToolOutput::error(message),
            };
            match tokio::fs::read_to_string(&path).await {
                Ok(text) => ToolOutput::text(text),
                Err(error) => ToolOutput::error(format!("cannot read {name}: {error}")),
            }
        })
    }
}

/// `edit_file`: replaces one exact occurrence of `old` with `new`.
#[derive(Debug)]
struct EditFile {
    root: PathBuf,
    definition: ToolDefinition,
}

impl EditFile {
    fn new(root: &Path) -> Self {
        let definition = ToolDefinition::new(
            "edit_file",
            "Replaces text in a file. `old` must occur exactly once in the file.",
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "Path relative to the workspace root." },
                    "old": { "type": "string", "minLength": 1, "description": "The exact text to replace." },
                    "new": { "type": "string", "description": "The replacement text." }
                },
                "required": ["path", "old", "new"],
                "additionalProperties": false
            }),
        );
        Self { root: root.to_path_buf(), definition }
    }
}

impl Tool for EditFile {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Write
    }

    fn execute<'a>(&'a self, arguments: Value, _context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let (name, old, new) = (arg(&arguments, "path"), arg(&arguments, "old"), arg(&arguments, "new"));
            let path = match resolve(&self.root, name) {
                Ok(path) => path,
                Err(message) => return ToolOutput::error(message),
            };
            let text = match tokio::fs::read_to_string(&path).await {
                Ok(text) => text,
                Err(error) => return ToolOutput::error(format!("cannot read {name}: {error}")),
            };
            match text.matches(old).count() {
                1 => {}
                0 => return ToolOutput::error(format!("`{old}` does not occur in the file")),
                n => return ToolOutput::error(format!("`{old}` occurs {n} times; give more context")),
            }
            match tokio::fs::write(&path, text.replacen(old, new, 1)).await {
                Ok(()) => ToolOutput::text(format!("replaced 1 occurrence in {name}")),
                Err(error) => ToolOutput::error(format!("cannot write {name}: {error}")),
            }
        })
    }
}

/// `shell`: runs `bash -c COMMAND` in the workspace.
#[derive(Debug)]
struct Shell {
    root: PathBuf,
    definition: ToolDefinition,
}

impl Shell {
    fn new(root: &Path) -> Self {
        let definition = ToolDefinition::new(
            "shell",
            "Runs a bash command in the workspace root and returns its exit status and output.",
            json!({
                "type": "object",
                "properties": {
                    "command": { "type": "string", "minLength": 1, "description": "The command line." }
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        );
        Self { root: root.to_path_buf(), definition }
    }
}

impl Tool for Shell {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Execute
    }

    fn execute<'a>(&'a self, arguments: Value, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let child = tokio::process::Command::new("bash")
                .arg("-c")
                .arg(arg(&arguments, "command"))
                .current_dir(&self.root)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true) // dropping the call kills the process
                .spawn();
            let child = match child {
                Ok(child) => child,
                Err(error) => return ToolOutput::error(format!("cannot start bash: {error}")),
            };
            // The token fires when the turn is cancelled or the call times out.
            let output = tokio::select! {
                output = child.wait_with_output() => output,
                () = context.cancel.cancelled() => return ToolOutput::error("cancelled; the command was killed"),
            };
            match output {
                Ok(output) => {
                    let text = format!(
                        "exit status: {}\n{}{}",
                        output.status.code().map_or_else(|| "killed".to_owned(), |code| code.to_string()),
                        String::from_utf8_lossy(&output.stdout),
                        String::from_utf8_lossy(&output.stderr),
                    );
                    if output.status.success() { ToolOutput::text(text) } else { ToolOutput::error(text) }
                }
                Err(error) => ToolOutput::error(format!("the command failed: {error}")),
            }
        })
    }
}
