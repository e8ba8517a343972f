//! GNU sed: its options, and its script read the way sed 4.x compiles one
//! (`compile_program` in sed/compile.c: addresses, `!`, the commands and
//! their arguments, `s` and `y` delimiters with bracket expressions,
//! labels, text of `a`/`i`/`c`, file names of `r`/`w`), so that what it
//! runs and writes is seen.
//!
//! Opaque: the `e` command and the `s///e` flag (they run a command), a
//! script from a file (`-f`), a script with expansions, an expansion where
//! an option may stand (GNU sed permutes, so anywhere before `--`), and a
//! script this reader does not understand (sed would refuse it, or it reads
//! it differently). Written: `w FILE`, `W FILE` and `s///w FILE`. With
//! `--sandbox`, sed itself refuses `e`, `r` and `w`.

use super::Word;
use super::options::{Grammar, scan};
use super::wrappers::Unwrapped;

/// What `sed ARGS` runs and writes.
pub(super) fn unwrap(args: &[Word]) -> Unwrapped {
    const LONG: &str = "expression= file= in-place? line-length= null-data zero-terminated quiet silent \
                        regexp-extended separate unbuffered sandbox posix debug follow-symlinks binary help version";
    let grammar = Grammar { program: "sed", short: "bsnrzuEe:f:l:i::", long: LONG, ..Grammar::STRICT };
    let scanned = match scan(args, &grammar) {
        Ok(scanned) => scanned,
        Err(why) => return Unwrapped::opaque(why),
    };
    if scanned.has_any(&["f", "file"]) {
        return Unwrapped::opaque("`sed -f` reads its script from a file");
    }
    let expressions = scanned.values_of(&["e", "expression"]);
    let scripts: Vec<&Word> =
        if expressions.is_empty() { scanned.operands.first().into_iter().collect() } else { expressions };
    if scripts.iter().any(|word| !word.plain) {
        return Unwrapped::opaque("`sed` given a script with expansions");
    }
    if scanned.has("sandbox") {
        return Unwrapped::default();
    }
    let joined = scripts.iter().map(|word| word.text.as_str()).collect::<Vec<_>>().join("\n");
    match Script::new(&joined).commands() {
        Ok(redirects) => Unwrapped { redirects, ..Unwrapped::default() },
        Err(why) => Unwrapped::opaque(why),
    }
}

/// A sed script as sed's compiler reads it, a character at a time.
struct Script {
    chars: Vec<char>,
    at: usize,
}

const NOT_UNDERSTOOD: &str = "a sed script not understood";

