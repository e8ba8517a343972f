//! Invariant 20 on a real terminal: nothing the model, a tool or a file
//! produced reaches a terminal unsanitised. The real `bosun` binary runs in
//! a pseudo-terminal against the real mock LLM server (npm
//! `@copilotkit/aimock`, installed by `scripts/test` into `test-peers/`),
//! and everything the terminal received is fed to a terminal emulator (the
//! `vt100` crate): the assertions are on what the SCREEN shows, on what the
//! emulator was asked to do besides drawing (titles, clipboard, hyperlinks,
//! bells), and on the raw bytes.
//!
//! The corpus: hostile `shell` commands proposed by the model and denied at
//! the approval prompt (CSI colour and cursor moves, OSC 8, OSC 52, OSC
//! title, `\r` overwrite, backspaces, C1 CSI, bidi override, zero-width
//! space, a multi-line command, an argv); a hostile edit approved, shown in
//! the prompt and in the diff; a hostile answer and reasoning on a terminal
//! stdout (and in `sessions show`), and the same answer byte-exact when
//! stdout is a pipe.
//!
//! Without aimock every test here FAILS, unless `BOSUN_SKIP_AIMOCK=1` says
//! to skip (loudly). Nothing sleeps to synchronise: readers wake waiters on
//! every read, and every wait has a deadline that fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use serde_json::{Value, json};

use crate::support;

use support::*;

/// The emulated screen: tall and wide enough that nothing scrolls or wraps.
const ROWS: u16 = 200;
const COLS: u16 = 400;

/// `bosun -C WS exec --model openai/gpt-test --base-url MOCK/v1 EXTRA TASK`
/// in propose mode.
fn exec(sandbox: &Sandbox, mock: &Aimock, task: &str, extra: &[&str]) -> Command {
    let mut cmd = sandbox.exec(Api::OpenAiChat, mock);
    cmd.args(extra).arg(task);
    cmd
}

// ---------------------------------------------------------------- a pty

/// `bosun` on a fresh pseudo-terminal (stdin and stderr on it; stdout on it
/// too, or piped): support's `Running`, which wakes waiters on every read.
struct Terminal(Running);

impl Terminal {
    fn spawn(cmd: Command, stdout_on_terminal: bool) -> Self {
        Self(Running::spawn_on_terminal(cmd, stdout_on_terminal))
    }

    /// Everything the terminal received so far.
    fn screen(&self) -> Vec<u8> {
        self.0.stderr_bytes()
    }

    /// Waits until the terminal has shown `text` `times` times in all.
    fn wait_for(&mut self, text: &str, times: usize) {
        self.0.wait_for(&format!("{text:?} ×{times} on the terminal"), |r| {
            r.stderr().matches(text).count() >= times
        });
    }

    /// Types `text` and Enter.
    fn type_line(&mut self, text: &str) {
        self.0.type_line(text);
    }

    /// Waits for the exit (the terminal and stdout closed), within the
    /// deadline; the exit code, the terminal's bytes and stdout's.
    fn finish(self) -> (Option<i32>, Vec<u8>, Vec<u8>) {
        let (status, stdout, screen) = self.0.finish_bytes();
        (status.code(), screen, stdout)
    }
}

// ---------------------------------------------------------------- the screen

/// Everything the emulator was asked to do besides drawing.
#[derive(Debug, Default)]
struct Requests(Vec<String>);

impl vt100::Callbacks for Requests {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.0.push("bell".into());
    }
    fn visual_bell(&mut self, _: &mut vt100::Screen) {
        self.0.push("visual bell".into());
    }
    fn resize(&mut self, _: &mut vt100::Screen, request: (u16, u16)) {
        self.0.push(format!("resize {request:?}"));
    }
    fn set_window_icon_name(&mut self, _: &mut vt100::Screen, name: &[u8]) {
        self.0.push(format!("icon name {:?}", String::from_utf8_lossy(name)));
    }
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.0.push(format!("title {:?}", String::from_utf8_lossy(title)));
    }
    fn copy_to_clipboard(&mut self, _: &mut vt100::Screen, ty: &[u8], data: &[u8]) {
        self.0.push(format!("clipboard {ty:?} {data:?}"));
    }
    fn paste_from_clipboard(&mut self, _: &mut vt100::Screen, ty: &[u8]) {
        self.0.push(format!("paste {ty:?}"));
    }
    fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
        // OSC 8 hyperlinks land here.
        self.0.push(format!("osc {params:?}"));
    }
}

