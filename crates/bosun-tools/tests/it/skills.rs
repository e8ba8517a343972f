//! Agent Skills on real folders: discovery order and precedence, broken
//! front matter as warnings, the `skill` tool, a skill's files through
//! `read_file` at `skill://NAME/PATH`, and the no-symlink, no-`..` rules of
//! invariant 16 holding for skill folders as for the workspace.
//!
//! ```text
//! base/
//!   outside/SKILL.md, outside/secret.txt   (never readable)
//!   user/NAME/SKILL.md                     the user's skills
//!   ws/.bosun/skills/  ws/.claude/skills/  ws/.agents/skills/
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_core::message::concat_text;
use bosun_core::{CallId, Tool, ToolContext};
use bosun_tools::skills::{self, Discovery, SkillOrigin, SkillTool};
use bosun_tools::{Workspace, WorkspaceTools};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const SECRET: &str = "OUTSIDE SECRET 1729";

struct Fixture {
    base: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        for dir in ["outside", "user", "ws"] {
            fs::create_dir(base.path().join(dir)).unwrap();
        }
        fs::write(base.path().join("outside/secret.txt"), SECRET).unwrap();
        fs::write(
            base.path().join("outside/SKILL.md"),
            format!("---\nname: outside\ndescription: {SECRET}\n---\n{SECRET}\n"),
        )
        .unwrap();
        Self { base }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.base.path().join(rel)
    }

    /// Writes `dir/NAME/SKILL.md` (dir relative to the base) with `description` and `body`.
    fn skill(&self, dir: &str, name: &str, description: &str, body: &str) -> PathBuf {
        let folder = self.path(dir).join(name);
        fs::create_dir_all(&folder).unwrap();
        fs::write(
            folder.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\n{body}"),
        )
        .unwrap();
        folder
    }

    fn workspace(&self) -> Workspace {
        Workspace::open(self.path("ws")).unwrap()
    }

    fn discover(&self) -> Discovery {
        skills::discover(Some(&self.workspace()), &[self.path("user")])
    }
}

async fn call(tool: &dyn Tool, arguments: Value) -> (String, bool) {
    let output =
        tool.execute(arguments, ToolContext::detached(CallId::new_v7(), CancellationToken::new())).await;
    (concat_text(&output.content), output.is_error)
}

fn tool<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a dyn Tool {
    tools.iter().find(|t| t.definition().name == name).map(|t| t.as_ref()).expect("the tool is offered")
}

#[test]
fn invariant_20_the_users_skills_win_then_bosun_then_claude_then_agents() {
    let fx = Fixture::new();
    fx.skill("user", "deploy", "the user's deploy", "");
    fx.skill("ws/.agents/skills", "deploy", "the repository's deploy", "");
    fx.skill("ws/.claude/skills", "review", "claude review", "");
    fx.skill("ws/.bosun/skills", "review", "bosun review", "");
    fx.skill("ws/.agents/skills", "lint", "agents lint", "");
    fx.skill("ws/.claude/skills", "lint", "claude lint", "");
    fx.skill("ws/.agents/skills", "alpha", "only in agents", "");
    let found = fx.discover();
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    let got: Vec<(&str, &str, SkillOrigin)> =
        found.skills.iter().map(|s| (s.name(), s.description(), s.origin())).collect();
    assert_eq!(
        got,
        [
            ("alpha", "only in agents", SkillOrigin::Project(".agents/skills")),
            ("deploy", "the user's deploy", SkillOrigin::User),
            ("lint", "claude lint", SkillOrigin::Project(".claude/skills")),
            ("review", "bosun review", SkillOrigin::Project(".bosun/skills")),
        ]
    );
    let mut shadowed: Vec<(String, SkillOrigin)> = found
        .shadowed
        .iter()
        .map(|(path, by)| (path.strip_prefix(fx.path("ws")).unwrap().display().to_string(), *by))
        .collect();
    shadowed.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        shadowed,
        [
            (".agents/skills/deploy".to_owned(), SkillOrigin::User),
            (".agents/skills/lint".to_owned(), SkillOrigin::Project(".claude/skills")),
            (".claude/skills/review".to_owned(), SkillOrigin::Project(".bosun/skills")),
        ]
    );
    // The prompt lists each winner once, in name order.
    let section = found.skills.prompt_section().unwrap();
    let at = |needle: &str| section.find(needle).unwrap_or_else(|| panic!("{needle} in {section}"));
    assert!(at("- alpha: only in agents") < at("- deploy: the user's deploy"));
    assert!(at("- deploy:") < at("- lint: claude lint") && at("- lint:") < at("- review: bosun review"));
    assert!(!section.contains("repository's deploy") && !section.contains("claude review"));
    // Without the project, only the user's.
    let user_only = skills::discover(None, &[fx.path("user")]);
    assert_eq!(user_only.skills.iter().map(|s| s.name()).collect::<Vec<_>>(), ["deploy"]);
}

