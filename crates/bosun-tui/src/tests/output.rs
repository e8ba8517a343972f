//! Tool output in the conversation: a running call's newest lines under
//! it, a few left when it ends, the pager (Ctrl+O) over the whole result,
//! and the history search (Ctrl+R) in the prompt area.

use std::time::Duration;

use bosun_core::Event;
use crossterm::event::{KeyCode, KeyModifiers};
use serde_json::json;

use super::*;
use crate::FromUi;

fn numbered(from: u32, to: u32) -> Vec<String> {
    (from..=to).map(|i| format!("line {i}")).collect()
}

fn end(app: &mut App, call_id: CallId, name: &str, is_error: bool, output: String) {
    event(app, Event::ToolEnd { call_id, name: name.into(), is_error, output });
}

/// A finished call of `name` whose output is `output`.
fn finished(app: &mut App, name: &str, arguments: serde_json::Value, output: String) {
    let id = propose(app, name, arguments);
    event(app, Event::ToolStart { call_id: id, name: name.into() });
    end(app, id, name, false, output);
}

#[test]
fn a_running_call_shows_its_newest_lines_then_a_few_stay_with_a_hint() {
    let mut app = app();
    app.handle(ToUi::Busy(true));
    let id = propose(&mut app, "shell", json!({"command": "make"}));
    event(&mut app, Event::ToolStart { call_id: id, name: "shell".into() });
    app.tick(app.now + Duration::from_millis(1500));
    let mut tail = numbered(3, 11);
    tail.push("progress 40%\x1b[2K".into());
    event(&mut app, Event::ToolOutput { call_id: id, tail, lines: 12 });
    let frame = text(&draw(&app, 80, 14));
    insta::assert_snapshot!(frame);
    assert!(!frame.contains("line 7"), "five lines only:\n{frame}");
    // The next report replaces the lines shown.
    event(&mut app, Event::ToolOutput { call_id: id, tail: numbered(20, 29), lines: 29 });
    let frame = text(&draw(&app, 80, 14));
    assert!(
        frame.contains("│ line 29") && frame.contains("… +24 lines") && !frame.contains("40%"),
        "{frame}"
    );

    let output =
        std::iter::once("exit code: 0".to_owned()).chain(numbered(1, 30)).collect::<Vec<_>>().join("\n");
    end(&mut app, id, "shell", false, output);
    assert_eq!(
        lines_text(&app.take_scrollback()),
        "✓ shell make · 1.5s\n    … +27 lines (ctrl+o to expand)\n    line 28\n    line 29\n    line 30"
    );
    assert!(!text(&draw(&app, 80, 14)).contains("line 29"), "the live lines are gone");

    // Another tool's first lines stay, and a short output whole.
    finished(&mut app, "search", json!({"pattern": "fn"}), numbered(1, 9).join("\n"));
    finished(&mut app, "shell", json!({"command": "true"}), "exit code: 0\n(no output)".into());
    assert_eq!(
        lines_text(&app.take_scrollback()),
        "✓ search fn · 0.0s\n    line 1\n    line 2\n    line 3\n    … +6 lines (ctrl+o to expand)\n✓ shell true · 0.0s\n    (no output)"
    );
}

#[test]
fn a_flood_of_output_keeps_the_ui_state_bounded() {
    use bosun_core::event::{OUTPUT_LINE_BYTES, OUTPUT_TAIL_LINES};
    let mut app = app();
    app.handle(ToUi::Busy(true));
    let id = propose(&mut app, "shell", json!({"command": "seq 100000"}));
    event(&mut app, Event::ToolStart { call_id: id, name: "shell".into() });
    // 100,000 lines reported ten at a time: more reports than the session
    // would ever send (it coalesces them), each replacing the last.
    for last in (OUTPUT_TAIL_LINES as u32..=100_000).step_by(OUTPUT_TAIL_LINES) {
        let tail = numbered(last + 1 - OUTPUT_TAIL_LINES as u32, last);
        event(&mut app, Event::ToolOutput { call_id: id, tail, lines: u64::from(last) });
    }
    // And one from a producer that ignored the bounds.
    let mut tail = numbered(1, 100_000);
    tail.push("x".repeat(100 * OUTPUT_LINE_BYTES));
    event(&mut app, Event::ToolOutput { call_id: id, tail, lines: 100_001 });
    let call = &app.calls[0];
    assert_eq!(call.tail.len(), crate::render::LIVE_OUTPUT_ROWS, "only what is drawn is kept");
    assert!(call.tail.iter().all(|line| line.len() <= OUTPUT_LINE_BYTES));
    assert!(app.take_scrollback().is_empty(), "nothing reaches the scrollback while it runs");
    let frame = text(&draw(&app, 80, 14));
    assert!(frame.contains("│ … +99996 lines") && frame.contains("│ line 100000\n  │ xxx"), "{frame}");

    // Its end: a result past any session's bound is cut for the pager, and
    // the scrollback gets a few lines.
    let output: String = std::iter::once("exit code: 0\n".to_owned())
        .chain((1..=100_000).map(|i| format!("{i:>11}\n")))
        .collect();
    assert!(output.len() > crate::pager::KEPT_BYTES);
    end(&mut app, id, "shell", false, output);
    assert_eq!(app.take_scrollback().len(), 5, "the call, the hint and three lines");
    let kept = app.outputs.get(0).map(|o| o.text.len()).unwrap_or_default();
    assert!(kept <= crate::pager::KEPT_BYTES + 64, "{kept}");
    app.key(ctrl('o'));
    app.key(key(KeyCode::End));
    let last = text(&draw(&app, 80, 14));
    assert!(last.contains("the rest is not kept for the pager"), "{last}");
}

