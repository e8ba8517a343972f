//! Images as message content, end to end: the real `bosun` (`exec
//! --image`, `@shot.png` in a task, and in the conversation on a
//! pseudo-terminal `@shot.png` and a pasted path) against the real mock
//! LLM server (npm `@copilotkit/aimock`) behind a recording proxy
//! ([`Tap`]), so each request body is read as bosun sent it: the image's
//! bytes, base64, in each provider's own form (Chat Completions, Responses,
//! Anthropic Messages, Gemini). Refusals (too large, a wrong format, too
//! many, a local model) send nothing; a session with an image resumes and
//! sends it again.
//!
//! Without aimock every test here FAILS, unless `BOSUN_SKIP_AIMOCK=1` says
//! to skip. Nothing sleeps to synchronise: the proxy keeps a request before
//! it forwards it, and every wait is on output with a deadline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use base64::Engine;
use serde_json::{Value, json};

use crate::interactive::{COLS, ROWS, quit, wait_ready};
use crate::support::*;

/// A real 2×2 PNG (red, green / blue, black).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x02\0\0\0\x02\x08\x02\0\0\0\xfd\xd4\x9as\0\0\0\x10IDATx\x9cc\xf8\xcf\xc0\0D\x0c\x10\n\0\x1f\xee\x03\xfd\x8b_\x14\xd4\0\0\0\0IEND\xaeB`\x82";

/// The start of a JPEG (the JFIF marker): its format is all bosun reads.
const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0\xff\xd9";

const ANSWER: &str = "A red square.";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// aimock answering any prompt that contains `word` with `answer`.
fn mock_answering(pairs: &[(&str, &str)]) -> Option<Aimock> {
    let list = pairs
        .iter()
        .map(|(word, answer)| json!({"match": {"userMessage": word}, "response": {"content": answer}}))
        .collect();
    Aimock::start(&fixtures(list))
}

/// Every part of every user message of `body`, in `api`'s form.
fn user_parts(api: Api, body: &Value) -> Vec<Value> {
    let (messages, role, parts) = match api {
        Api::OpenAiChat | Api::Anthropic => ("messages", "user", "content"),
        Api::OpenAiResponses => ("input", "user", "content"),
        Api::Gemini => ("contents", "user", "parts"),
    };
    body[messages]
        .as_array()
        .unwrap_or_else(|| panic!("no {messages}: {body}"))
        .iter()
        .filter(|m| m["role"] == role)
        .flat_map(|m| m[parts].as_array().cloned().unwrap_or_default())
        .map(|mut part| {
            // Anthropic's prompt-cache mark sits on the last block, whatever it is.
            if let Some(part) = part.as_object_mut() {
                part.remove("cache_control");
            }
            part
        })
        .collect()
}

/// `bytes` as an image part of `media` in `api`'s documented form.
fn image_part(api: Api, media: &str, bytes: &[u8]) -> Value {
    let data = b64(bytes);
    let url = format!("data:{media};base64,{data}");
    match api {
        Api::OpenAiChat => json!({"type": "image_url", "image_url": {"url": url}}),
        Api::OpenAiResponses => json!({"type": "input_image", "image_url": url, "detail": "auto"}),
        Api::Anthropic => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
        }
        Api::Gemini => json!({"inlineData": {"mimeType": media, "data": data}}),
    }
}

fn assert_carries(api: Api, body: &Value, media: &str, bytes: &[u8]) {
    let parts = user_parts(api, body);
    let expected = image_part(api, media, bytes);
    assert!(parts.contains(&expected), "{api:?}: no {expected}\nin {parts:#?}");
}

/// `bosun -C WS exec` on `api` through `tap`, with its key.
fn exec_through(sandbox: &Sandbox, api: Api, tap: &Tap) -> std::process::Command {
    let mut cmd = sandbox.bosun();
    cmd.env(api.key_var(), "test").arg("exec").args(api.args_at(&tap.url));
    cmd
}

fn png_of(size: usize) -> Vec<u8> {
    let mut bytes = PNG.to_vec();
    bytes.resize(size, 0);
    bytes
}

