//! `[openapi.NAME]`: an OpenAPI spec whose operations become tools
//! (bosun-web's `OpenApiSpec`), each call asking like any network tool
//! (invariant 19). The user's own config only, as `[web]`: which hosts
//! bosun's own process talks to, and with which credentials, is theirs to
//! say; a project's config, trusted or not, cannot add a spec (`trust::gate`
//! refuses the table, and it is applied from the user's layers only).
//! Credentials are never in a file: `auth` names the environment variable
//! holding the secret.
//!
//! ```toml
//! [openapi.petstore]
//! spec = "~/specs/petstore.yaml"       # JSON or YAML, OpenAPI 3.0 or 3.1
//! base_url = "https://petstore.example/v2"   # else the spec's first server
//! operations = ["findPets", "addPet"]  # else every operation
//! auth = { type = "bearer", env = "PETSTORE_TOKEN" }
//! # or { type = "header", name = "X-Api-Key", env = "VAR" }
//! # or { type = "query", name = "api_key", env = "VAR" }
//! # or { type = "basic", username = "me", env = "VAR" }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use bosun_core::Tool;
use bosun_web::{ApiAuth, MAX_SPEC_BYTES, OpenApiSpec, WebLimits};
use serde::Deserialize;

use super::Env;
use crate::error::{Result, bail};

/// `[openapi.NAME]` as written.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OpenApiLayer {
    /// The spec file: absolute, or under `~/`.
    pub spec: String,
    /// Where requests go, instead of the spec's first server.
    pub base_url: Option<String>,
    /// The operations offered (operationIds or tool names); all when unset.
    pub operations: Option<Vec<String>>,
    /// How requests are authenticated.
    pub auth: Option<AuthLayer>,
}

/// `auth = { … }`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AuthLayer {
    /// `bearer`, `header`, `query` or `basic`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The environment variable holding the secret.
    pub env: String,
    /// The header's or query parameter's name (`header`, `query`).
    pub name: Option<String>,
    /// The user name (`basic`).
    pub username: Option<String>,
}

/// The specs the user configured, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenApiSettings {
    /// Each `[openapi.NAME]`, checked.
    pub specs: BTreeMap<String, OpenApiLayer>,
}

/// The tools of every spec, and why any spec or operation was left out.
#[derive(Default)]
#[non_exhaustive]
pub struct BuiltOpenApi {
    /// The tools.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Notices: a spec that could not be read, operations left out.
    pub notices: Vec<String>,
}

impl OpenApiSettings {
    /// Applies one of the user's layers (a later `[openapi.NAME]` replaces
    /// an earlier one whole); `source` names it in errors.
    pub fn apply(
        &mut self,
        layer: &BTreeMap<String, OpenApiLayer>,
        source: &str,
    ) -> Result<Vec<(String, String)>> {
        let mut set = Vec::new();
        for (name, entry) in layer {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                bail!("openapi.{name}, from {source}: name a spec with letters, digits, `_` and `-`");
            }
            if !(entry.spec.starts_with('/') || entry.spec.starts_with("~/")) {
                bail!(
                    "openapi.{name}.spec, from {source}: give an absolute path or one under ~/ (the spec is read from your disk)"
                );
            }
            if let Some(auth) = &entry.auth {
                check_auth(name, auth, source)?;
            }
            set.push((format!("openapi.{name}"), entry.spec.clone()));
            self.specs.insert(name.clone(), entry.clone());
        }
        Ok(set)
    }

    /// Reads each spec and makes its tools; a spec that cannot be read or
    /// whose secret is not set is a notice, not an error.
    pub fn tools(&self, env: &Env, limits: WebLimits) -> BuiltOpenApi {
        let mut built = BuiltOpenApi::default();
        for (name, entry) in &self.specs {
            match spec_tools(name, entry, env, limits) {
                Ok((tools, skipped)) => {
                    built.tools.extend(tools);
                    for (operation, why) in skipped {
                        built.notices.push(format!("openapi.{name}: {operation} is not offered: {why}"));
                    }
                }
                Err(why) => built.notices.push(format!("openapi.{name} is not offered: {why}")),
            }
        }
        built
    }
}

fn check_auth(name: &str, auth: &AuthLayer, source: &str) -> Result<()> {
    let valid_var = !auth.env.is_empty() && auth.env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid_var {
        bail!("openapi.{name}.auth.env, from {source}: name an environment variable (letters, digits, _)");
    }
    match (auth.kind.as_str(), &auth.name, &auth.username) {
        ("bearer", None, None) | ("header" | "query", Some(_), None) | ("basic", None, Some(_)) => Ok(()),
        ("header" | "query", None, _) => {
            bail!("openapi.{name}.auth, from {source}: a `{}` needs `name`", auth.kind)
        }
        ("basic", _, None) => bail!("openapi.{name}.auth, from {source}: `basic` needs `username`"),
        _ => bail!(
            "openapi.{name}.auth, from {source}: use type = \"bearer\", \"header\" (with name), \"query\" (with name) \
             or \"basic\" (with username), and env naming the variable that holds the secret"
        ),
    }
}

