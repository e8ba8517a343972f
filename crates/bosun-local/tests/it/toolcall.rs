//! Tool-call parsing from raw model output: each format, the outputs measured
//! from Qwen2.5-Coder-0.5B, lists, string arguments, unclosed markup, think
//! blocks, JSON that is not a call, invalid calls; and, by proptest, that no
//! input panics and that `safe_text_prefix` never lets out text that `parse`
//! later changes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bosun_local::toolcall::{
    CALL_TRIGGERS, ParsedCall, ParsedOutput, leading_reasoning_end, parse, safe_text_prefix,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const TOOLS: &[&str] = &["read_file", "run_shell"];

fn call(name: &str, arguments: Value) -> ParsedCall {
    ParsedCall { name: name.to_owned(), arguments }
}

fn calls_only(calls: Vec<ParsedCall>) -> ParsedOutput {
    ParsedOutput { text: String::new(), reasoning: String::new(), calls, problems: Vec::new() }
}

fn text_only(text: &str) -> ParsedOutput {
    ParsedOutput { text: text.to_owned(), reasoning: String::new(), calls: Vec::new(), problems: Vec::new() }
}

fn single_problem(output: &str) -> String {
    let parsed = parse(output, TOOLS);
    assert!(parsed.calls.is_empty(), "{parsed:?}");
    assert_eq!(parsed.problems.len(), 1, "{parsed:?}");
    parsed.problems[0].clone()
}

// The outputs measured from Qwen2.5-Coder-0.5B (notes, section 5).

#[test]
fn qwen_fenced_run_shell_call() {
    let output = r#"```json {"name":"run_shell","arguments":{"command":"cargo test"}}```"#;
    assert_eq!(parse(output, TOOLS), calls_only(vec![call("run_shell", json!({"command": "cargo test"}))]));
}

#[test]
fn qwen_fenced_read_file_call() {
    let output = "```json\n{\n  \"name\": \"read_file\",\n  \"arguments\": {\n    \"path\": \"src/main.rs\"\n  }\n}\n```";
    assert_eq!(parse(output, TOOLS), calls_only(vec![call("read_file", json!({"path": "src/main.rs"}))]));
}

#[test]
fn qwen_wrong_name_is_a_problem() {
    let output = "```json\n{\"name\": \"src/main.rs\", \"arguments\": {\"path\": \"path/to/file\"}}\n```";
    let parsed = parse(output, TOOLS);
    assert_eq!(parsed.text, "", "the invalid call stays out of the answer");
    assert_eq!(parsed.problems, ["unknown tool `src/main.rs`; available: read_file, run_shell"]);
    assert!(parsed.calls.is_empty());
}

/// Policy: a valid call to an active tool is a call, even when the prompt
/// ("What is 2+2?") did not call for one; the parser cannot know intent.
#[test]
fn qwen_spurious_bare_call_is_still_a_call() {
    let output = r#"{"name": "read_file", "arguments": {"path": "example.txt"}}"#;
    assert_eq!(parse(output, TOOLS), calls_only(vec![call("read_file", json!({"path": "example.txt"}))]));
}

// Formats.

#[test]
fn hermes_tool_call_with_text_before_and_after() {
    let output = "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n</tool_call>\nDone.";
    let parsed = parse(output, TOOLS);
    assert_eq!(parsed.text, "Let me look.\n\nDone.");
    assert_eq!(parsed.calls, [call("read_file", json!({"path": "a.rs"}))]);
    assert!(parsed.problems.is_empty());
}

#[test]
fn several_tool_call_blocks_in_order() {
    let output = "<tool_call>{\"name\": \"run_shell\", \"arguments\": {\"command\": \"ls\"}}</tool_call>\n\
                  <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}</tool_call>";
    let parsed = parse(output, TOOLS);
    assert_eq!(
        parsed.calls,
        [call("run_shell", json!({"command": "ls"})), call("read_file", json!({"path": "b"}))]
    );
    assert_eq!(parsed.text, "");
}

#[test]
fn smollm2_list_in_tool_call() {
    let output = "<tool_call>[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}, \
                  {\"name\": \"run_shell\", \"arguments\": {\"command\": \"pwd\"}}]</tool_call>";
    assert_eq!(
        parse(output, TOOLS),
        calls_only(vec![
            call("read_file", json!({"path": "a"})),
            call("run_shell", json!({"command": "pwd"}))
        ])
    );
}

