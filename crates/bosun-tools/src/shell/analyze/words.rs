//! The text of shell words: quote removal (`'…'`, `"…"`, `$'…'`,
//! backslashes), the command substitutions left inside a token's text, and
//! the lexical tests the analysis makes of a word (globs and braces, literal
//! arithmetic, fixed variable names).

/// A word as it is being built: its text, the same text with quoted and
/// escaped characters replaced by `_` (where globs and braces are looked
/// for), and whether an expansion or substitution is part of it.
/// `splits` is set when an expansion outside double quotes is part of it
/// (word splitting may make it any number of words).
#[derive(Default)]
pub(super) struct Piece {
    pub(super) text: String,
    pub(super) skeleton: String,
    pub(super) expands: bool,
    pub(super) splits: bool,
}

impl Piece {
    pub(super) fn unquoted(text: &str) -> Self {
        Self { text: text.to_owned(), skeleton: text.to_owned(), ..Self::default() }
    }

    pub(super) fn quoted(text: String) -> Self {
        Self { skeleton: "_".repeat(text.chars().count()), text, ..Self::default() }
    }

    /// An expansion inside double quotes: one word, its text unknown.
    pub(super) fn expanded() -> Self {
        Self { expands: true, ..Self::default() }
    }

    /// An expansion outside quotes: any number of words.
    pub(super) fn split() -> Self {
        Self { expands: true, splits: true, ..Self::default() }
    }
}

/// The scripts of the live command substitutions in a token's text: the
/// inside of each unescaped `` `…` `` and `$(…)` (not `$((…))`).
pub(super) fn substitutions(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '`' => {
                let mut inner = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '`' => break,
                        '\\' => match chars.next() {
                            Some(escaped @ ('`' | '\\' | '$')) => inner.push(escaped),
                            Some(other) => {
                                inner.push('\\');
                                inner.push(other);
                            }
                            None => inner.push('\\'),
                        },
                        _ => inner.push(c),
                    }
                }
                found.push(inner);
            }
            '$' if chars.peek() == Some(&'(') => {
                chars.next();
                if chars.peek() == Some(&'(') {
                    chars.next();
                    continue;
                }
                let mut inner = String::new();
                let mut open = 1usize;
                for c in chars.by_ref() {
                    open = match c {
                        '(' => open + 1,
                        ')' => open - 1,
                        _ => open,
                    };
                    if open == 0 {
                        break;
                    }
                    inner.push(c);
                }
                found.push(inner);
            }
            _ => {}
        }
    }
    found
}

/// Whether an unquoted skeleton globs (`*`, `?`, `[`) or brace-expands
/// (`{a,b}`, `{1..3}`).
pub(super) fn globbing(skeleton: &str) -> bool {
    if skeleton.contains(['*', '?', '[']) {
        return true;
    }
    skeleton.match_indices('{').any(|(open, _)| {
        let after = skeleton.get(open + 1..).unwrap_or("");
        after.find('}').is_some_and(|close| {
            let inside = after.get(..close).unwrap_or("");
            inside.contains(',') || inside.contains("..")
        })
    })
}

/// Literal text that bash would run if arithmetic evaluated it as a
/// variable's value: `a[$(cmd)]` (`x='a[$(rm x)]'; echo $((x))`).
pub(super) fn evaluable(text: &str) -> bool {
    text.find('[')
        .is_some_and(|open| text.get(open..).is_some_and(|rest| rest.contains("$(") || rest.contains('`')))
}

/// An unquoted word: backslash escapes removed.
pub(super) fn unquote(raw: &str) -> Piece {
    let mut piece = Piece::default();
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            piece.text.push(c);
            piece.skeleton.push(c);
            continue;
        }
        match chars.next() {
            Some('\n') => {}
            Some(escaped) => {
                piece.text.push(escaped);
                piece.skeleton.push('_');
            }
            None => {
                piece.text.push('\\');
                piece.skeleton.push('_');
            }
        }
    }
    piece
}

