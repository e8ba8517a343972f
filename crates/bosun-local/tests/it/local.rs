//! bosun-local against a real GGUF run in-process: SmolLM2-135M-Instruct
//! Q4_1, put in `.bosun-cache/models/` by `scripts/fetch-test-models`. Without
//! the file every test here fails, unless `BOSUN_SKIP_MODELS=1` says to skip
//! (and `BOSUN_REQUIRE_PEERS`, which `scripts/test` sets, is not set).
//!
//! Greedy decoding throughout, so answers are reproducible. The tests run one
//! at a time: they measure time, and two models on two cores would skew it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bosun_core::{
    CallId, ContentPart, Event, Message, Model, ModelEvent, ModelRequest, ResponsePart, Session, StopReason,
    ToolCategory, ToolDefinition, TurnErrorKind, TurnOptions, Usage,
};
use bosun_local::{LocalModel, LocalOptions};
use bosun_testing::FnTool;
use futures_util::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{Recorder, SERIAL, options};

const SMOLLM2: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const QWEN: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
/// The embedded default; fetched by `scripts/fetch-test-models --with-1.5b`
/// (`scripts/test --full`).
const QWEN_15B: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

fn model_file(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.bosun-cache/models").join(name);
    if path.is_file() {
        return Some(path);
    }
    let fetch =
        if name == QWEN_15B { "scripts/fetch-test-models --with-1.5b" } else { "scripts/fetch-test-models" };
    let missing = format!("{name} is missing at {}: run {fetch}", path.display());
    // scripts/test fetched them: there, a missing model is a failure however
    // the variables are set.
    assert!(std::env::var_os("BOSUN_REQUIRE_PEERS").is_none(), "{missing}");
    bosun_testing::skip_or_fail("BOSUN_SKIP_MODELS", &missing);
    None
}

fn load(name: &str) -> Option<LocalModel> {
    let path = model_file(name)?;
    Some(LocalModel::load(&path, LocalOptions::default().context_cap(2048)).unwrap())
}

fn report(label: &str, model: &LocalModel) {
    let s = model.last_generation().unwrap();
    let per_second = |n: usize, t: Duration| n as f64 / t.as_secs_f64().max(1e-9);
    eprintln!(
        "{label}: prompt {} tokens ({} reused, {} decoded in {:.1} ms, {:.0} tok/s); \
         generated {} tokens in {:.1} ms ({:.0} tok/s)",
        s.prompt_tokens,
        s.reused_tokens,
        s.prompt_tokens - s.reused_tokens,
        s.prompt_time.as_secs_f64() * 1e3,
        per_second(s.prompt_tokens - s.reused_tokens, s.prompt_time),
        s.generated_tokens,
        s.generation_time.as_secs_f64() * 1e3,
        per_second(s.generated_tokens, s.generation_time),
    );
}

#[tokio::test]
async fn a_greedy_answer_streams_exactly_its_final_text_and_repeats() {
    let _serial = SERIAL.lock().await;
    let Some(model) = load(SMOLLM2) else { return };
    let model = std::sync::Arc::new(model);
    let mut answers = Vec::new();
    for run in 1..=2 {
        let mut session = Session::builder_shared(model.clone()).options(options(48)).build().await.unwrap();
        let mut sink = Recorder::default();
        let outcome = session.run("What is the capital of France?", &mut sink).await.unwrap();
        report(&format!("run {run}"), &model);
        eprintln!("run {run} answer: {:?}", outcome.answer);
        assert!(!outcome.answer.trim().is_empty());
        assert_eq!(sink.text(), outcome.answer, "the deltas must add up to the final text");
        answers.push(outcome.answer);
    }
    assert_eq!(answers[0], answers[1], "greedy decoding must repeat itself");
}