#[test]
fn broken_front_matter_is_a_warning_naming_the_file_and_the_rest_still_load() {
    let fx = Fixture::new();
    fx.skill("ws/.claude/skills", "good", "works", "");
    let bad = fx.path("ws/.claude/skills/bad");
    fs::create_dir_all(&bad).unwrap();
    fs::write(bad.join("SKILL.md"), "---\nname: bad\ndescription: [unclosed\n---\n").unwrap();
    let unnamed = fx.path("ws/.bosun/skills/unnamed");
    fs::create_dir_all(&unnamed).unwrap();
    fs::write(unnamed.join("SKILL.md"), "---\ndescription: no name\n---\n").unwrap();
    fx.skill("ws/.agents/skills", "Upper", "a name the rules refuse", "");
    fs::create_dir_all(fx.path("ws/.agents/skills/empty")).unwrap();
    fs::write(fx.path("ws/.agents/skills/README.md"), "not a skill").unwrap();
    let found = fx.discover();
    assert_eq!(found.skills.iter().map(|s| s.name()).collect::<Vec<_>>(), ["good"]);
    let warnings = found.warnings.join("\n");
    for (file, why) in [
        (bad.join("SKILL.md"), "not valid YAML"),
        (unnamed.join("SKILL.md"), "no `name`"),
        (fx.path("ws/.agents/skills/Upper/SKILL.md"), "only a-z"),
        (fx.path("ws/.agents/skills/empty"), "no SKILL.md"),
    ] {
        let line = found
            .warnings
            .iter()
            .find(|w| w.starts_with(&format!("{}:", file.display())))
            .unwrap_or_else(|| panic!("a warning naming {}: {warnings}", file.display()));
        assert!(line.contains(why), "{line}");
    }
    assert_eq!(found.warnings.len(), 4, "{warnings}");
}

#[tokio::test]
async fn the_skill_tool_returns_the_body_and_lists_the_files() {
    let fx = Fixture::new();
    let folder =
        fx.skill("ws/.claude/skills", "pdf-forms", "fill forms", "# Filling forms\nRun scripts/fill.py.\n");
    fs::create_dir(folder.join("scripts")).unwrap();
    fs::write(folder.join("scripts/fill.py"), "print('fill')\n").unwrap();
    symlink(fx.path("outside/secret.txt"), folder.join("leak.txt")).unwrap();
    let user = fx.skill("user", "notes", "the user's notes", "Keep notes short.\n");
    let found = fx.discover();
    let tool = SkillTool::new(found.skills.clone());
    assert_eq!(tool.category(), bosun_core::ToolCategory::Read);

    let (text, is_error) = call(&tool, json!({"name": "pdf-forms"})).await;
    assert!(!is_error, "{text}");
    assert!(text.contains("# Filling forms\nRun scripts/fill.py."), "{text}");
    assert!(!text.contains("description: fill forms"), "the front matter is not repeated: {text}");
    assert!(text.contains("`.claude/skills/pdf-forms` in the workspace"), "{text}");
    for listed in ["skill://pdf-forms/SKILL.md\n", "skill://pdf-forms/scripts/fill.py\n"] {
        assert!(text.contains(listed), "{listed} in {text}");
    }
    assert!(text.contains("skill://pdf-forms/leak.txt (a symlink: not followed"), "{text}");
    assert!(!text.contains(SECRET), "{text}");

    let (text, _) = call(&tool, json!({"name": "notes"})).await;
    assert!(text.contains("Keep notes short.") && text.contains("outside the workspace"), "{text}");
    assert!(text.contains(&user.display().to_string()), "{text}");

    let (text, is_error) = call(&tool, json!({"name": "nope"})).await;
    assert!(
        is_error && text.contains("no skill is named `nope`") && text.contains("notes, pdf-forms"),
        "{text}"
    );
}

