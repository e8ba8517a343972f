//! How a stored session runs again: the model it ran on (and the base URL
//! the user gave it) unless the person names another with `--model`
//! (`--base-url`), over today's settings. Keys are never stored; they still
//! come from the environment.

use std::path::Path;

use bosun_store::SessionSummary;

use crate::StoredSession;
use crate::config::{Env, Settings, Source};
use crate::error::{Context, Result};

/// The id of the stored session `which` names (a whole id, a unique prefix
/// of at least [`bosun_store::MIN_ID_PREFIX`] characters, or the latest of
/// the workspace at `dir`) and the settings it resumes under
/// ([`settings_for`]). A front end resolves them before it builds the
/// [`crate::Agent`]: the tools offered depend on the model (a local one
/// gets the brief set), and the session resumes under the authority it
/// recorded.
///
/// # Errors
/// When `dir` is a workspace the settings do not allow
/// ([`crate::workspace_guard::check`]), the store or the workspace cannot be
/// read, or no session matches.
pub fn resolve(
    dir: &Path,
    env: &Env,
    settings: &Settings,
    which: &StoredSession,
) -> Result<(String, Settings)> {
    // Refused before anything of it is read; the advice is the agent's to give.
    crate::workspace_guard::check(dir, env, settings.allow_any_workspace)?;
    let workspace = match which {
        StoredSession::Id(_) => String::new(),
        StoredSession::Latest => bosun_tools::Workspace::open(dir)?.identity().path.clone(),
    };
    resolve_in(&workspace, env, settings, which)
}

/// [`resolve`] for the workspace whose identity path is `workspace`.
pub(crate) fn resolve_in(
    workspace: &str,
    env: &Env,
    settings: &Settings,
    which: &StoredSession,
) -> Result<(String, Settings)> {
    let store = crate::parts::store(settings, env)?;
    let (id, summary) = find(&store, workspace, which)?;
    Ok((id, settings_for(settings, &summary)))
}

/// The id and summary of the session `which` names in `store` (for
/// [`StoredSession::Latest`], the newest of the workspace whose identity
/// path is `workspace`).
pub(crate) fn find(
    store: &bosun_store::Store,
    workspace: &str,
    which: &StoredSession,
) -> Result<(String, SessionSummary)> {
    let id = match which {
        StoredSession::Id(id) => store.resolve_id(id)?,
        StoredSession::Latest => {
            let filter = bosun_store::ListFilter::workspace(workspace.to_owned());
            let latest = store.list(&filter)?.into_iter().next();
            latest.map(|s| s.id).context("no session of this workspace to resume")?
        }
    };
    let summary = store.show(&id)?.summary;
    Ok((id, summary))
}

/// The base URL to record with a session's model: the one in effect when
/// the user gave it (a flag, a variable, their own file), never one a
/// project's config set (keys go only to hosts the user chose).
pub fn recorded_base_url(settings: &Settings) -> Option<String> {
    settings.base_url.clone().filter(|_| !settings.base_url_from_project)
}

/// The reasoning effort to record with a session's model, as its settings
/// name it (`low`, `medium`, `high`, `off`; `None`: the model's default).
pub fn recorded_effort(settings: &Settings) -> Option<String> {
    settings.reasoning_effort.map(|effort| effort.map_or("off", bosun_core::Effort::as_str).to_owned())
}

/// `settings` for resuming the session `summary` describes: its recorded
/// model, base URL and reasoning effort, unless the person named another model (`--model`)
/// or base URL (`--base-url`) for this command. A session that recorded no
/// model runs on the configured one.
pub fn settings_for(settings: &Settings, summary: &SessionSummary) -> Settings {
    let recorded = Recorded {
        id: &summary.id,
        model: summary.model.as_deref(),
        base_url: summary.base_url.as_deref(),
        effort: summary.effort.as_deref(),
    };
    apply(settings, &recorded)
}

/// [`settings_for`] a session whose record is not the local store's.
pub(crate) fn settings_for_recorded(settings: &Settings, recorded: &Recorded<'_>) -> Settings {
    apply(settings, recorded)
}

/// What a session recorded of how it ran.
pub(crate) struct Recorded<'a> {
    pub(crate) id: &'a str,
    pub(crate) model: Option<&'a str>,
    pub(crate) base_url: Option<&'a str>,
    pub(crate) effort: Option<&'a str>,
}

