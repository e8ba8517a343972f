//! `web_search` against mock search providers on loopback, in the shapes
//! SearxNG's and Brave's JSON APIs answer.

use bosun_core::Tool;
use bosun_testing::http::{Route, Server};
use bosun_web::{SearchKind, SearchProvider, WebLimits, WebSearch};
use serde_json::json;

use crate::{TestResult, call, text};

fn searxng_answer() -> serde_json::Value {
    json!({"query": "rust async", "results": [
        {"url": "https://tokio.rs/", "title": "Tokio", "content": "An asynchronous runtime for Rust", "engine": "x"},
        {"url": "https://rust-lang.github.io/async-book/", "title": "Async book", "content": "Asynchronous\nProgramming"},
        {"url": "file:///etc/passwd", "title": "planted", "content": "a result that is no web page"},
        {"url": "https://smol.rs/", "title": "smol", "content": "A small runtime"}
    ]})
}

#[tokio::test]
async fn a_searxng_instance_is_asked_and_its_results_come_back_as_a_bounded_list() -> TestResult {
    let server = Server::start().await?;
    server.route(
        "/search?q=rust+async&format=json",
        Route::typed("application/json", searxng_answer().to_string().as_bytes()),
    );
    let provider = SearchProvider::new(SearchKind::Searxng, &server.url("/"), None)?.with_max_results(2);
    let tool = WebSearch::new(provider, WebLimits::default())?;
    let output = call(&tool, json!({ "query": "rust async" })).await;
    let shown = text(&output);
    assert!(!output.is_error, "{shown}");
    assert_eq!(
        shown,
        "2 results for \"rust async\" from searxng at 127.0.0.1:\n\
         \n1. Tokio\n   https://tokio.rs/\n   An asynchronous runtime for Rust\n\
         \n2. Async book\n   https://rust-lang.github.io/async-book/\n   Asynchronous Programming\n\
         \n(1 results left out: no http(s) URL or no title)\n"
    );
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("accept"), Some("application/json"));
    assert_eq!(seen[0].authorization, None);
    Ok(())
}

#[tokio::test]
async fn brave_gets_its_key_in_its_header_and_the_key_never_shows() -> TestResult {
    let server = Server::start().await?;
    let answer = json!({"type": "search", "web": {"results": [
        {"url": "https://docs.rs/reqwest", "title": "reqwest - <strong>Rust</strong>", "description": "An <strong>HTTP</strong> client"}
    ]}});
    server.route(
        "/res/v1/web/search?q=http+client&count=5",
        Route::typed("application/json", answer.to_string().as_bytes()),
    );
    let key = "BSA-test-key-0123456789";
    let provider =
        SearchProvider::new(SearchKind::Brave, &server.url("/res/v1/web/search"), Some(key.to_owned()))?;
    assert!(!format!("{provider:?}").contains(key), "the key shows in Debug");
    let tool = WebSearch::new(provider, WebLimits::default())?;
    assert!(!format!("{tool:?}").contains(key));
    assert!(tool.definition().description.contains("brave at 127.0.0.1"), "no hidden vendor");
    let output = call(&tool, json!({ "query": "http client" })).await;
    let shown = text(&output);
    assert!(!output.is_error, "{shown}");
    assert!(shown.contains("1. reqwest - Rust\n   https://docs.rs/reqwest\n   An HTTP client\n"), "{shown}");
    assert!(!shown.contains(key));
    let seen = server.requests();
    assert_eq!(seen[0].header("x-subscription-token"), Some(key));
    Ok(())
}

#[tokio::test]
async fn a_provider_failure_is_an_error_naming_the_provider() -> TestResult {
    let server = Server::start().await?;
    server.route(
        "/search?q=x&format=json",
        Route { status: 403, ..Route::typed("text/plain", b"format json not allowed") },
    );
    server.route("/search?q=y&format=json", Route::typed("text/html", b"<html>a login page</html>"));
    let provider = SearchProvider::new(SearchKind::Searxng, &server.url("/search"), None)?;
    let tool = WebSearch::new(provider, WebLimits::default())?;
    let output = call(&tool, json!({ "query": "x" })).await;
    assert!(output.is_error);
    assert_eq!(
        text(&output),
        "the search provider at 127.0.0.1 answered HTTP 403 Forbidden: format json not allowed"
    );
    let output = call(&tool, json!({ "query": "y" })).await;
    assert!(output.is_error);
    assert!(text(&output).contains("JSON bosun cannot read as SearxNG's"), "{}", text(&output));
    Ok(())
}

#[tokio::test]
async fn brave_without_a_key_and_a_provider_url_that_is_not_http_are_refused() {
    let error =
        SearchProvider::new(SearchKind::Brave, "https://api.search.brave.com/res/v1/web/search", None);
    assert!(error.is_err_and(|e| e.to_string().contains("needs a key")));
    let error = SearchProvider::new(SearchKind::Searxng, "file:///srv/searx", None);
    assert!(error.is_err_and(|e| e.to_string().contains("only http and https")));
    assert_eq!(SearchKind::parse("brave"), Some(SearchKind::Brave));
    assert_eq!(SearchKind::parse("google"), None, "no provider bosun does not name");
}