#[tokio::test]
async fn long_instructions_are_cut_with_where_to_read_on() {
    let fx = Fixture::new();
    let body: String = (1..=4000).map(|i| format!("step {i} of a long procedure\n")).collect();
    fx.skill("ws/.bosun/skills", "long", "long one", &body);
    let tool = SkillTool::new(fx.discover().skills);
    let (text, is_error) = call(&tool, json!({"name": "long"})).await;
    assert!(!is_error);
    assert!(text.len() < skills::MAX_BODY_BYTES + 4096, "{} bytes", text.len());
    let note = text.lines().find(|l| l.starts_with("[instructions cut at 32 KiB")).expect("the cut is said");
    // The note's offset is the first line not shown (the front matter is 4 lines).
    let offset: usize = note.rsplit("offset ").next().unwrap().trim_end_matches(']').parse().unwrap();
    let last_shown = text.lines().rfind(|l| l.starts_with("step ")).unwrap();
    assert_eq!(last_shown, format!("step {} of a long procedure", offset - 5));
}

#[tokio::test]
async fn read_file_reads_a_skills_files_and_the_workspace_as_before() {
    let fx = Fixture::new();
    let folder = fx.skill("ws/.claude/skills", "pdf-forms", "fill forms", "body\n");
    fs::create_dir(folder.join("scripts")).unwrap();
    fs::write(folder.join("scripts/fill.py"), "print('fill')\n").unwrap();
    let user = fx.skill("user", "notes", "notes", "user body\n");
    fs::write(user.join("template.md"), "user template\n").unwrap();
    fs::write(fx.path("ws/main.rs"), "fn main() {}\n").unwrap();
    let tools = WorkspaceTools::new(fx.workspace()).skills(fx.discover().skills).build();
    let read = tool(&tools, "read_file");
    assert!(tools.iter().any(|t| t.definition().name == "skill"));

    let (text, is_error) = call(read, json!({"path": "skill://pdf-forms/scripts/fill.py"})).await;
    assert!(!is_error && text.contains("print('fill')"), "{text}");
    let (text, _) = call(read, json!({"path": "skill://notes/template.md"})).await;
    assert!(text.contains("user template"), "a user skill's file, outside the workspace: {text}");
    let (text, _) = call(read, json!({"path": "skill://notes/"})).await;
    assert!(text.contains("user body"), "the folder alone is its SKILL.md: {text}");
    let (text, _) = call(read, json!({"path": "main.rs"})).await;
    assert!(text.contains("fn main() {}"), "{text}");
    let (text, is_error) = call(read, json!({"path": "skill://pdf-forms/missing.md"})).await;
    assert!(is_error && text.starts_with("skill `pdf-forms`: ") && text.contains("does not exist"), "{text}");
    let (text, is_error) = call(read, json!({"path": "skill://ghost/SKILL.md"})).await;
    assert!(is_error && text.contains("no skill is named `ghost`"), "{text}");
}

#[tokio::test]
async fn no_skills_no_skill_tool_and_read_file_stays_the_workspace_tool() {
    let fx = Fixture::new();
    let plain = WorkspaceTools::new(fx.workspace()).build();
    let with_none = WorkspaceTools::new(fx.workspace()).skills(fx.discover().skills).build();
    let names = |tools: &[Arc<dyn Tool>]| tools.iter().map(|t| t.definition().clone()).collect::<Vec<_>>();
    assert_eq!(names(&plain), names(&with_none));
    assert!(!with_none.iter().any(|t| t.definition().name == "skill"));
    fs::create_dir_all(fx.path("ws/skill:/x")).unwrap();
    fs::write(fx.path("ws/skill:/x/y.txt"), "a workspace file\n").unwrap();
    let (text, is_error) = call(tool(&with_none, "read_file"), json!({"path": "skill://x/y.txt"})).await;
    assert!(!is_error && text.contains("a workspace file"), "no skills: an ordinary path: {text}");

    // With skills, the definitions of the workspace tools do not change.
    fx.skill("ws/.bosun/skills", "one", "one", "");
    let with_one = WorkspaceTools::new(fx.workspace()).skills(fx.discover().skills).build();
    assert_eq!(names(&with_one)[..plain.len()], names(&plain)[..]);
    let brief = WorkspaceTools::new(fx.workspace()).skills(fx.discover().skills).build_brief();
    assert_eq!(brief.last().unwrap().definition().name, "skill");
    let (text, _) = call(tool(&brief, "read_file"), json!({"path": "skill://one/SKILL.md"})).await;
    assert!(text.contains("name: one"), "the brief read_file reads skills too: {text}");
}

