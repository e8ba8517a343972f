//! Byte-stable prefixes (issue 16): a real `Session` drives a real
//! `HostedModel` on each of the four APIs against a local server that records
//! every request body, over a turn of several tool rounds (one of them two
//! calls at once) and a second turn. From round to round the system prompt
//! and the tool definitions are the same bytes, and the history elements
//! of one request (Chat messages, Anthropic messages, Responses input items,
//! Gemini contents) are the first elements of the next, byte for byte, so a
//! provider's prompt cache keyed on the prefix hits. Anthropic's three
//! `cache_control` breakpoints sit on the last system block, the last tool
//! and the newest user content block; with them taken out the same holds,
//! so what request N cached is a prefix of request N+1.
//!
//! Where the prefix may change, it changes once: a compaction shortens one
//! old tool result at the round it happens and nothing else, and the rounds
//! after are stable again; and reasoning sent as `reasoning_content` (Chat
//! Completions: DeepSeek, vLLM, llama.cpp) is sent for the tool loop in
//! progress only, so a new user message takes it off the earlier turn's
//! messages, and nothing else.
//!
//! Everything is compared as the raw bytes the server received.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use bosun_core::{Event, Session, ToolCategory};
use bosun_providers::{Api, HostedModel, ProviderConfig, RetryPolicy};
use bosun_testing::FnTool;
use serde_json::{Value, json};
use support::replies::{APIS, Reply, config, field, members, stream};
use support::{Canned, Recorded, TestServer};

/// No session here may take longer: a hang fails the test.
const NO_HANG: Duration = Duration::from_secs(60);

const SYSTEM: &str = "You are a careful assistant. Read the parts you are asked about, then answer.";

/// A big part's result, in bytes: five of them pass the compaction
/// threshold of [`compaction_moves_the_prefix_once_then_it_is_stable_again`].
const BIG_PART: usize = 10_000;

/// Reads a numbered part: one line, or [`BIG_PART`] bytes when `big`.
fn read_part() -> FnTool {
    FnTool::text("read_part", ToolCategory::Read, |args| {
        let part = args["part"].as_u64().unwrap_or(0);
        if args["big"] != true {
            return format!("Part {part}: {} apples.", part * 7);
        }
        let mut text = String::new();
        let mut line = 0;
        while text.len() < BIG_PART {
            text.push_str(&format!("part {part} line {line}: nothing about apples here.\n"));
            line += 1;
        }
        text.truncate(BIG_PART);
        text
    })
    .description("Reads one part of the document.")
    .schema(json!({
        "type": "object",
        "properties": {
            "part": {"type": "integer", "minimum": 1, "description": "The part's number."},
            "big": {"type": "boolean", "description": "Whether to read it whole."}
        },
        "required": ["part"],
        "additionalProperties": false
    }))
}

/// A second tool, never called: the last tool (Anthropic's breakpoint) is
/// then not the only one.
fn sum() -> FnTool {
    FnTool::text("sum", ToolCategory::Read, |args| {
        let total: f64 = args["numbers"].as_array().into_iter().flatten().filter_map(Value::as_f64).sum();
        total.to_string()
    })
    .description("Adds numbers.")
    .schema(json!({
        "type": "object",
        "properties": {"numbers": {"type": "array", "items": {"type": "number"}}},
        "required": ["numbers"]
    }))
}

/// One turn: what the person says and what the model replies, round by round.
struct Turn {
    ask: &'static str,
    replies: Vec<Reply>,
}

fn part(n: u64) -> Value {
    json!({"part": n})
}

/// Four tool rounds (the second with two calls) and an answer, then a
/// second turn of one tool round and an answer.
fn two_turns() -> Vec<Turn> {
    vec![
        Turn {
            ask: "How many apples are in parts 1 to 5?",
            replies: vec![
                Reply::call("read_part", part(1)),
                Reply::Calls(vec![("read_part", part(2)), ("read_part", part(3))]),
                Reply::call("read_part", part(4)),
                Reply::call("read_part", part(5)),
                Reply::Answer("There are 105 apples."),
            ],
        },
        Turn {
            ask: "And in part 6?",
            replies: vec![Reply::call("read_part", part(6)), Reply::Answer("Part 6 has 42 apples.")],
        },
    ]
}

