//! A `SKILL.md`'s front matter: the YAML between its opening `---` line and
//! the next `---` line, parsed with serde-saphyr (pure Rust, panic-free on
//! malformed input, under a small budget so an alias bomb costs nothing),
//! and its `name` and `description` checked against the Agent Skills rules.
//!
//! Other keys (`license`, `compatibility`, `metadata`, `allowed-tools`, …)
//! are accepted and ignored. `allowed-tools` in particular grants nothing:
//! a skill's calls go through the permission pipeline like any other.

use serde::Deserialize;

/// Longest skill name, in characters (the Agent Skills rule).
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters (the Agent Skills rule).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The two keys bosun uses.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct FrontMatter {
    pub(crate) name: String,
    pub(crate) description: String,
}

#[derive(Default, Deserialize)]
struct Raw {
    name: Option<String>,
    description: Option<String>,
}

/// The text's front matter and its body, or why it has none. `complete`
/// says whether `text` is the whole file (a cut read may just not reach
/// the closing line).
pub(crate) fn split(text: &str, complete: bool) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let opening = lines.next().unwrap_or_default();
    if opening.trim_end() != "---" {
        return Err("it does not open with a `---` front matter line".to_owned());
    }
    let start = opening.len();
    let mut at = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Ok((&text[start..at], &text[at + line.len()..]));
        }
        at += line.len();
    }
    Err(if complete {
        "its front matter has no closing `---` line".to_owned()
    } else {
        format!(
            "its front matter has no closing `---` line in the first {} KiB",
            super::MAX_FRONT_MATTER_BYTES / 1024
        )
    })
}

/// The body of a `SKILL.md`: what follows its front matter (all of it when
/// it has none).
pub(crate) fn body(text: &str) -> &str {
    split(text, true).map_or(text, |(_, body)| body)
}

/// Parses and checks the front matter of the `SKILL.md` in folder `folder`.
pub(crate) fn parse(text: &str, complete: bool, folder: &str) -> Result<FrontMatter, String> {
    let (yaml, _) = split(text, complete)?;
    let raw: Raw = parse_yaml(yaml)?;
    let name = raw.name.ok_or("its front matter has no `name`")?;
    check_name(&name)?;
    if name != folder {
        return Err(format!("its name `{name}` is not its folder's name `{}`", one_line(folder)));
    }
    let description = raw.description.unwrap_or_default();
    let description = description.trim();
    if description.is_empty() {
        return Err("its front matter has no `description`".to_owned());
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(format!("its description is {chars} characters, over {MAX_DESCRIPTION_CHARS}"));
    }
    Ok(FrontMatter { name, description: description.to_owned() })
}

/// The front matter's YAML `yaml` (from [`split`]) as `T`, under a small
/// budget (one document, limited nesting, events, aliases and anchors);
/// empty YAML is `T::default()`. The error is one line.
pub(crate) fn parse_yaml<T: serde::de::DeserializeOwned + Default>(yaml: &str) -> Result<T, String> {
    if yaml.trim().is_empty() {
        return Ok(T::default());
    }
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_documents: 1,
            max_depth: 16,
            max_events: 20_000,
            max_aliases: 64,
            max_anchors: 64,
        },
    };
    serde_saphyr::from_str_with_options(yaml, options)
        .map_err(|error| format!("its front matter is not valid YAML: {}", one_line(&error.to_string())))
}

/// The Agent Skills name rules: 1 to 64 of `a-z`, `0-9` and `-`, no `-`
/// first or last, no `--`. (ASCII only: a name is also part of the
/// `skill://NAME/` address, where look-alike letters have no place.)
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let shown = one_line(name);
    if name.is_empty() {
        return Err("its `name` is empty".to_owned());
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!("its name is {chars} characters, over {MAX_NAME_CHARS}"));
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        return Err(format!("its name `{shown}` may hold only a-z, 0-9 and `-`"));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!("its name `{shown}` starts or ends with `-`, or holds `--`"));
    }
    Ok(())
}

/// `text` on one line: whitespace runs (newlines included) made one space.
pub(crate) fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`collapse`]d, at most 240 characters: for messages.
pub(crate) fn one_line(text: &str) -> String {
    let joined = collapse(text);
    if joined.chars().count() > 240 {
        let head: String = joined.chars().take(240).collect();
        format!("{head}…")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<FrontMatter, String> {
        parse(text, true, "pdf-tools")
    }

    #[test]
    fn a_plain_and_a_folded_description_are_read_and_other_keys_ignored() {
        let plain = "---\nname: pdf-tools\ndescription: Fill PDF forms.\nallowed-tools: Bash\n---\nbody\n";
        assert_eq!(
            parsed(plain),
            Ok(FrontMatter { name: "pdf-tools".into(), description: "Fill PDF forms.".into() })
        );
        let folded = "---\r\nname: pdf-tools\r\ndescription: >-\r\n  Fill PDF forms\r\n  and merge them.\r\n\
                      metadata:\r\n  version: \"1.0\"\r\n---\r\n";
        assert_eq!(parsed(folded).map(|f| f.description), Ok("Fill PDF forms and merge them.".to_owned()));
        assert_eq!(body(plain), "body\n");
    }

    #[test]
    fn each_broken_front_matter_says_what_is_wrong() {
        let cases = [
            ("no front matter\n", "does not open with"),
            ("---\nname: pdf-tools\n", "no closing `---`"),
            ("---\nname: [pdf-tools\n---\n", "not valid YAML"),
            ("---\ndescription: d\n---\n", "no `name`"),
            ("---\nname: pdf-tools\n---\n", "no `description`"),
            ("---\nname: pdf-tools\ndescription: \"  \"\n---\n", "no `description`"),
            ("---\nname: PDF-Tools\ndescription: d\n---\n", "only a-z"),
            ("---\nname: pdf--tools\ndescription: d\n---\n", "holds `--`"),
            ("---\nname: -pdf\ndescription: d\n---\n", "starts or ends"),
            ("---\nname: other\ndescription: d\n---\n", "not its folder's name"),
            ("---\n- a list\n---\n", "not valid YAML"),
        ];
        for (text, expected) in cases {
            let error = parsed(text).expect_err(text);
            assert!(error.contains(expected), "{text:?}: {error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
        let long_name = format!("---\nname: {}\ndescription: d\n---\n", "a".repeat(65));
        assert!(parse(&long_name, true, &"a".repeat(65)).unwrap_err().contains("over 64"));
        let long = format!("---\nname: pdf-tools\ndescription: {}\n---\n", "d".repeat(1025));
        assert!(parsed(&long).unwrap_err().contains("over 1024"));
        assert!(parse("---\nname: x\n", false, "x").unwrap_err().contains("in the first"));
    }

    #[test]
    fn an_alias_bomb_is_refused_by_the_budget() {
        let mut yaml = String::from("---\nname: pdf-tools\ndescription: d\na: &a [x, x, x, x, x, x, x, x]\n");
        for i in 0..12 {
            let prev = if i == 0 { "a".to_owned() } else { format!("l{}", i - 1) };
            yaml.push_str(&format!("l{i}: &l{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        }
        yaml.push_str("---\n");
        let started = std::time::Instant::now();
        let result = parsed(&yaml);
        assert!(result.is_err(), "{result:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }
}
