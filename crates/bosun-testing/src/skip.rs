//! Skipping a test for want of something it needs (a peer server, recorded
//! fixtures), never silently.

use std::io::Write;
use std::sync::Mutex;

/// Lets the calling test skip for want of `missing` only when `variable` is
/// `1`. Then it says so with one line starting `!!! SKIPPED (<variable>=1)`,
/// written straight to stderr, past the test harness's capture, so that it
/// shows in every run and `scripts/test` counts it (once per test), and
/// returns: the test should return having tested nothing.
///
/// # Panics
///
/// When `variable` is not `1`, naming `missing` and the way to skip: a test
/// that cannot run fails unless told otherwise.
#[track_caller]
pub fn skip_or_fail(variable: &str, missing: &str) {
    if std::env::var_os(variable).is_none_or(|value| value != "1") {
        fail(&format!("{missing} (set {variable}=1 to skip instead)"));
    }
    static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let mut said = SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if said.contains(&test) {
        return;
    }
    said.push(test.clone());
    // One write, so that the harness's own output cannot land inside it.
    let line = format!("\n!!! SKIPPED ({variable}=1) {test}: {missing}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    // A runner that keeps a passing test's output to itself (nextest) would
    // hide that line: `scripts/test` also names a file that every skip is
    // appended to, one line each.
    if let Some(log) = std::env::var_os(SKIP_LOG_VARIABLE) {
        let appended = std::fs::OpenOptions::new().create(true).append(true).open(log);
        if let Ok(mut file) = appended {
            let _ = file.write_all(line.trim_start().as_bytes());
        }
    }
}

/// Names a file each skip is appended to, as one `!!! SKIPPED …` line.
pub const SKIP_LOG_VARIABLE: &str = "BOSUN_SKIP_LOG";

/// Fails the calling test: the one panic of the skip and aimock helpers, as
/// failing is what a test helper that cannot do its job must do.
#[allow(clippy::panic)]
#[track_caller]
pub(crate) fn fail(message: &str) -> ! {
    panic!("{message}")
}
