//! Programs whose options or languages run commands: a deny rule for `rm`
//! cannot see `tar --to-command='rm x'`, so such a use is opaque, and the
//! files they write are reported.
//!
//! - `tar`: `--checkpoint-action`, `--to-command`, `--use-compress-program`
//!   (`-I`), `--rsh-command`, `--info-script`/`--new-volume-script` (`-F`),
//!   in any abbreviation, in a cluster or old-style first word;
//! - `zip -TT`/`--unzip-command`; `rsync -e`/`--rsh`/`--rsync-path`; `scp`
//!   and `sftp` with `-S`, `-F` or an `-o …Command` option; `ssh` always (a
//!   command on a host, perhaps this one, and options that run local ones);
//! - `git` with `-c`, `--config-env`, `--exec-path=`, and the subcommand
//!   options that run commands (`rebase --exec`, `bisect run`, `submodule
//!   foreach`, `difftool --extcmd`, `filter-branch`, `--upload-pack`,
//!   `--receive-pack`, `--exec`, `--template`, `clone --config`, `grep
//!   --open-files-in-pager`, `send-email`, `instaweb`); `hg --config`;
//! - `sed` scripts with the `e` command or flag (see [`super::sed`]); `awk`
//!   programs with `system`, a pipe, or gawk's `@` (indirect calls,
//!   `@load`), or read from a file;
//! - in these programs an expansion where an option may stand is opaque;
//! - `make --eval` or a makefile from stdin, `fd --exec`, `rg --pre`,
//!   `sqlite3`/`duckdb` dot commands (or SQL read from stdin);
//! - always opaque: programs that run commands by grammars not modelled
//!   (`systemd-run`, `perf`, `gdb`, `parallel`, `firejail`, editors,
//!   terminal multiplexers, database shells with shell escapes, `at`,
//!   `crontab`, …) and containers' `run`/`exec`.
//!
//! `tee FILE…` writes its files.

use super::Word;
use super::builtins::is_stdin;
use super::options::{Grammar, names_long, scan};
use super::sed;
use super::wrappers::Unwrapped;

/// Programs that run a command by a grammar this analysis does not model,
/// separated by spaces.
const UNMODELLED: &str = "ssh systemd-run systemd-nspawn machinectl firejail perf gdb lldb rr parallel sem hyperfine \
                          expect setarch linux32 linux64 start-stop-daemon daemonize schroot proot flatpak-spawn torsocks \
                          proxychains proxychains4 tsocks chpst softlimit setuidgid envdir cpulimit trickle watchexec \
                          nodemon entr vim vi nvim view vimdiff ex ed emacs emacsclient heaptrack at batch newgrp tmux \
                          screen xterm gnome-terminal konsole kitty alacritty wezterm dtach abduco nsjail minijail0 \
                          lxc-attach lxc-execute distrobox-enter runcon sandbox systemd-inhibit trace-cmd bpftrace \
                          uftrace caffeinate dbus-launch psql mysql mariadb mongosh mongo";

/// Subcommands that run a command inside a container or another machine.
const CONTAINERS: &str = "docker podman nerdctl kubectl lxc incus toolbox distrobox flatpak snap";

