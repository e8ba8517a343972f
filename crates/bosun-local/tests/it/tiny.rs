//! bosun-local against tiny GGUF models the tests build themselves
//! (`bosun_testing::TinyModel`): random weights, a few hundred tokens of
//! vocabulary, a chat template, and answers programmed as a bigram table, so
//! loading, templating, streaming, cancellation, KV reuse, reasoning and
//! grammar-constrained tool calls are checked exactly, in every run, with no
//! download. Each test writes its own file into a temporary directory.
//!
//! The programmed answers hang off the prompt's last token: the generation
//! prompt of the Qwen2.5 template ends with a newline (the byte token
//! `<0x0A>`), so `.after("\n", "Hello")` starts the answer. Decoding is
//! greedy (no temperature), so the answers are exact.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_core::{
    ContentPart, Event, GenerationOptions, Message, Model, ModelError, ModelEvent, ModelRequest,
    ModelResponse, OutputSchema, ResponsePart, Session, StopReason, Support, ToolChoice, ToolDefinition,
    Usage,
};
use bosun_local::{ArgumentHints, ArgumentValues, FileTexts, LocalError, LocalModel, LocalOptions};
use bosun_testing::gguf::{END_OF_TURN, QWEN25_TEMPLATE};
use bosun_testing::{FnTool, TinyModel};
use futures_util::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{Recorder, SERIAL, options};

/// ChatML without tools whose generation prompt ends with `<|im_start|>`
/// (not a newline), so a model programmed after that token answers
/// differently under it.
const BARE_CHATML: &str = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n\
                           {% endfor %}{% if add_generation_prompt %}<|im_start|>{% endif %}";

/// Answers "Hello from tiny" after a newline and "Bye" after `<|im_start|>`.
fn greeter() -> TinyModel {
    let hello = ["\n", "Hello", " from", " tiny", END_OF_TURN];
    let bye = ["<|im_start|>", "Bye", END_OF_TURN];
    TinyModel::new().chain(&hello).chain(&bye)
}

