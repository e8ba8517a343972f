//! Lexical checks of a workspace-relative path, before any system call.
//!
//! A path is `/`-separated and relative to the workspace root. `.` and empty
//! components are dropped and `..` is resolved lexically; a `..` that would
//! leave the root is refused here. Symlinks are not consulted at all: the
//! handle walk refuses them wherever they are.

use super::WorkspaceError;

/// Longest accepted path, in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest accepted component, in bytes (Linux `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;

/// A checked, normalised relative path: no `.`, no `..`, no empty parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RelPath {
    components: Vec<String>,
}

impl RelPath {
    /// Checks and normalises `input`.
    pub fn parse(input: &str) -> Result<Self, WorkspaceError> {
        let refuse =
            |reason: &str| WorkspaceError::InvalidPath { path: shown(input), reason: reason.to_owned() };
        if input.contains('\0') {
            return Err(refuse("it contains a NUL byte"));
        }
        if input.len() > MAX_PATH_BYTES {
            return Err(refuse(&format!("it is longer than {MAX_PATH_BYTES} bytes")));
        }
        if input.contains('\\') {
            return Err(refuse("`\\` is not a separator here; use `/`"));
        }
        if input.starts_with('/') {
            return Err(WorkspaceError::Absolute { path: shown(input) });
        }
        let mut components: Vec<String> = Vec::new();
        for part in input.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    if components.pop().is_none() {
                        return Err(WorkspaceError::Escapes { path: shown(input) });
                    }
                }
                name if name.len() > MAX_NAME_BYTES => {
                    return Err(refuse(&format!("a component is longer than {MAX_NAME_BYTES} bytes")));
                }
                name => components.push(name.to_owned()),
            }
        }
        Ok(Self { components })
    }

    /// The root itself.
    pub fn root() -> Self {
        Self { components: Vec::new() }
    }

    /// Whether this is the root.
    pub fn is_root(&self) -> bool {
        self.components.is_empty()
    }

    /// The components, in order.
    pub fn components(&self) -> &[String] {
        &self.components
    }

    /// The parent's components and the last name (`None` for the root).
    pub fn split_last(&self) -> Option<(&[String], &str)> {
        self.components.split_last().map(|(last, parent)| (parent, last.as_str()))
    }

    /// The path of its first `n` components (the whole path when it has
    /// fewer).
    pub fn prefix(&self, n: usize) -> Self {
        Self { components: self.components.iter().take(n).cloned().collect() }
    }

    /// This path with `name` (one plain component) appended.
    pub fn join(&self, name: &str) -> String {
        if self.is_root() { name.to_owned() } else { format!("{}/{name}", self.as_string()) }
    }

    /// The path as `a/b/c` (empty for the root).
    pub fn as_string(&self) -> String {
        self.components.join("/")
    }
}

impl std::fmt::Display for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_root() { f.write_str(".") } else { f.write_str(&self.as_string()) }
    }
}

/// A path as shown in errors: NUL bytes made visible, length bounded.
pub(crate) fn shown(input: &str) -> String {
    let visible = input.replace('\0', "\\0");
    if visible.chars().count() > 200 {
        let head: String = visible.chars().take(200).collect();
        format!("{head}…")
    } else {
        visible
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_dots_and_inner_parent_steps() {
        assert_eq!(RelPath::parse("./a/./b//c/../d").unwrap().as_string(), "a/b/d");
        assert!(RelPath::parse("").unwrap().is_root());
        assert!(RelPath::parse("a/..").unwrap().is_root());
    }

    #[test]
    fn refuses_escapes_absolutes_and_odd_bytes() {
        for bad in ["..", "../x", "a/../../x", "./a/./../../b", "/etc/passwd", "a\\..\\b", "a\0b"] {
            assert!(RelPath::parse(bad).is_err(), "{bad:?}");
        }
        assert!(RelPath::parse(&"a/".repeat(3000)).is_err());
        assert!(RelPath::parse(&"x".repeat(256)).is_err());
    }
}
