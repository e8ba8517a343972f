//! How deep a page nests its elements, read from the markup before any
//! parse, and a page's text without its markup. html5ever builds the tree
//! and htmd walks it by recursion, a stack frame per level: a hostile page
//! nested thousands deep would overflow the stack and abort bosun (and takes
//! html5ever minutes). A page deeper than the bound is shown as its text.
//!
//! The count is lexical and errs deep: an element counts until its end tag
//! (or an end tag of an element opened before it) and `<x/>` counts as the
//! parser reads it, as a start tag. Elements whose end tags the parser
//! implies when a sibling starts (`p`, `li`, table cells, …) do not count,
//! so unclosed lists and tables do not look deep; the parser's implied
//! levels (a table's body and row) make the real depth a few times the
//! count at most, which the converter's stack is sized for.

/// Elements with no content.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
    "wbr",
];
/// Elements a sibling's start closes (their end tag may be left out).
const IMPLIED_END: &[&str] = &[
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "rb", "rt", "rp", "tbody", "thead",
    "tfoot", "colgroup", "caption",
];
/// Elements whose content is text up to their end tag, not markup.
const RAW: &[&str] = &["script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes"];
/// Elements whose content a reader never sees.
const HIDDEN: &[&str] = &["title", "script", "style", "noscript", "template", "iframe", "svg", "canvas"];
/// Elements that begin a new line of text.
const BLOCK: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "figure",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "tr",
    "ul",
];

/// One tag of the markup; `name` is empty for a comment, a doctype or a
/// processing instruction.
struct Tag<'a> {
    name: &'a str,
    closing: bool,
    /// Where the tag starts (its `<`) and ends (after its `>`).
    start: usize,
    end: usize,
}

/// The next tag at or after `at` in `lower` (the page lower-cased in
/// ASCII, so its byte offsets are the page's).
fn next_tag(lower: &str, mut at: usize) -> Option<Tag<'_>> {
    loop {
        let start = at + lower.get(at..)?.find('<')?;
        let rest = &lower[start + 1..];
        let until = |close: &str| rest.find(close).map_or(lower.len(), |e| start + 1 + e + close.len());
        if rest.starts_with("!--") {
            return Some(Tag { name: "", closing: false, start, end: until("-->") });
        }
        if rest.starts_with('!') || rest.starts_with('?') {
            return Some(Tag { name: "", closing: false, start, end: until(">") });
        }
        let closing = rest.starts_with('/');
        let body = if closing { &rest[1..] } else { rest };
        let len = body.bytes().take_while(u8::is_ascii_alphanumeric).count();
        if len == 0 || !body.as_bytes()[0].is_ascii_alphabetic() {
            // `a < b`: text, not a tag.
            at = start + 1;
            continue;
        }
        return Some(Tag { name: &body[..len], closing, start, end: until(">") });
    }
}

/// Where the raw text of a `name` element that starts at `at` ends (the
/// start of its end tag, or the end of the page).
fn raw_end(lower: &str, at: usize, name: &str) -> usize {
    let close = format!("</{name}");
    lower.get(at..).and_then(|rest| rest.find(&close)).map_or(lower.len(), |e| at + e)
}

/// Whether `html` nests its elements more than `max` deep.
pub(crate) fn deeper_than(html: &str, max: usize) -> bool {
    let lower = html.to_ascii_lowercase();
    let mut open: Vec<&str> = Vec::new();
    let mut at = 0;
    while let Some(tag) = next_tag(&lower, at) {
        at = tag.end;
        if tag.name.is_empty() {
            continue;
        }
        if tag.closing {
            if let Some(index) = open.iter().rposition(|name| *name == tag.name) {
                open.truncate(index);
            }
            continue;
        }
        if RAW.contains(&tag.name) {
            at = raw_end(&lower, at, tag.name);
        }
        if VOID.contains(&tag.name) || IMPLIED_END.contains(&tag.name) {
            continue;
        }
        open.push(tag.name);
        if open.len() > max {
            return true;
        }
    }
    false
}

/// The text of `html`: markup, comments and hidden elements left out, a
/// line for each block, the common entities decoded.
pub(crate) fn plain_text(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let mut text = String::new();
    let mut at = 0;
    while let Some(tag) = next_tag(&lower, at) {
        // Offsets sit next to ASCII `<` and `>`: character boundaries.
        text.push_str(html.get(at..tag.start).unwrap_or_default());
        at = tag.end;
        if !tag.closing && HIDDEN.contains(&tag.name) {
            at = if RAW.contains(&tag.name) {
                raw_end(&lower, at, tag.name)
            } else {
                let close = format!("</{}", tag.name);
                lower.get(at..).and_then(|rest| rest.find(&close)).map_or(lower.len(), |e| at + e)
            };
        }
        text.push(if BLOCK.contains(&tag.name) { '\n' } else { ' ' });
    }
    text.push_str(html.get(at..).unwrap_or_default());
    let decoded =
        [("&nbsp;", " "), ("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&amp;", "&")]
            .iter()
            .fold(text, |text, (entity, plain)| text.replace(entity, plain));
    let mut out = String::new();
    for line in decoded.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if !words.is_empty() {
            out.push_str(&words.join(" "));
            out.push('\n');
        }
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_open_elements_and_not_the_ones_a_sibling_closes() {
        let nested = |n: usize| format!("{}x{}", "<div>".repeat(n), "</div>".repeat(n));
        assert!(!deeper_than(&nested(10), 10) && deeper_than(&nested(11), 10));
        // Closed siblings, void elements, unclosed cells and items stay flat.
        let flat = format!(
            "<ul>{}</ul><table>{}</table>{}",
            "<li>a".repeat(500),
            "<tr><td>a<td>b".repeat(500),
            "<br><img src=x>".repeat(500)
        );
        assert!(!deeper_than(&flat, 10));
        assert!(!deeper_than(&"<p>a</p>".repeat(500), 2));
        // What a parser reads as start tags counts: `<div/>`, and divs among
        // end tags of elements never opened.
        assert!(deeper_than(&"<div/>".repeat(11), 10));
        assert!(deeper_than(&"<div></span></x>".repeat(11), 10));
        // An end tag closes what was opened after its element too.
        assert!(!deeper_than(&format!("{}</section>", "<section><b><i>").repeat(50), 5));
        // Markup inside comments and scripts is not markup.
        let hidden = format!("<!-- {} --><script>{}</script><p>ok", "<div>".repeat(50), "'<div>'".repeat(50));
        assert!(!deeper_than(&hidden, 10));
    }

    #[test]
    fn plain_text_keeps_what_a_reader_sees() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1><!-- note -->\
            <p>One &amp; <b>two</b> &lt;3</p><script>if (a < b) run()</script><ul><li>x<li>y</ul></body></html>";
        assert_eq!(plain_text(html), "Title\nOne & two <3\nx\ny");
    }
}
