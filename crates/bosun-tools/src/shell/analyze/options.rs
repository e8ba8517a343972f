//! A program's options read as its getopt reads them, so the words that
//! follow are what the program takes them for: short clusters (`-abc`), a
//! value attached or in the next word (`-uroot`, `-u root`), values that may
//! only be attached (`-t[FILE]`), long options with `=` or the next word and
//! their unique abbreviations (`--sig` for `--signal`), `--`, and GNU's
//! permutation (options after operands) where the program allows it.
//!
//! Where the parse cannot be known, the scan fails with a reason and the line
//! is opaque: an option not in the grammar of a strict program (it may take
//! the next word as its value), an expansion where an option may stand (it
//! may be one), and an option's value that word splitting may turn into
//! several words or none.

use super::Word;

/// What an option takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arity {
    /// Nothing.
    Flag,
    /// A value: the rest of the word (`-uroot`, `--user=root`) or the next
    /// word.
    Value,
    /// A value only in the same word (`-t[FILE]`, `--timing[=FILE]`).
    Optional,
    /// This many next words (`bwrap --bind SRC DEST`).
    Words(usize),
}

/// A program's options, written as its source declares them.
#[derive(Clone, Copy, Debug)]
pub(super) struct Grammar {
    /// Its name, for reasons.
    pub(super) program: &'static str,
    /// getopt's option string: a letter, `x:` with a value, `x::` with a
    /// value only attached. A leading `+` stops at the first operand;
    /// without it options may follow operands (GNU getopt permutes).
    pub(super) short: &'static str,
    /// Long options, separated by spaces: `name` a flag, `name=` with a
    /// value, `name?` with a value only as `=value`, `name=N` with N words.
    pub(super) long: &'static str,
    /// An option not listed makes the parse unknown; otherwise it is a flag.
    pub(super) strict: bool,
    /// `+x` is an option too (shells).
    pub(super) plus: bool,
}

impl Grammar {
    /// A strict program without options that stops at its first operand.
    pub(super) const STRICT: Grammar =
        Grammar { program: "", short: "+", long: "", strict: true, plus: false };

    fn permutes(&self) -> bool {
        !self.short.starts_with('+')
    }

    fn short_option(&self, letter: char) -> Option<Arity> {
        let mut chars = self.short.trim_start_matches(['+', ':']).chars().peekable();
        while let Some(c) = chars.next() {
            let mut colons = 0;
            while chars.next_if_eq(&':').is_some() {
                colons += 1;
            }
            if c == letter {
                return Some(match colons {
                    0 => Arity::Flag,
                    1 => Arity::Value,
                    _ => Arity::Optional,
                });
            }
        }
        None
    }

    /// The long option `given` names: itself, or the one it uniquely
    /// abbreviates (getopt_long accepts any unambiguous prefix).
    fn long_option(&self, given: &str) -> Option<(&'static str, Arity)> {
        let options = self.long.split_whitespace().map(|spec| {
            if let Some(name) = spec.strip_suffix('?') {
                (name, Arity::Optional)
            } else if let Some((name, count)) = spec.split_once('=') {
                (name, count.parse().map_or(Arity::Value, Arity::Words))
            } else {
                (spec, Arity::Flag)
            }
        });
        let mut prefixed = None;
        let mut ambiguous = false;
        for (name, arity) in options {
            if name == given {
                return Some((name, arity));
            }
            if name.starts_with(given) {
                ambiguous |= prefixed.is_some();
                prefixed = Some((name, arity));
            }
        }
        prefixed.filter(|_| !ambiguous)
    }
}

/// What a scan found.
#[derive(Debug, Default)]
pub(super) struct Scanned {
    /// Each option, by its letter or full long name, with its value.
    pub(super) options: Vec<(String, Option<Word>)>,
    /// The operands, in order (with permutation, those between options
    /// too); after the first operand of a program that does not permute,
    /// every word.
    pub(super) operands: Vec<Word>,
}

impl Scanned {
    pub(super) fn has(&self, name: &str) -> bool {
        self.options.iter().any(|(option, _)| option == name)
    }

    pub(super) fn has_any(&self, names: &[&str]) -> bool {
        names.iter().any(|name| self.has(name))
    }