/// Runs `turns` in one session (its builder passed through `build`) on the
/// model at `config`, pointed at `server`, which plays the turns' replies;
/// returns the requests the server received and the events of each turn.
async fn run(
    config: ProviderConfig,
    turns: &[Turn],
    build: impl FnOnce(bosun_core::SessionBuilder) -> bosun_core::SessionBuilder,
    server: &TestServer,
) -> (Vec<Recorded>, Vec<Vec<Event>>) {
    let model = HostedModel::new(config, "model-x").unwrap();
    let builder = Session::builder(model).system_prompt(SYSTEM).tool(read_part()).tool(sum());
    let mut session = build(builder).build().await.unwrap();
    let mut events = Vec::new();
    for turn in turns {
        let mut sink: Vec<Event> = Vec::new();
        let outcome = tokio::time::timeout(NO_HANG, session.run(turn.ask, &mut sink))
            .await
            .expect("no hang")
            .unwrap_or_else(|e| panic!("turn {:?}: {e}", turn.ask));
        let Some(Reply::Answer(answer)) = turn.replies.last() else { panic!("a turn ends in an answer") };
        assert_eq!(outcome.answer, *answer);
        assert_eq!(outcome.rounds as usize, turn.replies.len());
        events.push(sink);
    }
    let rounds: usize = turns.iter().map(|t| t.replies.len()).sum();
    let requests = server.requests();
    assert_eq!(requests.len(), rounds, "one request a round, no retry, no other request");
    (requests, events)
}

/// A server playing `turns`' replies in order, as `render` streams reply `n` (from 1).
async fn serve(turns: &[Turn], render: impl Fn(usize, &Reply) -> Vec<u8>) -> TestServer {
    let replies = turns.iter().flat_map(|t| t.replies.iter());
    TestServer::start(replies.enumerate().map(|(i, reply)| Canned::sse(render(i + 1, reply))).collect()).await
}

// ------------------------------------------------------- what a request sent

/// The parts of one request body a prompt cache keys on, as raw bytes.
#[derive(Clone, Debug, PartialEq)]
struct Sent {
    system: Vec<u8>,
    tools: Vec<u8>,
    history: Vec<Vec<u8>>,
    /// OpenAI's `prompt_cache_key` (Responses always; Chat Completions on
    /// OpenAI's own preset), which routes requests to the same cache.
    cache_key: Option<String>,
}

/// Anthropic's breakpoint as the request builder writes it (serde_json,
/// keys in order): taken out of the raw bytes with the comma that joins it.
const BREAKPOINT: &str = r#""cache_control":{"type":"ephemeral"}"#;

fn without_breakpoints(body: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(body).unwrap();
    text.replace(&format!("{BREAKPOINT},"), "").replace(&format!(",{BREAKPOINT}"), "").into_bytes()
}

/// Takes `cache_control` off every object of `value`.
fn strip_breakpoints(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_breakpoints);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_breakpoints),
        _ => {}
    }
}

