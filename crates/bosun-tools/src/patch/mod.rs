//! The pure logic of the `apply_patch` tool: the patch envelope format that
//! Codex CLI popularised, parsed into [`Patch`], and turned into a list of
//! [`FileChange`]s only once every operation is known to succeed.
//!
//! Nothing here touches the file system. [`plan`] reads through a callback
//! the caller supplies (resolved beneath the workspace handle) and returns
//! what to write; the caller writes it. That split is what lets the tool be
//! all-or-nothing: either every hunk of every file applies, or nothing is
//! planned at all.
//!
//! # Format
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path/new.txt
//! +line one
//! *** Delete File: path/old.txt
//! *** Update File: path/src.rs
//! *** Move to: path/renamed.rs
//! @@ fn main() {
//!  context line
//! -removed line
//! +added line
//! @@
//! -another
//! +change
//! *** End of File
//! *** End Patch
//! ```
//!
//! - `*** Add File: P` is followed by `+` lines, the new file's content; each
//!   line gets a `\n`. A blank line (empty or whitespace only) among them
//!   is an empty content line; blank lines after the last `+` line are
//!   separators and are dropped.
//! - `*** Delete File: P` stands alone.
//! - `*** Update File: P`, optionally `*** Move to: Q` on the next line, then
//!   hunks. A hunk starts with `@@`, optionally followed by a header: a line
//!   of the file to find first (the hunk is searched for after it). The first
//!   hunk may omit `@@`. Hunk lines start with ` ` (context), `-` (removed)
//!   or `+` (added); a blank line is an empty context line (blank lines
//!   before the first hunk, or after `*** End of File`, are separators).
//!   `*** End of File` after a hunk anchors it to the end of the file. A
//!   unified-diff range such as `@@ -12,7 +12,8 @@ fn f()` is tolerated: the
//!   range is dropped and what follows it, if anything, is the header. An
//!   update with a move and no hunks is a plain rename.
//! - Around the envelope: surrounding whitespace, CRLF line endings and a
//!   heredoc wrapper (`apply_patch <<'EOF'` … `EOF`) are tolerated.
//!
//! Line numbers in errors count from 1 in the text given to [`parse`],
//! wrapper lines included.
//!
//! # Applying hunks
//!
//! See [`apply_hunks`]: hunks apply in order, each searched for after the
//! previous one, by exact comparison first, then ignoring trailing
//! whitespace, then ignoring surrounding whitespace. The first match at the
//! most exact level wins. Context lines keep the file's own text, added
//! lines are inserted as written (never re-indented); the file's line ending
//! style and its final newline (or lack of one) are preserved.

mod parse;
mod plan;

pub use parse::{named_paths, parse};
pub use plan::{apply_hunks, plan};

/// A parsed patch: its operations, in the order they appear.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Patch {
    /// The operations, in patch order. No path appears in two of them.
    pub operations: Vec<Operation>,
}

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// Create a file that must not exist yet.
    Add {
        /// The path, as written in the patch.
        path: String,
        /// The full content; every line ends with `\n`.
        content: String,
    },
    /// Delete a file that must exist.
    Delete {
        /// The path, as written in the patch.
        path: String,
    },
    /// Change a file that must exist, and perhaps move it.
    Update {
        /// The path, as written in the patch.
        path: String,
        /// Where the file goes, if it is renamed; the target must not exist.
        move_to: Option<String>,
        /// The hunks, in order. Empty only when `move_to` is set.
        hunks: Vec<Hunk>,
    },
}

impl Operation {
    /// The path the operation names first (the source of a move).
    pub fn path(&self) -> &str {
        match self {
            Self::Add { path, .. } | Self::Delete { path } | Self::Update { path, .. } => path,
        }
    }
}

/// One hunk of an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The text after `@@`, trimmed: a line to find before the hunk.
    pub header: Option<String>,
    /// The hunk's lines, without their one-character markers.
    pub lines: Vec<HunkLine>,
    /// Marked `*** End of File`: the hunk must match at the end of the file.
    pub at_end_of_file: bool,
    /// The 1-based line of the patch where the hunk starts (its `@@`, or its
    /// first line when the `@@` was omitted); 0 when built by hand.
    pub patch_line: usize,
}

impl Hunk {
    /// The lines the hunk expects in the file: context and removed lines.
    pub fn old_lines(&self) -> impl Iterator<Item = &str> {
        plan::old_side(&self.lines)
    }
}

/// A line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// ` text`, or an empty line: must be present, is kept.
    Context(String),
    /// `-text`: must be present, is removed.
    Remove(String),
    /// `+text`: is inserted.
    Add(String),
}

