//! Keys, messages and time: what the UI sends back and what it keeps.

use std::time::{Duration, Instant};

use bosun_core::{ApprovalDecision, Event, GrantScope, Reason};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;
use tokio::sync::oneshot;

use super::*;
use crate::modal::Call;
use crate::{FromUi, PickItem, Queued, QueuedKind, SlashCommand};

#[test]
fn enter_and_tab_while_busy_steer_and_follow_up() {
    let mut app = app();
    app.handle(ToUi::Busy(true));
    type_text(&mut app, "use the new API");
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Steer("use the new API".into())]);
    assert_eq!(app.input(), "");
    type_text(&mut app, "then the docs");
    assert_eq!(app.key(key(KeyCode::Tab)), [FromUi::FollowUp("then the docs".into())]);
    // Shown as being sent until the library's queue has it.
    assert_eq!(app.sending.len(), 2);
    app.handle(ToUi::Queue(vec![Queued::new(7, QueuedKind::Steer, "use the new API")]));
    assert_eq!(app.sending, [(QueuedKind::FollowUp, "then the docs".to_owned())]);

    // Idle, Enter submits and Tab sends nothing.
    app.handle(ToUi::Busy(false));
    app.handle(ToUi::Queue(Vec::new()));
    type_text(&mut app, "next task");
    assert_eq!(app.key(key(KeyCode::Tab)), []);
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Submit("next task".into())]);
    assert_eq!(app.key(key(KeyCode::Enter)), [], "nothing to send");
    // With messages left queued, an empty Enter delivers them.
    app.handle(ToUi::Queue(vec![Queued::new(8, QueuedKind::FollowUp, "then the docs")]));
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Submit(String::new())]);
}

#[test]
fn a_delivered_message_is_shown_where_it_entered_the_conversation() {
    let mut app = app();
    app.handle(ToUi::Busy(true));
    app.handle(ToUi::Queue(vec![Queued::new(3, QueuedKind::Steer, "mind the tests\x1b[2J")]));
    event(&mut app, Event::MessageDelivered { turn: 1, id: 3, delivery: bosun_core::Delivery::Steer });
    let shown = lines_text(&app.take_scrollback());
    assert!(shown.contains("› mind the tests\\x1b[2J (steering, delivered)"), "{shown}");
}

#[test]
fn shell_and_slash_commands_are_routed() {
    let mut app = app();
    type_text(&mut app, "!git status --short");
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Shell("git status --short".into())]);
    type_text(&mut app, "/model  gpt-x fast ");
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        [FromUi::Command { name: "model".into(), args: "gpt-x fast".into() }]
    );
    // `/help` is answered here, from the commands and the key table.
    app.commands = vec![SlashCommand::new("resume", "pick up a session")];
    type_text(&mut app, "/help");
    assert_eq!(app.key(key(KeyCode::Enter)), []);
    let help = lines_text(&app.take_scrollback());
    assert!(help.contains("/resume") && help.contains("pick up a session"), "{help}");
    assert!(help.contains("ctrl+t"), "{help}");
}

#[test]
fn esc_while_busy_cancels_and_keeps_the_text() {
    let mut app = app();
    app.handle(ToUi::Busy(true));
    type_text(&mut app, "half a thought");
    assert_eq!(app.key(key(KeyCode::Esc)), [FromUi::Cancel]);
    assert_eq!(app.input(), "half a thought");
    app.handle(ToUi::Busy(false));
    assert_eq!(app.key(key(KeyCode::Esc)), [], "idle, Esc does nothing");
}

