//! Process hardening at start-up, for every front end that runs bosun (the
//! CLI, a server): the first thing `main` does after copying the
//! environment (`bosun_core::env::Env::capture`), while the process is
//! still single-threaded (before the tokio runtime, llama.cpp or any other
//! thread starts).
//!
//! Why: the shell tool clears its children's environment (invariant 18), but
//! a command can still read its parent's: `cat /proc/$PPID/environ` names
//! bosun, and that file shows the environment block the kernel put on the
//! initial stack at `exec`, with every key bosun was started with. Taking a
//! variable out of `environ` (`unsetenv`) only drops a pointer; the bytes in
//! that block stay, and `/proc/PID/environ` keeps showing them. So for each
//! secret (see [`is_secret`]) and each loader variable (`LD_PRELOAD`,
//! `LD_LIBRARY_PATH`, `LD_AUDIT`, `DYLD_*`) this:
//!
//! 1. overwrites the value's bytes in place, in the original block, with
//!    NULs (walking `environ` before anything is removed, so every pointer
//!    still points into the block); `/proc/PID/environ` then shows `NAME=`
//!    and no value;
//! 2. removes the variable from bosun's environment, so no child bosun starts
//!    (shell, git, a later MCP server) inherits it;
//! 3. makes the process non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`: no
//!    `ptrace` attach by the same user, `/proc/PID/{environ,mem,…}` owned by
//!    root) and sets the core-file limit to 0 (no core dump with the keys in
//!    it; children inherit the limit).
//!
//! Step 3 alone does not hide the keys from a process running as root, nor
//! from any process holding `CAP_SYS_PTRACE`: root reads a non-dumpable
//! process's `/proc/PID/environ` as before, and bosun often runs as root (in
//! containers and CI; the tests do). That is why step 1 exists: what is not
//! there cannot be read. Memory that bosun itself holds (the keys in
//! the copied `Env`, request headers) is still readable through
//! `/proc/PID/mem` by root; an OS sandbox is the layer for that.
//!
//! The command line is not scrubbed: a key passed as an argument (e.g. a
//! `--header`) shows in `/proc/PID/cmdline`; keys belong in the environment.
//!
//! Failures are warnings returned to the caller to show, never panics:
//! hardening is an extra layer and bosun still works without it.

use std::ffi::OsString;

/// Name endings of variables that hold secrets (compared without case).
const SECRET_SUFFIXES: [&str; 9] =
    ["_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_PASSWD", "_PASSPHRASE", "_CREDENTIAL", "_API_KEY", "_AUTH"];

/// Whole names of secrets that no suffix catches.
const SECRET_NAMES: [&str; 7] =
    ["API_KEY", "TOKEN", "SECRET", "PASSWORD", "PGPASSWORD", "MYSQL_PWD", "ANTHROPIC_AUTH_TOKEN"];

/// Whether the variable `name` holds a secret: names ending in `_KEY`,
/// `_API_KEY`, `_TOKEN`, `_SECRET`, `_PASSWORD`, `_PASSWD`, `_PASSPHRASE`,
/// `_CREDENTIAL` or `_AUTH`, and a few whole names (`PGPASSWORD`,
/// `MYSQL_PWD`, `ANTHROPIC_AUTH_TOKEN`, …), in any case.
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str()) || SECRET_SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
}

/// Whether the variable `name` changes how programs are loaded.
pub fn is_loader(name: &str) -> bool {
    matches!(name, "LD_PRELOAD" | "LD_LIBRARY_PATH" | "LD_AUDIT") || name.starts_with("DYLD_")
}

/// Whether hardening takes `name` out of the environment.
fn scrubbed(name: &str) -> bool {
    !name.is_empty() && (is_secret(name) || is_loader(name))
}

/// Hardens the process (see the module docs). Call once, first thing in
/// `main`, right after the environment was copied and before any thread
/// starts. Returns what did not work, for the caller to show.
pub fn harden_process() -> Vec<String> {
    let mut warnings = Vec::new();
    if !single_threaded() {
        // Changing the environment beside another thread is undefined
        // behaviour; bosun starts none before this, so this is a bug.
        warnings.push("the environment was not scrubbed: another thread is already running".to_owned());
    } else {
        let names = overwrite_values_in_place();
        remove_from_environment(&names);
    }
    disable_core_dumps(&mut warnings);
    warnings
}

/// Whether this process has exactly one thread (Linux: `/proc/self/task`).
fn single_threaded() -> bool {
    match std::fs::read_dir("/proc/self/task") {
        Ok(tasks) => tasks.count() == 1,
        // No /proc (or not Linux): nothing shows the environment through it
        // either, and `main` calls this before starting any thread.
        Err(_) => true,
    }
}

