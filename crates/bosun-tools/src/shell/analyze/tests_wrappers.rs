//! Unit tests of the programs that run their arguments as a command: each is
//! seen through (the inner command is among the commands, so `deny rm`
//! matches it) or, where its grammar is not modelled, opaque (so `deny rm`
//! asks); and their options are read exactly, an expansion or an unknown
//! option where one could change the parse making the line opaque.

use super::tests::{deny_holds, opaque, opaque_naming, plain, runs, words};

/// Seen through: `rm x` is one of the commands, the line is plain and the
/// deny rule matches.
#[track_caller]
fn sees_rm(source: &str) {
    runs(source, &["rm", "x"]);
    plain(source);
    let got = super::tests::decided(bosun_core::Mode::Autonomous, &super::tests::rules(), source);
    assert_eq!(got.permission, bosun_core::Permission::Deny, "{source:?}: {got:?}");
}

/// Opaque: a deny rule cannot be checked, so the line asks.
#[track_caller]
fn hides(source: &str) {
    opaque(source);
    deny_holds(source);
}

#[test]
fn the_eight_reported_bypasses_are_closed() {
    for source in [
        "script -q -c 'rm x' /dev/null",
        "unshare -r rm x",
        "setpriv --reuid=1000 --init-groups rm x",
        "prlimit --nofile=64 rm x",
        "chroot / rm x",
        "runuser -u nobody -- rm x",
        "sg wheel -c 'rm x'",
    ] {
        sees_rm(source);
    }
    for source in [
        "tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='rm x' .",
        "tar -cf a.tar --checkpoint=1 --checkpoint-action exec='rm x' .",
    ] {
        hides(source);
    }
}

