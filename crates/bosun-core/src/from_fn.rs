//! A tool and an approval policy made from closures, for programs that
//! embed bosun and need one small tool or rule without a type of their own
//! (as [`FnSink`](crate::event::FnSink) is for events).

use std::future::Future;

use crate::permission::{ApprovalDecision, ApprovalFuture, ApprovalHandler, ApprovalRequest};
use crate::tool::{Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput};

/// A tool whose call runs an async closure of its arguments. It keeps the
/// trait's defaults: finished once started, never retried, no effects
/// beyond its category (so give a tool that writes or runs programs a type
/// of its own that reports them).
pub struct FnTool<F> {
    definition: ToolDefinition,
    category: ToolCategory,
    run: F,
}

impl<F, Fut> FnTool<F>
where
    F: Fn(serde_json::Value) -> Fut + Send + Sync,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    /// A tool shown to the model as `definition`, judged by the permission
    /// pipeline as `category`, running `run`.
    pub fn new(definition: ToolDefinition, category: ToolCategory, run: F) -> Self {
        Self { definition, category, run }
    }
}

impl<F> std::fmt::Debug for FnTool<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.definition.name)
            .field("category", &self.category)
            .finish()
    }
}

impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(serde_json::Value) -> Fut + Send + Sync,
    Fut: Future<Output = ToolOutput> + Send + 'static,
{
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    fn execute<'a>(&'a self, arguments: serde_json::Value, _context: ToolContext) -> ToolFuture<'a> {
        Box::pin((self.run)(arguments))
    }
}

/// An approval policy deciding each request with a closure, at once.
pub struct FnApprover<F>(pub F);

impl<F> std::fmt::Debug for FnApprover<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnApprover")
    }
}

impl<F> ApprovalHandler for FnApprover<F>
where
    F: Fn(&ApprovalRequest) -> ApprovalDecision + Send + Sync,
{
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let decision = (self.0)(request);
        Box::pin(std::future::ready(decision))
    }
}