/// What the terminal showed, as an emulator sees it.
struct Screen {
    raw: Vec<u8>,
    contents: String,
    requests: Vec<String>,
}

impl Screen {
    fn of(raw: Vec<u8>) -> Self {
        let mut parser = vt100::Parser::new_with_callbacks(ROWS, COLS, 0, Requests::default());
        parser.process(&raw);
        let contents = parser.screen().contents();
        let requests = std::mem::take(&mut parser.callbacks_mut().0);
        Self { raw, contents, requests }
    }

    fn shows(&self, text: &str) -> bool {
        self.contents.contains(text)
    }

    /// The screen's lines, trailing blanks trimmed.
    fn lines(&self) -> Vec<&str> {
        self.contents.lines().map(str::trim_end).collect()
    }

    /// Nothing but drawing: no title, icon name, clipboard, hyperlink, bell
    /// or resize, and no OSC sequence at all in the raw bytes.
    fn assert_only_drawing(&self, case: &str) {
        assert!(
            self.requests.is_empty(),
            "{case}: the terminal was asked for {:?}\n{}",
            self.requests,
            self.contents
        );
        assert!(!contains(&self.raw, b"\x1b]"), "{case}: an OSC sequence reached the terminal");
        assert!(!contains(&self.raw, b"\x1b]52"), "{case}: a clipboard write reached the terminal");
    }

    /// The only escape sequences in the raw bytes are bosun's own colours
    /// (`ESC [ n m`, n in 0 1 2 31 32 36), and no C1, bidi or invisible
    /// character arrived as itself.
    fn assert_only_our_colours(&self, case: &str) {
        let mut rest = &self.raw[..];
        while let Some(at) = rest.iter().position(|&b| b == 0x1b) {
            rest = &rest[at + 1..];
            let end = rest.iter().position(|&b| b == b'm').unwrap_or(rest.len());
            let sequence = &rest[..end];
            let ours = [&b"[0"[..], b"[1", b"[2", b"[31", b"[32", b"[36"].contains(&sequence);
            assert!(ours, "{case}: a foreign escape sequence ESC {:?}", String::from_utf8_lossy(sequence));
        }
        let text = String::from_utf8_lossy(&self.raw);
        for c in text.chars() {
            let hostile = matches!(c, '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{061c}' | '\u{2060}' | '\u{feff}' | '\u{00ad}');
            assert!(!hostile, "{case}: {c:?} reached the terminal as itself");
            assert!(!matches!(c, '\x07' | '\x08' | '\x7f'), "{case}: {c:?} reached the terminal");
        }
    }
}

// ---------------------------------------------------------------- the corpus

/// A hostile command and what the screen must show for it.
struct Case {
    name: &'static str,
    command: Value,
    /// Each must appear on the screen (escaped forms and the real text).
    shows: &'static [&'static str],
}

