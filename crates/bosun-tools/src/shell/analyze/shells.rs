//! Programs that run a command string through a shell or as another user,
//! where the string (or the arguments after a user) is the script analyzed:
//! the shells themselves (`bash -c STRING`), `su`, `runuser`, `sg`,
//! `script`, `capsh`, `pee`. Without a command, each of them starts a shell
//! that reads stdin, which is opaque.

use super::Word;
use super::builtins::{is_stdin, script_of};
use super::options::{Grammar, Scanned, scan};
use super::wrappers::{Inner, Unwrapped, grammar};

/// util-linux script: "aB:c:eE:fI:O:o:qm:T:t::Vh", permuted; `-c STRING`
/// runs through a shell, without it a shell reads stdin. It writes its
/// typescript (the operand, `typescript` without one) and its logs.
pub(super) fn script(args: &[Word]) -> Unwrapped {
    const LONG: &str = "append command= echo= return flush force log-in= log-out= log-io= log-timing= \
                        logging-format= output-limit= quiet timing? version help";
    let scanned = match scan(args, &grammar("script", "aB:c:eE:fI:O:o:qm:T:t::Vh", LONG)) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if scanned.has_any(&["h", "help", "V", "version"]) {
        return Unwrapped::default();
    }
    let logs = ["B", "I", "O", "T", "t", "log-in", "log-out", "log-io", "log-timing", "timing"];
    let mut redirects = scanned.texts_of(&logs);
    redirects
        .push(scanned.operands.first().map_or_else(|| "typescript".to_owned(), |word| word.text.clone()));
    let inner = match scanned.values_of(&["c", "command"]).into_iter().next_back() {
        Some(string) => script_of(Some(string)),
        None => Inner::Opaque("`script` without `-c` starts a shell that reads stdin".to_owned()),
    };
    Unwrapped { inner, redirects, ..Unwrapped::default() }
}

/// util-linux su: "c:fg:G:lmpPTs:u:hVw:", permuted (shared with runuser).
const SU: Grammar = grammar(
    "su",
    "c:fg:G:lmpPTs:u:hVw:",
    "command= session-command= fast login preserve-environment pty no-pty shell= group= supp-group= user= \
     whitelist-environment= help version",
);

/// runuser: with `-u USER`, an argv after the options; otherwise `su`'s
/// grammar.
pub(super) fn runuser(args: &[Word]) -> Unwrapped {
    let scanned = match scan(args, &Grammar { program: "runuser", ..SU }) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if !scanned.has_any(&["u", "user"]) {
        return su_like(&scanned, "runuser");
    }
    let command = match scanned.operands.split_first() {
        Some((dash, rest)) if dash.text == "-" => rest,
        _ => scanned.operands.as_slice(),
    };
    if command.is_empty() { Unwrapped::default() } else { Unwrapped::argv(command) }
}

pub(super) fn su(args: &[Word]) -> Unwrapped {
    match scan(args, &SU) {
        Ok(scanned) => su_like(&scanned, "su"),
        Err(why) => Unwrapped::opaque(why),
    }
}

/// `su [-] [USER [SHELL ARGS…]]`, `-c STRING`: the shell runs the string, or
/// gets the arguments after the user; with neither it reads stdin.
fn su_like(scanned: &Scanned, name: &str) -> Unwrapped {
    if scanned.has_any(&["h", "help", "V", "version"]) {
        return Unwrapped::default();
    }
    if let Some(string) = scanned.values_of(&["c", "command", "session-command"]).into_iter().next_back() {
        return script_of(Some(string)).into();
    }
    let operands = match scanned.operands.split_first() {
        Some((dash, rest)) if dash.text == "-" => rest,
        _ => scanned.operands.as_slice(),
    };
    match operands.get(1..) {
        Some(shell_args) if !shell_args.is_empty() => {
            Inner::Argv([Word::literal("sh")].into_iter().chain(shell_args.iter().cloned()).collect()).into()
        }
        _ => Unwrapped::opaque(format!("`{name}` without a command starts a shell that reads stdin")),
    }
}

