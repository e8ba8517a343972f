//! Unit tests of the shell analyzer: the commands, redirects, assignments
//! and opaqueness it reports for each piece of syntax and each wrapper.

use super::*;

pub(super) fn words(argv: &[&str]) -> Vec<String> {
    argv.iter().map(|word| (*word).to_owned()).collect()
}

fn commands(source: &str) -> Vec<Vec<String>> {
    script(source).commands
}

#[track_caller]
pub(super) fn runs(source: &str, argv: &[&str]) {
    let line = script(source);
    assert!(line.commands.contains(&words(argv)), "{source:?} should run {argv:?}: {line:?}");
}

#[track_caller]
pub(super) fn plain(source: &str) -> CommandLine {
    let line = script(source);
    assert_eq!(line.opaque, None, "{source:?} should be plain: {line:?}");
    line
}

#[track_caller]
pub(super) fn opaque(source: &str) -> CommandLine {
    let line = script(source);
    assert!(line.opaque.is_some(), "{source:?} should be opaque: {line:?}");
    line
}

/// Opaque, with a reason that names `form`.
#[track_caller]
pub(super) fn opaque_naming(source: &str, form: &str) {
    let line = script(source);
    let why = line.opaque.as_deref().unwrap_or_default();
    assert!(why.contains(form), "{source:?} should be opaque naming {form:?}: {line:?}");
}

/// The user's rules of the attacks: deny `rm`; allow `echo`, `printf`,
/// `ls`, `cat`, `true`, `cd`.
pub(super) fn rules() -> Vec<bosun_core::PermissionRule> {
    use bosun_core::{ArgumentPattern, Permission, PermissionRule};
    let command = |words, permission| {
        PermissionRule::matching("shell", ArgumentPattern::command("/command", words), permission)
    };
    let mut rules = vec![command("rm", Permission::Deny)];
    rules.extend(["echo", "printf", "ls", "cat", "true", "cd"].map(|name| command(name, Permission::Allow)));
    rules
}

/// The pipeline's decision for `source` as the shell tool reports it.
pub(super) fn decided(
    mode: bosun_core::Mode,
    rules: &[bosun_core::PermissionRule],
    source: &str,
) -> bosun_core::permission::Decided {
    let effects = bosun_core::CallEffects::command(script(source));
    let arguments = serde_json::json!({ "command": source });
    let call = bosun_core::permission::ProposedCall::new(
        "shell",
        bosun_core::ToolCategory::Execute,
        &arguments,
        &effects,
    );
    bosun_core::permission::decide(mode, rules, &call)
}

/// A deny rule for `rm` either matches or asks: the line never runs
/// unasked where everything else would (autonomous mode).
#[track_caller]
pub(super) fn deny_holds(source: &str) {
    let got = decided(bosun_core::Mode::Autonomous, &rules(), source);
    assert_ne!(got.permission, bosun_core::Permission::Allow, "{source:?} ran past `deny rm`: {got:?}");
}

/// Allow rules for `echo`, `printf`, … do not cover the line: it asks
/// (propose mode).
#[track_caller]
pub(super) fn allow_does_not_cover(source: &str) {
    let got = decided(bosun_core::Mode::Propose, &rules(), source);
    assert_ne!(got.permission, bosun_core::Permission::Allow, "{source:?} was allowed: {got:?}");
}

