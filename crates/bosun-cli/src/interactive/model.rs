//! `/model` and `/effort`: the same stored session goes on with another
//! model or reasoning effort (rebuilt on the new settings, so the journal
//! records them and a resume runs on them again). `/model` alone picks from
//! the models whose provider has a key (`bosun_agent::model::choices`),
//! then the effort.

use bosun_tui::{NoticeKind, PickItem};

use super::Conversation;
use crate::cli::EffortArg;

/// The model as the status line shows it: `PROVIDER/MODEL`, and the
/// reasoning effort when one is set (`openai/gpt-5 (high)`).
pub(super) fn shown(settings: &crate::config::Settings) -> String {
    let label = bosun_agent::model::model_label(settings);
    match settings.reasoning_effort {
        Some(Some(effort)) => format!("{label} ({effort})"),
        Some(None) => format!("{label} (reasoning off)"),
        None => label,
    }
}

/// The effort levels `/effort` and the picker take, by name.
const EFFORTS: [(&str, Option<EffortArg>, &str); 5] = [
    ("default", None, "the model's default"),
    ("low", Some(EffortArg::Low), "low: quick answers"),
    ("medium", Some(EffortArg::Medium), "medium"),
    ("high", Some(EffortArg::High), "high: the most reasoning"),
    ("off", Some(EffortArg::Off), "off, where the model can turn reasoning off"),
];

impl Conversation<'_> {
    pub(super) async fn model(&mut self, args: &str) -> anyhow::Result<()> {
        if !args.is_empty() {
            return self.set_model(Some(args.to_owned())).await;
        }
        let choices = bosun_agent::model::choices(&self.settings, self.env);
        let items = choices.iter().map(|spec| PickItem::new(spec.as_str(), spec.as_str())).collect();
        let Some(model) = self.pick(&format!("Model (now {})", shown(&self.settings)), items).await else {
            return Ok(());
        };
        let effort = if bosun_agent::config::models::is_local_spec(&model) {
            None
        } else {
            let items = EFFORTS.iter().map(|(id, _, label)| PickItem::new(*id, *label)).collect();
            let Some(effort) = self.pick("Reasoning effort", items).await else { return Ok(()) };
            Some(effort)
        };
        let mut run = self.run.clone();
        run.model = Some(model);
        if let Some(effort) = effort {
            run.effort = effort_arg(&effort)?;
        }
        self.rerun(run).await
    }

    pub(super) async fn effort(&mut self, args: &str) -> anyhow::Result<()> {
        if args.is_empty() {
            let now = match self.settings.reasoning_effort {
                Some(Some(effort)) => effort.to_string(),
                Some(None) => "off".to_owned(),
                None => "the model's default".to_owned(),
            };
            self.notice(NoticeKind::Info, format!("reasoning effort: {now}"));
            return Ok(());
        }
        let mut run = self.run.clone();
        run.effort = effort_arg(args)?;
        self.rerun(run).await?;
        // The settings ask for an effort the session did not take: the
        // model has no switch for it (`bosun_agent::parts::generation_options`).
        if self.settings.reasoning_effort.is_some() && self.session.options().thinking.is_none() {
            self.notice(
                NoticeKind::Warning,
                "this model cannot be told how hard to reason: it runs at its own default",
            );
        }
        Ok(())
    }

    /// Goes on in this session on `model` (the configured one when `None`).
    pub(super) async fn set_model(&mut self, model: Option<String>) -> anyhow::Result<()> {
        let mut run = self.run.clone();
        run.model = model;
        self.rerun(run).await
    }

    /// Goes on in this session under the settings `run` resolves to.
    async fn rerun(&mut self, run: crate::cli::RunOptions) -> anyhow::Result<()> {
        let dir = self.agent.root().to_path_buf();
        let settings = crate::config::resolve(&dir, self.env, self.profile, &(&run).into())?;
        // The same stored session, resumed on the other settings.
        self.reopen(&settings, Some(self.current())).await?;
        self.run = run;
        self.notice(NoticeKind::Info, format!("model: {}", shown(&self.settings)));
        Ok(())
    }
}

/// `/effort`'s argument (or the picker's choice): `None` for `default`.
fn effort_arg(name: &str) -> anyhow::Result<Option<EffortArg>> {
    match EFFORTS.iter().find(|(id, ..)| *id == name) {
        Some((_, arg, _)) => Ok(*arg),
        None => anyhow::bail!("unknown reasoning effort `{name}`: use low, medium, high, off or default"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_core::Effort;

    #[test]
    fn every_effort_level_has_its_name() {
        for effort in Effort::ALL {
            let arg = effort_arg(effort.as_str()).unwrap().unwrap();
            assert_eq!(arg.as_str(), effort.as_str());
        }
        assert_eq!(effort_arg("default").unwrap(), None);
        assert!(effort_arg("max").is_err());
    }
}
