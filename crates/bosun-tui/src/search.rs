//! Ctrl+R: reverse incremental search of the history, as bash and Claude
//! Code have it. Typing narrows to the newest entry holding the query
//! (case ignored); Ctrl+R again steps to an older one; Enter puts the match
//! in the editor without sending it; Esc (or Ctrl+G, or Ctrl+C) gives the
//! search up and leaves the editor as it was; a movement key takes the match
//! and moves in it. The editor is untouched until a match is taken, so the
//! prompt area shows the query and the match in its place.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::App;
use crate::protocol::FromUi;

/// A search under way.
#[derive(Debug, Default)]
pub(crate) struct Search {
    pub(crate) query: String,
    /// The history entry that matches, when one does.
    pub(crate) found: Option<usize>,
}

impl App {
    /// Ctrl+R in the editor: a search begins.
    pub(crate) fn start_search(&mut self) {
        self.search = Some(Search::default());
    }

    /// The entry the search shows, if any.
    pub(crate) fn search_match(&self) -> Option<&str> {
        self.search.as_ref().and_then(|s| s.found).and_then(|at| self.history.get(at))
    }

    /// A key while searching; what to send the CLI (a movement key passed
    /// on to the editor may send nothing, but Enter never sends).
    pub(crate) fn search_key(&mut self, key: KeyEvent) -> Vec<FromUi> {
        let Some(search) = &mut self.search else { return Vec::new() };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('r') if ctrl => {
                let before = search.found.unwrap_or(self.history.len());
                if let Some(older) = self.history.find(&search.query, before) {
                    search.found = Some(older);
                }
            }
            KeyCode::Char('g') if ctrl => self.search = None,
            KeyCode::Esc => self.search = None,
            KeyCode::Char(c) if !ctrl => self.search_type(c.encode_utf8(&mut [0; 4])),
            KeyCode::Backspace => {
                search.query.pop();
                search.found = self.history.find(&search.query, self.history.len());
            }
            KeyCode::Enter => self.take_match(),
            KeyCode::Left
            | KeyCode::Right
            | KeyCode::Home
            | KeyCode::End
            | KeyCode::Up
            | KeyCode::Down
            | KeyCode::Tab => {
                self.take_match();
                return self.key_at(key, self.now);
            }
            _ => {}
        }
        Vec::new()
    }

    /// Text typed or pasted into the query (control characters left out:
    /// the query is one line).
    pub(crate) fn search_type(&mut self, text: &str) {
        let Some(search) = &mut self.search else { return };
        search.query.extend(text.chars().filter(|c| !c.is_control()));
        // The match so far stays while it still matches.
        let from = search.found.map_or(self.history.len(), |at| at + 1);
        search.found = self.history.find(&search.query, from);
    }

    /// The match goes into the editor (nothing when none), and the search
    /// ends.
    fn take_match(&mut self) {
        if let Some(entry) = self.search_match().map(str::to_owned) {
            self.editor.set(&entry);
            self.edited();
        }
        self.search = None;
    }
}
