//! What the parser's unit tests share: the active tools, and a call item.

use serde_json::Value;

use super::ParsedCall;
use super::calls::Item;

/// The tools the unit tests offer.
pub(super) const TOOLS: &[&str] = &["read_file", "run_shell"];

/// The item of a call of `name` with `arguments`.
pub(super) fn call_of(name: &str, arguments: Value) -> Item {
    Item::Call(ParsedCall { name: name.to_owned(), arguments })
}