type SpecTools = (Vec<Arc<dyn Tool>>, Vec<(String, String)>);

fn spec_tools(
    name: &str,
    entry: &OpenApiLayer,
    env: &Env,
    limits: WebLimits,
) -> std::result::Result<SpecTools, String> {
    let path = match entry.spec.strip_prefix("~/") {
        Some(rest) => {
            PathBuf::from(env.get("HOME").ok_or("HOME is not set, so ~/ names nothing")?).join(rest)
        }
        None => PathBuf::from(&entry.spec),
    };
    let size = std::fs::metadata(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?.len();
    if size > MAX_SPEC_BYTES as u64 {
        return Err(format!("{} is over {MAX_SPEC_BYTES} bytes", path.display()));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let spec = OpenApiSpec::parse(name, &text, entry.base_url.as_deref()).map_err(|e| e.to_string())?;
    let auth = match &entry.auth {
        None => ApiAuth::None,
        Some(auth) => {
            let secret = env
                .get(&auth.env)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("{} (its auth.env) is not set in bosun's environment", auth.env))?
                .to_owned();
            match auth.kind.as_str() {
                "bearer" => ApiAuth::Bearer(secret),
                "header" => ApiAuth::Header { name: auth.name.clone().unwrap_or_default(), value: secret },
                "query" => ApiAuth::Query { name: auth.name.clone().unwrap_or_default(), value: secret },
                _ => ApiAuth::Basic { username: auth.username.clone().unwrap_or_default(), password: secret },
            }
        }
    };
    let built = spec.tools(auth, limits, entry.operations.as_deref()).map_err(|e| e.to_string())?;
    Ok((built.tools, built.skipped))
}

impl std::fmt::Debug for BuiltOpenApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.definition().name.as_str()).collect();
        f.debug_struct("BuiltOpenApi").field("tools", &names).field("notices", &self.notices).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"{"openapi": "3.1.0", "servers": [{"url": "https://api.example/v1"}],
        "paths": {"/things": {"get": {"operationId": "listThings", "responses": {}}},
                  "/other": {"get": {"operationId": "other", "responses": {}}}}}"#;

    fn layer(toml_text: &str) -> BTreeMap<String, OpenApiLayer> {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn a_spec_of_the_users_gives_its_tools_with_the_secret_from_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("api.json"), SPEC).unwrap();
        let home = dir.path().display().to_string();
        let mut settings = OpenApiSettings::default();
        let set = settings
            .apply(
                &layer(
                    r#"[things]
spec = "~/api.json"
operations = ["listThings"]
auth = { type = "header", name = "X-Key", env = "THINGS_KEY" }"#,
                ),
                "the test",
            )
            .unwrap();
        assert_eq!(set, [("openapi.things".to_owned(), "~/api.json".to_owned())]);

        let without_key = settings.tools(&Env::from_pairs(&[("HOME", &home)]), WebLimits::default());
        assert!(without_key.tools.is_empty());
        assert!(without_key.notices[0].contains("THINGS_KEY"), "{:?}", without_key.notices);

        let env = Env::from_pairs(&[("HOME", &home), ("THINGS_KEY", "k-1")]);
        let built = settings.tools(&env, WebLimits::default());
        let names: Vec<&str> = built.tools.iter().map(|t| t.definition().name.as_str()).collect();
        assert_eq!(names, ["things__listThings"], "only the operations listed");
        assert!(built.notices.is_empty(), "{:?}", built.notices);
    }

    #[test]
    fn a_bad_entry_is_an_error_naming_it_and_an_unreadable_spec_a_notice() {
        let mut settings = OpenApiSettings::default();
        let relative = settings.apply(&layer("[a]\nspec = \"specs/a.yaml\""), "f").unwrap_err().to_string();
        assert!(relative.contains("openapi.a.spec") && relative.contains("absolute"), "{relative}");
        let kind = settings
            .apply(&layer("[a]\nspec = \"/a.yaml\"\nauth = { type = \"oauth\", env = \"V\" }"), "f")
            .unwrap_err()
            .to_string();
        assert!(kind.contains("bearer") && kind.contains("openapi.a.auth"), "{kind}");
        let nameless = settings
            .apply(&layer("[a]\nspec = \"/a.yaml\"\nauth = { type = \"header\", env = \"V\" }"), "f")
            .unwrap_err()
            .to_string();
        assert!(nameless.contains("needs `name`"), "{nameless}");
        let unknown = toml::from_str::<BTreeMap<String, OpenApiLayer>>("[a]\nspec = \"/a\"\nkey = \"x\"");
        assert!(unknown.is_err(), "unknown keys are refused (a key is never in the file)");

        settings.apply(&layer("[gone]\nspec = \"/nonexistent/spec.yaml\""), "f").unwrap();
        let built = settings.tools(&Env::from_pairs(&[]), WebLimits::default());
        assert!(built.tools.is_empty());
        assert!(
            built.notices[0].starts_with("openapi.gone is not offered: cannot read"),
            "{:?}",
            built.notices
        );
    }
}
