//! Against a real mock LLM server: npm `@copilotkit/aimock`, installed by
//! `scripts/test` into `test-peers/`, started on 127.0.0.1 with a fixture
//! file by `bosun_testing::Aimock`. A multi-turn, tool-using session on each of the four APIs,
//! and the server's fault modes: each ends in the classified error or a
//! successful retry, never a panic or a hang.
//!
//! A missing aimock FAILS these tests, unless `BOSUN_SKIP_AIMOCK=1` says to
//! skip (and `BOSUN_REQUIRE_PEERS` is unset).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::time::Duration;

use bosun_core::{Message, ModelError, Session, ToolCategory, TurnErrorKind};
use bosun_providers::{Api, HostedModel, ProviderConfig, RetryPolicy};
use bosun_testing::{Aimock, FnTool};
use serde_json::{Value, json};
use support::{APIS, ManualClock};

/// No scenario may take longer than this: a hang fails the test.
const NO_HANG: Duration = Duration::from_secs(60);

const FIXTURES: &str = r#"{"fixtures":[
  {"match":{"userMessage":"thanks"},"response":{"content":"You're welcome."}},
  {"match":{"hasToolResult":true},"response":{"content":"It is sunny in Paris."}},
  {"match":{"userMessage":"weather"},"response":{"reasoning":"The user wants the weather; I should call the tool.","content":"Let me check.","toolCalls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}}
]}"#;

fn fixtures() -> Value {
    serde_json::from_str(FIXTURES).unwrap()
}

/// A configuration for `api` against `mock`, with quick retries.
fn config(mock: &Aimock, api: Api) -> ProviderConfig {
    let url = mock.url();
    let config = match api {
        Api::OpenAiChat => ProviderConfig::openai_compatible(format!("{url}/v1")),
        Api::OpenAiResponses => ProviderConfig::new("openai-responses", api, format!("{url}/v1")),
        _ => ProviderConfig::new(format!("{api:?}"), api, url),
    };
    config
        .with_retry(
            RetryPolicy::default()
                .with_attempts(3)
                .with_delays(Duration::from_millis(1), Duration::from_millis(20)),
        )
        .with_idle_timeout(Duration::from_secs(10))
}

fn weather_tool() -> FnTool {
    FnTool::text("get_weather", ToolCategory::Read, |args| {
        format!("{} is sunny, 24 °C", args["city"].as_str().unwrap_or("?"))
    })
    .description("Current weather for a city.")
    .schema(json!({
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": false
    }))
}

#[tokio::test]
async fn a_multi_turn_tool_conversation_works_on_all_four_apis() {
    let Some(mock) = Aimock::start(&fixtures()) else { return };
    for api in APIS {
        let tool = weather_tool();
        let model = HostedModel::new(config(&mock, api), "mock-model").unwrap();
        let mut session = Session::builder(model)
            .system_prompt("You are a weather assistant.")
            .tool(tool.clone())
            .build()
            .await
            .unwrap();
        let first =
            tokio::time::timeout(NO_HANG, session.run("What's the weather in Paris?", &mut Vec::new()))
                .await
                .expect("no hang")
                .unwrap_or_else(|e| panic!("{api:?}: {e}"));
        assert_eq!(first.answer, "It is sunny in Paris.", "{api:?}");
        assert_eq!(tool.calls(), vec![json!({"city": "Paris"})], "{api:?}");
        let second = tokio::time::timeout(NO_HANG, session.run("thanks", &mut Vec::new()))
            .await
            .expect("no hang")
            .unwrap_or_else(|e| panic!("{api:?}: {e}"));
        assert_eq!(second.answer, "You're welcome.", "{api:?}");
        let roles: Vec<&str> = session
            .history()
            .iter()
            .map(|m| match m {
                Message::User { .. } => "user",
                Message::Assistant { .. } => "assistant",
                Message::ToolResult { .. } => "tool",
                _ => "other",
            })
            .collect();
        assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user", "assistant"], "{api:?}");
    }
}

/// Runs one turn on each API against a server in a fault mode and returns
/// the errors (a success is `None`).
async fn faults(args: &[&str]) -> Option<Vec<(Api, Option<TurnErrorKind>)>> {
    let mock = Aimock::start_with(&fixtures(), args)?;
    let mut outcomes = Vec::new();
    for api in APIS {
        let model = HostedModel::new(config(&mock, api), "mock-model").unwrap();
        let mut session = Session::builder(model).tool(weather_tool()).build().await.unwrap();
        let result =
            tokio::time::timeout(NO_HANG, session.run("What's the weather in Paris?", &mut Vec::new()))
                .await
                .unwrap_or_else(|_| panic!("{api:?} hung with {args:?}"));
        outcomes.push((api, result.err().map(|e| e.kind)));
    }
    Some(outcomes)
}

#[tokio::test]
async fn dropped_requests_end_in_a_server_error() {
    let Some(outcomes) = faults(&["--chaos-drop", "1"]).await else { return };
    for (api, error) in outcomes {
        assert!(matches!(error, Some(TurnErrorKind::Model(ModelError::Server(_)))), "{api:?}: {error:?}");
    }
}

#[tokio::test]
async fn malformed_responses_end_in_a_protocol_error() {
    let Some(outcomes) = faults(&["--chaos-malformed", "1"]).await else { return };
    for (api, error) in outcomes {
        assert!(matches!(error, Some(TurnErrorKind::Model(ModelError::Protocol(_)))), "{api:?}: {error:?}");
    }
}