/// The inside of a double-quoted string without expansions: a backslash
/// escapes only `$`, `` ` ``, `"`, `\` and a newline.
pub(super) fn unquote_double(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('\n')) => {
                chars.next();
            }
            ('\\', Some(&escaped @ ('$' | '`' | '"' | '\\'))) => {
                chars.next();
                out.push(escaped);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Decodes `$'…'` as bash does for the common escapes; the string ends at a
/// NUL, as it does in bash.
pub(super) fn ansi_c(raw: &str) -> String {
    let inner = raw.strip_prefix("$'").unwrap_or(raw);
    let inner = inner.strip_suffix('\'').unwrap_or(inner);
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(escape) = chars.next() else {
            out.push('\\');
            break;
        };
        let decoded = match escape {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(escape),
            '0'..='7' => {
                let first = escape.to_digit(8).unwrap_or(0);
                Some(char::from_u32(digits(&mut chars, 8, 2, first)).unwrap_or('\u{fffd}'))
            }
            'x' | 'u' | 'U' => {
                let most = match escape {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                if chars.peek().is_some_and(char::is_ascii_hexdigit) {
                    Some(char::from_u32(digits(&mut chars, 16, most, 0)).unwrap_or('\u{fffd}'))
                } else {
                    out.push('\\');
                    Some(escape)
                }
            }
            'c' => chars.next().map(|control| char::from_u32(control as u32 & 0x1f).unwrap_or('\u{fffd}')),
            other => {
                out.push('\\');
                Some(other)
            }
        };
        match decoded {
            Some('\0') | None => break,
            Some(decoded) => out.push(decoded),
        }
    }
    out
}

/// Reads up to `most` more digits in `radix` onto `value`.
fn digits(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, radix: u32, most: usize, value: u32) -> u32 {
    let mut value = value;
    for _ in 0..most {
        match chars.peek().and_then(|c| c.to_digit(radix)) {
            Some(digit) => {
                value = value.saturating_mul(radix).saturating_add(digit);
                chars.next();
            }
            None => break,
        }
    }
    value
}

/// A variable name as bash reads one: a letter or `_`, then letters, digits
/// and `_`.
pub(super) fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A name bash may assign or test without evaluating anything: an
/// identifier, optionally with a subscript that is `@`, `*` or literal
/// arithmetic (`a[2]`). A subscript naming a variable (`a[i]`, `a[$i]`) is
/// evaluated as arithmetic, which runs the command substitutions in the
/// variable's value.
pub(super) fn is_fixed_name(text: &str) -> bool {
    match text.split_once('[') {
        None => is_identifier(text),
        Some((name, subscript)) => {
            is_identifier(name)
                && subscript
                    .strip_suffix(']')
                    .is_some_and(|index| matches!(index, "@" | "*") || literal_arithmetic(index))
        }
    }
}

/// Arithmetic that names no variable: numbers (`10`, `0x1f`, `2#101`),
/// operators, parentheses, and the counts bash alone sets (`$#`, `$?`,
/// `$$`, `$!`, `${#name}`, `${#name[@]}`). A variable, even a bare word
/// (`x`, which arithmetic reads as `$x`), is evaluated recursively: a value
/// `a[$(cmd)]` runs `cmd`.
pub(super) fn literal_arithmetic(text: &str) -> bool {
    let mut rest = text.trim();
    if rest.is_empty() {
        return false;
    }
    while let Some(c) = rest.chars().next() {
        let taken = if c.is_ascii_whitespace() || "+-*/%<>=!&|^~?:(),".contains(c) {
            1
        } else if c.is_ascii_digit() {
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '#' | '@' | '_')))
                .unwrap_or(rest.len())
        } else if let Some(length) = count_expansion(rest) {
            length
        } else {
            return false;
        };
        rest = rest.get(taken..).unwrap_or("");
    }
    true
}

/// The length of a count expansion at the start of `text`, if one is there.
fn count_expansion(text: &str) -> Option<usize> {
    if let Some(special) = ["$#", "$?", "$$", "$!", "${#}", "${?}"].into_iter().find(|s| text.starts_with(s))
    {
        return Some(special.len());
    }
    let inner = text.strip_prefix("${#")?;
    let close = inner.find('}')?;
    let name = inner.get(..close)?;
    let name = name.strip_suffix("[@]").or_else(|| name.strip_suffix("[*]")).unwrap_or(name);
    is_identifier(name).then_some(close + 4)
}
