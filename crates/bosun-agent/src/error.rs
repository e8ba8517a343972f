//! The library's error: what went wrong, with the chain of what bosun was
//! doing when it did (`{:#}` prints the chain as `doing: cause`).

use std::fmt::Display;

/// Why configuration could not be read or an agent could not be assembled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Something the user wrote (a file, a flag, a variable) is not valid;
    /// the message says what and how to fix it.
    #[error("{0}")]
    Invalid(String),
    /// A file or directory could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A TOML file did not parse.
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    /// A TOML document could not be edited in place.
    #[error(transparent)]
    TomlEdit(#[from] toml_edit::TomlError),
    /// A JSON document did not parse.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A local model file could not be found or fetched, or a URL is not valid.
    #[error(transparent)]
    Models(#[from] bosun_models::Error),
    /// The session store could not be opened or read.
    #[error(transparent)]
    Store(#[from] bosun_store::StoreError),
    /// The Postgres store (`store_url`) could not be reached or read.
    #[error(transparent)]
    SharedStore(#[from] bosun_store_pg::PgError),
    /// A hook in a settings file is not valid.
    #[error(transparent)]
    Hook(#[from] bosun_tools::hooks::HookConfigError),
    /// A model or price entry is not valid.
    #[error(transparent)]
    ModelTable(#[from] bosun_providers::ModelTableError),
    /// The OS sandbox could not be set up.
    #[error(transparent)]
    Sandbox(#[from] bosun_sandbox::SandboxError),
    /// The workspace could not be opened.
    #[error(transparent)]
    Workspace(#[from] bosun_tools::WorkspaceError),
    /// A session could not be built or resumed.
    #[error(transparent)]
    Build(#[from] bosun_core::BuildError),
    /// A turn failed.
    #[error(transparent)]
    Turn(#[from] bosun_core::TurnError),
    /// A hosted model's configuration is not usable.
    #[error(transparent)]
    Provider(#[from] bosun_providers::ProviderError),
    /// Google credentials could not be read.
    #[error(transparent)]
    GoogleAuth(#[from] bosun_providers::GoogleAuthError),
    /// The local model could not be loaded.
    #[error(transparent)]
    Local(#[from] bosun_local::LocalError),
    /// An HTTP client could not be built.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    /// A web tool could not be built from its settings.
    #[error(transparent)]
    Web(#[from] bosun_web::WebError),
    /// An MCP server could not be used.
    #[error(transparent)]
    Mcp(#[from] bosun_mcp::ServerError),
    /// A task bosun started for the work stopped before it finished.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
    /// What bosun was doing when `source` happened. `{:#}` prints the whole
    /// chain, `doing: cause`, as anyhow does.
    #[error(fmt = show_context)]
    Context {
        /// What was being done.
        context: String,
        /// What went wrong.
        #[source]
        source: Box<Error>,
    },
}

impl From<rustix::io::Errno> for Error {
    fn from(errno: rustix::io::Errno) -> Self {
        Self::Io(errno.into())
    }
}

impl From<std::num::ParseIntError> for Error {
    fn from(error: std::num::ParseIntError) -> Self {
        Self::invalid(error)
    }
}

impl From<std::num::ParseFloatError> for Error {
    fn from(error: std::num::ParseFloatError) -> Self {
        Self::invalid(error)
    }
}

/// The library's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error a user's input earns, with its message.
    pub fn invalid(message: impl Display) -> Self {
        Self::Invalid(message.to_string())
    }

    /// The session-building error under any context, when that is what
    /// failed (a front end tells a refused authority apart, say).
    pub fn build(&self) -> Option<&bosun_core::BuildError> {
        match self {
            Self::Build(error) => Some(error),
            Self::Context { source, .. } => source.build(),
            _ => None,
        }
    }
}

/// Adds what was being done to an error (anyhow's `Context`, typed).
pub trait Context<T> {
    /// Wraps the error with `context`.
    fn context<C: Display>(self, context: C) -> Result<T>;
    /// Wraps the error with the context `f` makes, only when there is one.
    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context<C: Display>(self, context: C) -> Result<T> {
        self.map_err(|source| wrap(context, source.into()))
    }

    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T> {
        self.map_err(|source| wrap(f(), source.into()))
    }
}

impl<T> Context<T> for Option<T> {
    fn context<C: Display>(self, context: C) -> Result<T> {
        self.ok_or_else(|| Error::invalid(context))
    }

    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T> {
        self.ok_or_else(|| Error::invalid(f()))
    }
}

fn show_context(context: &str, source: &Error, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    if f.alternate() { write!(f, "{context}: {source:#}") } else { f.write_str(context) }
}

fn wrap(context: impl Display, source: Error) -> Error {
    Error::Context { context: context.to_string(), source: Box::new(source) }
}

/// Returns an [`Error::Invalid`] with a formatted message.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::invalid(format_args!($($arg)*)))
    };
}
pub(crate) use bail;

/// An [`Error::Invalid`] with a formatted message.
macro_rules! invalid {
    ($($arg:tt)*) => {
        $crate::error::Error::invalid(format_args!($($arg)*))
    };
}
pub(crate) use invalid;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alternate_form_prints_the_chain_of_contexts() {
        let read: std::result::Result<(), std::io::Error> =
            Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"));
        let error = read.context("cannot read a.toml").context("in the user's configuration").unwrap_err();
        assert_eq!(error.to_string(), "in the user's configuration");
        let chain: Vec<String> =
            std::iter::successors(Some(&error as &dyn std::error::Error), |e| e.source())
                .map(ToString::to_string)
                .collect();
        assert_eq!(chain, ["in the user's configuration", "cannot read a.toml", "no such file"]);
        assert_eq!(format!("{error:#}"), "in the user's configuration: cannot read a.toml: no such file");
    }
}