/// shadow's sg: `sg [-] GROUP [-c] COMMAND`, the command one string run by
/// `/bin/sh -c`; without one, a shell reading stdin.
pub(super) fn sg(args: &[Word]) -> Unwrapped {
    let args = match args.split_first() {
        Some((dash, rest)) if dash.plain && dash.text == "-" => rest,
        _ => args,
    };
    let command = match args {
        [_, flag, rest @ ..] if flag.plain && flag.text == "-c" => rest,
        [_, rest @ ..] => rest,
        [] => &[],
    };
    match command {
        [] => Unwrapped::opaque("`sg` without a command starts a shell that reads stdin"),
        [string] => script_of(Some(string)).into(),
        _ => Unwrapped::opaque("`sg` given more than one command word"),
    }
}

/// libcap's capsh: `--name[=value]` words; `--` passes the rest to the
/// shell (bash, or a known shell named by `--shell=`), `==` runs capsh again
/// on the rest.
pub(super) fn capsh(args: &[Word]) -> Unwrapped {
    let mut shell = "bash".to_owned();
    for (at, word) in args.iter().enumerate() {
        let rest = args.get(at + 1..).unwrap_or(&[]);
        if !word.plain {
            return Unwrapped::opaque("an expansion among `capsh`'s arguments");
        }
        let then = |program: String| {
            Inner::Argv([Word::literal(program)].into_iter().chain(rest.iter().cloned()).collect())
        };
        match word.text.as_str() {
            "--" => return then(shell).into(),
            "==" => return then("capsh".to_owned()).into(),
            text if text.starts_with("--shell=") => {
                let path = text.trim_start_matches("--shell=");
                let base = path.rsplit('/').next().unwrap_or(path);
                if !matches!(base, "bash" | "sh" | "dash" | "zsh") {
                    return Unwrapped::opaque("`capsh --shell=` names a program run as the shell");
                }
                path.clone_into(&mut shell);
            }
            text if text.starts_with("--") => {}
            _ => return Unwrapped::opaque("`capsh` given an argument it does not take"),
        }
    }
    Unwrapped::default()
}

/// moreutils `pee 'CMD'…`: each argument a command run by the shell.
pub(super) fn pee(args: &[Word]) -> Unwrapped {
    if args.iter().any(|word| !word.plain) {
        return Unwrapped::opaque("`pee` given a command with expansions");
    }
    Inner::Script(args.iter().map(|word| word.text.as_str()).collect::<Vec<_>>().join("\n")).into()
}

/// Shells: `-c STRING` (anywhere among the options) is a script; a script
/// file is a program run; no file, `-s` or a file that is stdin reads
/// stdin. A startup file or command named on the line (`--rcfile`, fish's
/// `-C`) is code the analysis cannot see. Options not listed are flags.
pub(super) fn shell(name: &str, args: &[Word]) -> Unwrapped {
    let short = if name == "fish" { "+C:" } else { "+o:O:" };
    let long = "rcfile= init-file= init-command= command=";
    let scanned = match scan(args, &Grammar { program: "sh", short, long, strict: false, plus: true }) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if scanned.has_any(&["rcfile", "init-file", "init-command"]) || (name == "fish" && scanned.has("C")) {
        return Unwrapped::opaque("a shell given a startup file or command that runs before its script");
    }
    if let Some(string) = scanned.values_of(&["command"]).into_iter().next_back() {
        return script_of(Some(string)).into();
    }
    if scanned.has("c") {
        return script_of(scanned.operands.first()).into();
    }
    match scanned.operands.first() {
        Some(file) if !scanned.has("s") && !is_stdin(&file.text) => Unwrapped::default(),
        _ => Unwrapped::opaque("a shell reads its script from stdin"),
    }
}
