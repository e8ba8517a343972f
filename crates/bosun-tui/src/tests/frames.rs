//! Frames: snapshots of what the viewport and the scrollback show, and
//! plain asserts on colours, which a snapshot's text does not show.

use std::time::{Duration, Instant};

use bosun_core::Event;
use ratatui::style::Color;
use serde_json::json;
use tokio::sync::oneshot;

use super::*;
use crate::modal::Call;
use crate::{PickItem, Queued, QueuedKind};

#[test]
fn streaming_text_mid_answer() {
    let t0 = Instant::now();
    let mut app = app_at(true, t0);
    app.handle(ToUi::Busy(true));
    delta(&mut app, "Here is the plan:\n\n");
    delta(&mut app, "1. Read the failing test\n2. Fix the off-by-one in `parse_range`\n3. Run the wh");
    app.tick(t0 + Duration::from_millis(2300));
    // The finished paragraph went to the scrollback; the list is the tail.
    assert_eq!(lines_text(&app.take_scrollback()), "Here is the plan:");
    insta::assert_snapshot!(text(&draw(&app, 80, 12)));
}

#[test]
fn markdown_with_a_highlighted_code_block() {
    let mut app = app();
    let answer = "## Fix\n\nChange **one** line in *parse*, see [the docs](https://docs.test/x):\n\n\
        ```rust\nfn parse(s: &str) -> u32 {\n    // the fix\n    s.len() as u32 + 1\n}\n```\n\n\
        > Note: run `cargo test` after.\n\n- done\n  - nested\n";
    delta(&mut app, answer);
    event(
        &mut app,
        Event::TurnEnd {
            turn: 1,
            outcome: bosun_core::event::TurnOutcomeKind::Completed,
            usage: bosun_core::Usage::new(1, 2),
            spend: bosun_core::Spend::default(),
            cost_micros: None,
            stop_reason: None,
        },
    );
    let lines = app.take_scrollback();
    insta::assert_snapshot!(lines_text(&lines));
    let span = |needle: &str| {
        lines.iter().flat_map(|l| &l.spans).find(|s| s.content.contains(needle)).map(|s| s.style).unwrap()
    };
    assert_eq!(span("fn").fg, Some(Color::Magenta), "keyword");
    let number = lines.iter().flat_map(|l| &l.spans).find(|s| s.content.as_ref() == "1").map(|s| s.style.fg);
    assert_eq!(number, Some(Some(Color::Cyan)), "number");
    assert_eq!(span("u32").fg, Some(Color::Magenta), "a primitive type is storage");
    assert!(span("the fix").add_modifier.contains(ratatui::style::Modifier::DIM), "comment");
    assert_eq!(span("the docs").fg, Some(Color::Blue), "link text");
    assert!(span("(https://docs.test/x)").add_modifier.contains(ratatui::style::Modifier::DIM), "url dimmed");
}

#[test]
fn a_highlighted_code_block_streams_in_the_viewport() {
    let mut app = app();
    delta(&mut app, "```python\ndef greet(name):\n    return \"hi \" + name\n");
    let buffer = draw(&app, 80, 10);
    assert_eq!(cell_of(&buffer, "def").fg, Color::Magenta);
    assert_eq!(cell_of(&buffer, "\"hi").fg, Color::Green);
    insta::assert_snapshot!(text(&buffer));
}

