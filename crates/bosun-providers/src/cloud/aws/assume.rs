//! Assumed roles: keys STS gives for a role, to `role_arn` profiles
//! (`AssumeRole`, signed with the keys of the profile's `source_profile`,
//! which may itself be a role, or of its `credential_source`) and to web
//! identities (`AssumeRoleWithWebIdentity`, unsigned, with the OIDC token
//! EKS or GitHub Actions writes to a file).
//!
//! STS speaks the query protocol: a form-encoded POST, an XML answer.
//! Its endpoint is the regional `https://sts.REGION.amazonaws.com`, as the
//! current SDKs use (`us-east-1` when no region is known), or the global
//! one under `sts_regional_endpoints = legacy` for the regions it covered;
//! `AWS_ENDPOINT_URL_STS` or `AWS_ENDPOINT_URL` replace it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bosun_core::ModelError;

use super::{AwsAuthError, AwsCredentialSource, AwsCredentials, CredentialsFuture, Env};

/// How many profiles a role chain may pass through. Cycles are refused
/// anyway; this bounds a long acyclic chain (each link is an STS call).
pub(crate) const MAX_CHAIN: usize = 10;
const CONTENT_TYPE: &str = "application/x-www-form-urlencoded; charset=utf-8";
const VERSION: &str = "2011-06-15";
/// Largest STS answer read.
const MAX_RESPONSE: usize = 64 * 1024;
/// The regions `sts_regional_endpoints = legacy` sends to the global
/// endpoint.
const LEGACY_GLOBAL: &[&str] = &[
    "ap-northeast-1",
    "ap-south-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "aws-global",
    "ca-central-1",
    "eu-central-1",
    "eu-north-1",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "sa-east-1",
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
];

type Sections = HashMap<String, HashMap<String, String>>;

/// Where STS is and how it is reached; shared by a chain's roles.
#[derive(Clone)]
struct Sts {
    url: String,
    /// The region requests are signed for.
    region: String,
    client: reqwest::Client,
}

impl Sts {
    fn new(env: Env<'_>, region: Option<String>, regional: Option<String>) -> Result<Self, AwsAuthError> {
        let region = region.filter(|r| !r.trim().is_empty()).unwrap_or_else(|| "us-east-1".to_owned());
        let legacy = regional.is_some_and(|r| r.trim().eq_ignore_ascii_case("legacy"))
            && LEGACY_GLOBAL.contains(&region.as_str());
        let ignore =
            env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let configured = (!ignore)
            .then(|| env("AWS_ENDPOINT_URL_STS").or_else(|| env("AWS_ENDPOINT_URL")))
            .flatten()
            .map(|u| u.trim().trim_end_matches('/').to_owned())
            .filter(|u| !u.is_empty());
        let (url, region) = match configured {
            Some(url) => (format!("{url}/"), region),
            None if legacy => ("https://sts.amazonaws.com/".to_owned(), "us-east-1".to_owned()),
            None => {
                let suffix = if region.starts_with("cn-") { "amazonaws.com.cn" } else { "amazonaws.com" };
                (format!("https://sts.{region}.{suffix}/"), region)
            }
        };
        crate::tls::install_default_provider();
        let client = reqwest::Client::builder()
            .user_agent(concat!("bosun/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| AwsAuthError::Client(e.to_string()))?;
        Ok(Self { url, region, client })
    }
}

/// What the role is assumed with.
enum Via {
    /// `AssumeRole`, signed with these keys.
    Keys(Arc<dyn AwsCredentialSource>),
    /// `AssumeRoleWithWebIdentity`, with the token in this file (read at
    /// every fetch: it rotates).
    WebIdentity(PathBuf),
}

/// A role's keys from STS, cached until five minutes before they expire.
/// `Debug` shows the role, the session name and what the role is assumed
/// with, never a key or token.
pub struct AssumedRole {
    role_arn: String,
    session_name: String,
    external_id: Option<String>,
    duration_seconds: Option<u32>,
    via: Via,
    sts: Sts,
    cache: super::http::Cache,
}

impl std::fmt::Debug for AssumedRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("AssumedRole");
        out.field("role_arn", &self.role_arn).field("session_name", &self.session_name);
        match &self.via {
            Via::Keys(source) => out.field("source", source),
            Via::WebIdentity(file) => out.field("web_identity_token_file", file),
        };
        out.field("sts", &self.sts.url).finish_non_exhaustive()
    }
}

