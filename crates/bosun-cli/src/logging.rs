//! Diagnostic logs on stderr, off unless `RUST_LOG` asks for them
//! (`RUST_LOG=bosun_local=debug`, `RUST_LOG=llama_cpp_2=info` for
//! llama.cpp's own messages). The logs quote model output, tool output and
//! server replies, so every line is sanitised like the rest of stderr.

use std::io::{self, Write};

use tracing_subscriber::EnvFilter;

use crate::config::Env;

/// Installs the subscriber when `RUST_LOG` is set; a filter that does not
/// parse is reported once and logging stays off.
pub fn init(env: &Env) {
    let Some(directives) = env.get("RUST_LOG").filter(|d| !d.trim().is_empty()) else { return };
    let filter = match EnvFilter::builder().parse(directives) {
        Ok(filter) => filter,
        Err(error) => {
            eprintln!("bosun: RUST_LOG={}: {error}; logging stays off", crate::sanitize::line(directives));
            return;
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(|| Sanitized)
        .try_init();
}

/// Stderr, with control characters other than newline and tab shown escaped.
struct Sanitized;

impl Write for Sanitized {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(bytes);
        io::stderr().lock().write_all(crate::sanitize::block(&text).as_bytes())?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}
