//! One incremental Server-Sent Events reader for every API: LF, CRLF and CR
//! line ends, multi-line `data:`, comments (keep-alives), `event:` names,
//! bytes arriving split at any boundary (even inside a UTF-8 character).
//!
//! Written here because the parsers on crates.io either own the HTTP
//! connection or hide comments, and the idle watchdog needs to know whether
//! a chunk carried data or only a keep-alive.

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, empty when none was given.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Feeds bytes in, gets events out.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of an unfinished line.
    line: Vec<u8>,
    /// The previous byte was `\r`: a following `\n` belongs to the same end.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    /// Whether any `data:` line was seen since the last call of
    /// [`SseParser::take_saw_data`] (keep-alives do not count).
    saw_data: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `bytes`, appending completed events to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        for &byte in bytes {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, out);
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(byte);
                }
            }
        }
    }

    /// Ends the stream: a final event without its blank line is still
    /// dispatched (some servers close right after the last `data:` line).
    /// Returns whether it did so: such an event may be cut short.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> bool {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, out);
        }
        let unterminated = self.has_data;
        self.dispatch(out);
        unterminated
    }

    /// Whether a `data:` line arrived since the last call.
    pub fn take_saw_data(&mut self) -> bool {
        std::mem::take(&mut self.saw_data)
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // a comment: keep-alive
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.find(':') {
            Some(at) => {
                let value = &text[at + 1..];
                (&text[..at], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                self.saw_data = true;
            }
            "event" => self.event = value.to_owned(),
            _ => {} // id, retry and unknown fields are not used
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            });
        }
        self.event.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.push(chunk, &mut out);
        }
        parser.finish(&mut out);
        out
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent { event: event.into(), data: data.into() }
    }

    #[test]
    fn lf_crlf_and_cr_framing_give_the_same_events() {
        let expected = vec![ev("a", "1"), ev("", "2")];
        assert_eq!(parse_all(&[b"event: a\ndata: 1\n\ndata: 2\n\n"]), expected);
        assert_eq!(parse_all(&[b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n"]), expected);
        assert_eq!(parse_all(&[b"event: a\rdata: 1\r\rdata: 2\r\r"]), expected);
    }

    #[test]
    fn multi_line_data_comments_and_trailing_spaces() {
        let events = parse_all(&[b": keep-alive\n\ndata: {\"a\":\ndata: 1}   \n\n:ping\n"]);
        assert_eq!(events, vec![ev("", "{\"a\":\n1}   ")]);
    }

    #[test]
    fn a_split_crlf_and_a_split_utf8_character_survive() {
        let whole = "data: 925 ÷ 5\r\n\r\n".as_bytes();
        for cut in 0..whole.len() {
            assert_eq!(parse_all(&[&whole[..cut], &whole[cut..]]), vec![ev("", "925 ÷ 5")], "cut at {cut}");
        }
    }

    #[test]
    fn a_last_event_without_its_blank_line_is_dispatched_at_the_end() {
        assert_eq!(
            parse_all(&[b"data: {\"type\":\"message_stop\"}"]),
            vec![ev("", "{\"type\":\"message_stop\"}")]
        );
    }

    #[test]
    fn keep_alives_do_not_count_as_data() {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        parser.push(b": ping\n\n", &mut out);
        assert!(!parser.take_saw_data());
        parser.push(b"data: x\n", &mut out);
        assert!(parser.take_saw_data());
    }
}
