//! Programs that run another command from their arguments, and what they run.
//!
//! A wrapper's own argv is recorded by the caller; [`unwrap`] says what it
//! runs next, and the caller analyzes that the same way (so wrappers nest).
//! Recognised, by the last component of the command name:
//!
//! - argv after options: `sudo` (options, `-u USER`, `NAME=value` words;
//!   `-e` edits its file arguments), `doas`, `command` (not `-v`/`-V`),
//!   `builtin`, `exec`, `nice` (`-n N`), `nohup`, `time` (`-o FILE` is
//!   written), `setsid`, `stdbuf`, `ionice` (not with `-p`/`-P`/`-u`),
//!   `strace`/`ltrace` (`-o FILE` is written), `coproc`, `busybox CMD`;
//! - argv after an operand: `timeout DURATION`, `chrt [PRIORITY]` (not
//!   `-p`), `taskset MASK` (not `-p`), `flock FILE` (or `flock FILE -c
//!   STRING`, a script);
//! - `env`: options, `NAME=value` words (recorded as assignments), `-S`
//!   split into words; `xargs` (its options and their values);
//!   `find … -exec/-execdir/-ok/-okdir CMD … ;|+`, each one (and
//!   `-fprint`/`-fprintf`/`-fls` files are written);
//! - scripts: `bash`/`sh`/`dash`/`zsh`/`ksh`/`ash`/`mksh`/`yash`/`fish`
//!   `-c STRING` (a shell with neither `-c` nor a script file reads stdin:
//!   opaque), `su -c STRING` (without `-c`: opaque), `eval WORDS` (joined
//!   with spaces), `watch` (the rest joined; `-x` runs an argv), `trap
//!   ACTION SIGNAL…`;
//! - `source`/`.` of stdin (`/dev/stdin`, `/dev/fd/N`, …) is opaque;
//! - `tee FILE…` writes its files; `alias NAME=…`, `hash -p` and `enable
//!   -f` (which rebind or load what a name runs) are opaque.

use super::Word;

/// Files that are a process's standard input.
fn is_stdin(path: &str) -> bool {
    matches!(path, "-" | "/dev/stdin")
        || path.starts_with("/dev/fd/")
        || (path.starts_with("/proc/") && path.contains("/fd/"))
}

/// What a wrapper runs next.
#[derive(Debug, Default)]
pub(super) enum Inner<'w> {
    /// Nothing, or not a wrapper.
    #[default]
    Nothing,
    /// This argv.
    Argv(&'w [Word]),
    /// Each of these argvs.
    Many(Vec<&'w [Word]>),
    /// This argv, built from the wrapper's words.
    Words(Vec<Word>),
    /// This script, to parse.
    Script(String),
    /// Something that cannot be known.
    Opaque(&'static str),
}

/// What a wrapper runs, assigns and writes.
#[derive(Debug, Default)]
pub(super) struct Unwrapped<'w> {
    pub(super) inner: Inner<'w>,
    pub(super) assignments: Vec<String>,
    pub(super) redirects: Vec<String>,
}

impl<'w> From<Inner<'w>> for Unwrapped<'w> {
    fn from(inner: Inner<'w>) -> Self {
        Self { inner, ..Self::default() }
    }
}