#[test]
fn wrappers_that_run_an_argv_are_seen_through() {
    for source in [
        "script -c 'rm x'",
        "script --command='rm x' log.txt",
        "script log.txt -c 'rm x' -q",
        "unshare --map-root-user --mount rm x",
        "unshare -R /tmp/root -w / rm x",
        "unshare --propagation slave -m -- rm x",
        "unshare --map-users 0:0:1 rm x",
        "setpriv --nnp --inh-caps -all rm x",
        "prlimit -n64 -c rm x",
        "prlimit -o RESOURCE rm x",
        "chroot --userspec=1:1 / rm x",
        "chroot --groups wheel / rm x",
        "runuser -u nobody rm x",
        "runuser -c 'rm x' nobody",
        "runuser nobody -c 'rm x'",
        "runuser -l nobody -c 'rm x'",
        "sg wheel 'rm x'",
        "sg - wheel -c 'rm x'",
        "su -c 'rm x'",
        "su - root -c 'rm x'",
        "su root -- -c 'rm x'",
        "flock /tmp/l rm x",
        "flock -w 3 /tmp/l -c 'rm x'",
        "flock --fd 9 rm x",
        "taskset 0x1 rm x",
        "taskset -c 0 rm x",
        "chrt -f 10 rm x",
        "chrt --other 0 rm x",
        "numactl --interleave=all rm x",
        "numactl -N 0 -m 0 rm x",
        "numactl --cpunodebind 0 -- rm x",
        "cgexec -g cpu:/grp rm x",
        "cgexec --sticky -g cpu:g rm x",
        "doas rm x",
        "doas -u root rm x",
        "pkexec rm x",
        "pkexec --user bob rm x",
        "bwrap --ro-bind / / --dev /dev rm x",
        "bwrap --bind /a /b --setenv A B --unshare-all -- rm x",
        "capsh -- -c 'rm x'",
        "capsh --caps=cap_sys_admin+ep -- -c 'rm x'",
        "capsh --user=bob == -- -c 'rm x'",
        "watch rm x",
        "watch -n 1 'rm x'",
        "watch -x rm x",
        "strace -f rm x",
        "strace -e trace=open -o out.txt rm x",
        "ltrace -S rm x",
        "valgrind --leak-check=full rm x",
        "valgrind -q --log-file=v.log rm x",
        "dbus-run-session -- rm x",
        "dbus-run-session rm x",
        "xvfb-run -a rm x",
        "xvfb-run -s '-screen 0 1x1x8' rm x",
        "busybox rm x",
        "busybox sh -c 'rm x'",
        "find . -exec rm x \\;",
        "find . -ok rm x \\;",
        "find . -okdir rm x \\;",
        "xargs rm x",
        "xargs -0 -n1 rm x",
        "env -S 'rm x'",
        "env --split-string='rm x'",
        "env -i rm x",
        "env --ignore-signal rm x",
        "env --block-signal=INT rm x",
        "timeout 5 rm x",
        "timeout --signal KILL 5 rm x",
        "timeout --sig=KILL 5 rm x",
        "nice rm x",
        "nice -n 5 rm x",
        "nice -5 rm x",
        "ionice -c3 rm x",
        "stdbuf -o0 rm x",
        "nohup rm x",
        "setsid -f rm x",
        "time rm x",
        "time -p rm x",
        "command rm x",
        "exec rm x",
        "exec -a name rm x",
        "sudo rm x",
        "sudo -u root -g wheel rm x",
        "sudo -u \"$U\" rm x",
        "sudo --preserve-env rm x",
        "nsenter -t 1 -m rm x",
        "nsenter --target 1 --mount --uts rm x",
        "chronic rm x",
        "ifne rm x",
        "pee 'rm x' cat",
        "unbuffer rm x",
        "fakeroot rm x",
        "fakeroot -- rm x",
        "uv run rm x",
        "poetry run rm x",
        "pipenv run rm x",
        "pdm run rm x",
        "bundle exec rm x",
        "npx rm x",
        "npm exec -- rm x",
        "pnpm exec rm x",
        "yarn exec rm x",
        "mise exec -- rm x",
        "direnv exec . rm x",
        "conda run rm x",
        "ssh-agent rm x",
        "ssh-agent -t 60 rm x",
        "sshpass -p pw rm x",
    ] {
        sees_rm(source);
    }
    // `{}` is a file name: the word is no longer known, the command is.
    let line = plain("find . -name '*.o' -execdir rm x {} +");
    assert_eq!(line.commands.last().map(|argv| &argv[..2]), Some(&words(&["rm", "x"])[..]));
    deny_holds("find . -name '*.o' -execdir rm x {} +");
    // `+` ends the command only after `{}`.
    runs("find . -exec echo + -exec rm x \\;", &["echo", "+", "-exec", "rm", "x"]);
    let written = plain("find . -fprintf out.txt '%p' -fls ls.txt -fprint0 z -fprint p");
    assert_eq!(written.redirects, ["out.txt", "ls.txt", "z", "p"]);
    assert!(plain("script -c ls log.txt").redirects.contains(&"log.txt".to_owned()));
    assert!(plain("script -c ls").redirects.contains(&"typescript".to_owned()));
    assert_eq!(plain("strace -o out.txt ls").redirects, ["out.txt"]);
    assert_eq!(plain("valgrind --log-file=v.log ls").redirects, ["v.log"]);
    assert_eq!(plain("xvfb-run -e err.txt ls").redirects, ["err.txt"]);
}

