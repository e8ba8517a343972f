//! A response body as text for the model: HTML as Markdown (through
//! `htmd`), text and JSON as they are, anything else refused by name.

/// How a body of some media type is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reading {
    /// HTML, turned into Markdown.
    Html,
    /// Text or JSON, passed through.
    Text,
}

/// How to read `media_type` (sniffing the body when there is none), or why not.
pub(crate) fn reading(media_type: Option<&str>, body: &[u8]) -> Result<Reading, String> {
    let Some(media_type) = media_type else {
        let start = String::from_utf8_lossy(&body[..body.len().min(512)]).trim_start().to_ascii_lowercase();
        if start.starts_with("<!doctype html") || start.starts_with("<html") {
            return Ok(Reading::Html);
        }
        return match std::str::from_utf8(body) {
            Ok(_) => Ok(Reading::Text),
            // A body cut at the cap may end inside a character.
            Err(error) if error.error_len().is_none() => Ok(Reading::Text),
            Err(_) => Err("the response has no content type and is not UTF-8 text".to_owned()),
        };
    };
    match media_type {
        "text/html" | "application/xhtml+xml" => Ok(Reading::Html),
        "application/json" | "application/xml" | "application/javascript" | "application/x-ndjson" => {
            Ok(Reading::Text)
        }
        text if text.starts_with("text/") || text.ends_with("+json") || text.ends_with("+xml") => {
            Ok(Reading::Text)
        }
        other => Err(format!(
            "the response is `{other}`, which web_fetch does not read: it reads HTML (as Markdown), text and JSON"
        )),
    }
}

/// Tags whose content is never text a reader sees.
const SKIPPED: &[&str] =
    &["head", "script", "style", "noscript", "template", "iframe", "svg", "canvas", "form"];

/// The deepest nesting converted as HTML (browsers' parsers stop at 512);
/// see [`crate::nesting`].
pub(crate) const MAX_DEPTH: usize = 256;

/// The stack of the thread a conversion runs on: the converter recurses a
/// frame per level, a few kilobytes each (more in a debug build), and the
/// parser's implied levels make a page up to a few times [`MAX_DEPTH`]
/// deep. Reserved, not touched, beyond what a page uses.
pub(crate) const CONVERT_STACK_BYTES: usize = 32 << 20;

/// The body as the model gets it.
pub(crate) fn to_text(reading: Reading, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match reading {
        Reading::Text => text.into_owned(),
        Reading::Html if crate::nesting::deeper_than(&text, MAX_DEPTH) => format!(
            "[the page nests its elements more than {MAX_DEPTH} deep, so it is shown as plain text]\n\n{}",
            crate::nesting::plain_text(&text)
        ),
        Reading::Html => {
            let converter = htmd::HtmlToMarkdown::builder().skip_tags(SKIPPED.to_vec()).build();
            // htmd's parser (html5ever) accepts any input; its error is an
            // I/O one it never meets on a string. Fall back to the text then.
            converter.convert(&text).map(|markdown| tidy(&markdown)).unwrap_or_else(|_| text.into_owned())
        }
    }
}

/// Runs of blank lines down to one.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        blank = if line.is_empty() { blank + 1 } else { 0 };
        if blank < 2 {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts_or_styles() {
        let html = b"<html><head><title>t</title><style>p{}</style></head><body>\
            <h1>Hello</h1><script>alert(1)</script><p>Some <b>bold</b> and a \
            <a href=\"https://example.org/\">link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>";
        let markdown = to_text(Reading::Html, html);
        assert!(markdown.starts_with("# Hello"), "{markdown}");
        assert!(markdown.contains("Some **bold** and a [link](https://example.org/)."), "{markdown}");
        assert!(markdown.contains("*   one") || markdown.contains("- one"), "{markdown}");
        assert!(!markdown.contains("alert") && !markdown.contains("p{}"), "{markdown}");
    }

    #[test]
    fn a_page_nested_past_the_bound_is_plain_text_and_converts_on_a_small_stack() {
        let deep = format!("<h1>Deep</h1>{}<b>x</b>{}", "<div>".repeat(100_000), "</div>".repeat(100_000));
        // 256 KiB: far less than the conversion thread's, so no parse or
        // walk of the deep tree can have happened.
        let converted = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || to_text(Reading::Html, deep.as_bytes()))
            .map(|thread| thread.join());
        let Ok(Ok(text)) = converted else { panic!("the conversion failed") };
        assert_eq!(
            text,
            "[the page nests its elements more than 256 deep, so it is shown as plain text]\n\nDeep\nx"
        );
        let bounded = format!(
            "{}y{}",
            "<div><ul><li><table><tr><td>".repeat(60),
            "</td></tr></table></li></ul></div>".repeat(60)
        );
        let converted = std::thread::Builder::new()
            .stack_size(CONVERT_STACK_BYTES)
            .spawn(move || to_text(Reading::Html, bounded.as_bytes()))
            .map(|thread| thread.join());
        assert!(matches!(converted, Ok(Ok(ref text)) if text.contains('y')), "{converted:?}");
    }

    #[test]
    fn media_types_decide_and_binary_is_refused() {
        assert_eq!(reading(Some("text/html"), b""), Ok(Reading::Html));
        assert_eq!(reading(Some("application/json"), b""), Ok(Reading::Text));
        assert_eq!(reading(Some("application/vnd.api+json"), b""), Ok(Reading::Text));
        assert_eq!(reading(Some("text/plain"), b""), Ok(Reading::Text));
        assert_eq!(reading(None, b"  <!DOCTYPE html><p>x"), Ok(Reading::Html));
        assert_eq!(reading(None, b"plain words"), Ok(Reading::Text));
        let refused = reading(Some("image/png"), b"").err().unwrap_or_default();
        assert!(refused.contains("`image/png`") && refused.contains("HTML"), "{refused}");
        assert!(reading(None, &[0xff, 0xfe, 0x00, 0x41]).is_err());
    }
}
