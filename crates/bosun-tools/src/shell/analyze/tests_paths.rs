//! Unit tests of writes to protected paths hidden from a lexical check: a
//! redirect target or a directory changed to that is not a fixed path, the
//! read-write and other redirect operators, and git's and bosun's user
//! configuration reached through another folder. Each is decided by the real
//! pipeline in autonomous mode with no rules (where everything else runs):
//! it must ask, as a protected call.

use bosun_core::{Mode, Permission};

use super::tests::{decided, plain};
use super::*;

#[track_caller]
fn asks_as_protected(source: &str) {
    let got = decided(Mode::Autonomous, &[], source);
    assert_eq!((got.permission, got.protected), (Permission::Ask, true), "{source:?}: {got:?}");
}

#[track_caller]
fn runs_unasked(source: &str) {
    let got = decided(Mode::Autonomous, &[], source);
    assert_eq!(got.permission, Permission::Allow, "{source:?}: {got:?}");
}

#[test]
fn obfuscated_redirect_targets_and_directories_ask() {
    for source in [
        "cd \"$(printf .gi)t/hooks\" && echo x > pre-commit",
        "d=.gi; echo x > ${d}t/hooks/x",
        "echo x > .g$'i't/config",
        "echo x > .g`printf i`t/config",
        "echo x > \"$f\"",
        "echo x >> .gi?/config",
        "echo x > .{g,}it/config",
        "echo x | tee \"$f\"",
        "cd \"$d\" && echo x > y",
        "pushd $d; echo x > y",
        "cd .gi* && echo x > config",
        "cd $'\\x2egit' && echo x > config",
        "cd .g$'i't/hooks && echo x > pre-commit",
        "cd - && echo x > pre-commit",
        "OLDPWD=.git/hooks; cd - ; echo x > pre-commit",
        "CDPATH=.git cd hooks; echo x > pre-commit",
        "HOME=.git/hooks; cd; echo x > pre-commit",
        "env -C \"$d\" tee x < y",
        "builtin cd \"$d\"; echo x > y",
    ] {
        asks_as_protected(source);
    }
}

#[test]
fn every_write_redirect_operator_counts() {
    for source in [
        "echo x 1<>.git/config",
        "echo x <>.git/config",
        "echo x <> .git/config",
        "exec 3<>.git/config",
        "echo x >|.git/config",
        "echo x &>.git/config",
        "echo x &>>.git/config",
        "echo x 2>.git/config",
        "echo x 2>>.git/config",
        "echo x >.git/config",
        "echo x >>.git/config",
        "echo x >&.git/config",
    ] {
        asks_as_protected(source);
        assert!(
            script(source).redirects.contains(&".git/config".to_owned()),
            "{source:?}: {:?}",
            script(source)
        );
    }
    // tree-sitter-bash reports `N<>` as a parse error: opaque, and written.
    assert_eq!(script("cat 0<>in.txt").redirects, ["in.txt"]);
    assert!(plain("cat < in.txt 2>&1 0<&3").redirects.is_empty());
}

#[test]
fn user_configuration_of_git_and_bosun_asks_wherever_it_lives() {
    for source in [
        "cd /tmp/xdg/bosun && echo '[projects.\"/w\"] trust_level = \"trusted\"' >> config.toml",
        "cd /tmp/xdg && cd bosun && echo x >> config.toml",
        "cd /tmp/xdg/bosun && echo x > other.toml",
        "cd /tmp/xdg/bosun; cp /tmp/evil config.toml",
        "echo x >> /tmp/xdg/bosun/config.toml",
        "echo x >> /tmp/xdg/git/config",
        "cd /tmp/xdg/git && echo x >> config",
        "echo x > ~/.config/git/config",
        "echo x > ~/.gitconfig",
        "echo x > ~/.config/bosun/config.toml",
        "cp x ~/.config/git/attributes",
        "cd ~/.config/git && echo x > ignore",
        "cd ~/.config && echo x >> bosun/config.toml",
        "cd ~/.config; cd git; echo x > config",
    ] {
        asks_as_protected(source);
    }
}

#[test]
fn fixed_paths_elsewhere_still_run() {
    for source in [
        "echo x > out.txt",
        "cd src && echo x > out.txt",
        "cd /tmp && cargo build > log.txt 2>&1",
        "cd crates/bosun-core && cargo test > t.log",
        "echo $HOME > out.txt",
        "ls \"$d\"",
    ] {
        runs_unasked(source);
    }
}