fn apply(settings: &Settings, summary: &Recorded<'_>) -> Settings {
    let named = |key: &str| matches!(settings.sources.get(key), Some((_, Source::Flag(_))));
    let mut resumed = settings.clone();
    // The effort goes with the model it was set for: kept unless the
    // command names an effort, or another model than the recorded one. One
    // this build cannot read is left to the configuration.
    let same_model =
        summary.model.is_some_and(|m| !named("model") || crate::model::model_label(settings) == m);
    let recorded_effort = summary.effort.and_then(|e| crate::config::parse_effort(e).ok().map(|p| (e, p)));
    if let Some((written, effort)) = recorded_effort.filter(|_| same_model && !named("reasoning_effort")) {
        resumed.reasoning_effort = Some(effort);
        resumed.note("reasoning_effort", written, Source::Session(summary.id.to_owned()));
    }
    let Some(model) = summary.model.filter(|_| !named("model")) else {
        return resumed;
    };
    let from_session = Source::Session(summary.id.to_owned());
    if crate::model::model_label(settings) != model {
        resumed.model = Some(model.to_owned());
        resumed.note("model", model, from_session.clone());
        // The configured base URL was chosen for the configured model.
        if !named("base_url") {
            resumed.base_url = None;
            resumed.base_url_from_project = false;
            resumed.sources.remove("base_url");
        }
    }
    if let Some(url) = summary.base_url.filter(|_| !named("base_url")) {
        resumed.base_url = Some(url.to_owned());
        resumed.base_url_from_project = false;
        resumed.note("base_url", url, from_session);
    }
    resumed
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::config::{Env, Overrides, resolve};

    fn summary<'a>(model: Option<&'a str>, base_url: Option<&'a str>) -> Recorded<'a> {
        Recorded { id: "0190aaaa-1111-7000-8000-000000000001", model, base_url, effort: None }
    }

    fn settings_for(settings: &Settings, recorded: &Recorded<'_>) -> Settings {
        apply(settings, recorded)
    }

    fn settings(flags: Overrides) -> Settings {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let env = Env::from_pairs(&[("HOME", home.to_str().unwrap())]);
        resolve(dir.path(), &env, None, &flags).unwrap()
    }

    #[test]
    fn a_resumed_session_runs_on_its_recorded_model_and_base_url() {
        let stored = summary(Some("openai/gpt-test"), Some("http://127.0.0.1:9/v1"));
        let resumed = settings_for(&settings(Overrides::default()), &stored);
        assert_eq!(resumed.model.as_deref(), Some("openai/gpt-test"));
        assert_eq!(resumed.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert!(!resumed.base_url_from_project);
        assert_eq!(crate::model::model_label(&resumed), "openai/gpt-test");
    }

    #[test]
    fn a_recorded_effort_goes_with_its_model_unless_the_command_names_another() {
        let recorded = Recorded { effort: Some("high"), ..summary(Some("openai/gpt-test"), None) };
        let high = Some(Some(bosun_core::Effort::High));
        assert_eq!(settings_for(&settings(Overrides::default()), &recorded).reasoning_effort, high);
        let same = Overrides { model: Some("openai/gpt-test".into()), ..Overrides::default() };
        assert_eq!(settings_for(&settings(same), &recorded).reasoning_effort, high);
        let other = Overrides { model: Some("anthropic/claude-test".into()), ..Overrides::default() };
        assert_eq!(settings_for(&settings(other), &recorded).reasoning_effort, None);
        let named = Overrides { reasoning_effort: Some("off".into()), ..Overrides::default() };
        assert_eq!(settings_for(&settings(named), &recorded).reasoning_effort, Some(None));
    }

    #[test]
    fn a_model_named_for_the_command_wins_with_its_own_base_url() {
        let stored = summary(Some("openai/gpt-test"), Some("http://127.0.0.1:9/v1"));
        let flags = Overrides { model: Some("anthropic/claude-test".into()), ..Overrides::default() };
        let resumed = settings_for(&settings(flags), &stored);
        assert_eq!(resumed.model.as_deref(), Some("anthropic/claude-test"));
        assert_eq!(resumed.base_url, None);

        let flags = Overrides { base_url: Some("http://127.0.0.1:10/v1".into()), ..Overrides::default() };
        let resumed = settings_for(&settings(flags), &stored);
        assert_eq!(resumed.model.as_deref(), Some("openai/gpt-test"));
        assert_eq!(resumed.base_url.as_deref(), Some("http://127.0.0.1:10/v1"));
    }

    #[test]
    fn a_session_that_recorded_no_model_or_url_keeps_the_configured_ones() {
        let configured = settings(Overrides::default());
        let resumed = settings_for(&configured, &summary(None, None));
        assert_eq!(resumed.model, configured.model);
        // The recorded model reached at its provider's own URL.
        let mut configured = configured;
        configured.base_url = Some("http://127.0.0.1:11/v1".into());
        let resumed = settings_for(&configured, &summary(Some("openai/gpt-test"), None));
        assert_eq!(resumed.base_url, None);
    }

    #[test]
    fn a_projects_base_url_is_never_recorded() {
        let mut configured = settings(Overrides::default());
        configured.base_url = Some("http://evil.example/v1".into());
        configured.base_url_from_project = true;
        assert_eq!(recorded_base_url(&configured), None);
        configured.base_url_from_project = false;
        assert_eq!(recorded_base_url(&configured).as_deref(), Some("http://evil.example/v1"));
    }
}