#[test]
fn ctrl_c_twice_within_two_seconds_exits_but_not_three_seconds_apart() {
    let t0 = Instant::now();
    let mut app = app_at(true, t0);
    app.handle(ToUi::Busy(true));
    type_text(&mut app, "draft");
    assert_eq!(app.key_at(ctrl('c'), t0), [FromUi::Cancel]);
    assert_eq!(app.input(), "draft", "a cancel keeps the text");
    assert!(text(&draw(&app, 80, 10)).contains("ctrl+c again quits"));
    assert_eq!(app.key_at(ctrl('c'), t0 + Duration::from_millis(1500)), [FromUi::Exit]);
    assert!(app.exited());

    let mut app = app_at(true, t0);
    type_text(&mut app, "draft");
    assert_eq!(app.key_at(ctrl('c'), t0), []);
    assert_eq!(app.input(), "", "idle with text: cleared");
    assert_eq!(app.key_at(ctrl('c'), t0 + Duration::from_secs(3)), [], "too late to count as the second");
    assert!(!app.exited());
    assert_eq!(app.key_at(ctrl('c'), t0 + Duration::from_secs(4)), [FromUi::Exit]);
}

#[test]
fn esc_twice_on_empty_input_edits_the_previous_message_and_sending_it_resends() {
    let t0 = Instant::now();
    let mut app = app_at(true, t0);
    assert_eq!(app.key_at(key(KeyCode::Esc), t0), []);
    assert!(text(&draw(&app, 80, 10)).contains("esc again edits your previous message"));
    assert_eq!(app.key_at(key(KeyCode::Esc), t0 + Duration::from_millis(500)), [FromUi::EditPrevious]);
    // Too far apart, or with a key between, it is not a double Esc.
    assert_eq!(app.key_at(key(KeyCode::Esc), t0 + Duration::from_secs(10)), []);
    assert_eq!(app.key_at(key(KeyCode::Esc), t0 + Duration::from_secs(13)), []);
    app.key_at(key(KeyCode::Left), t0 + Duration::from_secs(14));
    assert_eq!(app.key_at(key(KeyCode::Esc), t0 + Duration::from_secs(14)), []);

    app.handle(ToUi::Edit { turn: 3, text: "fix the tset".into() });
    assert_eq!(app.input(), "fix the tset");
    assert!(text(&draw(&app, 80, 10)).contains("editing: enter sends it as a new branch"));
    for _ in 0..3 {
        app.key(key(KeyCode::Backspace));
    }
    type_text(&mut app, "est");
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Resend { turn: 3, text: "fix the test".into() }]);
    // The next message is a message again.
    type_text(&mut app, "next");
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Submit("next".into())]);
    // Clearing the editor gives the edit up.
    app.handle(ToUi::Edit { turn: 2, text: "x".into() });
    app.key(key(KeyCode::Backspace));
    type_text(&mut app, "other");
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Submit("other".into())]);
    // While a turn runs, Esc cancels and never edits.
    app.handle(ToUi::Busy(true));
    assert_eq!(app.key_at(key(KeyCode::Esc), t0 + Duration::from_secs(20)), [FromUi::Cancel]);
    assert_eq!(app.key_at(key(KeyCode::Esc), t0 + Duration::from_secs(20)), [FromUi::Cancel]);
}

#[test]
fn a_message_not_sent_comes_back_into_an_empty_editor_and_never_over_new_words() {
    let mut app = app();
    type_text(&mut app, "what is in @shot.png");
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Submit("what is in @shot.png".into())]);
    app.handle(ToUi::Notice {
        text: "not sent: shot.png is over the limit".into(),
        kind: crate::NoticeKind::Error,
    });
    app.handle(ToUi::Unsent("what is in @shot.png".into()));
    assert_eq!(app.input(), "what is in @shot.png");
    app.key(key(KeyCode::Enter));
    type_text(&mut app, "new words");
    app.handle(ToUi::Unsent("what is in @shot.png".into()));
    assert_eq!(app.input(), "new words", "the history still has it (Up)");
    // Refused while a turn runs: no longer shown as being sent.
    app.editor.clear();
    app.handle(ToUi::Busy(true));
    type_text(&mut app, "and @big.png");
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Steer("and @big.png".into())]);
    assert_eq!(app.sending.len(), 1);
    app.handle(ToUi::Unsent("and @big.png".into()));
    assert!(app.sending.is_empty());
    assert_eq!(app.input(), "and @big.png");
}

#[test]
fn ctrl_d_exits_only_on_empty_input() {
    let mut app = app();
    type_text(&mut app, "x");
    assert_eq!(app.key(ctrl('d')), []);
    assert!(!app.exited());
    app.key(key(KeyCode::Backspace));
    assert_eq!(app.key(ctrl('d')), [FromUi::Exit]);
    assert!(app.exited());
}