#[tokio::test]
async fn cancelling_on_the_first_delta_ends_the_turn_and_the_generation() {
    let _serial = SERIAL.lock().await;
    let Some(model) = load(SMOLLM2) else { return };
    let model = std::sync::Arc::new(model);
    let mut session = Session::builder_shared(model.clone()).options(options(400)).build().await.unwrap();
    let cancel = CancellationToken::new();
    let mut sink = Recorder { cancel_on_text: Some(cancel.clone()), ..Recorder::default() };
    let started = Instant::now();
    let error = session
        .run_with("Write a long story about a lighthouse keeper.", TurnOptions::cancel_on(cancel), &mut sink)
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(error.kind, TurnErrorKind::Cancelled), "{error:?}");
    assert!(!model.is_generating(), "the generation must have stopped when the turn returns");
    let stats = model.last_generation().unwrap();
    eprintln!("cancelled after {} generated tokens, turn took {took:?}", stats.generated_tokens);
    assert!(stats.generated_tokens < 20, "generated {} tokens after cancelling", stats.generated_tokens);
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[tokio::test]
async fn dropping_the_stream_stops_the_generation_before_returning() {
    let _serial = SERIAL.lock().await;
    let Some(model) = load(SMOLLM2) else { return };
    let messages = [bosun_core::Message::user("Write a long story about a lighthouse keeper.")];
    let request = ModelRequest::new(None, &messages[..], &[][..], options(400));
    let mut stream = model.stream(request, CancellationToken::new());
    while let Some(event) = stream.next().await {
        if matches!(event, Ok(ModelEvent::TextDelta(_))) {
            break;
        }
    }
    assert!(model.is_generating());
    drop(stream);
    assert!(!model.is_generating(), "the drop must wait for the generation to stop");
    let generated = model.last_generation().unwrap().generated_tokens;
    assert!(generated < 20, "generated {generated} tokens");
}

#[tokio::test]
async fn the_second_turn_reuses_the_kv_cache() {
    let _serial = SERIAL.lock().await;
    let Some(model) = load(SMOLLM2) else { return };
    let model = std::sync::Arc::new(model);
    let mut session = Session::builder_shared(model.clone()).options(options(32)).build().await.unwrap();
    session.run("What is the capital of France?", &mut Recorder::default()).await.unwrap();
    report("turn 1", &model);
    let first = model.last_generation().unwrap();
    session.run("And the capital of Germany?", &mut Recorder::default()).await.unwrap();
    report("turn 2", &model);
    let (reused, total) = model.prompt_tokens_reused();
    let second = model.last_generation().unwrap();
    eprintln!(
        "turn 2 reused {reused} of {total} prompt tokens; prompt time {:?} (turn 1: {:?} for {} tokens)",
        second.prompt_time, first.prompt_time, first.prompt_tokens
    );
    assert!(reused * 10 >= total * 6, "reused only {reused} of {total} prompt tokens");
    assert!(reused >= first.prompt_tokens, "turn 1's prompt should be reused whole");
}

#[tokio::test]
async fn a_model_offered_tools_gives_a_valid_call_or_text() {
    let _serial = SERIAL.lock().await;
    let Some(model) = load(SMOLLM2) else { return };
    // SmolLM2-135M's template renders no tools, so the system prompt
    // describes the call format itself.
    let system = "You can call one tool. To call it, answer exactly \
                  <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"<file>\"}}</tool_call>";
    let tools = [ToolDefinition::new(
        "read_file",
        "Reads a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )];
    for prompt in ["Read the file src/main.rs.", "What is 2 + 2?", "<tool_call>"] {
        let messages = [bosun_core::Message::user(prompt)];
        let request = ModelRequest::new(Some(system), &messages[..], &tools[..], options(64));
        let events: Vec<_> = model.stream(request, CancellationToken::new()).collect().await;
        let Some(Ok(ModelEvent::Done(response))) = events.last() else {
            panic!("no final response for {prompt:?}: {events:?}")
        };
        eprintln!("{prompt:?} -> {:?}", response.content);
        let stats = model.last_generation().unwrap();
        assert!(stats.constrained, "llama.cpp refused the tool grammar, or it refused a token");
        for part in &response.content {
            if let ResponsePart::ToolCall { name, arguments, .. } = part {
                assert_eq!(name, "read_file");
                assert!(arguments["path"].is_string(), "{arguments}");
            }
        }
    }
}

/// Qwen2.5-Coder-0.5B, the smallest agent model (491 MB, fetched by
/// scripts/fetch-test-models): a whole agent turn, the call and then the
/// answer from its result, as in the README's main command.
#[tokio::test]
async fn qwen_reads_a_file_and_answers_from_it() {
    reads_a_file_and_answers_from_it(QWEN).await;
}

/// The same on Qwen2.5-Coder-1.5B, the embedded default (1.1 GB; the full
/// tier).
#[tokio::test]
async fn qwen_1_5b_reads_a_file_and_answers_from_it() {
    reads_a_file_and_answers_from_it(QWEN_15B).await;
}

async fn reads_a_file_and_answers_from_it(file: &str) {
    let _serial = SERIAL.lock().await;
    let Some(model) = load(file) else { return };
    let model = std::sync::Arc::new(model);
    let script = "#!/usr/bin/env bash\necho \"hello from the sample workspace\"\n";
    let tool = FnTool::text("read_file", ToolCategory::Read, move |_| {
        script.lines().enumerate().map(|(n, line)| format!("{:>6}\t{line}\n", n + 1)).collect::<String>()
    })
    .schema(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}));
    let mut session = Session::builder_shared(model.clone())
        .system_prompt(
            "You are bosun, a helpful coding assistant. You cannot see the user's files: call read_file to \
             read one. When you have what you need, answer briefly.",
        )
        .tool(tool)
        .options(options(256))
        .build()
        .await
        .unwrap();
    let mut sink = Recorder::default();
    let prompt =
        "Use the read_file tool to read greet.sh, then tell me in one sentence what the script prints.";
    let outcome = session.run(prompt, &mut sink).await.unwrap();
    report(file, &model);
    for message in session.history() {
        eprintln!("  {message:?}");
    }
    let called =
        sink.events.iter().any(|e| matches!(e, Event::ToolCallProposed { name, .. } if name == "read_file"));
    assert!(called, "no read_file call: {:?}", sink.events);
    assert!(outcome.answer.contains("hello from the sample workspace"), "{:?}", outcome.answer);
}