#[test]
fn exec_sends_an_at_image_and_an_image_flag_in_each_providers_own_form() {
    let Some(mock) = mock_answering(&[("what is in", ANSWER)]) else { return };
    let tap = Tap::start(mock.url());
    let apis = [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic, Api::Gemini];
    for (n, api) in apis.into_iter().enumerate() {
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.ws().join("shot.png"), PNG).unwrap();
        // Outside the workspace: the person's own file, named on the command line.
        let photo = sandbox.path("home/photo.jpg");
        std::fs::write(&photo, JPEG).unwrap();
        let mut cmd = exec_through(&sandbox, api, &tap);
        cmd.arg("--image").arg(&photo).arg("what is in @shot.png?");
        let out = run(cmd);
        out.expect_code(0);
        assert_eq!(out.stdout.trim_end(), ANSWER, "{api:?}: {out:#?}");
        assert!(
            out.stderr.contains(&format!("[image: shot.png, {} B]", PNG.len())),
            "{api:?}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains(&format!("[image: {}, {} B]", photo.display(), JPEG.len())),
            "{}",
            out.stderr
        );
        let requests = tap.model_requests();
        assert_eq!(requests.len(), n + 1, "one request per run: {requests:#?}");
        let body = &requests[n].body;
        assert_carries(api, body, "image/png", PNG);
        assert_carries(api, body, "image/jpeg", JPEG);
        let words = user_parts(api, body).iter().any(|p| p.to_string().contains("what is in @shot.png?"));
        assert!(words, "{api:?}: the words go as they were typed: {body}");
    }
}

/// `value` with every object's `cache_control` taken away (Anthropic's
/// prompt-cache mark sits on the last block, whatever it is).
fn without_cache_marks(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| (key.clone(), without_cache_marks(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cache_marks).collect()),
        other => other.clone(),
    }
}

/// Whether `expected` is somewhere in `body`.
fn holds(body: &Value, expected: &Value) -> bool {
    body == expected
        || match body {
            Value::Object(map) => map.values().any(|v| holds(v, expected)),
            Value::Array(items) => items.iter().any(|v| holds(v, expected)),
            _ => false,
        }
}

#[test]
fn an_image_file_a_tool_read_reaches_the_model_in_each_providers_tool_result_form() {
    let answer = "It shows a red square.";
    // The answer by turn alone: Chat Completions puts a tool's images in a
    // user message after the tool message, which aimock's
    // `toolResultContains` (the last message) does not see past.
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": "look at the screenshot", "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "read_file", "arguments": {"path": "shot.png"}}]}}),
        json!({"match": {"turnIndex": 1}, "response": {"content": answer}}),
    ])) else {
        return;
    };
    let tap = Tap::start(mock.url());
    let apis = [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic, Api::Gemini];
    for (n, api) in apis.into_iter().enumerate() {
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.ws().join("shot.png"), PNG).unwrap();
        let mut cmd = exec_through(&sandbox, api, &tap);
        cmd.arg("look at the screenshot");
        let out = run(cmd);
        out.expect_code(0);
        assert_eq!(out.stdout.trim_end(), answer, "{api:?}: {out:#?}");
        let requests = tap.model_requests();
        assert_eq!(requests.len(), 2 * (n + 1), "{api:?}: a call, then the answer: {requests:#?}");
        let second = without_cache_marks(&requests[2 * n + 1].body);
        let expected = image_part(api, "image/png", PNG);
        assert!(holds(&second, &expected), "{api:?}: no {expected} in {second}");
        let said = format!("`shot.png` is a PNG image of {} B:", PNG.len());
        assert!(second.to_string().contains(&said), "{api:?}: the result names it: {second}");
        assert!(!holds(&requests[2 * n].body, &expected), "{api:?}: not before the call");
    }
}