#[test]
fn a_coloured_diff_after_an_edit() {
    let mut app = app();
    let id = propose(&mut app, "edit_file", json!({"path": "src/lib.rs", "old_text": "a", "new_text": "b"}));
    event(&mut app, Event::ToolStart { call_id: id, name: "edit_file".into() });
    app.tick(app.now + Duration::from_millis(120));
    let output = "edited `src/lib.rs`: 1 replacement\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n fn a() {}\n-let x = 1;\n+let x = 2;\n fn b() {}\n";
    event(
        &mut app,
        Event::ToolEnd { call_id: id, name: "edit_file".into(), is_error: false, output: output.into() },
    );
    let lines = app.take_scrollback();
    insta::assert_snapshot!(lines_text(&lines));
    let fg = |needle: &str| {
        lines.iter().flat_map(|l| &l.spans).find(|s| s.content.starts_with(needle)).and_then(|s| s.style.fg)
    };
    assert_eq!(fg("-let"), Some(Color::Red));
    assert_eq!(fg("+let"), Some(Color::Green));
    assert_eq!(fg("@@"), Some(Color::Cyan));
    assert_eq!(fg("✓"), Some(Color::Green));

    // `/diff` output is coloured the same way.
    app.handle(ToUi::Diff("@@ -1 +1 @@\n-x\n+y\n".into()));
    let diff = app.take_scrollback();
    assert_eq!(diff[1].spans[0].style.fg, Some(Color::Red));
}

fn approval(
    app: &mut App,
    tool: &str,
    arguments: serde_json::Value,
    diff: Option<&str>,
) -> oneshot::Receiver<bosun_core::ApprovalDecision> {
    let (reply, answer) = oneshot::channel();
    let call = Call {
        tool: tool.into(),
        arguments,
        reason: format!("`{tool}` asks in propose mode"),
        protected: false,
    };
    app.ask(call, diff.map(str::to_owned), reply);
    answer
}

#[test]
fn the_approval_modal_for_a_shell_command() {
    let mut app = app();
    let _answer = approval(
        &mut app,
        "shell",
        json!({"command": "cargo test --workspace\n  && rm -rf target/tmp\x1b[2K"}),
        None,
    );
    let buffer = draw(&app, 80, 14);
    insta::assert_snapshot!(text(&buffer));
    assert_eq!(cell_of(&buffer, "? shell").fg, Color::Yellow);
}

#[test]
fn the_approval_modal_for_an_edit_with_a_diff() {
    let mut app = app();
    let diff = "--- a/src/parse.rs\n+++ b/src/parse.rs\n@@ -10,3 +10,3 @@\n fn parse() {\n-    let end = start + len;\n+    let end = start + len - 1;\n }\n";
    let _first = approval(
        &mut app,
        "edit_file",
        json!({"path": "src/parse.rs", "old_text": "x", "new_text": "y"}),
        Some(diff),
    );
    let _second = approval(&mut app, "shell", json!({"command": "ls"}), None);
    let buffer = draw(&app, 80, 16);
    insta::assert_snapshot!(text(&buffer));
    assert_eq!(cell_of(&buffer, "-    let end").fg, Color::Red);
    assert_eq!(cell_of(&buffer, "+    let end").fg, Color::Green);
}

#[test]
fn the_session_picker() {
    let mut app = app();
    let (reply, _answer) = oneshot::channel();
    let items = vec![
        PickItem::new("s1", "fix the parser tests · 2 h ago"),
        PickItem::new("s2", "add \x1b]0;pwned\x07 a title · yesterday"),
        PickItem::new("s3", "refactor the CLI · 3 days ago"),
    ];
    app.handle(ToUi::Picker { title: "resume a session".into(), items, reply });
    app.key(key(crossterm::event::KeyCode::Down));
    let buffer = draw(&app, 80, 10);
    insta::assert_snapshot!(text(&buffer));
    assert!(cell_of(&buffer, "› add").modifier.contains(ratatui::style::Modifier::REVERSED));
}

#[test]
fn the_pending_queue_while_busy() {
    let t0 = Instant::now();
    let mut app = app_at(true, t0);
    app.handle(ToUi::Busy(true));
    app.handle(ToUi::Queue(vec![
        Queued::new(1, QueuedKind::Steer, "use the new API instead"),
        Queued::new(2, QueuedKind::FollowUp, "then update the changelog\nand the docs"),
    ]));
    type_text(&mut app, "also run clippy");
    app.key(key(crossterm::event::KeyCode::Tab));
    app.tick(t0 + Duration::from_secs(12));
    insta::assert_snapshot!(text(&draw(&app, 80, 12)));
}

