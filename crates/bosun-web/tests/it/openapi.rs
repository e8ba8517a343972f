//! OpenAPI specs as tools, against a real HTTP server on loopback: each
//! argument goes where the spec says (path segments encoded, query, header,
//! JSON body), the user's credentials are added and never shown, answers
//! come back with their status, and a call asks in every mode
//! (invariant 19). One spec is written here (3.1, YAML); one is a real
//! public spec (the OpenAPI Initiative's petstore, 3.0, in
//! `tests/fixtures/openapi/`).

#![allow(clippy::unwrap_used, clippy::panic)]

use bosun_core::{
    ApprovalDecision, GrantScope, Mode, Permission, PermissionRule, Session, Tool, WorkspaceIdentity,
};
use bosun_testing::http::{Route, Server};
use bosun_testing::{RecordingApprover, ScriptedModel};
use bosun_web::{ApiAuth, OpenApiSpec, OpenApiTools, WebLimits};
use serde_json::{Value, json};

use crate::{TestResult, call, text};

const SPEC: &str = r##"
openapi: 3.1.0
info: {title: Items, version: "1"}
servers:
  - url: https://items.example/v1
paths:
  /items/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string}, description: The item's id}
    get:
      operationId: getItem
      summary: One item
      parameters:
        - {name: fields, in: query, schema: {type: array, items: {type: string}}}
        - {name: X-Trace, in: header, schema: {type: string}}
      responses:
        200: {description: the item}
  /items:
    post:
      operationId: createItem
      description: Creates an item.
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/NewItem"}
      responses:
        201: {description: created}
  /report:
    get:
      operationId: report
      parameters:
        - {name: columns, in: query, explode: false, schema: {type: array, items: {type: string}}}
      responses:
        200: {description: csv}
  /upload:
    post:
      operationId: upload
      requestBody:
        content:
          multipart/form-data:
            schema: {type: object}
      responses:
        200: {description: ok}
  /session:
    get:
      operationId: whoAmI
      parameters:
        - {name: sid, in: cookie, required: true, schema: {type: string}}
      responses:
        200: {description: ok}
components:
  schemas:
    NewItem:
      type: object
      required: [name]
      properties:
        name: {type: string, minLength: 1}
        size: {type: [integer, "null"]}
        tags: {type: array, items: {$ref: "#/components/schemas/Tag"}}
    Tag:
      type: string
      enum: [red, blue]
"##;

fn tools(server: &Server, auth: ApiAuth) -> OpenApiTools {
    let spec = OpenApiSpec::parse("items", SPEC, Some(&server.url("/v1"))).unwrap();
    spec.tools(auth, WebLimits::default(), None).unwrap()
}

fn tool<'a>(tools: &'a OpenApiTools, name: &str) -> &'a dyn Tool {
    let found = tools.tools.iter().find(|t| t.definition().name == name);
    found.unwrap_or_else(|| panic!("no tool {name} in {tools:?}")).as_ref()
}

#[tokio::test]
async fn each_operation_is_a_tool_and_those_bosun_cannot_call_are_named_with_why() -> TestResult {
    let server = Server::start().await?;
    let tools = tools(&server, ApiAuth::None);
    // In the spec's order where this build's JSON maps keep it, else by path.
    let mut names: Vec<&str> = tools.tools.iter().map(|t| t.definition().name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["items__createItem", "items__getItem", "items__report"]);
    let skipped: Vec<String> = tools.skipped.iter().map(|(op, why)| format!("{op}: {why}")).collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(skipped.iter().any(|s| s.contains("upload") && s.contains("multipart/form-data")), "{skipped:?}");
    assert!(skipped.iter().any(|s| s.contains("whoAmI") && s.contains("cookie `sid`")), "{skipped:?}");

    // The arguments: parameters and the body, `$ref`s inlined into bosun's vocabulary.
    let create = tool(&tools, "items__createItem").definition().clone();
    assert_eq!(create.parameters["required"], json!(["body"]));
    let body = &create.parameters["properties"]["body"];
    assert_eq!(body["required"], json!(["name"]));
    assert_eq!(body["properties"]["tags"]["items"]["enum"], json!(["red", "blue"]));
    assert!(!create.parameters.to_string().contains("$ref"), "{}", create.parameters);
    let get = tool(&tools, "items__getItem").definition().clone();
    assert_eq!(get.parameters["required"], json!(["id"]));
    assert_eq!(get.parameters["properties"]["id"]["description"], "The item's id");
    assert!(get.description.starts_with("One item") && get.description.contains("GET /items/{id}"));
    assert!(get.description.contains("asks the user"), "{}", get.description);
    Ok(())
}