fn corpus() -> Vec<Case> {
    vec![
        Case {
            name: "csi-colour-and-cursor",
            command: json!("echo safe\x1b[2K\x1b[1A\x1b[31m; rm -rf ~"),
            shows: &[r"$ echo safe\x1b[2K\x1b[1A\x1b[31m; rm -rf ~"],
        },
        Case {
            name: "osc8-hyperlink",
            command: json!("\x1b]8;;https://evil.example/\x1b\\ls -la\x1b]8;;\x1b\\; rm -rf ~"),
            shows: &[r"$ \x1b]8;;https://evil.example/\x1b\ls -la\x1b]8;;\x1b\; rm -rf ~"],
        },
        Case {
            name: "osc52-clipboard",
            command: json!("echo hi\x1b]52;c;cm0gLXJmIH4=\x07; rm -rf ~"),
            shows: &[r"$ echo hi\x1b]52;c;cm0gLXJmIH4=\x07; rm -rf ~"],
        },
        Case {
            name: "osc-title",
            command: json!("\x1b]0;pwned\x07\x1b]2;pwned\x1b\\rm -rf ~"),
            shows: &[r"$ \x1b]0;pwned\x07\x1b]2;pwned\x1b\rm -rf ~"],
        },
        Case {
            name: "carriage-return-overwrite",
            command: json!("rm -rf ~\rls -la  "),
            shows: &[r"$ rm -rf ~\rls -la", "rm -rf ~"],
        },
        Case {
            name: "backspaces",
            command: json!("rm -rf ~\x08\x08\x08\x08\x08\x08\x08\x08ls -la  "),
            shows: &[r"$ rm -rf ~\x08\x08\x08\x08\x08\x08\x08\x08ls -la"],
        },
        Case {
            name: "c1-csi",
            command: json!("\u{9b}2J\u{9b}1Arm -rf ~"),
            shows: &[r"$ \u{9b}2J\u{9b}1Arm -rf ~"],
        },
        Case {
            name: "bidi-override",
            command: json!("ls \u{202e}~ fr- mr"),
            shows: &["$ ls ⟪U+202E⟫~ fr- mr"],
        },
        Case {
            name: "zero-width-space", command: json!("rm\u{200b} -rf ~"), shows: &["$ rm⟪U+200B⟫ -rf ~"]
        },
        Case {
            name: "multi-line",
            command: json!("echo hello\n\x1b[1A\x1b[2Krm -rf ~\necho done\n"),
            shows: &["$ echo hello", r"> \x1b[1A\x1b[2Krm -rf ~", "> echo done"],
        },
        Case {
            name: "argv",
            command: json!(["rm", "-rf", "~", "a\x1b[2K\rb", "it's"]),
            shows: &[r"$ rm -rf '~' 'a\x1b[2K\rb' 'it'\''s'"],
        },
    ]
}

/// The end of the approval prompt (`approve?` is in bold before it).
const PROMPT: &str = "[y/a/n]: ";

const SHELL_GRANT: &str = "[a] approve this exact command for the rest of the session";