    /// The values given to any of `names`.
    pub(super) fn values_of(&self, names: &[&str]) -> Vec<&Word> {
        let given = self.options.iter().filter(|(option, _)| names.contains(&option.as_str()));
        given.filter_map(|(_, value)| value.as_ref()).collect()
    }

    /// The texts of the values given to any of `names`.
    pub(super) fn texts_of(&self, names: &[&str]) -> Vec<String> {
        self.values_of(names).into_iter().map(|word| word.text.clone()).collect()
    }
}

/// Reads `args` with `grammar`.
pub(super) fn scan(args: &[Word], grammar: &Grammar) -> Result<Scanned, String> {
    let program = grammar.program;
    let mut scanned = Scanned::default();
    let mut at = 0;
    let value_word = |at: usize| -> Result<Word, String> {
        match args.get(at) {
            Some(word) if word.single => Ok(word.clone()),
            Some(_) => Err(format!("an expansion that may split is the value of a `{program}` option")),
            None => Err(format!("`{program}`'s last option has no value")),
        }
    };
    while let Some(word) = args.get(at) {
        let text = word.text.as_str();
        if !word.plain {
            if scanned.operands.is_empty() || grammar.permutes() {
                return Err(format!("an expansion where `{program}` reads its options may be an option"));
            }
            scanned.operands.push(word.clone());
            at += 1;
            continue;
        }
        if text == "--" {
            scanned.operands.extend(args.get(at + 1..).unwrap_or(&[]).iter().cloned());
            break;
        }
        if let Some(long) = text.strip_prefix("--").filter(|long| !long.is_empty()) {
            let (given, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let Some((name, arity)) = grammar.long_option(given) else {
                if grammar.strict {
                    return Err(format!("`{program}` option `--{given}` is not modelled"));
                }
                scanned.options.push((given.to_owned(), attached.map(Word::literal)));
                at += 1;
                continue;
            };
            let value = match (arity, attached) {
                (_, Some(value)) => Some(Word::literal(value)),
                (Arity::Value, None) => {
                    at += 1;
                    Some(value_word(at)?)
                }
                (Arity::Words(count), None) => {
                    for _ in 0..count {
                        at += 1;
                        value_word(at)?;
                    }
                    None
                }
                (Arity::Flag | Arity::Optional, None) => None,
            };
            scanned.options.push((name.to_owned(), value));
            at += 1;
            continue;
        }
        let cluster = text.strip_prefix('-').or_else(|| text.strip_prefix('+').filter(|_| grammar.plus));
        match cluster.filter(|cluster| !cluster.is_empty()) {
            Some(cluster) => {
                for (offset, letter) in cluster.char_indices() {
                    let attached = cluster.get(offset + letter.len_utf8()..).unwrap_or("");
                    match grammar.short_option(letter) {
                        Some(Arity::Value) => {
                            let value = if attached.is_empty() {
                                at += 1;
                                value_word(at)?
                            } else {
                                Word::literal(attached)
                            };
                            scanned.options.push((letter.to_string(), Some(value)));
                            break;
                        }
                        Some(Arity::Optional) => {
                            let value = (!attached.is_empty()).then(|| Word::literal(attached));
                            scanned.options.push((letter.to_string(), value));
                            break;
                        }
                        None if grammar.strict => {
                            return Err(format!("`{program}` option `-{letter}` is not modelled"));
                        }
                        _ => scanned.options.push((letter.to_string(), None)),
                    }
                }
                at += 1;
            }
            None if grammar.permutes() => {
                scanned.operands.push(word.clone());
                at += 1;
            }
            None => {
                scanned.operands.extend(args.get(at..).unwrap_or(&[]).iter().cloned());
                break;
            }
        }
    }
    Ok(scanned)
}

/// Whether a long option word (`--name` or `--name=value`) is one of
/// `names` or a prefix of one (an abbreviation the program may accept).
pub(super) fn names_long(word: &str, names: &[&str]) -> bool {
    let Some(long) = word.strip_prefix("--") else { return false };
    let given = long.split_once('=').map_or(long, |(name, _)| name);
    !given.is_empty() && names.iter().any(|name| name.starts_with(given))
}
