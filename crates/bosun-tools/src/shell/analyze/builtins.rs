//! Shell builtins that run code, rebind names or assign to a variable whose
//! name is an argument.
//!
//! Seen through: `eval WORDS` (joined with spaces and parsed), `trap ACTION
//! SIGNAL…`, `coproc CMD`. Opaque: `eval` or `trap` of words with
//! expansions, `source`/`.` (a file's commands run in this shell and may
//! redefine what later commands run), `alias NAME=…` and `shopt -s
//! expand_aliases` (an alias expands to code), `hash -p` (rebinds a name),
//! `enable -f` (loads a builtin), `fc` (runs history), `complete`/`compgen`
//! with `-C`/`-F`/`-W` (run or expand code), `bind -x`, `mapfile -C` (a
//! callback), `coproc` before a compound command (the parser does not model
//! it), `let` and `declare -i` (arithmetic on variables), `declare -n`
//! (namerefs), and any builtin that assigns to, tests or unsets a name that
//! is not fixed (`printf -v "$n"`, `read 'a[i]'`, `test -v "$x"`, `unset
//! "$x"`): arithmetic on a subscript runs the command substitutions in a
//! variable's value. The names a builtin assigns are reported.

use super::Word;
use super::eval_forms::evaluated;
use super::options::{Grammar, scan};
use super::words::{is_fixed_name, literal_arithmetic};
use super::wrappers::{Inner, Unwrapped};

/// Files that are a process's standard input.
pub(super) fn is_stdin(path: &str) -> bool {
    matches!(path, "-" | "/dev/stdin")
        || path.starts_with("/dev/fd/")
        || (path.starts_with("/proc/") && path.contains("/fd/"))
}

/// Words joined with spaces, as `eval` and `watch` join them.
pub(super) fn join(words: &[Word]) -> String {
    words.iter().map(|word| word.text.as_str()).collect::<Vec<_>>().join(" ")
}

/// A `-c` string to parse, if it is plain; none runs nothing.
pub(super) fn script_of(word: Option<&Word>) -> Inner {
    match word {
        None => Inner::Nothing,
        Some(word) if word.plain => Inner::Script(word.text.clone()),
        Some(_) => Inner::Opaque("a script with expansions".to_owned()),
    }
}

/// Words where a compound command starts: bash's `coproc` and `time` take
/// one, which tree-sitter-bash does not parse.
pub(super) const RESERVED: &[&str] = &[
    "!", "{", "}", "(", ")", "((", "[[", "]]", "case", "do", "done", "elif", "else", "esac", "fi", "for",
    "function", "if", "in", "select", "then", "until", "while",
];

/// What a builtin named `name` does with `args`, if it is one handled here.
pub(super) fn unwrap(name: &str, args: &[Word]) -> Option<Unwrapped> {
    let opaque = |why: &str| Some(Unwrapped::opaque(why));
    match name {
        "eval" if args.iter().all(|word| word.plain) => Some(Inner::Script(join(args)).into()),
        "eval" => opaque("eval of words with expansions"),
        "source" | "." => opaque(
            "source (`.`) runs a file's commands in this shell, where they can redefine later commands",
        ),
        "trap" => Some(trap(args)),
        "coproc" => Some(coproc(args)),
        "alias" if args.iter().any(|word| word.text.contains('=') || !word.plain) => {
            opaque("alias definition")
        }
        "hash" if has_short(args, 'p') => opaque("hash -p rebinds a command name"),
        "enable" if has_short(args, 'f') => opaque("enable -f loads a builtin"),
        "fc" => opaque("fc runs commands from the history"),
        "bind" if has_short(args, 'x') => opaque("bind -x binds a key to a command"),
        "complete" | "compgen" if ['C', 'F', 'W'].into_iter().any(|letter| has_short(args, letter)) => {
            Some(Unwrapped::opaque(format!("`{name} -C/-F/-W` runs or expands code")))
        }
        "shopt" if args.iter().any(|word| !word.plain || word.text == "expand_aliases") => {
            opaque("shopt -s expand_aliases makes alias definitions code")
        }
        "let" if args.iter().all(|word| word.plain && literal_arithmetic(&word.text)) => {
            Some(Unwrapped::default())
        }
        "let" => opaque("`let` evaluates arithmetic on variables, which can run commands in their values"),
        "test" | "[" => Some(test(args)),
        "printf" => Some(printf(args)),
        "read" => Some(assigning("read", args, "+a:d:i:n:N:p:t:u:ers", &["a"], true)),
        "mapfile" | "readarray" => Some(mapfile(name, args)),
        "getopts" => Some(getopts(args)),
        "wait" => Some(assigning("wait", args, "+fnp:", &["p"], false)),
        "declare" | "typeset" | "local" | "export" | "readonly" | "unset" => Some(declare(name, args)),
        _ => None,
    }
}

