//! `web_fetch` against a real HTTP server on loopback.

use std::time::Duration;

use bosun_core::{CallId, Tool, ToolContext};
use bosun_testing::http::{Route, Server};
use bosun_web::{USER_AGENT, WebFetch, WebLimits};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::{TestResult, call, text};

const PAGE: &[u8] = b"<!doctype html><html><head><title>T</title><script>steal()</script>\
    <style>body{}</style></head><body><h1>Release notes</h1>\
    <p>Version <b>2.0</b> is out; see <a href=\"https://example.org/changes\">the changes</a>.</p>\
    <ul><li>faster</li><li>smaller</li></ul></body></html>";

fn fetch() -> Result<WebFetch, bosun_web::WebError> {
    WebFetch::new(WebLimits::default())
}

#[tokio::test]
async fn an_html_page_comes_back_as_markdown_under_its_url_and_type() -> TestResult {
    let server = Server::start().await?;
    server.route("/notes", Route::typed("text/html; charset=utf-8", PAGE));
    let url = server.url("/notes");
    let output = call(&fetch()?, json!({ "url": url })).await;
    let shown = text(&output);
    assert!(!output.is_error, "{shown}");
    assert!(shown.starts_with(&format!("URL: {url}\nstatus: 200 OK\n")), "{shown}");
    assert!(shown.contains("content-type: text/html (shown as Markdown)"), "{shown}");
    assert!(shown.contains("# Release notes"), "{shown}");
    assert!(
        shown.contains("Version **2.0** is out; see [the changes](https://example.org/changes)."),
        "{shown}"
    );
    assert!(shown.contains("faster") && shown.contains("smaller"), "{shown}");
    assert!(
        !shown.contains("steal()") && !shown.contains("body{}"),
        "scripts and styles are dropped: {shown}"
    );
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].header("user-agent"), Some(USER_AGENT));
    assert!(USER_AGENT.starts_with("bosun/"));
    assert!(seen[0].header("accept").is_some_and(|a| a.starts_with("text/html")), "{seen:?}");
    Ok(())
}