impl Script {
    fn new(text: &str) -> Self {
        Self { chars: text.chars().collect(), at: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.at += usize::from(c.is_some());
        c
    }

    /// The next character that is not a space or a tab.
    fn nonblank(&mut self) -> Option<char> {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
        self.next()
    }

    /// Steps back over the character just read.
    fn back(&mut self) {
        self.at = self.at.saturating_sub(1);
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    fn integer(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
    }

    /// The files the script writes, or why it runs a command or is not
    /// understood.
    fn commands(&mut self) -> Result<Vec<String>, String> {
        let mut writes = Vec::new();
        loop {
            let mut c = self.next();
            while c.is_some_and(|c| c == ';' || c.is_whitespace()) {
                c = self.next();
            }
            let Some(first) = c else { return Ok(writes) };
            let mut command = first;
            if self.address(first)? {
                command = self.nonblank().ok_or(NOT_UNDERSTOOD)?;
                if command == ',' {
                    let start = self.nonblank().ok_or(NOT_UNDERSTOOD)?;
                    if !self.address(start)? {
                        return Err(NOT_UNDERSTOOD.to_owned());
                    }
                    command = self.nonblank().ok_or(NOT_UNDERSTOOD)?;
                }
            }
            if command == '!' {
                command = self.nonblank().ok_or(NOT_UNDERSTOOD)?;
            }
            match command {
                '#' => self.rest_of_line(),
                '{' => {}
                '}' | '=' | 'd' | 'D' | 'F' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'z' | 'x' => {
                    self.end_of_command()?;
                }
                'e' => return Err("sed's e command runs a command".to_owned()),
                'a' | 'i' | 'c' => self.text(),
                ':' | 'b' | 't' | 'T' | 'v' => self.label(),
                'q' | 'Q' | 'l' | 'L' => {
                    self.skip_blanks();
                    self.integer();
                    self.end_of_command()?;
                }
                'r' | 'R' => {
                    self.file_name();
                }
                'w' | 'W' => writes.push(self.file_name()),
                's' => {
                    let slash = self.next().ok_or(NOT_UNDERSTOOD)?;
                    self.delimited(slash, true)?;
                    self.delimited(slash, false)?;
                    if let Some(file) = self.substitute_flags()? {
                        writes.push(file);
                    }
                }
                'y' => {
                    let slash = self.next().ok_or(NOT_UNDERSTOOD)?;
                    self.delimited(slash, false)?;
                    self.delimited(slash, false)?;
                    self.end_of_command()?;
                }
                other => return Err(format!("{NOT_UNDERSTOOD} (`{other}`)")),
            }
        }
    }

    /// An address starting with `first`, if there is one: `/RE/` or `\cREc`
    /// with `I`/`M`, `N`, `N~S`, `+N`, `~N`, `$`.
    fn address(&mut self, first: char) -> Result<bool, String> {
        match first {
            '/' | '\\' => {
                let slash = if first == '\\' { self.next().ok_or(NOT_UNDERSTOOD)? } else { first };
                self.delimited(slash, true)?;
                loop {
                    self.skip_blanks();
                    if !matches!(self.peek(), Some('I' | 'M')) {
                        break;
                    }
                    self.at += 1;
                }
            }
            '0'..='9' => {
                self.integer();
                self.skip_blanks();
                if self.peek() == Some('~') {
                    self.at += 1;
                    self.skip_blanks();
                    self.integer();
                }
            }
            '+' | '~' => {
                self.skip_blanks();
                self.integer();
            }
            '$' => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Up to an unescaped `slash` on this line (`match_slash`); in a regular
    /// expression a bracket expression may hold the delimiter.
    fn delimited(&mut self, slash: char, regex: bool) -> Result<(), String> {
        if slash == '\n' || slash == '\\' {
            return Err(NOT_UNDERSTOOD.to_owned());
        }
        while let Some(c) = self.next() {
            match c {
                '\n' => break,
                _ if c == slash => return Ok(()),
                '\\' => {
                    self.next();
                }
                '[' if regex && self.bracket() != Some(']') => break,
                _ => {}
            }
        }
        Err(NOT_UNDERSTOOD.to_owned())
    }

    /// A bracket expression after its `[` (`snarf_char_class`): the
    /// character it ends on, `]` when it is closed.
    fn bracket(&mut self) -> Option<char> {
        let mut c = self.next();
        if c == Some('^') {
            c = self.next();
        }
        if c == Some(']') {
            c = self.next();
        }
        // 0 outside a class, 1 after its `[`, 2 after `[.`/`[:`/`[=`, 3 after
        // the closing `.`/`:`/`=`.
        let mut state = 0u8;
        let mut delim = ' ';
        loop {
            match c {
                None | Some('\n') => return c,
                Some(kind @ ('.' | ':' | '=')) => {
                    if state == 1 {
                        delim = kind;
                        state = 2;
                        c = self.next();
                        continue;
                    } else if state == 2 && kind == delim {
                        state = 3;
                        c = self.next();
                        continue;
                    }
                }
                Some('[') => {
                    if state == 0 {
                        state = 1;
                    }
                    c = self.next();
                    continue;
                }
                Some(']') => {
                    if state <= 1 {
                        return c;
                    } else if state == 3 {
                        state = 0;
                    }
                }
                Some(_) => {}
            }
            state &= !1;
            c = self.next();
        }
    }

    /// The flags of `s`: the file of `w`, if given.
    fn substitute_flags(&mut self) -> Result<Option<String>, String> {
        loop {
            match self.nonblank() {
                Some('i' | 'I' | 'm' | 'M' | 'p' | 'g' | '0'..='9') => {}
                Some('e') => return Err("sed's s///e flag runs the replacement as a command".to_owned()),
                Some('w') => return Ok(Some(self.file_name())),
                Some('}' | '#') => {
                    self.back();
                    return Ok(None);
                }
                None | Some('\n' | ';') => return Ok(None),
                Some(_) => return Err(NOT_UNDERSTOOD.to_owned()),
            }
        }
    }

    /// After a command: blanks, then `;`, a newline, `}`, `#` or the end.
    fn end_of_command(&mut self) -> Result<(), String> {
        match self.nonblank() {
            None | Some('\n' | ';') => Ok(()),
            Some('}' | '#') => {
                self.back();
                Ok(())
            }
            Some(_) => Err(NOT_UNDERSTOOD.to_owned()),
        }
    }

    /// A label (`read_label`): up to a blank, `;`, `}`, `#` or a newline.
    fn label(&mut self) {
        self.skip_blanks();
        while self.peek().is_some_and(|c| !matches!(c, ' ' | '\t' | '\n' | ';' | '}' | '#')) {
            self.at += 1;
        }
    }

    /// The text of `a`, `i`, `c` (`read_text`): after `\` the next line, or
    /// the rest of this line (none when the command ends the line, and the
    /// next line is a command again); a backslash continues it past a
    /// newline.
    fn text(&mut self) {
        match self.nonblank() {
            None | Some('\n') => return,
            Some('\\') => {
                self.next();
            }
            Some(_) => {}
        }
        while let Some(c) = self.next() {
            match c {
                '\\' => {
                    self.next();
                }
                '\n' => return,
                _ => {}
            }
        }
    }

    /// A file name: the rest of the line after blanks.
    fn file_name(&mut self) -> String {
        self.skip_blanks();
        let start = self.at;
        while self.peek().is_some_and(|c| c != '\n') {
            self.at += 1;
        }
        self.chars.get(start..self.at).unwrap_or(&[]).iter().collect()
    }

    fn rest_of_line(&mut self) {
        while self.next().is_some_and(|c| c != '\n') {}
    }
}