#[test]
fn programs_whose_grammar_is_not_modelled_are_opaque() {
    for source in [
        "ssh host rm x",
        "ssh host",
        "ssh -o ProxyCommand='rm x' host true",
        "scp -S ./evil a host:b",
        "scp -o 'ProxyCommand rm x' a host:b",
        "sftp -F ./cfg host",
        "parallel rm ::: x",
        "parallel ::: 'rm x'",
        "sem rm x",
        "perf record rm x",
        "perf stat -e cycles rm x",
        "gdb -ex run --args rm x",
        "gdb --batch -ex 'shell rm x'",
        "systemd-run rm x",
        "systemd-run -p ExecStartPre='/bin/rm x' true",
        "firejail rm x",
        "docker run img rm x",
        "podman exec -it c rm x",
        "kubectl exec pod -- rm x",
        "vim -c '!rm x' f",
        "ed f",
        "less '+!rm x' f",
        "man -P 'rm x' ls",
        "crontab f",
        "at now",
        "nix-shell --run 'rm x'",
        "nix develop -c rm x",
        "hg --config hooks.pre-status='rm x' status",
        "expect -c 'spawn rm x'",
        "ip netns exec n rm x",
        "uv run --with x rm x",
        "npx -c 'rm x'",
        "unshare -r",
        "chroot /",
        "pkexec",
        "script",
        "runuser nobody",
        "sg wheel",
        "fakeroot",
        "fakeroot --faked ./evil rm x",
        "fakeroot -l ./evil.so rm x",
        "capsh --shell=./evil -- -c x",
        "capsh x",
        "bwrap --args 3 rm x",
        "dbus-run-session --dbus-daemon=./evil rm x",
        "strace -o '|rm x' ls",
        "valgrind --db-command='rm x' ls",
        "bash --rcfile x.sh -ic ls",
        "bash --init-file x.sh",
        "fish -C 'rm x' -c ls",
        "tmux new-session -d 'rm x'",
        "screen -dm rm x",
        "xterm -e rm x",
        "psql -c '\\! rm x'",
        "mysql -e 'system rm x'",
        "sqlite3 db '.shell rm x'",
        "sqlite3 db -cmd '.system rm x' 'select 1'",
        "sqlite3 db",
        "make -E 'all:;rm x' all",
        "make --eval='all:;rm x'",
        "make -f - all",
        "make -f /dev/stdin",
        "fd . -x rm x",
        "fd -e o --exec-batch rm x",
        "rg --pre 'rm x' pattern",
    ] {
        hides(source);
    }
    for source in ["sqlite3 db 'select 1'", "make -j4 test", "fd -e rs", "rg --pre-glob '*.gz' x"] {
        plain(source);
    }
}

#[test]
fn tar_zip_rsync_and_ssh_options_that_run_commands_are_opaque() {
    for source in [
        "tar -xf a.tar --to-command='rm x'",
        "tar -xf a.tar --to-command 'rm x'",
        "tar -I 'rm x' -cf a .",
        "tar -cIf 'rm x' a .",
        "tar -cf a --use-compress-program='rm x' .",
        "tar --use-comp='rm x' -cf a .",
        "tar --rsh-command=/tmp/evil -cf host:a .",
        "tar -F 'rm x' -cf a .",
        "tar --info-script='rm x' -cf a .",
        "tar --new-volume-script='rm x' -cf a .",
        "tar cIf 'rm x' a .",
        "tar -cf a $opts .",
        "zip -TT 'rm x' a.zip f",
        "zip -T -TT 'rm x' a.zip f",
        "zip --unzip-command 'rm x' a.zip f",
        "zip -r a.zip $f",
        "rsync -e 'sh -c \"rm x\"' a b:c",
        "rsync --rsh='rm x' a b",
        "rsync -avze ssh a b:c",
        "rsync --rsync-path='rm x' a b:c",
        "rsync --rsh 'rm x' a b",
    ] {
        hides(source);
    }
    for source in [
        "tar -czf out.tgz src",
        "tar xf a.tar",
        "tar --checkpoint=1000 -cf a .",
        "tar -C dir -xf a.tar",
        "tar -cf a.tar --exclude='*.o' .",
        "tar -cf \"$out\" src",
        "zip -r a.zip src",
        "zip -T a.zip f",
        "rsync -av src/ dst/",
        "rsync -a --delete src dst",
    ] {
        plain(source);
    }
}

