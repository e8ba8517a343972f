//! What a shell command line runs, reduced to [`CommandLine`] for the
//! permission rules.
//!
//! Why parse: a rule such as "deny `rm`" or "allow `git status`" is about the
//! programs a line runs, and a shell hides them behind syntax that string
//! matching cannot see through: separators (`true; rm x`), quoting (`'r'm`,
//! `$'\x72m'`), line continuations (`r\<newline>m`), substitutions
//! (`echo $(rm x)`), compound commands, and wrappers that run their
//! arguments as a command (`sudo`, `env`, `xargs`, `bash -c`, …). The line
//! is parsed with tree-sitter-bash into a syntax tree and every simple
//! command is collected as argv words after quote removal; the files it
//! writes (every `>`-family redirect, `<>` included, and what wrappers
//! write) and the variables it assigns are reported with them.
//!
//! What cannot be reduced to plain words marks the line opaque with a short
//! reason, so no allow rule covers it and a deny rule asks; collection goes
//! on, so deny rules still see every command that is visible. Opaque are:
//! an expansion in command position, a command or process substitution, a
//! script read from stdin, a parse error, a command name that is not plain
//! ASCII or is a reserved word the parser did not place (`time { …; }`);
//! the places where bash evaluates a string as code ([`eval_forms`]:
//! `${x@P}`, `${!x}`, arithmetic on variables, subscripts, prompt
//! variables; [`builtins`]: `source`, `printf -v` to a name not fixed,
//! `mapfile -C`, `alias`, …); wrappers whose grammar is not modelled or
//! whose options cannot be read ([`wrappers`], [`shells`], [`options`]);
//! and programs whose options or languages run commands ([`programs`],
//! [`sed`]).
//!
//! Bounded: a script over [`MAX_SCRIPT_BYTES`] or wrappers nested deeper
//! than [`MAX_DEPTH`] are refused as opaque, syntax nested deeper than
//! [`MAX_NESTING`] (counted on through nested scripts, so the walk's stack
//! stays small) stops the walk there (opaque), and nothing here panics.
//!
//! tree-sitter-bash treats a backslash-newline as whitespace, so `r\<nl>m x`
//! parses as `r m x` where bash runs `rm x`. Before the walk, every line
//! continuation outside single quotes, `$'…'`, comments and heredoc bodies
//! is removed (as bash's reader does) and the result is parsed again.

mod builtins;
mod eval_forms;
mod options;
mod programs;
mod sed;
mod shells;
mod words;
mod wrappers;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_eval;
#[cfg(test)]
mod tests_paths;
#[cfg(test)]
mod tests_wrappers;

use std::borrow::Cow;

use bosun_core::CommandLine;
use tree_sitter::{Node, Parser, Tree};

use self::builtins::RESERVED;
use self::words::{Piece, ansi_c, evaluable, globbing, substitutions, unquote, unquote_double};
use self::wrappers::Inner;

/// Longest script analyzed, in bytes; longer ones are opaque.
pub(crate) const MAX_SCRIPT_BYTES: usize = 64 * 1024;
/// Deepest nesting of wrappers and `-c` scripts; deeper is opaque.
pub(crate) const MAX_DEPTH: usize = 8;
/// Deepest syntax nesting walked; deeper is opaque.
const MAX_NESTING: usize = 100;
/// Redirect targets that are not files.
const NOT_FILES: [&str; 4] = ["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

/// The commands a `bash -c` script runs.
pub(crate) fn script(source: &str) -> CommandLine {
    let mut analyzer = Analyzer::default();
    analyzer.script(source, 0, 0);
    analyzer.line
}

/// The commands an argv runs: argv[0] directly (no shell), then whatever
/// wrappers in it run.
pub(crate) fn argv(words: &[String]) -> CommandLine {
    let words: Vec<Word> = words.iter().map(|word| Word::literal(word.clone())).collect();
    let mut analyzer = Analyzer::default();
    analyzer.run(&words, 0, 0, false);
    analyzer.line
}

/// One argv word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Word {
    /// The word after quote removal, or its source text when not plain.
    pub(super) text: String,
    /// The program receives exactly `text`: no expansion, glob or brace.
    pub(super) plain: bool,
    /// The program receives exactly one word here (a plain word, or an
    /// expansion inside double quotes); otherwise word splitting and globs
    /// may make it none or several.
    pub(super) single: bool,
}

