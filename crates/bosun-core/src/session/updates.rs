//! Applying a [`ToolSource`](crate::ToolSource)'s changes before a model
//! round: never inside a batch, so every call of one batch is gated against
//! one tool set. The tool set is rebuilt aside and swapped in only after the
//! authority change, if there is one, is durable (invariant 15).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::Session;
use super::tools::{ResolvedTool, ToolSet, ToolTable};
use super::turn::{Emitter, TurnState};
use crate::authority::AuthoritySnapshot;
use crate::error::TurnErrorKind;
use crate::event::Event;
use crate::journal::JournalRecord;
use crate::model::Support;
use crate::tool_source::ToolChanges;

/// What applying one [`ToolChanges`] makes of the session's tools.
struct Plan {
    tools: ToolSet,
    active: BTreeSet<String>,
    withdrawn: BTreeMap<String, String>,
    /// The new snapshot, when the ceiling changed.
    authority: Option<AuthoritySnapshot>,
    event: Event,
}

impl Session {
    /// Asks the tool source, when it has news, and applies it. The turn's
    /// cancellation abandons the question.
    pub(crate) async fn apply_tool_changes(
        &mut self,
        state: &TurnState,
        emitter: &mut Emitter<'_>,
    ) -> Result<(), TurnErrorKind> {
        let Some(source) = self.source.clone() else { return Ok(()) };
        if !source.pending() {
            return Ok(());
        }
        let changes = tokio::select! {
            biased;
            () = state.cancel.cancelled() => return Err(state.cancelled(emitter)),
            changes = source.changes() => changes,
        };
        if changes.is_empty() {
            return Ok(());
        }
        let plan = self.plan_changes(changes);
        if let Some(authority) = &plan.authority {
            self.record(JournalRecord::AuthorityChanged {
                authority: authority.clone(),
                resumed: Vec::new(),
            })
            .await?;
            self.authority = authority.clone();
        }
        self.tools = ToolTable::new(plan.tools, plan.active, plan.withdrawn);
        emitter.emit(plan.event)?;
        Ok(())
    }

    fn plan_changes(&self, changes: ToolChanges) -> Plan {
        let mut tools = (**self.tools.ceiling()).clone();
        let mut active = self.tools.active().clone();
        let mut withdrawn = self.tools.withdrawn().clone();
        let mut notices = changes.notices;
        let (mut gone, mut restored, mut added) = (Vec::new(), Vec::new(), Vec::new());
        let why = changes.why.unwrap_or_else(|| super::WITHDRAWN.to_owned());
        for name in changes.withdrawn {
            if tools.contains_key(&name) && withdrawn.insert(name.clone(), why.clone()).is_none() {
                gone.push(name);
            }
        }
        for tool in changes.offered {
            if self.capabilities.tools == Support::No {
                notices
                    .push(format!("tool `{}` not offered: the model takes no tools", tool.definition().name));
                continue;
            }
            let resolved = match ResolvedTool::resolve(&tool) {
                Ok(resolved) => resolved,
                Err(error) => {
                    notices.push(format!("a tool was not offered: {error}"));
                    continue;
                }
            };
            let name = resolved.definition.name.clone();
            match tools.get(&name) {
                // Same authority: a new implementation (a restarted server).
                Some(known) if known.authority() == resolved.authority() => {
                    if withdrawn.contains_key(&name) {
                        restored.push(name.clone());
                    }
                }
                Some(_) => added.push(name.clone()),
                None => {
                    active.insert(name.clone());
                    added.push(name.clone());
                }
            }
            withdrawn.remove(&name);
            gone.retain(|n| *n != name);
            tools.insert(name, Arc::new(resolved));
        }
        let authority = (!added.is_empty()).then(|| {
            let mut snapshot = self.authority.clone();
            snapshot.tools = tools.values().map(|t| t.authority()).collect();
            let mut enabled: BTreeSet<String> = snapshot.enabled.into_iter().collect();
            enabled.extend(added.iter().filter(|n| active.contains(*n)).cloned());
            snapshot.enabled = enabled.into_iter().collect();
            snapshot
        });
        Plan {
            tools: Arc::new(tools),
            active,
            withdrawn,
            authority,
            event: Event::ToolsChanged { withdrawn: gone, restored, added, notices },
        }
    }
}
