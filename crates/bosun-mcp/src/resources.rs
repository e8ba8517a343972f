//! Servers' resources as two bosun tools: [`LIST_RESOURCES`] lists what the
//! servers that have resources offer (uri, name, type, description), and
//! [`READ_RESOURCE`] reads one, its contents mapped onto content parts under
//! the same bounds as a tool result.
//!
//! They are tools of the whole set, not of one server: one pair whatever
//! the number of servers, with the server an argument, offered only when a
//! running server said in `initialize` that it has resources.
//!
//! Category: what they return comes from another program, which may fetch
//! it from anywhere when asked, so they are `External` (they ask in
//! `propose` and `write`), like an MCP tool whose annotations are not
//! trusted. They are `Read` only when every server they reach is configured
//! with `trust_annotations`: a person who believes such a server's
//! `readOnlyHint` believes its resources are reads too.

use std::sync::{Arc, Weak};

use base64::Engine as _;
use bosun_core::{
    CancellationPolicy, Tool, ToolCategory, ToolContext, ToolDefinition, ToolFuture, ToolOutput,
};
use rmcp::model::{
    ClientRequest, ListResourcesRequest, PaginatedRequestParams, ReadResourceRequest,
    ReadResourceRequestParams, Resource, ResourceContents, ServerResult,
};
use serde_json::{Value, json};

use crate::result::Bounded;
use crate::server::{Request, Server};
use crate::servers::McpServers;

/// The name of the tool that lists resources.
pub const LIST_RESOURCES: &str = "list_mcp_resources";
/// The name of the tool that reads one resource.
pub const READ_RESOURCE: &str = "read_mcp_resource";
/// Most pages of `resources/list` read from one server in one call: a server
/// whose cursors never end cannot hold a call forever.
pub const MAX_RESOURCE_PAGES: usize = 20;
/// Longest URI a read accepts.
const MAX_URI: usize = 8 * 1024;

/// The two tools over the running servers of `all` that have resources;
/// none when no server has them. A call finds its server by name among the
/// running ones then, so a restarted server is the one reached.
pub(crate) fn tools(all: &Arc<McpServers>) -> Vec<Arc<dyn Tool>> {
    let servers: Vec<Arc<Server>> = all.running().into_iter().filter(|s| s.offers_resources()).collect();
    if servers.is_empty() {
        return Vec::new();
    }
    let names: Vec<&str> = servers.iter().map(|s| s.name()).collect();
    let category = if servers.iter().all(|s| s.config.trust_annotations) {
        ToolCategory::Read
    } else {
        ToolCategory::External
    };
    let server = json!({"type": "string", "enum": names, "description": "The MCP server."});
    let list = ToolDefinition::new(
        LIST_RESOURCES,
        format!(
            "List the resources (documents, files, records) that MCP servers offer: one JSON object a \
             line with uri, name, mimeType and description. Servers with resources: {}. Give `server` \
             to list one only. Read one with `{READ_RESOURCE}`.",
            names.join(", ")
        ),
        json!({"type": "object", "properties": {"server": server}, "additionalProperties": false}),
    );
    let read = ToolDefinition::new(
        READ_RESOURCE,
        format!("Read one resource of an MCP server by its uri (from `{LIST_RESOURCES}`)."),
        json!({
            "type": "object",
            "properties": {
                "server": server,
                "uri": {"type": "string", "minLength": 1, "maxLength": MAX_URI, "description": "The resource's uri."},
            },
            "required": ["server", "uri"],
            "additionalProperties": false,
        }),
    );
    let names: Arc<[String]> = servers.iter().map(|s| s.name().to_owned()).collect();
    let tool = |definition, kind| -> Arc<dyn Tool> {
        let (all, names) = (Arc::downgrade(all), Arc::clone(&names));
        Arc::new(ResourceTool { definition, category, all, names, kind })
    };
    vec![tool(list, Kind::List), tool(read, Kind::Read)]
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    List,
    Read,
}

struct ResourceTool {
    definition: ToolDefinition,
    category: ToolCategory,
    /// The set the servers belong to; not kept alive by its tools.
    all: Weak<McpServers>,
    /// The servers with resources, by name.
    names: Arc<[String]>,
    kind: Kind,
}

impl std::fmt::Debug for ResourceTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTool")
            .field("name", &self.definition.name)
            .field("servers", &self.names)
            .finish_non_exhaustive()
    }
}

