//! `find_tools`: how a child finds the tools of its authority it was not
//! shown first. The hidden tools start withdrawn (a [`ToolSource`] says so
//! before the first round); a search offers the ones it matches again,
//! from the next round on. They were in the child's ceiling all along, so
//! finding one changes no authority: nothing outside it can be found.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::tool::{Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput};
use crate::tool_source::{ToolChanges, ToolChangesFuture, ToolSource};

/// The tool's name.
pub const FIND_TOOLS: &str = "find_tools";

/// Most tools one search offers.
const MATCHES: usize = 8;

/// What a call to a tool not found yet is told.
pub const NOT_FOUND_YET: &str = "it is not offered to you yet; call find_tools with the tool's name or what you need, and it is offered \
     from your next step on";

/// `find_tools` over `hidden`, and the source that keeps them from the
/// requests until a search finds them. With nothing hidden the tool finds
/// nothing (a resumed sub-agent, shown its whole authority, keeps the tool
/// its authority was recorded with).
pub fn deferred_tools(hidden: Vec<Arc<dyn Tool>>) -> (Arc<dyn Tool>, Arc<dyn ToolSource>) {
    let finder = Finder::new(hidden);
    (Arc::new(finder.tool()), finder.source())
}

/// The hidden tools and what was found of them.
pub(crate) struct Finder {
    shared: Arc<Shared>,
    definition: ToolDefinition,
}

struct Shared {
    hidden: Vec<Arc<dyn Tool>>,
    /// Withdrawals not yet told, then found tools not yet offered.
    pending: Mutex<Pending>,
    news: AtomicBool,
}

#[derive(Default)]
struct Pending {
    withdraw: Vec<String>,
    offer: Vec<Arc<dyn Tool>>,
    found: Vec<String>,
}

impl Finder {
    pub(crate) fn new(hidden: Vec<Arc<dyn Tool>>) -> Self {
        let withdraw = hidden.iter().map(|t| t.definition().name.clone()).collect();
        let shared = Arc::new(Shared {
            hidden,
            pending: Mutex::new(Pending { withdraw, ..Pending::default() }),
            news: AtomicBool::new(true),
        });
        let definition = ToolDefinition::new(
            FIND_TOOLS,
            "Find more of the tools you may use, by what they do (\"edit files\", \"run tests\", a tool's \
             name). Matching tools are offered to you from your next step on.",
            json!({
                "type": "object",
                "properties": {"query": {"type": "string", "description": "Words for what the tool does."}},
                "required": ["query"],
            }),
        );
        Self { shared, definition }
    }

    pub(crate) fn source(&self) -> Arc<dyn ToolSource> {
        Arc::new(FinderSource(Arc::clone(&self.shared)))
    }

    pub(crate) fn tool(&self) -> FindTools {
        FindTools { shared: Arc::clone(&self.shared), definition: self.definition.clone() }
    }
}

struct FinderSource(Arc<Shared>);

impl ToolSource for FinderSource {
    fn pending(&self) -> bool {
        self.0.news.load(Ordering::Acquire)
    }

    fn changes(&self) -> ToolChangesFuture<'_> {
        Box::pin(async move {
            self.0.news.store(false, Ordering::Release);
            let Ok(mut pending) = self.0.pending.lock() else { return ToolChanges::default() };
            let withdraw = std::mem::take(&mut pending.withdraw);
            let offer = std::mem::take(&mut pending.offer);
            ToolChanges::withdraw(withdraw).because(NOT_FOUND_YET).offering(offer)
        })
    }
}

/// The `find_tools` tool.
pub(crate) struct FindTools {
    shared: Arc<Shared>,
    definition: ToolDefinition,
}

impl Tool for FindTools {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn execute<'a>(&'a self, arguments: serde_json::Value, _: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let query = arguments["query"].as_str().unwrap_or_default().to_lowercase();
            let words: Vec<&str> =
                query.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| !w.is_empty()).collect();
            let mut scored: Vec<(usize, &Arc<dyn Tool>)> = self
                .shared
                .hidden
                .iter()
                .map(|tool| {
                    let definition = tool.definition();
                    let text = format!("{} {}", definition.name, definition.description).to_lowercase();
                    (words.iter().filter(|w| text.contains(*w)).count(), tool)
                })
                .filter(|(score, _)| *score > 0)
                .collect();
            scored.sort_by(|a, b| {
                b.0.cmp(&a.0).then_with(|| a.1.definition().name.cmp(&b.1.definition().name))
            });
            let Ok(mut pending) = self.shared.pending.lock() else {
                return ToolOutput::error("find_tools is unavailable");
            };
            let mut lines = Vec::new();
            for (_, tool) in scored.into_iter().take(MATCHES) {
                let definition = tool.definition();
                let first = definition.description.lines().next().unwrap_or_default();
                lines.push(format!("- {}: {first}", definition.name));
                if !pending.found.contains(&definition.name) {
                    pending.found.push(definition.name.clone());
                    pending.offer.push(Arc::clone(tool));
                }
            }
            drop(pending);
            if lines.is_empty() && self.shared.hidden.is_empty() {
                return ToolOutput::text("no tool matches: every tool you may use is offered to you already");
            }
            if lines.is_empty() {
                let mut names: Vec<&str> =
                    self.shared.hidden.iter().map(|t| t.definition().name.as_str()).collect();
                names.sort_unstable();
                return ToolOutput::text(format!(
                    "no tool matches; the others you may use: {}",
                    names.join(", ")
                ));
            }
            self.shared.news.store(true, Ordering::Release);
            ToolOutput::text(format!("offered from your next step on:\n{}", lines.join("\n")))
        })
    }
}
