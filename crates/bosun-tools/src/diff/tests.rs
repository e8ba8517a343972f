//! The windowed diff against a whole-file diff of the same edit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

fn path() -> RelPath {
    RelPath::parse("src/f.txt").unwrap()
}

/// Asserts the windowed diff of an edit is the whole-file diff, and
/// returns it.
#[track_caller]
fn same(before: &str, old: &str, new: &str, every: bool) -> String {
    let (after, replaced) = replace(before, old, new, every);
    assert!(!replaced.is_empty(), "{old:?} is not in the text");
    let whole = unified_diff(&path(), before, &after);
    let windowed = windowed(&path(), before, &after, &replaced);
    assert_eq!(windowed.as_deref(), Some(whole.as_str()), "{old:?} -> {new:?} in {before:?}");
    assert_eq!(edit_diff(&path(), before, &after, &replaced), whole);
    whole
}

fn numbered(lines: usize, ending: &str) -> String {
    (1..=lines).map(|n| format!("line {n}{ending}")).collect()
}

#[test]
fn replace_gives_the_text_str_replace_gives() {
    let text = "a b a b a";
    assert_eq!(replace(text, "a", "xy", true).0, text.replace("a", "xy"));
    assert_eq!(replace(text, "a", "xy", false).0, text.replacen("a", "xy", 1));
    let (_, ranges) = replace(text, "a", "xy", true);
    let news: Vec<_> = ranges.iter().map(|r| r.new.clone()).collect();
    assert_eq!(news, [0..2, 5..7, 10..12]);
}

#[test]
fn one_line_changed_anywhere_in_the_file() {
    let text = numbered(40, "\n");
    for n in [1, 2, 4, 5, 6, 20, 35, 36, 37, 39, 40] {
        let diff = same(&text, &format!("line {n}\n"), &format!("LINE {n}\n"), false);
        assert!(diff.contains(&format!("-line {n}\n+LINE {n}\n")), "{diff}");
    }
}

#[test]
fn edits_at_the_start_and_the_end_of_the_file() {
    let text = numbered(12, "\n");
    same(&text, "line 1\n", "", false);
    same(&text, "line 1\nline 2\n", "new\nlines\nhere\n", false);
    same(&text, "line 12\n", "", false);
    same(&text, "line 12\n", "line 12\nline 13\n", false);
    same(&text, "line 12\n", "line 12", false);
    same(&text, &text, "all new\n", false);
    same(&text, &text, "", false);
    same("only\n", "only\n", "one\ntwo\n", false);
}

#[test]
fn no_line_break_at_the_end_of_the_file() {
    let text = numbered(10, "\n") + "last";
    same(&text, "last", "final", false);
    same(&text, "last", "last\n", false);
    same(&text, "line 10\nlast", "end", false);
    same(&text, "line 9\n", "nine\n", false);
    same("a", "a", "b", false);
}

#[test]
fn crlf_and_lone_cr_line_breaks() {
    let text = numbered(20, "\r\n");
    same(&text, "line 10\r\n", "line ten\r\n", false);
    same(&text, "line 10\r\n", "line ten\n", false);
    // Splitting a CRLF pair: the `\r` and the `\n` each end a line after it.
    same(&text, "\r\nline 11", "\r\nx\rline 11", false);
    same(&text, "10\r", "10", false);
    same(&text, "\nline 5", "line 5", false);
    same(&text, "line 20\r\n", "line 20\r", false);
    let lone = numbered(15, "\r");
    same(&lone, "line 7\r", "seven\r\n", false);
    same(&lone, "\rline 8", "\nline 8", false);
    let mixed = "a\r\nb\rc\nd\r\ne\rf\ng\r\nh\ri\nj\r\nk\rl\n";
    same(mixed, "f\n", "F\r", false);
    same(mixed, "\r", "\n", true);
}