#[tokio::test]
async fn disconnects_end_in_a_network_error_after_retries() {
    let Some(outcomes) = faults(&["--chaos-disconnect", "1"]).await else { return };
    for (api, error) in outcomes {
        assert!(matches!(error, Some(TurnErrorKind::Model(ModelError::Network(_)))), "{api:?}: {error:?}");
    }
}

#[tokio::test]
async fn rate_limits_with_retry_after_end_rate_limited_after_retries() {
    let Some(outcomes) = faults(&["--chaos-ratelimit", "1"]).await else { return };
    for (api, error) in outcomes {
        assert!(
            matches!(error, Some(TurnErrorKind::Model(ModelError::RateLimited { .. }))),
            "{api:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn latency_slows_but_does_not_break_a_turn() {
    let Some(outcomes) = faults(&["--chaos-latency", "150", "--latency", "5"]).await else { return };
    for (api, error) in outcomes {
        assert!(error.is_none(), "{api:?}: {error:?}");
    }
}

/// Replies slower than any watchdog here: "slow start" sends nothing, not
/// even its headers, for 1000 s; "stall" sends its first chunk at once and
/// the next after 1000 s.
const SLOW: &str = r#"{"fixtures":[
  {"match":{"userMessage":"slow start"},"response":{"content":"Too late."},"latency":1000000},
  {"match":{"userMessage":"stall"},"response":{"content":"This answer stops after its first chunk and would go on much later."},"streamingProfile":{"ttft":0,"tps":0.001}}
]}"#;

#[tokio::test]
async fn a_stream_slower_than_the_watchdog_ends_in_a_network_error() {
    let Some(mock) = Aimock::start(&serde_json::from_str(SLOW).unwrap()) else { return };
    let idle = Duration::from_millis(100);
    // The wait the server is too slow for: the wait for a response (the
    // first asked for), or the watchdog armed anew by the first chunk's data
    // line (the third, after the response wait and the stream's start).
    for (message, armed, expected) in
        [("slow start", 1, "no response within 0.1 s"), ("stall", 3, "no data for 0.1 s: the stream stalled")]
    {
        for api in APIS {
            let clock = ManualClock::default();
            let config = config(&mock, api)
                .with_idle_timeout(idle)
                .with_retry(RetryPolicy::none())
                .with_sleeper(clock.clone());
            let mut session = Session::builder(HostedModel::new(config, "m").unwrap())
                .tool(weather_tool())
                .build()
                .await
                .unwrap();
            let mut sink = Vec::new();
            let turn = tokio::time::timeout(NO_HANG, session.run(message, &mut sink));
            let error = support::advancing(&clock, armed, idle, turn).await.expect("no hang").unwrap_err();
            assert!(
                matches!(&error.kind, TurnErrorKind::Model(ModelError::Network(m)) if m.contains(expected)),
                "{message} on {api:?}: {error}"
            );
            assert_eq!(clock.waits()[armed - 1].state, support::WaitState::Ended, "{message} on {api:?}");
        }
    }
}

// ------------------------------------------------------------- no silent skips

/// A missing aimock fails these tests, unless `BOSUN_SKIP_AIMOCK=1`: then
/// they pass, saying they skipped; `BOSUN_REQUIRE_PEERS` (set by
/// `scripts/test`) overrides the skip. (Each runs alone in a child of this
/// binary, with `BOSUN_AIMOCK_CLI` pointing nowhere.)
#[test]
fn a_missing_aimock_fails_the_tests_unless_told_to_skip() {
    let scratch = tempfile::tempdir().unwrap();
    let missing = scratch.path().join("cli.js");
    let cli = ("BOSUN_AIMOCK_CLI", missing.as_os_str());
    let skip = ("BOSUN_SKIP_AIMOCK", "1".as_ref());
    for name in
        ["a_multi_turn_tool_conversation_works_on_all_four_apis", "dropped_requests_end_in_a_server_error"]
    {
        let test = &bosun_testing::test_path!(name);
        let failed = support::run_alone(test, &[cli], &["BOSUN_SKIP_AIMOCK", "BOSUN_REQUIRE_PEERS"]);
        assert!(!failed.status.success(), "{test} passed without aimock:\n{}", support::describe(&failed));
        assert!(
            String::from_utf8_lossy(&failed.stdout).contains("BOSUN_SKIP_AIMOCK=1"),
            "{test}: the failure names the way to skip:\n{}",
            support::describe(&failed)
        );

        let log = scratch.path().join(format!("{name}.skipped"));
        let log_variable = (bosun_testing::SKIP_LOG_VARIABLE, log.as_os_str());
        let skipped = support::run_alone(test, &[cli, skip, log_variable], &["BOSUN_REQUIRE_PEERS"]);
        assert!(
            skipped.status.success(),
            "{test} failed though told to skip:\n{}",
            support::describe(&skipped)
        );
        assert!(
            support::said_skipped(&skipped, "BOSUN_SKIP_AIMOCK"),
            "{test} skipped without saying so:\n{}",
            support::describe(&skipped)
        );
        // ... and appended the same line to the run's skip log.
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            logged.starts_with("!!! SKIPPED (BOSUN_SKIP_AIMOCK=1) ") && logged.contains(name),
            "{logged:?}"
        );

        let required = support::run_alone(test, &[cli, skip, ("BOSUN_REQUIRE_PEERS", "1".as_ref())], &[]);
        assert!(
            !required.status.success(),
            "{test} skipped though the peers are required:\n{}",
            support::describe(&required)
        );
    }
}
