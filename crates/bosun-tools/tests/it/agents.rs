//! Named agents on real files: Claude Code's form as its documentation
//! writes it, the YAML-list form, no `tools` key, precedence (user, then
//! `.bosun/agents`, then `.claude/agents`), broken files as warnings naming
//! them, the no-symlink and size bounds of invariant 16, unknown tool names,
//! and the bounded, ordered listing for `delegate_tasks`.
//!
//! ```text
//! base/
//!   outside/evil.md                       (never read)
//!   user/NAME.md                          the user's agents
//!   ws/.bosun/agents/  ws/.claude/agents/
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use bosun_tools::Workspace;
use bosun_tools::agents::{self, AgentDiscovery, AgentOrigin, MAX_FILE_BYTES, MAX_LISTED_AGENTS};

const SECRET: &str = "OUTSIDE SECRET 1729";

const CODE_REVIEWER: &str = "---
name: code-reviewer
description: Reviews code for quality, security, and maintainability. Use immediately after writing or modifying code.
tools: Read, Grep, Glob, Bash
model: sonnet
---
You are a senior code reviewer ensuring high standards of code quality and security.

When invoked:
1. Run git diff to see recent changes
2. Focus on modified files
3. Begin review immediately
";

struct Fixture {
    _base: tempfile::TempDir,
    /// The base's canonical path, as discovery shows paths.
    root: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        for dir in ["outside", "user", "ws/.bosun/agents", "ws/.claude/agents"] {
            fs::create_dir_all(base.path().join(dir)).unwrap();
        }
        fs::write(
            base.path().join("outside/evil.md"),
            format!("---\nname: evil\ndescription: {SECRET}\n---\n{SECRET}\n"),
        )
        .unwrap();
        let root = base.path().canonicalize().unwrap();
        Self { _base: base, root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes `rel` (relative to the base) with `text`; returns its path.
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    /// Writes the agent `NAME.md` in `dir` with a `name` and a `description`.
    fn agent(&self, dir: &str, name: &str, description: &str) -> PathBuf {
        self.write(
            &format!("{dir}/{name}.md"),
            &format!("---\nname: {name}\ndescription: {description}\n---\nYou are {name} from {dir}.\n"),
        )
    }

    fn discover(&self) -> AgentDiscovery {
        let workspace = Workspace::open(self.path("ws")).unwrap();
        agents::discover(Some(&workspace), &[self.path("user")])
    }
}

fn warned<'a>(found: &'a AgentDiscovery, needles: &[&str]) -> Option<&'a String> {
    found.warnings.iter().find(|w| needles.iter().all(|needle| w.contains(needle)))
}

#[test]
fn claude_codes_documented_form_is_read_with_its_tool_names_mapped() {
    let fx = Fixture::new();
    let file = fx.write("ws/.claude/agents/code-reviewer.md", CODE_REVIEWER);
    let found = fx.discover();
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    let agent = found.agents.get("code-reviewer").expect("found");
    assert_eq!(agent.name(), "code-reviewer");
    assert!(agent.description().starts_with("Reviews code for quality"), "{}", agent.description());
    let tools = agent.tools().expect("a list");
    assert_eq!(tools, ["read_file", "search", "list_files", "shell"]);
    assert!(agent.allows("shell") && !agent.allows("write_file") && !agent.allows("Bash"));
    assert_eq!(agent.model(), Some("sonnet"));
    assert!(agent.prompt().starts_with("You are a senior code reviewer"), "{}", agent.prompt());
    assert!(agent.prompt().ends_with("3. Begin review immediately"), "trimmed: {:?}", agent.prompt());
    assert_eq!(agent.origin(), AgentOrigin::Project(".claude/agents"));
    assert_eq!(agent.path(), file);
}

#[test]
fn a_yaml_list_of_tools_keeps_bosun_and_mcp_names_as_written() {
    let fx = Fixture::new();
    fx.write(
        "ws/.bosun/agents/fixer.md",
        "---\nname: fixer\ndescription: Fixes things.\ntools:\n  - Edit\n  - MultiEdit\n  - apply_patch\n  \
         - mcp__github__create_issue\nmodel: inherit\n---\nFix it.\n",
    );
    fx.write("ws/.bosun/agents/reader.md", "---\ndescription: Reads.\ntools: [Read, Grep]\n---\nRead.\n");
    let found = fx.discover();
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    let fixer = found.agents.get("fixer").unwrap();
    assert_eq!(fixer.tools().unwrap(), ["edit_file", "apply_patch", "mcp__github__create_issue"]);
    assert_eq!(fixer.model(), Some("inherit"));
    assert_eq!(found.agents.get("reader").unwrap().tools().unwrap(), ["read_file", "search"]);
}

