//! `search {pattern, path?, glob?, literal?, context?}`: regular expression
//! or literal search with ripgrep's own libraries, gitignore-aware, every
//! file opened through the workspace handle.
//!
//! Bounded in input, work and time (invariant 16): patterns of at most
//! [`MAX_PATTERN_BYTES`]; lines searched only in their first
//! [`lines::MAX_LINE_BYTES`] (see `search/lines.rs`); and a search stops,
//! between files and between reads of a file, when its call is cancelled
//! (the turn, or the call's timeout) or after [`TIME_BUDGET`], with the
//! partial result and a note saying so.

mod lines;
#[cfg(test)]
mod tests;

use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bosun_core::{ToolCategory, ToolOutput};
use globset::GlobBuilder;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Deserialize;
use serde_json::json;

// The unit tests run the search under it directly.
#[cfg(test)]
use crate::common::blocking_stoppable;
use crate::common::{Shared, Stop, cap, refuse};
use crate::file_tool::{FileTool, Work};
use crate::nearby::refuse_near;
use crate::workspace::{EntryKind, Flow, RelPath, WalkEntry};
use lines::{CutLines, LineCap, MAX_LINE_BYTES};

/// Longest pattern accepted, in bytes. Matching work grows with pattern
/// length (with pattern × line length for some patterns), and no useful
/// search needs more; a longer one is refused with a clear error.
pub(crate) const MAX_PATTERN_BYTES: usize = 4 * 1024;
const MAX_CONTEXT: usize = 10;
const TIME_BUDGET: Duration = Duration::from_secs(30);
const MAX_LINE_CHARS: usize = 500;
/// Most worker threads a search uses.
const MAX_THREADS: usize = 8;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    literal: bool,
    context: Option<usize>,
}

/// Searches file contents.
#[derive(Debug)]
pub struct Search;

impl FileTool for Search {
    type Args = Args;
    const NAME: &'static str = "search";
    const DESCRIPTION: &'static str = "Search file contents under a path (default: the workspace root) for a \
        regular expression (Rust regex syntax), or a literal string with `literal: true`. Honours .gitignore. \
        `glob` filters file paths (e.g. `*.rs`, `src/**/*.ts`); `context` adds lines around each match. Results \
        are `path:line:text`. Lines longer than 64 KiB are searched only in their first 64 KiB.";
    const CATEGORY: ToolCategory = ToolCategory::Read;
    const WORK: Work = Work::Stoppable;

    fn parameters() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "maxLength": MAX_PATTERN_BYTES, "description": "Regular expression, or literal text with literal: true"},
                "path": {"type": "string", "description": "File or directory relative to the workspace root (default: the root)"},
                "glob": {"type": "string", "minLength": 1, "description": "Only search files whose path matches this glob"},
                "literal": {"type": "boolean", "description": "Treat the pattern as literal text", "default": false},
                "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "description": "Lines of context before and after each match"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn run(shared: &Shared, args: &Args, stop: &Stop) -> ToolOutput {
        search(shared, args, stop, &|| {})
    }
}

/// One file's matches, kept together so output is grouped and sortable.
struct FileHits {
    path: String,
    lines: Vec<String>,
    matches: usize,
    /// Lines searched only in their first `MAX_LINE_BYTES`.
    cut: CutLines,
}

/// Why a search ends early, checked between files and between reads.
struct Halt<'s> {
    stop: &'s Stop,
    deadline: Instant,
    cancelled: AtomicBool,
    timed_out: AtomicBool,
}