/// What `name` (a command name without its directories) does with `args`.
pub(super) fn unwrap<'w>(name: &str, args: &'w [Word]) -> Unwrapped<'w> {
    let argv_after = |spec: &Spec| Inner::Argv(scan(args, spec).rest).into();
    match name {
        "sudo" => sudo(args),
        "doas" => {
            let scanned = scan(args, &Spec::short("Cu"));
            stdin_shell_or(scanned.has('s'), scanned.rest).into()
        }
        "command" => {
            let scanned = scan(args, &Spec::NONE);
            if scanned.has('v') || scanned.has('V') { Inner::Nothing } else { Inner::Argv(scanned.rest) }
                .into()
        }
        "builtin" | "nohup" | "setsid" | "coproc" => argv_after(&Spec::NONE),
        "exec" => argv_after(&Spec::short("a")),
        "nice" => argv_after(&Spec { values: "n", long: &["adjustment"], plus: false }),
        "stdbuf" => argv_after(&Spec { values: "ioe", long: &["input", "output", "error"], plus: false }),
        "time" => {
            let scanned = scan(args, &Spec { values: "fo", long: &["format", "output"], plus: false });
            Unwrapped { redirects: scanned.values_of(&["o", "output"]), ..Inner::Argv(scanned.rest).into() }
        }
        "timeout" => {
            let scanned = scan(args, &Spec { values: "sk", long: &["signal", "kill-after"], plus: false });
            Inner::Argv(scanned.rest.get(1..).unwrap_or(&[])).into()
        }
        "ionice" => {
            let long = &["class", "classdata", "pid", "pgid", "uid"];
            let scanned = scan(args, &Spec { values: "cnpPu", long, plus: false });
            let targets = ["p", "P", "u", "pid", "pgid", "uid"];
            if scanned.options.iter().any(|(option, _)| targets.contains(&option.as_str())) {
                Inner::Nothing.into()
            } else {
                Inner::Argv(scanned.rest).into()
            }
        }
        "chrt" => {
            let long = &["sched-runtime", "sched-period", "sched-deadline"];
            let scanned = scan(args, &Spec { values: "TPD", long, plus: false });
            if scanned.has('p') || scanned.has('m') || scanned.has_long("pid") {
                return Inner::Nothing.into();
            }
            let rest = scanned.rest;
            let priority = rest.first().is_some_and(|word| word.text.bytes().all(|b| b.is_ascii_digit()));
            Inner::Argv(if priority { rest.get(1..).unwrap_or(&[]) } else { rest }).into()
        }
        "taskset" => {
            let scanned = scan(args, &Spec::NONE);
            if scanned.has('p') || scanned.has_long("pid") {
                return Inner::Nothing.into();
            }
            Inner::Argv(scanned.rest.get(1..).unwrap_or(&[])).into()
        }
        "flock" => flock(args),
        "env" => env(args),
        "xargs" => {
            let long = &["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"];
            argv_after(&Spec { values: "adEILnPs", long, plus: false })
        }
        "find" => find(args),
        "watch" => {
            let scanned = scan(args, &Spec { values: "nq", long: &["interval", "equexit"], plus: false });
            if scanned.has('x') || scanned.has_long("exec") {
                Inner::Argv(scanned.rest).into()
            } else if scanned.rest.is_empty() {
                Inner::Nothing.into()
            } else {
                Inner::Script(join(scanned.rest)).into()
            }
        }
        "bash" | "sh" | "dash" | "zsh" | "ksh" | "ash" | "mksh" | "yash" | "fish" => shell(args),
        "su" => su(args),
        "eval" => {
            if args.iter().all(|word| word.plain) {
                Inner::Script(join(args)).into()
            } else {
                Inner::Opaque("eval of words with expansions").into()
            }
        }
        "busybox" => match args.first() {
            Some(applet) if !applet.text.starts_with('-') => Inner::Argv(args).into(),
            _ => Inner::Nothing.into(),
        },
        "strace" => {
            traced(args, "abeEIoOpPsSuUX", &["output", "trace", "attach", "user", "env", "string-limit"])
        }
        "ltrace" => traced(args, "aAeFlnopsuwxD", &["output", "library", "indent", "align"]),
        "trap" => {
            let scanned = scan(args, &Spec::NONE);
            match scanned.rest {
                _ if scanned.has('p') || scanned.has('l') => Inner::Nothing,
                [action, _, ..] if action.text != "-" => script_of(Some(action)),
                _ => Inner::Nothing,
            }
            .into()
        }
        "source" | "." => match args.first() {
            Some(file) if is_stdin(&file.text) => Inner::Opaque("a script read from stdin").into(),
            _ => Inner::Nothing.into(),
        },
        "tee" => Unwrapped { redirects: tee(args), ..Unwrapped::default() },
        "alias" if args.iter().any(|word| word.text.contains('=')) => {
            Inner::Opaque("alias definition").into()
        }
        "hash" if scan(args, &Spec::short("p")).has('p') => {
            Inner::Opaque("hash -p rebinds a command name").into()
        }
        "enable" if scan(args, &Spec::short("f")).has('f') => {
            Inner::Opaque("enable -f loads a builtin").into()
        }
        _ => Inner::Nothing.into(),
    }
}

/// Options a wrapper takes before its operands.
struct Spec {
    /// Short options that take a value (attached or the next word).
    values: &'static str,
    /// Long options (without `--`) that take the next word when not given
    /// `=value`.
    long: &'static [&'static str],
    /// `+o` options count too (shells).
    plus: bool,
}

impl Spec {
    const NONE: Spec = Spec { values: "", long: &[], plus: false };

    const fn short(values: &'static str) -> Self {
        Self { values, long: &[], plus: false }
    }
}

