//! One incremental Server-Sent Events reader for every API: LF, CRLF and CR
//! line ends, multi-line `data:`, comments (keep-alives), `event:` names,
//! bytes arriving split at any boundary (even inside a UTF-8 character).
//!
//! Written here because the parsers on crates.io either own the HTTP
//! connection or hide comments, and the idle watchdog needs to know whether
//! a chunk carried data or only a keep-alive.
//!
//! A line and an event are capped ([`SseLimits`]): a server or proxy that
//! never ends a line cannot make the reader hold unbounded memory.

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, empty when none was given.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// The most a line and an event may hold, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseLimits {
    /// Longest line (without its end).
    pub line: usize,
    /// Largest event: its `data:` values joined.
    pub event: usize,
}

impl Default for SseLimits {
    fn default() -> Self {
        let limits = crate::config::StreamLimits::default();
        Self { line: limits.line, event: limits.event }
    }
}

/// A cap the stream went past.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// A line longer than the cap (no line end within `cap` bytes).
    #[error("an SSE line exceeded the {} line cap ({size} bytes without a line end)", bytes(*cap))]
    LineTooLong {
        /// The cap, in bytes.
        cap: usize,
        /// How much of the line had arrived, in bytes.
        size: usize,
    },
    /// An event whose data grew past the cap.
    #[error("an SSE event exceeded the {} event cap ({size} bytes of data)", bytes(*cap))]
    EventTooLarge {
        /// The cap, in bytes.
        cap: usize,
        /// The event's data so far, in bytes.
        size: usize,
    },
}

/// `8 MiB`, `1.5 KiB`, `100 bytes`.
pub(crate) fn bytes(count: usize) -> String {
    const UNITS: [(usize, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if count >= unit {
            let whole = count / unit;
            let tenths = (count % unit) * 10 / unit;
            return if tenths == 0 { format!("{whole} {name}") } else { format!("{whole}.{tenths} {name}") };
        }
    }
    format!("{count} bytes")
}

/// Feeds bytes in, gets events out.
#[derive(Debug, Default)]
pub struct SseParser {
    limits: SseLimits,
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
    /// A parser at the start of a stream, with the default caps.
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser at the start of a stream, with these caps.
    pub fn with_limits(limits: SseLimits) -> Self {
        Self { limits, ..Self::default() }
    }

    /// Parses `bytes`, appending completed events to `out`. Past a cap, the
    /// events completed before it are in `out` and the stream is unusable.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        for &byte in bytes {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, out)?;
                }
                _ => {
                    self.after_cr = false;
                    if self.line.len() >= self.limits.line {
                        return Err(SseError::LineTooLong {
                            cap: self.limits.line,
                            size: self.line.len() + 1,
                        });
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(())
    }

    /// Ends the stream: a final event without its blank line is still
    /// dispatched (some servers close right after the last `data:` line).
    /// Returns whether it did so: such an event may be cut short.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<bool, SseError> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, out)?;
        }
        let unterminated = self.has_data;
        self.dispatch(out);
        Ok(unterminated)
    }

    /// Whether a `data:` line arrived since the last call.
    pub fn take_saw_data(&mut self) -> bool {
        std::mem::take(&mut self.saw_data)
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(()); // a comment: keep-alive
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
                if self.data.len() > self.limits.event {
                    return Err(SseError::EventTooLarge { cap: self.limits.event, size: self.data.len() });
                }
            }
            "event" => self.event = value.to_owned(),
            _ => {} // id, retry and unknown fields are not used
        }
        Ok(())
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
            parser.push(chunk, &mut out).unwrap();
        }
        parser.finish(&mut out).unwrap();
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
        parser.push(b": ping\n\n", &mut out).unwrap();
        assert!(!parser.take_saw_data());
        parser.push(b"data: x\n", &mut out).unwrap();
        assert!(parser.take_saw_data());
    }

    #[test]
    fn a_line_past_its_cap_fails_naming_the_cap_and_the_size() {
        let limits = SseLimits { line: 1024, event: 4096 };
        // Exactly at the cap is fine, however it is split.
        let mut parser = SseParser::with_limits(limits);
        let mut out = Vec::new();
        let at_cap = format!("data: {}", "x".repeat(1024 - 6));
        for piece in at_cap.as_bytes().chunks(100) {
            parser.push(piece, &mut out).unwrap();
        }
        parser.push(b"\n\n", &mut out).unwrap();
        assert_eq!(out.len(), 1);
        // One byte more is not, and the error says so.
        let mut parser = SseParser::with_limits(limits);
        let error = parser.push(format!("{at_cap}x").as_bytes(), &mut out).unwrap_err();
        assert_eq!(error, SseError::LineTooLong { cap: 1024, size: 1025 });
        assert_eq!(
            error.to_string(),
            "an SSE line exceeded the 1 KiB line cap (1025 bytes without a line end)"
        );
    }

    #[test]
    fn an_event_past_its_cap_fails_though_each_line_is_short() {
        let mut parser = SseParser::with_limits(SseLimits { line: 1024, event: 2048 });
        let mut out = Vec::new();
        let line = format!("data: {}\n", "y".repeat(1000));
        parser.push(line.as_bytes(), &mut out).unwrap();
        parser.push(line.as_bytes(), &mut out).unwrap();
        let error = parser.push(line.as_bytes(), &mut out).unwrap_err();
        assert_eq!(error, SseError::EventTooLarge { cap: 2048, size: 3002 });
        assert_eq!(error.to_string(), "an SSE event exceeded the 2 KiB event cap (3002 bytes of data)");
        assert!(out.is_empty(), "nothing of the oversized event was dispatched");
        assert_eq!(bytes(8 << 20), "8 MiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(100), "100 bytes");
    }
}