/// Prompt and generation speed on a prompt of about 1,000 tokens, for the
/// record (`cargo test --release -p bosun-local --test it -- --ignored
/// --nocapture local::speed`); the Qwen part needs its file.
#[tokio::test]
#[ignore = "a measurement, not a check"]
async fn speed() {
    let _serial = SERIAL.lock().await;
    for name in [SMOLLM2, QWEN] {
        let Some(model) = load(name) else { continue };
        let text = "The quick brown fox jumps over the lazy dog near the river bank. ".repeat(70);
        let messages = [bosun_core::Message::user(format!("{text}\nSummarize the text above."))];
        for run in ["cold", "again"] {
            let request = ModelRequest::new(None, &messages[..], &[][..], options(128));
            let events: Vec<_> = model.stream(request, CancellationToken::new()).collect().await;
            assert!(matches!(events.last(), Some(Ok(ModelEvent::Done(_)))));
            report(&format!("{name} {run} ({} threads)", model.threads()), &model);
        }
    }
}

/// A conversation mid-task: a system prompt, the ask, a call of `read_file`
/// and its result, an answer and a follow-up; `results` are more read
/// results, one round each, before the follow-up.
fn conversation(results: &[&str]) -> Vec<Message> {
    let mut messages = vec![Message::user("Read greet.sh and tell me what it prints.")];
    let script = "#!/usr/bin/env bash\necho \"hello from the sample workspace\"\n";
    for (n, text) in std::iter::once(script).chain(results.iter().copied()).enumerate() {
        let id = CallId::new_v7();
        let path = if n == 0 { "greet.sh".to_owned() } else { format!("src/part{n}.rs") };
        messages.push(Message::Assistant {
            content: vec![
                ContentPart::text("I will read the file."),
                ContentPart::ToolCall {
                    id,
                    name: "read_file".into(),
                    arguments: json!({"path": path}),
                    provider_data: None,
                },
            ],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        });
        messages.push(Message::tool_result(id, "read_file", text, false));
    }
    messages.push(Message::Assistant {
        content: vec![ContentPart::text("It prints \"hello from the sample workspace\".")],
        usage: Usage::default(),
        stop_reason: StopReason::Stop,
    });
    messages.push(Message::user("Now run it with the shell tool."));
    messages
}

fn agent_tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition::new(
            "read_file",
            "Reads a file of the workspace, with line numbers.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
        ToolDefinition::new(
            "shell",
            "Runs a shell command in the workspace and returns its output.",
            json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        ),
    ]
}

/// Streams `request` to its end; returns its final response.
async fn respond(model: &LocalModel, request: ModelRequest<'_>) -> bosun_core::ModelResponse {
    let events: Vec<_> = model.stream(request, CancellationToken::new()).collect().await;
    match events.into_iter().last() {
        Some(Ok(ModelEvent::Done(response))) => response,
        other => panic!("no final response: {other:?}"),
    }
}