#[test]
fn git_options_that_run_commands_are_opaque() {
    for source in [
        "git -c alias.x='!rm y' x",
        "git -c core.pager='rm y' log",
        "git --exec-path=/tmp/evil status",
        "git --config-env=core.pager=X log",
        "git $x status",
        "git rebase -x 'rm y' HEAD~1",
        "git rebase --exec='rm y' main",
        "git rebase -i --exec 'rm y' main",
        "git bisect run rm y",
        "git submodule foreach 'rm y'",
        "git submodule --quiet foreach 'rm y'",
        "git difftool -x 'rm y'",
        "git difftool --extcmd='rm y'",
        "git filter-branch --tree-filter 'rm y'",
        "git clone --upload-pack='rm y' a b",
        "git clone -u 'rm y' a b",
        "git clone --template=/tmp/t a b",
        "git clone -c core.fsmonitor='rm y' a b",
        "git clone --config core.x=y a b",
        "git init --template=/tmp/t",
        "git fetch --upload-pack='rm y' origin",
        "git pull --upload-pack 'rm y'",
        "git ls-remote --upload-pack 'rm y' x",
        "git push --receive-pack='rm y' o",
        "git push --exec='rm y' o",
        "git archive --remote=x --exec='rm y' HEAD",
        "git grep -O'rm y' x",
        "git grep --open-files-in-pager='rm y' x",
        "git send-email --sendmail-cmd='rm y' p",
        "git instaweb --httpd='rm y'",
        "git -C sub rebase --exec 'rm y' main",
    ] {
        hides(source);
    }
    for source in [
        "git status",
        "git log --oneline -5",
        "git -C sub status",
        "git commit -m \"$msg\"",
        "git rebase main",
        "git clone https://example.com/r.git",
        "git push origin main",
        "git grep -n foo",
    ] {
        plain(source);
    }
}

#[test]
fn sed_commands_that_run_or_write_are_seen() {
    for (source, form) in [
        ("sed 'e rm y' f", "e command"),
        ("sed '1e rm y' f", "e command"),
        ("sed -n '/x/{e rm y\n}' f", "e command"),
        ("sed 's/x/rm y/e' f", "e flag"),
        ("sed -e 's/x/y/ge' f", "e flag"),
        ("sed --expression='1e' f", "e command"),
        ("sed -n -e p -e e f", "e command"),
        ("sed -f script.sed f", "-f"),
        ("sed --file=s.sed f", "-f"),
        ("sed \"$s\" f", "sed"),
        ("sed -e \"$s\" f", "sed"),
        ("sed 's/a/b/' $f", "sed"),
        ("sed -i 's/a/b/' \"$f\"", "sed"),
        ("sed 's/a/b/;q;x;z;F;Q' f; sed 'v 4.2' f; sed -n 'l 5' f; sed 'k' f", "not understood"),
    ] {
        opaque_naming(source, form);
        deny_holds(source);
    }
    for source in [
        "sed -n '1,20p' f",
        "sed 's/a/b/g' f",
        "sed -e 's|a|b|' -e '/x/d' f",
        "sed '/^#/d; s/x/y/' f",
        "sed -i.bak 's/a/b/' f",
        "sed '$a\\\nend' f",
        "sed '$a end' f",
        "sed 'y/abc/xyz/' f",
        "sed '2i hello' f",
        "sed -E 's/(a|b)+/c/2' f",
        "sed '/start/,/end/{s/a/b/;p}' f",
        "sed = f",
        "sed -n '$=' f",
        "sed -n '0~4p' f",
        "sed ':a;N;$!ba;s/\\n/ /g' f",
        "sed 's/e/E/' f",
        "sed '/e/d; \\%e%d' f",
        "sed --sandbox 'e' f",
        "sed -n '/x/!p' f",
        "sed 's/a\\/e/b/' f",
        "sed 's/x/y/;#e comment' f",
    ] {
        plain(source);
    }
    assert_eq!(plain("sed -n 's/x/y/w out.txt' f").redirects, ["out.txt"]);
    assert_eq!(plain("sed -n '/x/w .git/config' f").redirects, [".git/config"]);
    assert_eq!(plain("sed 'W log' f").redirects, ["log"]);
}

