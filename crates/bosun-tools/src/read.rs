//! `read_file {path, offset?, limit?}`: numbered lines of a text file, with
//! a content hash that later edits are checked against; an image file (PNG,
//! JPEG, GIF, WebP, told by its bytes) as the image, for a model that
//! takes images (the session leaves a note in its place for one that
//! does not).

use bosun_core::{ContentPart, ToolCategory, ToolOutput};
use serde::Deserialize;
use serde_json::json;

use crate::common::{Shared, Stop, refuse};
use crate::file_tool::{FileTool, Work};
use crate::image::{ImageFormat, MAX_IMAGE_BYTES};
use crate::nearby::refuse_near;
use crate::workspace::RelPath;

/// Lines shown when no limit is given.
const DEFAULT_LINES: usize = 2_000;
/// Longest line shown; longer ones are cut.
const MAX_LINE_CHARS: usize = 2_000;
/// Bytes inspected for NUL when deciding a file is binary.
const BINARY_SNIFF: usize = 8 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    pub(crate) path: String,
    pub(crate) offset: Option<usize>,
    pub(crate) limit: Option<usize>,
}

/// Reads a file.
#[derive(Debug)]
pub struct ReadFile;

impl FileTool for ReadFile {
    type Args = Args;
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read a text file in the workspace. Returns numbered lines (`N<TAB>text`). \
        Use `offset` (first line, from 1) and `limit` (number of lines) for long files. Paths are relative to \
        the workspace root.";
    const CATEGORY: ToolCategory = ToolCategory::Read;
    const WORK: Work = Work::ToCompletion;

    fn parameters() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show, from 1"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "Number of lines to show"}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn run(shared: &Shared, args: &Args, _stop: &Stop) -> ToolOutput {
        read(shared, args)
    }
}

/// One read beneath `shared`'s root (the workspace, or a skill's folder).
pub(crate) fn read(shared: &Shared, args: &Args) -> ToolOutput {
    let path = match RelPath::parse(&args.path) {
        Ok(path) => path,
        Err(error) => return refuse(error),
    };
    // Under the path's lock, so the ledger never records a version older
    // than one a concurrent edit already recorded.
    let lock = shared.workspace.lock_paths([&path]);
    let file = match shared.load(&path, shared.read_via()) {
        Ok(file) => file,
        Err(error) => {
            drop(lock);
            return refuse_near(&shared.workspace, &path, error);
        }
    };
    shared.ledger.record(&path, file.identity.clone());
    drop(lock);
    if let Some(format) = ImageFormat::sniff(&file.bytes) {
        return image(&path, format, file.bytes);
    }
    let sniff = &file.bytes[..file.bytes.len().min(BINARY_SNIFF)];
    if sniff.contains(&0) {
        return ToolOutput::text(format!(
            "`{path}` is a binary file ({} bytes); not shown. sha256 {}",
            file.bytes.len(),
            file.identity.hash
        ));
    }
    let text = String::from_utf8_lossy(&file.bytes);
    let total = text.lines().count();
    let first = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_LINES);
    let mut out = String::new();
    let mut shown: usize = 0;
    let mut cut_for_size = false;
    for (index, line) in text.lines().enumerate().skip(first - 1).take(limit) {
        let line: String = if line.chars().count() > MAX_LINE_CHARS {
            let head: String = line.chars().take(MAX_LINE_CHARS).collect();
            format!("{head}… [line cut]")
        } else {
            line.to_owned()
        };
        let entry = format!("{:>6}\t{line}\n", index + 1);
        if out.len() + entry.len() > shared.limits.max_output_bytes {
            cut_for_size = true;
            break;
        }
        out.push_str(&entry);
        shown += 1;
    }
    if total == 0 {
        out.push_str("(empty file)\n");
    } else if shown == 0 {
        out.push_str(&format!("(no lines: the file has {total} lines, offset was {first})\n"));
    }
    let last = first + shown.saturating_sub(1);
    // A whole file needs no footer: small models answered with it ("VERSION:
    // lines 1-1 of 1") instead of with the file (measured on
    // Qwen2.5-Coder-0.5B), as they took a hash for part of the file.
    if first == 1 && last == total && !cut_for_size {
        return ToolOutput::text(out);
    }
    let mut footer = format!("[{path}: lines {first}-{last} of {total}");
    if cut_for_size {
        footer.push_str("; output limit reached, continue with offset");
    } else if last < total {
        footer.push_str(&format!("; {} more lines, continue with offset {}", total - last, last + 1));
    }
    footer.push(']');
    out.push_str(&footer);
    ToolOutput::text(out)
}

/// An image file as the result: a line naming it, then the image whole, or
/// the line alone when it is over [`MAX_IMAGE_BYTES`] (never cut).
fn image(path: &RelPath, format: ImageFormat, bytes: Vec<u8>) -> ToolOutput {
    let size = bosun_core::message::byte_size(bytes.len());
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        let limit = bosun_core::message::byte_size(MAX_IMAGE_BYTES as usize);
        return ToolOutput::text(format!(
            "`{path}` is a {} image of {size}, over the {limit} an image may have; not shown",
            format.name()
        ));
    }
    let line = ContentPart::text(format!("`{path}` is a {} image of {size}:", format.name()));
    ToolOutput::new(vec![line, ContentPart::image(format.media_type(), bytes)], false)
}