/// A built model file, removed with its directory on drop.
struct File {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn write(model: &TinyModel) -> File {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.gguf");
    model.write(&path).unwrap();
    File { _dir: dir, path }
}

fn load_with(path: &Path, options: LocalOptions) -> LocalModel {
    LocalModel::load(path, options.threads(1)).unwrap()
}

fn load(file: &File) -> LocalModel {
    load_with(&file.path, LocalOptions::default())
}

/// Streams one request to its end; returns every item.
async fn stream(
    model: &LocalModel,
    messages: &[Message],
    tools: &[ToolDefinition],
) -> Vec<Result<ModelEvent, ModelError>> {
    let request = ModelRequest::new(None, messages, tools, options(64));
    model.stream(request, CancellationToken::new()).collect().await
}

/// The final response of a stream that must have ended with one.
fn done(events: &[Result<ModelEvent, ModelError>]) -> &ModelResponse {
    match events.last() {
        Some(Ok(ModelEvent::Done(response))) => response,
        other => panic!("the stream did not end with a response: {other:?} in {events:?}"),
    }
}

fn deltas(events: &[Result<ModelEvent, ModelError>]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Ok(ModelEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

async fn answer(model: &LocalModel, prompt: &str) -> String {
    done(&stream(model, &[Message::user(prompt)], &[]).await).text()
}

#[test]
fn a_built_file_loads_with_the_context_and_capabilities_it_declares() {
    let _serial = SERIAL.blocking_lock();
    let qwen = write(&greeter().context_length(768));
    let model = load(&qwen);
    assert_eq!(model.context_size(), 768, "the training context of the file");
    assert_eq!(model.capabilities().tools, Support::Yes, "Qwen2.5's template renders tools and calls");
    assert_eq!(model.capabilities().system_role, Support::Yes);
    assert_eq!(model.capabilities().images, Support::No, "no vision projector is loaded");
    assert_eq!(load_with(&qwen.path, LocalOptions::default().context_cap(256)).context_size(), 256);
    assert_eq!(load_with(&qwen.path, LocalOptions::default().context_cap(8192)).context_size(), 768);

    let bare = write(&greeter().chat_template(BARE_CHATML));
    assert_eq!(load(&bare).capabilities().tools, Support::No, "a template without tools");
}

#[tokio::test]
async fn a_file_without_a_chat_template_needs_one_passed_in() {
    let _serial = SERIAL.lock().await;
    let file = write(&greeter().without_chat_template());
    match LocalModel::load(&file.path, LocalOptions::default().threads(1)) {
        Err(LocalError::NoChatTemplate(path)) => assert_eq!(path, file.path),
        other => panic!("expected NoChatTemplate, got {other:?}"),
    }
    let model = load_with(&file.path, LocalOptions::default().chat_template(QWEN25_TEMPLATE));
    assert_eq!(answer(&model, "hi").await, "Hello from tiny");
}

#[test]
fn broken_files_fail_to_load_with_an_error() {
    let _serial = SERIAL.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let whole = greeter().to_bytes().unwrap();
    let mut missing_key = greeter().to_gguf().unwrap();
    missing_key.remove("llama.embedding_length").unwrap();
    let mut metadata_only = bosun_testing::Gguf::new();
    for key in ["general.architecture", "llama.context_length", "tokenizer.ggml.model"] {
        metadata_only.set(key, greeter().to_gguf().unwrap().get(key).unwrap().clone());
    }
    let mut future = whole.clone();
    future[4..8].copy_from_slice(&9u32.to_le_bytes());
    let not_gguf = "not a GGUF file";
    let refused = "llama.cpp refused it";
    let cases: [(&str, Vec<u8>, &str); 7] = [
        ("not-gguf", b"this is not a model\n".repeat(100), not_gguf),
        ("empty", Vec::new(), not_gguf),
        ("future-version", future, "GGUF version 9 is not supported"),
        ("header-only", whole[..24].to_vec(), refused),
        ("truncated", whole[..whole.len() / 2].to_vec(), refused),
        ("missing-key", missing_key.to_bytes().unwrap(), refused),
        ("metadata-only", metadata_only.to_bytes().unwrap(), refused),
    ];
    for (name, bytes, expected) in cases {
        let path = dir.path().join(format!("{name}.gguf"));
        std::fs::write(&path, bytes).unwrap();
        match LocalModel::load(&path, LocalOptions::default().threads(1)) {
            Err(LocalError::Load { path: failed, reason }) => {
                assert_eq!(failed, path, "{name}");
                assert!(reason.starts_with(expected), "{name}: {reason}");
            }
            other => panic!("{name}: expected a load error, got {other:?}"),
        }
    }
    let absent = dir.path().join("absent.gguf");
    assert!(matches!(LocalModel::load(&absent, LocalOptions::default()), Err(LocalError::NotFound(_))));
}

#[tokio::test]
async fn the_template_in_the_file_renders_the_prompt_and_an_option_overrides_it() {
    let _serial = SERIAL.lock().await;
    let qwen = write(&greeter());
    assert_eq!(answer(&load(&qwen), "hi").await, "Hello from tiny", "Qwen's prompt ends with a newline");
    let bare = write(&greeter().chat_template(BARE_CHATML));
    assert_eq!(answer(&load(&bare), "hi").await, "Bye", "this file's prompt ends with <|im_start|>");
    let overridden = load_with(&qwen.path, LocalOptions::default().chat_template(BARE_CHATML));
    assert_eq!(answer(&overridden, "hi").await, "Bye", "the option wins over the file's template");
    assert_eq!(overridden.capabilities().tools, Support::No);
}

#[tokio::test]
async fn a_programmed_answer_streams_token_by_token_and_ends_with_its_usage() {
    let _serial = SERIAL.lock().await;
    let file = write(&greeter());
    let model = load(&file);
    let events = stream(&model, &[Message::user("hi")], &[]).await;
    assert_eq!(deltas(&events), ["Hello", " from", " tiny"]);
    let response = done(&events);
    assert_eq!(response.text(), "Hello from tiny");
    assert!(response.text().starts_with(&deltas(&events).concat()), "the prefix invariant");
    assert_eq!(response.content.len(), 1, "{:?}", response.content);
    assert_eq!(response.stop_reason, StopReason::Stop);
    let stats = model.last_generation().unwrap();
    assert_eq!(stats.generated_tokens, 4, "three words and the end of turn");
    assert!(stats.prompt_tokens > 20, "{stats:?}");
    assert_eq!(response.usage, Usage::new(stats.prompt_tokens as u64, 4));
    assert!(!model.is_generating());

    let events = stream(&model, &[Message::user("hi")], &[]).await;
    assert_eq!(deltas(&events), ["Hello", " from", " tiny"], "greedy decoding repeats itself");
}

#[tokio::test]
async fn an_answer_is_cut_by_its_token_limit() {
    let _serial = SERIAL.lock().await;
    let file = write(&greeter());
    let model = load(&file);
    let messages = [Message::user("hi")];
    let request = ModelRequest::new(None, &messages[..], &[][..], options(2));
    let events: Vec<_> = model.stream(request, CancellationToken::new()).collect().await;
    let response = done(&events);
    assert_eq!(response.text(), "Hello from");
    assert_eq!(response.stop_reason, StopReason::Length);
    assert_eq!(model.last_generation().unwrap().generated_tokens, 2);
}

/// Says " la" forever.
fn singer() -> TinyModel {
    TinyModel::new().after("\n", " la").after(" la", " la")
}

#[tokio::test]
async fn cancelling_on_the_first_delta_ends_the_stream_with_cancelled() {
    let _serial = SERIAL.lock().await;
    let file = write(&singer());
    let model = load(&file);
    let messages = [Message::user("sing")];
    let request = ModelRequest::new(None, &messages[..], &[][..], options(1_000_000));
    let cancel = CancellationToken::new();
    let mut stream = model.stream(request, cancel.clone());
    let mut seen = Vec::new();
    let mut last = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(ModelEvent::TextDelta(text)) => {
                cancel.cancel();
                seen.push(text);
            }
            other => last = Some(other),
        }
    }
    // The stream ends when the generation thread lets go of the job.
    assert!(!model.is_generating());
    assert!(matches!(last, Some(Err(ModelError::Cancelled))), "{last:?}");
    assert!(seen.iter().all(|delta| delta == " la"), "{seen:?}");
    let generated = model.last_generation().unwrap().generated_tokens;
    // Every token became a delta; the thread ran ahead of the stream by at
    // most the channel's room, far from the context's limit.
    assert!(generated >= seen.len() && generated <= seen.len() + 1, "{generated} vs {}", seen.len());
    assert!(generated < 200, "{generated} tokens: the cancellation was not seen in time");

    // The model serves the next request as usual.
    let events = stream_request(&model, options(3)).await;
    assert_eq!(done(&events).text(), " la la la");
}

async fn stream_request(
    model: &LocalModel,
    options: GenerationOptions,
) -> Vec<Result<ModelEvent, ModelError>> {
    let messages = [Message::user("sing")];
    let request = ModelRequest::new(None, &messages[..], &[][..], options);
    model.stream(request, CancellationToken::new()).collect().await
}

#[tokio::test]
async fn dropping_the_stream_stops_the_generation_before_the_drop_returns() {
    let _serial = SERIAL.lock().await;
    let file = write(&singer());
    let model = load(&file);
    let messages = [Message::user("sing")];
    let request = ModelRequest::new(None, &messages[..], &[][..], options(1_000_000));
    let mut stream = model.stream(request, CancellationToken::new());
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(ModelEvent::TextDelta(_)))), "{first:?}");
    assert!(model.is_generating(), "the answer never ends by itself");
    drop(stream);
    assert!(!model.is_generating(), "the drop waits for the generation to stop");
    let dropped = model.last_generation().expect("the dropped request's figures are recorded");
    assert!((1..10_000).contains(&dropped.generated_tokens), "{dropped:?}");

    // The model serves the next request as usual.
    let events = stream_request(&model, options(2)).await;
    assert_eq!(done(&events).text(), " la la");
    assert_eq!(model.last_generation().unwrap().generated_tokens, 2);
}

