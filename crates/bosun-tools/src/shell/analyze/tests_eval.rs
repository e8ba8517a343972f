//! Unit tests of the forms in which bash evaluates a string as code where an
//! argument stands (`${x@P}`, arithmetic on variables, `printf -v`, `read`
//! into a chosen name, prompt variables, …): each is opaque with a reason
//! naming it, so an allow rule for `echo` does not cover it and a deny rule
//! for `rm` asks; the pure forms stay plain.

use super::tests::{allow_does_not_cover, deny_holds, opaque_naming, plain, runs, words};
use super::*;

#[test]
fn prompt_expansion_is_opaque() {
    for source in [
        "echo ${x@P}",
        "echo \"${x@P}\"",
        "echo ${x[@]@P}",
        "echo ${!x@P}",
        "printf %s \"a${x@P}b\"",
        "cat <<EOF\n${x@P}\nEOF",
        "x='$(rm y)'; echo ${x@P}",
    ] {
        opaque_naming(source, "@P");
        allow_does_not_cover(source);
        deny_holds(source);
    }
    // The other transformations only quote or change case.
    plain("echo ${x@Q} ${x@A} ${x@E} ${x^^} ${x,,} ${x@U}");
}

#[test]
fn indirect_expansion_and_namerefs_are_opaque() {
    for source in ["echo ${!x}", "echo \"${!x}\"", "echo ${!x:-y}", "echo ${!1}", "echo ${!a[0]}"] {
        opaque_naming(source, "indirect");
        deny_holds(source);
    }
    for source in ["declare -n r=$x; echo $r", "local -n r", "typeset -n r=y", "declare -gn r=\"$1\""] {
        opaque_naming(source, "nameref");
        deny_holds(source);
    }
    // Names and keys are listed, never evaluated.
    plain("echo ${!a[@]} ${!a[*]} ${!pre*} ${!pre@}");
}

#[test]
fn arithmetic_on_variables_is_opaque() {
    for source in [
        "echo $((x))",
        "echo $[x]",
        "echo $(( $x + 1 ))",
        "echo \"$((x * 2))\"",
        "((x))",
        "if ((x > 1)); then :; fi",
        "while ((i < 3)); do :; done",
        "for ((i = 0; i < n; i++)); do :; done",
        "x='a[$(rm y)]'; echo $((x))",
    ] {
        opaque_naming(source, "arithmetic");
        allow_does_not_cover(source);
        deny_holds(source);
    }
    for (source, operator) in [
        ("[[ $x -eq 0 ]]", "-eq"),
        ("[[ x -lt 1 ]]", "-lt"),
        ("[[ 1 -ne $y ]]", "-ne"),
        ("[[ ( $x -ge 1 ) ]]", "-ge"),
        ("[[ 1 -le 2 && $b -gt 1 ]]", "-gt"),
        ("[[ \"$n\" -le 2 ]]", "-le"),
    ] {
        opaque_naming(source, operator);
        deny_holds(source);
    }
    for source in ["let x=1", "let 'y = x + 1'", "let \"$e\""] {
        opaque_naming(source, "let");
        deny_holds(source);
    }
    for source in ["declare -i n; n=$x", "typeset -i n", "local -i n=1", "declare -ai n", "declare -i"] {
        opaque_naming(source, "-i");
        deny_holds(source);
    }
    // Literal arithmetic, counts and lengths evaluate no variable.
    plain("echo $((1 + 2)) $[3 * 4] $(( $# + ${#x} - ${#a[@]} )) $((0x1f)) $((2#101)) $(( (1 << 3) % 5 ))");
    plain("((1)); [[ 1 -eq 1 ]]; [[ $# -gt 0 ]]; [[ $? -ne 0 ]]");
    // `[` and `test` compare integers without evaluating them.
    plain("[ $x -eq 0 ]; test \"$y\" -lt 1");
}

#[test]
fn subscripts_and_offsets_with_variables_are_opaque() {
    for source in [
        "echo ${a[$i]}",
        "echo ${a[i]}",
        "echo \"${a[$i+1]}\"",
        "echo ${#a[$i]}",
        "a[$i]=1",
        "a[i]=1",
        "a=([$i]=1)",
        "a+=([x]=2)",
        "declare a[$i]=1",
        "declare -a 'a[x]=1'",
        "unset 'a[$i]'",
    ] {
        opaque_naming(source, "subscript");
        deny_holds(source);
    }
    for source in ["echo ${s:x}", "echo ${s:1:$n}", "echo ${@:i}", "echo ${a[@]:o}"] {
        opaque_naming(source, "offset");
        deny_holds(source);
    }
    for source in ["test -v \"$x\"", "[ -v \"$x\" ]", "[[ -v $x ]]", "test -v 'a[i]'", "[[ -v a[$i] ]]"] {
        opaque_naming(source, "-v");
        deny_holds(source);
    }
    plain("echo ${a[1]} ${a[@]} ${a[*]} ${x:1:2} ${x: -1} ${x:(-1)} ${x:-y} ${#a[@]} ${a[-1]}");
    plain("a[0]=1; a=([0]=1 2 [5]=3); b+=(x y); test -v name; [[ -v name ]]; [ -v 'a[2]' ]");
    assert_eq!(plain("a[0]=1").assignments, ["a"]);
}

#[test]
fn declarations_of_names_that_are_not_fixed_are_opaque() {
    for (source, form) in [
        ("declare \"$x\"=1", "declare"),
        ("local \"$n\"", "local"),
        ("export $x", "export"),
        ("readonly \"$n=1\"", "readonly"),
        ("unset \"$x\"", "unset"),
        ("unset -v $x", "unset"),
    ] {
        opaque_naming(source, form);
        deny_holds(source);
    }
    plain("declare -r x=1; export PATH=\"$HOME/bin:$PATH\"; local y=$1; unset x y; unset -f f");
}

