//! Programs that run another command from their arguments, and what they run.
//!
//! A wrapper's own argv is recorded by the caller; [`unwrap`] says what it
//! runs next, and the caller analyzes that the same way (so wrappers nest).
//! Names are matched on the last component of the command name. Shell
//! builtins are in [`super::builtins`], programs whose options or languages
//! run commands (`tar`, `sed`, `git`, …) in [`super::programs`].
//!
//! Most wrappers are rows of [`WRAPPERS`]: options read by their [`Grammar`]
//! (strict: an option not listed, or an expansion where an option may stand,
//! makes the line opaque), then a number of operands, then the argv run. To
//! add one, give its getopt string and long options as its source has them.
//! The others, below the table, have a grammar of their own: `sudo`,
//! `env`, `xargs`, `find`, `flock`, `chrt`, `taskset`, `ionice`, `prlimit`,
//! `command`, `time`, `watch`, `busybox`, the tracers, `xvfb-run`,
//! `fakeroot` and the project runners (`uv run`, `npx`, …). Programs that
//! run a command string through a shell or as another user (`bash -c`,
//! `su`, `runuser`, `sg`, `script`, `capsh`, `pee`) are in
//! [`super::shells`].
//!
//! A wrapper given no command runs nothing, but under `xargs` the words it
//! appends would be the command: the caller refuses that (`open`).

use super::Word;
use super::options::{Grammar, Scanned, names_long, scan};
use super::{builtins, programs, shells};

/// What a wrapper runs next.
#[derive(Debug, Default)]
pub(super) enum Inner {
    /// Nothing: not a wrapper, or one given no command (run alone it does
    /// nothing; words `xargs` appends would be the command, which the
    /// caller refuses).
    #[default]
    Nothing,
    /// This argv.
    Argv(Vec<Word>),
    /// Each of these argvs.
    Many(Vec<Vec<Word>>),
    /// This script, to parse.
    Script(String),
    /// Something that cannot be known, and why.
    Opaque(String),
}

/// What a wrapper runs, assigns and writes.
#[derive(Debug, Default)]
pub(super) struct Unwrapped {
    pub(super) inner: Inner,
    /// Names of variables set for what it runs.
    pub(super) assignments: Vec<String>,
    /// Files it writes.
    pub(super) redirects: Vec<String>,
    /// Words are appended to the inner argv when it runs (`xargs`).
    pub(super) open: bool,
}

impl From<Inner> for Unwrapped {
    fn from(inner: Inner) -> Self {
        Self { inner, ..Self::default() }
    }
}

impl Unwrapped {
    pub(super) fn opaque(why: impl Into<String>) -> Self {
        Inner::Opaque(why.into()).into()
    }

    pub(super) fn argv(words: &[Word]) -> Self {
        Inner::Argv(words.to_vec()).into()
    }
}

/// A wrapper of the table: options, then `operands` words, then the argv
/// run. With no argv left, `shell` says it starts a shell reading stdin.
struct Wrapper {
    names: &'static [&'static str],
    /// getopt's string and long options, as [`Grammar`] reads them.
    short: &'static str,
    long: &'static str,
    operands: usize,
    shell: bool,
}