#[test]
fn several_replacements_in_one_window() {
    let text = numbered(30, "\n");
    // Adjacent lines: the windows overlap.
    same(&text, "line 1", "L1", false);
    let text = text.replace("line 12\n", "x\n").replace("line 14\n", "x\n").replace("line 20\n", "x\n");
    same(&text, "x\n", "y\ny\n", true);
    // Next to each other: one hunk, one window.
    same("x\nx\nx\nkeep\n", "x\n", "", true);
    // Just far enough apart for two windows that touch.
    let text: String =
        (1..=40).map(|n| if n % 9 == 0 { "hit\n".to_owned() } else { format!("{n}\n") }).collect();
    same(&text, "hit\n", "HIT\n", true);
}

#[test]
fn replacements_in_separate_windows() {
    let text: String =
        (1..=120).map(|n| if n % 30 == 0 { "hit\n".to_owned() } else { format!("line {n}\n") }).collect();
    let diff = same(&text, "hit\n", "HIT\nmore\n", true);
    assert_eq!(diff.matches("@@ -").count(), 4, "{diff}");
    let spans = windows(text.as_bytes(), &replace(&text, "hit\n", "HIT\n", true).1).unwrap();
    assert_eq!(spans.len(), 4);
    // A window per line, far apart, on a long line each.
    let long = "x".repeat(5_000);
    let text: String =
        (0..60).map(|n| if n % 20 == 10 { format!("{long}hit{long}\n") } else { format!("{n}\n") }).collect();
    same(&text, "hit", "", true);
}

#[test]
fn many_replacements_on_one_long_line() {
    let text = format!("before\n{}\nafter\n", "ab".repeat(20_000));
    same(&text, "b", "c", true);
}

#[test]
fn a_change_inside_a_run_of_equal_lines_grows_the_window() {
    // The whole-file diff puts the removed line at the end of the run, far
    // past the window first taken around the replaced range.
    let text = "a\n".repeat(200) + "b\n";
    same(&text, "a\n", "", false);
    same(&text, "a\n", "a\na\n", false);
    let text = "top\n".to_owned() + &"a\n".repeat(50) + "middle\n" + &"a\n".repeat(50);
    same(&text, "top\na\n", "top\n", false);
    same(&text, "middle\na\n", "middle\n", false);
}

#[test]
fn a_large_file_keeps_whole_file_line_numbers() {
    // Past WHOLE_FILE_MAX_BYTES, several windows are diffed as windows too.
    let text = numbered(40_000, "\n");
    assert!(text.len() > WHOLE_FILE_MAX_BYTES);
    let diff = same(&text, "line 30000\n", "changed\n", false);
    assert!(diff.starts_with("--- a/src/f.txt\n+++ b/src/f.txt\n@@ -29997,7 +29997,7 @@\n"), "{diff}");
    let text = text.replace("line 100\n", "hit\n").replace("line 39990\n", "hit\n");
    let diff = same(&text, "hit\n", "", true);
    assert!(diff.contains("@@ -97,7 +97,6 @@\n") && diff.contains("@@ -39987,7 +39986,6 @@\n"), "{diff}");
}

/// xorshift64*: deterministic edits of texts made of a few repeated lines,
/// where a diff has most room to align lines differently.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }

    fn text(&mut self, lines: usize) -> String {
        const PIECES: [&str; 8] = ["a\n", "b\n", "a\n", "c\r\n", "\r", "\n", "dd", "a\r\n"];
        (0..lines).map(|_| PIECES[self.below(PIECES.len())]).collect()
    }
}

#[test]
fn random_single_replacements_match_the_whole_file_diff() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for _ in 0..3_000 {
        let lines = 1 + rng.below(60);
        let before = rng.text(lines);
        let start = rng.below(before.len());
        let end = (start + 1 + rng.below(12)).min(before.len());
        let pieces = rng.below(4);
        let new = rng.text(pieces);
        let after = format!("{}{new}{}", &before[..start], &before[end..]);
        if after == before {
            continue;
        }
        let replaced = [Replaced { old: start..end, new: start..start + new.len() }];
        let whole = unified_diff(&path(), &before, &after);
        let windowed = windowed(&path(), &before, &after, &replaced);
        assert_eq!(windowed.as_deref(), Some(whole.as_str()), "{before:?} [{start}..{end}] -> {new:?}");
    }
}

