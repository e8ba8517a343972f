//! Refusals that say what would work. Small local models guess paths; when
//! a path does not exist, or is a directory where a file was wanted (or the
//! reverse), the refusal names existing entries the next call can use:
//! those nearest a missing name, what a directory holds, or that a file
//! given as a directory is one.
//!
//! Bounded: a hint reads at most [`MAX_READ`] entries of at most two
//! directories (the deepest existing ancestor and its parent), through the
//! workspace's handles and ignore rules like any walk (invariant 16), and
//! never walks further. The names are the workspace's, so untrusted text:
//! each is cut at [`MAX_NAME_BYTES`], and a hint names at most
//! [`MAX_SHOWN`] entries in at most [`MAX_HINT_BYTES`].

use std::borrow::Cow;

use bosun_core::ToolOutput;
use rustix::fs::FileType;

use crate::workspace::{EntryKind, RelPath, Workspace, WorkspaceError};

/// Most entries a hint names.
pub(crate) const MAX_SHOWN: usize = 8;
/// Most entries read from one directory for a hint.
pub(crate) const MAX_READ: usize = 200;
/// Longest entry name shown, in bytes; a longer one is cut and ends in `…`.
pub(crate) const MAX_NAME_BYTES: usize = 200;
/// Most bytes of entry paths in one hint.
pub(crate) const MAX_HINT_BYTES: usize = 2 * 1024;
/// Characters of a name compared when ranking.
const MAX_COMPARED: usize = 64;

/// The refusal of `path`, the path the tool was given, for `error`, with a
/// hint where one helps; otherwise the error as it reads.
pub(crate) fn refuse_near(workspace: &Workspace, path: &RelPath, error: WorkspaceError) -> ToolOutput {
    let hinted = match &error {
        WorkspaceError::NotFound { .. } => not_found(workspace, path),
        WorkspaceError::NotAFile { kind: "directory", .. } => Some(is_directory(workspace, path, &error)),
        WorkspaceError::NotADirectory { path: at } => not_a_directory(workspace, at, &error),
        _ => None,
    };
    ToolOutput::error(hinted.unwrap_or_else(|| error.to_string()))
}

/// "`src/main.rs` does not exist. Existing paths near it: …": the entries
/// of the deepest existing ancestor nearest the missing name (or the last
/// name), then, while there is room, its parent's.
fn not_found(workspace: &Workspace, path: &RelPath) -> Option<String> {
    let depth = workspace.existing_depth(path);
    let names = path.components();
    // `None` when all of it exists after all (made since): the plain refusal.
    let missing = names.get(depth)?;
    let mut text = format!("`{path}` does not exist");
    if depth + 1 < names.len() {
        text.push_str(&format!(": there is no `{}`", path.prefix(depth + 1)));
    }
    text.push('.');
    let mut wanted = vec![missing.as_str()];
    if let Some(last) = names.last().filter(|last| *last != missing) {
        wanted.push(last);
    }
    let dir = path.prefix(depth);
    let Ok(near) = workspace.read_dir(&dir, MAX_READ) else { return Some(text) };
    let mut shown = Shown::default();
    let cut = shown.extend(&dir, &nearest(&near.entries, &wanted, None));
    let from_dir = shown.paths.len();
    if let Some((_, dir_name)) = dir.split_last()
        && shown.has_room()
    {
        let parent = dir.prefix(depth - 1);
        if let Ok(above) = workspace.read_dir(&parent, MAX_READ) {
            let picked = nearest(&above.entries, &wanted, Some(dir_name));
            shown.extend(&parent, &picked);
        }
    }
    if shown.paths.is_empty() {
        if near.entries.is_empty() && !near.more {
            if dir.is_root() {
                text.push_str(" The workspace is empty.");
            } else {
                text.push_str(&format!(" `{dir}` is empty."));
            }
        }
        return Some(text);
    }
    text.push_str(" Existing paths near it: ");
    text.push_str(&shown.paths.join(", "));
    if cut || near.more || usable(&near.entries, None).count() > from_dir {
        text.push_str(&format!(" (more: list_files `{dir}`)"));
    }
    Some(text)
}