#[test]
fn exec_refuses_an_image_too_large_in_the_wrong_format_or_one_too_many_naming_it_and_sends_nothing() {
    let Some(mock) = mock_answering(&[("look", ANSWER)]) else { return };
    let sandbox = Sandbox::new();
    let ws = sandbox.ws();
    std::fs::write(ws.join("big.png"), png_of(4 * 1024 * 1024)).unwrap();
    std::fs::write(ws.join("fake.png"), "not a picture").unwrap();
    std::fs::write(ws.join("old.bmp"), b"BM\x36\0\0\0\0\0\0\0\x36\0\0\0").unwrap();
    std::fs::write(ws.join("shot.png"), PNG).unwrap();
    let many: Vec<String> =
        (0..21).flat_map(|_| ["--image".to_owned(), ws.join("shot.png").display().to_string()]).collect();
    let cases: [(Vec<String>, &str); 5] = [
        (vec!["look at @big.png".into()], "big.png is 4 MiB, over the 3.75 MiB an image may have"),
        (vec!["look at @fake.png".into()], "fake.png is not a PNG, JPEG, GIF or WebP image"),
        (vec!["--image".into(), ws.join("old.bmp").display().to_string(), "look".into()], "is a BMP image"),
        (vec!["look at @typo.png".into()], "typo.png"),
        ([many, vec!["look".into()]].concat(), "the message has 21 images; at most 20 go in one message"),
    ];
    for (args, expected) in cases {
        let mut cmd = sandbox.exec(Api::OpenAiChat, &mock);
        cmd.args(&args);
        let out = run(cmd);
        out.expect_code(2);
        assert!(out.stderr.contains(expected), "{args:?}: {}", out.stderr);
    }
    assert!(mock.journal().is_empty(), "nothing was sent: {:#?}", mock.journal());
    let listed = run({
        let mut cmd = sandbox.bosun();
        cmd.args(["sessions", "list"]);
        cmd
    });
    assert!(!listed.stdout.contains("look"), "no session was made: {listed:#?}");
}

/// A tiny local model file (programmed, no download), for its `--model`.
fn tiny_model(dir: &Path) -> String {
    let path = dir.join("tiny.gguf");
    bosun_testing::TinyModel::new()
        .context_length(8192)
        .chain(&["\n", "Hello", bosun_testing::gguf::END_OF_TURN])
        .write(&path)
        .unwrap();
    format!("local:{}", path.display())
}

#[test]
fn invariant_21_a_local_model_refuses_an_image_before_anything_runs_and_the_words_come_back_to_the_editor() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.ws().join("shot.png"), PNG).unwrap();
    let spec = tiny_model(sandbox.root.path());
    let mut cmd = sandbox.bosun();
    cmd.args(["exec", "--model", &spec, "--image"]).arg(sandbox.ws().join("shot.png")).arg("what is this?");
    let out = run(cmd);
    out.expect_code(2);
    let said =
        format!("{spec} does not take images (a local model reads text only), so the message was not sent");
    assert!(out.stderr.contains(&said), "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{out:#?}");

    let mut cmd = sandbox.bosun();
    cmd.args(["--model", &spec]);
    let mut pty = Pty::spawn(cmd, ROWS, COLS);
    wait_ready(&mut pty);
    pty.type_line("what is in @shot.png please");
    pty.wait_shown("does not take images (a local model reads text only)");
    // Not sent, not lost: the words are back in the editor (the last
    // prompt line; the first is their echo) to change.
    pty.wait_until("the words back in the editor", |e| {
        let screen = e.contents();
        let input = screen.lines().rev().find(|l| l.starts_with("› "));
        input.is_some_and(|l| l.trim_end() == "› what is in @shot.png please")
    });
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
    assert!(!exit.shown.iter().any(|row| row.contains("Hello")), "the model never answered");
}

#[test]
fn a_session_with_an_image_resumes_and_sends_the_image_again() {
    let Some(mock) = mock_answering(&[("what is in", ANSWER), ("and its colour", "Red.")]) else { return };
    let tap = Tap::start(mock.url());
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.ws().join("shot.png"), PNG).unwrap();
    let mut cmd = exec_through(&sandbox, Api::Anthropic, &tap);
    cmd.arg("what is in @shot.png?");
    let first = run(cmd);
    first.expect_code(0);
    let id = session_from_stderr(&first.stderr);

    let mut cmd = sandbox.bosun();
    cmd.env("ANTHROPIC_API_KEY", "test").args(["resume", "--last"]).args(Api::Anthropic.args_at(&tap.url));
    cmd.arg("and its colour?");
    let second = run(cmd);
    second.expect_code(0);
    assert_eq!(second.stdout.trim_end(), "Red.", "{second:#?}");
    let requests = tap.model_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let first_user = &requests[1].body["messages"][0];
    let expected = image_part(Api::Anthropic, "image/png", PNG);
    assert!(
        first_user["content"].as_array().unwrap().contains(&expected),
        "the stored image goes again, byte for byte: {first_user}"
    );
    // The store keeps the bytes (base64 in its JSON) and shows no bytes.
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "export", &id]);
    let export = run(cmd);
    export.expect_code(0);
    assert!(export.stdout.contains(&b64(PNG)), "{}", export.stdout);
    let mut cmd = sandbox.bosun();
    cmd.args(["sessions", "show", &id]);
    let shown = run(cmd);
    shown.expect_code(0);
    assert!(
        !shown.stdout.contains(&b64(PNG)) && shown.stdout.contains("what is in @shot.png?  [1 image]"),
        "{shown:#?}"
    );
}

