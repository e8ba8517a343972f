//! What assembling an agent has to tell the person running it: servers
//! starting, settings ignored, a sandbox that holds only partly. The library
//! never prints; each front end shows notices its own way (the CLI on
//! stderr, `serve` as events), sanitised there: the text may hold what a
//! server or a file said.

use std::fmt;
use std::sync::Arc;

/// One thing to tell the person.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// Progress or a setting noted (shown dim).
    Info(String),
    /// Something did not work as configured; the session goes on without it.
    Warning(String),
    /// Advice about the setup that changes nothing (the workspace is not
    /// under version control); a front end keeping quiet (JSON output) may
    /// leave it out.
    Advice(String),
}

impl Notice {
    /// The text, whatever the kind.
    pub fn text(&self) -> &str {
        match self {
            Self::Info(text) | Self::Warning(text) | Self::Advice(text) => text,
        }
    }
}

/// Where notices go.
#[derive(Clone)]
pub struct Notices(Arc<dyn Fn(Notice) + Send + Sync>);

impl Notices {
    /// Notices handed to `show`.
    pub fn new(show: impl Fn(Notice) + Send + Sync + 'static) -> Self {
        Self(Arc::new(show))
    }

    /// Notices dropped (an embedder that does not show them).
    pub fn ignored() -> Self {
        Self::new(|_| {})
    }

    /// Tells `notice`.
    pub fn tell(&self, notice: Notice) {
        (self.0)(notice);
    }

    /// An [`Notice::Info`].
    pub fn info(&self, text: impl Into<String>) {
        self.tell(Notice::Info(text.into()));
    }

    /// The same notices without [`Notice::Advice`].
    pub fn without_advice(&self) -> Self {
        let inner = self.clone();
        Self::new(move |notice| {
            if !matches!(notice, Notice::Advice(_)) {
                inner.tell(notice);
            }
        })
    }

    /// A [`Notice::Warning`].
    pub fn warn(&self, text: impl Into<String>) {
        self.tell(Notice::Warning(text.into()));
    }
}

impl fmt::Debug for Notices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Notices")
    }
}