/// Options up to the first operand (or `--`, or a word that is not plain,
/// which is taken as the first operand since it cannot be read).
#[derive(Debug)]
struct Scanned<'w> {
    /// Each option seen, by its letter or long name, with its value.
    options: Vec<(String, Option<String>)>,
    rest: &'w [Word],
}

impl Scanned<'_> {
    fn has(&self, letter: char) -> bool {
        let mut buffer = [0; 4];
        let letter: &str = letter.encode_utf8(&mut buffer);
        self.options.iter().any(|(option, _)| option == letter)
    }

    fn has_long(&self, name: &str) -> bool {
        self.options.iter().any(|(option, _)| option == name)
    }

    fn values_of(&self, names: &[&str]) -> Vec<String> {
        let given = self.options.iter().filter(|(option, _)| names.contains(&option.as_str()));
        given.filter_map(|(_, value)| value.clone()).collect()
    }
}

fn scan<'w>(args: &'w [Word], spec: &Spec) -> Scanned<'w> {
    let mut options = Vec::new();
    let mut at = 0;
    let next_value = |at: &mut usize| {
        *at += 1;
        args.get(*at).map(|word| word.text.clone())
    };
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        if !word.plain {
            break;
        }
        if text == "--" {
            at += 1;
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None if spec.long.contains(&long) => (long, next_value(&mut at)),
                None => (long, None),
            };
            options.push((name.to_owned(), value));
            at += 1;
            continue;
        }
        let cluster = text.strip_prefix('-').or_else(|| text.strip_prefix('+').filter(|_| spec.plus));
        let Some(cluster) = cluster.filter(|cluster| !cluster.is_empty()) else { break };
        for (offset, letter) in cluster.char_indices() {
            if spec.values.contains(letter) {
                let attached = cluster.get(offset + letter.len_utf8()..).unwrap_or("");
                let value = if attached.is_empty() { next_value(&mut at) } else { Some(attached.to_owned()) };
                options.push((letter.to_string(), value));
                break;
            }
            options.push((letter.to_string(), None));
        }
        at += 1;
    }
    Scanned { options, rest: args.get(at..).unwrap_or(&[]) }
}

/// Words joined with spaces, as `eval` and `watch` join them.
fn join(words: &[Word]) -> String {
    words.iter().map(|word| word.text.as_str()).collect::<Vec<_>>().join(" ")
}

/// A `-c` string to parse, if it is plain.
fn script_of(word: Option<&Word>) -> Inner<'static> {
    match word {
        None => Inner::Nothing,
        Some(word) if word.plain => Inner::Script(word.text.clone()),
        Some(_) => Inner::Opaque("a script with expansions"),
    }
}

/// `NAME=value`: the name, when it is one.
fn assigned_name(text: &str) -> Option<&str> {
    let (name, _) = text.split_once('=')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid =
        (first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

/// Leading `NAME=value` words: their names, and the words after them.
fn assignments(words: &[Word]) -> (Vec<String>, &[Word]) {
    let count = words.iter().take_while(|word| assigned_name(&word.text).is_some()).count();
    let (given, rest) = words.split_at(count);
    (given.iter().filter_map(|word| assigned_name(&word.text)).map(str::to_owned).collect(), rest)
}

/// A wrapper that runs `rest`, or without one a shell reading stdin.
fn stdin_shell_or(shell: bool, rest: &[Word]) -> Inner<'_> {
    if shell && rest.is_empty() {
        Inner::Opaque("a shell reads its script from stdin")
    } else {
        Inner::Argv(rest)
    }
}

fn sudo(args: &[Word]) -> Unwrapped<'_> {
    let long = &[
        "user",
        "group",
        "chdir",
        "close-from",
        "prompt",
        "role",
        "type",
        "command-timeout",
        "other-user",
        "chroot",
        "login-class",
        "auth-type",
    ];
    let scanned = scan(args, &Spec { values: "aCcDgpRrTtUu", long, plus: false });
    let (assignments, rest) = assignments(scanned.rest);
    if scanned.has('e') || scanned.has_long("edit") {
        let redirects = rest.iter().map(|word| word.text.clone()).collect();
        return Unwrapped { assignments, redirects, inner: Inner::Nothing };
    }
    let shell =
        scanned.has('s') || scanned.has('i') || scanned.has_long("shell") || scanned.has_long("login");
    Unwrapped { assignments, inner: stdin_shell_or(shell, rest), redirects: Vec::new() }
}

