//! Azure OpenAI, Vertex AI and Amazon Bedrock from the settings and the environment: where
//! the models are (endpoint, api-version, project, location) and what
//! authenticates them (an Azure key or Entra ID token, Google application
//! default credentials), read here because bosun-providers reads no
//! environment. docs/providers.md lists every key and variable.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bosun_providers::{Api, ApiKey, CommandToken, GoogleCredentials, ProviderConfig, StaticToken};

use crate::config::{Env, ProviderSettings, Settings};
use crate::error::{Context, Result, bail};

/// The Azure key's variable.
pub const AZURE_KEY: &str = "AZURE_OPENAI_API_KEY";
/// An Entra ID access token for Azure, used when no key is set.
pub const AZURE_TOKEN: &str = "AZURE_OPENAI_AD_TOKEN";
/// Where the Azure endpoint is read when the config names none.
pub const AZURE_ENDPOINT: &str = "AZURE_OPENAI_ENDPOINT";
/// The Vertex project, first set wins (Google's name, its legacy one, and
/// the Anthropic Vertex SDK's).
pub const VERTEX_PROJECT: &[&str] =
    &["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID"];
/// The Vertex location, first set wins (Google's Gen AI SDK's name, then
/// Claude Code's and the Anthropic Vertex SDK's).
pub const VERTEX_LOCATION: &[&str] = &["GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"];
/// The location when nothing names one: every Gemini model and current
/// Claude models are served there.
pub const DEFAULT_LOCATION: &str = "global";

/// Whether `provider` is a cloud this module configures.
pub fn is_cloud(provider: &str) -> bool {
    matches!(provider, "azure" | "azure-responses" | "vertex" | "bedrock")
}

/// The cloud's provider config for `model`, its authentication set.
/// `settings.base_url` (`--base-url`), when set, replaces the endpoint or
/// Vertex's host.
pub fn config(provider: &str, model: &str, settings: &Settings, env: &Env) -> Result<ProviderConfig> {
    match provider {
        "vertex" => vertex(model, settings, env),
        "bedrock" => bedrock(settings, env),
        _ => azure(provider, settings, env),
    }
}

/// `[providers.NAME]`, then (for `azure-responses`) `[providers.azure]`:
/// one resource serves both APIs.
fn setting<'a, T>(
    settings: &'a Settings,
    provider: &str,
    pick: impl Fn(&'a ProviderSettings) -> Option<&'a T>,
) -> Option<&'a T> {
    let own = settings.providers.get(provider).and_then(&pick);
    own.or_else(|| {
        (provider == "azure-responses").then(|| settings.providers.get("azure").and_then(&pick)).flatten()
    })
}

fn azure(provider: &str, settings: &Settings, env: &Env) -> Result<ProviderConfig> {
    let endpoint = settings
        .base_url
        .clone()
        .or_else(|| setting(settings, provider, |p| p.endpoint.as_ref()).cloned())
        .or_else(|| env.get(AZURE_ENDPOINT).filter(|v| !v.trim().is_empty()).map(str::to_owned));
    let Some(endpoint) = endpoint else {
        bail!(
            "{provider} needs the resource's endpoint: set {AZURE_ENDPOINT} or [providers.azure] endpoint = \
             \"https://RESOURCE.openai.azure.com\""
        );
    };
    crate::config::url::http_url("the Azure endpoint", &endpoint)?;
    let api = if provider == "azure-responses" { Api::OpenAiResponses } else { Api::OpenAiChat };
    let mut config = ProviderConfig::azure(endpoint, api);
    // Only the provider's own table: a dated chat version is no Responses version.
    if let Some(version) = settings.providers.get(provider).and_then(|p| p.api_version.as_deref()) {
        config = config.with_azure_api_version(version);
    }
    let nonempty = |var: &str| env.get(var).filter(|v| !v.trim().is_empty());
    if let Some(key) = nonempty(AZURE_KEY) {
        return Ok(config.with_key(ApiKey::new(key)));
    }
    if let Some(token) = nonempty(AZURE_TOKEN) {
        return Ok(config.with_token_source(Arc::new(StaticToken::new(ApiKey::new(token)))));
    }
    if let Some(command) = setting(settings, provider, |p| p.token_command.as_ref()) {
        let Some((program, args)) = command.split_first() else {
            bail!("[providers.{provider}] token_command is empty: name a program and its arguments");
        };
        let token = CommandToken::new(program.clone(), args.to_vec())
            .with_confiner(crate::credential_sandbox::confiner(settings, env));
        return Ok(config.with_token_source(Arc::new(token)));
    }
    bail!(
        "{provider} needs {AZURE_KEY}, an Entra ID token in {AZURE_TOKEN}, or [providers.azure] token_command = \
         [\"az\", \"account\", \"get-access-token\", \"--resource\", \"https://cognitiveservices.azure.com\", \"-o\", \"json\"]"
    )
}