/// The wrappers read by a grammar alone; each getopt string is the one its
/// source passes (util-linux, coreutils, bash's builtins, …).
const WRAPPERS: &[Wrapper] = &[
    // bash `builtin NAME ARGS`; `nohup CMD` and the preload wrappers take
    // no options.
    Wrapper {
        names: &["builtin", "nohup", "eatmydata", "nocache", "catchsegv"],
        short: "+",
        long: "",
        operands: 0,
        shell: false,
    },
    Wrapper {
        names: &["setsid"],
        short: "+Vhcfw",
        long: "ctty fork wait version help",
        operands: 0,
        shell: false,
    },
    Wrapper { names: &["exec"], short: "+cla:", long: "", operands: 0, shell: false },
    // `nice -5` is the historical form of `-n 5`.
    Wrapper {
        names: &["nice"],
        short: "+n:0123456789",
        long: "adjustment= help version",
        operands: 0,
        shell: false,
    },
    Wrapper {
        names: &["stdbuf"],
        short: "+i:o:e:",
        long: "input= output= error= help version",
        operands: 0,
        shell: false,
    },
    Wrapper {
        names: &["timeout"],
        short: "+fk:ps:v",
        long: "foreground kill-after= preserve-status signal= verbose help version",
        operands: 1,
        shell: false,
    },
    Wrapper {
        names: &["unshare"],
        short: "+fhVmuinpCTUrR:w:S:G:cl:",
        long: "help version mount? uts? ipc? net? pid? user? cgroup? time? fork kill-child? forward-signals \
               mount-proc? mount-binfmt? map-user= map-users= map-group= map-groups= map-root-user \
               map-current-user map-auto map-subids owner= propagation= setgroups= keep-caps setuid= setgid= \
               root= wd= monotonic= boottime= load-interp= clear-env whitelist-env=",
        operands: 0,
        shell: true,
    },
    Wrapper {
        names: &["setpriv"],
        short: "+dhV",
        long: "dump nnp no-new-privs inh-caps= ambient-caps= list-caps ruid= euid= rgid= egid= reuid= regid= \
               clear-groups keep-groups init-groups groups= bounding-set= securebits= pdeathsig= ptracer= \
               selinux-label= apparmor-profile= landlock-access= landlock-rule= landlock-support \
               list-landlock-access list-landlock-rights= seccomp-filter= help reset-env version",
        operands: 0,
        shell: false,
    },
    // `chroot NEWROOT [CMD]`: without a command, `${SHELL} -i`.
    Wrapper {
        names: &["chroot"],
        short: "+",
        long: "groups= userspec= skip-chdir help version",
        operands: 1,
        shell: true,
    },
    Wrapper {
        names: &["nsenter"],
        short: "+ahVt:m::u::i::n::N:p::C::U::T::S:G:r::w::W::ecFZ",
        long: "all help version target= mount? uts? ipc? net? net-socket= pid? user? cgroup? time? setuid= \
               setgid= root? wd? wdns? env no-fork join-cgroup preserve-credentials keep-caps user-parent \
               follow-context",
        operands: 0,
        shell: true,
    },
    Wrapper {
        names: &["numactl"],
        short: "+ai:w:p:P:c:N:C:m:slbHS:f:o:L:tM:dDI:uTV",
        long: "all interleave= weighted-interleave= preferred= preferred-many= cpubind= cpunodebind= \
               physcpubind= membind= show localalloc balancing hardware shm= file= offset= length= strict \
               shmmode= dump dump-nodes shmid= huge touch cpu-compress verify version",
        operands: 0,
        shell: false,
    },
    Wrapper { names: &["cgexec"], short: "+hg:", long: "sticky", operands: 0, shell: false },
    // Without a program, a root shell.
    Wrapper {
        names: &["pkexec"],
        short: "+",
        long: "user= disable-internal-agent keep-cwd help version",
        operands: 0,
        shell: true,
    },
    // `doas -s` is refused below.
    Wrapper { names: &["doas"], short: "+C:Lnsu:", long: "", operands: 0, shell: true },
    Wrapper {
        names: &["bwrap"],
        short: "+",
        long: "help version level-prefix unshare-all share-net unshare-user unshare-user-try unshare-ipc \
               unshare-pid unshare-net unshare-uts unshare-cgroup unshare-cgroup-try userns= userns2= \
               disable-userns assert-userns-disabled pidns= uid= gid= hostname= chdir= clearenv setenv=2 \
               unsetenv= lock-file= sync-fd= perms= size= bind=2 bind-try=2 dev-bind=2 dev-bind-try=2 \
               ro-bind=2 ro-bind-try=2 bind-fd=2 ro-bind-fd=2 remount-ro= overlay-src= overlay=3 \
               tmp-overlay= ro-overlay= exec-label= file-label= proc= dev= tmpfs= mqueue= dir= file=2 \
               bind-data=2 ro-bind-data=2 symlink=2 seccomp= add-seccomp-fd= block-fd= userns-block-fd= \
               info-fd= json-status-fd= new-session die-with-parent as-pid-1 cap-add= cap-drop= chmod=2 argv0=",
        operands: 0,
        shell: false,
    },
    // `--dbus-daemon=PROGRAM` is refused below.
    Wrapper {
        names: &["dbus-run-session"],
        short: "+",
        long: "config-file= dbus-daemon= help version",
        operands: 0,
        shell: false,
    },
    Wrapper { names: &["chronic"], short: "+ev", long: "", operands: 0, shell: false },
    Wrapper { names: &["ifne"], short: "+n", long: "", operands: 0, shell: false },
    Wrapper { names: &["unbuffer"], short: "+p", long: "", operands: 0, shell: false },
    // OpenSSH's getopt stops at the command; without one it only starts.
    Wrapper { names: &["ssh-agent"], short: "+a:cDdE:kO:P:st:", long: "", operands: 0, shell: false },
    Wrapper { names: &["sshpass"], short: "+f:d:p:eP:vhV", long: "", operands: 0, shell: false },
    // `gosu USER CMD`, `su-exec USER CMD`, `faketime TIMESTAMP CMD`.
    Wrapper { names: &["gosu", "su-exec", "faketime"], short: "+", long: "", operands: 1, shell: false },
];