/// `bosun-<unix millis>`: a session name CloudTrail shows, unique enough.
fn default_session_name() -> String {
    let millis = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    format!("bosun-{millis}")
}

fn invalid(profile: &str, reason: impl std::fmt::Display) -> AwsAuthError {
    AwsAuthError::Role(format!("profile {profile}: {reason}"))
}

fn duration(profile: &str, section: &HashMap<String, String>) -> Result<Option<u32>, AwsAuthError> {
    section
        .get("duration_seconds")
        .map(|d| {
            d.trim()
                .parse::<u32>()
                .map_err(|_| invalid(profile, format!("duration_seconds {d:?} is not a number of seconds")))
        })
        .transpose()
}

/// The shared files' profiles: the config file's, with the credentials
/// file's keys over them (as the SDKs merge them).
struct Profiles {
    config: Sections,
    credentials: Sections,
}

impl Profiles {
    fn load(env: Env<'_>) -> Self {
        Self {
            config: super::ini(super::config_file(env).as_deref()),
            credentials: super::ini(super::credentials_file(env).as_deref()),
        }
    }

    fn section(&self, name: &str) -> Option<HashMap<String, String>> {
        let config = super::config_section(&self.config, name);
        let credentials = self.credentials.get(name).cloned();
        if config.is_none() && credentials.is_none() {
            return None;
        }
        let mut merged = config.unwrap_or_default();
        merged.extend(credentials.unwrap_or_default());
        Some(merged)
    }
}

/// The keys a chain starts from, for a profile reached as a
/// `source_profile` that names no role: its static keys, else its SSO
/// role, else its `credential_process`.
fn base_of(
    env: Env<'_>,
    name: &str,
    section: &HashMap<String, String>,
    profiles: &Profiles,
    confiner: Option<&Arc<dyn crate::cloud::CommandConfiner>>,
) -> Result<Arc<dyn AwsCredentialSource>, AwsAuthError> {
    if let Some(keys) = super::static_keys(section) {
        return Ok(Arc::new(keys));
    }
    if let Some(sso) = super::SsoCredentials::from_profile(env, name, section, &profiles.config)? {
        return Ok(Arc::new(sso));
    }
    if let Some(process) = super::ProcessCredentials::from_profile(name, section, confiner.cloned())? {
        return Ok(Arc::new(process));
    }
    Err(invalid(name, "is a source_profile but has no keys, role_arn, SSO settings or credential_process"))
}

/// The keys a `credential_source` names.
fn named_source(
    env: Env<'_>,
    profile: &str,
    source: &str,
) -> Result<Arc<dyn AwsCredentialSource>, AwsAuthError> {
    let unset = |what: &str| invalid(profile, format!("credential_source = {source}, but {what}"));
    let found: Option<Arc<dyn AwsCredentialSource>> = match source.trim() {
        "Environment" => {
            let keys = super::environment_keys(env)
                .ok_or_else(|| unset("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"))?;
            Some(Arc::new(keys))
        }
        "EcsContainer" => super::ContainerCredentials::from_env(env)?.map(|c| Arc::new(c) as _),
        "Ec2InstanceMetadata" => {
            let tried =
                format!("profile {profile}'s role takes its keys from the instance (credential_source)");
            super::InstanceMetadata::from_env(env, &tried)?.map(|i| Arc::new(i) as _)
        }
        other => {
            return Err(invalid(
                profile,
                format!(
                    "credential_source {other:?} is none of Environment, Ec2InstanceMetadata, EcsContainer"
                ),
            ));
        }
    };
    found.ok_or_else(|| {
        unset(if source.trim() == "EcsContainer" {
            "no container credentials endpoint is set (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI)"
        } else {
            "AWS_EC2_METADATA_DISABLED is true"
        })
    })
}

