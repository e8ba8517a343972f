//! Bounds of the workspace tools, set by builder methods and clamped by hard
//! maxima.

use std::time::Duration;

pub use crate::common::cap;

/// Bounds shared by the workspace tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolLimits {
    /// Largest file `read_file`, `edit_file` and `apply_patch` will load.
    pub max_file_bytes: u64,
    /// Most bytes of output a tool returns (the session may cut further).
    pub max_output_bytes: usize,
    /// Most entries `list_files` returns.
    pub max_entries: usize,
    /// Most matches `search` returns.
    pub max_results: usize,
    /// Default shell timeout.
    pub shell_timeout: Duration,
}

impl ToolLimits {
    /// Hard maximum of [`ToolLimits::max_file_bytes`]: 64 MiB.
    pub const HARD_MAX_FILE_BYTES: u64 = 64 << 20;
    /// Hard maximum of [`ToolLimits::max_output_bytes`]: 1 MiB.
    pub const HARD_MAX_OUTPUT_BYTES: usize = 1 << 20;
    /// Hard maximum of [`ToolLimits::max_entries`].
    pub const HARD_MAX_ENTRIES: usize = 100_000;
    /// Hard maximum of [`ToolLimits::max_results`].
    pub const HARD_MAX_RESULTS: usize = 10_000;
    /// Hard maximum shell timeout: 20 minutes.
    pub const HARD_MAX_SHELL_TIMEOUT: Duration = Duration::from_secs(20 * 60);

    /// Sets the file size cap, clamped to `1..=HARD_MAX_FILE_BYTES`.
    pub fn with_max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes.clamp(1, Self::HARD_MAX_FILE_BYTES);
        self
    }

    /// Sets the output cap, clamped to `1024..=HARD_MAX_OUTPUT_BYTES`.
    pub fn with_max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes.clamp(1024, Self::HARD_MAX_OUTPUT_BYTES);
        self
    }

    /// Sets the listing cap, clamped to `1..=HARD_MAX_ENTRIES`.
    pub fn with_max_entries(mut self, entries: usize) -> Self {
        self.max_entries = entries.clamp(1, Self::HARD_MAX_ENTRIES);
        self
    }

    /// Sets the search result cap, clamped to `1..=HARD_MAX_RESULTS`.
    pub fn with_max_results(mut self, results: usize) -> Self {
        self.max_results = results.clamp(1, Self::HARD_MAX_RESULTS);
        self
    }

    /// Sets the default shell timeout, clamped to `1 ms..=HARD_MAX_SHELL_TIMEOUT`.
    pub fn with_shell_timeout(mut self, timeout: Duration) -> Self {
        self.shell_timeout = timeout.clamp(Duration::from_millis(1), Self::HARD_MAX_SHELL_TIMEOUT);
        self
    }
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 16 << 20,
            max_output_bytes: 64 * 1024,
            max_entries: 2_000,
            max_results: 200,
            shell_timeout: Duration::from_secs(120),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_clamp_to_hard_maxima() {
        let limits = ToolLimits::default()
            .with_max_file_bytes(u64::MAX)
            .with_max_output_bytes(0)
            .with_max_entries(usize::MAX)
            .with_max_results(0)
            .with_shell_timeout(Duration::from_secs(7200));
        assert_eq!(limits.max_file_bytes, ToolLimits::HARD_MAX_FILE_BYTES);
        assert_eq!(limits.max_output_bytes, 1024);
        assert_eq!(limits.max_entries, ToolLimits::HARD_MAX_ENTRIES);
        assert_eq!(limits.max_results, 1);
        assert_eq!(limits.shell_timeout, ToolLimits::HARD_MAX_SHELL_TIMEOUT);
    }
}