/// A strict grammar for `program`.
pub(super) const fn grammar(program: &'static str, short: &'static str, long: &'static str) -> Grammar {
    Grammar { program, short, long, strict: true, plus: false }
}

/// What `name` (a command name without its directories) does with `args`;
/// `None` for a program this analysis knows nothing to see in (its
/// arguments are only arguments, even words appended by `xargs`).
pub(super) fn unwrap(name: &str, args: &[Word]) -> Option<Unwrapped> {
    if let Some(unwrapped) = builtins::unwrap(name, args) {
        return Some(unwrapped);
    }
    if let Some(unwrapped) = programs::unwrap(name, args) {
        return Some(unwrapped);
    }
    if let Some(wrapper) = WRAPPERS.iter().find(|wrapper| wrapper.names.contains(&name)) {
        return Some(table(wrapper, name, args));
    }
    Some(match name {
        "sudo" | "sudoedit" => sudo(name, args),
        "env" => env(args),
        "xargs" => xargs(args),
        "find" => find(args),
        "flock" => flock(args),
        "chrt" => chrt(args),
        "taskset" => with_pid(args, grammar("taskset", "+apchV", "all-tasks pid cpu-list help version"), 1),
        "ionice" => ionice(args),
        "prlimit" => prlimit(args),
        "command" => command(args),
        "time" => time(args),
        "script" => shells::script(args),
        "runuser" => shells::runuser(args),
        "su" => shells::su(args),
        "sg" => shells::sg(args),
        "capsh" => shells::capsh(args),
        "watch" => watch(args),
        "busybox" => busybox(args),
        "strace" => traced(args, STRACE, &["p", "attach"]),
        "ltrace" => traced(args, LTRACE, &["p"]),
        "valgrind" => valgrind(args),
        "xvfb-run" => xvfb_run(args),
        "fakeroot" => fakeroot(args),
        "pee" => shells::pee(args),
        "bash" | "sh" | "dash" | "zsh" | "ksh" | "ash" | "mksh" | "yash" | "fish" | "rbash" | "lksh"
        | "posh" | "ksh93" | "csh" | "tcsh" => shells::shell(name, args),
        _ => return runner(name, args),
    })
}

fn table(wrapper: &Wrapper, name: &str, args: &[Word]) -> Unwrapped {
    let program = wrapper.names.first().copied().unwrap_or("");
    let scanned = match scan(args, &grammar(program, wrapper.short, wrapper.long)) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if name == "dbus-run-session" && scanned.has("dbus-daemon") {
        return Unwrapped::opaque("`dbus-run-session --dbus-daemon` runs a program");
    }
    if name == "doas" && scanned.has("s") {
        return Unwrapped::opaque("`doas -s` starts a shell that reads stdin");
    }
    after_operands(&scanned, wrapper.operands, wrapper.shell, name)
}