/// "`src` is a directory, not a regular file. It holds: …": its first
/// entries in name order.
fn is_directory(workspace: &Workspace, path: &RelPath, error: &WorkspaceError) -> String {
    let mut text = format!("{error}.");
    let Ok(inside) = workspace.read_dir(path, MAX_READ) else { return text };
    let entries: Vec<_> = usable(&inside.entries, None).collect();
    let mut shown = Shown::default();
    let cut = shown.extend(path, &entries[..entries.len().min(MAX_SHOWN)]);
    if shown.paths.is_empty() {
        if inside.entries.is_empty() && !inside.more {
            text.push_str(" It is empty.");
        }
        return text;
    }
    text.push_str(" It holds: ");
    text.push_str(&shown.paths.join(", "));
    if cut || inside.more || entries.len() > shown.paths.len() {
        text.push_str(&format!(" (more: list_files `{path}`)"));
    }
    text
}

/// "`a.txt` is not a directory: it is a file. …", when it is one.
fn not_a_directory(workspace: &Workspace, at: &str, error: &WorkspaceError) -> Option<String> {
    let at = RelPath::parse(at).ok()?;
    match workspace.kind(&at) {
        Ok(Some(FileType::RegularFile)) => Some(format!("{error}: it is a file. Read it with read_file.")),
        _ => None,
    }
}

/// Entry paths named in one hint, within its bounds.
#[derive(Debug, Default)]
struct Shown {
    paths: Vec<String>,
    bytes: usize,
}

impl Shown {
    fn has_room(&self) -> bool {
        self.paths.len() < MAX_SHOWN && self.bytes < MAX_HINT_BYTES
    }

    /// Adds the entries of `dir` that fit; `true` when some did not.
    fn extend(&mut self, dir: &RelPath, entries: &[&(String, EntryKind)]) -> bool {
        for (name, kind) in entries {
            let mut shown = dir.join(&capped(name));
            if *kind == EntryKind::Dir {
                shown.push('/');
            }
            if !self.has_room() || self.bytes + shown.len() > MAX_HINT_BYTES {
                return true;
            }
            self.bytes += shown.len();
            self.paths.push(shown);
        }
        false
    }
}

/// The entries a tool can be pointed at (files and directories: symlinks
/// are refused, special files useless), less `skip`.
fn usable<'e>(
    entries: &'e [(String, EntryKind)],
    skip: Option<&'e str>,
) -> impl Iterator<Item = &'e (String, EntryKind)> {
    entries.iter().filter(move |(name, kind)| {
        matches!(kind, EntryKind::File | EntryKind::Dir) && Some(name.as_str()) != skip
    })
}

/// At most [`MAX_SHOWN`] usable entries: all of them in name order when
/// there are no more than that, otherwise those nearest any `wanted` name,
/// nearest first (ties in name order).
fn nearest<'e>(
    entries: &'e [(String, EntryKind)],
    wanted: &[&str],
    skip: Option<&'e str>,
) -> Vec<&'e (String, EntryKind)> {
    let mut picked: Vec<_> = usable(entries, skip).collect();
    if picked.len() > MAX_SHOWN {
        picked.sort_by_cached_key(|(name, _)| wanted.iter().map(|want| remoteness(want, name)).min());
        picked.truncate(MAX_SHOWN);
    }
    picked
}

/// How far an entry's name `have` is from the wanted name `want`; lower is
/// nearer, and it may be negative. The names are compared whole and without
/// their extensions, and the nearer comparison counts (so `utils.rs` is
/// near `utils/`, and `main.py` near `main.rs`).
pub(crate) fn remoteness(want: &str, have: &str) -> i64 {
    compare(want, have).min(compare(stem(want), stem(have)))
}

/// `name` without its last extension (a leading dot is no extension).
fn stem(name: &str) -> &str {
    match name.rfind('.') {
        Some(dot) if dot > 0 => &name[..dot],
        _ => name,
    }
}