/// Opens a tool call after the newline, then writes `garbage` where the
/// call's JSON belongs. JSON punctuation are words of the vocabulary (as in
/// any real one), so where the grammar leaves a choice they come before the
/// whitespace bytes.
fn bad_caller(garbage: &str) -> TinyModel {
    with_punctuation().chain(&["\n", "<tool_call>", garbage])
}

#[tokio::test]
async fn the_grammar_turns_a_garbled_call_into_a_valid_one() {
    let _serial = SERIAL.lock().await;
    let file = write(&bad_caller(" nonsense"));
    let model = load(&file);
    let messages = [Message::user("what time is it?")];

    // Offered a tool whose schema llama.cpp cannot turn into a grammar (the
    // `$ref` points nowhere), the engine runs unconstrained and the model
    // writes its garbage: `<tool_call>`, ` nonsense`, the end of turn. The
    // parser finds no call in that.
    let unresolvable = json!({"type": "object", "properties": {"zone": {"$ref": "#/$defs/zone"}}});
    let tools = [ToolDefinition::new("get_time", "A tool.", unresolvable)];
    let events = stream(&model, &messages, &tools).await;
    let response = done(&events);
    assert!(!response.content.iter().any(|p| matches!(p, ResponsePart::ToolCall { .. })), "{response:?}");
    assert_eq!(response.stop_reason, StopReason::Stop);
    let stats = model.last_generation().unwrap();
    assert_eq!(stats.generated_tokens, 3, "{response:?}");
    assert!(!stats.constrained);

    let schemas = [
        ("get_time", json!({"type": "object", "properties": {}}), json!({})),
        (
            "set_zone",
            json!({"type": "object", "properties": {"zone": {"enum": ["utc"]}}, "required": ["zone"]}),
            json!({"zone": "utc"}),
        ),
    ];
    for (name, schema, arguments) in schemas {
        let tools = [ToolDefinition::new(name, "A tool.", schema)];
        let events = stream(&model, &messages, &tools).await;
        let response = done(&events);
        let stats = model.last_generation().unwrap();
        assert!(stats.constrained, "the grammar held to the end: {stats:?}");
        assert_eq!(response.stop_reason, StopReason::ToolUse, "{response:?}");
        match &response.content[..] {
            [ResponsePart::ToolCall { name: called, arguments: given, .. }] => {
                assert_eq!(called, name);
                assert_eq!(given, &arguments);
            }
            other => panic!("expected one call and nothing else, got {other:?}"),
        }
        assert!(deltas(&events).is_empty(), "call markup never streams: {events:?}");
    }
}

/// The vocabulary's JSON punctuation, as in [`bad_caller`].
fn with_punctuation() -> TinyModel {
    ["{", "}", "\"", ":", ","].iter().fold(TinyModel::new(), |model, word| model.word(word))
}

