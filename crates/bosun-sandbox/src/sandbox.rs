//! [`Sandbox`]: a policy turned into kernel objects once (the Landlock
//! ruleset, the seccomp programs, the sandbox's temporary folder), and
//! [`Sandbox::prepare`], which readies one command: its own temporary
//! folder, the mounts of the moment (protected paths that exist now) and
//! the `pre_exec` step ([`crate::child`]).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use seccompiler::BpfProgram;
use tempfile::TempDir;

use crate::child::{self, ChildPlan, MountOp, Namespaces};
use crate::explain::Refusals;
use crate::landlock_rules::{self, Writable};
use crate::{SandboxError, SandboxMode, SandboxPolicy, seccomp};

/// Git settings every sandboxed process gets (as command-line scope, which
/// a repository's own config cannot override): a planted or hostile git
/// directory must not run its `core.fsmonitor` command on an allowed
/// `git status`, and a workspace folder dressed as a bare repository
/// (`HEAD`, `config`, `objects/`, `refs/`) is not picked up implicitly.
const GIT_SETTINGS: &[(&str, &str)] = &[("core.fsmonitor", "false"), ("safe.bareRepository", "explicit")];

/// What the kernel offers, read once.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Support {
    /// Landlock's ABI version, if enabled.
    pub landlock_abi: Option<i32>,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether user, mount, PID and network namespaces can be made.
    pub namespaces: bool,
}

impl Support {
    /// Reads what this kernel offers (a child made in the namespaces, to
    /// see that they can be made).
    pub fn probe() -> Self {
        Self { namespaces: namespaces_work(), ..Self::without_namespaces() }
    }

    /// Landlock and seccomp, read at once; the namespaces not yet probed.
    fn without_namespaces() -> Self {
        // SAFETY: PR_GET_SECCOMP only reads the calling thread's mode.
        #[allow(unsafe_code)]
        let seccomp = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } >= 0;
        Self { landlock_abi: landlock_rules::kernel_abi(), seccomp, namespaces: false }
    }

    /// Nothing known: for a sandbox that confines nothing and so never asks
    /// the kernel (the probe forks).
    fn unprobed() -> Self {
        Self { landlock_abi: None, seccomp: false, namespaces: false }
    }

    /// What is missing for the sandbox to hold at all, if anything.
    pub fn missing(&self) -> Option<String> {
        match (self.landlock_abi, self.seccomp) {
            (None, false) => Some("this kernel has neither Landlock nor seccomp".to_owned()),
            (None, true) => Some("this kernel has no Landlock (it is off or too old)".to_owned()),
            (Some(_), false) => Some("this kernel has no seccomp".to_owned()),
            (Some(_), true) => None,
        }
    }

    /// What holds only partly, if anything (no namespaces).
    pub fn partial(&self) -> Option<String> {
        (!self.namespaces).then(|| {
            "user namespaces are not available: protected paths inside the workspace and secret folders are \
             guarded by the rules only, and a process that leaves its group can outlive a call"
                .to_owned()
        })
    }
}

fn namespaces_work() -> bool {
    let (uid_map, gid_map) = id_maps();
    child::namespaces_work(namespace_flags(false), &uid_map, &gid_map)
}

/// [`Support`], its namespace probe on a thread of its own so that start-up
/// goes on beside it: making the namespaces (a network namespace above
/// all) takes most of a millisecond, which a run that starts no process
/// need not wait for. The first reader waits for the probe.
#[derive(Debug)]
struct SupportCell {
    known: OnceLock<Support>,
    probe: Mutex<Option<(Support, std::thread::JoinHandle<bool>)>>,
}

impl SupportCell {
    fn known(support: Support) -> Self {
        Self { known: OnceLock::from(support), probe: Mutex::new(None) }
    }

    /// `partial` (Landlock and seccomp, read), the namespaces being probed;
    /// probed here when no thread can be started.
    fn probing(partial: Support) -> Self {
        match std::thread::Builder::new().name("bosun-sandbox-probe".into()).spawn(namespaces_work) {
            Ok(probe) => Self { known: OnceLock::new(), probe: Mutex::new(Some((partial, probe))) },
            Err(_) => Self::known(Support { namespaces: namespaces_work(), ..partial }),
        }
    }

    fn get(&self) -> &Support {
        self.known.get_or_init(|| {
            let pending = self.probe.lock().unwrap_or_else(PoisonError::into_inner).take();
            match pending {
                // A probe that panicked found nothing: no namespaces.
                Some((partial, probe)) => Support { namespaces: probe.join().unwrap_or(false), ..partial },
                None => Support::unprobed(),
            }
        })
    }
}