#[test]
fn llama_parameters_key_and_string_arguments() {
    let output = r#"{"name": "run_shell", "parameters": {"command": "ls"}}"#;
    assert_eq!(parse(output, TOOLS).calls, [call("run_shell", json!({"command": "ls"}))]);
    let output = r#"<tool_call>{"name": "run_shell", "arguments": "{\"command\": \"ls -l\"}"}</tool_call>"#;
    assert_eq!(parse(output, TOOLS).calls, [call("run_shell", json!({"command": "ls -l"}))]);
    let output = r#"<tool_call>{"name": "run_shell", "arguments": "ls -l"}</tool_call>"#;
    assert!(single_problem(output).contains("`arguments` is a string that is not a JSON object"));
}

#[test]
fn bare_calls_at_the_end_of_text() {
    let output = "I'll run it.\n{\"name\": \"run_shell\", \"arguments\": {\"command\": \"ls\"}}\n";
    let parsed = parse(output, TOOLS);
    assert_eq!(parsed.text, "I'll run it.");
    assert_eq!(parsed.calls, [call("run_shell", json!({"command": "ls"}))]);

    let list = "[{\"name\": \"run_shell\", \"arguments\": {}}, {\"name\": \"read_file\", \"arguments\": {}}]";
    assert_eq!(parse(list, TOOLS).calls.len(), 2);
    let in_a_row =
        "{\"name\": \"run_shell\", \"arguments\": {}}\n{\"name\": \"read_file\", \"arguments\": {}}";
    assert_eq!(parse(in_a_row, TOOLS).calls.len(), 2);

    // A mention earlier in the text is not a call; only JSON that ends the output is.
    let output = "Write {\"name\": \"run_shell\", \"arguments\": {}} to call it. Ok?";
    assert_eq!(parse(output, TOOLS), text_only(output));
}

#[test]
fn bare_call_with_markup_inside_its_strings() {
    let content = "<think>x</think> ```rust\\nfn main() {}\\n``` <tool_call>";
    let output = format!("{{\"name\": \"run_shell\", \"arguments\": {{\"command\": \"echo '{content}'\"}}}}");
    let parsed = parse(&output, TOOLS);
    assert_eq!(
        parsed.calls,
        [call("run_shell", json!({"command": format!("echo '{}'", content.replace("\\n", "\n"))}))]
    );
    assert_eq!((parsed.text.as_str(), parsed.reasoning.as_str()), ("", ""));
}

#[test]
fn stray_closing_tag_after_bare_call() {
    let output = "{\"name\": \"run_shell\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n";
    assert_eq!(parse(output, TOOLS), calls_only(vec![call("run_shell", json!({"command": "ls"}))]));
}

#[test]
fn whitespace_around_removed_markup_collapses() {
    let call = "```json\n{\"name\": \"run_shell\", \"arguments\": {}}\n```";
    assert_eq!(parse(&format!("Sure!\n\n{call}\n\nThis runs it."), TOOLS).text, "Sure!\n\nThis runs it.");
    assert_eq!(parse(&format!("Here: {call} done"), TOOLS).text, "Here: done");
    assert_eq!(parse(&format!("One\n{call}two"), TOOLS).text, "One\ntwo");
    assert_eq!(parse("a<think>x</think>b", TOOLS).text, "ab");
}

#[test]
fn unlabelled_fence_and_fenced_tags() {
    let output = "```\n{\"name\": \"run_shell\", \"arguments\": {\"command\": \"ls\"}}\n```";
    assert_eq!(parse(output, TOOLS).calls, [call("run_shell", json!({"command": "ls"}))]);
    let output =
        "Sure.\n```xml\n<tool_call>\n{\"name\": \"run_shell\", \"arguments\": {}}\n</tool_call>\n```\nBye.";
    let parsed = parse(output, TOOLS);
    assert_eq!(parsed.calls, [call("run_shell", json!({}))]);
    assert_eq!(parsed.text, "Sure.\n\nBye.");
    let output = "<tool_call>\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}\n```\n</tool_call>";
    assert_eq!(parse(output, TOOLS).calls, [call("read_file", json!({"path": "x"}))]);
}

#[test]
fn function_tags() {
    let output = "<function=run_shell>{\"command\": \"ls\"}</function>";
    assert_eq!(parse(output, TOOLS), calls_only(vec![call("run_shell", json!({"command": "ls"}))]));
    let output = "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/lib.rs\n</parameter>\n</function>\n</tool_call>";
    assert_eq!(parse(output, TOOLS), calls_only(vec![call("read_file", json!({"path": "src/lib.rs"}))]));
}