impl Word {
    pub(super) fn literal(text: impl Into<String>) -> Self {
        Self { text: text.into(), plain: true, single: true }
    }
}

#[derive(Debug, Default)]
struct Analyzer {
    line: CommandLine,
}

impl Analyzer {
    /// Keeps the first reason.
    fn opaque(&mut self, why: &str) {
        if self.line.opaque.is_none() {
            self.line.opaque = Some(why.to_owned());
        }
    }

    fn script(&mut self, source: &str, depth: usize, nest: usize) {
        if depth > MAX_DEPTH {
            return self.opaque("wrappers nested too deeply");
        }
        if source.len() > MAX_SCRIPT_BYTES {
            return self.opaque("script longer than 64 kib");
        }
        let Some(tree) = parse(source) else {
            return self.opaque("the shell parser failed");
        };
        let (source, tree) = match join_continuations(source, &tree) {
            None => (Cow::Borrowed(source), tree),
            Some(joined) => match parse(&joined) {
                Some(tree) => (Cow::Owned(joined), tree),
                None => return self.opaque("the shell parser failed"),
            },
        };
        if tree.root_node().has_error() {
            self.opaque("parse error");
        }
        Walk { analyzer: self, source: &source, depth }.visit(tree.root_node(), nest);
    }

    /// Records one simple command and, for a wrapper, what it runs. `open`:
    /// words are appended to `argv` when it runs (`xargs`), so a wrapper
    /// left without a command would run them.
    fn run(&mut self, argv: &[Word], depth: usize, nest: usize, open: bool) {
        let Some((first, rest)) = argv.split_first() else { return };
        if depth > MAX_DEPTH {
            return self.opaque("wrappers nested too deeply");
        }
        self.line.commands.push(argv.iter().map(|word| word.text.clone()).collect());
        if !first.plain {
            return self.opaque("expansion in command position");
        }
        if !first.text.chars().all(|c| c.is_ascii() && !c.is_ascii_control()) {
            return self.opaque("command name with non-ascii or control characters");
        }
        let name = first.text.rsplit('/').next().unwrap_or(&first.text);
        if RESERVED.contains(&name) {
            return self
                .opaque(&format!("`{name}` where a command name stands: a form the parser does not model"));
        }
        if name.contains("{}") {
            return self.opaque("a command name that find or xargs fills in");
        }
        let Some(unwrapped) = wrappers::unwrap(name, rest) else { return };
        // Words appended by xargs reach the innermost argv only through
        // wrappers that stop reading options at it; anywhere else they may
        // be options, a script or the command itself.
        let passes = matches!(&unwrapped.inner, Inner::Argv(inner) if !inner.is_empty());
        if open && !passes {
            self.opaque(&format!(
                "xargs appends its input to `{name}`, where it may be options or a command"
            ));
        }
        for assigned in unwrapped.assignments {
            self.assign(assigned);
        }
        self.redirect(unwrapped.redirects);
        match unwrapped.inner {
            Inner::Nothing => {}
            Inner::Argv(inner) => self.run(&inner, depth + 1, nest + 1, open || unwrapped.open),
            Inner::Many(inners) => {
                inners.iter().for_each(|inner| self.run(inner, depth + 1, nest + 1, false))
            }
            Inner::Script(text) => self.script(&text, depth + 1, nest + 1),
            Inner::Opaque(why) => self.opaque(&why),
        }
    }

    /// Records a variable the line assigns; one that runs code once set
    /// makes the line opaque.
    fn assign(&mut self, name: String) {
        if let Some(why) = eval_forms::evaluated(&name) {
            self.opaque(&why);
        }
        self.line.assignments.push(name);
    }

    fn redirect(&mut self, targets: impl IntoIterator<Item = String>) {
        let files = targets.into_iter().filter(|target| !NOT_FILES.contains(&target.as_str()));
        self.line.redirects.extend(files);
    }
}

fn parse(source: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
    parser.parse(source, None)
}

