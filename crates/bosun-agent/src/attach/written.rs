//! Paths to image files written out in a person's message, the way a
//! terminal inserts a file dragged onto it or a person pastes one: plain
//! (`/home/me/shot.png`), in quotes (`'/home/me/my shot.png'`), with
//! backslash-escaped spaces (`/home/me/my\ shot.png`), as a `file://` URL
//! (percent-encoded), or from the home folder (`~/shot.png`) or the
//! workspace (`./shot.png`, `../shot.png`).
//!
//! Only a word that begins with one of those prefixes counts (a bare
//! `shot.png` or `docs/shot.png` in a sentence stays words: `@shot.png`
//! attaches those), and only when it ends in an image extension; whether
//! the file exists is the caller's question.

use std::path::{Path, PathBuf};

use super::image::named_like_image;

/// A path written in the text: as written (unquoted), and the file it names.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Written {
    /// The word without its quotes and escapes (`/home/me/my shot.png`).
    pub(super) shown: String,
    /// The file: `~` expanded, a relative path joined to the base.
    pub(super) path: PathBuf,
}

/// Trailing characters of a sentence that may follow an unquoted path.
const PUNCTUATION: [char; 7] = [',', '.', ';', ':', ')', '?', '!'];

/// The written-out image paths of `text`, in order, each once: `~/` taken
/// from `home` (none without one), `./` and `../` from `base`.
pub(super) fn image_paths(text: &str, home: Option<&Path>, base: &Path) -> Vec<Written> {
    let mut found: Vec<Written> = Vec::new();
    let mut rest = text;
    let mut at_word_start = true;
    while let Some(c) = rest.chars().next() {
        if at_word_start
            && begins_path(rest)
            && let Some((word, used)) = shell_word(rest)
        {
            let candidate = [word.as_str(), word.trim_end_matches(PUNCTUATION)]
                .into_iter()
                .find(|w| named_like_image(w))
                .and_then(|w| resolve(w, home, base).map(|path| Written { shown: w.to_owned(), path }));
            if let Some(written) = candidate
                && !found.iter().any(|f| f.path == written.path)
            {
                found.push(written);
            }
            rest = &rest[used..];
            at_word_start = false;
            continue;
        }
        at_word_start = c.is_whitespace();
        rest = &rest[c.len_utf8()..];
    }
    found
}

/// Whether `text` starts a path: after an opening quote or not, `/`, `~/`,
/// `./`, `../` or `file://`.
fn begins_path(text: &str) -> bool {
    let unquoted = text.strip_prefix(['\'', '"']).unwrap_or(text);
    ["/", "~/", "./", "../", "file://"].iter().any(|prefix| unquoted.starts_with(prefix))
}

/// The shell word at the start of `text` (quotes removed, escapes applied,
/// adjacent quoted and unquoted pieces joined, as a shell reads them) and
/// the bytes it took; `None` when a quote is never closed.
fn shell_word(text: &str) -> Option<(String, usize)> {
    let mut word = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(at, c)) = chars.peek() {
        match c {
            c if c.is_whitespace() => return Some((word, at)),
            '\\' => {
                chars.next();
                match chars.next() {
                    Some((_, escaped)) => word.push(escaped),
                    None => word.push('\\'),
                }
            }
            '\'' => {
                chars.next();
                loop {
                    match chars.next()? {
                        (_, '\'') => break,
                        (_, inner) => word.push(inner),
                    }
                }
            }
            '"' => {
                chars.next();
                loop {
                    match chars.next()? {
                        (_, '"') => break,
                        (_, '\\') => match chars.next()? {
                            (_, escaped @ ('"' | '\\' | '$' | '`')) => word.push(escaped),
                            (_, other) => {
                                word.push('\\');
                                word.push(other);
                            }
                        },
                        (_, inner) => word.push(inner),
                    }
                }
            }
            c => {
                chars.next();
                word.push(c);
            }
        }
    }
    Some((word, text.len()))
}

/// The file a written path names.
fn resolve(word: &str, home: Option<&Path>, base: &Path) -> Option<PathBuf> {
    if word.starts_with("file://") {
        // `file:///p` or `file://localhost/p`, percent-decoded; another
        // host is not this machine's.
        return reqwest::Url::parse(word).ok()?.to_file_path().ok();
    }
    if let Some(rest) = word.strip_prefix("~/") {
        return home.map(|home| home.join(rest));
    }
    if word.starts_with("./") || word.starts_with("../") {
        return Some(base.join(word));
    }
    Some(PathBuf::from(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<String> {
        image_paths(text, Some(Path::new("/home/me")), Path::new("/ws"))
            .into_iter()
            .map(|w| w.path.display().to_string())
            .collect()
    }

    #[test]
    fn the_forms_a_terminal_inserts_on_a_drop_name_the_file() {
        assert_eq!(paths("/home/me/shot.png"), ["/home/me/shot.png"]);
        assert_eq!(paths("'/home/me/my shot.png' "), ["/home/me/my shot.png"]);
        assert_eq!(paths("\"/home/me/my shot.png\""), ["/home/me/my shot.png"]);
        assert_eq!(paths("/home/me/my\\ shot\\ 2.PNG"), ["/home/me/my shot 2.PNG"]);
        assert_eq!(paths("'/home/me/it'\\''s.jpg'"), ["/home/me/it's.jpg"]);
        assert_eq!(paths("file:///home/me/my%20shot.webp"), ["/home/me/my shot.webp"]);
        assert_eq!(paths("file://localhost/tmp/a.gif"), ["/tmp/a.gif"]);
        assert_eq!(
            paths("~/Pictures/a.jpeg and ./b.png, ../c.png."),
            ["/home/me/Pictures/a.jpeg", "/ws/./b.png", "/ws/../c.png"]
        );
    }

    #[test]
    fn words_in_a_sentence_are_not_paths_unless_they_start_like_one() {
        assert_eq!(paths("what is wrong in /tmp/shot.png?"), ["/tmp/shot.png"]);
        assert!(paths("rename shot.png to docs/logo.png").is_empty());
        assert!(paths("see a/tmp/x.png and x/y.png").is_empty(), "not at a word's start");
        assert!(paths("/etc/passwd and /tmp/notes.md").is_empty(), "not named like images");
        assert!(paths("don't look at '/tmp/x.png").is_empty(), "a quote never closed");
        assert!(paths("file://server/share/x.png").is_empty(), "another host");
        assert_eq!(paths("/a.png /a.png"), ["/a.png"], "each once");
        assert_eq!(image_paths("~/x.png", None, Path::new("/ws")), Vec::new(), "no home, no `~`");
    }

    #[test]
    fn the_shown_name_is_the_unquoted_word() {
        let found = image_paths("look: '/tmp/my shot.png'", None, Path::new("/ws"));
        assert_eq!(found, [Written { shown: "/tmp/my shot.png".into(), path: "/tmp/my shot.png".into() }]);
    }
}