#[test]
fn ranges_that_do_not_fit_the_text_fall_back_to_the_whole_diff() {
    let (before, after) = ("a\nb\n", "a\nc\n");
    let wrong = [Replaced { old: 2..9, new: 2..3 }];
    assert_eq!(windowed(&path(), before, after, &wrong), None);
    assert_eq!(edit_diff(&path(), before, after, &wrong), unified_diff(&path(), before, after));
    assert_eq!(windowed(&path(), before, after, &[]), None);
}

/// `before` with a unified diff applied (texts whose lines end in `\n`,
/// but for the last one maybe); fails on a hunk that does not fit.
fn apply(before: &str, diff: &str) -> String {
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let mut hunks: Vec<(usize, Vec<(char, String)>)> = Vec::new();
    for line in diff.split_inclusive('\n').skip(2) {
        if let Some(header) = line.strip_prefix("@@ -") {
            let range = header.split(' ').next().unwrap();
            let (start, len) = range.split_once(',').unwrap_or((range, "1"));
            let start: usize = start.parse().unwrap();
            // An empty range names the line before it.
            hunks.push((if len == "0" { start } else { start - 1 }, Vec::new()));
        } else if line == "\\ No newline at end of file\n" {
            let last = hunks.last_mut().unwrap().1.last_mut().unwrap();
            assert_eq!(last.1.pop(), Some('\n'));
        } else {
            let mut chars = line.chars();
            let tag = chars.next().unwrap();
            hunks.last_mut().unwrap().1.push((tag, chars.collect()));
        }
    }
    let mut out = String::new();
    let mut at = 0;
    for (start, lines) in hunks {
        assert!(start >= at, "hunks overlap or go back");
        out.extend(old[at..start].iter().copied());
        at = start;
        for (tag, text) in lines {
            match tag {
                '+' => out.push_str(&text),
                ' ' | '-' => {
                    assert_eq!(old[at], text, "line {} is not what the hunk says", at + 1);
                    if tag == ' ' {
                        out.push_str(&text);
                    }
                    at += 1;
                }
                other => panic!("unexpected hunk line tag {other:?}"),
            }
        }
    }
    out.extend(old[at..].iter().copied());
    out
}

#[test]
fn the_apply_helper_applies_whole_file_diffs() {
    let before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl";
    for (old, new) in [("b\n", "B\nB2\n"), ("a\n", ""), ("l", "L\n"), ("k\nl", "")] {
        let (after, _) = replace(before, old, new, false);
        assert_eq!(apply(before, &unified_diff(&path(), before, &after)), after, "{old:?} -> {new:?}");
    }
}

#[test]
fn random_replacements_in_several_windows_give_a_diff_that_applies() {
    // A whole-file diff may align repeated lines between windows otherwise
    // (so a small file's change in several windows is diffed whole), but the
    // windowed diff must still turn the text before into the text after.
    const PIECES: [&str; 5] = ["a\n", "b\n", "a\n", "c\n", "x\n"];
    const OLD: [&str; 5] = ["a\nb\n", "x\n", "b\na\n", "c\na\n", "x\na\n"];
    const NEW: [&str; 5] = ["", "a\n", "b\na\n", "q\n", "a\na\na\n"];
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut several = 0;
    for _ in 0..3_000 {
        let lines = 20 + rng.below(80);
        let mut before: String = (0..lines).map(|_| PIECES[rng.below(PIECES.len())]).collect();
        if rng.below(3) == 0 {
            before.push_str("end");
        }
        let (old, new) = (OLD[rng.below(OLD.len())], NEW[rng.below(NEW.len())]);
        let (after, replaced) = replace(&before, old, new, true);
        if after == before {
            continue;
        }
        several += usize::from(windows(before.as_bytes(), &replaced).unwrap().len() > 1);
        let diff = windowed(&path(), &before, &after, &replaced).unwrap();
        assert_eq!(apply(&before, &diff), after, "{before:?}: {old:?} -> {new:?}\n{diff}");
        assert_eq!(edit_diff(&path(), &before, &after, &replaced), unified_diff(&path(), &before, &after));
    }
    assert!(several > 1_000, "only {several} edits had several windows");
}