impl Halt<'_> {
    fn halted(&self) -> bool {
        if self.stop.is_set() {
            self.cancelled.store(true, Ordering::Relaxed);
            return true;
        }
        if Instant::now() > self.deadline {
            self.timed_out.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// A cancelled search did not do what was asked: its partial answer is
    /// an error. (One stopped by the time budget keeps its partial answer,
    /// with the note.)
    fn mark(&self, mut output: ToolOutput) -> ToolOutput {
        if self.cancelled.load(Ordering::Relaxed) {
            output.is_error = true;
        }
        output
    }

    /// The note for a search that ended early.
    fn note(&self, files: usize) -> Option<String> {
        if self.cancelled.load(Ordering::Relaxed) {
            let plural = if files == 1 { "" } else { "s" };
            Some(format!("[search cancelled after {files} file{plural}; the results are incomplete]"))
        } else if self.timed_out.load(Ordering::Relaxed) {
            Some(format!("[search stopped after {} s; the results are incomplete]", TIME_BUDGET.as_secs()))
        } else {
            None
        }
    }
}

/// The search. `on_match` runs on every match found (a test hook: it lets a
/// test cancel a search at a known point).
fn search(shared: &Shared, args: &Args, stop: &Stop, on_match: &(dyn Fn() + Sync)) -> ToolOutput {
    if args.pattern.len() > MAX_PATTERN_BYTES {
        return ToolOutput::error(format!(
            "the pattern is {} bytes, over the {MAX_PATTERN_BYTES}-byte limit; search for a shorter, distinctive \
             part of it",
            args.pattern.len()
        ));
    }
    let halt = Halt {
        stop,
        deadline: Instant::now() + TIME_BUDGET,
        cancelled: AtomicBool::new(false),
        timed_out: AtomicBool::new(false),
    };
    let matcher = match RegexMatcherBuilder::new()
        .fixed_strings(args.literal)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
    {
        Ok(matcher) => matcher,
        Err(error) => return ToolOutput::error(format!("invalid pattern: {error}")),
    };
    let scope = match RelPath::parse(args.path.as_deref().unwrap_or("")) {
        Ok(scope) => scope,
        Err(error) => return refuse(error),
    };
    let context = args.context.unwrap_or(0).min(MAX_CONTEXT);
    let max_results = shared.limits.max_results;
    // A single file: search it directly.
    if matches!(shared.workspace.kind(&scope), Ok(Some(rustix::fs::FileType::RegularFile))) {
        let file = match shared.workspace.open_file(&scope) {
            Ok((file, _)) => file,
            Err(error) => return refuse_near(&shared.workspace, &scope, error),
        };
        let one = Scan { matcher: &matcher, halt: &halt, on_match };
        let hits = one.file(&mut searcher(context), &scope.as_string(), &file, max_results);
        let note = halt.note(1);
        return halt.mark(render(shared, vec![hits], false, note));
    }
    let glob = match args.glob.as_deref().map(|g| GlobBuilder::new(g).literal_separator(false).build()) {
        None => None,
        Some(Ok(glob)) => Some(glob.compile_matcher()),
        Some(Err(error)) => return ToolOutput::error(format!("invalid glob: {error}")),
    };
    let found = AtomicUsize::new(0);
    let searched = AtomicUsize::new(0);
    let hits: Mutex<Vec<FileHits>> = Mutex::default();
    let scan = Scan { matcher: &matcher, halt: &halt, on_match };
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(MAX_THREADS);
    let make_visitor = || -> Box<dyn FnMut(&WalkEntry<'_>) -> Flow + Send + '_> {
        let mut searcher = searcher(context);
        let (scan, glob, found, searched, hits) = (&scan, &glob, &found, &searched, &hits);
        Box::new(move |entry: &WalkEntry<'_>| {
            if scan.halt.halted() {
                return Flow::Stop;
            }
            if entry.kind != EntryKind::File {
                return Flow::Continue;
            }
            if let Some(glob) = glob {
                let name = entry.path.rsplit('/').next().unwrap_or(entry.path);
                if !glob.is_match(entry.path) && !glob.is_match(name) {
                    return Flow::Continue;
                }
            }
            let Ok(file) = entry.open_file() else { return Flow::Continue };
            let remaining = max_results.saturating_sub(found.load(Ordering::Relaxed));
            let file_hits = scan.file(&mut searcher, entry.path, &file, remaining);
            searched.fetch_add(1, Ordering::Relaxed);
            if file_hits.matches == 0 && file_hits.cut.count == 0 {
                return Flow::Continue;
            }
            let total = found.fetch_add(file_hits.matches, Ordering::Relaxed) + file_hits.matches;
            if let Ok(mut all) = hits.lock() {
                all.push(file_hits);
            }
            if total >= max_results { Flow::Stop } else { Flow::Continue }
        })
    };
    if let Err(error) = shared.workspace.walk_parallel(&scope, threads, &make_visitor) {
        return refuse_near(&shared.workspace, &scope, error);
    }
    let mut all = hits.into_inner().unwrap_or_default();
    all.sort_by(|a, b| a.path.cmp(&b.path));
    let truncated = found.load(Ordering::Relaxed) >= max_results;
    let note = halt.note(searched.load(Ordering::Relaxed));
    halt.mark(render(shared, all, truncated, note))
}

/// A searcher per worker: building one allocates and zeroes its buffer.
fn searcher(context: usize) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(0))
        .build()
}

