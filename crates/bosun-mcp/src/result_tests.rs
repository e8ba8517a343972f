//! Unit tests of result mapping: each content kind, structured content and
//! the bounds.

use bosun_core::ContentPart;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use super::{MAX_IMAGES, MAX_TEXT, to_output};

fn map(result: Value) -> bosun_core::ToolOutput {
    let result: CallToolResult = serde_json::from_value(result).unwrap();
    to_output(result)
}

fn texts(output: &bosun_core::ToolOutput) -> Vec<String> {
    output
        .content
        .iter()
        .filter_map(|p| match p {
            ContentPart::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn each_content_kind_maps_to_text_or_an_image() {
    let output = map(json!({"content": [
        {"type": "text", "text": "hello"},
        {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
        {"type": "audio", "data": "AAAAAAAA", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
        {"type": "resource", "resource": {"uri": "file:///b.bin", "mimeType": "application/zip", "blob": "AAAA"}},
        {"type": "resource_link", "uri": "file:///c.md", "name": "c.md", "mimeType": "text/markdown", "description": "notes"},
    ]}));
    assert!(!output.is_error);
    assert!(output.content.contains(&ContentPart::image("image/png", vec![0x89, b'P', b'N', b'G'])));
    assert_eq!(
        texts(&output),
        [
            "hello",
            "[audio (audio/wav), 6 bytes: audio is not passed on]",
            "[resource file:///a.txt]\ninside",
            "[resource file:///b.bin (application/zip): 3 bytes of binary data, not shown]",
            "[resource link: c.md <file:///c.md> (text/markdown): notes]",
        ]
    );
}

#[test]
fn is_error_is_kept_and_an_empty_result_says_so() {
    let output = map(json!({"content": [{"type": "text", "text": "Tool x not found"}], "isError": true}));
    assert!(output.is_error);
    assert_eq!(texts(&output), ["Tool x not found"]);
    assert_eq!(texts(&map(json!({"content": []}))), ["(the tool returned no content)"]);
}

#[test]
fn structured_content_is_added_only_when_nothing_says_it() {
    let same_json = map(json!({
        "content": [{"type": "text", "text": "{\"t\":33,\"c\":\"Cloudy\"}"}],
        "structuredContent": {"c": "Cloudy", "t": 33},
    }));
    assert_eq!(texts(&same_json), ["{\"t\":33,\"c\":\"Cloudy\"}"]);

    // The filesystem server's shape: the text again, under a key.
    let wrapped = map(json!({
        "content": [{"type": "text", "text": "line one\nline two"}],
        "structuredContent": {"content": "line one\nline two"},
    }));
    assert_eq!(texts(&wrapped), ["line one\nline two"]);

    let repeats_blocks = map(json!({
        "content": [{"type": "image", "data": "iVBORw==", "mimeType": "image/png"}],
        "structuredContent": {"content": [{"type": "image", "data": "iVBORw==", "mimeType": "image/png"}]},
    }));
    assert!(texts(&repeats_blocks).is_empty(), "the image is not repeated as base64 text");

    let only_structured = map(json!({"content": [], "structuredContent": {"n": 2, "ok": true}}));
    assert_eq!(texts(&only_structured), ["{\"n\":2,\"ok\":true}"]);

    let more = map(json!({
        "content": [{"type": "text", "text": "done"}],
        "structuredContent": {"id": 41, "status": "done"},
    }));
    assert_eq!(texts(&more), ["done", "{\"id\":41,\"status\":\"done\"}"]);
}

#[test]
fn text_is_bounded_with_a_marker_saying_how_much_was_cut() {
    let big = "é".repeat(MAX_TEXT); // two bytes each
    let output = map(json!({"content": [
        {"type": "text", "text": big},
        {"type": "text", "text": "never shown"},
    ]}));
    let shown = texts(&output);
    let kept: usize = shown[..shown.len() - 1].iter().map(String::len).sum();
    assert_eq!(kept, MAX_TEXT);
    let total = 2 * MAX_TEXT + "never shown".len();
    assert_eq!(
        shown.last().unwrap(),
        &format!(
            "\n[… {} bytes cut: the result had {total} bytes of text, {MAX_TEXT} are shown]",
            total - MAX_TEXT
        )
    );
}

#[test]
fn images_past_the_budget_become_notes() {
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_IMAGES / 2 + 1]);
    let output = map(json!({"content": [
        {"type": "image", "data": data, "mimeType": "image/png"},
        {"type": "image", "data": data, "mimeType": "image/png"},
        {"type": "image", "data": "not base64!", "mimeType": "image/gif"},
    ]}));
    let images = output.content.iter().filter(|p| matches!(p, ContentPart::Image { .. })).count();
    assert_eq!(images, 1);
    let notes = texts(&output);
    assert!(notes[0].contains("left out"), "{notes:?}");
    assert_eq!(notes[1], "[image (image/gif): not valid base64, not shown]");
}
