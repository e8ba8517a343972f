//! The session's model as an ACP session config option (category
//! `model`): the model it runs on and the others the user's configuration
//! names (`[models."PROVIDER/MODEL"]`). Choosing one reopens the session on
//! it, as `bosun resume ID --model M` does.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
};
use bosun_agent::config::Settings;

/// The option's id.
pub(crate) const MODEL_OPTION: &str = "model";

/// The models offered: the current one first, then the configured others.
pub(crate) fn offered(settings: &Settings) -> Vec<String> {
    let current = bosun_agent::model::model_label(settings);
    let others = settings.models.keys().filter(|m| m.contains('/') && **m != current).cloned();
    std::iter::once(current.clone()).chain(others).collect()
}

/// The config options a session shows.
pub(crate) fn options(current: &str, offered: &[String]) -> Vec<SessionConfigOption> {
    let choices: Vec<_> =
        offered.iter().map(|m| SessionConfigSelectOption::new(m.clone(), m.clone())).collect();
    vec![
        SessionConfigOption::select(MODEL_OPTION, "Model", current.to_owned(), choices)
            .category(SessionConfigOptionCategory::Model)
            .description("The model the session runs on".to_owned()),
    ]
}