/// What `name` does with `args`, if it is a program handled here (`None`:
/// a program whose arguments run nothing, as far as this analysis knows).
pub(super) fn unwrap(name: &str, args: &[Word]) -> Option<Unwrapped> {
    let texts = || args.iter().map(|word| word.text.as_str());
    let given = |names: &[&str]| args.iter().any(|word| !word.plain || names.contains(&word.text.as_str()));
    let refused = match name {
        _ if UNMODELLED.split_whitespace().any(|known| known == name) => {
            Some(format!("`{name}` runs commands by a grammar this analysis does not model"))
        }
        _ if CONTAINERS.split_whitespace().any(|known| known == name) => {
            given(&["run", "exec", "create", "debug", "enter", "shell", "attach"])
                .then(|| format!("`{name}` runs a command in a container or on another machine"))
        }
        "crontab" => (!texts().any(|text| matches!(text, "-l" | "-r")))
            .then(|| "`crontab` installs commands run later".to_owned()),
        "ip" => given(&["exec", "-b", "-batch"])
            .then(|| "`ip … exec` runs a command in another namespace".to_owned()),
        "nix-shell" | "nix" => given(&["--run", "--command", "-c"])
            .then(|| format!("`{name}` runs a command string in an environment")),
        "hg" | "chg" => args
            .iter()
            .any(|word| !word.plain || names_long(&word.text, &["config"]))
            .then(|| "`hg --config` can set hooks that run commands".to_owned()),
        "less" | "more" => args
            .iter()
            .any(|word| !word.plain || word.text.starts_with('+'))
            .then(|| format!("`{name} +…` runs its commands, which can run programs")),
        "man" => args
            .iter()
            .any(|word| {
                !word.plain
                    || ["-P", "-H", "--pager", "--html"].iter().any(|option| word.text.starts_with(option))
            })
            .then(|| "`man -P`/`-H` runs a program".to_owned()),
        // Dot commands (`.shell`, `.system`) run programs; without SQL given it
        // reads stdin, which may hold them.
        "sqlite3" | "duckdb" => (args.iter().filter(|word| !word.text.starts_with('-')).count() < 2
            || args
                .iter()
                .any(|word| !word.plain || word.text.trim_start().starts_with('.') || word.text == "-init"))
        .then(|| format!("`{name}` runs dot commands, which can run programs")),
        "make" | "gmake" => args
            .iter()
            .enumerate()
            .any(|(at, word)| {
                let stdin = || args.get(at + 1).is_some_and(|file| is_stdin(&file.text));
                !word.plain
                    || word.text.starts_with("-E")
                    || names_long(&word.text, &["eval"])
                    || (matches!(word.text.as_str(), "-f" | "--file" | "--makefile") && stdin())
                    || ["-f", "--file=", "--makefile="].iter().any(|option| {
                        word.text.strip_prefix(option).is_some_and(|file| !file.is_empty() && is_stdin(file))
                    })
            })
            .then(|| format!("`{name}` given a makefile on the command line")),
        "fd" | "fdfind" => given(&["-x", "--exec", "-X", "--exec-batch"])
            .then(|| format!("`{name} --exec` runs a command for each file")),
        "rg" => args
            .iter()
            .any(|word| !word.plain || word.text == "--pre" || word.text.starts_with("--pre="))
            .then(|| "`rg --pre` runs a command for each file".to_owned()),
        "tee" => return Some(Unwrapped { redirects: tee(args), ..Unwrapped::default() }),
        "tar" => return Some(tar(args)),
        "zip" => return Some(zip(args)),
        "rsync" => return Some(rsync(args)),
        "scp" | "sftp" => return Some(scp(name, args)),
        "git" => return Some(git(args)),
        "sed" => return Some(sed::unwrap(args)),
        "awk" | "gawk" | "mawk" | "nawk" | "original-awk" => return Some(awk(name, args)),
        _ => return None,
    };
    Some(refused.map(Unwrapped::opaque).unwrap_or_default())
}

/// `tee`'s files: every word that is not an option (GNU getopt permutes).
fn tee(args: &[Word]) -> Vec<String> {
    let mut files = Vec::new();
    let mut options = true;
    for word in args {
        if options && word.plain && word.text == "--" {
            options = false;
        } else if !(options && word.plain && word.text.starts_with('-') && word.text.len() > 1) {
            files.push(word.text.clone());
        }
    }
    files
}

/// GNU tar's options that run a program, by long name.
const TAR_RUNS: &[&str] = &[
    "checkpoint-action",
    "to-command",
    "use-compress-program",
    "rsh-command",
    "info-script",
    "new-volume-script",
];

/// GNU tar's short options that take a value (the next word in a cluster or
/// an old-style first word); `-I` and `-F` run programs.
const TAR_VALUES: &str = "bCfFgHIKLNTVX";

fn tar(args: &[Word]) -> Unwrapped {
    let runs = || Unwrapped::opaque("`tar` given an option that runs a program (`--to-command`, `-I`, …)");
    let mut pending = 0usize;
    for (at, word) in args.iter().enumerate() {
        if pending > 0 {
            if !word.single {
                return Unwrapped::opaque("an expansion that may split is the value of a `tar` option");
            }
            pending -= 1;
            continue;
        }
        if !word.plain {
            return Unwrapped::opaque("an expansion where `tar` reads its options may be an option");
        }
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(name, _)| name);
            // `--checkpoint[=N]` is an option of its own, not an abbreviation.
            if name != "checkpoint" && names_long(text, TAR_RUNS) {
                return runs();
            }
            let takes_next = !long.contains('=')
                && [
                    "file",
                    "directory",
                    "files-from",
                    "exclude-from",
                    "exclude",
                    "transform",
                    "owner",
                    "group",
                    "mode",
                ]
                .contains(&name);
            pending = usize::from(takes_next);
            continue;
        }
        // A cluster, or the old-style first word (`tar cIf PROG FILE`).
        let cluster = match text.strip_prefix('-') {
            Some(cluster) => cluster,
            None if at == 0 => text,
            None => continue,
        };
        for (offset, letter) in cluster.char_indices() {
            if matches!(letter, 'I' | 'F') {
                return runs();
            }
            if TAR_VALUES.contains(letter) {
                let attached = cluster.get(offset + 1..).is_some_and(|rest| !rest.is_empty());
                if text.starts_with('-') {
                    pending = usize::from(!attached);
                    break;
                }
                // Old style: every value letter takes the next word.
                pending += 1;
            }
        }
    }
    Unwrapped::default()
}

