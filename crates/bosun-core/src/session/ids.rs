//! Session-minted call ids (invariant 4): unique across the whole history,
//! mapped both ways to the ids models gave, and rolled back with a turn.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::message::{CallId, Message};

#[derive(Debug, Default)]
pub(crate) struct CallIdRegistry {
    used: HashSet<CallId>,
    /// Ids minted by this process, in order, so a rolled-back turn can
    /// return its ids.
    minted: Vec<CallId>,
    origin: HashMap<CallId, String>,
    by_provider: HashMap<String, Vec<CallId>>,
}

impl CallIdRegistry {
    /// The registry of a resumed session: every id of its history is used,
    /// and those the journal mapped keep their model ids.
    pub(crate) fn resumed(ids: impl IntoIterator<Item = CallId>, origins: &BTreeMap<CallId, String>) -> Self {
        let mut registry = Self::default();
        for id in ids {
            registry.used.insert(id);
            if let Some(provider) = origins.get(&id) {
                registry.origin.insert(id, provider.clone());
                registry.by_provider.entry(provider.clone()).or_default().push(id);
            }
        }
        registry
    }

    /// The model ids of the tool calls in `assistant`, for its record.
    pub(crate) fn origins_of(&self, assistant: &Message) -> BTreeMap<CallId, String> {
        assistant
            .tool_calls()
            .filter_map(|call| Some((call.id, self.origin.get(&call.id)?.clone())))
            .collect()
    }

    /// Invariant 4: call ids from a model are untrusted. Each call gets a
    /// session-minted UUIDv7, unique across history, mapped both ways.
    /// Held by `invariant_04_minted_call_ids_are_unique_and_mapped`.
    pub(crate) fn mint(&mut self, from_model: &str) -> CallId {
        let mut id = CallId::new_v7();
        while !self.used.insert(id) {
            id = CallId::new_v7();
        }
        self.minted.push(id);
        self.origin.insert(id, from_model.to_owned());
        self.by_provider.entry(from_model.to_owned()).or_default().push(id);
        id
    }

    pub(crate) fn mark(&self) -> usize {
        self.minted.len()
    }

    pub(crate) fn rollback(&mut self, mark: usize) {
        for id in self.minted.drain(mark..) {
            self.used.remove(&id);
            if let Some(provider) = self.origin.remove(&id)
                && let Some(ids) = self.by_provider.get_mut(&provider)
            {
                ids.retain(|other| *other != id);
                if ids.is_empty() {
                    self.by_provider.remove(&provider);
                }
            }
        }
    }

    pub(crate) fn origin(&self, id: CallId) -> Option<&str> {
        self.origin.get(&id).map(String::as_str)
    }

    pub(crate) fn minted_for(&self, provider_id: &str) -> &[CallId] {
        self.by_provider.get(provider_id).map(Vec::as_slice).unwrap_or_default()
    }

    pub(crate) fn is_used(&self, id: CallId) -> bool {
        self.used.contains(&id)
    }
}