/// What `body` sent, as `api` lays it out; for Anthropic without its
/// breakpoints. Each raw piece is checked to parse as the same JSON as the
/// parsed body's, so the byte splitting is known to be right.
fn sent(api: Api, body: &[u8]) -> Sent {
    let mut parsed: Value = serde_json::from_slice(body).unwrap();
    let stripped;
    let body = if api == Api::AnthropicMessages {
        stripped = without_breakpoints(body);
        strip_breakpoints(&mut parsed);
        stripped.as_slice()
    } else {
        body
    };
    assert_eq!(serde_json::from_slice::<Value>(body).unwrap(), parsed, "{api:?}: the raw body as parsed");
    let raw = |key: &str| field(body, key).unwrap_or_else(|| panic!("{api:?}: no `{key}` in the body"));
    let (system, tools, history, parsed_history) = match api {
        Api::OpenAiChat => {
            let mut messages = members(raw("messages"));
            assert_eq!(parsed["messages"][0]["role"], "system", "{api:?}: the system prompt leads");
            let system = messages.remove(0);
            let parsed_history = parsed["messages"].as_array().unwrap()[1..].to_vec();
            (system, raw("tools"), messages, parsed_history)
        }
        Api::AnthropicMessages => {
            (raw("system"), raw("tools"), members(raw("messages")), array(&parsed["messages"]))
        }
        Api::OpenAiResponses => {
            (raw("instructions"), raw("tools"), members(raw("input")), array(&parsed["input"]))
        }
        Api::Gemini => {
            (raw("systemInstruction"), raw("tools"), members(raw("contents")), array(&parsed["contents"]))
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(history.len(), parsed_history.len(), "{api:?}: history elements");
    for (element, expected) in history.iter().zip(&parsed_history) {
        assert_eq!(
            &serde_json::from_slice::<Value>(element).unwrap(),
            expected,
            "{api:?}: a history element"
        );
    }
    let cache_key = parsed["prompt_cache_key"].as_str().map(str::to_owned);
    if api == Api::OpenAiResponses {
        let key = cache_key.as_deref().unwrap_or_else(|| panic!("{api:?}: no prompt_cache_key"));
        assert!(key.starts_with("bosun-") && key.len() == 30, "{api:?}: {key}");
    }
    Sent {
        cache_key,
        system: system.to_vec(),
        tools: tools.to_vec(),
        history: history.into_iter().map(<[u8]>::to_vec).collect(),
    }
}

fn array(value: &Value) -> Vec<Value> {
    value.as_array().unwrap().clone()
}

fn show(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.chars().count() <= 400 {
        text.into_owned()
    } else {
        format!("{}…", text.chars().take(400).collect::<String>())
    }
}

/// Why `later` does not continue `earlier`'s prefix: `None` when the system
/// prompt and tools are the same bytes and `earlier`'s history elements are
/// the first of `later`'s, byte for byte, with more after them.
fn prefix_break(earlier: &Sent, later: &Sent) -> Option<String> {
    if earlier.system != later.system {
        return Some(format!(
            "the system prompt changed: {} → {}",
            show(&earlier.system),
            show(&later.system)
        ));
    }
    if earlier.tools != later.tools {
        return Some(format!("the tools changed: {} → {}", show(&earlier.tools), show(&later.tools)));
    }
    if earlier.cache_key != later.cache_key {
        return Some(format!(
            "the prompt cache key changed: {:?} → {:?}",
            earlier.cache_key, later.cache_key
        ));
    }
    if let Some(index) = earlier.history.iter().zip(&later.history).position(|(a, b)| a != b) {
        return Some(format!(
            "history element {index} changed: {} → {}",
            show(&earlier.history[index]),
            show(&later.history[index])
        ));
    }
    if later.history.len() <= earlier.history.len() {
        return Some(format!(
            "history did not grow: {} → {} elements",
            earlier.history.len(),
            later.history.len()
        ));
    }
    None
}

/// Every request continues the one before it.
fn assert_stable(api: Api, sent: &[Sent], pairs: impl IntoIterator<Item = usize>) {
    for n in pairs {
        if let Some(why) = prefix_break(&sent[n], &sent[n + 1]) {
            panic!("{api:?}: request {} → {}: {why}", n + 1, n + 2);
        }
    }
}

/// JSON pointers to every object of `value` holding `cache_control`, each
/// checked to be `{"type": "ephemeral"}`.
fn breakpoints(value: &Value, at: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(marker) = map.get("cache_control") {
                assert_eq!(marker, &json!({"type": "ephemeral"}), "{at}");
                out.push(at.to_owned());
            }
            for (key, inner) in map {
                breakpoints(inner, &format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (index, inner) in items.iter().enumerate() {
                breakpoints(inner, &format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
}

/// Anthropic's three breakpoints: the last system block, the last tool, the
/// last block of the newest message, which is the newest user turn.
fn assert_breakpoints(body: &Value, request: usize) {
    let last = |key: &str| body[key].as_array().unwrap().len() - 1;
    let newest = last("messages");
    assert_eq!(
        body["messages"][newest]["role"], "user",
        "request {request}: a round's request ends with the user"
    );
    let blocks = body["messages"][newest]["content"].as_array().unwrap().len();
    let mut found = Vec::new();
    breakpoints(body, "", &mut found);
    found.sort();
    let mut expected = vec![
        format!("/messages/{newest}/content/{}", blocks - 1),
        format!("/system/{}", last("system")),
        format!("/tools/{}", last("tools")),
    ];
    expected.sort();
    assert_eq!(found, expected, "request {request}: the breakpoints");
}

// -------------------------------------------------------------------- tests

#[tokio::test]
async fn history_prefix_is_byte_stable_across_rounds_for_every_protocol() {
    let turns = two_turns();
    for api in APIS {
        let server = serve(&turns, |n, reply| stream(api, n, reply)).await;
        let (requests, _) = run(config(api, &server.url), &turns, |b| b, &server).await;
        let sent: Vec<Sent> = requests.iter().map(|r| sent(api, &r.body)).collect();
        assert_stable(api, &sent, 0..sent.len() - 1);
        if api == Api::AnthropicMessages {
            for (n, request) in requests.iter().enumerate() {
                assert_breakpoints(&request.json(), n + 1);
            }
        }
        // Not a vacuous check: the prefix holds what must be replayed.
        let history = String::from_utf8(sent.last().unwrap().history.concat()).unwrap();
        let replayed = match api {
            Api::OpenAiChat => "\"signature\":\"sig-1\"",
            Api::AnthropicMessages => "\"signature\":\"sig-1\"",
            Api::OpenAiResponses => "\"encrypted_content\":\"enc-1\"",
            _ => "\"thoughtSignature\":\"sig-call-1\"",
        };
        assert!(history.contains(replayed), "{api:?}: the first round's reasoning is replayed: {history}");
        assert!(history.contains("Part 3: 21 apples."), "{api:?}: {history}");
    }
}

#[tokio::test]
async fn compaction_moves_the_prefix_once_then_it_is_stable_again() {
    // Estimates are characters / 4 (no reply reports usage). Before the
    // sixth round five big results (50,000 bytes) pass 11,500 tokens; the
    // fifth round's four (40,000 bytes and under 1,000 of the rest) do not.
    // Tier 1 then shortens the oldest result, the only one outside the
    // newest four units, to 2,048 bytes, and the request fits again, for
    // the rest of the session: the later results are one line each.
    let big = |n: u64| Reply::call("read_part", json!({"part": n, "big": true}));
    let turns = vec![
        Turn {
            ask: "Read the big parts 1 to 5, then part 6.",
            replies: vec![
                big(1),
                big(2),
                big(3),
                big(4),
                big(5),
                Reply::call("read_part", part(6)),
                Reply::Answer("Part 6 has 42 apples."),
            ],
        },
        Turn {
            ask: "And part 7?",
            replies: vec![Reply::call("read_part", part(7)), Reply::Answer("Part 7 has 49 apples.")],
        },
    ];
    let compacted = 5; // the sixth request, from 0
    for api in APIS {
        let server = serve(&turns, |n, reply| stream(api, n, reply)).await;
        let (requests, events) =
            run(config(api, &server.url), &turns, |b| b.context_window(23_000).compact_at(0.5), &server)
                .await;
        let tiers: Vec<Vec<u8>> = events
            .iter()
            .map(|turn| {
                turn.iter()
                    .filter_map(|e| if let Event::Compacted { tier, .. } = e { Some(*tier) } else { None })
                    .collect()
            })
            .collect();
        assert_eq!(tiers, [vec![1], vec![]], "{api:?}: one compaction, tier 1, in the first turn");
        let sent: Vec<Sent> = requests.iter().map(|r| sent(api, &r.body)).collect();

        assert_stable(api, &sent, 0..compacted - 1);
        // At the compaction round the oldest result, and only it, changed.
        let (before, after) = (&sent[compacted - 1], &sent[compacted]);
        let why =
            prefix_break(before, after).unwrap_or_else(|| panic!("{api:?}: compaction changed nothing"));
        assert!(why.starts_with("history element"), "{api:?}: {why}");
        let oldest = before
            .history
            .iter()
            .position(|e| String::from_utf8_lossy(e).contains("part 1 line 0"))
            .unwrap_or_else(|| panic!("{api:?}: the first result is sent"));
        let changed: Vec<usize> =
            (0..before.history.len()).filter(|&i| before.history[i] != after.history[i]).collect();
        assert_eq!(changed, [oldest], "{api:?}: only the oldest result changed");
        let shortened = String::from_utf8_lossy(&after.history[oldest]);
        assert!(shortened.contains("cut by bosun's output limit"), "{api:?}: {shortened}");
        assert!(after.history[oldest].len() < 2_400, "{api:?}: {}", after.history[oldest].len());
        assert_eq!(
            (before.system.clone(), before.tools.clone()),
            (after.system.clone(), after.tools.clone())
        );
        // From there on, stable again, through the second turn.
        assert_stable(api, &sent, compacted..sent.len() - 1);
        if api == Api::AnthropicMessages {
            for (n, request) in requests.iter().enumerate() {
                assert_breakpoints(&request.json(), n + 1);
            }
        }
    }
}

/// Reasoning that came as `reasoning_content` goes back on the assistant
/// messages of the tool loop in progress only (see the Chat request
/// builder: DeepSeek's API documents it, and servers refuse the field on
/// older turns). A new user message so takes it off the earlier turn's
/// messages, and that is the prefix's one change; every other pair of
/// rounds is stable.
#[tokio::test]
async fn chat_reasoning_content_leaves_the_prefix_only_at_a_new_user_message() {
    let turns = two_turns();
    let server = serve(&turns, |n, reply| support::replies::chat(n, reply, true)).await;
    let config =
        ProviderConfig::openai_compatible(format!("{}/v1", server.url)).with_retry(RetryPolicy::none());
    let (requests, _) = run(config, &turns, |b| b, &server).await;
    let api = Api::OpenAiChat;
    let sent: Vec<Sent> = requests.iter().map(|r| sent(api, &r.body)).collect();
    let boundary = turns[0].replies.len() - 1; // the last request of the first turn, from 0
    assert_stable(api, &sent, 0..boundary);
    assert_stable(api, &sent, boundary + 1..sent.len() - 1);

    let (before, after) = (&sent[boundary], &sent[boundary + 1]);
    let with_reasoning =
        before.history.iter().filter(|e| String::from_utf8_lossy(e).contains("reasoning_content"));
    assert_eq!(with_reasoning.count(), 4, "the first turn's tool rounds carry their reasoning");
    assert!(prefix_break(before, after).is_some(), "a new user message takes it off");
    let without: Vec<Vec<u8>> = before
        .history
        .iter()
        .map(|element| {
            let mut message: Value = serde_json::from_slice(element).unwrap();
            message.as_object_mut().unwrap().remove("reasoning_content");
            serde_json::to_vec(&message).unwrap()
        })
        .collect();
    let before = Sent { history: without, ..before.clone() };
    assert_eq!(prefix_break(&before, after), None, "nothing but reasoning_content changed");
}

/// The check above can fail: one byte changed anywhere in the prefix, in a
/// real session's requests, is found.
#[tokio::test]
async fn the_prefix_check_finds_one_changed_byte() {
    let turns = two_turns();
    let api = Api::OpenAiResponses;
    let server = serve(&turns, |n, reply| stream(api, n, reply)).await;
    let (requests, _) = run(config(api, &server.url), &turns, |b| b, &server).await;
    let sent: Vec<Sent> = requests.iter().map(|r| sent(api, &r.body)).collect();
    let (earlier, later) = (&sent[2], &sent[3]);
    assert_eq!(prefix_break(earlier, later), None);
    let flip = |bytes: &mut Vec<u8>, at: usize| bytes[at] ^= 0x01;
    for element in 0..earlier.history.len() {
        let mut changed = later.clone();
        let at = changed.history[element].len() / 2;
        flip(&mut changed.history[element], at);
        let why = prefix_break(earlier, &changed).expect("found");
        assert!(why.starts_with(&format!("history element {element} changed")), "{why}");
    }
    let mut changed = later.clone();
    flip(&mut changed.tools, 10);
    assert!(prefix_break(earlier, &changed).unwrap().starts_with("the tools changed"));
    let mut changed = later.clone();
    flip(&mut changed.system, 5);
    assert!(prefix_break(earlier, &changed).unwrap().starts_with("the system prompt changed"));
    assert!(prefix_break(later, earlier).unwrap().starts_with("history did not grow"));
}