#[test]
fn builtins_that_assign_to_a_named_variable_need_a_fixed_name() {
    for (source, form) in [
        ("printf -v \"$n\" %s x", "printf -v"),
        ("printf -v a[$i] %s x", "printf"),
        ("printf -va[i] %s x", "printf"),
        ("read \"$n\"", "read"),
        ("read -r -a \"$n\"", "read"),
        ("read 'a[i]'", "read"),
        ("mapfile \"$n\"", "mapfile"),
        ("readarray -t 'a[i]'", "readarray"),
        ("getopts ab \"$n\"", "getopts"),
        ("wait -n -p \"$n\"", "wait -p"),
    ] {
        opaque_naming(source, form);
        deny_holds(source);
    }
    for source in ["mapfile -C 'rm y' -c 1 arr", "readarray -t -C cb lines"] {
        opaque_naming(source, "-C");
        deny_holds(source);
    }
    opaque_naming("mapfile -C\"$f\" a", "mapfile");
    let line = plain("printf -v out %s x; read -r a b; IFS= read -rd '' c; mapfile -t lines; getopts ab opt");
    assert_eq!(line.assignments, ["out", "a", "b", "IFS", "c", "lines", "opt"]);
    assert_eq!(plain("read -r -p 'name? ' -a arr").assignments, ["arr"]);
}

#[test]
fn eval_source_trap_and_their_kin_are_seen_through_or_opaque() {
    runs("eval rm y", &["rm", "y"]);
    plain("eval 'rm y'");
    opaque_naming("eval \"$x\"", "eval");
    for source in ["source x.sh", ". ./x.sh", "source x.sh; ls", "builtin source x.sh", "command . x"] {
        opaque_naming(source, "source");
        allow_does_not_cover(source);
        deny_holds(source);
    }
    runs("trap 'rm y' EXIT", &["rm", "y"]);
    plain("trap 'rm y' EXIT; trap - INT; trap -p");
    for source in ["trap \"$x\" EXIT", "trap -- \"$x\" INT"] {
        opaque_naming(source, "expansion");
        deny_holds(source);
    }
    for (source, form) in [
        ("complete -C 'rm y' ls", "complete"),
        ("complete -F f ls", "complete"),
        ("compgen -C 'rm y' x", "compgen"),
        ("compgen -W '$(rm y)' x", "compgen"),
        ("compgen -F f x", "compgen"),
        ("bind -x '\"\\C-a\": rm y'", "bind -x"),
        ("enable -f ./x.so x", "enable -f"),
        ("fc -s", "fc"),
        ("fc -e - 1", "fc"),
        ("alias ls='rm y'", "alias"),
        ("shopt -s expand_aliases", "expand_aliases"),
        ("shopt -s -o nounset expand_aliases", "expand_aliases"),
        ("hash -p /bin/rm ls; ls y", "hash -p"),
    ] {
        opaque_naming(source, form);
        deny_holds(source);
    }
    plain("compgen -c; complete -p; shopt -s nullglob; alias; bind -p; enable; hash -r");
}

#[test]
fn prompt_and_startup_variables_are_opaque_however_assigned() {
    for (source, name) in [
        ("PS4='$(rm y)'; set -x; ls", "PS4"),
        ("export PS4='$(rm y)'", "PS4"),
        ("declare PS4=x", "PS4"),
        ("read PS4 < f", "PS4"),
        ("printf -v PS4 %s x", "PS4"),
        ("env PS4='$(rm y)' bash -xc ls", "PS4"),
        ("PS0=x", "PS0"),
        ("PS1=x bash -ic ls", "PS1"),
        ("PS2=x", "PS2"),
        ("PROMPT_COMMAND='rm y'", "PROMPT_COMMAND"),
        ("BASH_ENV=x.sh bash -c ls", "BASH_ENV"),
        ("ENV=x.sh sh -c ls", "ENV"),
        ("sudo BASH_ENV=x.sh bash -c ls", "BASH_ENV"),
        ("BASH_CMDS[ls]=/bin/rm; ls y", "BASH_CMDS"),
        ("BASH_ALIASES[ls]=rm", "BASH_ALIASES"),
    ] {
        opaque_naming(source, name);
        allow_does_not_cover(source);
        deny_holds(source);
    }
    for source in [
        "env 'BASH_FUNC_ls%%=() { rm y; }' bash -c ls",
        "sudo 'BASH_FUNC_ls%%=() { rm y; }' bash -c ls",
        "env -i 'BASH_FUNC_x()=() { rm y; }' sh -c x",
    ] {
        opaque_naming(source, "BASH_FUNC_");
        deny_holds(source);
    }
}

#[test]
fn functions_defined_in_the_line_are_seen_through() {
    let line = plain("f() { rm y; }; export -f f; bash -c f");
    assert!(line.commands.contains(&words(&["rm", "y"])), "{line:?}");
    deny_holds("ls() { rm y; }; ls");
    allow_does_not_cover("ls() { rm y; }; ls");
    // `env` counts any word with `=` as an assignment, not as the command.
    assert_eq!(plain("env A-B=1 ls").commands.last(), Some(&words(&["ls"])));
}

#[test]
fn coproc_and_time_before_a_compound_command_are_opaque() {
    runs("coproc rm y", &["rm", "y"]);
    plain("coproc rm y");
    for source in
        ["coproc N { rm y; }", "coproc { rm y; }", "time { rm y; }", "time ! rm y", "nice { rm y; }"]
    {
        let line = script(source);
        assert!(line.opaque.is_some(), "{source:?}: {line:?}");
        deny_holds(source);
    }
}
