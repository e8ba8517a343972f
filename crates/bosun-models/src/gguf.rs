//! A string from a GGUF file's metadata (`general.license` for `list`),
//! read from the key/value section only and within a byte budget.
//!
//! Why here and not bosun-local: bosun-local reads metadata through
//! llama.cpp, which loads the model; it exposes no reader of the header
//! alone. `list` runs over every file in the models directory, any of which
//! may be truncated, foreign or hostile, so this reader trusts no length:
//! each is checked against the budget before it is skipped or read.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

/// The most bytes of a file examined: the metadata of real models (with
/// their tokenizer arrays) is a few MiB; `general.*` keys come first.
const BUDGET: u64 = 32 * 1024 * 1024;
/// The most keys examined.
const MAX_KEYS: u64 = 65_536;
/// The longest value returned.
const MAX_VALUE: u64 = 1024;

const STRING: u32 = 8;
const ARRAY: u32 = 9;

/// The string value of `key` in the GGUF file at `path`; `None` when the
/// file is not a GGUF v2/v3, lacks the key, holds another type there, or
/// the key is not within the budget.
pub fn string_value(path: &Path, key: &str) -> Option<String> {
    let file = File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut reader = Reader { inner: BufReader::new(file), at: 0 };
    reader.find(key)
}

struct Reader {
    inner: BufReader<File>,
    at: u64,
}

impl Reader {
    fn find(&mut self, wanted: &str) -> Option<String> {
        if self.bytes(4)? != b"GGUF" || !matches!(self.u32()?, 2 | 3) {
            return None;
        }
        let _tensors = self.u64()?;
        let keys = self.u64()?;
        for _ in 0..keys.min(MAX_KEYS) {
            let len = self.u64()?;
            let matches = if len == wanted.len() as u64 {
                self.bytes(len)? == wanted.as_bytes()
            } else {
                self.skip(len)?;
                false
            };
            let kind = self.u32()?;
            if matches {
                if kind != STRING {
                    return None;
                }
                let len = self.u64()?;
                let value = self.bytes(len.min(MAX_VALUE))?;
                return Some(String::from_utf8_lossy(&value).into_owned());
            }
            self.skip_value(kind, true)?;
        }
        None
    }

    /// Skips a value of `kind`; an array may hold scalars or strings, not arrays.
    fn skip_value(&mut self, kind: u32, top: bool) -> Option<()> {
        match kind {
            STRING => {
                let len = self.u64()?;
                self.skip(len)
            }
            ARRAY if top => {
                let inner = self.u32()?;
                let count = self.u64()?;
                match width(inner) {
                    Some(width) => self.skip(count.checked_mul(width)?),
                    None if inner == STRING => {
                        for _ in 0..count {
                            self.skip_value(STRING, false)?;
                        }
                        Some(())
                    }
                    None => None,
                }
            }
            other => self.skip(width(other)?),
        }
    }

    fn skip(&mut self, len: u64) -> Option<()> {
        let end = self.at.checked_add(len).filter(|end| *end <= BUDGET)?;
        self.inner.seek_relative(i64::try_from(len).ok()?).ok()?;
        self.at = end;
        Some(())
    }

    fn bytes(&mut self, len: u64) -> Option<Vec<u8>> {
        let end = self.at.checked_add(len).filter(|end| *end <= BUDGET)?;
        let mut out = vec![0; usize::try_from(len).ok()?];
        self.inner.read_exact(&mut out).ok()?;
        self.at = end;
        Some(out)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }
}

/// The size of a fixed-width GGUF type.
fn width(kind: u32) -> Option<u64> {
    match kind {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}
