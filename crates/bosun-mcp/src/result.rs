//! An MCP `tools/call` result as a bosun [`ToolOutput`]: text and images as
//! they are, audio, binary resources and resource links as short notes (the
//! core carries text and images only), `structuredContent` as JSON text when
//! no other content already says it, and the whole bounded: at most
//! [`MAX_TEXT`] bytes of text, cut with a marker that says how much was cut,
//! and at most [`MAX_IMAGES`] bytes of images.

use base64::Engine as _;
use bosun_core::{ContentPart, ToolOutput};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// Most bytes of text one result passes on.
pub const MAX_TEXT: usize = 64 * 1024;
/// Most bytes of images one result passes on.
pub const MAX_IMAGES: usize = 4 * 1024 * 1024;
/// Past this much text, whether structured content repeats it is not
/// checked leaf by leaf; the spec's advice (servers repeat it as text) is
/// trusted instead.
const DUPLICATE_CHECK_TEXT: usize = 1024 * 1024;
/// Most leaves of structured content checked against the text.
const DUPLICATE_CHECK_LEAVES: usize = 1024;

/// Maps a result; `is_error` comes from the server.
pub(crate) fn to_output(result: CallToolResult) -> ToolOutput {
    let is_error = result.is_error.unwrap_or(false);
    let mut out = Bounded::default();
    let structured = result
        .structured_content
        .filter(|s| !s.is_null() && !is_duplicated(s, &result.content))
        .map(|s| s.to_string());
    for block in result.content {
        match block {
            ContentBlock::Text(text) => out.text(text.text),
            ContentBlock::Image(image) => out.image(&image.mime_type, &image.data),
            ContentBlock::Audio(audio) => out.text(format!(
                "[audio ({}), {} bytes: audio is not passed on]",
                audio.mime_type,
                decoded_len(&audio.data)
            )),
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    out.text(format!("[resource {uri}]\n{text}"));
                }
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => out.text(format!(
                    "[resource {uri} ({}): {} bytes of binary data, not shown]",
                    mime_type.as_deref().unwrap_or("unknown type"),
                    decoded_len(&blob)
                )),
                _ => out.text("[a resource of a kind bosun does not know, not shown]".to_owned()),
            },
            ContentBlock::ResourceLink(link) => {
                let mut note = format!("[resource link: {} <{}>", link.name, link.uri);
                if let Some(mime) = &link.mime_type {
                    note.push_str(&format!(" ({mime})"));
                }
                if let Some(description) = &link.description {
                    note.push_str(&format!(": {description}"));
                }
                note.push(']');
                out.text(note);
            }
            // A content kind newer than this client.
            _ => out.text("[content of a kind bosun does not know, not shown]".to_owned()),
        }
    }
    if let Some(json) = structured {
        out.text(json);
    }
    ToolOutput::new(out.finish(), is_error)
}

/// Parts under the bounds, and what did not fit (also used for resources).
#[derive(Default)]
pub(crate) struct Bounded {
    parts: Vec<ContentPart>,
    text_kept: usize,
    text_total: usize,
    images_kept: usize,
}

impl Bounded {
    pub(crate) fn text(&mut self, text: String) {
        self.text_total += text.len();
        let room = MAX_TEXT - self.text_kept;
        if room == 0 {
            return;
        }
        let kept =
            if text.len() <= room { text } else { text[..floor_char_boundary(&text, room)].to_owned() };
        self.text_kept += kept.len();
        self.parts.push(ContentPart::text(kept));
    }

    pub(crate) fn image(&mut self, mime: &str, data: &str) {
        let decoded = base64::engine::general_purpose::STANDARD.decode(data.trim());
        match decoded {
            Ok(bytes) if self.images_kept + bytes.len() <= MAX_IMAGES => {
                self.images_kept += bytes.len();
                self.parts.push(ContentPart::image(mime, bytes));
            }
            Ok(bytes) => self.text(format!(
                "[image ({mime}), {} bytes: left out, the result's images passed {} MiB]",
                bytes.len(),
                MAX_IMAGES / (1024 * 1024)
            )),
            Err(_) => self.text(format!("[image ({mime}): not valid base64, not shown]")),
        }
    }

    pub(crate) fn finish(mut self) -> Vec<ContentPart> {
        if self.text_total > self.text_kept {
            let cut = self.text_total - self.text_kept;
            self.parts.push(ContentPart::text(format!(
                "\n[… {cut} bytes cut: the result had {} bytes of text, {} are shown]",
                self.text_total, self.text_kept
            )));
        }
        if self.parts.is_empty() {
            self.parts.push(ContentPart::text("(the tool returned no content)"));
        }
        self.parts
    }
}

/// The largest index `<= at` that starts a character.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len())).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0)
}

fn decoded_len(base64: &str) -> usize {
    base64.trim().len() / 4 * 3
}

/// Whether the other content already says what `structured` says: a text
/// part that is the same JSON, or every leaf found in the text or inside a
/// content block (the filesystem server repeats its blocks there).
fn is_duplicated(structured: &Value, content: &[ContentBlock]) -> bool {
    let texts: Vec<&str> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    if texts.iter().any(|t| serde_json::from_str::<Value>(t).is_ok_and(|v| v == *structured)) {
        return true;
    }
    let text = texts.join("\n");
    if text.len() > DUPLICATE_CHECK_TEXT {
        return true;
    }
    let blocks: Vec<Value> = content.iter().filter_map(|b| serde_json::to_value(b).ok()).collect();
    let mut check = Coverage { text: &text, blocks: &blocks, leaves: 0 };
    match check.covered(structured) {
        Some(covered) => covered,
        // Too big to check: trust the spec's advice when there is text.
        None => !text.is_empty(),
    }
}

struct Coverage<'a> {
    text: &'a str,
    blocks: &'a [Value],
    leaves: usize,
}

impl Coverage<'_> {
    /// `None` when the leaf budget ran out.
    fn covered(&mut self, value: &Value) -> Option<bool> {
        if self.blocks.contains(value) {
            return Some(true);
        }
        self.leaves += 1;
        if self.leaves > DUPLICATE_CHECK_LEAVES {
            return None;
        }
        Some(match value {
            Value::String(s) => !self.text.is_empty() && self.text.contains(s.as_str()),
            Value::Number(n) => self.text.contains(&n.to_string()),
            Value::Bool(_) | Value::Null => !self.text.is_empty(),
            Value::Array(items) => {
                for item in items {
                    if !self.covered(item)? {
                        return Some(false);
                    }
                }
                true
            }
            Value::Object(map) => {
                for item in map.values() {
                    if !self.covered(item)? {
                        return Some(false);
                    }
                }
                true
            }
        })
    }
}

#[cfg(test)]
#[path = "result_tests.rs"]
mod tests;
