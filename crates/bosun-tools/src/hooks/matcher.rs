//! Which calls a hook is for: Claude Code's matcher syntax. Empty or `*`
//! matches everything; anything else is a regex that must match the whole
//! name (`Edit|Write`, `mcp__github__.*`). Claude Code's tool names in a
//! matcher also match the bosun tools they stand for (`Bash` matches
//! `shell`), through [`crate::compat::bosun_tool_name`].

use std::fmt;

use regex::{Regex, RegexBuilder};

use super::HookConfigError;
use crate::compat::bosun_tool_name;

/// Longest matcher accepted, in bytes.
pub const MAX_MATCHER_BYTES: usize = 1024;
/// Bound on the compiled regex (see `regex::RegexBuilder::size_limit`).
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Claude Code's tool names that stand for a bosun tool; each is mapped by
/// [`bosun_tool_name`] (the `compat` table stays the one place for the
/// mapping; this lists the names to try a matcher on).
pub(crate) const CLAUDE_TOOL_NAMES: [&str; 10] =
    ["Bash", "Read", "Write", "Edit", "MultiEdit", "Glob", "LS", "Grep", "Task", "Skill"];

/// A compiled matcher.
#[derive(Clone)]
pub struct Matcher {
    pattern: String,
    /// `None`: matches every name.
    regex: Option<Regex>,
    /// bosun's names of the Claude Code tools the regex matches.
    also: Vec<&'static str>,
}

impl Matcher {
    /// Compiles `pattern`: empty or `*` for every name, else a regex
    /// anchored to the whole name.
    pub fn new(pattern: &str) -> Result<Self, HookConfigError> {
        let trimmed = pattern.trim();
        if trimmed.is_empty() || trimmed == "*" {
            return Ok(Self { pattern: trimmed.to_owned(), regex: None, also: Vec::new() });
        }
        if trimmed.len() > MAX_MATCHER_BYTES {
            return Err(HookConfigError::Matcher {
                pattern: cut(trimmed, 64),
                reason: format!("longer than {MAX_MATCHER_BYTES} bytes"),
            });
        }
        let regex =
            RegexBuilder::new(&format!("^(?:{trimmed})$")).size_limit(REGEX_SIZE_LIMIT).build().map_err(
                |error| HookConfigError::Matcher { pattern: trimmed.to_owned(), reason: error.to_string() },
            )?;
        let mut also: Vec<&'static str> = CLAUDE_TOOL_NAMES
            .into_iter()
            .filter(|claude| regex.is_match(claude))
            .filter_map(bosun_tool_name)
            .collect();
        also.sort_unstable();
        also.dedup();
        Ok(Self { pattern: trimmed.to_owned(), regex: Some(regex), also })
    }

    /// Whether `name` (a bosun tool name, a start source or a compaction
    /// trigger) is matched.
    pub fn is_match(&self, name: &str) -> bool {
        match &self.regex {
            None => true,
            Some(regex) => regex.is_match(name) || self.also.contains(&name),
        }
    }

    /// Whether it matches every name (empty or `*`).
    pub fn matches_all(&self) -> bool {
        self.regex.is_none()
    }

    /// The pattern as written (trimmed).
    pub fn pattern(&self) -> &str {
        &self.pattern
    }
}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Matcher").field(&self.pattern).finish()
    }
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
    }
}

/// `text` cut to at most `max` characters, with `…` when cut.
pub(super) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn empty_and_star_match_every_name() {
        for pattern in ["", "*", "  "] {
            let matcher = Matcher::new(pattern).unwrap();
            assert!(matcher.matches_all() && matcher.is_match("shell") && matcher.is_match("mcp__x__y"));
        }
    }

    #[test]
    fn a_regex_must_match_the_whole_name() {
        let matcher = Matcher::new("shell|read_file").unwrap();
        assert!(matcher.is_match("shell") && matcher.is_match("read_file"));
        assert!(!matcher.is_match("shell2") && !matcher.is_match("my_read_file"));
        let mcp = Matcher::new("mcp__github__.*").unwrap();
        assert!(mcp.is_match("mcp__github__create_issue") && !mcp.is_match("mcp__gitlab__x"));
    }

    #[test]
    fn claude_code_names_match_the_bosun_tools_they_stand_for() {
        let bash = Matcher::new("Bash").unwrap();
        assert!(bash.is_match("shell") && bash.is_match("Bash") && !bash.is_match("read_file"));
        let edits = Matcher::new("Edit|Write").unwrap();
        assert!(edits.is_match("edit_file") && edits.is_match("write_file"));
        assert!(!edits.is_match("shell"));
        let multi = Matcher::new("MultiEdit").unwrap();
        assert!(multi.is_match("edit_file") && !multi.is_match("write_file"));
    }

    #[test]
    fn every_listed_claude_name_stands_for_a_bosun_tool() {
        for name in CLAUDE_TOOL_NAMES {
            assert!(bosun_tool_name(name).is_some(), "{name}");
        }
    }

    #[test]
    fn a_broken_or_huge_regex_is_an_error_naming_it() {
        let error = Matcher::new("Edit(").unwrap_err().to_string();
        assert!(error.contains("Edit("), "{error}");
        assert!(Matcher::new(&"a".repeat(MAX_MATCHER_BYTES + 1)).is_err());
        assert!(Matcher::new("(a{1000}){1000}").is_err(), "the size limit holds");
    }
}
