//! [`ToolSource`]: tools whose availability changes while a session runs,
//! such as an MCP server's, which may die, come back, or change its list.
//!
//! The session asks its source between model rounds, never inside a batch,
//! so one batch always sees one tool set. Withdrawing a tool only takes it
//! out of the active set (calls then get a synthetic result, invariant 5);
//! the authority ceiling changes only when the source offers a tool the
//! ceiling does not hold in that exact form, and that change is journaled as
//! a new authority snapshot so a resume compares against what the session
//! last ran under (invariant 7).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::tool::Tool;

/// The future [`ToolSource::changes`] returns.
pub type ToolChangesFuture<'a> = Pin<Box<dyn Future<Output = ToolChanges> + Send + 'a>>;

/// Tools that may be withdrawn, offered again or added between rounds.
pub trait ToolSource: Send + Sync {
    /// Whether [`ToolSource::changes`] has anything to say. Called before
    /// every model round, so it must be cheap (a flag).
    fn pending(&self) -> bool;

    /// What changed since the last call. The session applies the result
    /// before the next model round; the turn's cancellation abandons it.
    fn changes(&self) -> ToolChangesFuture<'_>;
}

/// What changed in a [`ToolSource`].
#[derive(Default)]
#[non_exhaustive]
pub struct ToolChanges {
    /// Tools no longer available (their server died, or dropped them from
    /// its list). They stay in the ceiling; calls to them are refused.
    pub withdrawn: Vec<String>,
    /// Tools available now. One the ceiling holds with the same definition,
    /// category and cancellation policy replaces its implementation and is
    /// active again (a restarted server); any other is an authority change.
    pub offered: Vec<Arc<dyn Tool>>,
    /// Messages for the person: tools not offered and why, servers gone.
    pub notices: Vec<String>,
    /// What a call to one of `withdrawn` is told ([`WITHDRAWN`](crate::results::WITHDRAWN)
    /// when `None`).
    pub why: Option<String>,
}

impl ToolChanges {
    /// Changes withdrawing `names`.
    pub fn withdraw(names: impl IntoIterator<Item = String>) -> Self {
        Self { withdrawn: names.into_iter().collect(), ..Self::default() }
    }

    /// Adds `tools` to what is offered.
    pub fn offering(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.offered.extend(tools);
        self
    }

    /// Says what a call to a tool withdrawn by these changes is told.
    pub fn because(mut self, why: impl Into<String>) -> Self {
        self.why = Some(why.into());
        self
    }

    /// Adds a notice.
    pub fn notice(mut self, text: impl Into<String>) -> Self {
        self.notices.push(text.into());
        self
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.withdrawn.is_empty() && self.offered.is_empty() && self.notices.is_empty()
    }
}

impl fmt::Debug for ToolChanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let offered: Vec<&str> = self.offered.iter().map(|t| t.definition().name.as_str()).collect();
        f.debug_struct("ToolChanges")
            .field("withdrawn", &self.withdrawn)
            .field("offered", &offered)
            .field("notices", &self.notices)
            .finish()
    }
}
