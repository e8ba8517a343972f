//! The `[rewind]` table: what is kept of files before tools change them, so
//! `bosun rewind` and `/rewind` can restore them (docs/sessions.md).
//! Settings only: the capture reads them from
//! [`Settings::rewind`](super::Settings::rewind). A project's table applies
//! only when the user trusts the project (what bosun keeps on the user's
//! disk is the user's choice).

use crate::error::{Result, bail};
use serde::Deserialize;

/// The resolved rewind settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RewindSettings {
    /// Whether file contents are kept at all (default true).
    pub enabled: bool,
    /// The largest file kept, in bytes (default 1 MiB); a larger one is
    /// named as not restorable.
    pub max_file_bytes: u64,
    /// The most new content one turn keeps, in bytes (default 64 MiB).
    pub max_turn_bytes: u64,
    /// The most files of the workspace a shell call's capture looks at
    /// (default 20 000); past it, changes to the rest are not seen.
    pub max_files: usize,
}

impl RewindSettings {
    /// The largest `max_file_bytes`: the tools' own hard cap on a file.
    pub const HARD_MAX_FILE_BYTES: u64 = bosun_tools::ToolLimits::HARD_MAX_FILE_BYTES;
    /// The most `max_files`.
    pub const HARD_MAX_FILES: usize = 1_000_000;

    /// The bounds the store keeps content by.
    pub fn bounds(&self) -> bosun_store::KeepBounds {
        bosun_store::KeepBounds::new(self.max_file_bytes, self.max_turn_bytes)
    }
}

impl Default for RewindSettings {
    fn default() -> Self {
        let bounds = bosun_store::KeepBounds::DEFAULT;
        Self {
            enabled: true,
            max_file_bytes: bounds.max_file_bytes,
            max_turn_bytes: bounds.max_turn_bytes,
            max_files: 20_000,
        }
    }
}

/// `[rewind]` as one layer writes it; what is unset keeps the value below.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RewindLayer {
    /// Keep file contents for rewind.
    pub enabled: Option<bool>,
    /// The largest file kept, in bytes.
    pub max_file_bytes: Option<u64>,
    /// The most new content one turn keeps, in bytes.
    pub max_turn_bytes: Option<u64>,
    /// The most files a shell call's capture looks at.
    pub max_files: Option<usize>,
}

impl RewindSettings {
    /// Applies one layer's table; `source` names the layer in errors.
    /// Returns what it set, as `(key, value)` for `config show`.
    pub fn apply(&mut self, layer: &RewindLayer, source: &str) -> Result<Vec<(&'static str, String)>> {
        let RewindLayer { enabled, max_file_bytes, max_turn_bytes, max_files } = layer;
        let mut set = Vec::new();
        if let Some(enabled) = enabled {
            self.enabled = *enabled;
            set.push(("rewind.enabled", enabled.to_string()));
        }
        if let Some(bytes) = max_file_bytes {
            if !(1..=Self::HARD_MAX_FILE_BYTES).contains(bytes) {
                bail!(
                    "rewind.max_file_bytes = {bytes}, from {source}: use 1 to {}",
                    Self::HARD_MAX_FILE_BYTES
                );
            }
            self.max_file_bytes = *bytes;
            set.push(("rewind.max_file_bytes", bytes.to_string()));
        }
        if let Some(bytes) = max_turn_bytes {
            if *bytes == 0 {
                bail!("rewind.max_turn_bytes = 0, from {source}: use at least 1 (or `enabled = false`)");
            }
            self.max_turn_bytes = *bytes;
            set.push(("rewind.max_turn_bytes", bytes.to_string()));
        }
        if let Some(files) = max_files {
            if !(1..=Self::HARD_MAX_FILES).contains(files) {
                bail!("rewind.max_files = {files}, from {source}: use 1 to {}", Self::HARD_MAX_FILES);
            }
            self.max_files = *files;
            set.push(("rewind.max_files", files.to_string()));
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn a_table_sets_what_it_names_and_out_of_range_values_are_refused() {
        let mut settings = RewindSettings::default();
        assert_eq!((settings.enabled, settings.max_file_bytes, settings.max_files), (true, 1 << 20, 20_000));
        let layer = RewindLayer { max_file_bytes: Some(4096), max_files: Some(10), ..RewindLayer::default() };
        let set = settings.apply(&layer, "test").unwrap();
        assert_eq!(
            set,
            [("rewind.max_file_bytes", "4096".to_owned()), ("rewind.max_files", "10".to_owned())]
        );
        assert_eq!(settings.bounds(), bosun_store::KeepBounds::new(4096, 64 << 20));
        let zero = RewindLayer { max_file_bytes: Some(0), ..RewindLayer::default() };
        let error = settings.apply(&zero, "the user's config").unwrap_err().to_string();
        assert!(error.contains("rewind.max_file_bytes = 0, from the user's config"), "{error}");
        let none = RewindLayer { max_turn_bytes: Some(0), ..RewindLayer::default() };
        assert!(settings.apply(&none, "x").is_err());
    }
}