/// The argv after `count` operands; none left is a shell reading stdin
/// when `shell`, or nothing run.
fn after_operands(scanned: &Scanned, count: usize, shell: bool, name: &str) -> Unwrapped {
    match scanned.operands.get(count..) {
        Some(command) if !command.is_empty() => Unwrapped::argv(command),
        _ if shell => {
            Unwrapped::opaque(format!("`{name}` without a command starts a shell that reads stdin"))
        }
        _ => Unwrapped::default(),
    }
}

/// Scans, then the argv after `count` operands unless an option says the
/// operands are process ids (`-p`).
fn with_pid(args: &[Word], grammar: Grammar, count: usize) -> Unwrapped {
    match scan(args, &grammar) {
        Ok(scanned) if scanned.has_any(&["p", "pid", "P", "pgid", "u", "uid"]) => Unwrapped::default(),
        Ok(scanned) => after_operands(&scanned, count, false, grammar.program),
        Err(why) => Unwrapped::opaque(why),
    }
}

/// `NAME=value` words, as `env` and `sudo` take them before the command:
/// every word with `=` (env sets even names bash cannot).
fn environment(words: &[Word]) -> Result<(Vec<String>, &[Word]), String> {
    let count = words.iter().take_while(|word| !word.plain || word.text.contains('=')).count();
    let (given, rest) = words.split_at(count);
    if given.iter().any(|word| !word.plain) {
        return Err("an expansion where an environment assignment or the command may stand".to_owned());
    }
    let names = given.iter().filter_map(|word| word.text.split_once('=')).map(|(name, _)| name.to_owned());
    Ok((names.collect(), rest))
}

/// sudo: "+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv", then `NAME=value`
/// words, then the command; `-e` (sudoedit) edits files; `-s`/`-i` without a
/// command is a shell; `-h HOST`/`--host` (sudo takes `-h HOST` in the next
/// word too, against its getopt string) runs elsewhere and is refused.
fn sudo(name: &str, args: &[Word]) -> Unwrapped {
    const LONG: &str = "background preserve-env? edit set-home login remove-timestamp list preserve-groups shell \
                        other-user= validate askpass auth-type= bell close-from= login-class= chdir= group= help \
                        reset-timestamp no-update non-interactive prompt= chroot= role= stdin command-timeout= type= \
                        user= version host=";
    let scanned = match scan(args, &grammar("sudo", "+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv", LONG)) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if scanned.has_any(&["h", "host"]) {
        return Unwrapped::opaque("`sudo -h`/`--host` runs on another host");
    }
    let (assignments, rest) = match environment(&scanned.operands) {
        Ok(split) => split,
        Err(why) => return Unwrapped::opaque(why),
    };
    if name == "sudoedit" || scanned.has_any(&["e", "edit"]) {
        let redirects = rest.iter().map(|word| word.text.clone()).collect();
        return Unwrapped { assignments, redirects, ..Unwrapped::default() };
    }
    let inner = match rest {
        [] if scanned.has_any(&["s", "i", "shell", "login"]) => {
            Inner::Opaque("`sudo -s`/`-i` without a command starts a shell that reads stdin".to_owned())
        }
        [] => Inner::Nothing,
        command => Inner::Argv(command.to_vec()),
    };
    Unwrapped { assignments, inner, ..Unwrapped::default() }
}

/// coreutils env: "+a:C:iS:u:v0", `-` as `-i`, `NAME=value` words, then
/// the command; `-S STRING` is split into words (quoting in it refused).
fn env(args: &[Word]) -> Unwrapped {
    const LONG: &str = "argv0= ignore-environment env0-from= null unset= chdir= default-signal? ignore-signal? \
                        block-signal? list-signal-handling debug split-string= help version";
    let start = args.iter().take_while(|word| word.plain && word.text == "-").count();
    let scanned = match scan(args.get(start..).unwrap_or(&[]), &grammar("env", "+a:C:iS:u:v0", LONG)) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    let mut operands = scanned.operands.as_slice();
    while let Some((_, after)) = operands.split_first().filter(|(word, _)| word.plain && word.text == "-") {
        operands = after;
    }
    let split = scanned.texts_of(&["S", "split-string"]);
    if !split.is_empty() {
        if split.iter().any(|text| text.contains(['\'', '"', '\\', '$', '#'])) {
            return Unwrapped::opaque("env -S string with quoting");
        }
        let mut words = vec![Word::literal("env")];
        words.extend(split.iter().flat_map(|text| text.split_whitespace()).map(Word::literal));
        words.extend(operands.iter().cloned());
        return Inner::Argv(words).into();
    }
    let (assignments, command) = match environment(operands) {
        Ok(split) => split,
        Err(why) => return Unwrapped::opaque(why),
    };
    let inner = if command.is_empty() { Inner::Nothing } else { Inner::Argv(command.to_vec()) };
    Unwrapped { assignments, inner, ..Unwrapped::default() }
}