#[test]
fn the_conversation_sends_an_at_image_and_a_pasted_path_in_each_providers_form() {
    let Some(mock) = mock_answering(&[("what is in", ANSWER), ("and this one", "A photo.")]) else { return };
    let tap = Tap::start(mock.url());
    for (n, api) in [Api::OpenAiChat, Api::Anthropic, Api::Gemini].into_iter().enumerate() {
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.ws().join("shot.png"), PNG).unwrap();
        // What a terminal inserts when a file is dragged onto it: the path,
        // quoted, as a bracketed paste.
        let photo = sandbox.path("home/my photo.jpg");
        std::fs::write(&photo, JPEG).unwrap();
        let mut cmd = sandbox.bosun();
        cmd.env(api.key_var(), "test").args(api.args_at(&tap.url));
        let mut pty = Pty::spawn(cmd, ROWS, COLS);
        wait_ready(&mut pty);
        pty.type_line("what is in @shot.png please");
        pty.wait_shown(&format!("[image: shot.png, {} B]", PNG.len()));
        pty.wait_shown(ANSWER);
        // Typed while the turn still runs it would steer (with its image
        // too); once it ended it is a message of its own.
        pty.wait_until("the turn to end", |e| !e.contents().contains("esc cancels"));
        pty.keys(format!("\x1b[200~'{}'\x1b[201~", photo.display()).as_bytes());
        pty.type_line(" and this one?");
        pty.wait_shown(&format!("[image: {}, {} B]", photo.display(), JPEG.len()));
        pty.wait_shown("A photo.");
        let exit = quit(pty);
        assert_eq!(exit.status.code(), Some(0), "{api:?}: {}", exit.contents);

        let requests = tap.model_requests();
        assert_eq!(requests.len(), 2 * (n + 1), "{api:?}: {requests:#?}");
        let (first, second) = (&requests[2 * n].body, &requests[2 * n + 1].body);
        assert_carries(api, first, "image/png", PNG);
        assert_carries(api, second, "image/png", PNG);
        assert_carries(api, second, "image/jpeg", JPEG);
        let pasted = format!("'{}' and this one?", photo.display());
        let words = user_parts(api, second).iter().any(|p| p.to_string().contains(&pasted));
        assert!(words, "{api:?}: the path stays in the words: {second}");
    }
}

#[test]
fn steering_typed_while_a_tool_runs_carries_its_image_to_the_next_request() {
    let task = "run the gated command";
    let steer = "also look at @shot.png please";
    let command = "read x < gate.fifo; echo released $x";
    let Some(mock) = Aimock::start(&fixtures(vec![
        json!({"match": {"userMessage": task, "turnIndex": 0}, "response": {
            "toolCalls": [{"name": "shell", "arguments": {"command": command}}]}}),
        json!({"match": {"userMessage": "also look at", "turnIndex": 1}, "response": {"content": ANSWER}}),
    ])) else {
        return;
    };
    let tap = Tap::start(mock.url());
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.ws().join("shot.png"), PNG).unwrap();
    let gate = sandbox.fifo("gate.fifo");
    let api = Api::OpenAiChat;
    let mut cmd = sandbox.bosun();
    cmd.env(api.key_var(), "test").args(api.args_at(&tap.url)).args(["--mode", "autonomous"]);
    let mut pty = Pty::spawn(cmd, ROWS, COLS);
    wait_ready(&mut pty);
    pty.type_line(task);
    pty.wait_on_screen(&format!("shell {command} · "));
    pty.type_line(steer);
    pty.wait_shown(&format!("[image: shot.png, {} B]", PNG.len()));
    pty.wait_on_screen(&format!("queued (steer): {steer}"));
    assert_eq!(tap.model_requests().len(), 1, "nothing reached the model while the tool ran");
    // Release the command (the open blocks until its reader is there).
    let writer = std::thread::spawn(move || std::fs::write(gate, "go\n").unwrap());
    pty.wait_shown(ANSWER);
    writer.join().unwrap();
    let requests = tap.model_requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user", "the steering comes last: {messages:#?}");
    assert!(last["content"].as_array().unwrap().contains(&image_part(api, "image/png", PNG)), "{last}");
    let exit = quit(pty);
    assert_eq!(exit.status.code(), Some(0), "{}", exit.contents);
}