#[test]
fn the_status_line() {
    let app = app();
    let buffer = draw(&app, 80, 3);
    insta::assert_snapshot!(text(&buffer));
    assert!(cell_of(&buffer, "claude-sonnet").modifier.contains(ratatui::style::Modifier::DIM));
}

#[test]
fn a_narrow_layout_wraps_by_display_width() {
    let t0 = Instant::now();
    let mut app = app_at(true, t0);
    app.handle(ToUi::Busy(true));
    let id = propose(
        &mut app,
        "shell",
        json!({"command": "cargo nextest run --workspace --all-features --no-fail-fast -- --include-ignored very_long_test_name"}),
    );
    event(&mut app, Event::ToolStart { call_id: id, name: "shell".into() });
    delta(&mut app, "");
    type_text(
        &mut app,
        "日本語のテキストと a fairly long English sentence that has to wrap inside the input box at eighty columns",
    );
    app.tick(t0 + Duration::from_millis(3400));
    let buffer = draw(&app, 80, 12);
    insta::assert_snapshot!(text(&buffer));
    // Every row fits: nothing is drawn past the last column by a wide
    // character.
    for y in 0..buffer.area.height {
        let row = row(&buffer, y);
        assert!(crate::text::width(&row) <= 80, "{row}");
    }
    assert!(text(&buffer).contains("› 日本語のテキストと a fairly long"));
}

#[test]
fn no_color_means_no_colours_anywhere() {
    let mut app = app_at(false, Instant::now());
    delta(&mut app, "# T\n\n```rust\nfn main() { let s = \"x\"; }\n```\n\nsee [a](https://a.test)\n");
    let id = propose(&mut app, "edit_file", json!({"path": "p"}));
    event(
        &mut app,
        Event::ToolEnd {
            call_id: id,
            name: "edit_file".into(),
            is_error: false,
            output: "e\n@@ -1 +1 @@\n-a\n+b\n".into(),
        },
    );
    let id = propose(&mut app, "shell", json!({"command": "false"}));
    event(
        &mut app,
        Event::ToolEnd { call_id: id, name: "shell".into(), is_error: true, output: "boom".into() },
    );
    app.handle(ToUi::Notice { text: "careful".into(), kind: crate::NoticeKind::Warning });
    let lines = app.take_scrollback();
    assert!(lines.len() > 10);
    for span in lines.iter().flat_map(|l| &l.spans) {
        assert_eq!(span.style.fg, None, "{span:?}");
        assert_eq!(span.style.bg, None, "{span:?}");
    }
    delta(&mut app, "```rust\nfn live() {}\n");
    let _answer =
        approval(&mut app, "edit_file", json!({"path": "p", "old_text": "a", "new_text": "b"}), None);
    for buffer in [draw(&app, 80, 14), {
        app.modals.clear();
        draw(&app, 80, 14)
    }] {
        for cell in buffer.content() {
            assert_eq!((cell.fg, cell.bg), (Color::Reset, Color::Reset), "{:?}\n{}", cell, text(&buffer));
        }
    }
}

#[test]
fn colours_are_named_ansi_only() {
    let mut app = app();
    delta(&mut app, "```rust\nstruct A; fn f() -> A { A }\n```\n\n");
    let id = propose(&mut app, "apply_patch", json!({}));
    event(
        &mut app,
        Event::ToolEnd {
            call_id: id,
            name: "apply_patch".into(),
            is_error: false,
            output: "p\n-a\n+b\n".into(),
        },
    );
    for span in app.take_scrollback().iter().flat_map(|l| &l.spans) {
        assert!(!matches!(span.style.fg, Some(Color::Rgb(..) | Color::Indexed(_))), "{span:?}");
        assert_eq!(span.style.bg, None, "no backgrounds: {span:?}");
    }
}