/// GNU xargs: "+0a:d:E:e::I:i::L:l::n:oP:prs:tx", then the command. The
/// input is appended to the command, or with `-I R` / `-i` put where `R`
/// (`{}`) stands, the command's name included.
fn xargs(args: &[Word]) -> Unwrapped {
    const LONG: &str = "null arg-file= delimiter= eof? replace? max-lines? max-args= open-tty interactive \
                        max-procs= process-slot-var= no-run-if-empty max-chars= show-limits verbose exit help \
                        version";
    let scanned = match scan(args, &grammar("xargs", "+0a:d:E:e::I:i::L:l::n:oP:prs:tx", LONG)) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if scanned.operands.is_empty() {
        return Unwrapped::default();
    }
    let replace = scanned.options.iter().find_map(|(option, value)| match option.as_str() {
        "I" => value.as_ref().map(|word| word.text.clone()),
        "i" | "replace" => Some(value.as_ref().map_or_else(|| "{}".to_owned(), |word| word.text.clone())),
        _ => None,
    });
    match replace {
        Some(marker) if !marker.is_empty() => Inner::Argv(filled_in(&scanned.operands, &marker)).into(),
        _ => Unwrapped { inner: Inner::Argv(scanned.operands), open: true, ..Unwrapped::default() },
    }
}

/// Words where `marker` stands, as `find` and `xargs -I` run them: the
/// marker becomes `{}` and the word is no longer known (a file name or an
/// input line goes there, in a command name or a script too).
fn filled_in(words: &[Word], marker: &str) -> Vec<Word> {
    let fill = |word: &Word| match word.text.contains(marker) {
        true => Word { text: word.text.replace(marker, "{}"), plain: false, single: true },
        false => word.clone(),
    };
    words.iter().map(fill).collect()
}

/// `find`'s expression: `-exec`, `-execdir`, `-ok`, `-okdir` up to `;` or
/// `{} +` are commands; `-fprint`, `-fprint0`, `-fls`, `-fprintf` write a file.
/// An expansion that is not the value of a predicate may be `-exec`.
fn find(args: &[Word]) -> Unwrapped {
    const VALUED: &str = "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname \
                          -samefile -type -xtype -user -group -uid -gid -perm -size -mtime -mmin -atime -amin \
                          -ctime -cmin -used -inum -links -maxdepth -mindepth -fstype -context -printf -regextype \
                          -files0-from";
    let mut commands = Vec::new();
    let mut redirects = Vec::new();
    let mut at = 0;
    while let Some(word) = args.get(at) {
        if !word.plain {
            return Unwrapped::opaque("an expansion in `find`'s expression may be `-exec`");
        }
        match word.text.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                // The command ends at `;`, or at `+` right after `{}`.
                let rest = args.get(at + 1..).unwrap_or(&[]);
                let ends = |(index, word): &(usize, &Word)| {
                    word.plain
                        && (word.text == ";"
                            || (word.text == "+"
                                && index
                                    .checked_sub(1)
                                    .and_then(|before| rest.get(before))
                                    .is_some_and(|w| w.text == "{}")))
                };
                let length = rest.iter().enumerate().position(|pair| ends(&pair)).unwrap_or(rest.len());
                commands.push(filled_in(rest.get(..length).unwrap_or(&[]), "{}"));
                at += length + 2;
            }
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                redirects.extend(args.get(at + 1).map(|file| file.text.clone()));
                at += if word.text == "-fprintf" { 3 } else { 2 };
            }
            valued
                if VALUED.split_whitespace().any(|known| known == valued) || valued.starts_with("-newer") =>
            {
                if args.get(at + 1).is_some_and(|value| !value.single) {
                    return Unwrapped::opaque(
                        "an expansion that may split is a value in `find`'s expression",
                    );
                }
                at += 2;
            }
            _ => at += 1,
        }
    }
    Unwrapped { inner: Inner::Many(commands), redirects, ..Unwrapped::default() }
}