#[test]
fn awk_programs_that_run_commands_are_opaque() {
    for source in [
        "awk 'BEGIN{system(\"rm y\")}'",
        "awk '{print | \"sh\"}' f",
        "awk 'BEGIN{\"date\" | getline d}'",
        "gawk '{print |& \"sh\"}' f",
        "gawk '@load \"x\"; BEGIN{}'",
        "awk 'BEGIN { f = \"sys\" \"tem\"; @f(\"rm y\") }'",
        "awk -f prog.awk f",
        "gawk --file=p.awk f",
        "awk \"$p\" f",
        "gawk -l filefuncs 'BEGIN{}'",
        "gawk -i lib 'BEGIN{}'",
        "mawk 'BEGIN{system(\"rm y\")}'",
        "busybox awk 'BEGIN{system(\"rm y\")}'",
        "awk -e 'BEGIN{system(\"x\")}'",
    ] {
        hides(source);
    }
    for source in [
        "awk '{print $1}' f",
        "awk -F: '$3 > 100 {print $1}' /etc/passwd",
        "awk '/a|b/ {n++} END {print n}' f",
        "awk 'NR==1 || NR==2' f",
        "awk -v x=1 '{print x}' f",
        "awk '{print \"a|b\"}' f",
        "awk '{ s += $2 } END { print s / NR }' f",
        "gawk --sandbox '{print | \"sh\"}' f",
    ] {
        plain(source);
    }
}

#[test]
fn find_and_xargs_commands_filled_in_from_input_are_opaque() {
    for source in [
        "find . -exec {} \\;",
        "find . -name x -exec sudo {} \\;",
        "find . -exec sh -c {} +",
        "find $d -delete",
        "d=-exec; find . \"$d\" rm x \\;",
        "find . -name \"$n\" $more",
        "echo rm x | xargs sh -c",
        "echo rm x | xargs sudo",
        "echo rm x | xargs env",
        "echo rm x | xargs timeout 5",
        "echo rm | xargs -I{} {} x",
        "echo 'rm x' | xargs -I % sh -c %",
        "echo rm | xargs -I R nice R x",
        "echo rm | xargs -i {} x",
        "xargs $opts rm x",
        // What xargs appends may be options that run commands.
        "echo 'e rm x' | xargs sed",
        "echo \"-c 'alias.x=!rm y' x\" | xargs git",
        "echo '; rm x' | xargs watch ls",
        "echo \"-- -c 'rm x'\" | xargs capsh",
        "echo '-exec rm x ;' | xargs find .",
        "echo .git/config | xargs tee",
        "echo x | xargs nice sed",
        "echo x | xargs script -q",
    ] {
        hides(source);
    }
    // Appended to a plain program, or through wrappers to one, input is
    // only more arguments.
    plain("ls | xargs nice -n 5 rm -f");
    plain("ls | xargs -0 grep -l x");
    plain("find . -name \"$n\" -exec grep -l x {} +");
    plain("ls | xargs -I{} cp {} {}.bak");
    plain("find . -exec sh -c 'echo \"$1\"' _ {} \\;");
}

#[test]
fn expansions_and_unknown_options_where_they_change_the_parse_are_opaque() {
    for source in [
        "timeout $t rm x",
        "sudo -u $U echo rm x",
        "nice $n rm x",
        "env $e rm x",
        "timeout --frobnicate 5 rm x",
        "sudo --host h rm x",
        "sudo -h h rm x",
        "unshare --mystery rm x",
        "chroot --mystery / rm x",
        "stdbuf -z rm x",
    ] {
        hides(source);
    }
    // A quoted expansion is one word where a value stands; where an option
    // or an operand before the command may stand, it may be an option.
    sees_rm("nice -n \"$n\" rm x");
    hides("timeout \"$t\" rm x");
    assert_eq!(plain("sudo -u \"$U\" rm x").commands[1], words(&["rm", "x"]));
}

#[test]
fn reserved_words_and_filled_in_names_in_command_position_are_opaque() {
    for source in ["time { rm x; }", "nohup { rm x; }", "sudo ! rm x", "find . -exec {} \\;", "nice }"] {
        hides(source);
    }
}
