//! Custom slash commands (`bosun_tools::commands`) as the conversation
//! runs them: the file's prompt, with what was typed after the name, sent
//! as the person's message; its `allowed-tools` narrow that turn's tools
//! and its `model` runs that turn on another model, both put back after.

use bosun_tools::commands::CustomCommand;
use bosun_tui::{FromUi, NoticeKind, SlashCommand};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Conversation, Flow};

/// The custom commands as `/help` and completion list them: the
/// description, the argument hint and where the command comes from.
pub(super) fn listed(commands: &bosun_tools::commands::Commands) -> Vec<SlashCommand> {
    commands
        .iter()
        .map(|command| {
            let hint = command.argument_hint().map(|hint| format!(" {hint}")).unwrap_or_default();
            SlashCommand::new(
                command.name(),
                format!("{}{hint} ({})", command.description(), command.origin()),
            )
        })
        .collect()
}

impl Conversation<'_> {
    /// Runs the custom command `command` with `arguments`.
    pub(super) async fn custom(
        &mut self,
        command: CustomCommand,
        arguments: &str,
        from_ui: &mut UnboundedReceiver<FromUi>,
    ) -> Flow {
        let typed = format!("/{} {arguments}", command.name());
        self.notice(NoticeKind::Info, format!("› {} ({})", typed.trim_end(), command.path().display()));
        let text = command.expand(arguments);
        let Some(prompt) = self.message(&text, super::setup::Writer::File) else { return Flow::Continue };
        let model = command.model().filter(|model| !bosun_agent::children::means_session_model(model));
        let previous = self.run.model.clone();
        let switched = match model {
            Some(model) if previous.as_deref() != Some(model) => {
                match self.set_model(Some(model.to_owned())).await {
                    Ok(()) => true,
                    Err(error) => {
                        self.notice(
                            NoticeKind::Error,
                            format!("/{} asks for model {model}: {error:#}", command.name()),
                        );
                        return Flow::Continue;
                    }
                }
            }
            _ => false,
        };
        let before: Vec<String> = self.session.active_tools().map(str::to_owned).collect();
        if let Some(allowed) = command.tools() {
            let narrowed = before.iter().filter(|tool| allowed.contains(tool));
            let narrowed: Vec<&String> = narrowed.collect();
            let shown = if narrowed.is_empty() {
                "no tools".to_owned()
            } else {
                narrowed.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
            };
            if let Err(error) = self.session.set_active_tools(narrowed) {
                self.notice(NoticeKind::Error, format!("/{}: {error}", command.name()));
                if switched && let Err(error) = self.set_model(previous).await {
                    self.notice(NoticeKind::Error, format!("going back to the model: {error:#}"));
                }
                return Flow::Continue;
            }
            self.notice(NoticeKind::Info, format!("this turn's tools: {shown}"));
        }
        let flow = self.turn(Some(prompt), from_ui).await;
        self.put_tools_back(&before);
        if switched && let Err(error) = self.set_model(previous).await {
            self.notice(
                NoticeKind::Error,
                format!("going back to the model before /{}: {error:#}", command.name()),
            );
        }
        flow
    }

    /// Makes `tools` the active set again after a command's turn.
    fn put_tools_back(&mut self, tools: &[String]) {
        if let Err(error) = self.session.set_active_tools(tools) {
            self.notice(NoticeKind::Error, format!("the tools could not be put back: {error}"));
        }
    }
}