/// `source` with its line continuations removed, if it has any that bash
/// removes: an unescaped backslash before a newline, outside single quotes,
/// `$'…'`, comments and heredoc bodies (tree-sitter-bash skips them as
/// whitespace, splitting the word they join).
fn join_continuations(source: &str, tree: &Tree) -> Option<String> {
    let bytes = source.as_bytes();
    let mut cuts = Vec::new();
    let mut run = 0usize;
    for (at, pair) in bytes.windows(2).enumerate() {
        run = if pair[0] == b'\\' { run + 1 } else { 0 };
        if pair == b"\\\n" && run % 2 == 1 {
            let kind = tree.root_node().descendant_for_byte_range(at, at + 1).map_or("", |node| node.kind());
            if !matches!(
                kind,
                "raw_string" | "ansi_c_string" | "comment" | "heredoc_body" | "heredoc_content"
            ) {
                cuts.push(at);
            }
        }
    }
    if cuts.is_empty() {
        return None;
    }
    let mut joined = Vec::with_capacity(bytes.len());
    let mut from = 0;
    for at in cuts {
        joined.extend_from_slice(bytes.get(from..at)?);
        from = at + 2;
    }
    joined.extend_from_slice(bytes.get(from..)?);
    String::from_utf8(joined).ok()
}

/// One walk over one parsed script.
struct Walk<'a, 's> {
    analyzer: &'a mut Analyzer,
    source: &'s str,
    depth: usize,
}