fn id_maps() -> (Vec<u8>, Vec<u8>) {
    // SAFETY: getuid and getgid cannot fail.
    #[allow(unsafe_code)]
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    (format!("{uid} {uid} 1\n").into_bytes(), format!("{gid} {gid} 1\n").into_bytes())
}

fn namespace_flags(network: bool) -> libc::c_int {
    let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    if network { flags } else { flags | libc::CLONE_NEWNET }
}

/// How one call runs, beyond the sandbox's policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallAccess {
    /// The policy as configured.
    #[default]
    Policy,
    /// The policy with the network on (an approved call).
    Network,
}

/// A policy made real. Cheap to share; every spawn through it is confined.
#[derive(Debug)]
pub struct Sandbox {
    policy: SandboxPolicy,
    support: SupportCell,
    /// `None` in `off` mode.
    kernel: Option<Kernel>,
}

#[derive(Debug)]
struct Kernel {
    /// Where each call's temporary folder is made; removed with the sandbox.
    temp_root: TempDir,
    /// Writable roots besides each call's own folder.
    writable: Vec<PathBuf>,
    seccomp: Vec<BpfProgram>,
    seccomp_network: Vec<BpfProgram>,
}

impl Sandbox {
    /// A sandbox that confines nothing (`--sandbox off`); spawns still get
    /// the parent-death signal.
    pub fn off(workspace: impl Into<PathBuf>) -> Self {
        Self {
            policy: SandboxPolicy::new(SandboxMode::Off, workspace),
            support: SupportCell::known(Support::unprobed()),
            kernel: None,
        }
    }

    /// Builds the kernel objects for `policy`. Fails when the kernel lacks
    /// Landlock or seccomp ([`Support::missing`]); without user namespaces
    /// it works with less ([`Support::partial`]).
    pub fn new(policy: SandboxPolicy) -> Result<Self, SandboxError> {
        if policy.mode == SandboxMode::Off {
            return Ok(Self { policy, support: SupportCell::known(Support::unprobed()), kernel: None });
        }
        let partial = Support::without_namespaces();
        if let Some(missing) = partial.missing() {
            return Err(SandboxError::Unsupported(missing));
        }
        // Probed beside the kernel objects built below, and beside whatever
        // start-up does next; the first call waits for it.
        let support = SupportCell::probing(partial);
        let temp_root =
            tempfile::Builder::new().prefix("bosun-sandbox-").tempdir().map_err(SandboxError::Io)?;
        let mut writable = Vec::new();
        if policy.mode == SandboxMode::WorkspaceWrite {
            writable.push(policy.workspace.clone());
            writable.extend(policy.writable_roots.iter().cloned());
        }
        // Built once here so that a policy Landlock refuses fails now,
        // not at the first call.
        landlock_rules::ruleset(
            &Writable { roots: writable.iter().map(PathBuf::as_path).collect() },
            policy.network,
        )?;
        let kernel = Kernel {
            writable,
            seccomp: seccomp::programs(policy.network)?,
            seccomp_network: seccomp::programs(true)?,
            temp_root,
        };
        Ok(Self { policy, support, kernel: Some(kernel) })
    }

    /// The policy.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// What the kernel offered when the sandbox was built (nothing read in
    /// `off` mode, which needs nothing). The first call may wait for the
    /// namespace probe (about a millisecond).
    pub fn support(&self) -> &Support {
        self.support.get()
    }

    /// Whether spawns are confined.
    pub fn confines(&self) -> bool {
        self.kernel.is_some()
    }