fn vertex(model: &str, settings: &Settings, env: &Env) -> Result<ProviderConfig> {
    let credentials = google_credentials(env)?;
    let vertex = settings.providers.get("vertex");
    let first_of = |vars: &[&str]| vars.iter().find_map(|var| env.get(var).filter(|v| !v.trim().is_empty()));
    let project = vertex
        .and_then(|v| v.project.clone())
        .or_else(|| first_of(VERTEX_PROJECT).map(str::to_owned))
        .or_else(|| credentials.project_id().map(str::to_owned));
    let Some(project) = project else {
        bail!(
            "vertex needs a Google Cloud project: set GOOGLE_CLOUD_PROJECT or [providers.vertex] project = \
             \"PROJECT_ID\""
        );
    };
    let location = vertex
        .and_then(|v| v.location.clone())
        .or_else(|| first_of(VERTEX_LOCATION).map(str::to_owned))
        .unwrap_or_else(|| DEFAULT_LOCATION.to_owned());
    let mut config = ProviderConfig::vertex(project, location, model);
    if let Some(url) = settings.base_url.as_deref() {
        config = config.with_base_url(url);
    }
    Ok(config.with_token_source(Arc::new(credentials)))
}

/// A Bedrock API key (`Authorization: Bearer`, no signing), used before
/// any AWS credentials, as AWS's SDKs do.
pub const BEDROCK_TOKEN: &str = "AWS_BEARER_TOKEN_BEDROCK";

/// Bedrock in the configured region, with a Bedrock API key or AWS
/// credentials from the environment, the shared files' profile, the
/// container credentials endpoint, or the EC2 instance metadata service.
fn bedrock(settings: &Settings, env: &Env) -> Result<ProviderConfig> {
    use bosun_providers::cloud::aws;
    let table = settings.providers.get("bedrock");
    let profile = table.and_then(|t| t.profile.as_deref());
    let lookup = |name: &str| env.get(name).filter(|v| !v.trim().is_empty()).map(str::to_owned);
    let Some(region) = aws::region(&lookup, table.and_then(|t| t.region.as_deref()), profile) else {
        bail!(
            "bedrock needs an AWS region: set AWS_REGION, a `region` in the profile's ~/.aws/config, or \
             [providers.bedrock] region = \"us-east-1\""
        );
    };
    let mut config = ProviderConfig::bedrock(region);
    if let Some(url) = settings.base_url.as_deref() {
        config = config.with_base_url(url);
    }
    if let Some(token) = lookup(BEDROCK_TOKEN) {
        return Ok(config.with_token_source(Arc::new(StaticToken::new(ApiKey::new(token)))));
    }
    let confiner = crate::credential_sandbox::confiner(settings, env);
    let source = aws::source(&lookup, profile, Some(confiner)).map_err(crate::error::Error::invalid)?;
    Ok(config.with_aws_source(source))
}