/// One call of `get_time` and nothing else is in `response`, besides `text`.
fn assert_one_get_time_call(response: &ModelResponse, text: &str) {
    let calls: Vec<_> = response
        .content
        .iter()
        .filter_map(|part| match part {
            ResponsePart::ToolCall { name, arguments, .. } => Some((name.as_str(), arguments.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(calls, [("get_time", json!({}))], "{response:?}");
    assert_eq!(response.text(), text, "{response:?}");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn the_grammar_holds_function_tags_and_fenced_calls_after_text() {
    let _serial = SERIAL.lock().await;
    let tools = [ToolDefinition::new("get_time", "A tool.", json!({"type": "object", "properties": {}}))];
    let messages = [Message::user("what time is it?")];

    // `<function=` anywhere opens a call: the name, body and closing tag
    // are forced where the model would write garbage.
    let function = with_punctuation().chain(&["\n", "<function=", " nonsense"]);
    let file = write(&function);
    let model = load(&file);
    let response = done(&stream(&model, &messages, &tools).await).clone();
    assert!(model.last_generation().unwrap().constrained);
    assert_one_get_time_call(&response, "");

    // A fence that opens a call of a real tool after some text: the rest of
    // the call and the closing fence are forced.
    let fenced = with_punctuation().chain(&["\n", "Sure", "```json{\"name\":\"get_time\"", " nonsense"]);
    let file = write(&fenced);
    let model = load(&file);
    let events = stream(&model, &messages, &tools).await;
    assert!(model.last_generation().unwrap().constrained);
    assert_one_get_time_call(done(&events), "Sure");
    assert_eq!(deltas(&events).concat(), "Sure", "call markup never streams");
}

#[tokio::test]
async fn the_grammar_arms_at_a_trigger_inside_a_token_and_gives_way_when_the_token_refuses_it() {
    let _serial = SERIAL.lock().await;
    let tools = [ToolDefinition::new("get_time", "A tool.", json!({"type": "object", "properties": {}}))];
    let messages = [Message::user("what time is it?")];

    // The trigger ends a token that starts with words: the grammar takes the
    // output from `<tool_call>` on (spelled byte by byte, since this
    // vocabulary would put a space in front), and forces the call.
    let inside = with_punctuation().chain(&["\n", "Sure<tool_call>", " nonsense"]);
    let file = write(&inside);
    let model = load(&file);
    let response = done(&stream(&model, &messages, &tools).await).clone();
    assert!(model.last_generation().unwrap().constrained);
    assert_one_get_time_call(&response, "Sure");

    // The trigger's token carries text no call starts with: the grammar
    // cannot take it, so it gives way (llama.cpp would abort the process
    // if made to accept it) and the model's words stand.
    let refused = with_punctuation().chain(&["\n", "<tool_call>!", " nonsense", END_OF_TURN]);
    let file = write(&refused);
    let model = load(&file);
    let response = done(&stream(&model, &messages, &tools).await).clone();
    let stats = model.last_generation().unwrap();
    assert!(!stats.constrained, "{stats:?}");
    assert_eq!(stats.generated_tokens, 3, "the programmed tokens, unchanged: {response:?}");
    assert!(!response.content.iter().any(|p| matches!(p, ResponsePart::ToolCall { .. })), "{response:?}");
}

/// Streams one request with `choice` as its tool choice.
async fn stream_choosing(
    model: &LocalModel,
    tools: &[ToolDefinition],
    choice: ToolChoice,
) -> Vec<Result<ModelEvent, ModelError>> {
    let messages = [Message::user("what time is it?")];
    let mut options = options(64);
    options.tool_choice = Some(choice);
    let request = ModelRequest::new(None, &messages, tools, options);
    model.stream(request, CancellationToken::new()).collect().await
}

#[tokio::test]
async fn a_required_tool_choice_turns_a_worded_answer_into_a_call() {
    let _serial = SERIAL.lock().await;
    // The model would answer "Hello from tiny"; made to call, it writes a
    // call in the template's markup (Qwen's `<tool_call>`) and nothing else.
    let greeter = ["{", "}", "\"", ":", ","].iter().fold(greeter(), |model, word| model.word(word));
    let file = write(&greeter);
    let model = load(&file);
    let tools = [ToolDefinition::new("get_time", "A tool.", json!({"type": "object", "properties": {}}))];
    let events = stream_choosing(&model, &tools, ToolChoice::Required).await;
    assert!(model.last_generation().unwrap().constrained);
    assert_one_get_time_call(done(&events), "");
    assert!(deltas(&events).is_empty(), "call markup never streams: {events:?}");

    // `Auto` leaves the answer in words; `None` too, and takes no call even
    // from a model that writes one (the call tag is banned).
    let events = stream_choosing(&model, &tools, ToolChoice::Auto).await;
    assert_eq!(done(&events).text(), "Hello from tiny");
    let caller = write(&bad_caller(" nonsense"));
    let caller = load(&caller);
    let events = stream_choosing(&caller, &tools, ToolChoice::None).await;
    let response = done(&events);
    assert!(!response.content.iter().any(|p| matches!(p, ResponsePart::ToolCall { .. })), "{response:?}");
    assert!(!response.text().contains("<tool_call>"), "{response:?}");
    assert_eq!(response.stop_reason, StopReason::Stop);
}

#[tokio::test]
async fn an_output_schema_holds_the_answer_to_it_or_to_one_call() {
    let _serial = SERIAL.lock().await;
    // The model would answer "Hello from tiny"; asked for an answer in a
    // schema, it writes JSON of that schema, or, offered a tool, may call
    // it instead (the answer may come after calls).
    let greeter = ["{", "}", "\"", ":", ","].iter().fold(greeter(), |model, word| model.word(word));
    let file = write(&greeter);
    let model = load(&file);
    let schema = json!({"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}},
        "required": ["verdict"], "additionalProperties": false});
    let mut asked = options(256);
    asked.output_schema = Some(OutputSchema::new("verdict", schema));
    let messages = [Message::user("judge")];
    let matches = |text: &str| {
        let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
        let keys: Vec<&String> = value.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        keys == ["verdict"] && ["pass", "fail"].contains(&value["verdict"].as_str().unwrap_or_default())
    };

    let request = ModelRequest::new(None, &messages[..], &[][..], asked.clone());
    let events: Vec<_> = model.stream(request, CancellationToken::new()).collect().await;
    let response = done(&events);
    assert!(model.last_generation().unwrap().constrained);
    assert!(matches(&response.text()), "{response:?}");
    assert_eq!(response.stop_reason, StopReason::Stop);

    let tools = [ToolDefinition::new("get_time", "A tool.", json!({"type": "object", "properties": {}}))];
    let request = ModelRequest::new(None, &messages[..], &tools[..], asked);
    let events: Vec<_> = model.stream(request, CancellationToken::new()).collect().await;
    let response = done(&events);
    assert!(model.last_generation().unwrap().constrained);
    let calls = response.content.iter().filter(|p| matches!(p, ResponsePart::ToolCall { .. })).count();
    assert!(calls == 1 || matches(&response.text()), "an answer in the schema or one call: {response:?}");

    // Without the schema the same model answers in words.
    assert_eq!(answer(&model, "judge").await, "Hello from tiny");
}

/// Paths that exist, as a workspace would list them.
struct Paths(Vec<String>);

impl ArgumentHints for Paths {
    fn argument_values(&self, tools: &[ToolDefinition], _messages: &[Message]) -> ArgumentValues {
        let mut values = ArgumentValues::default();
        if tools.iter().any(|t| t.name == "read_file") {
            values.insert("read_file", "path", self.0.clone());
        }
        values
    }
}

#[tokio::test]
async fn listed_argument_values_are_the_only_paths_a_call_can_name() {
    let _serial = SERIAL.lock().await;
    // The model starts a call and then writes garbage where the path goes:
    // `{"name":"read_file","arguments":{"path":"` then ` nonsense`.
    let opening = ["\n", "<tool_call>", "{\"name\":\"read_file\",\"arguments\":{\"path\":\"", " nonsense"];
    // Where nothing constrains it, the path ends after the garbage.
    let caller = with_punctuation().chain(&opening).after(" nonsense", "\"").after("\"", "}");
    let file = write(&caller);
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    let tools = [ToolDefinition::new("read_file", "Reads a file.", schema)];
    let hinted = |paths: &[&str]| {
        let paths = Paths(paths.iter().map(|p| (*p).to_owned()).collect());
        load(&file).with_argument_hints(Arc::new(paths))
    };
    let path_of = |events: &[Result<ModelEvent, ModelError>]| match &done(events).content[..] {
        [ResponsePart::ToolCall { arguments, .. }] => {
            arguments["path"].as_str().unwrap_or_default().to_owned()
        }
        other => panic!("expected one call, got {other:?}"),
    };

    let model = hinted(&["notes.txt"]);
    let events = stream_choosing(&model, &tools, ToolChoice::Auto).await;
    assert!(model.last_generation().unwrap().constrained);
    assert_eq!(path_of(&events), "notes.txt", "the only path there is");

    // With two paths the grammar still allows only those two.
    let model = hinted(&["src/main.rs", "notes.txt"]);
    let path = path_of(&stream_choosing(&model, &tools, ToolChoice::Auto).await);
    assert!(["src/main.rs", "notes.txt"].contains(&path.as_str()), "{path}");

    // No values listed: the path is free text again (the garbage stays in it).
    let model = hinted(&[]);
    let path = path_of(&stream_choosing(&model, &tools, ToolChoice::Auto).await);
    assert!(path.contains("nonsense"), "{path}");
}

/// Two files, the first of them read, as the CLI's hints would give them.
struct ReadFile {
    files: Vec<String>,
    read: Option<(String, String)>,
}

impl ArgumentHints for ReadFile {
    fn argument_values(&self, _tools: &[ToolDefinition], _messages: &[Message]) -> ArgumentValues {
        let mut values = ArgumentValues::default();
        values.insert("edit_file", "path", self.files.clone());
        let files = self.read.iter().cloned().collect();
        let texts = FileTexts { path_argument: "path".into(), text_argument: "old_text".into(), files };
        values.insert_texts("edit_file", texts);
        values
    }
}

#[tokio::test]
async fn the_old_text_of_an_edit_can_only_quote_the_file_it_names() {
    let _serial = SERIAL.lock().await;
    // The model misquotes `LOG_LEVEL=info` as `LOG_LEVEL = info`; its
    // second choice after `LOG_LEVEL` is `=`. (Path first: the grammar puts
    // it there whenever a quote is held, whatever the schema's order.)
    let opening = "{\"name\":\"edit_file\",\"arguments\":{\"path\":\"cfg.txt\",\"old_text\":\"";
    let close = "\",\"new_text\":\"LOG_LEVEL=debug\"}}";
    let editor = with_punctuation()
        .chain(&[
            "\n",
            "<tool_call>",
            opening,
            "LOG_LEVEL",
            " = ",
            "info",
            close,
            "</tool_call>",
            END_OF_TURN,
        ])
        .or_else("LOG_LEVEL", "=")
        .after("=", "info");
    let file = write(&editor);
    let schema = json!({"type": "object", "properties": {
        "new_text": {"type": "string"}, "old_text": {"type": "string"}, "path": {"type": "string"}
    }, "required": ["path", "old_text", "new_text"]});
    let tools = [ToolDefinition::new("edit_file", "Replaces text in a file.", schema)];
    let (tools, file) = (&tools, &file);
    let old_text = |read: Option<&str>| {
        let hints = ReadFile {
            files: vec!["cfg.txt".into(), "other.txt".into()],
            read: read.map(|text| ("cfg.txt".to_owned(), text.to_owned())),
        };
        let model = load(file).with_argument_hints(Arc::new(hints));
        async move {
            let events = stream_choosing(&model, tools, ToolChoice::Auto).await;
            assert!(model.last_generation().unwrap().constrained);
            match &done(&events).content[..] {
                [ResponsePart::ToolCall { arguments, .. }] => {
                    assert_eq!(arguments["path"], "cfg.txt");
                    arguments["old_text"].as_str().unwrap_or_default().to_owned()
                }
                other => panic!("expected one call, got {other:?}"),
            }
        }
    };

    // The file not read: nothing holds the quote. (The schema is written in
    // alphabetical order, so its order is the same whether or not this
    // build's JSON maps keep insertion order, and the call is written in it.)
    let alphabetical =
        "{\"name\":\"edit_file\",\"arguments\":{\"new_text\":\"LOG_LEVEL=debug\",\"old_text\":\"";
    let free = with_punctuation()
        .chain(&["\n", "<tool_call>", alphabetical, "LOG_LEVEL", " = ", "info", "\",\"path\":\"cfg.txt\"}}"])
        .chain(&["</tool_call>", END_OF_TURN]);
    let free_file = write(&free);
    let hints = ReadFile { files: vec!["cfg.txt".into(), "other.txt".into()], read: None };
    let model = load(&free_file).with_argument_hints(Arc::new(hints));
    let events = stream_choosing(&model, tools, ToolChoice::Auto).await;
    assert!(model.last_generation().unwrap().constrained);
    match &done(&events).content[..] {
        [ResponsePart::ToolCall { arguments, .. }] => assert_eq!(arguments["old_text"], "LOG_LEVEL = info"),
        other => panic!("expected one call, got {other:?}"),
    }
    // Read: the quote is held to the file's text, so the misquote cannot be written.
    assert_eq!(old_text(Some("# settings\nLOG_LEVEL=info\nPORT=8080\n")).await, "LOG_LEVEL=info");
}

#[tokio::test]
async fn offered_no_tools_a_model_cannot_open_a_tagged_call() {
    let _serial = SERIAL.lock().await;
    let model_file = write(&bad_caller(" nonsense"));
    let model = load(&model_file);
    let messages = [Message::user("what time is it?")];
    // `<tool_call>` is one token of the vocabulary: it is banned, so the
    // model says something else and no call markup comes out.
    let events = stream(&model, &messages, &[]).await;
    let response = done(&events);
    assert!(!response.content.iter().any(|p| matches!(p, ResponsePart::ToolCall { .. })), "{response:?}");
    assert!(!response.text().contains("<tool_call>"), "{response:?}");
    assert!(!response.text().contains("nonsense"), "{response:?}");

    // `<function=` is spelled out by several tokens: the output is cut where
    // it appears, and a note says why.
    let spelled = TinyModel::new().chain(&["\n", "Sure", "<function=", "get_time", ">", "<function="]);
    let spelled_file = write(&spelled);
    let model = load(&spelled_file);
    let events = stream(&model, &messages, &[]).await;
    let response = done(&events);
    assert_eq!(
        response.text(),
        "Sure\n\n[bosun: the model began a tool call, but no tools were offered for this response.]"
    );
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!(deltas(&events).concat(), "Sure", "call markup never streams");
    assert!(model.last_generation().unwrap().generated_tokens <= 3, "it stopped at the opening");
}

#[tokio::test]
async fn when_tools_were_withdrawn_the_answer_cannot_open_like_a_call() {
    let _serial = SERIAL.lock().await;
    // After the newline the model would write `{`, the start of a bare
    // call; its second choice is the word `Done`.
    let writer = TinyModel::new().chain(&["\n", "{", "\"", "Done", END_OF_TURN]).or_else("\n", "Done");
    let file = write(&writer);
    let model = load(&file);
    let fresh = [Message::user("give me a brace")];
    let events = stream(&model, &fresh, &[]).await;
    assert!(done(&events).text().starts_with('{'), "no call was made: JSON may open the answer");

    // The same request after a call, with the tools gone (bosun-core's
    // round after repeated calls): the answer must not open like a call.
    let call: Message = serde_json::from_value(json!({"role": "assistant", "stop_reason": "tool_use",
        "content": [{"type": "tool_call", "id": "01a22a6f-719d-7138-9ddf-72b2c3e14cd1",
                     "name": "get_time", "arguments": {}}]}))
    .unwrap();
    let result = Message::tool_result(
        serde_json::from_value(json!("01a22a6f-719d-7138-9ddf-72b2c3e14cd1")).unwrap(),
        "get_time",
        "12:00",
        false,
    );
    let withdrawn = [fresh[0].clone(), call, result];
    let events = stream(&model, &withdrawn, &[]).await;
    let text = done(&events).text();
    // It must start with a word: not a call, not punctuation, not the end.
    assert_eq!(text, "Done", "{events:?}");
    let dotted = TinyModel::new().chain(&["\n", "{", "Done"]).or_else("\n", ".").after(".", "Done");
    let dotted_file = write(&dotted);
    let text = done(&stream(&load(&dotted_file), &withdrawn, &[]).await).text();
    assert!(!text.starts_with('.') && !text.starts_with('{'), "punctuation cannot open it either: {text:?}");

    // A JSON call later in the answer is cut too, once tools were withdrawn;
    // with no calls in the conversation the same JSON is an answer and stays.
    let fenced = with_punctuation().chain(&["\n", "Sure", "```json{\"name\":\"get_time\"", " nonsense"]);
    let file = write(&fenced);
    let model = load(&file);
    let events = stream(&model, &withdrawn, &[]).await;
    assert_eq!(
        done(&events).text(),
        "Sure\n\n[bosun: the model began a tool call, but no tools were offered for this response.]"
    );
    assert_eq!(deltas(&events).concat(), "Sure");
    assert_eq!(model.last_generation().unwrap().generated_tokens, 2, "cut where the call opened");
    let events = stream(&model, &fresh, &[]).await;
    assert!(done(&events).text().contains(r#"```json{"name":"get_time" nonsense"#), "{events:?}");
}

#[tokio::test]
async fn a_follow_up_request_reuses_the_kv_cache_of_the_conversation() {
    let _serial = SERIAL.lock().await;
    let file = write(&greeter());
    let model = load(&file);
    let first = vec![Message::user("hi")];
    let response = done(&stream(&model, &first, &[]).await).clone();
    assert_eq!(model.prompt_tokens_reused().0, 0, "a cold cache");
    let first_prompt = model.last_generation().unwrap().prompt_tokens;

    let mut second = first;
    second.push(Message::Assistant {
        content: vec![ContentPart::text(response.text())],
        usage: response.usage,
        stop_reason: response.stop_reason,
    });
    second.push(Message::user("again"));
    let events = stream(&model, &second, &[]).await;
    let (reused, total) = model.prompt_tokens_reused();
    assert_eq!(reused, first_prompt, "the whole first prompt is kept");
    assert!(total > reused + 10, "{reused} of {total}");
    let usage = done(&events).usage;
    assert_eq!(usage.cache_read, reused as u64);
    assert_eq!(usage.input, (total - reused) as u64);
    assert_eq!(done(&events).text(), "Hello from tiny");
}

#[tokio::test]
async fn a_count_is_the_prompt_its_response_reports_cold_from_the_cache_and_with_examples() {
    let _serial = SERIAL.lock().await;
    let file = write(&greeter());
    let tools = [ToolDefinition::new("get_time", "Tells the time.", json!({"type": "object"}))];
    let mut messages = vec![Message::user("hi")];
    for examples in [Vec::new(), vec![Message::user("an example question")]] {
        let model = load(&file).with_examples(examples);
        for turn in 0..2 {
            let request = ModelRequest::new(Some("Be brief."), &messages[..], &tools[..], options(64));
            let count = model.count_tokens(&request).await.unwrap();
            let response =
                done(&model.stream(request, CancellationToken::new()).collect::<Vec<_>>().await).clone();
            assert_eq!(
                count,
                response.usage.input + response.usage.cache_read,
                "turn {turn}: {:?}",
                response.usage
            );
            assert_eq!(count, model.last_generation().unwrap().prompt_tokens as u64);
            assert_eq!(response.usage.cache_read > 0, turn > 0, "turn {turn} from the KV cache");
            messages.push(Message::Assistant {
                content: vec![ContentPart::text(response.text())],
                usage: response.usage,
                stop_reason: response.stop_reason,
            });
            messages.push(Message::user("again"));
        }
    }
}

/// Polls `future` on this thread, parking between wake-ups: no tokio runtime.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}

#[test]
fn a_count_outside_a_tokio_runtime_is_the_same_count() {
    let _serial = SERIAL.blocking_lock();
    let file = write(&greeter());
    let model = load(&file);
    let messages = [Message::user("hi")];
    let request = ModelRequest::new(None, &messages[..], &[][..], options(64));
    let count = block_on(model.count_tokens(&request)).unwrap();
    let response = block_on(model.stream(request, CancellationToken::new()).collect::<Vec<_>>());
    assert_eq!(count, done(&response).usage.input);
}

#[tokio::test]
async fn the_prompt_cache_carries_a_long_prompt_to_the_next_load() {
    let _serial = SERIAL.lock().await;
    let file = write(&greeter());
    let cache = tempfile::tempdir().unwrap();
    let cached = || LocalOptions::default().prompt_cache(cache.path());
    let long = "word ".repeat(100);
    let first = [Message::user(format!("{long}hi"))];
    let second = [Message::user(format!("{long}bye"))];
    {
        let model = load_with(&file.path, cached());
        assert_eq!(done(&stream(&model, &first, &[]).await).text(), "Hello from tiny");
        assert_eq!(model.prompt_tokens_reused().0, 0, "nothing to start from yet");
    }
    let saved: Vec<PathBuf> = std::fs::read_dir(cache.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(saved[0].extension().is_some_and(|e| e == "kv"), "{saved:?}");

    // A new load of the same file starts from the saved prompt: only what
    // differs is processed, and the answer is the same.
    let model = load_with(&file.path, cached());
    assert_eq!(done(&stream(&model, &second, &[]).await).text(), "Hello from tiny");
    let (reused, total) = model.prompt_tokens_reused();
    assert!(reused >= 500 && reused < total, "reused {reused} of {total}");
    drop(model);

    // A cache llama.cpp refuses is deleted and ignored.
    std::fs::write(&saved[0], b"not a state file").unwrap();
    let model = load_with(&file.path, cached());
    assert_eq!(done(&stream(&model, &second, &[]).await).text(), "Hello from tiny");
    assert_eq!(model.prompt_tokens_reused().0, 0);
    assert!(std::fs::read(&saved[0]).unwrap().len() > 1000, "replaced by a fresh cache");

    // Short prompts are not worth a write; another context size is another
    // file, which replaces the model's other caches.
    let short = tempfile::tempdir().unwrap();
    let model = load_with(&file.path, LocalOptions::default().prompt_cache(short.path()));
    assert_eq!(answer(&model, "hi").await, "Hello from tiny");
    assert_eq!(std::fs::read_dir(short.path()).unwrap().count(), 0);
    let model = load_with(&file.path, cached().context_cap(512));
    let medium = [Message::user(format!("{}hi", "word ".repeat(60)))];
    assert_eq!(done(&stream(&model, &medium, &[]).await).text(), "Hello from tiny");
    let now: Vec<PathBuf> = std::fs::read_dir(cache.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now[0], saved[0]);
    let removed = bosun_local::remove_prompt_caches(cache.path(), &file.path, None).unwrap();
    assert_eq!(removed, now);
}

#[tokio::test]
async fn reasoning_streams_before_the_answer_and_is_kept_apart() {
    let _serial = SERIAL.lock().await;
    let model =
        TinyModel::new().chain(&["\n", "<think>", "Let", " me", " see", "</think>", "Paris", END_OF_TURN]);
    let file = write(&model);
    let model = load(&file);
    let events = stream(&model, &[Message::user("capital of France?")], &[]).await;
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match e {
            Ok(ModelEvent::ReasoningDelta(text)) => Some(("reasoning", text.as_str())),
            Ok(ModelEvent::TextDelta(text)) => Some(("text", text.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [("reasoning", "Let"), ("reasoning", " me"), ("reasoning", " see"), ("text", "Paris")]);
    let response = done(&events);
    assert_eq!(
        response.content,
        [ResponsePart::Content(ContentPart::reasoning("Let me see")), ResponsePart::text("Paris")]
    );
}

#[tokio::test]
async fn a_session_runs_turns_on_the_tiny_model() {
    let _serial = SERIAL.lock().await;
    let file = write(&greeter());
    let model = Arc::new(load(&file));
    let tool = FnTool::echo("get_time");
    let mut session =
        Session::builder_shared(model.clone()).tool(tool.clone()).options(options(32)).build().await.unwrap();
    for turn in 1..=2 {
        let mut sink = Recorder::default();
        let outcome = session.run("hi", &mut sink).await.unwrap();
        assert_eq!(outcome.answer, "Hello from tiny", "turn {turn}");
        let streamed: String = sink
            .events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, outcome.answer, "turn {turn}");
    }
    assert!(tool.calls().is_empty(), "the model never called the tool");
    assert_eq!(session.history().len(), 4, "two questions, two answers");
    let (reused, _) = model.prompt_tokens_reused();
    assert!(reused > 0, "the second turn reuses the first one's prompt");
}