#[test]
fn no_tools_key_is_the_parents_whole_authority_and_the_stem_names_it() {
    let fx = Fixture::new();
    fx.write("user/helper.md", "---\ndescription: >-\n  Helps\n  with anything.\n---\n\n  Be helpful.  \n\n");
    let found = fx.discover();
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    let agent = found.agents.get("helper").expect("named by its stem");
    assert_eq!(agent.tools(), None);
    assert!(agent.allows("shell") && agent.allows("mcp__any__tool"));
    assert_eq!(agent.model(), None);
    assert_eq!(agent.description(), "Helps with anything.");
    assert_eq!(agent.prompt(), "Be helpful.");
    assert_eq!(agent.origin(), AgentOrigin::User);
}

#[test]
fn invariant_20_the_users_agents_win_then_bosun_then_claude() {
    let fx = Fixture::new();
    fx.agent("user", "reviewer", "the user's");
    let bosun_reviewer = fx.agent("ws/.bosun/agents", "reviewer", "bosun's");
    let claude_reviewer = fx.agent("ws/.claude/agents", "reviewer", "claude's");
    fx.agent("ws/.bosun/agents", "tester", "bosun's");
    let claude_tester = fx.agent("ws/.claude/agents", "tester", "claude's");
    fx.agent("ws/.claude/agents", "planner", "claude's");
    let found = fx.discover();
    assert!(found.warnings.is_empty(), "shadowing across folders is not a warning: {:?}", found.warnings);
    let description = |name: &str| found.agents.get(name).unwrap().description().to_owned();
    assert_eq!(description("reviewer"), "the user's");
    assert_eq!(found.agents.get("reviewer").unwrap().prompt(), "You are reviewer from user.");
    assert_eq!(description("tester"), "bosun's");
    assert_eq!(description("planner"), "claude's");
    let mut shadowed = found.shadowed.clone();
    shadowed.sort_by(|a, b| a.0.cmp(&b.0));
    let mut expected = vec![
        (bosun_reviewer, AgentOrigin::User),
        (claude_reviewer, AgentOrigin::User),
        (claude_tester, AgentOrigin::Project(".bosun/agents")),
    ];
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(shadowed, expected);
    let names: Vec<&str> = found.agents.iter().map(|a| a.name()).collect();
    assert_eq!(names, ["planner", "reviewer", "tester"], "name order");
}

#[test]
fn the_front_matter_name_wins_over_the_stem_and_a_second_file_of_one_name_is_warned() {
    let fx = Fixture::new();
    fx.write("ws/.claude/agents/a-file.md", "---\nname: shared\ndescription: first\n---\n");
    let second = fx.write("ws/.claude/agents/b-file.md", "---\nname: shared\ndescription: second\n---\n");
    let found = fx.discover();
    assert_eq!(found.agents.len(), 1);
    assert_eq!(found.agents.get("shared").unwrap().description(), "first");
    assert!(found.agents.get("a-file").is_none());
    let shown = second.display().to_string();
    assert!(warned(&found, &[&shown, "a-file.md", "is kept"]).is_some(), "{:?}", found.warnings);
}