#[tokio::test]
async fn a_count_is_the_prompt_its_response_reports() {
    let _serial = SERIAL.lock().await;
    const SYSTEM: &str = "You are bosun, a coding assistant. Call a tool when you need one.";
    for name in [QWEN, SMOLLM2] {
        let Some(model) = load(name) else { continue };
        let (messages, tools) = (conversation(&[]), agent_tools());
        let request = ModelRequest::new(Some(SYSTEM), &messages[..], &tools[..], options(8));
        let count = model.count_tokens(&request).await.expect("a local model counts");
        let first = respond(&model, request.clone()).await;
        eprintln!("{name}: counted {count}; response usage {:?}", first.usage);
        assert_eq!(count, first.usage.input + first.usage.cache_read, "{name}: cold");
        // Again: most of the prompt now comes from the KV cache.
        let again = respond(&model, request.clone()).await;
        assert!(again.usage.cache_read > 0, "{name}: the KV cache was not reused: {:?}", again.usage);
        assert_eq!(count, again.usage.input + again.usage.cache_read, "{name}: from the KV cache");
        assert_eq!(model.count_tokens(&request).await, Some(count), "{name}: a count repeats");
        // The count sees every part of the request.
        let shorter =
            ModelRequest::new(Some(SYSTEM), &messages[..messages.len() - 2], &tools[..], options(8));
        assert!(model.count_tokens(&shorter).await.unwrap() < count, "{name}: fewer messages");
        if name == QWEN {
            // Qwen's template writes the tool definitions into the prompt.
            let bare = ModelRequest::new(Some(SYSTEM), &messages[..], &[][..], options(8));
            let without = model.count_tokens(&bare).await.unwrap();
            assert!(without + 50 < count, "{name}: the tools are in the prompt ({without} vs {count})");
            let response = respond(&model, bare).await;
            assert_eq!(without, response.usage.input + response.usage.cache_read, "{name}: no tools");
        }
    }
}

#[tokio::test]
async fn a_long_request_of_source_files_is_counted_exactly() {
    let _serial = SERIAL.lock().await;
    let Some(path) = model_file(QWEN) else { return };
    let model = LocalModel::load(&path, LocalOptions::default().context_cap(4096)).unwrap();
    let sources = [
        include_str!("../../src/engine/prompt.rs"),
        include_str!("../../src/engine/count.rs"),
        include_str!("../../src/engine/stream.rs"),
        include_str!("../../src/engine/hints.rs"),
        include_str!("../../src/engine/host.rs"),
    ];
    let (messages, tools) = (conversation(&sources), agent_tools());
    let request = ModelRequest::new(Some("You are bosun."), &messages[..], &tools[..], options(4));
    let count = model.count_tokens(&request).await.unwrap();
    let started = Instant::now();
    let response = respond(&model, request).await;
    eprintln!("counted {count}; response usage {:?} in {:?}", response.usage, started.elapsed());
    assert!(count > 2_500, "only {count} tokens: not a long request");
    assert_eq!(count, response.usage.input + response.usage.cache_read);
}

#[tokio::test]
async fn counting_while_a_generation_runs_neither_waits_for_it_nor_changes_it() {
    let _serial = SERIAL.lock().await;
    let Some(model) = load(SMOLLM2) else { return };
    let story = [Message::user("Write a long story about a lighthouse keeper.")];
    let generate = || ModelRequest::new(None, &story[..], &[][..], options(96));
    let alone = respond(&model, generate()).await;
    let (other, tools) = (conversation(&[]), agent_tools());
    let counted = ModelRequest::new(None, &other[..], &tools[..], options(8));

    let mut stream = model.stream(generate(), CancellationToken::new());
    let mut text = String::new();
    let mut count = None;
    let mut generating_after_count = false;
    let mut last = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            ModelEvent::TextDelta(delta) => {
                text.push_str(&delta);
                if count.is_none() {
                    count = model.count_tokens(&counted).await;
                    generating_after_count = model.is_generating();
                }
            }
            ModelEvent::Done(response) => last = Some(response),
            _ => {}
        }
    }
    drop(stream);
    let during = last.expect("the generation finished");
    assert!(generating_after_count, "the count waited for the generation to end");
    assert_eq!(during.text(), alone.text(), "the count changed the generation");
    assert_eq!(text, alone.text());
    let count = count.expect("counted during the generation");
    let response = respond(&model, counted).await;
    assert_eq!(count, response.usage.input + response.usage.cache_read);
}