/// util-linux flock: "+:sexnoFuw:E:hV?", then `FILE CMD…`, `FILE -c
/// STRING`, `--fd N CMD…`, or a descriptor number alone. Its own `-c`
/// before the operands (with `--fd`) is refused by the strict scan.
fn flock(args: &[Word]) -> Unwrapped {
    const LONG: &str = "shared exclusive unlock nonblocking nb timeout= wait= conflict-exit-code= close no-fork \
                        verbose fcntl start= length= fd= help version";
    let scanned = match scan(args, &grammar("flock", "+sexnoFuw:E:hV", LONG)) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if scanned.has("fd") {
        return after_operands(&scanned, 0, false, "flock");
    }
    match scanned.operands.as_slice() {
        [_, flag, rest @ ..] if flag.plain && matches!(flag.text.as_str(), "-c" | "--command") => {
            match rest {
                [string] => builtins::script_of(Some(string)).into(),
                _ => Unwrapped::opaque("`flock -c` takes exactly one command string"),
            }
        }
        [_, command @ ..] if !command.is_empty() => Unwrapped::argv(command),
        [_] => Unwrapped::default(),
        _ => Unwrapped::default(),
    }
}

/// util-linux chrt: "+abdD:efiphmoOP:T:rRU:X:GvV", then `[PRIORITY] CMD`
/// (`-p` takes a pid, `-m` shows the limits: no command).
fn chrt(args: &[Word]) -> Unwrapped {
    const LONG: &str = "all-tasks batch clamp-min= clamp-max= deadline deadline-overrun ext fifo idle pid help max \
                        other rr sched-runtime= sched-period= sched-deadline= reset-on-fork reclaim-grub verbose \
                        version";
    let scanned = match scan(args, &grammar("chrt", "+abdD:efiphmoOP:T:rRU:X:GvV", LONG)) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if scanned.has_any(&["p", "pid", "m", "max", "h", "help", "V", "version"]) {
        return Unwrapped::default();
    }
    let priority = scanned.operands.first().is_some_and(|word| word.text.bytes().all(|b| b.is_ascii_digit()));
    after_operands(&scanned, usize::from(priority), false, "chrt")
}

/// util-linux ionice: "+n:c:p:P:u:tVh"; with `-p`/`-P`/`-u` the operands
/// are ids.
fn ionice(args: &[Word]) -> Unwrapped {
    const LONG: &str = "classdata= class= help ignore pid= pgid= uid= version";
    with_pid(args, grammar("ionice", "+n:c:p:P:u:tVh", LONG), 0)
}

/// util-linux prlimit: "+c::d::e::f::i::l::m::n::q::r::s::t::u::v::x::y::p:o:vVh"
/// (with `-p`, a pid and no command).
fn prlimit(args: &[Word]) -> Unwrapped {
    const LONG: &str = "pid= output= as? core? cpu? data? fsize? locks? memlock? msgqueue? nice? nofile? nproc? \
                        rss? rtprio? rttime? sigpending? stack? version help noheadings raw verbose";
    let short = "+c::d::e::f::i::l::m::n::q::r::s::t::u::v::x::y::p:o:Vh";
    match scan(args, &grammar("prlimit", short, LONG)) {
        Ok(scanned) if scanned.has_any(&["p", "pid"]) || scanned.operands.is_empty() => Unwrapped::default(),
        Ok(scanned) => after_operands(&scanned, 0, false, "prlimit"),
        Err(why) => Unwrapped::opaque(why),
    }
}

/// bash `command [-pVv] CMD`: with `-v`/`-V` it only describes.
fn command(args: &[Word]) -> Unwrapped {
    match scan(args, &grammar("command", "+pVv", "")) {
        Ok(scanned) if scanned.has_any(&["v", "V"]) => Unwrapped::default(),
        Ok(scanned) => after_operands(&scanned, 0, false, "command"),
        Err(why) => Unwrapped::opaque(why),
    }
}