#[test]
fn broken_files_are_warnings_naming_them_and_the_rest_still_load() {
    let fx = Fixture::new();
    fx.agent("ws/.claude/agents", "good", "works");
    let cases = [
        ("plain.md", "You are an agent without front matter.\n", "does not open with a `---`"),
        ("unclosed.md", "---\nname: unclosed\ndescription: d\n", "no closing `---`"),
        ("yaml.md", "---\nname: [yaml\ndescription: d\n---\n", "not valid YAML"),
        ("nodesc.md", "---\nname: nodesc\n---\nbody\n", "no `description`"),
        ("blank.md", "---\nname: blank\ndescription: \"  \"\n---\n", "no `description`"),
        ("upper.md", "---\nname: Code-Reviewer\ndescription: d\n---\n", "`Code-Reviewer` is not 1 to 64"),
        ("Spaced Name.md", "---\ndescription: d\n---\n", "`Spaced Name` is not 1 to 64"),
        ("tools.md", "---\nname: tools\ndescription: d\ntools: {Read: yes}\n---\n", "not valid YAML"),
        ("utf.md", "---\nname: utf\ndescription: d\n---\n\u{0}", ""),
    ];
    for (file, text, _) in &cases {
        fx.write(&format!("ws/.claude/agents/{file}"), text);
    }
    fs::write(fx.path("ws/.claude/agents/latin1.md"), b"---\nname: latin1\ndescription: caf\xe9\n---\n")
        .unwrap();
    let found = fx.discover();
    assert_eq!(found.agents.iter().map(|a| a.name()).collect::<Vec<_>>(), ["good", "utf"]);
    let dir = fx.path("ws/.claude/agents");
    for (file, _, why) in cases.iter().filter(|(_, _, why)| !why.is_empty()) {
        let shown = dir.join(file).display().to_string();
        assert!(warned(&found, &[&shown, why, "skipped"]).is_some(), "{file}: {:?}", found.warnings);
    }
    let latin1 = dir.join("latin1.md").display().to_string();
    assert!(warned(&found, &[&latin1, "not UTF-8"]).is_some(), "{:?}", found.warnings);
    let broken = cases.iter().filter(|(_, _, why)| !why.is_empty()).count() + 1;
    assert_eq!(found.warnings.len(), broken, "one each: {:?}", found.warnings);
    assert!(found.warnings.iter().all(|w| !w.contains('\n')), "{:?}", found.warnings);
}

#[test]
fn invariant_16_symlinked_agent_files_and_folders_are_refused() {
    let fx = Fixture::new();
    symlink(fx.path("outside/evil.md"), fx.path("ws/.claude/agents/evil.md")).unwrap();
    symlink(fx.path("outside/evil.md"), fx.path("user/evil2.md")).unwrap();
    fs::remove_dir(fx.path("ws/.bosun/agents")).unwrap();
    symlink(fx.path("outside"), fx.path("ws/.bosun/agents")).unwrap();
    let found = fx.discover();
    assert!(found.agents.is_empty(), "{:?}", found.agents);
    let claude = fx.path("ws/.claude/agents/evil.md").display().to_string();
    let user = fx.path("user/evil2.md").display().to_string();
    let folder = fx.path("ws/.bosun/agents").display().to_string();
    for needle in [&claude, &user] {
        assert!(
            warned(&found, &[needle, "a symlink, not followed; skipped"]).is_some(),
            "{:?}",
            found.warnings
        );
    }
    assert!(warned(&found, &[&folder, "its agents not read"]).is_some(), "{:?}", found.warnings);
    assert!(found.warnings.iter().all(|w| !w.contains(SECRET)), "{:?}", found.warnings);
}

#[test]
fn invariant_16_a_symlinked_project_folder_on_the_way_is_refused() {
    let fx = Fixture::new();
    fs::remove_dir_all(fx.path("ws/.claude")).unwrap();
    fs::create_dir(fx.path("outside/agents")).unwrap();
    fs::copy(fx.path("outside/evil.md"), fx.path("outside/agents/evil.md")).unwrap();
    symlink(fx.path("outside"), fx.path("ws/.claude")).unwrap();
    let found = fx.discover();
    assert!(found.agents.is_empty(), "{:?}", found.agents);
    assert!(warned(&found, &[".claude", "a symlink, not followed"]).is_some(), "{:?}", found.warnings);
}

#[test]
fn a_file_over_the_size_bound_is_refused_and_one_at_it_is_read() {
    let fx = Fixture::new();
    let head = |name: &str| format!("---\nname: {name}\ndescription: d\n---\n");
    let body = |name: &str, extra: usize| "x".repeat(MAX_FILE_BYTES - head(name).len() + extra);
    fx.write("ws/.bosun/agents/fits.md", &format!("{}{}", head("fits"), body("fits", 0)));
    let big = fx.write("ws/.bosun/agents/big.md", &format!("{}{}", head("big"), body("big", 1)));
    let found = fx.discover();
    assert_eq!(found.agents.get("fits").unwrap().prompt(), body("fits", 0));
    assert!(found.agents.get("big").is_none());
    let shown = big.display().to_string();
    assert!(warned(&found, &[&shown, "over the 64 KiB limit", "skipped"]).is_some(), "{:?}", found.warnings);
}