/// Google's application default credentials, found as Google's libraries
/// find them: the file `GOOGLE_APPLICATION_CREDENTIALS` names, else gcloud's
/// `application_default_credentials.json` (under `CLOUDSDK_CONFIG`, else
/// `~/.config/gcloud`), else the metadata server (`GCE_METADATA_HOST`, else
/// `GCE_METADATA_ROOT`, else `metadata.google.internal`).
pub fn google_credentials(env: &Env) -> Result<GoogleCredentials> {
    if let Some(path) = env.get("GOOGLE_APPLICATION_CREDENTIALS").filter(|p| !p.trim().is_empty()) {
        return GoogleCredentials::from_file(Path::new(path))
            .context("GOOGLE_APPLICATION_CREDENTIALS names a file that cannot be used");
    }
    let gcloud = env
        .get("CLOUDSDK_CONFIG")
        .map(PathBuf::from)
        .or_else(|| env.get("HOME").map(|home| Path::new(home).join(".config/gcloud")));
    if let Some(file) =
        gcloud.map(|dir| dir.join("application_default_credentials.json")).filter(|f| f.is_file())
    {
        return GoogleCredentials::from_file(&file).context("gcloud's application default credentials");
    }
    let host = env
        .get("GCE_METADATA_HOST")
        .or_else(|| env.get("GCE_METADATA_ROOT"))
        .unwrap_or(bosun_providers::cloud::google::METADATA_HOST);
    Ok(GoogleCredentials::metadata_server(host)?)
}