fn env(args: &[Word]) -> Unwrapped<'_> {
    let long = &["unset", "chdir", "split-string", "block-signal", "default-signal", "ignore-signal"];
    let scanned = scan(args, &Spec { values: "uCSP", long, plus: false });
    let mut rest = scanned.rest;
    while let Some((_, after)) = rest.split_first().filter(|(word, _)| word.plain && word.text == "-") {
        rest = after;
    }
    let split = scanned.values_of(&["S", "split-string"]);
    if !split.is_empty() {
        if split.iter().any(|text| text.contains(['\'', '"', '\\', '$', '#'])) {
            return Inner::Opaque("env -S string with quoting").into();
        }
        let mut words = vec![Word::literal("env")];
        words.extend(split.iter().flat_map(|text| text.split_whitespace()).map(Word::literal));
        words.extend(rest.iter().cloned());
        return Inner::Words(words).into();
    }
    let (assignments, command) = assignments(rest);
    Unwrapped { assignments, inner: Inner::Argv(command), redirects: Vec::new() }
}

fn flock(args: &[Word]) -> Unwrapped<'_> {
    let long = &["timeout", "wait", "conflict-exit-code"];
    let scanned = scan(args, &Spec { values: "wE", long, plus: false });
    match scanned.rest {
        [_, flag, string, ..] if flag.plain && matches!(flag.text.as_str(), "-c" | "--command") => {
            script_of(Some(string)).into()
        }
        [_, command @ ..] => Inner::Argv(command).into(),
        [] => Inner::Nothing.into(),
    }
}

fn find(args: &[Word]) -> Unwrapped<'_> {
    let mut commands = Vec::new();
    let mut redirects = Vec::new();
    let mut at = 0;
    while let Some(word) = args.get(at) {
        match word.text.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let start = at + 1;
                let length =
                    args.get(start..).unwrap_or(&[]).iter().take_while(|w| !is_terminator(w)).count();
                commands.push(args.get(start..start + length).unwrap_or(&[]));
                at = start + length + 1;
            }
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                redirects.extend(args.get(at + 1).map(|file| file.text.clone()));
                at += if word.text == "-fprintf" { 3 } else { 2 };
            }
            _ => at += 1,
        }
    }
    Unwrapped { inner: Inner::Many(commands), redirects, assignments: Vec::new() }
}

fn is_terminator(word: &Word) -> bool {
    word.plain && matches!(word.text.as_str(), ";" | "+")
}

fn shell(args: &[Word]) -> Unwrapped<'_> {
    let scanned = scan(args, &Spec { values: "oO", long: &["rcfile", "init-file"], plus: true });
    if scanned.has('c') {
        return script_of(scanned.rest.first()).into();
    }
    match scanned.rest.first() {
        Some(file) if !scanned.has('s') && !is_stdin(&file.text) => Inner::Nothing.into(),
        _ => Inner::Opaque("a shell reads its script from stdin").into(),
    }
}

/// `su`: options may follow the user (GNU getopt permutes).
fn su(args: &[Word]) -> Unwrapped<'_> {
    let mut command = None;
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        let value = || args.get(at + 1);
        match text {
            "-c" | "--command" | "--session-command" => {
                command = Some(value().cloned());
                at += 1;
            }
            "-s"
            | "--shell"
            | "-g"
            | "--group"
            | "-G"
            | "--supp-group"
            | "-w"
            | "--whitelist-environment" => {
                at += 1;
            }
            _ if text.starts_with("--command=") || text.starts_with("--session-command=") => {
                let string = text.split_once('=').map_or("", |(_, string)| string);
                command = Some(Some(Word { text: string.to_owned(), plain: word.plain }));
            }
            _ if text.len() > 1 && text.starts_with('-') && !text.starts_with("--") => {
                if let Some((_, after)) = text.split_once('c') {
                    if after.is_empty() {
                        command = Some(value().cloned());
                        at += 1;
                    } else {
                        command = Some(Some(Word { text: after.to_owned(), plain: word.plain }));
                    }
                }
            }
            _ => {}
        }
        at += 1;
    }
    match command {
        Some(string) => script_of(string.as_ref()).into(),
        None => Inner::Opaque("su reads commands from stdin").into(),
    }
}

fn traced<'w>(args: &'w [Word], values: &'static str, long: &'static [&'static str]) -> Unwrapped<'w> {
    let scanned = scan(args, &Spec { values, long, plus: false });
    let outputs = scanned.values_of(&["o", "output"]);
    if outputs.iter().any(|file| file.starts_with(['|', '!'])) {
        return Inner::Opaque("trace output piped to a command").into();
    }
    Unwrapped { redirects: outputs, inner: Inner::Argv(scanned.rest), assignments: Vec::new() }
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