impl Tool for ResourceTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    /// Dropping a call sends `notifications/cancelled`, as for MCP tools.
    fn cancellation(&self) -> CancellationPolicy {
        CancellationPolicy::Interruptible
    }

    fn execute<'a>(&'a self, arguments: Value, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let server = arguments.get("server").and_then(Value::as_str);
            match self.kind {
                Kind::List => self.list(server, &context).await,
                Kind::Read => {
                    let uri = arguments.get("uri").and_then(Value::as_str).unwrap_or_default();
                    match self.find(server.unwrap_or_default()) {
                        Ok(server) => read(&server, uri, &context).await,
                        Err(message) => ToolOutput::error(message),
                    }
                }
            }
        })
    }
}

impl ResourceTool {
    /// The running server `name`, one of those with resources.
    fn find(&self, name: &str) -> Result<Arc<Server>, String> {
        if !self.names.iter().any(|n| n == name) {
            let names = self.names.join(", ");
            return Err(format!("no MCP server `{name}` with resources; those with resources: {names}"));
        }
        let all = self.all.upgrade().ok_or("the MCP servers were shut down")?;
        let server = all.running().into_iter().find(|s| s.name() == name);
        server.ok_or_else(|| format!("MCP server `{name}` is not running"))
    }

    /// Every server's list (or `only`'s), each under its own heading; a
    /// server that fails is named with why and the others are still listed.
    async fn list(&self, only: Option<&str>, context: &ToolContext) -> ToolOutput {
        let names: Vec<&str> = match only {
            Some(name) => vec![name],
            None => self.names.iter().map(String::as_str).collect(),
        };
        let mut chosen = Vec::with_capacity(names.len());
        for name in names {
            match self.find(name) {
                Ok(server) => chosen.push(server),
                Err(message) => return ToolOutput::error(message),
            }
        }
        let lists = futures_util::future::join_all(chosen.iter().map(|s| list(s, context))).await;
        let mut out = Bounded::default();
        let mut failed = 0;
        for (server, listed) in chosen.iter().zip(lists) {
            let name = server.name();
            match listed {
                Ok(listed) => {
                    let mut text = format!("{name}: {} resources", listed.resources.len());
                    if listed.more {
                        text.push_str(&format!(
                            " (the listing stopped after {MAX_RESOURCE_PAGES} pages; the server has more)"
                        ));
                    }
                    text.push('\n');
                    for resource in &listed.resources {
                        text.push_str(&line(resource));
                        text.push('\n');
                    }
                    out.text(text);
                }
                Err(message) => {
                    failed += 1;
                    out.text(format!("{name}: {message}\n"));
                }
            }
        }
        ToolOutput::new(out.finish(), failed == chosen.len())
    }
}

/// One resource as one line of JSON.
fn line(resource: &Resource) -> String {
    let mut object = serde_json::Map::new();
    object.insert("uri".into(), resource.uri.clone().into());
    object.insert("name".into(), resource.name.clone().into());
    if let Some(mime) = &resource.mime_type {
        object.insert("mimeType".into(), mime.clone().into());
    }
    if let Some(description) = &resource.description {
        object.insert("description".into(), description.clone().into());
    }
    Value::Object(object).to_string()
}

/// What one server listed.
struct Listed {
    resources: Vec<Resource>,
    /// The last page read had a next cursor.
    more: bool,
}

/// `resources/list`, page after page, at most [`MAX_RESOURCE_PAGES`].
async fn list(server: &Server, context: &ToolContext) -> Result<Listed, String> {
    let mut resources = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0..MAX_RESOURCE_PAGES {
        let params = cursor.take().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let request = ListResourcesRequest { params, ..Default::default() };
        let what = Request {
            what: if page == 0 {
                "the listing of resources".into()
            } else {
                format!("page {} of resources", page + 1)
            },
            progress: LIST_RESOURCES,
            expected: "a list of resources",
        };
        let answer = server.request(&what, ClientRequest::ListResourcesRequest(request), context).await?;
        let ServerResult::ListResourcesResult(result) = answer else {
            return Err(format!(
                "MCP server `{}` answered the listing with something that is not a list",
                server.name()
            ));
        };
        resources.extend(result.resources);
        match result.next_cursor {
            // An empty cursor would ask for the first page again.
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(Listed { resources, more: false }),
        }
    }
    Ok(Listed { resources, more: true })
}

/// `resources/read` of `uri`, mapped onto content parts.
async fn read(server: &Server, uri: &str, context: &ToolContext) -> ToolOutput {
    if uri.is_empty() {
        return ToolOutput::error("give the resource's `uri` (see `list_mcp_resources`)");
    }
    let request =
        ClientRequest::ReadResourceRequest(ReadResourceRequest::new(ReadResourceRequestParams::new(uri)));
    let what = Request {
        what: format!("the read of `{uri}`"),
        progress: READ_RESOURCE,
        expected: "a resource's contents",
    };
    match server.request(&what, request, context).await {
        Ok(ServerResult::ReadResourceResult(result)) => contents_output(result.contents),
        Ok(ServerResult::InputRequiredResult(_)) => ToolOutput::error(
            "the MCP server asked for more input to read the resource, which bosun does not support",
        ),
        Ok(_) => ToolOutput::error(format!(
            "MCP server `{}` answered the read of `{uri}` with something that is not a resource's contents",
            server.name()
        )),
        Err(message) => ToolOutput::error(message),
    }
}

