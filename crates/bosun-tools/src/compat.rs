//! Names other agents' files use for bosun's tools. Claude Code's settings
//! (hook matchers) and agent files (`tools:` lists) name its own tools; bosun
//! reads those files as written, so their names are mapped here, once.

/// The bosun tool a Claude Code tool name stands for, if any.
pub fn bosun_tool_name(claude: &str) -> Option<&'static str> {
    Some(match claude {
        "Bash" => "shell",
        "Read" => "read_file",
        "Write" => "write_file",
        "Edit" | "MultiEdit" => "edit_file",
        "Glob" | "LS" => "list_files",
        "Grep" => "search",
        "Task" => "delegate_tasks",
        "Skill" => "skill",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::bosun_tool_name;

    #[test]
    fn claude_code_tool_names_map_to_bosun_tools() {
        assert_eq!(bosun_tool_name("Bash"), Some("shell"));
        assert_eq!(bosun_tool_name("MultiEdit"), Some("edit_file"));
        assert_eq!(bosun_tool_name("Grep"), Some("search"));
        assert_eq!(bosun_tool_name("shell"), None);
        assert_eq!(bosun_tool_name("WebFetch"), None);
    }
}