/// zip: `-TT CMD` / `--unzip-command CMD` runs a command to test the archive.
fn zip(args: &[Word]) -> Unwrapped {
    for word in args {
        if !word.plain {
            return Unwrapped::opaque("an expansion where `zip` reads its options may be an option");
        }
        let text = word.text.as_str();
        let short = text.strip_prefix('-').filter(|cluster| !cluster.starts_with('-'));
        if short.is_some_and(|cluster| cluster.contains("TT")) || names_long(text, &["unzip-command"]) {
            return Unwrapped::opaque("`zip -TT` runs a command");
        }
    }
    Unwrapped::default()
}

/// rsync: `-e`/`--rsh` is the remote shell, `--rsync-path` a remote command
/// run through it.
fn rsync(args: &[Word]) -> Unwrapped {
    for word in args {
        if !word.plain {
            return Unwrapped::opaque("an expansion where `rsync` reads its options may be an option");
        }
        let text = word.text.as_str();
        let short = text.strip_prefix('-').filter(|cluster| !cluster.starts_with('-'));
        if short.is_some_and(|cluster| cluster.contains('e')) || names_long(text, &["rsh", "rsync-path"]) {
            return Unwrapped::opaque("`rsync -e`/`--rsh`/`--rsync-path` runs a command");
        }
    }
    Unwrapped::default()
}

/// scp and sftp (OpenSSH's getopt, no permutation): `-S PROGRAM` is the
/// transport, sftp's `-D PROGRAM` the server, `-F FILE` a configuration
/// (which may hold commands), `-o …Command=` a command.
fn scp(name: &str, args: &[Word]) -> Unwrapped {
    let grammar = Grammar {
        program: "scp",
        short: "+346ABCOpqRrTvc:D:F:i:J:l:o:P:S:X:",
        strict: false,
        ..Grammar::STRICT
    };
    let scanned = match scan(args, &grammar) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    let command_option = scanned.texts_of(&["o"]).iter().any(|option| {
        let key = option.split(['=', ' ']).next().unwrap_or(option);
        key.to_ascii_lowercase().ends_with("command")
    });
    if command_option || scanned.has_any(&["S", "F", "D"]) {
        return Unwrapped::opaque(format!("`{name}` given a program or configuration that runs commands"));
    }
    Unwrapped::default()
}

/// git: global options (`-c`, `--config-env`, `--exec-path=`), then the
/// subcommand's options that run commands.
fn git(args: &[Word]) -> Unwrapped {
    let mut at = 0;
    while let Some(word) = args.get(at) {
        if !word.plain {
            return Unwrapped::opaque("an expansion where `git` reads its options may be an option");
        }
        let text = word.text.as_str();
        match text {
            "-c" | "--config-env" => {
                return Unwrapped::opaque("`git -c` sets configuration that can run commands");
            }
            _ if text.starts_with("--config-env=") || (text.starts_with("-c") && !text.starts_with("--")) => {
                return Unwrapped::opaque("`git -c` sets configuration that can run commands");
            }
            _ if text.starts_with("--exec-path=") => {
                return Unwrapped::opaque("`git --exec-path=` runs git's commands from another folder");
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" | "--attr-source" => {
                if args.get(at + 1).is_some_and(|value| !value.single) {
                    return Unwrapped::opaque("an expansion that may split is the value of a `git` option");
                }
                at += 2;
            }
            _ if text.starts_with('-') => at += 1,
            _ => return git_subcommand(text, args.get(at + 1..).unwrap_or(&[])),
        }
    }
    Unwrapped::default()
}

