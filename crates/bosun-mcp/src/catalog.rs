//! From a server's `tools/list` to the tools bosun offers: the config's
//! filters, session names, lowered schemas, categories; tools that cannot be
//! offered come back as [`ToolRejection`]s, never as a failure of the server.
//!
//! Two tools whose session names coincide (`a.b` and `a_b`, or two servers'
//! tools) are a rejection naming both: the one offered first keeps the name.

use std::collections::BTreeMap;

use bosun_core::{ToolCategory, ToolDefinition};
use rmcp::model::Tool as McpToolInfo;

use crate::config::ServerConfig;
use crate::error::ToolRejection;
use crate::names::tool_name;
use bosun_core::schema::lower;

/// Longest description passed to the model, in bytes.
const MAX_DESCRIPTION: usize = 4096;

/// A tool ready to be offered.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Prepared {
    /// Its MCP name.
    pub(crate) original: String,
    /// Its session name, lowered schema and description.
    pub(crate) definition: ToolDefinition,
    pub(crate) category: ToolCategory,
}

/// Who holds a session name: (server, MCP tool).
pub(crate) type Taken = BTreeMap<String, (String, String)>;

/// The tools of `config`'s server that can be offered, given the names
/// other servers' tools hold, and the ones that cannot.
pub(crate) fn prepare(
    config: &ServerConfig,
    tools: &[McpToolInfo],
    taken: &Taken,
) -> (Vec<Prepared>, Vec<ToolRejection>) {
    let server = &config.name;
    let mut own = Taken::new();
    let mut prepared = Vec::new();
    let mut rejected = Vec::new();
    for tool in tools {
        let original = tool.name.to_string();
        if !config.offers(&original) {
            continue;
        }
        let schema_error =
            |reason: String| ToolRejection::Schema { server: server.clone(), tool: original.clone(), reason };
        if original.is_empty() {
            rejected.push(schema_error("the tool has no name".into()));
            continue;
        }
        let name = tool_name(server, &original);
        if let Some((kept_server, kept_tool)) = taken.get(&name).or_else(|| own.get(&name)) {
            rejected.push(ToolRejection::NameCollision {
                name,
                server: server.clone(),
                tool: original,
                kept_server: kept_server.clone(),
                kept_tool: kept_tool.clone(),
            });
            continue;
        }
        let parameters = match lower(&tool.input_schema) {
            Ok(parameters) => parameters,
            Err(reason) => {
                rejected.push(schema_error(reason));
                continue;
            }
        };
        let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
        let category =
            if config.trust_annotations && read_only { ToolCategory::Read } else { ToolCategory::External };
        own.insert(name.clone(), (server.clone(), original.clone()));
        prepared.push(Prepared {
            definition: ToolDefinition::new(name, description(tool, server), parameters),
            original,
            category,
        });
    }
    (prepared, rejected)
}

fn description(tool: &McpToolInfo, server: &str) -> String {
    let text = tool
        .description
        .as_deref()
        .filter(|d| !d.trim().is_empty())
        .or(tool.title.as_deref())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("The tool `{}` of the MCP server `{server}`.", tool.name));
    if text.len() <= MAX_DESCRIPTION {
        return text;
    }
    let mut cut = MAX_DESCRIPTION - "…".len();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::StdioTransport;

    fn tool(name: &str, schema: serde_json::Value, read_only: Option<bool>) -> McpToolInfo {
        let mut value = json!({"name": name, "inputSchema": schema});
        if let Some(read_only) = read_only {
            value["annotations"] = json!({"readOnlyHint": read_only});
        }
        serde_json::from_value(value).unwrap()
    }

    fn config(name: &str) -> ServerConfig {
        ServerConfig::new(name, StdioTransport::new("unused"))
    }

    #[test]
    fn colliding_names_are_rejected_naming_both_originals() {
        let tools = [tool("a.b", json!({}), None), tool("a_b", json!({}), None)];
        let (kept, rejected) = prepare(&config("s"), &tools, &Taken::new());
        assert_eq!(kept.iter().map(|p| p.original.as_str()).collect::<Vec<_>>(), ["a.b"]);
        let error = rejected[0].to_string();
        assert!(
            error.contains("`a.b`") && error.contains("`a_b`") && error.contains("mcp__s__a_b"),
            "{error}"
        );

        let mut taken = Taken::new();
        taken.insert("mcp__s__x".into(), ("s".into(), "x".into()));
        let (kept, rejected) = prepare(&config("s"), &[tool("x", json!({}), None)], &taken);
        assert!(kept.is_empty());
        assert!(matches!(&rejected[0], ToolRejection::NameCollision { kept_tool, .. } if kept_tool == "x"));
    }

    #[test]
    fn filters_schemas_and_annotations_decide_what_is_offered() {
        let tools = [
            tool("read", json!({"type": "object"}), Some(true)),
            tool("write", json!({"type": "object"}), Some(false)),
            tool("tree", json!({"type": "object", "properties": {"t": {"$ref": "#"}}}), None),
            tool("hidden", json!({}), None),
        ];
        let trusting = config("s").with_disabled_tools(["hidden"]).with_trust_annotations(true);
        let (kept, rejected) = prepare(&trusting, &tools, &Taken::new());
        let categories: Vec<_> = kept.iter().map(|p| (p.original.as_str(), p.category)).collect();
        assert_eq!(categories, [("read", ToolCategory::Read), ("write", ToolCategory::External)]);
        assert_eq!(rejected.len(), 1);
        assert!(rejected[0].to_string().contains("recursive"), "{}", rejected[0]);

        let (kept, _) = prepare(&config("s"), &tools[..1], &Taken::new());
        assert_eq!(kept[0].category, ToolCategory::External, "annotations are not trusted by default");
    }

    #[test]
    fn descriptions_fall_back_and_are_bounded() {
        let mut long = tool("t", json!({}), None);
        long.description = Some("é".repeat(MAX_DESCRIPTION).into());
        let (kept, _) = prepare(&config("s"), &[long, tool("bare", json!({}), None)], &Taken::new());
        assert!(kept[0].definition.description.len() <= MAX_DESCRIPTION);
        assert!(kept[0].definition.description.ends_with('…'));
        assert_eq!(kept[1].definition.description, "The tool `bare` of the MCP server `s`.");
    }
}