/// What every file of one search is searched with.
struct Scan<'s> {
    matcher: &'s RegexMatcher,
    halt: &'s Halt<'s>,
    on_match: &'s (dyn Fn() + Sync),
}

impl Scan<'_> {
    /// Searches one file, its lines cut at `MAX_LINE_BYTES`, for at most
    /// `max` matches.
    fn file(&self, searcher: &mut Searcher, path: &str, file: &std::fs::File, max: usize) -> FileHits {
        let hits =
            FileHits { path: path.to_owned(), lines: Vec::new(), matches: 0, cut: CutLines::default() };
        let mut sink = Collect { hits, max, halt: self.halt, on_match: self.on_match };
        let halted = || self.halt.halted();
        let mut reader = LineCap::new(file, &halted);
        // A read error ends this file's search; what was found stays.
        let _ = searcher.search_reader(self.matcher, &mut reader, &mut sink);
        sink.hits.cut = reader.cut();
        sink.hits
    }
}

struct Collect<'s> {
    hits: FileHits,
    max: usize,
    halt: &'s Halt<'s>,
    on_match: &'s (dyn Fn() + Sync),
}

fn line_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.chars().count() > MAX_LINE_CHARS {
        format!("{}… [line cut]", text.chars().take(MAX_LINE_CHARS).collect::<String>())
    } else {
        text.to_owned()
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.hits.matches >= self.max {
            return Ok(false);
        }
        (self.on_match)();
        let number = found.line_number().unwrap_or_default();
        self.hits.lines.push(format!("{}:{number}:{}", self.hits.path, line_text(found.bytes())));
        self.hits.matches += 1;
        Ok(self.hits.matches < self.max && !self.halt.halted())
    }

    fn context(&mut self, _searcher: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        let number = context.line_number().unwrap_or_default();
        self.hits.lines.push(format!("{}-{number}-{}", self.hits.path, line_text(context.bytes())));
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        self.hits.lines.push("--".to_owned());
        Ok(true)
    }
}

fn render(shared: &Shared, hits: Vec<FileHits>, truncated: bool, note: Option<String>) -> ToolOutput {
    let total: usize = hits.iter().map(|h| h.matches).sum();
    let files = hits.iter().filter(|h| h.matches > 0).count();
    let mut text = String::new();
    for file in hits.iter().filter(|h| h.matches > 0) {
        for line in &file.lines {
            text.push_str(line);
            text.push('\n');
        }
    }
    if total == 0 {
        text.push_str("no matches");
    } else {
        text.push_str(&format!("[{total} matches in {files} files]"));
    }
    let cut: Vec<&FileHits> = hits.iter().filter(|h| h.cut.count > 0).collect();
    if let Some(first) = cut.first() {
        let lines: usize = cut.iter().map(|h| h.cut.count).sum();
        text.push_str(&format!(
            "\n[{lines} lines longer than {MAX_LINE_BYTES} bytes were searched only in their first {MAX_LINE_BYTES} \
             bytes (line truncated), in {} files; first: {}:{}]",
            cut.len(),
            first.path,
            first.cut.first
        ));
    }
    if truncated {
        text.push_str(&format!(
            "\n[results stopped at {}; narrow the pattern, path or glob to see the rest]",
            shared.limits.max_results
        ));
    }
    if let Some(note) = note {
        text.push('\n');
        text.push_str(&note);
    }
    ToolOutput::text(cap(text, shared.limits.max_output_bytes, "results"))
}
