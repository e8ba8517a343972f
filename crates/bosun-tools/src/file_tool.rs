//! The skeleton the file tools share: a [`FileTool`] says what it is called,
//! what it takes and what one call does; [`FileToolAdapter`] makes it a
//! `bosun_core::Tool` (definition, category, effects, and a call that parses
//! its arguments and runs the work on the blocking pool).

use std::marker::PhantomData;

use bosun_core::{CallEffects, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput};
use serde::de::DeserializeOwned;

use crate::common::{Shared, Stop, blocking, blocking_stoppable, parse_args};

/// How a file tool's blocking work meets cancellation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// Runs to the end once started, so no change is left half made; its
    /// [`Stop`] is never set.
    ToCompletion,
    /// Stops early when the call is cancelled or times out (walks and
    /// searches), answering with what it found and saying so.
    Stoppable,
}

/// One file tool.
pub(crate) trait FileTool: Send + Sync + 'static {
    /// The argument object, as the schema describes it.
    type Args: DeserializeOwned + Send + 'static;
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    const CATEGORY: ToolCategory;
    const WORK: Work;

    /// The JSON Schema of [`FileTool::Args`].
    fn parameters() -> serde_json::Value;

    /// What a call would do, for the permission pipeline (schema-valid
    /// arguments, not yet parsed).
    fn effects(arguments: &serde_json::Value) -> CallEffects {
        let _ = arguments;
        CallEffects::none()
    }

    /// One call, on the blocking pool.
    fn run(shared: &Shared, args: &Self::Args, stop: &Stop) -> ToolOutput;
}

/// A [`FileTool`] as a `bosun_core::Tool`.
#[derive(Debug)]
pub struct FileToolAdapter<T> {
    shared: Shared,
    definition: ToolDefinition,
    tool: PhantomData<fn() -> T>,
}

impl<T> FileToolAdapter<T> {
    pub(crate) fn new(shared: Shared) -> Self
    where
        T: FileTool,
    {
        let definition = ToolDefinition::new(T::NAME, T::DESCRIPTION, T::parameters());
        Self { shared, definition, tool: PhantomData }
    }
}

impl<T: FileTool> Tool for FileToolAdapter<T> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        T::CATEGORY
    }

    fn effects(&self, arguments: &serde_json::Value) -> CallEffects {
        T::effects(arguments)
    }

    fn execute<'a>(&'a self, arguments: serde_json::Value, context: ToolContext) -> ToolFuture<'a> {
        let shared = self.shared.clone();
        Box::pin(async move {
            let args: T::Args = match parse_args(T::NAME, arguments) {
                Ok(args) => args,
                Err(output) => return output,
            };
            match T::WORK {
                Work::ToCompletion => blocking(move || T::run(&shared, &args, &Stop::default())).await,
                Work::Stoppable => {
                    blocking_stoppable(context.cancel, move |stop| T::run(&shared, &args, stop)).await
                }
            }
        })
    }
}