/// Whether a short option is given anywhere (these builtins take values
/// between their options, so every option word counts; an expansion may be
/// one).
fn has_short(args: &[Word], letter: char) -> bool {
    args.iter().any(|word| {
        !word.plain
            || (word.text.starts_with('-') && !word.text.starts_with("--") && word.text.contains(letter))
    })
}

/// `trap [-lp] [[ACTION] SIGNAL…]`: the action is a script run later.
fn trap(args: &[Word]) -> Unwrapped {
    match scan(args, &Grammar { program: "trap", short: "+lp", ..Grammar::STRICT }) {
        Ok(scanned) if scanned.has_any(&["l", "p"]) => Unwrapped::default(),
        Ok(scanned) => match scanned.operands.as_slice() {
            [action, _, ..] if action.text != "-" || !action.plain => script_of(Some(action)).into(),
            _ => Unwrapped::default(),
        },
        Err(why) => Unwrapped::opaque(why),
    }
}

/// `coproc [NAME] COMMAND`: a simple command is seen through; a compound
/// one (`coproc N { …; }`) is not parsed by tree-sitter-bash.
fn coproc(args: &[Word]) -> Unwrapped {
    let compound = args.iter().take(2).any(|word| RESERVED.contains(&word.text.as_str()));
    if compound {
        return Unwrapped::opaque("coproc with a compound command");
    }
    Unwrapped::argv(args)
}

/// `test`/`[`: `-v NAME` and `-R NAME` evaluate the subscript of `NAME`.
fn test(args: &[Word]) -> Unwrapped {
    let tested = args.windows(2).filter(|pair| pair[0].plain && matches!(pair[0].text.as_str(), "-v" | "-R"));
    if tested.into_iter().any(|pair| !(pair[1].plain && is_fixed_name(&pair[1].text))) {
        return Unwrapped::opaque("`test -v` on a name that is not fixed evaluates its subscript");
    }
    Unwrapped::default()
}

/// The name a builtin assigns: reported, or opaque when it is not fixed.
fn assigned(builtin: &str, word: &Word, assignments: &mut Vec<String>) -> Result<(), String> {
    if !(word.plain && is_fixed_name(&word.text)) {
        return Err(format!("`{builtin}` assigns to a name that is not fixed, which can run commands"));
    }
    let base = word.text.split('[').next().unwrap_or(&word.text);
    assignments.push(base.to_owned());
    Ok(())
}

/// `printf [-v NAME] FORMAT ARGS`.
fn printf(args: &[Word]) -> Unwrapped {
    let scanned =
        match scan(args, &Grammar { program: "printf", short: "+v:", strict: false, ..Grammar::STRICT }) {
            Ok(scanned) => scanned,
            Err(why) => return Unwrapped::opaque(why),
        };
    let mut assignments = Vec::new();
    for name in scanned.values_of(&["v"]) {
        if let Err(why) = assigned("printf -v", name, &mut assignments) {
            return Unwrapped::opaque(why);
        }
    }
    Unwrapped { assignments, ..Unwrapped::default() }
}