    /// Readies `command` to run inside the sandbox: sets its temporary
    /// folder and git settings, and installs the confinement that runs
    /// between fork and exec. Keep the returned [`SandboxedCall`] until the
    /// command has ended, then call [`SandboxedCall::finish`].
    pub fn prepare(
        &self,
        command: &mut tokio::process::Command,
        access: CallAccess,
    ) -> Result<SandboxedCall, SandboxError> {
        let Some(kernel) = &self.kernel else {
            return Ok(unconfined(command));
        };
        let network = self.policy.network || access == CallAccess::Network;
        let call_dir = tempfile::Builder::new()
            .prefix("call-")
            .tempdir_in(kernel.temp_root.path())
            .map_err(SandboxError::Io)?;
        // Read once: the ones there now are bound read-only, the others
        // checked for after the call.
        let (present_protected, missing_protected): (Vec<PathBuf>, Vec<PathBuf>) = self
            .policy
            .protected_names
            .iter()
            .map(|name| self.policy.workspace.join(name))
            .partition(|path| path.symlink_metadata().is_ok());
        let namespaces = if self.support.get().namespaces {
            let (namespaces, tmp_on_slash_tmp) =
                self.namespaces(call_dir.path(), &present_protected, network)?;
            command.env("TMPDIR", if tmp_on_slash_tmp { Path::new("/tmp") } else { call_dir.path() });
            Some(namespaces)
        } else {
            command.env("TMPDIR", call_dir.path());
            None
        };
        command.env("GIT_CONFIG_COUNT", GIT_SETTINGS.len().to_string());
        for (index, (key, value)) in GIT_SETTINGS.iter().enumerate() {
            command
                .env(format!("GIT_CONFIG_KEY_{index}"), key)
                .env(format!("GIT_CONFIG_VALUE_{index}"), value);
        }
        let seccomp = if network { &kernel.seccomp_network } else { &kernel.seccomp };
        // Per call: Landlock matches a rule on the inode where a walk up
        // the mount tree passes, and the call's folder mounted on `/tmp` is
        // the root of its mount, so it needs a rule of its own.
        let roots = kernel.writable.iter().map(PathBuf::as_path).chain([call_dir.path()]).collect();
        let landlock = landlock_rules::ruleset(&Writable { roots }, network)?;
        let plan = ChildPlan {
            parent: parent_pid(),
            namespaces,
            landlock: Some(landlock),
            seccomp: seccomp.clone(),
        };
        install(command, Arc::new(plan));
        Ok(SandboxedCall {
            call_dir: Some(call_dir),
            missing_protected,
            refusals: Some(Refusals::new(self.policy.mode, network)),
        })
    }

    /// The mounts of one call. The second value says whether the call's
    /// folder is mounted on `/tmp`.
    fn namespaces(
        &self,
        call_dir: &Path,
        protected: &[PathBuf],
        network: bool,
    ) -> Result<(Namespaces, bool), SandboxError> {
        let (uid_map, gid_map) = id_maps();
        let mut mounts = Vec::new();
        let workspace = &self.policy.workspace;
        for path in protected {
            read_only_bind(path, &mut mounts)?;
        }
        if self.policy.mode == SandboxMode::ReadOnly {
            read_only_bind(workspace, &mut mounts)?;
        }
        let keep_visible: Vec<&Path> = std::iter::once(workspace.as_path())
            .chain(self.policy.writable_roots.iter().map(PathBuf::as_path))
            .collect();
        for secret in &self.policy.deny_read {
            // A secret folder holding the workspace stays: hiding it would
            // hide the work.
            if keep_visible.iter().any(|kept| kept.starts_with(secret)) {
                continue;
            }
            hide(secret, &mut mounts)?;
        }
        // The call's folder becomes `/tmp`. What the call must still see
        // under the old `/tmp` (a workspace there, a writable root) is bound
        // at the same path inside the call's folder first, so `/tmp/…`
        // names it as before.
        let slash_tmp = Path::new("/tmp");
        let tmp_on_slash_tmp = slash_tmp.is_dir()
            && !keep_visible.contains(&slash_tmp)
            && self.policy.deny_read.iter().all(|secret| !secret.starts_with(slash_tmp));
        if tmp_on_slash_tmp {
            for kept in keep_visible.iter().filter(|kept| kept.starts_with(slash_tmp)) {
                let Ok(relative) = kept.strip_prefix(slash_tmp) else { continue };
                let point = call_dir.join(relative);
                std::fs::create_dir_all(&point).map_err(SandboxError::Io)?;
                mounts.push(MountOp::bind(c_path(kept)?, c_path(&point)?));
            }
            mounts.push(MountOp::bind(c_path(call_dir)?, c_path(slash_tmp)?));
        }
        let proc_mount = MountOp {
            source: Some(c"proc".to_owned()),
            target: c"/proc".to_owned(),
            fstype: Some(c"proc".to_owned()),
            flags: libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            data: None,
            required: false,
        };
        let namespaces = Namespaces {
            unshare_flags: namespace_flags(network),
            uid_map,
            gid_map,
            mounts,
            mounts_as_init: vec![proc_mount],
        };
        Ok((namespaces, tmp_on_slash_tmp))
    }
}

/// Readies `command` to run outside any sandbox, dying with bosun (the
/// parent-death signal) all the same: for `--sandbox off` and a call the
/// person let out.
pub fn unconfined(command: &mut tokio::process::Command) -> SandboxedCall {
    install(
        command,
        Arc::new(ChildPlan { parent: parent_pid(), namespaces: None, landlock: None, seccomp: Vec::new() }),
    );
    SandboxedCall::default()
}

fn parent_pid() -> libc::pid_t {
    // SAFETY: getpid cannot fail.
    #[allow(unsafe_code)]
    unsafe {
        libc::getpid()
    }
}

fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| SandboxError::Path(format!("{} holds a NUL byte", path.display())))
}

/// Binds `path` on itself and makes that mount read-only.
fn read_only_bind(path: &Path, mounts: &mut Vec<MountOp>) -> Result<(), SandboxError> {
    let target = c_path(path)?;
    mounts.push(MountOp::bind(target.clone(), target.clone()));
    mounts.push(MountOp::remount_read_only(target, locked_flags(path)));
    Ok(())
}

/// Hides `path`: an empty read-only file system on a folder, `/dev/null`
/// on a file. A path that does not exist needs nothing.
fn hide(path: &Path, mounts: &mut Vec<MountOp>) -> Result<(), SandboxError> {
    let Ok(metadata) = std::fs::metadata(path) else { return Ok(()) };
    let target = c_path(path)?;
    if metadata.is_dir() {
        mounts.push(MountOp {
            source: Some(c"tmpfs".to_owned()),
            target,
            fstype: Some(c"tmpfs".to_owned()),
            flags: libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
            data: Some(c"size=4k,mode=0555".to_owned()),
            required: true,
        });
    } else {
        mounts.push(MountOp::bind(c"/dev/null".to_owned(), target));
    }
    Ok(())
}

/// The flags of the mount `path` is on that a user namespace may not
/// clear on remount (`nosuid`, `nodev`, `noexec`, the atime flags).
fn locked_flags(path: &Path) -> libc::c_ulong {
    let Ok(stat) = mount_flags_of(path) else { return 0 };
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs.iter().filter(|(st, _)| stat & st != 0).fold(0, |flags, (_, ms)| flags | ms)
}

/// The `statvfs` flags (`ST_*`) of the mount `path` is on.
fn mount_flags_of(path: &Path) -> std::io::Result<libc::c_ulong> {
    let path = CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: `path` is NUL-terminated; `stat` is written by the call.
    #[allow(unsafe_code)]
    unsafe {
        let mut stat: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut stat) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stat.f_flag)
    }
}

#[allow(unsafe_code)]
fn install(command: &mut tokio::process::Command, plan: Arc<ChildPlan>) {
    // SAFETY: `child::enter` is written for the forked child: raw system
    // calls on data the plan holds, no allocation, no lock (see its module).
    unsafe {
        command.pre_exec(move || child::enter(&plan));
    }
}

/// One command run in the sandbox: its temporary folder (removed on drop)
/// and what [`SandboxedCall::finish`] checks afterwards.
#[derive(Debug, Default)]
pub struct SandboxedCall {
    call_dir: Option<TempDir>,
    missing_protected: Vec<PathBuf>,
    refusals: Option<Refusals>,
}

impl SandboxedCall {
    /// Whether the command ran confined.
    pub fn confined(&self) -> bool {
        self.call_dir.is_some()
    }

    /// After the command ended: a protected name the command created in the
    /// workspace (which the sandbox cannot make read-only before it exists)
    /// is moved aside, so nothing it holds is lost and nothing reads it as
    /// configuration. Returns a note for each.
    pub fn finish(self) -> Vec<String> {
        let mut notes = Vec::new();
        for path in &self.missing_protected {
            if path.symlink_metadata().is_err() {
                continue;
            }
            let aside = set_aside_name(path);
            match std::fs::rename(path, &aside) {
                Ok(()) => notes.push(format!(
                    "[sandbox: the command created `{}`, a protected path; it was moved to `{}`. Protected paths \
                     change only through the file tools, which ask]",
                    path.display(),
                    aside.display()
                )),
                Err(error) => notes.push(format!(
                    "[sandbox: the command created `{}`, a protected path, and moving it aside failed: {error}]",
                    path.display()
                )),
            }
        }
        notes
    }

    /// A note for the result when the output shows the sandbox refusing
    /// something (a write, a read of a secret, the network).
    pub fn explain(&self, output: &str) -> Option<String> {
        self.refusals.as_ref().and_then(|refusals| refusals.explain(output))
    }
}

/// `NAME.blocked-by-sandbox`, or with a number when that exists.
fn set_aside_name(path: &Path) -> PathBuf {
    let base = path.as_os_str().to_owned();
    (0..1000)
        .map(|n| {
            let mut name = base.clone();
            name.push(if n == 0 {
                ".blocked-by-sandbox".to_owned()
            } else {
                format!(".blocked-by-sandbox.{n}")
            });
            PathBuf::from(name)
        })
        .find(|candidate| candidate.symlink_metadata().is_err())
        .unwrap_or_else(|| {
            let mut name = base;
            name.push(".blocked-by-sandbox.last");
            PathBuf::from(name)
        })
}