/// Overwrites, in place, the values of the variables to scrub; returns
/// their names. Walks `environ` directly: at this point (first thing in
/// `main`, nothing has called `setenv`) its entries point into the block the
/// kernel set up at `exec`, the one `/proc/self/environ` shows.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn overwrite_values_in_place() -> Vec<OsString> {
    use std::os::unix::ffi::OsStringExt;
    let mut names: Vec<OsString> = Vec::new();
    // SAFETY: the process is single-threaded (checked by the caller, and
    // `main` calls this before starting any thread), so nothing else reads
    // or changes `environ` or the strings it points to meanwhile. `environ`
    // is the C runtime's NULL-terminated array of pointers to NUL-terminated
    // `NAME=value` strings; each is measured with `strlen`, only bytes before
    // its terminating NUL are read or written, and the borrowed slice is no
    // longer used when its bytes are overwritten. The strings are writable:
    // they live on the initial stack (or the heap, had anything called
    // `setenv`).
    unsafe {
        let mut entry = libc::environ;
        if entry.is_null() {
            return names;
        }
        while !(*entry).is_null() {
            let string = *entry;
            let len = libc::strlen(string);
            let (name, value_len) = {
                let bytes = std::slice::from_raw_parts(string.cast::<u8>(), len);
                match bytes.iter().position(|&b| b == b'=') {
                    Some(eq) if scrubbed(&String::from_utf8_lossy(&bytes[..eq])) => {
                        (Some(bytes[..eq].to_vec()), len - eq - 1)
                    }
                    _ => (None, 0),
                }
            };
            if let Some(name) = name {
                std::ptr::write_bytes(string.add(len - value_len), 0, value_len);
                let name = OsString::from_vec(name);
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            entry = entry.add(1);
        }
    }
    names
}

/// Elsewhere the block cannot be reached through the `libc` crate: only
/// the names, for removal.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn overwrite_values_in_place() -> Vec<OsString> {
    std::env::vars_os().map(|(name, _)| name).filter(|name| scrubbed(&name.to_string_lossy())).collect()
}

/// Takes `names` out of the process environment.
#[allow(unsafe_code)]
fn remove_from_environment(names: &[OsString]) {
    for name in names {
        // Names come from `NAME=value` split at the first `=`, never empty:
        // `remove_var` would panic on an empty name or one with `=`.
        if name.is_empty() || name.to_string_lossy().contains('=') {
            continue;
        }
        // SAFETY: single-threaded (see `harden`), so no other thread reads
        // or writes the environment while it changes.
        unsafe { std::env::remove_var(name) };
    }
}

/// Non-dumpable, and no core files.
fn disable_core_dumps(warnings: &mut Vec<String>) {
    set_not_dumpable(warnings);
    let none = rustix::process::Rlimit { current: Some(0), maximum: Some(0) };
    if let Err(error) = rustix::process::setrlimit(rustix::process::Resource::Core, none) {
        warnings.push(format!("setrlimit(RLIMIT_CORE, 0) failed: {error}"));
    }
}

#[cfg(target_os = "linux")]
fn set_not_dumpable(warnings: &mut Vec<String>) {
    use rustix::process::{DumpableBehavior, set_dumpable_behavior};
    if let Err(error) = set_dumpable_behavior(DumpableBehavior::NotDumpable) {
        warnings.push(format!("prctl(PR_SET_DUMPABLE, 0) failed: {error}"));
    }
}

#[cfg(not(target_os = "linux"))]
fn set_not_dumpable(_warnings: &mut Vec<String>) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_and_loader_variables_are_recognised() {
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "HF_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "CLIENT_SECRET",
            "DB_PASSWORD",
            "PGPASSWORD",
            "MYSQL_PWD",
            "SSH_PRIVATE_KEY",
            "gpg_passphrase",
            "openai_api_key",
            "API_KEY",
            "BOSUN_API_KEY",
        ] {
            assert!(is_secret(name), "{name} is a secret");
            assert!(scrubbed(name));
        }
        for name in [
            "PATH",
            "HOME",
            "BOSUN_HOME",
            "XDG_CONFIG_HOME",
            "NO_COLOR",
            "TERM",
            "SSH_AUTH_SOCK",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM",
            "LANG",
            "BOSUN_CLOCK",
            "",
        ] {
            assert!(!is_secret(name), "{name} is not a secret");
            assert!(!scrubbed(name));
        }
        for name in
            ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH"]
        {
            assert!(is_loader(name) && scrubbed(name), "{name}");
        }
        assert!(!is_loader("LD_BIND_NOW") && !is_loader("OLDPWD"));
    }

    /// Set in the child that [`core_dumps_are_off_after_hardening`] starts.
    const CHILD: &str = "BOSUN_TEST_HARDEN_CHILD";

    #[test]
    fn core_dumps_are_off_after_hardening() {
        // In a child process: hardening the test process would change it for
        // every other test.
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args(["--exact", "harden::tests::child_checks_dumpable_and_core_limit", "--nocapture"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{shown}{}", String::from_utf8_lossy(&out.stderr));
        assert!(shown.contains("1 passed"), "the child ran the check: {shown}");
    }

    #[test]
    fn child_checks_dumpable_and_core_limit() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let mut warnings = Vec::new();
        disable_core_dumps(&mut warnings);
        assert_eq!(warnings, Vec::<String>::new());
        let dumpable = rustix::process::dumpable_behavior().unwrap();
        assert_eq!(dumpable, rustix::process::DumpableBehavior::NotDumpable);
        let core = rustix::process::getrlimit(rustix::process::Resource::Core);
        assert_eq!((core.current, core.maximum), (Some(0), Some(0)));
    }
}