#[tokio::test]
async fn arguments_go_where_the_spec_says_with_the_users_key() -> TestResult {
    let server = Server::start().await?;
    server
        .route("/v1/items/a%2Fb?fields=name&fields=size", Route::json(&json!({"id": "a/b", "name": "lamp"})));
    server.route("/v1/items", Route { status: 201, ..Route::json(&json!({"id": "7"})) });
    let tools = tools(&server, ApiAuth::Bearer("tok-123".into()));

    let got = call(
        tool(&tools, "items__getItem"),
        json!({"id": "a/b", "fields": ["name", "size"], "X-Trace": "t-1"}),
    )
    .await;
    assert!(!got.is_error, "{}", text(&got));
    assert!(text(&got).contains("status: 200") && text(&got).contains("\"lamp\""), "{}", text(&got));
    let created =
        call(tool(&tools, "items__createItem"), json!({"body": {"name": "desk", "size": null}})).await;
    assert!(!created.is_error && text(&created).contains("status: 201"), "{}", text(&created));

    let requests = server.requests();
    let (get, post) = (&requests[0], &requests[1]);
    assert_eq!((get.method.as_str(), get.path.as_str()), ("GET", "/v1/items/a%2Fb?fields=name&fields=size"));
    assert_eq!(get.header("x-trace"), Some("t-1"));
    assert_eq!(get.authorization.as_deref(), Some("Bearer tok-123"));
    assert_eq!((post.method.as_str(), post.path.as_str()), ("POST", "/v1/items"));
    assert_eq!(post.header("content-type"), Some("application/json"));
    assert_eq!(serde_json::from_str::<Value>(&post.body)?, json!({"name": "desk", "size": null}));
    Ok(())
}

#[tokio::test]
async fn a_path_argument_cannot_leave_its_segment() -> TestResult {
    let server = Server::start().await?;
    let tools = tools(&server, ApiAuth::None);
    for id in ["..", "."] {
        let refused = call(tool(&tools, "items__getItem"), json!({ "id": id })).await;
        assert!(refused.is_error && text(&refused).contains("cannot be"), "{}", text(&refused));
    }
    assert!(server.requests().is_empty(), "`.` and `..` are refused before anything is sent");
    for id in ["../admin", "x?y=1", "x#frag"] {
        let _ = call(tool(&tools, "items__getItem"), json!({ "id": id })).await;
    }
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/items/..%2Fadmin", "/v1/items/x%3Fy=1", "/v1/items/x%23frag"]);
    Ok(())
}

#[tokio::test]
async fn an_unexploded_array_is_one_comma_list_and_a_key_in_the_query_is_never_shown() -> TestResult {
    let server = Server::start().await?;
    let auth = ApiAuth::Query { name: "api_key".into(), value: "s3cret-key".into() };
    let tools = tools(&server, auth);
    let report = tool(&tools, "items__report");
    let asked = report.effects(&json!({"columns": ["a", "b"]})).escalation.unwrap_or_default();
    assert!(asked.contains("GET") && asked.contains("/v1/report?columns=a%2Cb"), "{asked}");
    let got = call(report, json!({"columns": ["a", "b"]})).await;
    assert!(got.is_error, "nothing routed: a 404 is an error");
    assert!(text(&got).contains("status: 404") && text(&got).contains("api_key=***"), "{}", text(&got));
    assert!(!text(&got).contains("s3cret") && !asked.contains("s3cret"), "{}", text(&got));
    assert_eq!(server.requests()[0].path, "/v1/report?columns=a%2Cb&api_key=s3cret-key");
    Ok(())
}