#[test]
fn newlines_come_from_shift_or_alt_enter_and_ctrl_j() {
    let mut app = app();
    type_text(&mut app, "a");
    app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
    type_text(&mut app, "b");
    app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    app.key(ctrl('j'));
    type_text(&mut app, "c");
    assert_eq!(app.input(), "a\nb\n\nc");
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Submit("a\nb\n\nc".into())]);
}

fn ask(app: &mut App, tool: &str, arguments: serde_json::Value) -> oneshot::Receiver<ApprovalDecision> {
    let (reply, answer) = oneshot::channel();
    app.ask(Call { tool: tool.into(), arguments, reason: "asks".into(), protected: false }, None, reply);
    answer
}

#[test]
fn approval_keys_answer_on_the_oneshot_one_modal_at_a_time() {
    let mut app = app();
    let mut shell = ask(&mut app, "shell", json!({"command": "ls"}));
    let mut edit = ask(&mut app, "edit_file", json!({"path": "a"}));
    let mut once = ask(&mut app, "shell", json!({"command": "pwd"}));
    // Keys go to the first modal only; typing does not reach the editor.
    app.key(key(KeyCode::Char('x')));
    assert_eq!(app.input(), "");
    assert!(shell.try_recv().is_err() && edit.try_recv().is_err());
    app.key(key(KeyCode::Char('a')));
    assert_eq!(
        shell.try_recv().unwrap(),
        ApprovalDecision::ApproveForSession { scope: GrantScope::SameCall }
    );
    assert!(edit.try_recv().is_err(), "still waiting");
    app.key(key(KeyCode::Char('a')));
    assert_eq!(edit.try_recv().unwrap(), ApprovalDecision::ApproveForSession { scope: GrantScope::Tool });
    app.key(key(KeyCode::Char('y')));
    assert_eq!(once.try_recv().unwrap(), ApprovalDecision::ApproveOnce);
    assert!(app.modals.is_empty());

    // A protected path: the session grant is for this call only.
    let (reply, mut protected) = oneshot::channel();
    app.ask(
        Call { tool: "edit_file".into(), arguments: json!({}), reason: String::new(), protected: true },
        None,
        reply,
    );
    assert!(text(&draw(&app, 80, 14)).contains("(it touches a"));
    app.key(key(KeyCode::Char('a')));
    assert_eq!(
        protected.try_recv().unwrap(),
        ApprovalDecision::ApproveForSession { scope: GrantScope::SameCall }
    );
}

#[test]
fn a_denial_carries_the_reason_typed_in_place() {
    let mut app = app();
    let mut answer = ask(&mut app, "shell", json!({"command": "rm -rf /"}));
    app.key(key(KeyCode::Char('n')));
    type_text(&mut app, "use trash, not rm");
    app.key(key(KeyCode::Backspace));
    app.paste("m\nplease".into());
    assert!(text(&draw(&app, 80, 14)).contains("reason: use trash, not rm please"));
    app.key(key(KeyCode::Enter));
    assert_eq!(
        answer.try_recv().unwrap(),
        ApprovalDecision::Deny { reason: Reason::new("use trash, not rm please").unwrap() }
    );

    let mut blank = ask(&mut app, "shell", json!({"command": "x"}));
    app.key(key(KeyCode::Char('d')));
    app.key(key(KeyCode::Enter));
    assert_eq!(
        blank.try_recv().unwrap(),
        ApprovalDecision::Deny { reason: Reason::new("denied by the user").unwrap() }
    );

    let mut escaped = ask(&mut app, "shell", json!({"command": "x"}));
    app.key(key(KeyCode::Esc));
    assert!(matches!(escaped.try_recv().unwrap(), ApprovalDecision::Deny { .. }));

    // A reply nobody waits for any more is fine.
    let dropped = ask(&mut app, "shell", json!({"command": "x"}));
    drop(dropped);
    app.key(key(KeyCode::Char('y')));
    assert!(app.modals.is_empty());
}

