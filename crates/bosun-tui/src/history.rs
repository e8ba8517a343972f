//! Up/Down history of submitted messages, kept in a JSON-lines file (one
//! JSON string per submit, appended) so it outlives the session. Bounded:
//! the last [`MAX`] are kept, and the file is rewritten to them when it
//! has grown to twice that.

use std::io::Write;
use std::path::PathBuf;

/// Entries kept.
pub(crate) const MAX: usize = 1000;

#[derive(Debug, Default)]
pub(crate) struct History {
    entries: Vec<String>,
    file: Option<PathBuf>,
    /// The entry shown, while browsing.
    at: Option<usize>,
    /// What the editor held before browsing began.
    draft: String,
}

impl History {
    /// Loads `file`; a missing or unreadable file is an empty history, and
    /// lines that are not JSON strings are skipped.
    pub(crate) fn load(file: Option<PathBuf>) -> Self {
        let mut entries: Vec<String> = file
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .map(|text| text.lines().filter_map(|line| serde_json::from_str::<String>(line).ok()).collect())
            .unwrap_or_default();
        let grown = entries.len() >= 2 * MAX;
        if entries.len() > MAX {
            entries.drain(..entries.len() - MAX);
        }
        let history = Self { entries, file, at: None, draft: String::new() };
        if grown {
            history.rewrite();
        }
        history
    }

    #[cfg(test)]
    pub(crate) fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Records a submitted message (not a repeat of the last one) and
    /// appends it to the file. A file that cannot be written loses
    /// history, not the message, so the error is dropped.
    pub(crate) fn push(&mut self, entry: &str) {
        self.at = None;
        if entry.trim().is_empty() || self.entries.last().is_some_and(|last| last == entry) {
            return;
        }
        self.entries.push(entry.to_owned());
        if self.entries.len() > MAX {
            self.entries.remove(0);
        }
        if let Some(path) = &self.file {
            if let Some(parent) = path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            let line = serde_json::Value::String(entry.to_owned()).to_string();
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| writeln!(f, "{line}"));
        }
    }

    fn rewrite(&self) {
        if let Some(path) = &self.file {
            let text: String =
                self.entries.iter().map(|e| format!("{}\n", serde_json::Value::String(e.clone()))).collect();
            let _ = std::fs::write(path, text);
        }
    }

    /// The entry before the one shown (or the last, when not browsing);
    /// `current` is kept to come back to.
    pub(crate) fn older(&mut self, current: &str) -> Option<String> {
        let next = match self.at {
            None => {
                self.draft = current.to_owned();
                self.entries.len().checked_sub(1)?
            }
            Some(at) => at.checked_sub(1)?,
        };
        self.at = Some(next);
        self.entries.get(next).cloned()
    }

    /// The entry after the one shown, or the draft past the newest.
    pub(crate) fn newer(&mut self) -> Option<String> {
        let at = self.at?;
        if at + 1 < self.entries.len() {
            self.at = Some(at + 1);
            self.entries.get(at + 1).cloned()
        } else {
            self.at = None;
            Some(std::mem::take(&mut self.draft))
        }
    }

    /// The newest entry before `before` that holds `query`, ignoring case
    /// (none for an empty query): Ctrl+R's search.
    pub(crate) fn find(&self, query: &str, before: usize) -> Option<usize> {
        if query.is_empty() {
            return None;
        }
        let query = query.to_lowercase();
        let end = before.min(self.entries.len());
        self.entries[..end].iter().rposition(|entry| entry.to_lowercase().contains(&query))
    }

    /// The entry at `at`.
    pub(crate) fn get(&self, at: usize) -> Option<&str> {
        self.entries.get(at).map(String::as_str)
    }

    /// How many entries there are.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Browsing ends when the text is edited.
    pub(crate) fn reset(&mut self) {
        self.at = None;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn up_and_down_walk_the_history_and_come_back_to_the_draft() {
        let mut history = History::load(None);
        history.push("one");
        history.push("two");
        history.push("two");
        assert_eq!(history.older("draft").as_deref(), Some("two"));
        assert_eq!(history.older("two").as_deref(), Some("one"));
        assert_eq!(history.older("one"), None);
        assert_eq!(history.newer().as_deref(), Some("two"));
        assert_eq!(history.newer().as_deref(), Some("draft"));
        assert_eq!(history.newer(), None);
    }

    #[test]
    fn find_gives_the_newest_match_before_a_place_ignoring_case() {
        let mut history = History::load(None);
        for entry in ["fix the Parser", "run tests", "parser docs", "other"] {
            history.push(entry);
        }
        assert_eq!(history.find("parser", history.len()), Some(2));
        assert_eq!(history.find("parser", 2), Some(0), "older than the last match");
        assert_eq!(history.find("parser", 0), None);
        assert_eq!(history.find("", history.len()), None, "an empty query matches nothing");
        assert_eq!(history.find("nowhere", history.len()), None);
    }

    #[test]
    fn history_survives_a_restart_and_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/history.jsonl");
        let mut history = History::load(Some(path.clone()));
        history.push("first\nwith a second line");
        history.push("second \"quoted\"");
        let again = History::load(Some(path.clone()));
        assert_eq!(again.entries(), ["first\nwith a second line", "second \"quoted\""]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "one JSON line per submit: {text}");

        let many: String = (0..2 * MAX + 5).map(|i| format!("\"m{i}\"\nnot json\n")).collect();
        std::fs::write(&path, many).unwrap();
        let bounded = History::load(Some(path.clone()));
        assert_eq!(bounded.entries().len(), MAX);
        assert_eq!(bounded.entries().last().map(String::as_str), Some(&*format!("m{}", 2 * MAX + 4)));
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), MAX, "rewritten");
    }
}
