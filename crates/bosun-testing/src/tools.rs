//! Tools made from closures, counting their invocations.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bosun_core::{
    CallEffects, CancellationPolicy, RetryPolicy, Tool, ToolCategory, ToolContext, ToolDefinition,
    ToolFuture, ToolOutput,
};
use serde_json::{Value, json};

type Body = dyn Fn(Value, ToolContext) -> ToolFuture<'static> + Send + Sync;
type Effects = dyn Fn(&Value) -> CallEffects + Send + Sync;

/// A tool whose behaviour is a closure. Records the arguments of every
/// invocation; clones share the record.
#[derive(Clone)]
pub struct FnTool {
    definition: ToolDefinition,
    category: ToolCategory,
    cancellation: CancellationPolicy,
    retry: RetryPolicy,
    body: Arc<Body>,
    effects: Option<Arc<Effects>>,
    calls: Arc<Mutex<Vec<Value>>>,
    finished: Arc<AtomicUsize>,
}

impl std::fmt::Debug for FnTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.definition.name)
            .field("category", &self.category)
            .finish()
    }
}

impl FnTool {
    /// A tool running an async closure. Schema: any object.
    pub fn new(
        name: &str,
        category: ToolCategory,
        body: impl Fn(Value, ToolContext) -> ToolFuture<'static> + Send + Sync + 'static,
    ) -> Self {
        Self {
            definition: ToolDefinition::new(name, format!("test tool {name}"), json!({"type": "object"})),
            category,
            cancellation: CancellationPolicy::FinishOnceStarted,
            retry: RetryPolicy::Never,
            body: Arc::new(body),
            effects: None,
            calls: Arc::default(),
            finished: Arc::default(),
        }
    }

    /// A tool answering with a synchronous closure's text.
    pub fn text(
        name: &str,
        category: ToolCategory,
        answer: impl Fn(&Value) -> String + Send + Sync + 'static,
    ) -> Self {
        let answer = Arc::new(answer);
        Self::new(name, category, move |args, _| {
            let text = answer(&args);
            Box::pin(async move { ToolOutput::text(text) })
        })
    }

    /// A read tool that echoes its arguments.
    pub fn echo(name: &str) -> Self {
        Self::text(name, ToolCategory::Read, |args| args.to_string())
    }

    /// A tool that panics with `message`.
    pub fn panicking(name: &str, message: &'static str) -> Self {
        #[allow(clippy::panic)]
        Self::new(name, ToolCategory::Read, move |_, _| Box::pin(async move { panic!("{message}") }))
    }

    /// A tool that runs until its call is cancelled, then returns `stopped`.
    pub fn until_cancelled(name: &str, category: ToolCategory) -> Self {
        Self::new(name, category, |_, context| {
            Box::pin(async move {
                context.cancel.cancelled().await;
                ToolOutput::error("stopped on cancellation")
            })
        })
    }

    /// Sets the parameter schema.
    pub fn schema(mut self, parameters: Value) -> Self {
        self.definition.parameters = parameters;
        self
    }

    /// Sets the cancellation policy.
    pub fn cancellation(mut self, policy: CancellationPolicy) -> Self {
        self.cancellation = policy;
        self
    }

    /// Sets the retry policy.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Sets the description.
    pub fn description(mut self, text: &str) -> Self {
        self.definition.description = text.to_owned();
        self
    }

    /// Sets what the tool reports a call would do (`Tool::effects`).
    pub fn effects(mut self, effects: impl Fn(&Value) -> CallEffects + Send + Sync + 'static) -> Self {
        self.effects = Some(Arc::new(effects));
        self
    }

    /// Arguments of every invocation so far.
    pub fn calls(&self) -> Vec<Value> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Invocations that returned (did not panic or get dropped).
    pub fn finished(&self) -> usize {
        self.finished.load(Ordering::SeqCst)
    }
}

impl Tool for FnTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    fn cancellation(&self) -> CancellationPolicy {
        self.cancellation
    }

    fn retry(&self) -> RetryPolicy {
        self.retry
    }

    fn effects(&self, arguments: &Value) -> CallEffects {
        self.effects.as_ref().map_or_else(CallEffects::none, |effects| effects(arguments))
    }

    fn execute<'a>(&'a self, arguments: Value, context: ToolContext) -> ToolFuture<'a> {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(arguments.clone());
        }
        let work = (self.body)(arguments, context);
        let finished = Arc::clone(&self.finished);
        Box::pin(async move {
            let output = work.await;
            finished.fetch_add(1, Ordering::SeqCst);
            output
        })
    }
}