#[test]
fn ctrl_c_denies_waiting_approvals_and_cancels_the_turn() {
    let mut app = app();
    app.handle(ToUi::Busy(true));
    let mut first = ask(&mut app, "shell", json!({"command": "a"}));
    let mut second = ask(&mut app, "shell", json!({"command": "b"}));
    assert_eq!(app.key(ctrl('c')), [FromUi::Cancel]);
    assert!(matches!(first.try_recv().unwrap(), ApprovalDecision::Deny { .. }));
    assert!(matches!(second.try_recv().unwrap(), ApprovalDecision::Deny { .. }));
}

#[test]
fn picker_and_confirm_answer_their_oneshots() {
    let mut app = app();
    let (reply, mut chosen) = oneshot::channel();
    let items = vec![PickItem::new("a", "first"), PickItem::new("b", "second")];
    app.handle(ToUi::Picker { title: "resume".into(), items: items.clone(), reply });
    app.key(key(KeyCode::Down));
    app.key(key(KeyCode::Down));
    app.key(key(KeyCode::Enter));
    assert_eq!(chosen.try_recv().unwrap(), Some("b".to_owned()));
    let (reply, mut chosen) = oneshot::channel();
    app.handle(ToUi::Picker { title: "resume".into(), items, reply });
    app.key(key(KeyCode::Esc));
    assert_eq!(chosen.try_recv().unwrap(), None);

    let (reply, mut yes) = oneshot::channel();
    app.handle(ToUi::Confirm { title: "Trust this folder?".into(), body: "/work/x".into(), reply });
    assert!(text(&draw(&app, 80, 8)).contains("Trust this folder?"));
    app.key(key(KeyCode::Char('y')));
    assert!(yes.try_recv().unwrap());
    let (reply, mut no) = oneshot::channel();
    app.handle(ToUi::Confirm { title: "t".into(), body: String::new(), reply });
    app.key(key(KeyCode::Char('n')));
    assert!(!no.try_recv().unwrap());
}

#[test]
fn a_large_paste_is_collapsed_but_sent_whole() {
    let mut app = app();
    let log: String = (1..=40).map(|i| format!("error line {i}\n")).collect();
    type_text(&mut app, "why does this fail? ");
    app.paste(log.clone());
    assert_eq!(app.input(), "why does this fail? [pasted 40 lines]");
    assert!(text(&draw(&app, 80, 10)).contains("[pasted 40 lines]"));
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Submit(format!("why does this fail? {log}"))]);
}

#[test]
fn history_walks_with_up_and_down_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.jsonl");
    let mut options = options(true);
    options.history_file = Some(file.clone());
    let mut app = App::new(options.clone());
    for message in ["first", "second\nline"] {
        type_text(&mut app, message.split('\n').next().unwrap());
        if message.contains('\n') {
            app.key(ctrl('j'));
            type_text(&mut app, "line");
        }
        app.key(key(KeyCode::Enter));
    }
    let mut again = App::new(options);
    type_text(&mut again, "draft");
    again.key(key(KeyCode::Up));
    assert_eq!(again.input(), "second\nline");
    // The cursor is on the last line: Up moves within the text first.
    again.key(key(KeyCode::Up));
    assert_eq!(again.input(), "second\nline");
    again.key(key(KeyCode::Up));
    assert_eq!(again.input(), "first");
    again.key(key(KeyCode::Down));
    assert_eq!(again.input(), "second\nline");
    again.key(key(KeyCode::Down));
    assert_eq!(again.input(), "draft");
}

#[test]
fn up_on_empty_input_takes_back_the_last_queued_message() {
    let mut app = app();
    app.handle(ToUi::Busy(true));
    app.handle(ToUi::Queue(vec![
        Queued::new(3, QueuedKind::Steer, "a"),
        Queued::new(4, QueuedKind::FollowUp, "b"),
    ]));
    assert_eq!(app.key(key(KeyCode::Up)), [FromUi::Unqueue(4)]);
    assert_eq!(app.input(), "b");
    // Alt+Up takes one back even with text in the editor.
    assert_eq!(app.key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)), [FromUi::Unqueue(3)]);
    assert_eq!(app.input(), "b\na");
}