/// The edit distance between the lowercased names counts twice; their
/// common prefix counts against it, and so does the shorter name when the
/// longer one holds it. Only the first [`MAX_COMPARED`] characters of each
/// are compared.
fn compare(want: &str, have: &str) -> i64 {
    let lower =
        |s: &str| -> Vec<char> { s.chars().take(MAX_COMPARED).flat_map(char::to_lowercase).collect() };
    let (want, have) = (lower(want), lower(have));
    let edits = edit_distance(&want, &have);
    let prefix = want.iter().zip(&have).take_while(|(a, b)| a == b).count();
    let (short, long) = if want.len() <= have.len() { (&want, &have) } else { (&have, &want) };
    let held = if !short.is_empty() && long.windows(short.len()).any(|w| w == short.as_slice()) {
        short.len()
    } else {
        0
    };
    2 * edits as i64 - prefix as i64 - held as i64
}

/// Levenshtein distance: insertions, deletions and substitutions.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == cb { diagonal } else { 1 + diagonal.min(above).min(row[j]) };
            diagonal = above;
        }
    }
    row[b.len()]
}

/// `name`, cut to at most [`MAX_NAME_BYTES`] at a character boundary.
fn capped(name: &str) -> Cow<'_, str> {
    if name.len() <= MAX_NAME_BYTES {
        return Cow::Borrowed(name);
    }
    let mut end = MAX_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &name[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank<'n>(want: &str, names: &[&'n str]) -> Vec<&'n str> {
        let mut names = names.to_vec();
        names.sort_by_key(|name| remoteness(want, name));
        names
    }

    #[test]
    fn the_same_name_in_another_case_is_nearest() {
        assert_eq!(rank("readme.md", &["Cargo.toml", "README.md", "read.rs"])[0], "README.md");
    }

    #[test]
    fn a_one_letter_slip_beats_a_different_name() {
        assert_eq!(rank("utils.rs", &["main.rs", "lib.rs", "util.rs"])[0], "util.rs");
        assert_eq!(rank("config.yaml", &["cargo.lock", "config.yml", "docs"])[0], "config.yml");
        assert_eq!(edit_distance(&['a', 'b', 'c'], &['a', 'c']), 1);
        assert_eq!(edit_distance(&[], &['x', 'y']), 2);
    }

    #[test]
    fn a_shared_stem_beats_a_shared_extension() {
        assert_eq!(rank("main.rs", &["lib.rs", "main.py", "mod.rs"])[0], "main.py");
    }

    #[test]
    fn a_file_named_like_a_directory_is_near_it() {
        assert_eq!(rank("utlis.rs", &["lib.rs", "iota.rs", "utils"])[0], "utils");
        assert_eq!(stem(".gitignore"), ".gitignore");
        assert_eq!(stem("a.tar.gz"), "a.tar");
    }

    #[test]
    fn a_name_holding_the_wanted_one_is_near() {
        assert_eq!(rank("helpers", &["Cargo.toml", "src", "test_helpers.py"])[0], "test_helpers.py");
    }

    #[test]
    fn long_names_are_compared_only_in_their_first_characters() {
        let long = "x".repeat(255);
        assert_eq!(remoteness(&long, &long), remoteness(&"x".repeat(64), &"x".repeat(64)));
    }

    #[test]
    fn few_entries_are_all_kept_in_name_order_and_many_are_ranked() {
        let entry = |name: &str| (name.to_owned(), EntryKind::File);
        let few = [entry("a.rs"), entry("b.rs"), ("link".to_owned(), EntryKind::Symlink), entry("z.rs")];
        let picked: Vec<&str> = nearest(&few, &["zz.rs"], None).iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(picked, ["a.rs", "b.rs", "z.rs"], "symlinks are left out");
        let many: Vec<_> =
            (0..20).map(|i| entry(&format!("file{i:02}.rs"))).chain([entry("zz.rs")]).collect();
        let picked = nearest(&many, &["zz.rs"], Some("file00.rs"));
        assert_eq!(picked.len(), MAX_SHOWN);
        assert_eq!(picked[0].0, "zz.rs");
        assert!(picked.iter().all(|(n, _)| n != "file00.rs"));
    }

    #[test]
    fn names_are_cut_at_a_character_boundary() {
        assert_eq!(capped("short"), "short");
        let long = "é".repeat(150); // 300 bytes
        let cut = capped(&long);
        assert!(cut.ends_with('…') && cut.len() <= MAX_NAME_BYTES + '…'.len_utf8(), "{cut}");
    }
}