#[test]
fn an_unknown_tool_name_is_kept_and_warned_about() {
    let fx = Fixture::new();
    let file = fx.write(
        "ws/.claude/agents/web.md",
        "---\nname: web\ndescription: Browses.\ntools: Read, WebFetch, WebSearch, read_file, mcp__fetch__get\n---\nGo.\n",
    );
    let found = fx.discover();
    let agent = found.agents.get("web").expect("still loaded");
    assert_eq!(agent.tools().unwrap(), ["read_file", "WebFetch", "WebSearch", "mcp__fetch__get"]);
    let shown = file.display().to_string();
    let warning = warned(&found, &[&shown, "`WebFetch`, `WebSearch`"]).expect("warned");
    assert!(!warning.contains("read_file") && !warning.contains("mcp__"), "{warning}");
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
}

#[test]
fn other_files_subfolders_and_missing_folders_are_passed_over_quietly() {
    let fx = Fixture::new();
    fx.write("ws/.claude/agents/README.txt", "not an agent");
    fx.write("ws/.claude/agents/notes.MD", "---\ndescription: d\n---\n");
    fx.agent("ws/.claude/agents/nested", "deep", "in a subfolder");
    fx.agent("ws/.claude/agents/.hidden", "hidden", "hidden");
    fs::create_dir(fx.path("ws/.claude/agents/folder.md")).unwrap();
    fx.write("ws/.claude/agents/.secret.md", "---\ndescription: d\n---\n");
    fs::remove_dir_all(fx.path("ws/.bosun")).unwrap();
    let found = fx.discover();
    assert!(found.agents.is_empty(), "{:?}", found.agents);
    assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    let workspace = Workspace::open(fx.path("ws")).unwrap();
    let none = agents::discover(Some(&workspace), &[PathBuf::from("/nonexistent/bosun/agents")]);
    assert!(none.agents.is_empty() && none.warnings.is_empty(), "{:?}", none.warnings);
    assert!(agents::discover(None, &[]).agents.tool_description_section().is_none());
}

#[test]
fn a_fifo_named_like_an_agent_does_not_block_discovery() {
    let fx = Fixture::new();
    let fifo = fx.path("ws/.claude/agents/pipe.md");
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from(0o644)).unwrap();
    fx.agent("ws/.claude/agents", "real", "works");
    let found = fx.discover();
    assert!(found.agents.get("real").is_some());
    assert!(warned(&found, &["pipe.md", "not a regular file"]).is_some(), "{:?}", found.warnings);
}

#[test]
fn a_folder_with_too_many_entries_is_read_up_to_the_bound() {
    let fx = Fixture::new();
    for i in 0..=agents::MAX_FILES_PER_DIR {
        fx.write(&format!("user/a{i:03}.md"), "---\ndescription: d\n---\n");
    }
    let found = fx.discover();
    assert_eq!(found.agents.len(), agents::MAX_FILES_PER_DIR);
    assert!(warned(&found, &["more than 200 entries"]).is_some(), "{:?}", found.warnings);
}

#[test]
fn the_description_section_is_ordered_bounded_and_counts_the_rest() {
    let fx = Fixture::new();
    // Written out of order; listed by name.
    for i in (0..MAX_LISTED_AGENTS + 5).rev() {
        fx.agent("user", &format!("agent-{i:02}"), &format!("Does task {i}."));
    }
    let long = format!("{} tail that is never shown", "word ".repeat(60));
    fx.agent("ws/.claude/agents", "aaa-long", &long);
    let found = fx.discover();
    let section = found.agents.tool_description_section().expect("a section");
    assert_eq!(section, found.agents.tool_description_section().unwrap(), "the same bytes each time");
    let lines: Vec<&str> = section.lines().collect();
    assert!(lines[0].starts_with("Agents a task can name"), "{}", lines[0]);
    assert_eq!(lines.len(), 1 + MAX_LISTED_AGENTS + 1, "{section}");
    let listed = &lines[1..=MAX_LISTED_AGENTS];
    assert!(listed[0].starts_with("- aaa-long: word word"), "{}", listed[0]);
    assert!(listed[0].ends_with("word…") && !listed[0].contains("tail"), "{}", listed[0]);
    assert!(listed[0].chars().count() <= "- aaa-long: ".len() + agents::MAX_LISTED_DESCRIPTION_CHARS + 1);
    assert_eq!(listed[1], "- agent-00: Does task 0.");
    assert_eq!(listed[MAX_LISTED_AGENTS - 1], "- agent-48: Does task 48.");
    let mut sorted = listed.to_vec();
    sorted.sort();
    assert_eq!(sorted, listed, "name order");
    assert_eq!(lines[MAX_LISTED_AGENTS + 1], "(6 more agents not listed for space; they can still be named)");
    assert!(found.agents.get("agent-54").is_some(), "listed or not, every agent can be named");
    assert!(!section.ends_with('\n'));
}
