//! bosun-tools: the workspace tools, implementing [`bosun_core::Tool`].
//!
//! A [`Workspace`] holds the root directory open as a handle; every path a
//! tool receives is resolved beneath that handle, one component at a time,
//! never following a symlink (MISSION.md invariant 16). Writes are atomic
//! (invariant 17). The shell runs in its own process group with a cleared
//! environment and is killed as a group on timeout, cancellation or drop
//! (invariant 18). [`skills`] finds Agent Skills folders through the same
//! handles and offers them as the `skill` tool and `skill://` paths of
//! `read_file`.
//!
//! Not here: permissions (the session decides), configuration files, models.

mod access;
pub mod agents;
mod apply_patch;
mod brief;
pub mod commands;
mod common;
pub mod compat;
mod diff;
mod edit;
mod file_tool;
pub mod hooks;
pub mod image;
pub mod limits;
mod list;
pub mod named;
mod nearby;
pub mod patch;
mod preview;
mod read;
mod search;
pub mod shell;
pub mod skills;
pub mod workspace;
mod write;

pub use access::FileAccess;
pub use limits::ToolLimits;
pub use preview::preview;
pub use shell::{OutputEcho, ShellCall, ShellCallError, ShellConfig, ShellRunner, ShellTool};
pub use workspace::{Workspace, WorkspaceError};

/// Reads a file.
pub type ReadFileTool = file_tool::FileToolAdapter<read::ReadFile>;
/// Creates or replaces a file.
pub type WriteFileTool = file_tool::FileToolAdapter<write::WriteFile>;
/// Replaces exact text in a file.
pub type EditFileTool = file_tool::FileToolAdapter<edit::EditFile>;
/// Applies a multi-file patch.
pub type ApplyPatchTool = file_tool::FileToolAdapter<apply_patch::ApplyPatch>;
/// Lists files and directories.
pub type ListFilesTool = file_tool::FileToolAdapter<list::ListFiles>;
/// Searches file contents.
pub type SearchTool = file_tool::FileToolAdapter<search::Search>;

use std::sync::Arc;

use bosun_core::Tool;

use crate::common::{Ledger, Shared};

/// Builds the workspace tools over one [`Workspace`].
///
/// ```no_run
/// # fn main() -> Result<(), bosun_tools::WorkspaceError> {
/// let workspace = bosun_tools::Workspace::open(".")?;
/// let tools = bosun_tools::WorkspaceTools::new(workspace).build();
/// assert_eq!(tools.len(), 7);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct WorkspaceTools {
    workspace: Workspace,
    limits: ToolLimits,
    shell: Option<ShellConfig>,
    skills: skills::Skills,
    access: Option<Arc<dyn FileAccess>>,
}

impl WorkspaceTools {
    /// All seven tools, the shell with the process's PATH and HOME.
    pub fn new(workspace: Workspace) -> Self {
        let shell = ShellConfig::from_process_env(workspace.root_path().to_path_buf());
        Self {
            workspace,
            limits: ToolLimits::default(),
            shell: Some(shell),
            skills: skills::Skills::default(),
            access: None,
        }
    }

    /// Sets the bounds (already clamped by [`ToolLimits`]' setters).
    pub fn limits(mut self, limits: ToolLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Uses this shell configuration.
    pub fn shell(mut self, config: ShellConfig) -> Self {
        self.shell = Some(config);
        self
    }

    /// Leaves the shell out; the file tools stay.
    pub fn without_shell(mut self) -> Self {
        self.shell = None;
        self
    }

    /// Offers `skills`: when there is one, the `skill` tool is added and
    /// `read_file` also reads `skill://NAME/PATH` (see [`skills`]).
    pub fn skills(mut self, skills: skills::Skills) -> Self {
        self.skills = skills;
        self
    }

    /// Reads and writes files' text through `access` (an editor's
    /// buffers) where it offers to: `read_file` when it reads, `write_file`
    /// when it writes, `edit_file` and `apply_patch` when it does both. Every
    /// check stays the tools' own (see `access.rs`).
    pub fn file_access(mut self, access: Arc<dyn FileAccess>) -> Self {
        self.access = Some(access);
        self
    }

    /// The tools for a small model: the same tools with one-sentence
    /// descriptions and only their essential arguments, without
    /// `apply_patch` (see `brief.rs`); the `skill` tool as it is.
    pub fn build_brief(mut self) -> Vec<Arc<dyn Tool>> {
        let skills = std::mem::take(&mut self.skills);
        let limits = self.limits;
        skills::attach(brief::brief(self.build_workspace_tools()), skills, limits)
    }

    /// The tools, ready for `SessionBuilder::tools`.
    pub fn build(mut self) -> Vec<Arc<dyn Tool>> {
        let skills = std::mem::take(&mut self.skills);
        let limits = self.limits;
        skills::attach(self.build_workspace_tools(), skills, limits)
    }

    fn build_workspace_tools(self) -> Vec<Arc<dyn Tool>> {
        let shared = Shared {
            workspace: self.workspace,
            limits: self.limits,
            ledger: Ledger::default(),
            access: self.access,
        };
        let mut tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(ReadFileTool::new(shared.clone())),
            Arc::new(WriteFileTool::new(shared.clone())),
            Arc::new(EditFileTool::new(shared.clone())),
            Arc::new(ApplyPatchTool::new(shared.clone())),
            Arc::new(ListFilesTool::new(shared.clone())),
            Arc::new(SearchTool::new(shared)),
        ];
        if let Some(config) = self.shell {
            tools.push(Arc::new(ShellTool::new(config.with_limits(self.limits))));
        }
        tools
    }
}
