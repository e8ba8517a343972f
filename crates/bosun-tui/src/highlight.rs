//! Syntax highlighting of fenced code by its language, with syntect's
//! bundled grammars. Scopes map to the terminal's named colours (no theme,
//! so nothing RGB), which read on light and dark backgrounds alike. The
//! grammars load on first use, so start-up does not pay for them.

use std::sync::LazyLock;

use ratatui::style::Style;
use ratatui::text::Span;
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};

use crate::text::clean;
use crate::theme::Theme;

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);

/// What a scope is shown as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Comment,
    Text,
    Number,
    Keyword,
    Function,
    Type,
}

/// Scope prefixes, most specific first (the innermost scope that matches
/// one decides).
static KINDS: LazyLock<Vec<(Scope, Kind)>> = LazyLock::new(|| {
    [
        ("comment", Kind::Comment),
        ("string", Kind::Text),
        ("constant.character.escape", Kind::Keyword),
        ("constant", Kind::Number),
        ("keyword", Kind::Keyword),
        ("storage", Kind::Keyword),
        ("entity.name.function", Kind::Function),
        ("support.function", Kind::Function),
        ("variable.function", Kind::Function),
        ("entity.name", Kind::Type),
        ("support.type", Kind::Type),
        ("support.class", Kind::Type),
    ]
    .into_iter()
    .filter_map(|(name, kind)| Scope::new(name).ok().map(|scope| (scope, kind)))
    .collect()
});

fn style_of(kind: Kind, theme: Theme) -> Style {
    match kind {
        Kind::Comment => theme.dim().patch(theme.italic()),
        Kind::Text => theme.green(),
        Kind::Number => theme.cyan(),
        Kind::Keyword => theme.magenta(),
        Kind::Function => theme.blue(),
        Kind::Type => theme.yellow(),
    }
}

fn style_for(stack: &ScopeStack, theme: Theme) -> Style {
    for scope in stack.as_slice().iter().rev() {
        if let Some((_, kind)) = KINDS.iter().find(|(prefix, _)| prefix.is_prefix_of(*scope)) {
            return style_of(*kind, theme);
        }
    }
    Style::new()
}

fn syntax(lang: &str) -> Option<&'static SyntaxReference> {
    let token = lang.split([',', ' ', '{']).next().unwrap_or_default().trim();
    if token.is_empty() {
        return None;
    }
    SYNTAXES.find_syntax_by_token(token).or_else(|| SYNTAXES.find_syntax_by_extension(token))
}

/// The lines of `code` as spans, coloured by `lang` when it is known and
/// colour is on; plain otherwise. A grammar that fails mid-way leaves the
/// rest plain.
pub(crate) fn highlight(code: &str, lang: &str, theme: Theme) -> Vec<Vec<Span<'static>>> {
    let plain = |line: &str| vec![Span::raw(clean(line))];
    let source: Vec<&str> = code.split_inclusive('\n').collect();
    let Some(syntax) = (if theme.color { syntax(lang) } else { None }) else {
        return source.iter().map(|l| plain(l.trim_end_matches('\n'))).collect();
    };
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut failed = false;
    let mut out = Vec::with_capacity(source.len());
    for line in source {
        let shown = line.trim_end_matches('\n');
        if failed {
            out.push(plain(shown));
            continue;
        }
        let Ok(ops) = state.parse_line(line, &SYNTAXES) else {
            failed = true;
            out.push(plain(shown));
            continue;
        };
        let mut spans = Vec::new();
        let mut at = 0;
        for (pos, op) in ops {
            let pos = pos.min(shown.len());
            if pos > at {
                if let Some(piece) = shown.get(at..pos) {
                    spans.push(Span::styled(clean(piece), style_for(&stack, theme)));
                }
                at = pos;
            }
            if stack.apply(&op).is_err() {
                failed = true;
                break;
            }
        }
        if let Some(rest) = shown.get(at..).filter(|rest| !rest.is_empty()) {
            spans.push(Span::styled(clean(rest), style_for(&stack, theme)));
        }
        out.push(spans);
    }
    out
}

#[cfg(test)]
mod tests {
    use ratatui::style::Color;

    use super::*;

    #[test]
    fn rust_keywords_strings_and_comments_get_named_colours() {
        let lines =
            highlight("fn main() {\n    let s = \"hi\"; // note\n}\n", "rust", Theme::new(true, None));
        assert_eq!(lines.len(), 3);
        let find = |text: &str| lines.iter().flatten().find(|s| s.content.contains(text)).map(|s| s.style);
        assert_eq!(find("fn").and_then(|s| s.fg), Some(Color::Magenta));
        assert_eq!(find("hi").and_then(|s| s.fg), Some(Color::Green));
        assert!(find("note").is_some_and(|s| s.add_modifier.contains(ratatui::style::Modifier::DIM)));
        let text: String = lines[1].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "    let s = \"hi\"; // note");
    }

    #[test]
    fn no_colour_or_an_unknown_language_is_plain() {
        for (lang, theme) in [("rust", Theme::new(false, None)), ("no-such-lang", Theme::new(true, None))] {
            let lines = highlight("fn main() {}\n", lang, theme);
            assert!(lines.iter().flatten().all(|s| s.style == Style::new()), "{lang}");
        }
    }

    #[test]
    fn controls_in_code_are_shown() {
        let lines = highlight("let x = \"\x1b[2J\";\n", "rust", Theme::new(true, None));
        let text: String = lines[0].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "let x = \"\\x1b[2J\";");
    }
}
