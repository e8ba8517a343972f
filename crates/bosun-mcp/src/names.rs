//! The names MCP tools get in a session: `mcp__SERVER__TOOL`, with every
//! character outside `[A-Za-z0-9_-]` replaced by `_` (the names models and
//! bosun's core accept), and cut to 64 characters with a short hash of the
//! original names when longer, so that a cut name is stable across runs and
//! two long names that share a prefix still differ.

use sha2::{Digest, Sha256};

/// Longest tool name bosun's core accepts.
pub const MAX_NAME: usize = 64;
/// Hex digits of the hash a cut name ends with.
const HASH_DIGITS: usize = 8;

/// The session name of tool `tool` of server `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_NAME {
        return full;
    }
    // Hash the originals, not the sanitised forms, which may coincide.
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(tool.as_bytes());
    let digest = hasher.finalize();
    let hash: String = digest.iter().take(HASH_DIGITS / 2).map(|b| format!("{b:02x}")).collect();
    // Sanitised names are ASCII, so any byte index is a character boundary.
    format!("{}_{hash}", &full[..MAX_NAME - HASH_DIGITS - 1])
}

fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn short_names_are_prefixed_and_sanitised() {
        assert_eq!(tool_name("everything", "get-sum"), "mcp__everything__get-sum");
        assert_eq!(tool_name("my server", "read.file/v2"), "mcp__my_server__read_file_v2");
        assert_eq!(tool_name("ünï", "ç"), "mcp___n____");
        assert!(valid(&tool_name("a b", "c")));
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let long = "a".repeat(100);
        let one = tool_name("srv", &format!("{long}_one"));
        let two = tool_name("srv", &format!("{long}_two"));
        assert_eq!(one.len(), MAX_NAME);
        assert!(valid(&one) && valid(&two));
        assert_ne!(one, two, "a shared prefix does not collide");
        assert_eq!(one, tool_name("srv", &format!("{long}_one")), "stable");
        assert!(one.starts_with("mcp__srv__aaaa"), "{one}");
        let exactly = format!("mcp__s__{}", "x".repeat(MAX_NAME - 8));
        assert_eq!(tool_name("s", &"x".repeat(MAX_NAME - 8)), exactly, "64 characters are not cut");
    }

    #[test]
    fn the_hash_is_of_the_originals() {
        // Both sanitise to the same 100 characters; the hash tells them apart.
        let dotted = tool_name("srv", &format!("{}.x", "a".repeat(100)));
        let underscored = tool_name("srv", &format!("{}_x", "a".repeat(100)));
        assert_ne!(dotted, underscored);
    }
}
