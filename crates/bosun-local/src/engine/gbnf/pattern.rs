//! A string schema's `pattern` as GBNF over the string's JSON text (its
//! quotes, and `"`, `\` and control characters escaped), through
//! regex-syntax's parsed form of the expression.
//!
//! Held: patterns anchored with `^` (with or without `$`: without it, any
//! text may follow), built of literals, classes, groups, alternatives and
//! repetitions. Not held (`None`, so the string is free): a pattern without
//! `^` (a match may start anywhere), assertions inside (`\b`, a `^` in
//! the middle), and what regex-syntax does not parse (look-around,
//! back-references).

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use super::class_char;
use crate::engine::quote::gbnf_literal;

/// Ranges of a class above which it is taken as any character: a grammar
/// class is scanned range by range at every token.
const MAX_RANGES: usize = 64;

/// The GBNF of a JSON string matching `pattern`, using the `char` rule, or
/// `None` when the pattern cannot be held.
pub(super) fn to_gbnf(pattern: &str) -> Option<String> {
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    let mut parts: Vec<&Hir> = match hir.kind() {
        HirKind::Concat(parts) => parts.iter().collect(),
        _ => vec![&hir],
    };
    if parts.first().map(|p| p.kind()) != Some(&HirKind::Look(Look::Start)) {
        return None;
    }
    parts.remove(0);
    let anchored_end = parts.last().map(|p| p.kind()) == Some(&HirKind::Look(Look::End));
    if anchored_end {
        parts.pop();
    }
    let mut body = Vec::with_capacity(parts.len() + 2);
    body.push(gbnf_literal("\""));
    for part in parts {
        body.push(expression(part)?);
    }
    if !anchored_end {
        body.push("char*".to_owned());
    }
    body.push(gbnf_literal("\""));
    Some(body.join(" "))
}

fn expression(hir: &Hir) -> Option<String> {
    Some(match hir.kind() {
        HirKind::Empty => "\"\"".to_owned(),
        HirKind::Literal(literal) => {
            let text = std::str::from_utf8(&literal.0).ok()?;
            gbnf_literal(&json_escaped(text))
        }
        HirKind::Class(Class::Unicode(class)) => {
            let ranges: Vec<(char, char)> = class.ranges().iter().map(|r| (r.start(), r.end())).collect();
            character_class(&ranges)
        }
        HirKind::Class(Class::Bytes(class)) => {
            let ranges: Vec<(char, char)> = class
                .ranges()
                .iter()
                .filter(|r| r.start() < 0x80)
                .map(|r| (char::from(r.start()), char::from(r.end().min(0x7F))))
                .collect();
            character_class(&ranges)
        }
        HirKind::Look(_) => return None,
        HirKind::Repetition(repetition) => {
            let sub = expression(&repetition.sub)?;
            let count = match (repetition.min, repetition.max) {
                (0, None) => "*".to_owned(),
                (1, None) => "+".to_owned(),
                (0, Some(1)) => "?".to_owned(),
                (min, None) => format!("{{{min},}}"),
                (min, Some(max)) if min == max => format!("{{{min}}}"),
                (min, Some(max)) => format!("{{{min},{max}}}"),
            };
            format!("({sub}){count}")
        }
        HirKind::Capture(capture) => format!("({})", expression(&capture.sub)?),
        HirKind::Concat(parts) => {
            let parts: Option<Vec<String>> = parts.iter().map(expression).collect();
            parts?.join(" ")
        }
        HirKind::Alternation(alternatives) => {
            let alternatives: Option<Vec<String>> = alternatives.iter().map(expression).collect();
            format!("({})", alternatives?.join(" | "))
        }
    })
}

/// `text` as it is written inside a JSON string.
fn json_escaped(text: &str) -> String {
    let quoted = serde_json::Value::String(text.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// The JSON text of one character from `ranges`: the ones written as they
/// are in a class, the ones JSON escapes as their escapes.
fn character_class(ranges: &[(char, char)]) -> String {
    let covers = |c: char| ranges.iter().any(|(start, end)| *start <= c && c <= *end);
    let printable_all = ranges.iter().any(|(start, end)| *start <= ' ' && *end == char::MAX);
    if printable_all || ranges.len() > MAX_RANGES {
        return "char".to_owned();
    }
    let mut plain = String::new();
    for (start, end) in ranges {
        for (from, to) in without_escaped(*start, *end) {
            plain.push_str(&class_char(from));
            if to != from {
                plain.push('-');
                plain.push_str(&class_char(to));
            }
        }
    }
    let mut alternatives = Vec::new();
    if !plain.is_empty() {
        alternatives.push(format!("[{plain}]"));
    }
    for (c, escape) in [('"', "\\\""), ('\\', "\\\\"), ('\n', "\\n"), ('\t', "\\t"), ('\r', "\\r")] {
        if covers(c) {
            alternatives.push(gbnf_literal(escape));
        }
    }
    match alternatives.len() {
        0 => r"[^\x00-\x{10FFFF}]".to_owned(),
        1 => alternatives.remove(0),
        _ => format!("({})", alternatives.join(" | ")),
    }
}

/// The range `start..=end` less the characters JSON must escape (`"`, `\`,
/// controls).
fn without_escaped(start: char, end: char) -> Vec<(char, char)> {
    let mut out = Vec::new();
    let mut from = start as u32;
    let end = end as u32;
    for hole in [0x00..=0x1F, 0x22..=0x22, 0x5C..=0x5C, 0x7F..=0x7F] {
        let (hole_start, hole_end) = (*hole.start(), *hole.end());
        if from > end {
            break;
        }
        if hole_end < from || hole_start > end {
            continue;
        }
        if hole_start > from {
            out.push((from, hole_start - 1));
        }
        from = from.max(hole_end + 1);
    }
    if from <= end {
        out.push((from, end));
    }
    out.into_iter().filter_map(|(a, b)| Some((char::from_u32(a)?, char::from_u32(b)?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anchored_pattern_becomes_a_quoted_sequence() {
        assert_eq!(to_gbnf("^[a-z]+-[0-9]{2,3}$").as_deref(), Some(r#""\"" ([a-z])+ "-" ([0-9]){2,3} "\"""#));
    }

    #[test]
    fn without_an_end_anchor_any_text_may_follow() {
        assert_eq!(to_gbnf("^v[0-9]").as_deref(), Some(r#""\"" "v" [0-9] char* "\"""#));
    }

    #[test]
    fn unanchored_or_asserting_patterns_are_not_held() {
        assert_eq!(to_gbnf("[a-z]+"), None);
        assert_eq!(to_gbnf(r"^\bword$"), None);
        assert_eq!(to_gbnf("^(?=x)"), None, "look-ahead does not parse");
    }

    #[test]
    fn quotes_and_backslashes_are_written_escaped() {
        assert_eq!(to_gbnf(r#"^a"b$"#).as_deref(), Some(r#""\"" "a\\\"b" "\"""#));
        assert_eq!(character_class(&[('!', '#')]), r#"([!#] | "\\\"")"#);
        assert_eq!(character_class(&[('[', ']')]), r#"([\[\]] | "\\\\")"#);
    }

    #[test]
    fn any_character_is_the_char_rule() {
        assert_eq!(to_gbnf("^.*$").as_deref(), Some(r#""\"" (char)* "\"""#));
    }
}