#[test]
fn invariant_20_hostile_commands_show_visibly_at_the_approval_prompt() {
    let cases = corpus();
    let mut list = Vec::new();
    for case in &cases {
        let task = format!("hostile case {} please", case.name);
        list.push(json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": case.command}}]}}));
        list.push(json!({"match": {"userMessage": task, "turnIndex": 1}, "response": {
            "content": format!("Not running {}.", case.name)}}));
    }
    let Some(mock) = Aimock::start(&fixtures(list)) else { return };
    for case in &cases {
        let sandbox = task_sandbox();
        let task = format!("hostile case {} please", case.name);
        let mut terminal = Terminal::spawn(exec(&sandbox, &mock, &task, &[]), false);
        terminal.wait_for(PROMPT, 1);
        // What the person sees when asked.
        let asked = Screen::of(terminal.screen());
        for text in case.shows {
            assert!(
                asked.shows(text),
                "{}: the prompt does not show {text:?}:\n{}",
                case.name,
                asked.contents
            );
        }
        assert!(asked.shows(SHELL_GRANT), "{}: [a] does not say its scope:\n{}", case.name, asked.contents);
        asked.assert_only_drawing(case.name);
        // Shown with --nocapture: what the prompt put on the screen.
        for line in asked.lines().iter().filter(|l| l.starts_with("$ ") || l.starts_with("> ")) {
            println!("{:<26} {line}", case.name);
        }
        terminal.type_line("n");
        terminal.wait_for("reason (optional, one line): ", 1);
        terminal.type_line("");
        let (code, raw, stdout) = terminal.finish();
        assert_eq!(code, Some(0), "{}: {}", case.name, String::from_utf8_lossy(&raw));
        assert_eq!(String::from_utf8_lossy(&stdout), format!("Not running {}.\n", case.name));
        // The whole run, after the answer: still all visible, still nothing
        // but drawing and our colours.
        let screen = Screen::of(raw);
        for text in case.shows {
            assert!(
                screen.shows(text),
                "{}: the screen does not show {text:?}:\n{}",
                case.name,
                screen.contents
            );
        }
        assert!(screen.shows("denied: denied by the user"), "{}:\n{}", case.name, screen.contents);
        screen.assert_only_drawing(case.name);
        screen.assert_only_our_colours(case.name);
    }
}

#[test]
fn invariant_20_a_multi_line_command_shows_every_line_on_its_own_line() {
    let command = "echo one\nrm -rf ~ \x1b[8m hidden\necho three";
    let task = "a multi-line command";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": command}}]}}),
        json!({"match": {"userMessage": task, "turnIndex": 1}, "response": {"content": "ok"}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let mut terminal = Terminal::spawn(exec(&sandbox, &mock, task, &[]), false);
    terminal.wait_for(PROMPT, 1);
    let screen = Screen::of(terminal.screen());
    let lines = screen.lines();
    let at = lines.iter().position(|l| *l == "$ echo one").unwrap_or_else(|| panic!("{}", screen.contents));
    assert_eq!(lines[at + 1..at + 3], [r"> rm -rf ~ \x1b[8m hidden", "> echo three"], "{}", screen.contents);
    // The tool line shows the first line and says more follow.
    assert!(lines.iter().any(|l| l.ends_with("shell echo one …")), "{}", screen.contents);
    terminal.type_line("n");
    terminal.wait_for("reason (optional, one line): ", 1);
    terminal.type_line("");
    let (code, raw, _) = terminal.finish();
    assert_eq!(code, Some(0));
    Screen::of(raw).assert_only_our_colours("multi-line");
}

#[test]
fn invariant_20_a_hostile_edit_shows_visibly_in_the_prompt_and_the_diff_and_is_written_exactly() {
    let new_text = "wor\x1b]0;pwned\x07ld\x1b[2J\r";
    let task = "a hostile edit";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "read_file", "arguments": {"path": "greet.sh"}}]}}),
        json!({"match": {"userMessage": task, "turnIndex": 1}, "response": {
            "toolCalls": [{"name": "edit_file",
                "arguments": {"path": "greet.sh", "old_text": "wrold", "new_text": new_text}}]}}),
        json!({"match": {"userMessage": task, "turnIndex": 2}, "response": {"content": "Edited."}}),
    ])) else {
        return;
    };
    let sandbox = task_sandbox();
    let mut terminal = Terminal::spawn(exec(&sandbox, &mock, task, &[]), false);
    terminal.wait_for(PROMPT, 1);
    let asked = Screen::of(terminal.screen());
    assert!(asked.shows(r"+ wor\x1b]0;pwned\x07ld\x1b[2J\r"), "{}", asked.contents);
    assert!(asked.shows("- wrold"), "{}", asked.contents);
    assert!(asked.shows("[a] approve all later `edit_file` calls in this session"), "{}", asked.contents);
    asked.assert_only_drawing("edit prompt");
    asked.assert_only_our_colours("edit prompt");
    terminal.type_line("y");
    let (code, raw, stdout) = terminal.finish();
    assert_eq!(code, Some(0), "{}", String::from_utf8_lossy(&raw));
    assert_eq!(String::from_utf8_lossy(&stdout), "Edited.\n");
    let screen = Screen::of(raw);
    // The diff line, escaped; the screen was not cleared (the prompt is
    // still there) and the title not set.
    assert!(screen.shows(r#"+echo "hello wor\x1b]0;pwned\x07ld\x1b[2J\r"#), "{}", screen.contents);
    assert!(screen.shows("wants to run:"), "{}", screen.contents);
    screen.assert_only_drawing("edit diff");
    // The file holds exactly what the model wrote.
    let written = sandbox.greet();
    assert_eq!(written, format!("echo \"hello {new_text}\"\n"));
}

const HOSTILE_ANSWER: &str =
    "Title \x1b]0;pwned\x07 cleared \x1b[2J red \x1b[31m bidi \u{202e}dlrow\u{202c} end";
const HOSTILE_REASONING: &str = "thinking \x1b]2;pwned\x1b\\ \x1b[1A\x1b[2K done";

fn answer_fixtures(task: &str) -> Vec<Value> {
    // Small chunks: escape sequences split across streamed deltas.
    vec![json!({"match": {"userMessage": task}, "chunkSize": 3, "response": {
        "content": HOSTILE_ANSWER, "reasoning": HOSTILE_REASONING}})]
}

#[test]
fn invariant_20_a_hostile_answer_shows_visibly_on_a_terminal_stdout() {
    let task = "answer on a terminal";
    let Some(mock) = Aimock::start(&fixtures(answer_fixtures(task))) else { return };
    let sandbox = task_sandbox();
    let file = sandbox.path("answer.txt");
    let terminal = Terminal::spawn(exec(&sandbox, &mock, task, &["-o", file.to_str().unwrap()]), true);
    let (code, raw, _) = terminal.finish();
    assert_eq!(code, Some(0), "{}", String::from_utf8_lossy(&raw));
    let screen = Screen::of(raw);
    assert!(
        screen.shows(r"Title \x1b]0;pwned\x07 cleared \x1b[2J red \x1b[31m bidi ⟪U+202E⟫dlrow⟪U+202C⟫ end"),
        "{}",
        screen.contents
    );
    assert!(screen.shows(r"thinking \x1b]2;pwned\x1b\ \x1b[1A\x1b[2K done"), "{}", screen.contents);
    screen.assert_only_drawing("answer");
    screen.assert_only_our_colours("answer");
    // `-o` is a file: exact.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), HOSTILE_ANSWER);

    // `sessions show` on a terminal shows the stored answer visibly too.
    let id = screen
        .lines()
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("session "))
        .expect("a session line")
        .to_owned();
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "show", &id]);
    let (code, raw, _) = Terminal::spawn(cmd, true).finish();
    assert_eq!(code, Some(0), "{}", String::from_utf8_lossy(&raw));
    let shown = Screen::of(raw);
    assert!(shown.shows(r"assistant  Title \x1b]0;pwned\x07 cleared \x1b[2J red"), "{}", shown.contents);
    shown.assert_only_drawing("sessions show");
    shown.assert_only_our_colours("sessions show");
}

#[test]
fn invariant_20_a_piped_answer_stays_byte_exact() {
    let task = "answer into a pipe";
    let Some(mock) = Aimock::start(&fixtures(answer_fixtures(task))) else { return };
    let sandbox = task_sandbox();
    let file = sandbox.path("answer.txt");
    // stderr is still a terminal; stdout is a pipe.
    let terminal = Terminal::spawn(exec(&sandbox, &mock, task, &["-o", file.to_str().unwrap()]), false);
    let (code, raw, stdout) = terminal.finish();
    assert_eq!(code, Some(0), "{}", String::from_utf8_lossy(&raw));
    assert_eq!(String::from_utf8(stdout).unwrap(), format!("{HOSTILE_ANSWER}\n"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), HOSTILE_ANSWER);
    // The reasoning went to the terminal: visible there.
    let screen = Screen::of(raw);
    assert!(screen.shows(r"thinking \x1b]2;pwned\x1b\ \x1b[1A\x1b[2K done"), "{}", screen.contents);
    screen.assert_only_drawing("piped answer");
    screen.assert_only_our_colours("piped answer");
}
