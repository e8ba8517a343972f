//! Unit tests of the shell tool's configuration, arguments and schema.

use bosun_core::schema::CompiledSchema;

use super::*;

#[test]
fn path_keeps_only_absolute_non_traversing_entries() {
    let path = sanitize_path("/opt/tool/bin:bin:./x::/usr/../etc:/home/me/.cargo/bin:/opt/tool/bin:/usr/bin");
    assert_eq!(path, "/opt/tool/bin:/home/me/.cargo/bin:/usr/bin:/usr/local/bin:/bin");
}

#[test]
fn an_empty_path_becomes_the_fallbacks() {
    assert_eq!(sanitize_path(""), "/usr/local/bin:/usr/bin:/bin");
    assert_eq!(ShellConfig::new("/w").path(), "/usr/local/bin:/usr/bin:/bin");
    assert_eq!(ShellConfig::new("/w").with_path("relative:../up").path(), "/usr/local/bin:/usr/bin:/bin");
}

#[test]
fn home_is_kept_only_when_absolute_and_non_traversing() {
    let config = ShellConfig::new("/w");
    assert_eq!(config.clone().with_home(Some("/home/me")).home(), Some("/home/me"));
    assert_eq!(config.clone().with_home(Some("home/me")).home(), None);
    assert_eq!(config.clone().with_home(Some("/home/../root")).home(), None);
    assert_eq!(config.with_home(None).home(), None);
}

#[test]
fn debug_shows_only_path_and_home_of_the_environment() {
    let config = ShellConfig::new("/w").with_path("/opt/bin").with_home(Some("/home/me"));
    let debug = format!("{config:?}");
    assert!(debug.contains("/opt/bin:/usr/local/bin") && debug.contains("/home/me"), "{debug}");
}

#[test]
fn the_schema_stays_inside_the_vocabulary_and_accepts_both_forms() {
    let tool = ShellTool::new(ShellConfig::new("/w"));
    assert_eq!(tool.definition().name, "shell");
    assert_eq!(tool.category(), ToolCategory::Execute);
    let schema = CompiledSchema::compile(&tool.definition().parameters).unwrap();
    for good in [
        json!({"command": "ls"}),
        json!({"command": ["printf", "%s", "a b"], "timeout_ms": 5}),
        json!({"command": "sleep 1", "timeout_ms": 1_200_000}),
    ] {
        assert!(schema.validate(&good).is_ok(), "{good}");
    }
    for bad in [
        json!({}),
        json!({"command": ""}),
        json!({"command": []}),
        json!({"command": [1]}),
        json!({"command": "ls", "timeout_ms": 0}),
        json!({"command": "ls", "timeout_ms": 1_200_001}),
        json!({"command": "ls", "cwd": "/"}),
    ] {
        assert!(schema.validate(&bad).is_err(), "{bad}");
    }
}

#[test]
fn arguments_parse_both_forms_and_the_timeout() {
    assert_eq!(
        Arguments::parse(&json!({"command": "echo hi"})),
        Ok(Arguments { invocation: Invocation::Script("echo hi".into()), timeout: None, escape: None })
    );
    assert_eq!(
        Arguments::parse(&json!({"command": ["printf", "%s", "a b"], "timeout_ms": 1500.0})),
        Ok(Arguments {
            invocation: Invocation::Argv("printf".into(), vec!["%s".into(), "a b".into()]),
            timeout: Some(Duration::from_millis(1500)),
            escape: None
        })
    );
    assert_eq!(Arguments::parse(&json!({"command": []})), Err(ArgumentsError::Command));
    assert_eq!(Arguments::parse(&json!({"command": ["ls", 3]})), Err(ArgumentsError::Command));
    assert_eq!(Arguments::parse(&json!({"command": "ls", "timeout_ms": -1})), Err(ArgumentsError::Timeout));
    assert_eq!(
        Arguments::parse(&json!({"command": "ls", "env": {}})),
        Err(ArgumentsError::Unknown("env".into()))
    );
}

#[test]
fn timeouts_are_clamped_to_the_hard_maximum() {
    let limits = ToolLimits { shell_timeout: Duration::from_secs(24 * 3600), ..ToolLimits::default() };
    let config = ShellConfig::new("/w").with_limits(limits);
    assert_eq!(config.default_timeout(), ToolLimits::HARD_MAX_SHELL_TIMEOUT);
}

#[test]
fn the_description_says_what_the_sandbox_allows() {
    use bosun_sandbox::{SandboxMode, SandboxPolicy};
    let write = sandbox_sentence(&SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w"));
    assert!(write.contains("write only inside the workspace") && write.contains("no network"), "{write}");
    assert!(write.contains("\"network\"") && write.contains("\"off\""), "{write}");
    let read = sandbox_sentence(&SandboxPolicy::new(SandboxMode::ReadOnly, "/w").with_network(true));
    assert!(read.contains("cannot change files") && !read.contains("no network"), "{read}");
    assert!(!read.contains("\"network\""), "{read}");
}