/// The role of `selected`, when that profile has a `role_arn`: assumed
/// from its `source_profile` (followed through chained roles to keys, an
/// SSO role, or a `credential_source`), its `credential_source`, or with
/// its `web_identity_token_file`. A cycle, or a chain of more than
/// [`MAX_CHAIN`] profiles, is refused.
pub(crate) fn from_profile(
    env: Env<'_>,
    selected: &str,
    profile: Option<&str>,
    confiner: Option<&Arc<dyn crate::cloud::CommandConfiner>>,
) -> Result<Option<Arc<dyn AwsCredentialSource>>, AwsAuthError> {
    let profiles = Profiles::load(env);
    let Some(mut section) = profiles.section(selected) else { return Ok(None) };
    if !section.contains_key("role_arn") {
        return Ok(None);
    }
    let regional =
        env("AWS_STS_REGIONAL_ENDPOINTS").or_else(|| section.get("sts_regional_endpoints").cloned());
    let sts = Sts::new(env, super::region(env, None, profile), regional)?;
    let mut name = selected.to_owned();
    let mut visited: Vec<String> = Vec::new();
    // The roles to assume, outermost (the selected profile's) first.
    let mut roles: Vec<(String, HashMap<String, String>)> = Vec::new();
    let base: Arc<dyn AwsCredentialSource> = loop {
        visited.push(name.clone());
        if visited.len() > MAX_CHAIN {
            return Err(invalid(
                selected,
                format!("the role chain {} passes more than {MAX_CHAIN} profiles", visited.join(" -> ")),
            ));
        }
        // Past the first profile, keys come before a role beside them.
        if visited.len() > 1
            && let Some(keys) = super::static_keys(&section)
        {
            break Arc::new(keys);
        }
        let Some(role_arn) = section.get("role_arn").cloned() else {
            break base_of(env, &name, &section, &profiles, confiner)?;
        };
        if let Some(file) = section.get("web_identity_token_file") {
            let session = section.get("role_session_name").cloned().unwrap_or_else(default_session_name);
            break Arc::new(AssumedRole {
                role_arn,
                session_name: session,
                external_id: None,
                duration_seconds: duration(&name, &section)?,
                via: Via::WebIdentity(PathBuf::from(file)),
                sts: sts.clone(),
                cache: super::http::Cache::default(),
            });
        }
        roles.push((name.clone(), section.clone()));
        match (section.get("source_profile").cloned(), section.get("credential_source")) {
            (Some(_), Some(_)) => {
                return Err(invalid(&name, "sets both source_profile and credential_source; keep one"));
            }
            (Some(next), None) if next == name => {
                // A profile may take its role's source keys from itself.
                break Arc::new(super::static_keys(&section).ok_or_else(|| {
                    invalid(
                        &name,
                        "is its own source_profile but has no aws_access_key_id and aws_secret_access_key",
                    )
                })?);
            }
            (Some(next), None) => {
                if visited.contains(&next) {
                    return Err(invalid(
                        selected,
                        format!("the role chain loops: {} -> {next}", visited.join(" -> ")),
                    ));
                }
                section = profiles.section(&next).ok_or_else(|| {
                    invalid(
                        &name,
                        format!("source_profile {next} is in neither the config nor the credentials file"),
                    )
                })?;
                name = next;
            }
            (None, Some(source)) => break named_source(env, &name, source)?,
            (None, None) => {
                return Err(invalid(
                    &name,
                    "has a role_arn but no source_profile, credential_source or web_identity_token_file",
                ));
            }
        }
    };
    let mut current = base;
    for (name, section) in roles.iter().rev() {
        current = Arc::new(AssumedRole {
            role_arn: section.get("role_arn").cloned().unwrap_or_default(),
            session_name: section.get("role_session_name").cloned().unwrap_or_else(default_session_name),
            external_id: section.get("external_id").cloned(),
            duration_seconds: duration(name, section)?,
            via: Via::Keys(current),
            sts: sts.clone(),
            cache: super::http::Cache::default(),
        });
    }
    Ok(Some(current))
}