#[test]
fn at_completes_paths_and_slash_completes_commands() {
    let mut app = app();
    app.paths = vec!["src/main.rs".into(), "src/lib.rs".into(), "docs/".into()];
    app.commands =
        vec![SlashCommand::new("resume", "pick up a session"), SlashCommand::new("review", "review")];
    type_text(&mut app, "explain @src/");
    let frame = text(&draw(&app, 80, 12));
    assert!(frame.contains("@src/main.rs") && frame.contains("@src/lib.rs"), "{frame}");
    app.key(key(KeyCode::Down));
    app.key(key(KeyCode::Tab));
    assert_eq!(app.input(), "explain @src/lib.rs ");
    // Esc closes the popup; Enter then sends.
    type_text(&mut app, "@do");
    app.key(key(KeyCode::Esc));
    assert_eq!(app.key(key(KeyCode::Enter)), [FromUi::Submit("explain @src/lib.rs @do".into())]);

    type_text(&mut app, "/re");
    assert!(text(&draw(&app, 80, 12)).contains("pick up a session"));
    app.key(key(KeyCode::Enter));
    assert_eq!(app.input(), "/resume ");
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        [FromUi::Command { name: "resume".into(), args: String::new() }]
    );
}

#[test]
fn shift_tab_asks_for_the_next_mode() {
    let mut app = app();
    assert_eq!(app.key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT)), [FromUi::CycleMode]);
}

#[test]
fn at_completion_offers_files_made_after_the_start() {
    let mut app = app();
    app.paths = vec!["src/main.rs".into()];
    // A turn made a file: the CLI sends the walk again.
    app.handle(ToUi::Paths(vec!["src/main.rs".into(), "src/made.rs".into()]));
    type_text(&mut app, "@src/ma");
    let frame = text(&draw(&app, 80, 12));
    assert!(frame.contains("@src/made.rs"), "{frame}");
}

#[test]
fn control_characters_never_reach_the_buffer_raw() {
    let mut app = app();
    app.handle(ToUi::Busy(true));
    event(&mut app, Event::ReasoningDelta { text: "hm \x1b]0;title\x07".into() });
    app.show_reasoning = true;
    let id = propose(&mut app, "shell", json!({"command": "echo \x1b[31mred\r\u{202e}"}));
    event(&mut app, Event::ToolStart { call_id: id, name: "shell\x1b[2J".into() });
    event(&mut app, Event::ToolProgress { call_id: id, message: "50%\x1b[1A".into() });
    delta(&mut app, "answer \x1b[2J\u{9b}31m");
    type_text(&mut app, "typed \x1b");
    app.handle(ToUi::Queue(vec![Queued::new(1, QueuedKind::Steer, "q\x07")]));
    let frame = draw(&app, 80, 14);
    let shown = text(&frame);
    assert!(shown.contains("answer \\x1b[2J\\u{9b}31m"), "{shown}");
    assert!(shown.contains("echo \\x1b[31mred\\r⟪U+202E⟫"), "{shown}");
    assert!(shown.contains("typed \\x1b"), "{shown}");
    let _answer = {
        let (reply, answer) = oneshot::channel();
        let diff = "@@ -1 +1 @@\n-a\x1b[8m\n+b\r\n";
        app.ask(
            Call {
                tool: "edit_file".into(),
                arguments: json!({"path": "p\x1b"}),
                reason: "r\x1b".into(),
                protected: false,
            },
            Some(diff.into()),
            reply,
        );
        answer
    };
    let modal = draw(&app, 80, 14);
    assert!(text(&modal).contains("-a\\x1b[8m"), "{}", text(&modal));
    event(
        &mut app,
        Event::ToolEnd {
            call_id: id,
            name: "shell".into(),
            is_error: true,
            output: "out\x1b[2K\nend\x1b".into(),
        },
    );
    app.handle(ToUi::Notice { text: "notice \x1b[5m".into(), kind: crate::NoticeKind::Error });
    let scrollback = app.take_scrollback();
    for buffer in [frame, modal] {
        for cell in buffer.content() {
            assert!(
                !cell.symbol().chars().any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
                "{cell:?}"
            );
        }
    }
    for span in scrollback.iter().flat_map(|l| &l.spans) {
        assert!(!span.content.chars().any(char::is_control), "{span:?}");
    }
    assert!(lines_text(&scrollback).contains("out\\x1b[2K"));
}