#[test]
fn unclosed_tool_call_at_the_end() {
    let output = "Checking.\n<tool_call>\n{\"name\": \"run_shell\", \"arguments\": {\"command\": \"ls\"}}\n";
    let parsed = parse(output, TOOLS);
    assert_eq!(parsed.calls, [call("run_shell", json!({"command": "ls"}))]);
    assert_eq!(parsed.text, "Checking.");

    let cut = "<tool_call>\n{\"name\": \"run_shell\", \"arguments\": {\"comm";
    assert!(single_problem(cut).starts_with("incomplete tool call: the output ended inside <tool_call>"));
    assert!(single_problem("<tool_call>").starts_with("incomplete tool call"));
    let bare_cut = "{\"name\": \"run_shell\", \"arguments\": {\"command\": \"ls";
    assert!(single_problem(bare_cut).starts_with("incomplete tool call"));
    assert_eq!(parse(bare_cut, TOOLS).text, "");
    let fence_cut = "```json\n{\"name\": \"run_shell\", \"arguments\": {";
    assert!(single_problem(fence_cut).starts_with("incomplete tool call"));
}

#[test]
fn think_blocks_become_reasoning() {
    let output = "<think>\nThe user wants files.\n</think>\n\n<tool_call>{\"name\": \"run_shell\", \"arguments\": {\"command\": \"ls\"}}</tool_call>";
    let parsed = parse(output, TOOLS);
    assert_eq!(parsed.reasoning, "The user wants files.");
    assert_eq!(parsed.calls, [call("run_shell", json!({"command": "ls"}))]);
    assert_eq!(parsed.text, "");

    // A call written inside reasoning is not made.
    let parsed = parse("<think>maybe <tool_call>{\"name\": \"run_shell\"}</tool_call></think>Four.", TOOLS);
    assert_eq!((parsed.text.as_str(), parsed.calls.len()), ("Four.", 0));
    assert!(parsed.reasoning.contains("<tool_call>"));

    // Unclosed: the rest is reasoning. Empty (thinking switched off): nothing.
    let parsed = parse("<think>still thinking", TOOLS);
    assert_eq!((parsed.text.as_str(), parsed.reasoning.as_str()), ("", "still thinking"));
    assert_eq!(parse("<think>\n\n</think>\n\nFour.", TOOLS), text_only("Four."));
}

#[test]
fn json_that_is_not_a_call_stays_text() {
    for output in [
        "```json\n{\"name\": \"Alice\", \"age\": 30}\n```",
        "{\"name\": \"Alice\", \"age\": 30}",
        "Here:\n```json\n[{\"name\": \"a\"}, {\"name\": \"b\"}]\n```\nDone.",
        "```json\n{\"users\": [{\"name\": \"x\", \"arguments\": {}}]}\n```",
        "```python\nprint({\"name\": \"run_shell\", \"arguments\": {}})\n```",
        "[1, 2, 3]",
        "a < b and `x` and ``y``",
    ] {
        assert_eq!(parse(output, TOOLS), text_only(output), "{output}");
    }
}

#[test]
fn invalid_json_in_tool_call_is_a_problem() {
    let problem =
        single_problem("<tool_call>{\"name\": \"run_shell\", \"arguments\": {command: ls}}</tool_call>");
    assert!(
        problem.starts_with(
            "invalid tool call: the content of <tool_call> is not valid JSON (key must be a string"
        ),
        "{problem}"
    );
    let problem = single_problem("<tool_call>run_shell(command=\"ls\")</tool_call>");
    assert!(problem.contains("not valid JSON"), "{problem}");
    let problem = single_problem("<tool_call>{\"arguments\": {}}</tool_call>");
    assert!(problem.contains("needs a string `name`"), "{problem}");
    let problem = single_problem("<tool_call>{\"name\": \"delete_all\", \"arguments\": {}}</tool_call>");
    assert_eq!(problem, "unknown tool `delete_all`; available: read_file, run_shell");
    let problem = single_problem("```json\n{\"name\": \"run_shell\", \"arguments\": {\"a\": 1,}}\n```");
    assert!(problem.contains("```json block is not valid JSON"), "{problem}");
    let problem = single_problem("<tool_call></tool_call>");
    assert!(problem.starts_with("empty <tool_call>"), "{problem}");
}

#[test]
fn no_tools_means_every_call_is_a_problem() {
    let parsed = parse("<tool_call>{\"name\": \"run_shell\", \"arguments\": {}}</tool_call>", &[]);
    assert_eq!(parsed.problems, ["unknown tool `run_shell`; available: none"]);
}

// Streaming.

#[test]
fn safe_prefix_holds_back_markup() {
    let cases: &[(&str, usize)] = &[
        ("Hello world", 11),
        ("Hello <tool", 6),
        ("Hello <", 6),
        ("Hello <b>bold</b>", 17),
        ("Let me <tool_call>{\"name\"", 7),
        ("<think>hmm", 0),
        ("So ``", 3),
        ("So ```json\n{\"na", 3),
        ("So ```rust\nfn main() {}", 23),
        ("So ```json\n{\"users\": 1}", 23),
        ("x = {\"a\": 1}", 12),
        ("x = {", 4),
        ("x = [1, {", 8),
        ("Call: {\"name\": \"run_shell\"", 6),
        ("é<", 2),
    ];
    for &(output, expected) in cases {
        assert_eq!(safe_text_prefix(output), expected, "{output:?}");
    }
}