#[tokio::test]
async fn a_redirect_is_told_not_followed() -> TestResult {
    let server = Server::start().await?;
    server.route("/v1/items/1", Route::redirect("https://elsewhere.example/steal"));
    let tools = tools(&server, ApiAuth::Bearer("tok".into()));
    let got = call(tool(&tools, "items__getItem"), json!({"id": "1"})).await;
    assert!(
        text(&got).contains("redirected to https://elsewhere.example/steal (not followed)"),
        "{}",
        text(&got)
    );
    assert_eq!(server.requests().len(), 1);
    Ok(())
}

#[tokio::test]
async fn the_real_petstore_spec_gives_its_operations_and_calls_them() -> TestResult {
    let text_of_spec = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/openapi/petstore-expanded.yaml"
    ))?;
    let default = OpenApiSpec::parse("petstore", &text_of_spec, None)?;
    assert_eq!(default.base_url().as_str(), "https://petstore.swagger.io/v2");
    let server = Server::start().await?;
    server.route("/v2/pets/3", Route::json(&json!({"id": 3, "name": "Rex"})));
    let spec = OpenApiSpec::parse("petstore", &text_of_spec, Some(&server.url("/v2")))?;
    let tools = spec.tools(ApiAuth::None, WebLimits::default(), None)?;
    let names: Vec<&str> = tools.tools.iter().map(|t| t.definition().name.as_str()).collect();
    assert_eq!(
        names,
        ["petstore__findPets", "petstore__addPet", "petstore__find_pet_by_id", "petstore__deletePet"]
    );
    assert!(tools.skipped.is_empty(), "{:?}", tools.skipped);
    let add = tool(&tools, "petstore__addPet").definition().clone();
    assert_eq!(add.parameters["properties"]["body"]["required"], json!(["name"]));
    let got = call(tool(&tools, "petstore__find_pet_by_id"), json!({"id": 3})).await;
    assert!(!got.is_error && text(&got).contains("Rex"), "{}", text(&got));
    // Only the operations the user listed, by operationId or tool name.
    let only = ["findPets".to_owned(), "petstore__deletePet".to_owned()];
    let some = spec.tools(ApiAuth::None, WebLimits::default(), Some(&only))?;
    assert_eq!(some.tools.len(), 2);
    Ok(())
}

#[tokio::test]
async fn invariant_19_an_openapi_call_asks_every_time_in_every_mode_and_sends_nothing_when_denied()
-> TestResult {
    let server = Server::start().await?;
    server.route("/v1/items/9", Route::json(&json!({"id": "9"})));
    for mode in [Mode::Propose, Mode::Write, Mode::Autonomous] {
        let tools = tools(&server, ApiAuth::Bearer("tok".into()));
        let tool = tools.tools.into_iter().find(|t| t.definition().name == "items__getItem").unwrap();
        let model = ScriptedModel::new()
            .tool_call("items__getItem", json!({"id": "9"}))
            .tool_call("items__getItem", json!({"id": "9"}))
            .tool_call("items__getItem", json!({"id": "9"}))
            .answer("done");
        let approver = RecordingApprover::scripted([
            ApprovalDecision::ApproveForSession { scope: GrantScope::Tool },
            ApprovalDecision::ApproveOnce,
            ApprovalDecision::Deny { reason: bosun_core::Reason::lossy("no", "denied") },
        ]);
        let before = server.requests().len();
        let mut session = Session::builder(model)
            .workspace(WorkspaceIdentity::new("/work/project", 1, 42))
            .tools([tool])
            .mode(mode)
            .rule(PermissionRule::tool("items__getItem", Permission::Allow))
            .approver(approver.clone())
            .build()
            .await?;
        session.run("get item 9 three times", &mut Vec::new()).await?;
        let asked = approver.seen();
        assert_eq!(asked.len(), 3, "{mode}: every call asks");
        assert!(asked.iter().all(|r| r.protected && r.reason.contains("GET http://127.0.0.1")), "{asked:?}");
        assert_eq!(server.requests().len() - before, 2, "{mode}: the denied call sent nothing");
    }
    Ok(())
}
