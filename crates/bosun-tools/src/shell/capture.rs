//! Bounded capture of a command's combined output: the first half of the cap
//! is kept as the head, a ring buffer keeps the last half as the tail, and the
//! bytes in between are only counted. Memory stays within the cap however
//! much the command prints.

/// Combined stdout and stderr, in arrival order, kept within a byte cap.
#[derive(Debug)]
pub(super) struct Capture {
    head: Vec<u8>,
    head_cap: usize,
    /// Grows up to `tail_cap`, then acts as a ring whose oldest byte is at
    /// `tail_start`.
    tail: Vec<u8>,
    tail_cap: usize,
    tail_start: usize,
    /// Every byte pushed, kept or not.
    total: u64,
}

impl Capture {
    /// A capture keeping at most `cap` bytes: `cap / 2` of head, the rest as
    /// tail. Nothing is allocated until output arrives.
    pub(super) fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head: Vec::new(),
            head_cap,
            tail: Vec::new(),
            tail_cap: cap - head_cap,
            tail_start: 0,
            total: 0,
        }
    }

    /// Appends a chunk of output.
    pub(super) fn push(&mut self, mut chunk: &[u8]) {
        self.total = self.total.saturating_add(chunk.len() as u64);
        let head_room = self.head_cap - self.head.len();
        if head_room > 0 {
            let n = head_room.min(chunk.len());
            grow(&mut self.head, n, self.head_cap);
            self.head.extend_from_slice(&chunk[..n]);
            chunk = &chunk[n..];
        }
        let tail_room = self.tail_cap - self.tail.len();
        if tail_room > 0 {
            let n = tail_room.min(chunk.len());
            grow(&mut self.tail, n, self.tail_cap);
            self.tail.extend_from_slice(&chunk[..n]);
            chunk = &chunk[n..];
        }
        if chunk.is_empty() || self.tail_cap == 0 {
            return;
        }
        // The tail is full: overwrite its oldest bytes.
        if chunk.len() >= self.tail_cap {
            self.tail.copy_from_slice(&chunk[chunk.len() - self.tail_cap..]);
            self.tail_start = 0;
            return;
        }
        let first = (self.tail_cap - self.tail_start).min(chunk.len());
        self.tail[self.tail_start..self.tail_start + first].copy_from_slice(&chunk[..first]);
        let rest = chunk.len() - first;
        self.tail[..rest].copy_from_slice(&chunk[first..]);
        self.tail_start = (self.tail_start + chunk.len()) % self.tail_cap;
    }

    /// Bytes dropped between head and tail.
    pub(super) fn cut(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// Bytes of memory the buffers hold (for tests of the bound).
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.head.capacity() + self.tail.capacity()
    }

    /// The output as text: head, a line saying how many bytes were cut, and
    /// tail; invalid UTF-8 is replaced, and a character split by the cut is
    /// dropped whole (its bytes counted as cut).
    pub(super) fn render(&self) -> String {
        let mut tail = Vec::with_capacity(self.tail.len());
        tail.extend_from_slice(&self.tail[self.tail_start..]);
        tail.extend_from_slice(&self.tail[..self.tail_start]);
        let cut = self.cut();
        if cut == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head_end = complete_prefix(&self.head);
        let tail_start = tail.iter().take(3).take_while(|b| is_continuation(**b)).count();
        let cut = cut + (self.head.len() - head_end + tail_start) as u64;
        let mut text = String::from_utf8_lossy(&self.head[..head_end]).into_owned();
        text.push_str(&format!("\n[… {cut} bytes cut …]\n"));
        text.push_str(&String::from_utf8_lossy(&tail[tail_start..]));
        text
    }
}

/// Makes room for `n` more bytes without ever reserving past `cap`.
fn grow(buffer: &mut Vec<u8>, n: usize, cap: usize) {
    let needed = buffer.len() + n;
    if buffer.capacity() < needed {
        let target = needed.max(buffer.len() * 2).min(cap);
        buffer.reserve_exact(target - buffer.len());
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// Length of `bytes` without a trailing, incomplete UTF-8 sequence.
fn complete_prefix(bytes: &[u8]) -> usize {
    let len = bytes.len();
    // A sequence is at most 4 bytes: look back at most 3 for its lead byte.
    for back in 1..=len.min(4) {
        let byte = bytes[len - back];
        if is_continuation(byte) {
            continue;
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needed > back { len - back } else { len };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut capture = Capture::new(1024);
        capture.push(b"hello ");
        capture.push(b"world");
        assert_eq!(capture.cut(), 0);
        assert_eq!(capture.render(), "hello world");
    }

    #[test]
    fn output_filling_exactly_the_cap_is_not_cut() {
        let mut capture = Capture::new(8);
        capture.push(b"abcdefgh");
        assert_eq!(capture.render(), "abcdefgh");
    }

    #[test]
    fn head_and_tail_are_kept_around_the_cut() {
        let mut capture = Capture::new(8);
        for chunk in [&b"abc"[..], b"def", b"ghij", b"klm", b"nopqrstu", b"vw", b"xyz"] {
            capture.push(chunk);
        }
        assert_eq!(capture.cut(), 26 - 8);
        assert_eq!(capture.render(), "abcd\n[… 18 bytes cut …]\nwxyz");
    }

    #[test]
    fn a_chunk_larger_than_the_tail_replaces_it() {
        let mut capture = Capture::new(8);
        capture.push(b"abcdef");
        capture.push(b"0123456789");
        assert_eq!(capture.render(), "abcd\n[… 8 bytes cut …]\n6789");
    }

    #[test]
    fn a_character_split_at_the_head_is_dropped_and_counted() {
        let mut capture = Capture::new(8);
        // The head keeps 4 bytes: "aa" and the first two bytes of "€".
        capture.push("aa€".as_bytes());
        capture.push(b"0123456789");
        capture.push("€".as_bytes());
        // 18 bytes in; "aa" and "9€" (6 bytes) shown.
        assert_eq!(capture.render(), "aa\n[… 12 bytes cut …]\n9€");
    }

    #[test]
    fn a_character_split_at_the_tail_is_dropped_and_counted() {
        let mut capture = Capture::new(8);
        capture.push(b"aaaa");
        capture.push("€€".as_bytes());
        // The tail keeps the last 4 bytes: the end of the first "€", then the
        // second.
        assert_eq!(capture.render(), "aaaa\n[… 3 bytes cut …]\n€");
    }

    #[test]
    fn memory_stays_bounded_for_100_mb() {
        let mut capture = Capture::new(64 * 1024);
        let chunk = vec![b'x'; 65_536];
        let mut written = 0u64;
        while written < 100_000_000 {
            let n = (100_000_000 - written).min(chunk.len() as u64) as usize;
            capture.push(&chunk[..n]);
            written += n as u64;
        }
        assert!(capture.heap_bytes() <= 64 * 1024, "{}", capture.heap_bytes());
        assert_eq!(capture.cut(), 100_000_000 - 65_536);
    }
}