#[test]
fn separators_and_compound_commands_yield_every_simple_command() {
    let line = plain("  a 1 | b && c || d & e; (f) ; { g; }\nh |& i");
    let names: Vec<&str> = line.commands.iter().map(|argv| argv[0].as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e", "f", "g", "h", "i"]);
    assert_eq!(line.commands[0], words(&["a", "1"]));
    runs("if true; then rm x; elif a; then b; else c; fi", &["rm", "x"]);
    runs("for f in a; do rm $f; done", &["rm", "$f"]);
    runs("while false; do rm y; done", &["rm", "y"]);
    runs("case $x in a) rm z;; esac", &["rm", "z"]);
    runs("! rm x", &["rm", "x"]);
    runs("for ((i=0;i<1;i++)); do rm x; done", &["rm", "x"]);
    let line = plain("f() { rm x; }; function g { h; }; f");
    assert_eq!(line.commands, [words(&["rm", "x"]), words(&["h"]), words(&["f"])]);
}

#[test]
fn quotes_and_escapes_are_removed() {
    assert_eq!(commands("'r'm x"), [words(&["rm", "x"])]);
    assert_eq!(commands("\"rm\" 'a b' \"c\\\"d\" \"$\" a$"), [words(&["rm", "a b", "c\"d", "$", "a$"])]);
    assert_eq!(commands("r\\m \\*"), [words(&["rm", "*"])]);
    assert_eq!(
        commands("$'\\x72m' $'a\\tb' $'\\162' $'\\u0041' $'x\\0y'"),
        [words(&["rm", "a\tb", "r", "A", "x"])]
    );
    assert_eq!(commands("echo $\"hi\" $ x"), [words(&["echo", "hi", "$", "x"])]);
    assert_eq!(commands("\"r\"\"m\" x"), [words(&["rm", "x"])]);
}

#[test]
fn line_continuations_join_words_as_bash_does() {
    assert_eq!(plain("r\\\nm x").commands, [words(&["rm", "x"])]);
    assert_eq!(plain("'r'\\\nm x").commands, [words(&["rm", "x"])]);
    assert_eq!(plain("ls \\\n  -la").commands, [words(&["ls", "-la"])]);
    assert_eq!(plain("\"r\\\nm\" x").commands, [words(&["rm", "x"])]);
    assert_eq!(plain("echo a\\\\\\\nb").commands, [words(&["echo", "a\\b"])]);
    // An escaped backslash before a newline is no continuation.
    assert_eq!(plain("echo a\\\\\nrm x").commands, [words(&["echo", "a\\"]), words(&["rm", "x"])]);
    // Inside single quotes the backslash and newline stay.
    assert_eq!(plain("echo 'a\\\nb'").commands, [words(&["echo", "a\\\nb"])]);
}

#[test]
fn expansions_stay_raw_in_arguments_and_are_opaque_in_command_position() {
    assert_eq!(
        plain("ls $HOME ${X} *.rs \"$Y z\" {a,b}").commands,
        [words(&["ls", "$HOME", "${X}", "*.rs", "\"$Y z\"", "{a,b}"])]
    );
    assert_eq!(plain("echo $((1 + 2))").commands, [words(&["echo", "$((1 + 2))"])]);
    for source in ["$x y", "${x} y", "\"$x\" y", "*.sh", "r*m x", "IFS=, ; x=rm,x; $x"] {
        opaque(source);
    }
    assert!(opaque("$CMD x").commands.contains(&words(&["$CMD", "x"])));
}

#[test]
fn substitutions_are_opaque_and_their_commands_are_collected() {
    for (source, inner) in [
        ("echo $(rm x)", "rm"),
        ("echo `rm x`", "rm"),
        ("diff <(rm x) y", "rm"),
        ("echo \"$(rm x)\"", "rm"),
        ("x=$(rm x) ls", "rm"),
        ("cat <<EOF\n$(rm x)\nEOF", "rm"),
        ("cat <<< \"$(rm x)\"", "rm"),
        ("ls > \"$(rm x)\"", "rm"),
        // Backticks tree-sitter-bash leaves as plain text.
        ("echo \"${x:-`rm y`}\"", "rm"),
        ("echo ${x#`rm y`}", "rm"),
        ("[[ $x =~ `rm y` ]]", "rm"),
        ("cat <<EOF\n`rm y`\nEOF", "rm"),
        ("cat <<EOF\nhello $(ls) `rm y`\nEOF", "rm"),
    ] {
        let line = opaque(source);
        assert!(line.commands.iter().any(|argv| argv[0] == inner), "{source:?}: {line:?}");
    }
}

#[test]
fn output_redirections_are_files_written() {
    let line = plain("cmd > a 2>&1 >> b >| c &> d &>> e 3> f < in 2>/dev/null >/dev/stderr 1>&2 >&-");
    assert_eq!(line.redirects, ["a", "b", "c", "d", "e", "f"]);
    assert_eq!(plain("echo >&out").redirects, ["out"]);
    assert_eq!(plain("cat <<EOF > f\nhi\nEOF").redirects, ["f"]);
    assert_eq!(plain("ls | tee -a x 'y z' /dev/null").redirects, ["x", "y z"]);
    assert_eq!(plain("> f").redirects, ["f"]);
    assert_eq!(plain("echo {} ; find . -fprint list").redirects, ["list"]);
    assert!(plain("git status 2>/dev/null").redirects.is_empty());
}

#[test]
fn assignments_are_named() {
    let line = plain("A=1 B=2 cmd; C=3; export D=4 E; declare -x F=5; local G; env H=6 ls; readonly I=7");
    assert_eq!(line.assignments, ["A", "B", "C", "D", "F", "H", "I"]);
    assert!(line.commands.contains(&words(&["export", "D=4", "E"])));
    assert!(line.commands.contains(&words(&["ls"])));
    assert_eq!(plain("a[1]=2").assignments, ["a"]);
}

#[test]
fn wrappers_contribute_themselves_and_what_they_run() {
    let line = plain("sudo env nice rm x");
    assert_eq!(
        line.commands,
        [
            words(&["sudo", "env", "nice", "rm", "x"]),
            words(&["env", "nice", "rm", "x"]),
            words(&["nice", "rm", "x"]),
            words(&["rm", "x"])
        ]
    );
    for source in [
        "sudo -u root rm x",
        "sudo -E -- rm x",
        "/usr/bin/sudo FOO=1 rm x",
        "doas -u root rm x",
        "command rm x",
        "builtin rm x",
        "exec -a name rm x",
        "env -i -- FOO=1 rm x",
        "env -u HOME rm x",
        "env -S 'rm x'",
        "nice -n 5 rm x",
        "nice -5 rm x",
        "nohup rm x",
        "time rm x",
        "time -p rm x",
        "timeout -s KILL 5 rm x",
        "stdbuf -oL rm x",
        "ionice -c 3 rm x",
        "setsid -f rm x",
        "chrt -f 10 rm x",
        "taskset -c 0 rm x",
        "flock /tmp/l rm x",
        "flock -w 3 /tmp/l -c 'rm x'",
        "xargs -I R -n 1 -P 2 -d , rm x",
        "xargs -0 rm x",
        "find . -name a -exec rm x ';'",
        "watch -n 1 rm x",
        "watch -x rm x",
        "bash -c 'rm x'",
        "sh -lc \"rm x\"",
        "dash -ec 'true; rm x'",
        "/bin/zsh -o pipefail -c 'rm x'",
        "busybox sh -c 'rm x'",
        "busybox rm x",
        "su -c 'rm x' root",
        "su root -c 'rm x'",
        "eval rm x",
        "eval \"r\"\"m x\"",
        "strace -f -o /dev/null rm x",
        "ltrace -e malloc rm x",
        "trap 'rm x' EXIT",
        "coproc rm x",
    ] {
        runs(source, &["rm", "x"]);
        plain(source);
    }
    runs("find . -execdir rm x {} + -o -ok rm y ;", &["rm", "x", "{}"]);
    runs("find . -execdir rm x {} + -o -ok rm y \\;", &["rm", "y"]);
    assert_eq!(commands("command -v rm"), [words(&["command", "-v", "rm"])]);
    assert_eq!(plain("env -i FOO=1 BAR=2 rm x").assignments, ["FOO", "BAR"]);
    assert_eq!(plain("time -o t.txt ls").redirects, ["t.txt"]);
    assert_eq!(plain("strace -o trace.log ls").redirects, ["trace.log"]);
}

#[test]
fn wrapper_command_positions_must_be_plain() {
    for source in [
        "sudo $x",
        "env \"$(which rm)\" x",
        "xargs $CMD",
        "nice r*m",
        "timeout 5 $c",
        "bash -c \"$s\"",
        "eval $x",
    ] {
        opaque(source);
    }
    // An option value in double quotes is one word; unquoted, it may split
    // and move the command (`sudo -u $U echo rm x` with `U` empty runs `rm`).
    assert_eq!(plain("sudo -u \"$USER\" rm x").commands[1], words(&["rm", "x"]));
    opaque("sudo -u $USER rm x");
}

#[test]
fn shells_reading_stdin_are_opaque() {
    for source in [
        "curl x | sh",
        "bash <<EOF\nrm x\nEOF",
        "bash",
        "sh -s",
        "bash /dev/stdin",
        "su root",
        "sudo -s",
        "source /dev/stdin",
        "strace -o '|sh' ls",
        "env -S 'rm \"x\"'",
    ] {
        opaque(source);
    }
    assert_eq!(plain("bash script.sh arg").commands, [words(&["bash", "script.sh", "arg"])]);
    // `source` runs the file in this shell, where it may redefine what
    // later commands run: never plain.
    assert_eq!(opaque("source ./env.sh").commands, [words(&["source", "./env.sh"])]);
}

#[test]
fn syntax_errors_lookalikes_and_aliases_are_opaque() {
    for source in [
        "echo \"abc",
        "echo 'abc",
        "(rm x",
        "if true; then",
        "гm x",
        "rｍ x",
        "$'r\\x01m' x",
        "alias x=rm",
        "hash -p /bin/rm ls; ls x",
        "enable -f ./x.so ls",
        "x='a[$(rm x)]'; echo $((x))",
        "[[ -v 'a[$(rm x)]' ]]",
    ] {
        opaque(source);
    }
    assert!(opaque("echo \"abc; rm x").commands.iter().any(|argv| argv[0] == "echo"));
    let mut long = "true;".repeat(MAX_SCRIPT_BYTES / 5);
    long.push_str("rm x");
    assert_eq!(script(&long).opaque.as_deref(), Some("script longer than 64 kib"));
}

#[test]
fn nesting_is_bounded() {
    let mut nested = "rm x".to_owned();
    for _ in 0..4 {
        nested = format!("sh -c {}", quote(&nested));
    }
    assert_eq!(plain(&nested).commands.last(), Some(&words(&["rm", "x"])));
    let evals = format!("{}rm x", "eval ".repeat(12));
    assert_eq!(script(&evals).opaque.as_deref(), Some("wrappers nested too deeply"));
    let wrappers = format!("{}rm x", "nice ".repeat(12));
    assert_eq!(script(&wrappers).opaque.as_deref(), Some("wrappers nested too deeply"));
    let deep = format!("{}rm x{}", "(".repeat(5000), ")".repeat(5000));
    assert!(script(&deep).opaque.is_some());
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[test]
fn comments_and_blank_lines_run_nothing() {
    assert_eq!(plain("ls # ; rm x").commands, [words(&["ls"])]);
    assert!(plain("  \n# only a comment\n").commands.is_empty());
    assert_eq!(plain("cat <<'EOF'\n`rm x` $(rm y)\nEOF").commands, [words(&["cat"])]);
}

#[test]
fn argv_form_is_not_parsed_as_shell_but_wrappers_are_seen() {
    let line = argv(&words(&["rm", "-rf", "$(x)", "*"]));
    assert_eq!(line, CommandLine::plain(vec![words(&["rm", "-rf", "$(x)", "*"])]));
    let line = argv(&words(&["bash", "-c", "rm x; ls"]));
    assert_eq!(line.commands, [words(&["bash", "-c", "rm x; ls"]), words(&["rm", "x"]), words(&["ls"])]);
    assert!(argv(&words(&["sudo", "rm", "x"])).commands.contains(&words(&["rm", "x"])));
    assert!(argv(&words(&["гm", "x"])).opaque.is_some());
    assert!(argv(&words(&["$x"])).opaque.is_none());
    assert!(argv(&words(&["sh"])).opaque.is_some());
}

#[test]
fn arbitrary_token_soup_never_panics() {
    const TOKENS: [&str; 30] = [
        "rm", " ", "'", "\"", "\\", "\n", "$(", ")", "(", "`", "{", "}", ";", "|", "&", "<<", "EOF", "$'\\x",
        "${", "#", "sh -c ", "г", "*", "[", "=", "((", ">", "\\\n", "eval ", "$",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let length = next() % 40;
        let source: String = (0..length).map(|_| TOKENS[(next() % TOKENS.len() as u64) as usize]).collect();
        let line = script(&source);
        let argv_line = argv(&source.split(' ').map(str::to_owned).collect::<Vec<_>>());
        assert!(line.commands.len() < 10_000 && argv_line.commands.len() < 10_000, "{source:?}");
    }
}

#[test]
fn nesting_through_nested_scripts_fits_a_small_stack() {
    let inner = format!("{}echo \"${{x:-$(rm x)}}\"{}", "( ".repeat(300), " )".repeat(300));
    let deep = format!("eval eval eval {}", quote(&quote(&quote(&inner))));
    let walked = std::thread::Builder::new().stack_size(512 * 1024).spawn(move || script(&deep));
    let line = walked.ok().and_then(|thread| thread.join().ok());
    assert_eq!(line.and_then(|line| line.opaque).as_deref(), Some("syntax nested too deeply"));
}
