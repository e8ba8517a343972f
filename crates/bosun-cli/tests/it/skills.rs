//! Agent Skills through the real binary against aimock (docs/skills.md):
//! the system prompt lists the skills (user first on a shared name), the
//! `skill` tool returns a skill's instructions, `read_file` reads a skill's
//! file at `skill://NAME/PATH` and refuses a symlink in it, broken and
//! symlinked skills are warnings on stderr naming them; an untrusted
//! project's skills are listed as its AGENTS.md is read, and
//! `project_docs = false` (a flag, or the project's own file) leaves them out.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::symlink;

use serde_json::{Value, json};

use crate::support;

use support::*;

const SECRET: &str = "OUTSIDE SECRET 4242";

/// Writes `ROOT/NAME/SKILL.md` under the sandbox.
fn skill(sandbox: &Sandbox, root: &str, name: &str, description: &str, body: &str) -> std::path::PathBuf {
    let folder = sandbox.path(root).join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n{body}"),
    )
    .unwrap();
    folder
}

/// The system prompt and the offered tool names of an OpenAI Chat request.
fn prompt_and_tools(request: &Value) -> (String, Vec<String>) {
    let body = &request["body"];
    let system = body["messages"][0]["content"].as_str().unwrap_or_default().to_owned();
    let tools = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    (system, tools)
}

#[test]
fn the_model_sees_the_skills_loads_one_and_reads_its_files() {
    let word = "use the skills";
    let script = vec![
        json!({"match": {"userMessage": word, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "skill", "arguments": {"name": "greet-fix"}}]}}),
        json!({"match": {"userMessage": word, "turnIndex": 1}, "response": {"toolCalls": [
            {"name": "read_file", "arguments": {"path": "skill://release-notes/template.md"}},
            {"name": "read_file", "arguments": {"path": "skill://greet-fix/leak.txt"}},
            {"name": "read_file", "arguments": {"path": "skill://greet-fix/../../../../outside/secret.txt"}}]}}),
        json!({"match": {"userMessage": word, "turnIndex": 2}, "response": {"content": "done with skills"}}),
    ];
    let Some(mock) = Aimock::start(&fixtures(script)) else { return };
    let sandbox = task_sandbox();
    std::fs::create_dir(sandbox.path("outside")).unwrap();
    std::fs::write(sandbox.path("outside/secret.txt"), SECRET).unwrap();
    let user =
        skill(&sandbox, "xdg/bosun/skills", "release-notes", "the user's release notes", "User way.\n");
    std::fs::write(user.join("template.md"), "USER TEMPLATE 77\n").unwrap();
    skill(&sandbox, "ws/.bosun/skills", "release-notes", "the project's release notes", "Project way.\n");
    let greet =
        skill(&sandbox, "ws/.claude/skills", "greet-fix", "fix greetings", "GREET BODY: fix the typo.\n");
    symlink(sandbox.path("outside/secret.txt"), greet.join("leak.txt")).unwrap();
    let broken = sandbox.ws().join(".agents/skills/broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("SKILL.md"), "---\nname: broken\ndescription: never closed\n").unwrap();
    symlink(sandbox.path("outside"), sandbox.ws().join(".agents/skills/linked")).unwrap();

    let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
    cmd.args(["--json", word]);
    let out = run(cmd);
    out.expect_code(0);

    // Broken and symlinked skills: one warning line, naming each.
    let warning = out.stderr.lines().find(|l| l.contains("warning:")).unwrap_or_default();
    assert!(
        warning.contains(".agents/skills/broken/SKILL.md") && warning.contains("no closing"),
        "{}",
        out.stderr
    );
    assert!(warning.contains(".agents/skills/linked: a symlinked skill folder"), "{}", out.stderr);

    let journal = mock.journal();
    assert_eq!(journal.len(), 3, "{journal:#?}");
    let (system, tools) = prompt_and_tools(&journal[0]);
    assert!(tools.contains(&"skill".to_owned()) && tools.contains(&"read_file".to_owned()), "{tools:?}");
    let listed = system.split("<skills>").nth(1).expect("a skills section");
    let (greet_at, notes_at) = (listed.find("- greet-fix: fix greetings"), listed.find("- release-notes: "));
    assert!(greet_at.is_some() && greet_at < notes_at, "sorted by name: {listed}");
    assert!(listed.contains("- release-notes: the user's release notes"), "the user's wins: {listed}");
    assert!(!listed.contains("the project's release notes") && !listed.contains("broken"), "{listed}");
    assert!(!system.contains(SECRET));

    let second = journal[1]["body"]["messages"].to_string();
    assert!(second.contains("GREET BODY: fix the typo."), "the skill tool's result: {second}");
    assert!(second.contains("skill://greet-fix/SKILL.md"), "its files are listed: {second}");
    let third = journal[2]["body"]["messages"].to_string();
    assert!(third.contains("USER TEMPLATE 77"), "a user skill's file read: {third}");
    assert!(third.contains("`leak.txt` is a symlink"), "a symlink in a skill refused: {third}");
    assert!(third.contains("leaves the skill's folder"), "`..` out refused: {third}");
    assert!(!third.contains(SECRET), "{third}");

    let events = json_events(&out.stdout);
    // Parallel calls end in any order: each call's outcome, in call order.
    let ends = of_type(&events, "tool_end");
    let errors: Vec<bool> = of_type(&events, "tool_call_proposed")
        .iter()
        .map(|call| {
            ends.iter().find(|end| end["call_id"] == call["call_id"]).expect("ended")["is_error"] == true
        })
        .collect();
    assert_eq!(errors, [false, false, true, true], "{}", out.stdout);
}