/// What the caller must do, once every operation is known to succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// Write `content` to `path`; `create` says the file must not exist yet
    /// (an add) rather than be replaced (an update).
    Write {
        /// The path, as written in the patch.
        path: String,
        /// The complete new content.
        content: String,
        /// True for an added file, false for an updated one.
        create: bool,
    },
    /// Delete `path`.
    Delete {
        /// The path, as written in the patch.
        path: String,
    },
    /// Write `content` to `to` (which does not exist yet) and delete `from`.
    Move {
        /// The file being moved.
        from: String,
        /// Its new path.
        to: String,
        /// Its new content (the hunks applied).
        content: String,
    },
}

/// Why a patch could not be parsed or planned. Parse errors carry the
/// 1-based line of the patch; planning errors name the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The patch text is malformed at `line`.
    #[error("line {line}: {message}")]
    Syntax {
        /// The 1-based line of the patch.
        line: usize,
        /// What was expected, and what was found.
        message: String,
    },
    /// The patch never reaches `*** End Patch`.
    #[error("missing `*** End Patch` (the patch ends at line {last_line})")]
    MissingEndPatch {
        /// The last line of the patch.
        last_line: usize,
    },
    /// A header with nothing after it.
    #[error("line {line}: `{header}` with an empty path")]
    EmptyPath {
        /// The 1-based line of the patch.
        line: usize,
        /// The header, e.g. `*** Add File:`.
        header: &'static str,
    },
    /// Two operations name the same path (a move target counts).
    #[error("{}file `{path}` appears twice in the patch", line_prefix(*line))]
    DuplicatePath {
        /// The path.
        path: String,
        /// Where it appears the second time, when known.
        line: Option<usize>,
    },
    /// An update with neither hunks nor a move.
    #[error("line {line}: `*** Update File: {path}` has no hunks")]
    NoHunks {
        /// The 1-based line of the `*** Update File:` header.
        line: usize,
        /// The path.
        path: String,
    },
    /// The caller's `read` refused the path.
    #[error("cannot read `{path}`: {message}")]
    Read {
        /// The path.
        path: String,
        /// The caller's reason.
        message: String,
    },
    /// `*** Add File:` of a file that exists.
    #[error("cannot add `{path}`: it already exists (use `*** Update File:` to change it)")]
    AddExisting {
        /// The path.
        path: String,
    },
    /// `*** Delete File:` or `*** Update File:` of a file that does not exist.
    #[error("cannot {operation} `{path}`: no such file")]
    Missing {
        /// The path.
        path: String,
        /// `delete` or `update`.
        operation: &'static str,
    },
    /// `*** Move to:` a path that exists.
    #[error("cannot move `{from}` to `{to}`: `{to}` already exists")]
    MoveOntoExisting {
        /// The file being moved.
        from: String,
        /// The existing target.
        to: String,
    },
    /// A hunk's `@@` header line is not in the file where it was looked for.
    #[error(
        "`{path}`: hunk {hunk}{}: header line `{header}` not found at or after line {from_line} of the file",
        patch_line_suffix(*patch_line)
    )]
    HeaderNotFound {
        /// The file.
        path: String,
        /// The 1-based hunk number within the file.
        hunk: usize,
        /// The hunk's start in the patch (0 if unknown).
        patch_line: usize,
        /// The header text.
        header: String,
        /// The 1-based file line the search started at.
        from_line: usize,
    },
    /// A hunk's context and removed lines are not in the file where they
    /// were looked for.
    #[error(
        "`{path}`: hunk {hunk}{} does not match the file {} line {from_line}; it looked for:\n{expected}",
        patch_line_suffix(*patch_line),
        if *at_end_of_file { "at its end, after" } else { "at or after" }
    )]
    HunkNotFound {
        /// The file.
        path: String,
        /// The 1-based hunk number within the file.
        hunk: usize,
        /// The hunk's start in the patch (0 if unknown).
        patch_line: usize,
        /// The first lines the hunk expected, one per line, indented.
        expected: String,
        /// The 1-based file line the search started at.
        from_line: usize,
        /// The hunk was marked `*** End of File`.
        at_end_of_file: bool,
    },
}

fn line_prefix(line: Option<usize>) -> String {
    line.map(|line| format!("line {line}: ")).unwrap_or_default()
}

fn patch_line_suffix(patch_line: usize) -> String {
    if patch_line == 0 { String::new() } else { format!(" (patch line {patch_line})") }
}

/// `text` cut to a length that reads well inside an error message.
fn clip(text: &str) -> String {
    const MAX_CHARS: usize = 80;
    match text.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}
