//! `search {pattern, path?, glob?, literal?, context?}`: regular expression
//! or literal search with ripgrep's own libraries, gitignore-aware, every
//! file opened through the workspace handle.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bosun_core::{Tool, ToolCategory, ToolDefinition, ToolFuture, ToolOutput};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::json;

use crate::common::{Context, Shared, blocking, cap, parse_args, refuse};
use crate::list::walker;
use crate::workspace::RelPath;

const MAX_CONTEXT: usize = 10;
const TIME_BUDGET: Duration = Duration::from_secs(30);
const MAX_LINE_CHARS: usize = 500;

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
    let root = shared.workspace.root_path().to_path_buf();
    let context = args.context.unwrap_or(0).min(MAX_CONTEXT);
    let max_results = shared.limits.max_results;
    // A single file: search it directly.
    if matches!(shared.workspace.kind(&scope), Ok(Some(rustix::fs::FileType::RegularFile))) {
        let hits = match shared.workspace.open_file(&scope) {
            Ok((file, _)) => search_one(&matcher, context, &scope.as_string(), &file, max_results),
            Err(error) => return refuse(error),
        };
        return render(shared, vec![hits], false, None);
    }
    if let Err(error) = shared.workspace.open_dir(&scope, false) {
        return refuse(error);
    }
    let mut builder = walker(&root, &scope);
    if let Some(glob) = &args.glob {
        let mut overrides = OverrideBuilder::new(root.join(scope.as_string()));
        let built = overrides.add(glob).and_then(|o| o.build());
        match built {
            Ok(overrides) => {
                builder.overrides(overrides);
            }
            Err(error) => return ToolOutput::error(format!("invalid glob `{glob}`: {error}")),
        }
    }
    let found = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let timed_out = Arc::new(AtomicBool::new(false));
    let hits: Arc<Mutex<Vec<FileHits>>> = Arc::default();
    let started = Instant::now();
    builder.build_parallel().run(|| {
        let (matcher, root, found, stop, timed_out, hits) = (
            matcher.clone(),
            root.clone(),
            Arc::clone(&found),
            Arc::clone(&stop),
            Arc::clone(&timed_out),
            Arc::clone(&hits),
        );
        let workspace = shared.workspace.clone();
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            if started.elapsed() > TIME_BUDGET {
                timed_out.store(true, Ordering::Relaxed);
                stop.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            let Ok(entry) = entry else { return WalkState::Continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let Ok(relative) = entry.path().strip_prefix(&root) else { return WalkState::Continue };
            let Some(text) = relative.to_str() else { return WalkState::Continue };
            let Ok(path) = RelPath::parse(text) else { return WalkState::Continue };
            let Ok(file) = workspace.open_walked_file(&path) else { return WalkState::Continue };
            let remaining = max_results.saturating_sub(found.load(Ordering::Relaxed));
            let file_hits = search_one(&matcher, context, text, &file, remaining);
            if file_hits.matches > 0 {
                let total = found.fetch_add(file_hits.matches, Ordering::Relaxed) + file_hits.matches;
                if let Ok(mut all) = hits.lock() {
                    all.push(file_hits);
                }
                if total >= max_results {
                    stop.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
            }
            WalkState::Continue
        })
    });
    let mut all = match Arc::try_unwrap(hits).map(|m| m.into_inner()) {
        Ok(Ok(all)) => all,
        _ => return ToolOutput::error("search failed to collect its results"),
    };
    all.sort_by(|a, b| a.path.cmp(&b.path));
    let truncated = found.load(Ordering::Relaxed) >= max_results;
    let note = timed_out
        .load(Ordering::Relaxed)
        .then(|| format!("[search stopped after {} s]", TIME_BUDGET.as_secs()));
    render(shared, all, truncated, note)
}

fn search_one(
    matcher: &RegexMatcher,
    context: usize,
    path: &str,
    file: &std::fs::File,
    max: usize,
) -> FileHits {
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .binary_detection(BinaryDetection::quit(0))
        .build();
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