#[test]
fn a_tool_runs_with_a_clock_then_leaves_its_outcome() {
    let t0 = Instant::now();
    let mut app = app_at(true, t0);
    app.handle(ToUi::Busy(true));
    let id = propose(&mut app, "shell", json!({"command": "cargo test\n--quiet"}));
    event(
        &mut app,
        Event::ApprovalRequested {
            call_id: id,
            name: "shell".into(),
            arguments: json!({}),
            reason: "r".into(),
        },
    );
    assert!(text(&draw(&app, 80, 10)).contains("? shell cargo test … · waiting for approval"));
    event(
        &mut app,
        Event::ApprovalDecided {
            call_id: id,
            decision: bosun_core::event::Decision::ApproveOnce,
            reason: None,
        },
    );
    event(&mut app, Event::ToolStart { call_id: id, name: "shell".into() });
    app.tick(t0 + Duration::from_millis(12_300));
    assert!(text(&draw(&app, 80, 10)).contains("shell cargo test … · 12s"));
    assert!(app.animating());
    let output: String = std::iter::once("exit code: 101\n".to_owned())
        .chain((1..=20).map(|i| format!("line {i}\n")))
        .collect();
    app.tick(t0 + Duration::from_millis(15_000));
    event(&mut app, Event::ToolEnd { call_id: id, name: "shell".into(), is_error: true, output });
    let shown = lines_text(&app.take_scrollback());
    assert!(
        shown.starts_with(
            "✗ shell cargo test … · 15s\n    exit code: 101\n    … +12 lines (ctrl+o to expand)\n    line 13\n"
        ),
        "{shown}"
    );
    assert!(shown.ends_with("line 20"), "{shown}");
    app.handle(ToUi::Busy(false));
    assert!(!app.animating(), "idle: no ticking");

    // A denied call says why.
    let id = propose(&mut app, "write_file", json!({"path": "x"}));
    event(
        &mut app,
        Event::ApprovalDecided {
            call_id: id,
            decision: bosun_core::event::Decision::Deny,
            reason: Some("no".into()),
        },
    );
    event(
        &mut app,
        Event::ToolEnd { call_id: id, name: "write_file".into(), is_error: true, output: "denied".into() },
    );
    assert_eq!(lines_text(&app.take_scrollback()), "✗ write_file x · denied: no");
}

#[test]
fn subagent_events_are_indented_under_an_arrow() {
    let mut app = app();
    let child = Event::ToolCallProposed {
        call_id: bosun_core::CallId::new_v7(),
        name: "read_file".into(),
        arguments: json!({"path": "a.rs"}),
    };
    event(
        &mut app,
        Event::Subagent {
            call_id: bosun_core::CallId::new_v7(),
            child: "0190-child-abcdef12".into(),
            event: Box::new(child),
        },
    );
    assert_eq!(lines_text(&app.take_scrollback()), "  ↳ abcdef12 ● read_file a.rs");
}

#[test]
fn reasoning_is_one_line_until_ctrl_t() {
    let mut app = app();
    event(
        &mut app,
        Event::ReasoningDelta { text: "First I look at the parser.\nThen the tests fail because".into() },
    );
    let collapsed = text(&draw(&app, 80, 10));
    assert!(collapsed.contains("thinking… 11 words · First I look at the parser."), "{collapsed}");
    assert!(!collapsed.contains("Then the tests"));
    app.key(ctrl('t'));
    assert!(text(&draw(&app, 80, 10)).contains("Then the tests fail because"));
    app.key(ctrl('t'));
    delta(&mut app, "Answer.");
    assert_eq!(
        lines_text(&app.take_scrollback()),
        "thought 11 words · First I look at the parser. (ctrl+t shows)"
    );
}