#[tokio::test]
async fn text_and_json_pass_through_as_they_are() -> TestResult {
    let server = Server::start().await?;
    server.route("/a.txt", Route::typed("text/plain", b"# not a heading\n<b>kept</b>"));
    server.route("/a.json", Route::typed("application/json", br#"{"ok":true}"#));
    let tool = fetch()?;
    let plain = text(&call(&tool, json!({ "url": server.url("/a.txt") })).await);
    assert!(plain.ends_with("\n\n# not a heading\n<b>kept</b>"), "{plain}");
    let data = text(&call(&tool, json!({ "url": server.url("/a.json") })).await);
    assert!(data.contains("content-type: application/json\n") && data.ends_with(r#"{"ok":true}"#), "{data}");
    Ok(())
}

#[tokio::test]
async fn redirects_on_the_site_are_followed_and_each_is_shown_with_the_final_url() -> TestResult {
    let server = Server::start().await?;
    server.route("/old", Route::redirect("/moved").header("Set-Cookie", "session=s3cr3t"));
    server.route("/moved", Route::redirect(&server.url("/new")));
    server.route("/new", Route::typed("text/html", b"<p>here</p>"));
    let output = call(&fetch()?, json!({ "url": server.url("/old") })).await;
    let shown = text(&output);
    assert!(!output.is_error, "{shown}");
    let expected = format!(
        "redirected: {old} → {moved}\nredirected: {moved} → {new}\nURL: {new}\nstatus: 200 OK\n",
        old = server.url("/old"),
        moved = server.url("/moved"),
        new = server.url("/new"),
    );
    assert!(shown.starts_with(&expected), "{shown}");
    assert!(shown.ends_with("here"), "{shown}");
    // No cookie store: what a server sets is never sent back.
    let seen = server.requests();
    assert_eq!(seen.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), ["/old", "/moved", "/new"]);
    assert!(seen.iter().all(|r| r.header("cookie").is_none()), "{seen:?}");
    Ok(())
}

#[tokio::test]
async fn a_redirect_to_another_site_is_told_and_not_followed() -> TestResult {
    let (here, there) = (Server::start().await?, Server::start().await?);
    here.route("/go", Route::redirect(&there.url("/landing")));
    there.route("/landing", Route::typed("text/plain", b"elsewhere"));
    let output = call(&fetch()?, json!({ "url": here.url("/go") })).await;
    let shown = text(&output);
    assert!(!output.is_error, "{shown}");
    assert!(
        shown.contains(&format!("redirected: {} → {}", here.url("/go"), there.url("/landing"))),
        "{shown}"
    );
    assert!(shown.contains("not followed") && shown.contains("asks again"), "{shown}");
    assert!(!shown.contains("elsewhere"), "{shown}");
    assert!(there.requests().is_empty(), "another host was reached without a new approval");
    Ok(())
}

#[tokio::test]
async fn redirects_past_the_bound_fail_naming_the_chain() -> TestResult {
    let server = Server::start().await?;
    server.route("/1", Route::redirect("/2"));
    server.route("/2", Route::redirect("/3"));
    server.route("/3", Route::redirect("/1"));
    let tool = WebFetch::new(WebLimits::default().with_max_redirects(2))?;
    let output = call(&tool, json!({ "url": server.url("/1") })).await;
    let shown = text(&output);
    assert!(output.is_error);
    let chain =
        format!("{} → {} → {} → {}", server.url("/1"), server.url("/2"), server.url("/3"), server.url("/1"));
    assert_eq!(shown, format!("more than 2 redirects: {chain}"));
    assert_eq!(server.requests().len(), 3, "the fourth hop was not asked for");
    Ok(())
}

#[tokio::test]
async fn a_body_past_the_cap_is_cut_and_the_output_is_bounded() -> TestResult {
    let server = Server::start().await?;
    let long = "word ".repeat(4000);
    server.route("/big", Route::typed("text/plain", long.as_bytes()));
    let tool = WebFetch::new(WebLimits::default().with_max_response_bytes(1000))?;
    let shown = text(&call(&tool, json!({ "url": server.url("/big") })).await);
    assert!(shown.contains("[the response was cut at 1000 bytes; the rest was not read]"), "{shown}");
    let body = shown.split_once("\n\n").map(|(_, body)| body).unwrap_or_default();
    assert_eq!(body.len(), 1000, "{shown}");

    let tool = WebFetch::new(WebLimits::default().with_max_output_bytes(2048))?;
    let output = call(&tool, json!({ "url": server.url("/big") })).await;
    let shown = text(&output);
    assert!(!output.is_error);
    assert!(shown.len() <= 2048 + 100, "{} bytes", shown.len());
    assert!(shown.contains("[output cut at 2048 bytes of"), "{shown}");
    Ok(())
}

#[tokio::test]
async fn a_page_nested_to_overflow_a_parser_comes_back_as_its_text() -> TestResult {
    let server = Server::start().await?;
    let depth = 150_000;
    let page = format!("<p>top</p>{}<b>bottom</b>{}", "<div>".repeat(depth), "</div>".repeat(depth));
    server.route("/deep", Route::typed("text/html", page.as_bytes()));
    let output = call(&fetch()?, json!({ "url": server.url("/deep") })).await;
    let shown = text(&output);
    assert!(!output.is_error, "{shown}");
    assert!(shown.ends_with("shown as plain text]\n\ntop\nbottom"), "{shown}");
    Ok(())
}

#[tokio::test]
async fn content_that_is_not_text_is_refused_by_its_type() -> TestResult {
    let server = Server::start().await?;
    server.route("/logo.png", Route::typed("image/png", b"\x89PNG\r\n\x1a\n\0\0"));
    server.route("/app.bin", Route::file(b"\0\x01\x02"));
    let tool = fetch()?;
    for (path, kind) in [("/logo.png", "image/png"), ("/app.bin", "application/octet-stream")] {
        let output = call(&tool, json!({ "url": server.url(path) })).await;
        let shown = text(&output);
        assert!(output.is_error, "{shown}");
        assert!(
            shown.contains(&format!("the response is `{kind}`, which web_fetch does not read")),
            "{shown}"
        );
        assert!(!shown.contains("PNG"), "{shown}");
    }
    Ok(())
}

#[tokio::test]
async fn an_error_status_is_an_error_result_with_the_page() -> TestResult {
    let server = Server::start().await?;
    server.route("/gone", Route { status: 404, ..Route::typed("text/html", b"<h2>Not here</h2>") });
    let output = call(&fetch()?, json!({ "url": server.url("/gone") })).await;
    let shown = text(&output);
    assert!(output.is_error);
    assert!(shown.contains("status: 404 Not Found") && shown.contains("## Not here"), "{shown}");
    Ok(())
}

#[tokio::test]
async fn a_server_that_stops_answering_is_given_up_at_the_time_bound() -> TestResult {
    let server = Server::start().await?;
    server.route("/slow", Route::typed("text/html", b"<p>never</p>").stalled());
    let tool = WebFetch::new(WebLimits::default().with_timeout(Duration::from_millis(300)))?;
    let output = call(&tool, json!({ "url": server.url("/slow") })).await;
    let shown = text(&output);
    assert!(output.is_error);
    assert_eq!(shown, "no complete answer within 0.3 s (the time bound of a web call)");
    Ok(())
}

#[tokio::test]
async fn a_cancelled_call_returns_without_its_answer() -> TestResult {
    let server = Server::start().await?;
    server.route("/slow", Route::typed("text/html", b"<p>never</p>").stalled());
    let cancel = CancellationToken::new();
    cancel.cancel();
    let context = ToolContext::detached(CallId::new_v7(), cancel);
    let output = fetch()?.execute(json!({ "url": server.url("/slow") }), context).await;
    assert!(output.is_error);
    assert_eq!(text(&output), "cancelled");
    Ok(())
}

#[tokio::test]
async fn urls_other_than_http_and_credentials_are_refused_before_any_request() -> TestResult {
    let server = Server::start().await?;
    let tool = fetch()?;
    let with_password = server.url("/x").replace("http://", "http://me:hunter2@");
    for (url, says) in [
        ("file:///etc/passwd".to_owned(), "only http and https"),
        ("ftp://127.0.0.1/".to_owned(), "only http and https"),
        (with_password, "holds credentials"),
        ("not a url".to_owned(), "is not a URL"),
    ] {
        let output = call(&tool, json!({ "url": url })).await;
        let shown = text(&output);
        assert!(output.is_error && shown.contains(says), "{url}: {shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
    // A redirect is checked as the URL given is.
    server.route("/to-file", Route::redirect("file:///etc/passwd"));
    let shown = text(&call(&tool, json!({ "url": server.url("/to-file") })).await);
    assert!(shown.contains("only http and https"), "{shown}");
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

#[tokio::test]
async fn each_call_declares_the_network_and_names_its_url() -> TestResult {
    let tool = fetch()?;
    assert_eq!(tool.category(), bosun_core::ToolCategory::Network);
    let effects = tool.effects(&json!({ "url": "https://example.org/a" }));
    let why = effects.escalation.ok_or("no escalation")?;
    assert!(
        why.contains("`web_fetch` reads https://example.org/a") && why.contains("outside the OS sandbox")
    );
    Ok(())
}