#[test]
fn leading_reasoning_can_be_streamed_past() {
    let output = "\n<think>plan</think>\nThe answer is 4. <tool";
    let end = leading_reasoning_end(output).unwrap();
    assert_eq!(&output[end..], "\nThe answer is 4. <tool");
    assert_eq!(&output[end..][..safe_text_prefix(&output[end..])], "\nThe answer is 4. ");
    assert_eq!(leading_reasoning_end("<think>open"), None);
    assert_eq!(leading_reasoning_end("text <think>x</think>"), None);
    assert_eq!(parse(output, TOOLS).text, parse(&output[end..], TOOLS).text);
}

#[test]
fn triggers_are_where_calls_start() {
    for trigger in CALL_TRIGGERS {
        assert_eq!(safe_text_prefix(&format!("ok {trigger}")), 3, "{trigger}");
    }
}

// Properties.

/// Outputs a model might write, to cut at random places.
const SAMPLES: &[&str] = &[
    "```json {\"name\":\"run_shell\",\"arguments\":{\"command\":\"cargo test\"}}```",
    "<think>\nplan é\n</think>\nSure ✓.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>",
    "Text first.\n{\"name\": \"run_shell\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}",
    "<tool_call>[{\"name\": \"read_file\", \"arguments\": {}}, {\"name\": \"x\", \"arguments\": {}}]</tool_call> after",
    "```xml\n<tool_call>\n<function=run_shell>\n<parameter=command>\nls -l\n</parameter>\n</function>\n</tool_call>\n```",
    "Data:\n```json\n{\"name\": \"Alice\", \"tags\": [\"a\", \"b\"]}\n```\nand code ```rust\nfn f() -> Vec<u8> { vec![] }\n```",
    "a < b, `c`, [1, {\"x\": 2}] <b>ok</b> <function=run_shell>{\"command\": \"pwd\"}</function>",
];

/// Pieces that recombine into markup-heavy strings.
const PIECES: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<function=run_shell>",
    "</function>",
    "<parameter=command>",
    "</parameter>",
    "```",
    "```json",
    "\n",
    " ",
    "{",
    "}",
    "[",
    "]",
    "\"name\"",
    "\"arguments\"",
    ":",
    ",",
    "\"run_shell\"",
    "\"read_file\"",
    "\"x\"",
    "é",
    "text",
    "<",
    "`",
    "{\"name\": \"run_shell\", \"arguments\": {\"command\": \"ls\"}}",
    "{\"name\": \"nope\", \"arguments\": {}}",
    "{\"x\": [1]}",
    "\\\"",
];

fn markupish() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..24).prop_map(|pieces| pieces.concat())
}

fn cut(s: &str, at: usize) -> &str {
    let mut at = at % (s.len() + 1);
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[..at]
}

/// What holds for every output: parse does not panic, the safe prefix is a
/// char boundary, never inside a marker, and never changed by parse.
fn check(output: &str) {
    let parsed = parse(output, TOOLS);
    let safe = safe_text_prefix(output);
    assert!(safe <= output.len() && output.is_char_boundary(safe), "{output:?}: {safe}");
    let streamed = &output[..safe];
    for marker in ["<tool_call>", "<think>", "<function="] {
        assert!(!streamed.contains(marker), "{output:?}: {streamed:?}");
    }
    assert!(
        parsed.text.starts_with(streamed.trim()),
        "{output:?}: streamed {streamed:?}, text {:?}",
        parsed.text
    );
    for call in &parsed.calls {
        assert!(TOOLS.contains(&call.name.as_str()) && call.arguments.is_object(), "{call:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_strings_never_panic(output in any::<String>()) {
        check(&output);
    }

    #[test]
    fn markup_soup_never_panics(output in markupish()) {
        check(&output);
    }

    #[test]
    fn cuts_of_valid_outputs(sample in prop::sample::select(SAMPLES), a in any::<usize>(), b in any::<usize>()) {
        let (short, long) = if cut(sample, a).len() <= cut(sample, b).len() {
            (cut(sample, a), cut(sample, b))
        } else {
            (cut(sample, b), cut(sample, a))
        };
        check(short);
        check(long);
        // Streamed text is never taken back as the output grows.
        prop_assert!(safe_text_prefix(short) <= safe_text_prefix(long), "{short:?} / {long:?}");
    }

    #[test]
    fn safe_prefix_only_grows(output in markupish(), a in any::<usize>()) {
        let short = cut(&output, a);
        prop_assert!(safe_text_prefix(short) <= safe_text_prefix(&output), "{short:?} / {output:?}");
    }
}
