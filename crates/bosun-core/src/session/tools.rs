//! [`ToolTable`]: the session's tools (the authority ceiling, the active
//! subset, those their source withdrew) and the definitions the model is
//! shown, which every change of the other three recomputes, so a request
//! never offers a tool a call to it would be refused.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::authority::ToolAuthority;
use crate::error::BuildError;
use crate::schema::CompiledSchema;
use crate::tool::{CancellationPolicy, RetryPolicy, Tool, ToolCategory, ToolDefinition};

/// A tool of the ceiling with what the session asked of it once: its
/// definition, compiled schema and policies.
pub(crate) struct ResolvedTool {
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) definition: ToolDefinition,
    pub(crate) schema: CompiledSchema,
    pub(crate) category: ToolCategory,
    pub(crate) cancellation: CancellationPolicy,
    pub(crate) retry: RetryPolicy,
}

impl ResolvedTool {
    /// Checks a tool's name and compiles its schema: the one way a tool
    /// enters the ceiling, at build time or from a
    /// [`ToolSource`](crate::ToolSource) between rounds.
    pub(crate) fn resolve(tool: &Arc<dyn Tool>) -> Result<Self, BuildError> {
        let definition = tool.definition().clone();
        let name = definition.name.clone();
        let valid_name = (1..=64).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid_name {
            return Err(BuildError::ToolName(name));
        }
        let schema = CompiledSchema::compile(&definition.parameters)
            .map_err(|source| BuildError::Schema { tool: name.clone(), source })?;
        Ok(Self {
            category: tool.category(),
            cancellation: tool.cancellation(),
            retry: tool.retry(),
            tool: Arc::clone(tool),
            schema,
            definition,
        })
    }

    /// The tool as the authority snapshot records it.
    pub(crate) fn authority(&self) -> ToolAuthority {
        ToolAuthority {
            definition: self.definition.clone(),
            category: self.category,
            cancellation: self.cancellation,
        }
    }
}

/// The ceiling by name; shared, so planning a change copies no tool.
pub(crate) type ToolSet = Arc<BTreeMap<String, Arc<ResolvedTool>>>;

/// The session's tools and what the model is shown of them.
pub(crate) struct ToolTable {
    ceiling: ToolSet,
    active: BTreeSet<String>,
    /// Tools the source withdrew (a server died or dropped them), each with
    /// what a call to it is told: out of the request and refused, whether
    /// active or not, until offered again.
    withdrawn: BTreeMap<String, String>,
    /// Definitions shown to the model: the active tools only. A disabled
    /// tool is withdrawn from the request even when history calls it (its
    /// calls and results stay in history; a call to it now is refused,
    /// invariant 5), as the answer-only round withdraws every tool.
    advertised: Vec<ToolDefinition>,
    /// Characters of `advertised` as JSON, for the request's estimate.
    advertised_chars: usize,
}

impl ToolTable {
    pub(crate) fn new(
        ceiling: ToolSet,
        active: BTreeSet<String>,
        withdrawn: BTreeMap<String, String>,
    ) -> Self {
        let mut table = Self { ceiling, active, withdrawn, advertised: Vec::new(), advertised_chars: 0 };
        table.refresh();
        table
    }

    pub(crate) fn ceiling(&self) -> &ToolSet {
        &self.ceiling
    }

    pub(crate) fn active(&self) -> &BTreeSet<String> {
        &self.active
    }

    pub(crate) fn withdrawn(&self) -> &BTreeMap<String, String> {
        &self.withdrawn
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Arc<ResolvedTool>> {
        self.ceiling.get(name)
    }

    /// The tool a call names, or why the call is refused before any
    /// approval (invariant 5): unknown, disabled, or withdrawn.
    pub(crate) fn callable(&self, name: &str) -> Result<Arc<ResolvedTool>, String> {
        let Some(tool) = self.ceiling.get(name) else {
            let known: Vec<&str> = self.active.iter().map(String::as_str).collect();
            return Err(format!("unknown tool `{name}`; available tools: {}", known.join(", ")));
        };
        if !self.active.contains(name) {
            return Err(format!("tool `{name}` is disabled in this session"));
        }
        if let Some(why) = self.withdrawn.get(name) {
            return Err(format!("tool `{name}` is not available now: {why}"));
        }
        Ok(Arc::clone(tool))
    }

    /// The definitions a request offers: none in an answer-only round.
    pub(crate) fn offered(&self, answer_only: bool) -> &[ToolDefinition] {
        if answer_only { &[] } else { &self.advertised }
    }

    /// Characters of [`ToolTable::offered`], for the request's estimate.
    pub(crate) fn offered_chars(&self, answer_only: bool) -> usize {
        if answer_only { 0 } else { self.advertised_chars }
    }

    pub(crate) fn disable(&mut self, name: &str) -> Result<(), BuildError> {
        self.check_known(name)?;
        self.active.remove(name);
        self.refresh();
        Ok(())
    }

    pub(crate) fn enable(&mut self, name: &str) -> Result<(), BuildError> {
        self.check_known(name)?;
        self.active.insert(name.to_owned());
        self.refresh();
        Ok(())
    }

    /// Atomic: an unknown name changes nothing.
    pub(crate) fn set_active<I, S>(&mut self, names: I) -> Result<(), BuildError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut next = BTreeSet::new();
        for name in names {
            let name = name.as_ref();
            self.check_known(name)?;
            next.insert(name.to_owned());
        }
        self.active = next;
        self.refresh();
        Ok(())
    }

    pub(crate) fn restore(&mut self) {
        self.active = self.ceiling.keys().cloned().collect();
        self.refresh();
    }

    fn check_known(&self, name: &str) -> Result<(), BuildError> {
        if self.ceiling.contains_key(name) { Ok(()) } else { Err(BuildError::UnknownTool(name.to_owned())) }
    }

    fn refresh(&mut self) {
        self.advertised = self
            .ceiling
            .values()
            .filter(|t| {
                self.active.contains(&t.definition.name) && !self.withdrawn.contains_key(&t.definition.name)
            })
            .map(|t| t.definition.clone())
            .collect();
        self.advertised_chars = serde_json::to_string(&self.advertised).map_or(0, |json| json.len());
    }
}
