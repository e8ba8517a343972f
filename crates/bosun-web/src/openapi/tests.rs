//! Unit tests of reading a spec: JSON and YAML alike, versions refused by
//! name, 3.0's `nullable`, server variables, secrets never shown.

use super::*;

#[test]
fn yaml_and_json_read_alike_and_numeric_keys_become_text() {
    let yaml = "openapi: 3.1.0\nservers:\n  - url: https://api.example/v1\npaths: {}\nx:\n  200: ok\n";
    let spec = OpenApiSpec::parse("y", yaml, None).unwrap();
    assert_eq!(spec.document["x"]["200"], "ok");
    assert_eq!(spec.base_url().as_str(), "https://api.example/v1");
    let json = r#"{"openapi": "3.0.3", "paths": {}}"#;
    let error = OpenApiSpec::parse("j", json, None).unwrap_err().to_string();
    assert!(error.contains("base_url"), "{error}");
    assert!(OpenApiSpec::parse("j", json, Some("http://127.0.0.1:9/api")).is_ok());
}

#[test]
fn other_documents_and_versions_are_refused_with_why() {
    let swagger = OpenApiSpec::parse("s", r#"{"swagger": "2.0"}"#, Some("http://x")).unwrap_err().to_string();
    assert!(swagger.contains("Swagger 2.0"), "{swagger}");
    let garbage = OpenApiSpec::parse("g", "{ not: [valid", Some("http://x")).unwrap_err().to_string();
    assert!(garbage.contains("neither JSON nor YAML"), "{garbage}");
    let ftp = OpenApiSpec::parse("f", r#"{"openapi": "3.1.0"}"#, Some("ftp://x")).unwrap_err().to_string();
    assert!(ftp.contains("base URL"), "{ftp}");
}

#[test]
fn nullable_in_3_0_becomes_a_null_type() {
    let json =
        r#"{"openapi": "3.0.0", "components": {"schemas": {"A": {"type": "string", "nullable": true}}}}"#;
    let spec = OpenApiSpec::parse("n", json, Some("http://x")).unwrap();
    assert_eq!(spec.document["components"]["schemas"]["A"]["type"], serde_json::json!(["string", "null"]));
}

#[test]
fn server_variables_take_their_defaults() {
    let json = r#"{"openapi": "3.1.0", "servers": [{"url": "https://{region}.api.example/{v}",
        "variables": {"region": {"default": "eu"}, "v": {"default": "v2"}}}]}"#;
    let spec = OpenApiSpec::parse("v", json, None).unwrap();
    assert_eq!(spec.base_url().as_str(), "https://eu.api.example/v2");
}

#[test]
fn auth_never_shows_its_secret() {
    let shown = format!(
        "{:?} {:?} {:?} {:?}",
        ApiAuth::Bearer("s3cret".into()),
        ApiAuth::Header { name: "X-Key".into(), value: "s3cret".into() },
        ApiAuth::Query { name: "key".into(), value: "s3cret".into() },
        ApiAuth::Basic { username: "me".into(), password: "s3cret".into() },
    );
    assert!(!shown.contains("s3cret") && shown.contains("X-Key"), "{shown}");
}