#[test]
fn an_untrusted_projects_skills_are_listed_and_project_docs_off_leaves_them_out() {
    let script = vec![json!({"match": {"userMessage": "which skills"}, "response": {"content": "these"}})];
    let Some(mock) = Aimock::start(&fixtures(script)) else { return };
    let sandbox = task_sandbox();
    std::fs::create_dir(sandbox.ws().join(".git")).unwrap();
    skill(&sandbox, "ws/.claude/skills", "proj-skill", "from the repository", "");
    skill(&sandbox, "xdg/bosun/skills", "user-skill", "from the user", "");
    let ask = |extra: &[&str]| {
        let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
        cmd.args(extra).arg("which skills");
        run(cmd).expect_code(0);
        prompt_and_tools(mock.journal().last().unwrap())
    };

    // Untrusted (nothing recorded): listed, as the project's AGENTS.md is read.
    let (system, tools) = ask(&[]);
    assert!(system.contains("- proj-skill: from the repository"), "{system}");
    assert!(
        system.contains("- user-skill: from the user") && tools.contains(&"skill".to_owned()),
        "{system}"
    );

    // --no-project-docs: the user's skills only.
    let (system, tools) = ask(&["--no-project-docs"]);
    assert!(!system.contains("proj-skill") && system.contains("user-skill"), "{system}");
    assert!(tools.contains(&"skill".to_owned()), "{tools:?}");

    // The untrusted project's own file may narrow it off too.
    std::fs::create_dir(sandbox.ws().join(".bosun")).unwrap();
    std::fs::write(sandbox.ws().join(".bosun/config.toml"), "project_docs = false\n").unwrap();
    let (system, _) = ask(&[]);
    assert!(!system.contains("proj-skill") && system.contains("user-skill"), "{system}");

    // No skill left: no section and no tool.
    std::fs::remove_dir_all(sandbox.path("xdg/bosun/skills")).unwrap();
    let (system, tools) = ask(&[]);
    assert!(!system.contains("<skills>"), "{system}");
    assert!(!tools.contains(&"skill".to_owned()) && tools.contains(&"read_file".to_owned()), "{tools:?}");
}
