//! What a prompt asks for, read from its words: a change to files, a
//! program run, or an answer; and whether it is about the workspace at all.
//! The persistence rules (`session/persist.rs`) hold a model to what was
//! asked instead of trusting its claim of having done it.
//!
//! English only, on purpose simple: whole words, sentence by sentence. A
//! prompt in another language reads as an [`Intent::Answer`] about nothing
//! in particular, which leaves the model to decide, as without the rules.

/// What a prompt asks for, as far as ending the turn goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Intent {
    /// A question, or something to look at: an answer ends it.
    Answer,
    /// A program run: it ends once something ran.
    Run,
    /// A change to files: it ends once something was written (or run).
    Change,
}

/// Verbs that ask for a change when a sentence uses them.
const CHANGE_VERBS: &[&str] = &[
    "add",
    "append",
    "bump",
    "change",
    "convert",
    "copy",
    "create",
    "delete",
    "edit",
    "fix",
    "format",
    "implement",
    "insert",
    "make",
    "move",
    "refactor",
    "remove",
    "rename",
    "replace",
    "rewrite",
    "save",
    "set",
    "update",
    "write",
];

/// Words that ask for a program to run (or for what running one shows).
const RUN_WORDS: &[&str] = &["run", "runs", "execute", "executes", "output"];

/// Words of a question, when they open a sentence that ends in `?`.
const QUESTION_WORDS: &[&str] = &[
    "what", "which", "who", "whom", "whose", "where", "when", "why", "how", "is", "are", "does", "do", "did",
];

/// Words that point into the workspace.
const WORKSPACE_WORDS: &[&str] = &[
    "file",
    "files",
    "folder",
    "folders",
    "directory",
    "directories",
    "project",
    "repo",
    "repository",
    "code",
    "codebase",
    "script",
    "scripts",
    "module",
    "modules",
    "config",
    "configured",
    "configuration",
    "defined",
    "defines",
    "workspace",
];

fn sentences(prompt: &str) -> impl Iterator<Item = (bool, Vec<String>)> + '_ {
    prompt.split_inclusive(['.', '?', '!', '\n']).map(|sentence| {
        let lower = sentence.to_lowercase();
        let words: Vec<String> = lower
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect();
        let question = sentence.trim_end().ends_with('?')
            && words.first().is_some_and(|first| QUESTION_WORDS.contains(&first.as_str()));
        (question, words)
    })
}

/// What `prompt` asks for: a [`Intent::Change`] when a sentence of it that
/// is not a question (`what …?`, `does …?`; `can you …?` is a request) uses
/// a change verb; else a [`Intent::Run`] when any sentence asks to run
/// something or for what it outputs; else an [`Intent::Answer`].
pub fn intent(prompt: &str) -> Intent {
    let mut run = false;
    for (question, words) in sentences(prompt) {
        if !question && words.iter().any(|word| CHANGE_VERBS.contains(&word.as_str())) {
            return Intent::Change;
        }
        run |= words.iter().any(|word| RUN_WORDS.contains(&word.as_str()));
    }
    if run { Intent::Run } else { Intent::Answer }
}

/// Whether `prompt` is about the workspace: it names something path-like
/// (`deploy.yaml`, `src/lib.rs`) or uses a word such as "file" or
/// "project". "What is 17 times 23?" is not.
pub fn refers_to_workspace(prompt: &str) -> bool {
    let path_like = prompt.split_whitespace().any(|word| {
        let word = word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
        let inner_dot = word.split_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_alphanumeric() || c == '.')
        });
        word.contains('/') || inner_dot
    });
    path_like
        || sentences(prompt).any(|(_, words)| words.iter().any(|w| WORKSPACE_WORDS.contains(&w.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intent_reads_change_run_and_answer() {
        let changes = [
            "Set the log level in app.env to debug.",
            "In config.toml, change the port from 8080 to 9090.",
            "In greeting.txt the word morning should be evening. Please make that change.",
            "calc.py should print 42, but it prints something else. Fix the bug.",
            "Write a bash script called hello.sh that prints the word quokka.",
            "Read the version number from VERSION and write a file release.txt",
            "Take the names in names.txt, sort them, and save the sorted list to sorted.txt.",
            "Can you fix the failing test?",
            "Run the tests and fix what fails.",
        ];
        for prompt in changes {
            assert_eq!(intent(prompt), Intent::Change, "{prompt}");
        }
        let runs = [
            "Run build.sh and tell me what it prints.",
            "Please execute ./check.sh and report how many checks failed.",
            "What does greet.sh print when it runs?",
            "What is the output of python3 stats.py?",
        ];
        for prompt in runs {
            assert_eq!(intent(prompt), Intent::Run, "{prompt}");
        }
        let answers = [
            "How many replicas does deploy.yaml ask for?",
            "Who maintains this project? The MAINTAINERS file should say.",
            "In Python, which keyword starts the definition of a function?",
            "What does make test do?",
            "Which files are in the current directory? Name them.",
            "Ändere den Port auf 9090.",
        ];
        for prompt in answers {
            assert_eq!(intent(prompt), Intent::Answer, "{prompt}");
        }
    }

    #[test]
    fn a_prompt_refers_to_the_workspace_by_a_path_or_a_word() {
        for prompt in [
            "How many replicas does deploy.yaml ask for?",
            "What's inside the docs/ folder?",
            "Where is max_retries configured?",
            "There is a TODO comment somewhere in this code.",
            "Quick question, unrelated to the code: what does HTTP stand for?",
        ] {
            assert!(refers_to_workspace(prompt), "{prompt}");
        }
        for prompt in [
            "What is 17 times 23?",
            "In Python, which keyword starts the definition of a function? Just the keyword, please.",
            "Thanks. That is all.",
        ] {
            assert!(!refers_to_workspace(prompt), "{prompt}");
        }
    }
}
