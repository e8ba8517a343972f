//! `search {pattern, path?, glob?, literal?, context?}`: regular expression
//! or literal search with ripgrep's own libraries, gitignore-aware, every
//! file opened through the workspace handle.

use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bosun_core::{Tool, ToolCategory, ToolDefinition, ToolFuture, ToolOutput};
use globset::GlobBuilder;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Deserialize;
use serde_json::json;

use crate::common::{Context, Shared, blocking, cap, parse_args, refuse};
use crate::workspace::{EntryKind, Flow, RelPath, WalkEntry};

const MAX_CONTEXT: usize = 10;
const TIME_BUDGET: Duration = Duration::from_secs(30);
const MAX_LINE_CHARS: usize = 500;
/// Most worker threads a search uses.
const MAX_THREADS: usize = 8;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    literal: bool,
    context: Option<usize>,
}

/// Searches file contents.
#[derive(Debug)]
pub struct SearchTool {
    shared: Shared,
    definition: ToolDefinition,
}

impl SearchTool {
    pub(crate) fn new(shared: Shared) -> Self {
        let definition = ToolDefinition::new(
            "search",
            "Search file contents under a path (default: the workspace root) for a regular expression (Rust regex \
             syntax), or a literal string with `literal: true`. Honours .gitignore. `glob` filters file paths \
             (e.g. `*.rs`, `src/**/*.ts`); `context` adds lines around each match. Results are `path:line:text`.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "minLength": 1, "description": "Regular expression, or literal text with literal: true"},
                    "path": {"type": "string", "description": "File or directory relative to the workspace root (default: the root)"},
                    "glob": {"type": "string", "minLength": 1, "description": "Only search files whose path matches this glob"},
                    "literal": {"type": "boolean", "description": "Treat the pattern as literal text", "default": false},
                    "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "description": "Lines of context before and after each match"}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        );
        Self { shared, definition }
    }
}

impl Tool for SearchTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn category(&self) -> ToolCategory {
        ToolCategory::Read
    }

    fn execute<'a>(&'a self, arguments: serde_json::Value, _context: Context) -> ToolFuture<'a> {
        let shared = self.shared.clone();
        Box::pin(async move {
            let args: Args = match parse_args("search", arguments) {
                Ok(args) => args,
                Err(output) => return output,
            };
            blocking(move || search(&shared, &args)).await
        })
    }
}

/// One file's matches, kept together so output is grouped and sortable.
struct FileHits {
    path: String,
    lines: Vec<String>,
    matches: usize,
}

/// The search as a value, so the benchmark can run it without a session.
fn search(shared: &Shared, args: &Args) -> ToolOutput {
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
        let hits = match shared.workspace.open_file(&scope) {
            Ok((file, _)) => {
                search_one(&mut searcher(context), &matcher, &scope.as_string(), &file, max_results)
            }
            Err(error) => return refuse(error),
        };
        return render(shared, vec![hits], false, None);
    }
    let glob = match args.glob.as_deref().map(|g| GlobBuilder::new(g).literal_separator(false).build()) {
        None => None,
        Some(Ok(glob)) => Some(glob.compile_matcher()),
        Some(Err(error)) => return ToolOutput::error(format!("invalid glob: {error}")),
    };
    let found = AtomicUsize::new(0);
    let timed_out = AtomicBool::new(false);
    let hits: Mutex<Vec<FileHits>> = Mutex::default();
    let started = Instant::now();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(MAX_THREADS);
    let make_visitor = || -> Box<dyn FnMut(&WalkEntry<'_>) -> Flow + Send + '_> {
        let mut searcher = searcher(context);
        let (matcher, glob, found, timed_out, hits) = (&matcher, &glob, &found, &timed_out, &hits);
        Box::new(move |entry: &WalkEntry<'_>| {
            if started.elapsed() > TIME_BUDGET {
                timed_out.store(true, Ordering::Relaxed);
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
            let file_hits = search_one(&mut searcher, matcher, entry.path, &file, remaining);
            if file_hits.matches == 0 {
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
        return refuse(error);
    }
    let mut all = hits.into_inner().unwrap_or_default();
    all.sort_by(|a, b| a.path.cmp(&b.path));
    let truncated = found.load(Ordering::Relaxed) >= max_results;
    let note = timed_out
        .load(Ordering::Relaxed)
        .then(|| format!("[search stopped after {} s]", TIME_BUDGET.as_secs()));
    render(shared, all, truncated, note)
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

fn search_one(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &str,
    file: &std::fs::File,
    max: usize,
) -> FileHits {
    let mut sink = Collect { hits: FileHits { path: path.to_owned(), lines: Vec::new(), matches: 0 }, max };
    // A read error ends this file's search; what was found stays.
    let _ = searcher.search_file(matcher, file, &mut sink);
    sink.hits
}

struct Collect {
    hits: FileHits,
    max: usize,
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

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.hits.matches >= self.max {
            return Ok(false);
        }
        let number = found.line_number().unwrap_or_default();
        self.hits.lines.push(format!("{}:{number}:{}", self.hits.path, line_text(found.bytes())));
        self.hits.matches += 1;
        Ok(self.hits.matches < self.max)
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
