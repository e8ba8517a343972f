//! Custom commands on real files: the user's folders first (bosun's, then
//! `~/.claude`), then the project's `.bosun/commands` and
//! `.claude/commands`; a subfolder namespaces; built-in names kept; a
//! symlinked file or folder not followed (invariant 16); a broken file a
//! warning naming it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use bosun_tools::Workspace;
use bosun_tools::commands::{self, CommandDiscovery, CommandOrigin};

struct Fixture {
    _base: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().canonicalize().unwrap();
        fs::create_dir_all(root.join("ws")).unwrap();
        Self { _base: base, root }
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    fn discover(&self, project: bool) -> CommandDiscovery {
        let workspace = Workspace::open(self.root.join("ws")).unwrap();
        let user = [self.root.join("bosun-user"), self.root.join("claude-user")];
        commands::discover(project.then_some(&workspace), &user, &["model", "help"])
    }
}

#[test]
fn the_users_commands_win_a_name_then_the_projects_in_order() {
    let fx = Fixture::new();
    fx.write("bosun-user/review.md", "Review as I like it.");
    fx.write("claude-user/review.md", "Review the Claude way.");
    fx.write("claude-user/hello.md", "Say hello.");
    fx.write("ws/.bosun/commands/hello.md", "A project's hello.");
    fx.write("ws/.bosun/commands/test.md", "Run the tests.");
    fx.write("ws/.claude/commands/test.md", "Run the tests, Claude's way.");
    fx.write("ws/.claude/commands/frontend/lint.md", "Lint the frontend.");
    fx.write("ws/.claude/commands/frontend/deeper/no.md", "Never read.");
    let found = fx.discover(true);
    let bodies: Vec<(&str, String, CommandOrigin)> =
        found.commands.iter().map(|c| (c.name(), c.expand(""), c.origin())).collect();
    assert_eq!(
        bodies,
        [
            ("frontend:lint", "Lint the frontend.".to_owned(), CommandOrigin::Project(".claude/commands")),
            ("hello", "Say hello.".to_owned(), CommandOrigin::User),
            ("review", "Review as I like it.".to_owned(), CommandOrigin::User),
            ("test", "Run the tests.".to_owned(), CommandOrigin::Project(".bosun/commands")),
        ]
    );
    // Each loser is named with the winner.
    assert_eq!(found.warnings.len(), 3, "{:#?}", found.warnings);
    assert!(
        found.warnings.iter().any(|w| w.contains("ws/.bosun/commands/hello.md") && w.contains("is kept"))
    );

    let user_only = fx.discover(false);
    let names: Vec<&str> = user_only.commands.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["hello", "review"], "no project: only the user's");
}

#[test]
fn built_in_names_bad_names_broken_files_and_symlinks_are_warnings() {
    let fx = Fixture::new();
    fx.write("ws/.claude/commands/model.md", "Shadow the model command.");
    fx.write("ws/.claude/commands/bad name.md", "Spaces.");
    fx.write("ws/.claude/commands/empty.md", "---\ndescription: nothing after\n---\n");
    fx.write("ws/.claude/commands/ok.md", "Fine.");
    let outside = fx.write("outside/secret.md", "OUTSIDE SECRET");
    symlink(&outside, fx.root.join("ws/.claude/commands/linked.md")).unwrap();
    fs::create_dir_all(fx.root.join("outside/dir")).unwrap();
    fx.write("outside/dir/x.md", "OUTSIDE SECRET");
    symlink(fx.root.join("outside/dir"), fx.root.join("ws/.claude/commands/space")).unwrap();
    let found = fx.discover(true);
    let names: Vec<&str> = found.commands.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["ok"]);
    for needle in [
        "`/model` is a built-in command",
        "bad name.md",
        "empty.md: it has no prompt",
        "linked.md: a symlink",
    ] {
        assert!(found.warnings.iter().any(|w| w.contains(needle)), "{needle}: {:#?}", found.warnings);
    }
    assert!(found.warnings.iter().all(|w| !w.contains("OUTSIDE SECRET")));
    assert!(found.commands.iter().all(|c| !c.expand("").contains("OUTSIDE")));
}
