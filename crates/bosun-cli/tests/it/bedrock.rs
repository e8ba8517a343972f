//! `bosun exec` on Amazon Bedrock, end to end: the real binary runs a tool
//! round trip (the model reads greet.sh, then answers from what it read)
//! against bosun-providers' Bedrock stand-in (`tests/peers/
//! bedrock_sigv4_server.py`), which recomputes every request's SigV4
//! signature with botocore and refuses any request whose signature differs,
//! then streams Converse events in AWS's binary event-stream framing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use crate::support;

use support::*;

const KEY_ID: &str = "AKIDE2EEXAMPLE";
const SECRET: &str = "e2e/secret/EXAMPLEKEY";
const SESSION: &str = "e2e-session-token";
const ANSWER: &str = "It prints hello wrold.";

use bosun_testing::botocore::Peer;

/// bosun-providers' Bedrock stand-in, answering a tool round trip.
fn peer(token: Option<&str>) -> Option<Peer> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../bosun-providers/tests/peers/bedrock_sigv4_server.py");
    bosun_testing::botocore::start(
        &script,
        &["round-trip", KEY_ID, SECRET, token.unwrap_or("-"), "us-east-1"],
    )
}

/// The peer's tally of POSTs and refusals (`GET /count`).
fn counts(peer: &Peer) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(peer.url.trim_start_matches("http://")).unwrap();
    stream.write_all(b"GET /count HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn exec_runs_a_tool_round_trip_on_bedrock_signed_as_botocore_signs() {
    let Some(peer) = peer(Some(SESSION)) else { return };
    let sandbox = task_sandbox();
    let mut cmd = sandbox.bosun();
    cmd.env("AWS_ACCESS_KEY_ID", KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("AWS_SESSION_TOKEN", SESSION)
        .env("AWS_REGION", "us-east-1")
        .args(["--model", "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"])
        .args(["exec", "--base-url", &peer.url, "what does greet.sh print?"]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stdout.contains(ANSWER), "{out:#?}");
    assert!(!out.stderr.contains("is not known"), "the table knows the inference profile: {}", out.stderr);
    assert_eq!(counts(&peer), serde_json::json!({"posts": 2, "refused": 0}), "two turns, both signed right");
}

#[test]
fn exec_on_bedrock_reads_a_profile_from_the_shared_files_and_a_wrong_key_is_refused() {
    let Some(peer) = peer(None) else { return };
    let sandbox = task_sandbox();
    std::fs::create_dir_all(sandbox.path("home/.aws")).unwrap();
    let credentials = format!(
        "[default]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = wrong\n\n[e2e]\naws_access_key_id = \
         {KEY_ID}\naws_secret_access_key = {SECRET}\n"
    );
    std::fs::write(sandbox.path("home/.aws/credentials"), credentials).unwrap();
    std::fs::write(sandbox.path("home/.aws/config"), "[profile e2e]\nregion = us-east-1\n").unwrap();
    let mut cmd = sandbox.bosun();
    cmd.env("AWS_PROFILE", "e2e")
        .args(["--model", "bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0"])
        .args(["exec", "--base-url", &peer.url, "what does greet.sh print?"]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stdout.contains(ANSWER), "{out:#?}");
    assert_eq!(counts(&peer), serde_json::json!({"posts": 2, "refused": 0}));
    // The default profile's wrong secret: refused once, not retried.
    let mut cmd = sandbox.bosun();
    cmd.env("AWS_REGION", "us-east-1")
        .args(["--model", "bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0"])
        .args(["exec", "--base-url", &peer.url, "what does greet.sh print?"]);
    let out = run(cmd);
    assert_ne!(out.status.code(), Some(0), "{out:#?}");
    assert!(out.stderr.contains("403"), "{out:#?}");
    assert_eq!(counts(&peer), serde_json::json!({"posts": 3, "refused": 1}));
}

#[test]
fn bedrock_without_a_region_or_credentials_is_refused_before_any_request() {
    let sandbox = Sandbox::new();
    for (env, expected) in [
        (vec![], "AWS_REGION"),
        (vec![("AWS_REGION", "us-east-1"), ("AWS_PROFILE", "nobody")], "AWS_PROFILE=nobody"),
    ] {
        let mut cmd = sandbox.bosun();
        // Off EC2 the instance metadata service is the chain's last source,
        // asked at the first request; turned off, nothing is left to ask and
        // the refusal comes before any request.
        cmd.env("AWS_EC2_METADATA_DISABLED", "true");
        cmd.envs(env).args(["exec", "--model", "bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", "hi"]);
        let out = run(cmd);
        out.expect_code(2);
        assert!(out.stderr.contains(expected), "{out:#?}");
    }
}

#[test]
fn invariant_18_a_credential_process_runs_in_the_sandbox_and_its_keys_sign_the_requests() {
    let Some(peer) = peer(Some(SESSION)) else { return };
    let sandbox = task_sandbox();
    std::fs::create_dir_all(sandbox.path("home/.aws")).unwrap();
    std::fs::create_dir_all(sandbox.path("home/.ssh")).unwrap();
    std::fs::write(sandbox.path("home/.ssh/id_test"), "PRIVATE KEY MATERIAL").unwrap();
    // The program tries what a credential command must not do (write the
    // project or the home folder, read another secret), notes where it ran
    // in its own cloud's folder, which it may write, then prints the keys.
    let home = sandbox.path("home");
    let script = sandbox.path("vault.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\npwd > '{home}/.aws/seen-cwd'\necho escaped > '{ws}/escaped.txt'\necho escaped > \
             '{home}/escaped.txt'\ncat '{home}/.ssh/id_test' > '{home}/.aws/stolen'\nprintf '{{\"Version\": 1, \
             \"AccessKeyId\": \"{KEY_ID}\", \"SecretAccessKey\": \"{SECRET}\", \"SessionToken\": \"{SESSION}\", \
             \"Expiration\": \"2099-01-01T00:00:00Z\"}}'\n",
            home = home.display(),
            ws = sandbox.ws().display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        sandbox.path("home/.aws/config"),
        format!(
            "[profile vault]\nregion = us-east-1\ncredential_process = \"{}\" --json\n",
            script.display()
        ),
    )
    .unwrap();
    let mut cmd = sandbox.bosun();
    cmd.env("AWS_PROFILE", "vault")
        .args(["--model", "bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0"])
        .args(["exec", "--base-url", &peer.url, "what does greet.sh print?"]);
    let out = run(cmd);
    out.expect_code(0);
    assert!(out.stdout.contains(ANSWER), "{out:#?}");
    assert_eq!(counts(&peer), serde_json::json!({"posts": 2, "refused": 0}), "signed with the printed keys");
    let cwd =
        std::fs::read_to_string(sandbox.path("home/.aws/seen-cwd")).expect("it ran and wrote its own folder");
    assert!(cwd.trim().ends_with("credential-commands"), "it runs in bosun's folder, not the project: {cwd}");
    assert!(!sandbox.ws().join("escaped.txt").exists(), "the project is not writable");
    assert!(!home.join("escaped.txt").exists(), "the home folder is not writable");
    let stolen = std::fs::read_to_string(home.join(".aws/stolen")).unwrap_or_default();
    assert!(!stolen.contains("PRIVATE KEY"), "another secret is hidden: {stolen}");
}