/// The model an Azure deployment runs, as `[providers.azure.deployments]`
/// names it, for the model table; any other model as it is.
pub fn underlying<'a>(settings: &'a Settings, provider: &str, model: &'a str) -> &'a str {
    if !provider.starts_with("azure") {
        return model;
    }
    setting(settings, provider, |p| p.deployments.get(model)).map_or(model, String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs)
    }

    #[test]
    fn azure_reads_its_endpoint_and_key_or_token_and_says_what_is_missing() {
        let settings = Settings::defaults();
        let missing = azure("azure", &settings, &env(&[])).unwrap_err().to_string();
        assert!(missing.contains(AZURE_ENDPOINT), "{missing}");
        let no_key = azure("azure", &settings, &env(&[(AZURE_ENDPOINT, "https://r.openai.azure.com")]));
        let no_key = no_key.unwrap_err().to_string();
        assert!(no_key.contains(AZURE_KEY) && no_key.contains(AZURE_TOKEN), "{no_key}");
        let keyed = azure(
            "azure",
            &settings,
            &env(&[(AZURE_ENDPOINT, "https://r.openai.azure.com"), (AZURE_KEY, "k")]),
        )
        .unwrap();
        assert!(keyed.api_key.is_some() && keyed.token.is_none());
        let token = azure(
            "azure-responses",
            &settings,
            &env(&[(AZURE_ENDPOINT, "https://r.openai.azure.com"), (AZURE_TOKEN, "t")]),
        )
        .unwrap();
        assert!(token.api_key.is_none() && token.token.is_some());
        assert_eq!(token.api, Api::OpenAiResponses);
        let mut commanded = Settings::defaults();
        let azure_table = ProviderSettings {
            endpoint: Some("https://r.openai.azure.com".into()),
            token_command: Some(vec!["az".into(), "account".into(), "get-access-token".into()]),
            ..ProviderSettings::default()
        };
        commanded.providers.insert("azure".into(), azure_table);
        let config = azure("azure-responses", &commanded, &env(&[])).unwrap();
        assert!(format!("{:?}", config.token).contains("CommandToken"), "{:?}", config.token);
        commanded.providers.get_mut("azure").unwrap().token_command = Some(Vec::new());
        let empty = azure("azure", &commanded, &env(&[])).unwrap_err().to_string();
        assert!(empty.contains("token_command is empty"), "{empty}");
    }

    #[test]
    fn vertex_takes_project_and_location_from_config_then_environment_then_the_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("adc.json");
        std::fs::write(
            &file,
            r#"{"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r",
                "quota_project_id": "from-file"}"#,
        )
        .unwrap();
        let path = file.display().to_string();
        let settings = Settings::defaults();
        let base = [("GOOGLE_APPLICATION_CREDENTIALS", path.as_str())];
        let config = vertex("gemini-2.5-pro", &settings, &env(&base)).unwrap();
        assert_eq!(
            config.cloud,
            bosun_providers::Cloud::Vertex { project: "from-file".into(), location: "global".into() }
        );
        assert_eq!(config.base_url, "https://aiplatform.googleapis.com");
        let config = vertex(
            "claude-sonnet-4-5@20250929",
            &settings,
            &env(&[base[0], ("GOOGLE_CLOUD_PROJECT", "p"), ("CLOUD_ML_REGION", "us-east5")]),
        )
        .unwrap();
        assert_eq!(
            config.cloud,
            bosun_providers::Cloud::Vertex { project: "p".into(), location: "us-east5".into() }
        );
        assert_eq!(
            (config.api, config.base_url.as_str()),
            (Api::AnthropicMessages, "https://us-east5-aiplatform.googleapis.com")
        );
        let broken = env(&[("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json")]);
        let error = format!("{:#}", vertex("gemini-x", &settings, &broken).unwrap_err());
        assert!(
            error.contains("GOOGLE_APPLICATION_CREDENTIALS") && error.contains("/nonexistent/key.json"),
            "{error}"
        );
    }

    #[test]
    fn bedrock_reads_region_and_credentials_and_prefers_an_api_key() {
        let mut settings = Settings::defaults();
        let none = bedrock(&settings, &env(&[])).unwrap_err().to_string();
        assert!(none.contains("AWS_REGION"), "{none}");
        let keys =
            [("AWS_REGION", "eu-west-1"), ("AWS_ACCESS_KEY_ID", "AKIAX"), ("AWS_SECRET_ACCESS_KEY", "s")];
        let config = bedrock(&settings, &env(&keys)).unwrap();
        assert_eq!(config.cloud, bosun_providers::Cloud::Bedrock { region: "eu-west-1".into() });
        assert_eq!(config.base_url, "https://bedrock-runtime.eu-west-1.amazonaws.com");
        assert!(config.aws.is_some() && config.token.is_none());
        assert!(!format!("{config:?}").contains("\"s\""), "the secret never prints");
        let keyed = bedrock(&settings, &env(&[keys[0], (BEDROCK_TOKEN, "ABSK")])).unwrap();
        assert!(keyed.aws.is_none() && keyed.token.is_some());
        settings.providers.insert(
            "bedrock".into(),
            ProviderSettings { region: Some("ap-south-1".into()), ..ProviderSettings::default() },
        );
        let config = bedrock(&settings, &env(&keys)).unwrap();
        assert_eq!(config.cloud, bosun_providers::Cloud::Bedrock { region: "ap-south-1".into() });
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none").display().to_string();
        let nothing = [
            keys[0],
            ("AWS_SHARED_CREDENTIALS_FILE", &missing),
            ("AWS_CONFIG_FILE", &missing),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ];
        let error = bedrock(&settings, &env(&nothing)).unwrap_err().to_string();
        assert!(error.contains("no AWS credentials"), "{error}");
        let container = [
            nothing[0],
            nothing[1],
            nothing[2],
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/c"),
        ];
        let config = bedrock(&settings, &env(&container)).unwrap();
        assert!(format!("{:?}", config.aws).contains("ContainerCredentials"), "{:?}", config.aws);
        let remote = [
            nothing[0],
            nothing[1],
            nothing[2],
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/c"),
        ];
        let error = bedrock(&settings, &env(&remote)).unwrap_err().to_string();
        assert!(error.contains("neither https nor a loopback"), "{error}");
        // With nothing else, the instance metadata service is asked at the first request.
        let config = bedrock(&settings, &env(&nothing[..3])).unwrap();
        assert!(format!("{:?}", config.aws).contains("InstanceMetadata"), "{:?}", config.aws);
    }
}