#[test]
fn ctrl_o_pages_through_the_whole_output_and_steps_between_calls() {
    let mut app = app();
    assert_eq!(app.key(ctrl('o')), []);
    assert!(app.pager.is_none(), "nothing to show yet");
    finished(&mut app, "read_file", json!({"path": "a.rs"}), numbered(1, 40).join("\n"));
    let shell = std::iter::once("exit code: 0".to_owned())
        .chain(numbered(1, 30))
        .chain(["bell\x07 and \x1b[31mred".to_owned()])
        .collect::<Vec<_>>()
        .join("\n");
    finished(&mut app, "shell", json!({"command": "seq 30"}), shell);
    app.take_scrollback();
    type_text(&mut app, "draft");

    app.key(ctrl('o'));
    let first = text(&draw(&app, 80, 14));
    insta::assert_snapshot!(first);
    assert!(
        first.contains("exit code: 0") && first.contains("line 9") && !first.contains("line 30"),
        "{first}"
    );
    app.key(key(KeyCode::End));
    let last = text(&draw(&app, 80, 14));
    assert!(last.contains("bell\\x07 and \\x1b[31mred") && !last.contains("line 9\n"), "{last}");
    app.key(key(KeyCode::PageUp));
    app.key(key(KeyCode::Up));
    assert!(text(&draw(&app, 80, 14)).contains("lines 10–20 of 32"), "{}", text(&draw(&app, 80, 14)));
    app.key(key(KeyCode::Home));
    assert!(text(&draw(&app, 80, 14)).contains("lines 1–11 of 32"));

    // Left: the call before; typing does not reach the editor.
    app.key(key(KeyCode::Left));
    app.key(key(KeyCode::Char('x')));
    let read = text(&draw(&app, 80, 14));
    assert!(read.contains("✓ read_file a.rs · call 1 of 2") && read.contains("line 1"), "{read}");
    app.key(key(KeyCode::Left));
    app.key(key(KeyCode::Right));
    assert!(text(&draw(&app, 80, 14)).contains("call 2 of 2"));
    assert_eq!(app.key(key(KeyCode::Char('q'))), []);
    assert!(app.pager.is_none());
    assert_eq!(app.input(), "draft", "the editor is as it was");
    app.key(ctrl('o'));
    assert_eq!(app.key(key(KeyCode::Esc)), []);
    assert!(app.pager.is_none(), "esc closes too");
}

#[test]
fn the_pager_keeps_the_last_calls_only() {
    let mut app = app();
    for i in 0..crate::pager::KEPT + 5 {
        finished(&mut app, "shell", json!({"command": format!("echo {i}")}), format!("exit code: 0\n{i}"));
    }
    assert_eq!(app.outputs.len(), crate::pager::KEPT);
    app.key(ctrl('o'));
    for _ in 0..crate::pager::KEPT + 3 {
        app.key(key(KeyCode::Left));
    }
    let oldest = text(&draw(&app, 80, 14));
    assert!(oldest.contains("echo 5 · call 1 of 20"), "{oldest}");
}

#[test]
fn ctrl_r_finds_older_matches_and_enter_takes_one_without_sending() {
    let mut app = app();
    for entry in ["fix the parser", "run the tests", "fix the docs", "deploy"] {
        app.history.push(entry);
    }
    type_text(&mut app, "half typed");
    assert_eq!(app.key(ctrl('r')), []);
    type_text(&mut app, "FIX");
    let frame = text(&draw(&app, 80, 8));
    insta::assert_snapshot!(frame);
    assert_eq!(app.search_match(), Some("fix the docs"), "the newest match");
    app.key(ctrl('r'));
    assert_eq!(app.search_match(), Some("fix the parser"), "again: older");
    app.key(ctrl('r'));
    assert_eq!(app.search_match(), Some("fix the parser"), "no older one: it stays");
    assert_eq!(app.input(), "half typed", "the editor waits");
    assert_eq!(app.key(key(KeyCode::Enter)), [], "enter does not send");
    assert_eq!(app.input(), "fix the parser");
    assert!(app.search.is_none());

    // Esc gives the search up; the editor is as it was.
    app.key(ctrl('r'));
    type_text(&mut app, "dep");
    assert_eq!(app.search_match(), Some("deploy"));
    app.key(key(KeyCode::Esc));
    assert_eq!(app.input(), "fix the parser");
    // No match is said; Backspace widens again.
    app.key(ctrl('r'));
    type_text(&mut app, "zz");
    assert!(text(&draw(&app, 80, 8)).contains("reverse search: zz (no match)"));
    app.key(key(KeyCode::Backspace));
    app.key(key(KeyCode::Backspace));
    type_text(&mut app, "run");
    // A movement key takes the match and moves in it.
    app.key(KeyCode::Home.into());
    app.key(key(KeyCode::Char('!')));
    assert_eq!(app.input(), "!run the tests");
    // A paste goes into the query, one line; none reaches the editor under
    // the pager.
    app.key(ctrl('r'));
    app.paste("TESTS\n".into());
    assert_eq!(app.search.as_ref().map(|s| s.query.as_str()), Some("TESTS"));
    assert_eq!(app.search_match(), Some("run the tests"));
    app.key(key(KeyCode::Esc));
    finished(&mut app, "shell", json!({"command": "true"}), "exit code: 0".into());
    app.key(ctrl('o'));
    app.paste("pasted".into());
    app.key(key(KeyCode::Esc));
    assert_eq!(app.input(), "!run the tests");
    // Ctrl+C leaves a search without clearing anything.
    app.key(ctrl('r'));
    app.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(app.search.is_none());
    assert_eq!(app.input(), "!run the tests");
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Shell("run the tests".into())]);
}