impl AssumedRole {
    /// Web identity from the environment: `AWS_WEB_IDENTITY_TOKEN_FILE` and
    /// `AWS_ROLE_ARN` (with `AWS_ROLE_SESSION_NAME`), as EKS (IRSA) and
    /// CI runners set them; none unless both are set.
    pub fn web_identity_from_env(env: Env<'_>, profile: Option<&str>) -> Result<Option<Self>, AwsAuthError> {
        let file = env("AWS_WEB_IDENTITY_TOKEN_FILE").filter(|f| !f.trim().is_empty());
        let role = env("AWS_ROLE_ARN").filter(|r| !r.trim().is_empty());
        let (Some(file), Some(role_arn)) = (file, role) else { return Ok(None) };
        let sts = Sts::new(env, super::region(env, None, profile), env("AWS_STS_REGIONAL_ENDPOINTS"))?;
        Ok(Some(Self {
            role_arn: role_arn.trim().to_owned(),
            session_name: env("AWS_ROLE_SESSION_NAME")
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(default_session_name),
            external_id: None,
            duration_seconds: None,
            via: Via::WebIdentity(PathBuf::from(file.trim())),
            sts,
            cache: super::http::Cache::default(),
        }))
    }

    fn action(&self) -> &'static str {
        match self.via {
            Via::Keys(_) => "AssumeRole",
            Via::WebIdentity(_) => "AssumeRoleWithWebIdentity",
        }
    }

    async fn fetch(&self) -> Result<(AwsCredentials, Option<Instant>), ModelError> {
        let action = self.action();
        // Keys (or the token) first: the form serializer is not `Send`.
        let (keys, token) = match &self.via {
            Via::Keys(source) => (Some(source.credentials().await?), None),
            Via::WebIdentity(file) => {
                let token = std::fs::read_to_string(file).map_err(|e| {
                    ModelError::Authentication(format!(
                        "cannot read the web identity token file {} for role {}: {e}",
                        file.display(),
                        self.role_arn
                    ))
                })?;
                (None, Some(token))
            }
        };
        let body = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("Action", action)
                .append_pair("Version", VERSION)
                .append_pair("RoleArn", &self.role_arn)
                .append_pair("RoleSessionName", &self.session_name);
            if let Some(id) = &self.external_id {
                form.append_pair("ExternalId", id);
            }
            if let Some(seconds) = self.duration_seconds {
                form.append_pair("DurationSeconds", &seconds.to_string());
            }
            if let Some(token) = &token {
                form.append_pair("WebIdentityToken", token.trim());
            }
            form.finish()
        };
        let url = &self.sts.url;
        let mut request = self.sts.client.post(url).header("content-type", CONTENT_TYPE);
        if let Some(keys) = keys {
            let signed = [("content-type".to_owned(), CONTENT_TYPE.to_owned())];
            let headers = super::sign(
                &keys,
                super::STS_SERVICE,
                &self.sts.region,
                url,
                &signed,
                body.as_bytes(),
                SystemTime::now(),
            )?;
            for (name, value) in headers {
                request = request.header(name, value);
            }
        }
        let what = format!("STS {action} for {}", self.role_arn);
        let (status, answer) =
            super::http::response(request.body(body).send().await, url, &what, MAX_RESPONSE).await?;
        let fields = xml_fields(&answer);
        if !status.is_success() {
            return Err(refusal(status.as_u16(), &fields, &what, url));
        }
        let result = format!("{action}Response/{action}Result/Credentials/");
        let field = |name: &str| fields.get(&format!("{result}{name}")).map(|v| v.trim().to_owned());
        let (Some(id), Some(secret), Some(expiration)) =
            (field("AccessKeyId"), field("SecretAccessKey"), field("Expiration"))
        else {
            return Err(ModelError::Protocol(format!("{what}: the answer from {url} holds no credentials")));
        };
        let expires = super::http::instant_of(&expiration).ok_or_else(|| {
            ModelError::Protocol(format!("{what}: the answer from {url} has an Expiration bosun cannot read"))
        })?;
        Ok((AwsCredentials::new(id, secret, field("SessionToken")), Some(expires)))
    }
}

/// An STS error answer as an error: throttling, a server in trouble, an
/// identity provider STS could not reach are network errors (retried); a
/// refusal (`AccessDenied`, an invalid or expired token) is not.
fn refusal(status: u16, fields: &HashMap<String, String>, what: &str, url: &str) -> ModelError {
    let get = |name: &str| fields.get(&format!("ErrorResponse/Error/{name}")).map(|v| v.trim().to_owned());
    let code = get("Code").unwrap_or_default();
    let text: String = get("Message").unwrap_or_default().chars().take(400).collect();
    let message = format!("{url} refused {what}: HTTP {status} {code}: {text}");
    let transient = matches!(
        code.as_str(),
        "Throttling" | "ThrottlingException" | "RequestLimitExceeded" | "IDPCommunicationError"
    );
    if transient || status == 429 || status >= 500 {
        ModelError::Network(message)
    } else {
        ModelError::Authentication(message)
    }
}