fn git_subcommand(subcommand: &str, args: &[Word]) -> Unwrapped {
    let runs = || Unwrapped::opaque(format!("`git {subcommand}` given an option that runs a command"));
    let (long, short): (&[&str], &str) = match subcommand {
        "filter-branch" | "send-email" | "instaweb" => return runs(),
        "bisect" | "submodule" => {
            let word = if subcommand == "bisect" { "run" } else { "foreach" };
            let given = args.iter().any(|arg| !arg.plain || arg.text == word);
            return if given { runs() } else { Unwrapped::default() };
        }
        "rebase" => (&["exec"], "x"),
        "difftool" => (&["extcmd"], "x"),
        "clone" => (&["upload-pack", "template", "config"], "uc"),
        "init" => (&["template"], ""),
        "ls-remote" => (&["upload-pack"], "u"),
        "fetch" | "pull" => (&["upload-pack"], ""),
        "push" | "send-pack" => (&["receive-pack", "exec"], ""),
        "archive" => (&["exec"], ""),
        "grep" => (&["open-files-in-pager"], "O"),
        _ => return Unwrapped::default(),
    };
    for word in args {
        if !word.plain {
            return Unwrapped::opaque(format!(
                "an expansion where `git {subcommand}` reads its options may be an option"
            ));
        }
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        let cluster = text.strip_prefix('-').filter(|cluster| !cluster.starts_with('-'));
        let short_given = cluster.is_some_and(|cluster| cluster.chars().any(|letter| short.contains(letter)));
        if short_given || names_long(text, long) {
            return runs();
        }
    }
    Unwrapped::default()
}

/// awk, gawk, mawk: "+F:f:v:W;bcCd::D::e:E:ghi:l:L::nNo::Op::MPrsStVYZ:"
/// (gawk's). A program from a file, a library or `-W` is refused; the
/// program text must not run a command.
fn awk(name: &str, args: &[Word]) -> Unwrapped {
    const LONG: &str = "assign= field-separator= file= source= exec= include= load= lint? dump-variables? debug? \
                        pretty-print? profile? sandbox characters-as-bytes traditional copyright gen-pot help \
                        non-decimal-data bignum posix re-interval no-optimize optimize use-lc-numeric version \
                        lint-old csv";
    let short = "+F:f:v:W:bcCd::D::e:E:ghi:l:L::nNo::Op::MPrsStVYZ:";
    let scanned = match scan(args, &Grammar { program: "awk", short, long: LONG, ..Grammar::STRICT }) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if scanned.has_any(&["f", "file", "E", "exec", "i", "include", "l", "load", "W"]) {
        return Unwrapped::opaque(format!("`{name}` given a program from a file or a library"));
    }
    let mut redirects = Vec::new();
    for (option, default) in [("d", "awkvars.out"), ("p", "awkprof.out"), ("o", "awkprof.out")] {
        if scanned.has(option) {
            let given = scanned.texts_of(&[option]);
            redirects.extend(if given.is_empty() { vec![default.to_owned()] } else { given });
        }
    }
    if scanned.has("sandbox") {
        return Unwrapped { redirects, ..Unwrapped::default() };
    }
    let sources = scanned.values_of(&["e", "source"]);
    let program: Vec<&Word> =
        if sources.is_empty() { scanned.operands.first().into_iter().collect() } else { sources };
    if program.iter().any(|word| !word.plain) {
        return Unwrapped::opaque(format!("`{name}` given a program with expansions"));
    }
    if program.iter().any(|word| awk_runs(&word.text)) {
        return Unwrapped::opaque(format!("the `{name}` program runs a command (`system`, a pipe, or `@`)"));
    }
    Unwrapped { redirects, ..Unwrapped::default() }
}

/// Whether an awk program may run a command: `system` anywhere, a `|`
/// (not `||`) outside strings and regular expressions, or gawk's `@`
/// (indirect calls by a name built at run time, `@load`).
fn awk_runs(program: &str) -> bool {
    if program.contains("system") || program.contains('@') {
        return true;
    }
    let mut chars = program.chars().peekable();
    // Whether a `/` here starts a regular expression: after an operand it
    // divides.
    let mut operand = false;
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(inside) = chars.next() {
                    match inside {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                operand = true;
            }
            '/' if !operand => {
                while let Some(inside) = chars.next() {
                    match inside {
                        '\\' => {
                            chars.next();
                        }
                        '/' | '\n' => break,
                        _ => {}
                    }
                }
                operand = true;
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                operand = false;
            }
            '|' => return true,
            c if c.is_whitespace() => {}
            c => operand = c.is_alphanumeric() || matches!(c, '_' | ')' | ']' | '$'),
        }
    }
    false
}