impl Walk<'_, '_> {
    fn text(&self, node: Node<'_>) -> Cow<'_, str> {
        self.source.as_bytes().get(node.byte_range()).map(String::from_utf8_lossy).unwrap_or_default()
    }

    fn opaque(&mut self, why: &str) {
        self.analyzer.opaque(why);
    }

    fn visit(&mut self, node: Node<'_>, nest: usize) {
        if nest > MAX_NESTING {
            return self.opaque("syntax nested too deeply");
        }
        match node.kind() {
            "command" => self.command(node, nest),
            "declaration_command" | "unset_command" => self.declaration(node, nest),
            "variable_assignment" => self.assignment(node, nest),
            "file_redirect" => self.file_redirect(node, nest),
            "expansion" => {
                self.expansion(node);
                self.children(node, nest);
            }
            "arithmetic_expansion" | "compound_statement" | "c_style_for_statement" => {
                self.arithmetic(node);
                self.children(node, nest);
            }
            "test_command" => {
                self.test_command(node);
                self.children(node, nest);
            }
            "comment" => {}
            "word" | "raw_string" | "ansi_c_string" | "string" | "translated_string" | "concatenation"
            | "regex" | "extglob_pattern" | "number" => {
                self.word(node, nest);
            }
            "string_content" => {
                let text = self.text(node).into_owned();
                self.hidden(&text, nest);
            }
            "heredoc_redirect" => {
                let start = named_child(node, "heredoc_start").map(|start| self.text(start).into_owned());
                if start.is_some_and(|start| !start.contains(['\'', '"', '\\'])) {
                    // An unquoted delimiter: the body is expanded.
                    for body in
                        named_children(node).into_iter().filter(|child| child.kind() == "heredoc_body")
                    {
                        let text = self.uncovered(body);
                        self.hidden(&text, nest);
                    }
                }
                self.children(node, nest);
            }
            "command_substitution" => {
                self.opaque("command substitution");
                self.children(node, nest);
            }
            "process_substitution" => {
                self.opaque("process substitution");
                self.children(node, nest);
            }
            "ERROR" => {
                self.opaque("parse error");
                self.children(node, nest);
            }
            _ => {
                if node.is_missing() {
                    self.opaque("parse error");
                }
                self.children(node, nest);
            }
        }
    }

    fn children(&mut self, node: Node<'_>, nest: usize) {
        for child in named_children(node) {
            self.visit(child, nest + 1);
        }
    }

    /// The text of `node` outside the named children that tree-sitter
    /// parsed (its content children are kept).
    fn uncovered(&self, node: Node<'_>) -> String {
        let mut text = String::new();
        let mut from = node.start_byte();
        let parsed = named_children(node).into_iter().filter(|child| child.kind() != "heredoc_content");
        for child in parsed {
            text.push_str(&String::from_utf8_lossy(
                self.source.as_bytes().get(from..child.start_byte()).unwrap_or(b""),
            ));
            from = child.end_byte();
        }
        text.push_str(&String::from_utf8_lossy(
            self.source.as_bytes().get(from..node.end_byte()).unwrap_or(b""),
        ));
        text
    }

    /// Command substitutions tree-sitter-bash leaves inside a token's text
    /// (it does not parse backticks in `${x:-`…`}`, in `=~` and `${x#…}`
    /// patterns, or in unquoted heredoc bodies): opaque, and their commands
    /// collected. The forms of [`eval_forms`] left there are opaque too.
    fn hidden(&mut self, text: &str, nest: usize) {
        if text.contains("@P}") {
            self.opaque("prompt expansion `${…@P}` runs the command substitutions in a value");
        }
        if text.contains("${!") {
            self.opaque("indirect expansion `${!…}` evaluates a name taken from a value");
        }
        if text.contains("$((") || text.contains("$[") {
            self.opaque("arithmetic on a variable can run commands in its value");
        }
        let found = substitutions(text);
        if !found.is_empty() {
            self.opaque("command substitution");
        }
        for inner in found {
            self.analyzer.script(&inner, self.depth + 1, nest + 1);
        }
    }

    fn command(&mut self, node: Node<'_>, nest: usize) {
        let children = fields(node);
        let mut argv: Vec<Word> = Vec::new();
        // Arguments decoded from `$'…'`, by position: for a directory changed
        // to, the source text stands (the protected-path check reads an
        // escape as a path it cannot know).
        let mut escaped = Vec::new();
        for (at, (field, child)) in children.iter().enumerate() {
            match (*field, child.kind()) {
                (Some("name" | "argument"), "$") if !child.is_named() => {
                    // `$"…"` (a translated string) is the string; a lone `$` is itself.
                    let next = children.get(at + 1).map(|(_, next)| *next);
                    if !next
                        .is_some_and(|next| next.start_byte() == child.end_byte() && next.kind() == "string")
                    {
                        argv.push(Word::literal("$"));
                    }
                }
                (Some("name" | "argument"), _) => {
                    if has_descendant(*child, "ansi_c_string") {
                        escaped.push((argv.len(), self.text(*child).into_owned()));
                    }
                    argv.push(self.word(*child, nest + 1));
                }
                (_, "variable_assignment") => self.assignment(*child, nest + 1),
                _ if child.is_named() => self.visit(*child, nest + 1),
                _ => {}
            }
        }
        let name = argv.first().map(|word| word.text.rsplit('/').next().unwrap_or(&word.text).to_owned());
        if name.is_some_and(|name| matches!(name.as_str(), "cd" | "pushd" | "builtin" | "command")) {
            for (at, raw) in escaped {
                if let Some(word) = argv.get_mut(at).filter(|_| at > 0) {
                    *word = Word { text: raw, plain: false, single: true };
                }
            }
        }
        self.analyzer.run(&argv, self.depth, nest, false);
    }

    /// `export`, `declare`, `typeset`, `local`, `readonly`, `unset`: a
    /// command, and the names they assign.
    fn declaration(&mut self, node: Node<'_>, nest: usize) {
        let mut argv = Vec::new();
        for (_, child) in fields(node) {
            match child.kind() {
                _ if !child.is_named() => {
                    if argv.is_empty() {
                        argv.push(Word::literal(self.text(child)));
                    }
                }
                "variable_assignment" => {
                    self.assignment(child, nest + 1);
                    argv.push(Word::literal(self.text(child)));
                }
                "variable_name" => argv.push(Word::literal(self.text(child))),
                "comment" => {}
                "file_redirect" | "herestring_redirect" => self.visit(child, nest + 1),
                _ => argv.push(self.word(child, nest + 1)),
            }
        }
        self.analyzer.run(&argv, self.depth, nest, false);
    }

    fn assignment(&mut self, node: Node<'_>, nest: usize) {
        for (field, child) in fields(node) {
            match field {
                Some("name") if child.kind() == "subscript" => {
                    if let Some(name) = child.child_by_field_name("name") {
                        let name = self.text(name).into_owned();
                        self.analyzer.assign(name);
                    }
                    self.subscript(child);
                    self.children(child, nest + 1);
                }
                Some("name") => {
                    let name = self.text(child).into_owned();
                    self.analyzer.assign(name);
                }
                Some("value") => {
                    if child.kind() == "array" {
                        self.array_elements(child);
                    }
                    self.word(child, nest + 1);
                }
                _ if child.is_named() => self.visit(child, nest + 1),
                _ => {}
            }
        }
    }

    /// `> f`, `>> f`, `>| f`, `&> f`, `&>> f`, `N> f`, `N<> f`, `<> f` and
    /// `>&f` (a file when not a descriptor): the target is a file written.
    /// The operator is read from the source text: tree-sitter-bash splits
    /// `N<>` into `<` and an error holding `>`.
    fn file_redirect(&mut self, node: Node<'_>, nest: usize) {
        let mut from = node.start_byte();
        let mut to = node.end_byte();
        let mut targets = Vec::new();
        for (field, child) in fields(node) {
            match field {
                Some("destination") => {
                    to = to.min(child.start_byte());
                    let word = self.word(child, nest + 1);
                    // A name decoded from `$'…'` stands as written: the
                    // protected-path check reads it as a path it cannot know.
                    let raw = has_descendant(child, "ansi_c_string").then(|| self.text(child).into_owned());
                    targets.push(raw.map_or(word, |text| Word { text, plain: false, single: true }));
                }
                Some("descriptor") => from = child.end_byte(),
                _ if child.is_named() => self.visit(child, nest + 1),
                _ => {}
            }
        }
        let operator: String =
            self.source.get(from..to).unwrap_or("").chars().filter(|c| !c.is_whitespace()).collect();
        let duplicates = operator == ">&"
            && targets.first().is_some_and(|target| {
                target.plain && (target.text == "-" || target.text.bytes().all(|b| b.is_ascii_digit()))
            });
        if operator.contains('>') && !duplicates {
            self.analyzer.redirect(targets.into_iter().map(|target| target.text));
        }
    }

    /// One argv word of `node`: its text after quote removal when plain, its
    /// source text otherwise. Substitutions inside are walked.
    fn word(&mut self, node: Node<'_>, nest: usize) -> Word {
        let piece = self.piece(node, nest);
        let globs = globbing(&piece.skeleton);
        let (plain, single) = (!piece.expands && !globs, !piece.splits && !globs);
        if !plain {
            return Word { text: self.text(node).into_owned(), plain, single };
        }
        if evaluable(&piece.text) {
            self.opaque("quoted text that arithmetic evaluation could run");
        }
        Word { text: piece.text, plain, single }
    }

    fn piece(&mut self, node: Node<'_>, nest: usize) -> Piece {
        if nest > MAX_NESTING {
            self.opaque("syntax nested too deeply");
            return Piece::expanded();
        }
        let raw = self.text(node).into_owned();
        if !node.is_named() {
            return Piece::unquoted(&raw);
        }
        match node.kind() {
            "word" => {
                self.hidden(&raw, nest);
                unquote(&raw)
            }
            "regex" | "extglob_pattern" => {
                self.hidden(&raw, nest);
                Piece::split()
            }
            "number" => Piece::unquoted(&raw),
            "raw_string" => {
                let inner = raw.strip_prefix('\'').unwrap_or(&raw);
                Piece::quoted(inner.strip_suffix('\'').unwrap_or(inner).to_owned())
            }
            "ansi_c_string" => Piece::quoted(ansi_c(&raw)),
            "string" | "translated_string" => {
                let mut cursor = node.walk();
                if node.named_children(&mut cursor).all(|child| child.kind() == "string_content") {
                    let inner = raw.strip_prefix('$').unwrap_or(&raw);
                    let inner = inner.strip_prefix('"').unwrap_or(inner);
                    let inner = inner.strip_suffix('"').unwrap_or(inner);
                    self.hidden(inner, nest);
                    Piece::quoted(unquote_double(inner))
                } else {
                    self.children(node, nest);
                    // `"$@"`, `"${a[@]}"` and `"${!p@}"` are a word each.
                    let many = ["$@", "${@", "[@]", "${!"].iter().any(|form| raw.contains(form));
                    if many { Piece::split() } else { Piece::expanded() }
                }
            }
            "concatenation" | "command_name" => {
                let mut whole = Piece::default();
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
                for child in children {
                    let part = self.piece(child, nest + 1);
                    whole.text.push_str(&part.text);
                    whole.skeleton.push_str(&part.skeleton);
                    whole.expands |= part.expands;
                    whole.splits |= part.splits;
                }
                whole
            }
            _ => {
                self.visit(node, nest);
                Piece::split()
            }
        }
    }
}

/// Whether `node` or a node below it is of `kind`.
fn has_descendant(node: Node<'_>, kind: &str) -> bool {
    let mut stack = vec![node];
    while let Some(next) = stack.pop() {
        if next.kind() == kind {
            return true;
        }
        stack.extend(named_children(next));
    }
    false
}

fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

fn named_child<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    named_children(node).into_iter().find(|child| child.kind() == kind)
}

/// A node's children with their field names.
fn fields(node: Node<'_>) -> Vec<(Option<&'static str>, Node<'_>)> {
    let mut cursor = node.walk();
    let mut out = Vec::new();
    if cursor.goto_first_child() {
        loop {
            out.push((cursor.field_name(), cursor.node()));
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}