/// bash's `time [-p]` and GNU time "+ao:f:pqvV" (`-o FILE` is written).
fn time(args: &[Word]) -> Unwrapped {
    const LONG: &str = "append format= output= portability quiet verbose help version";
    match scan(args, &grammar("time", "+ao:f:pqvV", LONG)) {
        Ok(scanned) => Unwrapped {
            redirects: scanned.texts_of(&["o", "output"]),
            ..after_operands(&scanned, 0, false, "time")
        },
        Err(why) => Unwrapped::opaque(why),
    }
}

/// procps watch: "+bcCd::eghn:pq:rs:tvwx"; the command is joined and run by
/// `sh -c`, or with `-x` run as an argv.
fn watch(args: &[Word]) -> Unwrapped {
    const LONG: &str = "beep color no-color differences? errexit chgexit equexit= interval= precise no-rerun \
                        shotsdir= no-title no-wrap exec help version";
    let scanned = match scan(args, &grammar("watch", "+bcCd::eghn:pq:rs:tvwx", LONG)) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if scanned.has_any(&["x", "exec"]) {
        return after_operands(&scanned, 0, false, "watch");
    }
    if scanned.operands.is_empty() {
        return Unwrapped::default();
    }
    if scanned.operands.iter().any(|word| !word.plain) {
        return Unwrapped::opaque("`watch` given a command with expansions");
    }
    Inner::Script(builtins::join(&scanned.operands)).into()
}

/// `busybox APPLET ARGS`: the applet, analyzed as a command of its own.
fn busybox(args: &[Word]) -> Unwrapped {
    match args.first() {
        Some(applet) if !applet.text.starts_with('-') => Unwrapped::argv(args),
        _ => Unwrapped::default(),
    }
}

const STRACE: Grammar = grammar(
    "strace",
    "+a:Ab:cCdDe:E:fFhiI:kno:O:p:P:qrs:S:tTu:U:vVwxX:yzZ",
    "output= output-separately attach= user= env= string-limit= trace= trace-path= signal= status= \
     follow-forks summary-only summary summary-wall-clock summary-sort-by= debug daemonize? columns= \
     decode-fds? decode-pids? absolute-timestamps? relative-timestamps? syscall-times? timestamps? no-abbrev \
     abbrev= verbose= raw= read= write= quiet? silence? successful-only failed-only seccomp-bpf stack-trace? \
     kill-on-exit help version",
);

const LTRACE: Grammar = grammar(
    "ltrace",
    "+bcCfhiLrStTVa:A:D:e:F:l:n:o:p:s:u:w:x:",
    "align= config= demangle help indent= library= output= version no-signals",
);

/// strace and ltrace: `-o FILE` is written, `-o |CMD` / `-o !CMD` runs a
/// command; attaching to a pid runs none.
fn traced(args: &[Word], grammar: Grammar, attach: &[&str]) -> Unwrapped {
    let scanned = match scan(args, &grammar) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    let outputs = scanned.texts_of(&["o", "output"]);
    if outputs.iter().any(|file| file.starts_with(['|', '!'])) {
        return Unwrapped::opaque("trace output piped to a command");
    }
    let inner = if scanned.has_any(attach) || scanned.operands.is_empty() {
        Inner::Nothing
    } else {
        Inner::Argv(scanned.operands)
    };
    Unwrapped { inner, redirects: outputs, ..Unwrapped::default() }
}

/// valgrind: its options are single words (`--name=value`, `-q`, `-v`); the
/// first other word is the program. `--log-file=`/`--xml-file=` are written;
/// a `--db-command` runs a command.
fn valgrind(args: &[Word]) -> Unwrapped {
    let mut redirects = Vec::new();
    for (at, word) in args.iter().enumerate() {
        if !word.plain {
            return Unwrapped::opaque("an expansion where `valgrind` reads its options may be an option");
        }
        let text = word.text.as_str();
        if !text.starts_with('-') {
            let command = args.get(at..).unwrap_or(&[]).to_vec();
            return Unwrapped { inner: Inner::Argv(command), redirects, ..Unwrapped::default() };
        }
        if names_long(text, &["db-command", "db-attach", "vgdb-prefix"]) {
            return Unwrapped::opaque("`valgrind --db-command` runs a command");
        }
        for option in ["--log-file=", "--xml-file="] {
            redirects.extend(text.strip_prefix(option).map(str::to_owned));
        }
    }
    Unwrapped { redirects, ..Unwrapped::default() }
}