/// A builtin whose `names` options and (when `operands`) operands are names
/// it assigns: `read [-a NAME] NAME…`, `wait -p NAME`.
fn assigning(
    builtin: &'static str,
    args: &[Word],
    short: &'static str,
    names: &[&str],
    operands: bool,
) -> Unwrapped {
    let scanned = match scan(args, &Grammar { program: builtin, short, ..Grammar::STRICT }) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    let mut assignments = Vec::new();
    let targets = scanned.values_of(names).into_iter().chain(scanned.operands.iter().filter(|_| operands));
    for target in targets {
        let label = if operands { builtin.to_owned() } else { format!("{builtin} -p") };
        if let Err(why) = assigned(&label, target, &mut assignments) {
            return Unwrapped::opaque(why);
        }
    }
    Unwrapped { assignments, ..Unwrapped::default() }
}

/// `mapfile [-d D] [-n N] [-O O] [-s S] [-t] [-u FD] [-C CALLBACK [-c N]]
/// [ARRAY]`: the callback is code.
fn mapfile(name: &str, args: &[Word]) -> Unwrapped {
    let scanned =
        match scan(args, &Grammar { program: "mapfile", short: "+d:n:O:s:tu:C:c:", ..Grammar::STRICT }) {
            Ok(scanned) => scanned,
            Err(why) => return Unwrapped::opaque(why),
        };
    if scanned.has("C") {
        return Unwrapped::opaque(format!("`{name} -C` runs its callback as code"));
    }
    let mut assignments = Vec::new();
    let array = scanned.operands.first().cloned().unwrap_or_else(|| Word::literal("MAPFILE"));
    if let Err(why) = assigned(name, &array, &mut assignments) {
        return Unwrapped::opaque(why);
    }
    Unwrapped { assignments, ..Unwrapped::default() }
}

/// `getopts OPTSTRING NAME [ARGS]`.
fn getopts(args: &[Word]) -> Unwrapped {
    let mut assignments = Vec::new();
    match args.get(1) {
        Some(name) => match assigned("getopts", name, &mut assignments) {
            Ok(()) => Unwrapped { assignments, ..Unwrapped::default() },
            Err(why) => Unwrapped::opaque(why),
        },
        None => Unwrapped::default(),
    }
}

/// `declare`, `typeset`, `local`, `export`, `readonly`, `unset`: `-i` and
/// `-n` (not `export -n`) make later assignments evaluate; every name must
/// be fixed. The names assigned are reported by the walk, from the syntax.
fn declare(name: &str, args: &[Word]) -> Unwrapped {
    let attributes = matches!(name, "declare" | "typeset" | "local");
    let mut options = true;
    for word in args {
        if options && word.plain && word.text == "--" {
            options = false;
            continue;
        }
        if options && word.plain && word.text.len() > 1 && word.text.starts_with('-') {
            if attributes && word.text.contains('n') {
                return Unwrapped::opaque(format!(
                    "a nameref (`{name} -n`) evaluates a name taken from a value"
                ));
            }
            if attributes && word.text.contains('i') {
                return Unwrapped::opaque(format!(
                    "`{name} -i` makes assignments arithmetic, which can run commands in a value"
                ));
            }
            continue;
        }
        if options && word.plain && word.text.starts_with('+') {
            continue;
        }
        options = false;
        if !word.plain {
            return Unwrapped::opaque(format!("`{name}` of a name that is not fixed"));
        }
        let declared = word.text.split_once('=').map_or(word.text.as_str(), |(declared, _)| declared);
        let declared = declared.strip_suffix('+').unwrap_or(declared);
        if let Some(why) = evaluated(declared.split('[').next().unwrap_or(declared)) {
            return Unwrapped::opaque(why);
        }
        if declared.contains('[') && !is_fixed_name(declared) {
            return Unwrapped::opaque(format!(
                "the array subscript of `{declared}` is evaluated as arithmetic on variables, which can run commands"
            ));
        }
    }
    Unwrapped::default()
}
