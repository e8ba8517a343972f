//! Elicitation: a server asking the person for input in the middle of a
//! call. bosun advertises form elicitation and hands each request to an
//! [`Elicitor`]; the default, [`DeclineAll`], declines with a reason, since
//! nothing can ask the person yet. A front end brings a real one (the
//! CLI's terminal prompt reads the schema with the form module).
//! [`AcceptDefaults`] accepts with the values the schema itself proposes
//! ([`schema_defaults`]): for unattended runs, such as the conformance suite.

use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, Value};

/// The future an [`Elicitor`] returns.
pub type ElicitFuture<'a> = Pin<Box<dyn Future<Output = ElicitationResponse> + Send + 'a>>;

/// Answers servers' requests for input.
pub trait Elicitor: Send + Sync {
    /// Answers one request. A server's call waits for it (under the call's
    /// timeout), so it should not wait forever.
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture<'_>;
}

/// What a server asks.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The server asking.
    pub server: String,
    /// Its message for the person (untrusted text).
    pub message: String,
    /// What it wants back.
    pub kind: ElicitationKind,
}

/// The form of input asked for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitationKind {
    /// Values for a (flat) JSON Schema.
    Form {
        /// The requested schema.
        schema: Value,
    },
    /// A visit to a URL (bosun does not advertise this mode).
    Url {
        /// The URL.
        url: String,
    },
}

/// The answer.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitationResponse {
    /// The person gave these values.
    Accept(Value),
    /// The person (or bosun for them) said no; the call goes on without it.
    Decline {
        /// Why, sent to the server in `_meta.reason`.
        reason: String,
    },
    /// The person cancelled the whole operation.
    Cancel,
}

/// Declines every request: bosun cannot ask the person yet.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeclineAll;

/// The reason [`DeclineAll`] gives.
pub const DECLINED: &str = "bosun cannot ask the user for input from an MCP server; continue without it";

impl Elicitor for DeclineAll {
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture<'_> {
        tracing::info!(server = %request.server, "mcp: declined an elicitation request");
        Box::pin(std::future::ready(ElicitationResponse::Decline { reason: DECLINED.to_owned() }))
    }
}

/// Accepts every form request with the defaults its schema gives
/// ([`schema_defaults`]); declines one whose required field has no default,
/// and every URL request (nothing can visit it unattended).
#[derive(Clone, Copy, Debug, Default)]
pub struct AcceptDefaults;

impl Elicitor for AcceptDefaults {
    fn elicit(&self, request: ElicitationRequest) -> ElicitFuture<'_> {
        let response = match &request.kind {
            ElicitationKind::Form { schema } => match schema_defaults(schema) {
                Ok(values) => ElicitationResponse::Accept(values),
                Err(reason) => ElicitationResponse::Decline { reason },
            },
            ElicitationKind::Url { .. } => {
                ElicitationResponse::Decline { reason: "bosun cannot visit a URL unattended".to_owned() }
            }
        };
        tracing::info!(server = %request.server, accepted = matches!(response, ElicitationResponse::Accept(_)),
            "mcp: answered an elicitation request with the schema's defaults");
        Box::pin(std::future::ready(response))
    }
}

/// The answer a requested schema proposes: an object holding each
/// property's `default`. Properties without one are left out (the form's
/// fields are optional unless listed in `required`); a required property
/// without a default is an error naming it, since no value can be made up
/// for the person. Elicitation schemas are flat (primitive properties), so
/// only the top level is read.
pub fn schema_defaults(schema: &Value) -> Result<Value, String> {
    let mut values = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, property) in properties.into_iter().flatten() {
        if let Some(default) = property.get("default") {
            values.insert(name.clone(), default.clone());
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if !values.contains_key(name) {
            return Err(format!("the required field `{name}` has no default and nobody can be asked"));
        }
    }
    Ok(Value::Object(values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> ElicitationRequest {
        ElicitationRequest { server: "s".into(), message: "m".into(), kind: ElicitationKind::Form { schema } }
    }

    #[test]
    fn defaults_of_every_primitive_kind_are_filled_and_the_rest_left_out() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "nickname": {"type": "string"}
        }, "required": []});
        assert_eq!(
            schema_defaults(&schema).unwrap(),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
        assert_eq!(schema_defaults(&json!({})).unwrap(), json!({}));
    }

    #[tokio::test]
    async fn a_required_field_without_a_default_is_declined_naming_it() {
        let schema = json!({"properties": {"token": {"type": "string"}}, "required": ["token"]});
        let ElicitationResponse::Decline { reason } = AcceptDefaults.elicit(form(schema)).await else {
            panic!("accepted without a value for a required field");
        };
        assert!(reason.contains("`token`"), "{reason}");
        let accepted = AcceptDefaults.elicit(form(json!({"properties": {"n": {"default": 1}}}))).await;
        assert_eq!(accepted, ElicitationResponse::Accept(json!({"n": 1})));
        let url = ElicitationRequest {
            kind: ElicitationKind::Url { url: "https://x.example".into() },
            ..form(json!({}))
        };
        assert!(matches!(AcceptDefaults.elicit(url).await, ElicitationResponse::Decline { .. }));
    }
}