/// xvfb-run: "+ae:f:hn:lp:s:w:" (getopt in the script); `-e FILE` is
/// written.
fn xvfb_run(args: &[Word]) -> Unwrapped {
    const LONG: &str = "auto-servernum error-file= auth-file= help server-num= listen-tcp xauth-protocol= \
                        server-args= wait=";
    match scan(args, &grammar("xvfb-run", "+ae:f:hn:lp:s:w:", LONG)) {
        Ok(scanned) => Unwrapped {
            redirects: scanned.texts_of(&["e", "error-file"]),
            ..after_operands(&scanned, 0, false, "xvfb-run")
        },
        Err(why) => Unwrapped::opaque(why),
    }
}

/// fakeroot: `-l LIB` / `--lib` preloads a library and `--faked BINARY` runs
/// one (both refused); `-s FILE` saves its state; without a command it
/// starts a shell.
fn fakeroot(args: &[Word]) -> Unwrapped {
    match scan(args, &grammar("fakeroot", "+l:s:i:b:uhv", "lib= faked= unknown-is-real help version")) {
        Ok(scanned) if scanned.has_any(&["l", "lib", "faked"]) => {
            Unwrapped::opaque("`fakeroot --lib`/`--faked` loads or runs a program")
        }
        Ok(scanned) => {
            Unwrapped { redirects: scanned.texts_of(&["s"]), ..after_operands(&scanned, 0, true, "fakeroot") }
        }
        Err(why) => Unwrapped::opaque(why),
    }
}

/// Project runners that run a command in an environment: `uv run CMD`,
/// `npx CMD`, `bundle exec CMD`, `direnv exec DIR CMD`, …. Their options
/// are many and change what runs, so any option is opaque; `--` may come
/// first.
fn runner(name: &str, args: &[Word]) -> Option<Unwrapped> {
    const RUNNERS: &[(&str, &[&str], usize)] = &[
        ("uv", &["run"], 0),
        ("poetry", &["run"], 0),
        ("pipenv", &["run"], 0),
        ("pdm", &["run"], 0),
        ("hatch", &["run"], 0),
        ("rye", &["run"], 0),
        ("pixi", &["run"], 0),
        ("conda", &["run"], 0),
        ("mamba", &["run"], 0),
        ("micromamba", &["run"], 0),
        ("bundle", &["exec"], 0),
        ("npx", &[], 0),
        ("bunx", &[], 0),
        ("npm", &["exec"], 0),
        ("pnpm", &["exec"], 0),
        ("pnpm", &["dlx"], 0),
        ("yarn", &["exec"], 0),
        ("yarn", &["dlx"], 0),
        ("bun", &["x"], 0),
        ("mise", &["exec"], 0),
        ("mise", &["x"], 0),
        ("asdf", &["exec"], 0),
        ("direnv", &["exec"], 1),
    ];
    let (_, words, operands) = RUNNERS.iter().find(|(program, words, _)| {
        *program == name
            && args.len() >= words.len()
            && words.iter().zip(args).all(|(word, arg)| arg.plain && arg.text == *word)
    })?;
    let rest = args.get(words.len()..).unwrap_or(&[]);
    let (given, rest) = rest.split_at((*operands).min(rest.len()));
    let rest = match rest.split_first() {
        Some((dashes, after)) if dashes.plain && dashes.text == "--" => after,
        _ => rest,
    };
    Some(match rest.first() {
        _ if given.iter().any(|word| !word.single) => {
            Unwrapped::opaque(format!("an expansion among `{name}`'s operands"))
        }
        None => Unwrapped::default(),
        Some(first) if !first.plain || first.text.starts_with('-') => {
            Unwrapped::opaque(format!("`{name}` runs a command with options this analysis does not model"))
        }
        Some(_) => Unwrapped::argv(rest),
    })
}