#[tokio::test]
async fn invariant_16_symlinks_in_and_to_skill_folders_are_refused() {
    let fx = Fixture::new();
    let folder = fx.skill("ws/.claude/skills", "safe", "safe", "body\n");
    symlink(fx.path("outside/secret.txt"), folder.join("leak.txt")).unwrap();
    symlink(fx.path("outside"), folder.join("out")).unwrap();
    // A symlinked skill folder (project and user), and a symlinked SKILL.md.
    symlink(fx.path("outside"), fx.path("ws/.claude/skills/outside")).unwrap();
    symlink(fx.path("outside"), fx.path("user/outside")).unwrap();
    let linked = fx.path("ws/.bosun/skills/linked-md");
    fs::create_dir_all(&linked).unwrap();
    symlink(fx.path("outside/SKILL.md"), linked.join("SKILL.md")).unwrap();
    let found = fx.discover();
    assert_eq!(found.skills.iter().map(|s| s.name()).collect::<Vec<_>>(), ["safe"]);
    let warnings = found.warnings.join("\n");
    for file in [fx.path("ws/.claude/skills/outside"), fx.path("user/outside"), linked.join("SKILL.md")] {
        let line = found.warnings.iter().find(|w| w.starts_with(&format!("{}:", file.display())));
        assert!(line.is_some_and(|l| l.contains("symlink")), "{}: {warnings}", file.display());
    }
    assert!(!found.skills.prompt_section().unwrap().contains(SECRET));

    let tools = WorkspaceTools::new(fx.workspace()).skills(found.skills).build();
    let read = tool(&tools, "read_file");
    for path in ["skill://safe/leak.txt", "skill://safe/out/secret.txt", "skill://outside/secret.txt"] {
        let (text, is_error) = call(read, json!({"path": path})).await;
        assert!(is_error, "{path}: {text}");
        assert!(!text.contains(SECRET), "{path}: {text}");
        assert!(text.contains("symlink") || text.contains("no skill is named"), "{path}: {text}");
    }
}

#[tokio::test]
async fn invariant_16_parent_steps_and_absolute_paths_cannot_leave_a_skill_folder() {
    let fx = Fixture::new();
    fx.skill("ws/.claude/skills", "first", "first", "first body\n");
    fx.skill("ws/.claude/skills", "second", "second", "second body\n");
    fs::write(fx.path("ws/top.txt"), "workspace top\n").unwrap();
    let tools = WorkspaceTools::new(fx.workspace()).skills(fx.discover().skills).build();
    let read = tool(&tools, "read_file");
    for path in [
        "skill://first/../second/SKILL.md",
        "skill://first/../../../top.txt",
        "skill://first/scripts/../../second/SKILL.md",
        "skill://first//etc/passwd",
        "skill://first/../../../../outside/secret.txt",
    ] {
        let (text, is_error) = call(read, json!({"path": path})).await;
        assert!(is_error, "{path}: {text}");
        assert!(text.contains("leaves the skill's folder"), "{path}: {text}");
        assert!(!text.contains("second body") && !text.contains("workspace top") && !text.contains("root:"));
    }
    // Inner steps that stay inside are fine.
    let (text, is_error) = call(read, json!({"path": "skill://first/x/../SKILL.md"})).await;
    assert!(!is_error && text.contains("first body"), "{text}");
}

#[tokio::test]
async fn invariant_16_a_skill_folder_swapped_for_a_symlink_after_discovery_is_refused() {
    let fx = Fixture::new();
    let folder = fx.skill("ws/.claude/skills", "outside", "was here", "the real body\n");
    let found = fx.discover();
    let tools = WorkspaceTools::new(fx.workspace()).skills(found.skills.clone()).build();
    fs::rename(&folder, fx.path("moved")).unwrap();
    symlink(fx.path("outside"), &folder).unwrap();
    let (text, is_error) = call(&SkillTool::new(found.skills), json!({"name": "outside"})).await;
    assert!(is_error && text.contains("symlink") && !text.contains(SECRET), "{text}");
    let (text, is_error) =
        call(tool(&tools, "read_file"), json!({"path": "skill://outside/secret.txt"})).await;
    assert!(is_error && text.contains("symlink") && !text.contains(SECRET), "{text}");
}

#[test]
fn a_fifo_named_skill_md_does_not_block_discovery() {
    let fx = Fixture::new();
    let folder = fx.path("ws/.agents/skills/piped");
    fs::create_dir_all(&folder).unwrap();
    rustix::fs::mkfifoat(rustix::fs::CWD, folder.join("SKILL.md"), rustix::fs::Mode::from(0o644)).unwrap();
    let ws: &Path = &fx.path("ws");
    let ws = ws.to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(skills::discover(Some(&Workspace::open(ws).unwrap()), &[]).warnings);
    });
    let warnings = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("discovery returns");
    assert!(warnings.iter().any(|w| w.contains("SKILL.md") && w.contains("FIFO")), "{warnings:?}");
}