/// The text of each element of an XML document, keyed by its path of
/// local names (`AssumeRoleResponse/AssumeRoleResult/Credentials/…`);
/// what precedes a malformed part is kept.
fn xml_fields(xml: &[u8]) -> HashMap<String, String> {
    use quick_xml::events::Event;
    let text = String::from_utf8_lossy(xml);
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut path: Vec<String> = Vec::new();
    let mut fields: HashMap<String, String> = HashMap::new();
    let mut add = |path: &[String], text: &str| fields.entry(path.join("/")).or_default().push_str(text);
    loop {
        match reader.read_event() {
            Ok(Event::Start(start)) => path.push(start.local_name().as_ref().to_owned()),
            Ok(Event::End(_)) => {
                path.pop();
            }
            Ok(Event::Text(t)) => add(&path, &t.xml10_content()),
            Ok(Event::CData(c)) => add(&path, &c),
            Ok(Event::GeneralRef(r)) => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    add(&path, c.encode_utf8(&mut [0; 4]));
                } else if let Some(s) = quick_xml::escape::resolve_predefined_entity(&r.xml10_content()) {
                    add(&path, s);
                }
            }
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    fields
}

impl AwsCredentialSource for AssumedRole {
    fn credentials(&self) -> CredentialsFuture<'_> {
        Box::pin(self.cache.get(self.fetch()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sts_answers_are_read_by_path_with_entities_resolved() {
        let xml = br#"<?xml version="1.0"?>
<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error><Type>Sender</Type><Code>AccessDenied</Code>
    <Message>not &quot;allowed&quot; &#38; <![CDATA[<no>]]></Message></Error>
  <RequestId>1</RequestId>
</ErrorResponse>"#;
        let fields = xml_fields(xml);
        assert_eq!(fields["ErrorResponse/Error/Code"], "AccessDenied");
        assert_eq!(fields["ErrorResponse/Error/Message"], "not \"allowed\" & <no>");
        assert!(matches!(refusal(403, &fields, "x", "u"), ModelError::Authentication(_)));
        let mut throttled = fields.clone();
        throttled.insert("ErrorResponse/Error/Code".into(), "Throttling".into());
        assert!(matches!(refusal(400, &throttled, "x", "u"), ModelError::Network(_)));
    }

    #[test]
    fn the_endpoint_is_regional_unless_legacy_or_configured() {
        let none = |_: &str| None;
        let url = |region: Option<&str>, regional: Option<&str>| {
            Sts::new(&none, region.map(str::to_owned), regional.map(str::to_owned)).map(|s| (s.url, s.region))
        };
        let pair = |u: &str, r: &str| (u.to_owned(), r.to_owned());
        assert_eq!(url(None, None).ok(), Some(pair("https://sts.us-east-1.amazonaws.com/", "us-east-1")));
        assert_eq!(
            url(Some("eu-west-1"), None).ok(),
            Some(pair("https://sts.eu-west-1.amazonaws.com/", "eu-west-1"))
        );
        assert_eq!(
            url(Some("eu-west-1"), Some("legacy")).ok(),
            Some(pair("https://sts.amazonaws.com/", "us-east-1"))
        );
        assert_eq!(
            url(Some("af-south-1"), Some("legacy")).ok(),
            Some(pair("https://sts.af-south-1.amazonaws.com/", "af-south-1"))
        );
        assert_eq!(
            url(Some("cn-north-1"), None).ok(),
            Some(pair("https://sts.cn-north-1.amazonaws.com.cn/", "cn-north-1"))
        );
        let set = |name: &str| (name == "AWS_ENDPOINT_URL").then(|| "http://127.0.0.1:9/".to_owned());
        let sts = Sts::new(&set, Some("eu-west-1".into()), None).map(|s| (s.url, s.region));
        assert_eq!(sts.ok(), Some(pair("http://127.0.0.1:9/", "eu-west-1")));
    }
}
