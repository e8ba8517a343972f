//! What a call would do, as its tool reads its own arguments: the facts that
//! rules by capability, command rules and protected paths are checked
//! against. The core cannot parse a shell or a patch; the tool that owns the
//! argument format reports what it means ([`crate::Tool::effects`]).

/// The effects of one proposed call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallEffects {
    /// Paths the call would create, change, move, move to or delete, as the
    /// call names them (workspace-relative).
    pub writes: Vec<String>,
    /// The command line the call runs, parsed; `None` for tools that run none.
    pub command: Option<CommandLine>,
    /// Why the call asks for more than the OS sandbox gives (the network, or
    /// no sandbox at all): such a call asks in every mode, no rule or grant
    /// allows it, and a deny rule still refuses it.
    pub escalation: Option<String>,
}

impl CallEffects {
    /// No effects the pipeline needs to know beyond the tool's category.
    pub fn none() -> Self {
        Self::default()
    }

    /// A call that writes these paths.
    pub fn writes(paths: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { writes: paths.into_iter().map(Into::into).collect(), ..Self::default() }
    }

    /// A call that runs this command line.
    pub fn command(line: CommandLine) -> Self {
        Self { command: Some(line), ..Self::default() }
    }

    /// The same call, asking to leave the sandbox's defaults for `why`.
    pub fn with_escalation(mut self, why: impl Into<String>) -> Self {
        self.escalation = Some(why.into());
        self
    }

    /// Whether the call changes files: it names paths it writes, or its
    /// command redirects output to a file.
    pub fn edits(&self) -> bool {
        !self.writes.is_empty() || self.command.as_ref().is_some_and(|c| !c.redirects.is_empty())
    }
}

/// A shell command line reduced to what rules can match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandLine {
    /// Every simple command the line runs, as argv words after quote
    /// removal, in source order. A wrapper contributes itself and the command
    /// it runs: `sudo rm x` gives `["sudo", "rm", "x"]` and `["rm", "x"]`;
    /// `bash -c 'a; b'` gives the `bash` command and then `a` and `b`.
    pub commands: Vec<Vec<String>>,
    /// Files output is redirected to (`> f`, `>> f`, `&> f`, `2> f`, `tee f`);
    /// `/dev/null`, `/dev/stdout` and `/dev/stderr` are not files.
    pub redirects: Vec<String>,
    /// Names of variables the line assigns for a command or exports
    /// (`FOO=1 cmd`, `export FOO=1`, `env FOO=1 cmd`).
    pub assignments: Vec<String>,
    /// Set when part of the line cannot be reduced to plain words: why
    /// (command or process substitution, an expansion in command position, a
    /// script fed to a shell on stdin, a parse error, a non-ASCII command
    /// name). An opaque line may run anything: no allow rule covers it, and
    /// deny and ask rules cannot be proved not to match it.
    pub opaque: Option<String>,
}

impl CommandLine {
    /// A line of plain simple commands.
    pub fn plain(commands: Vec<Vec<String>>) -> Self {
        Self { commands, ..Self::default() }
    }

    /// A line that cannot be reduced to plain words.
    pub fn opaque(why: impl Into<String>) -> Self {
        Self { opaque: Some(why.into()), ..Self::default() }
    }

    /// Every word of every command, then every redirect target.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.commands.iter().flatten().chain(&self.redirects).map(String::as_str)
    }
}