/// Text as text; a blob as an image when it is one, as text when its type
/// says text and it is UTF-8, else as a note of its size. Each content is
/// headed by its uri and type, and the whole is bounded like a tool result.
pub(crate) fn contents_output(contents: Vec<ResourceContents>) -> ToolOutput {
    let mut out = Bounded::default();
    if contents.is_empty() {
        out.text("(the resource has no contents)".to_owned());
    }
    for content in contents {
        match content {
            ResourceContents::TextResourceContents { uri, mime_type, text, .. } => {
                out.text(format!("{}\n{text}", heading(&uri, mime_type.as_deref())));
            }
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
                if mime.starts_with("image/") {
                    out.text(heading(&uri, Some(mime)));
                    out.image(mime, &blob);
                    continue;
                }
                let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(blob.trim()) else {
                    out.text(format!("[resource {uri} ({mime}): not valid base64, not shown]"));
                    continue;
                };
                let size = bytes.len();
                match String::from_utf8(bytes) {
                    Ok(text) if is_text(mime) => out.text(format!("{}\n{text}", heading(&uri, Some(mime)))),
                    _ => {
                        out.text(format!("[resource {uri} ({mime}): {size} bytes of binary data, not shown]"))
                    }
                }
            }
            // A kind newer than this client.
            _ => out.text("[a resource of a kind bosun does not know, not shown]".to_owned()),
        }
    }
    ToolOutput::new(out.finish(), false)
}

fn heading(uri: &str, mime: Option<&str>) -> String {
    match mime {
        Some(mime) => format!("[resource {uri} ({mime})]"),
        None => format!("[resource {uri}]"),
    }
}

/// Whether a MIME type names text, whatever its encoding on the wire.
fn is_text(mime: &str) -> bool {
    let essence = mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/sql"
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bosun_core::ContentPart;

    fn text_of(output: &ToolOutput) -> String {
        bosun_core::message::concat_text(&output.content)
    }

    fn blob(uri: &str, mime: Option<&str>, bytes: &[u8]) -> ResourceContents {
        let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
        let mut value = json!({"uri": uri, "blob": blob});
        if let Some(mime) = mime {
            value["mimeType"] = mime.into();
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_blobs_are_decoded_binary_ones_are_a_note_images_are_images() {
        let text = ResourceContents::text("hello", "demo://a");
        let output = contents_output(vec![
            text,
            blob("demo://b", Some("text/plain; charset=utf-8"), b"decoded"),
            blob("demo://c", Some("application/octet-stream"), &[0, 159, 146, 150]),
            blob("demo://d", Some("text/plain"), &[0xff, 0xfe]),
            blob("demo://e", Some("image/png"), b"\x89PNG"),
        ]);
        assert!(!output.is_error);
        let shown = text_of(&output);
        assert!(shown.contains("[resource demo://a (text/plain)]\nhello"), "{shown}");
        assert!(shown.contains("[resource demo://b (text/plain; charset=utf-8)]\ndecoded"), "{shown}");
        assert!(
            shown.contains("[resource demo://c (application/octet-stream): 4 bytes of binary data"),
            "{shown}"
        );
        assert!(
            shown.contains("[resource demo://d (text/plain): 2 bytes of binary data"),
            "not UTF-8: {shown}"
        );
        let images: Vec<_> =
            output.content.iter().filter(|p| matches!(p, ContentPart::Image { .. })).collect();
        assert_eq!(images.len(), 1, "{output:?}");
    }

    #[test]
    fn contents_are_bounded_like_tool_results() {
        let huge = "x".repeat(crate::result::MAX_TEXT * 2);
        let output = contents_output(vec![ResourceContents::text(huge, "demo://big")]);
        let shown = text_of(&output);
        assert!(shown.len() < crate::result::MAX_TEXT + 200, "{}", shown.len());
        assert!(shown.contains("bytes cut"), "the cut is said");
        assert_eq!(text_of(&contents_output(vec![])), "(the resource has no contents)");
    }

    #[test]
    fn text_types_are_told_from_binary_ones() {
        for mime in
            ["text/markdown", "application/json", "application/ld+json", "image/svg+xml", "TEXT/PLAIN"]
        {
            assert!(is_text(mime), "{mime}");
        }
        for mime in ["application/octet-stream", "application/gzip", "audio/wav"] {
            assert!(!is_text(mime), "{mime}");
        }
    }
}
