//! What runs in the forked child before `exec`: namespaces, mounts, the
//! Landlock domain and the seccomp filters.
//!
//! Everything here runs between `fork` and `exec` of a multi-threaded
//! process, where only async-signal-safe work is allowed: no allocation, no
//! lock, no formatting. So every path, map line and BPF program is built
//! beforehand by the parent ([`ChildPlan`]), and the child makes raw system
//! calls only, returning bare OS error codes.
//!
//! The order, in the child `std` forked (call it C):
//! 1. the parent-death signal (`SIGKILL`), so nothing outlives bosun;
//! 2. with namespaces: `unshare` a user, mount, PID (and, network off, a
//!    network) namespace; map the user's own uid and gid; make every mount
//!    private; bind the protected paths read-only and hide the secrets;
//! 3. with namespaces: fork again. C stays behind as a waiter that never
//!    execs (it mirrors the grandchild's exit status, so the caller's pid and
//!    process group work as before); the grandchild is PID 1 of the new PID
//!    namespace, so when it ends, or C dies and its parent-death signal kills
//!    it, the kernel kills every process left in the namespace, including
//!    one that `setsid`ed away. It starts a new session (no controlling
//!    terminal: no `/dev/tty` to read the user's keys from), mounts its own
//!    `/proc` and puts the call's temporary folder on `/tmp`;
//! 4. `PR_SET_NO_NEW_PRIVS`, the Landlock domain, the seccomp filters; then
//!    `exec`.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use seccompiler::BpfProgram;

/// One `mount(2)` call.
#[derive(Debug)]
pub(crate) struct MountOp {
    pub(crate) source: Option<CString>,
    pub(crate) target: CString,
    pub(crate) fstype: Option<CString>,
    pub(crate) flags: libc::c_ulong,
    pub(crate) data: Option<CString>,
    /// A failure stops the spawn; otherwise it is ignored (a `/proc` that
    /// cannot be mounted afresh leaves the old one, still guarded by
    /// Landlock and seccomp).
    pub(crate) required: bool,
}

impl MountOp {
    pub(crate) fn bind(source: CString, target: CString) -> Self {
        Self {
            source: Some(source),
            target,
            fstype: None,
            flags: libc::MS_BIND | libc::MS_REC,
            data: None,
            required: true,
        }
    }

    /// Makes the bind mount at `target` read-only, keeping the flags the
    /// kernel locks in a user namespace (`locked`, read from the mount the
    /// path was on).
    pub(crate) fn remount_read_only(target: CString, locked: libc::c_ulong) -> Self {
        Self {
            source: None,
            target,
            fstype: None,
            flags: libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | locked,
            data: None,
            required: true,
        }
    }
}

/// The namespaces part of a plan.
#[derive(Debug)]
pub(crate) struct Namespaces {
    pub(crate) unshare_flags: libc::c_int,
    /// `"UID UID 1\n"`: the user keeps its own id inside.
    pub(crate) uid_map: Vec<u8>,
    pub(crate) gid_map: Vec<u8>,
    /// In the new mount namespace, before the second fork.
    pub(crate) mounts: Vec<MountOp>,
    /// In the grandchild (PID 1 of the new PID namespace).
    pub(crate) mounts_as_init: Vec<MountOp>,
}

/// Everything the child needs, prepared by the parent.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    /// bosun's pid: a child whose parent already changed was orphaned before
    /// the parent-death signal was armed.
    pub(crate) parent: libc::pid_t,
    pub(crate) namespaces: Option<Namespaces>,
    /// The Landlock ruleset (closed when the command is dropped).
    pub(crate) landlock: Option<OwnedFd>,
    pub(crate) seccomp: Vec<BpfProgram>,
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result == -1 { Err(last_error()) } else { Ok(()) }
}

/// Writes `bytes` to the file at `path` (a `/proc` file: one write).
///
/// SAFETY (of the unsafe block): `path` is NUL-terminated, `bytes` lives
/// for the call; open, write and close are async-signal-safe.
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(last_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let error = if written < 0 { Some(last_error()) } else { None };
        libc::close(fd);
        match error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

fn mount(op: &MountOp) -> io::Result<()> {
    let pointer = |text: &Option<CString>| text.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
    // SAFETY: every pointer is NULL or a NUL-terminated string owned by the
    // plan, which outlives the call.
    let result = unsafe {
        libc::mount(
            pointer(&op.source),
            op.target.as_ptr(),
            pointer(&op.fstype),
            op.flags,
            pointer(&op.data).cast(),
        )
    };
    match check(result) {
        Err(error) if op.required => Err(error),
        _ => Ok(()),
    }
}

fn make_mounts_private() -> io::Result<()> {
    // SAFETY: static NUL-terminated target; null source, type and data.
    check(unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    })
}

/// Sets the parent-death signal and checks the parent did not die first.
fn die_with_parent(expected_parent: Option<libc::pid_t>) -> io::Result<()> {
    // SAFETY: prctl and getppid are async-signal-safe system calls.
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
        if let Some(parent) = expected_parent
            && libc::getppid() != parent
        {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

/// Runs in the forked child; see the module comment. Returns in the process
/// that goes on to `exec`.
pub(crate) fn enter(plan: &ChildPlan) -> io::Result<()> {
    die_with_parent(Some(plan.parent))?;
    if let Some(namespaces) = &plan.namespaces {
        enter_namespaces(namespaces)?;
    }
    restrict(plan)
}

fn enter_namespaces(namespaces: &Namespaces) -> io::Result<()> {
    // SAFETY: unshare is an async-signal-safe system call.
    check(unsafe { libc::unshare(namespaces.unshare_flags) })?;
    // The kernel refuses a gid map from an unprivileged process until
    // setgroups is denied; root may skip it, but denying costs nothing.
    let _ = write_file(c"/proc/self/setgroups", b"deny");
    write_file(c"/proc/self/uid_map", &namespaces.uid_map)?;
    write_file(c"/proc/self/gid_map", &namespaces.gid_map)?;
    // Nothing done here may propagate back to the host's mounts.
    make_mounts_private()?;
    for op in &namespaces.mounts {
        mount(op)?;
    }
    // SAFETY: fork in a single-threaded child is async-signal-safe.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(last_error());
    }
    if pid > 0 {
        wait_and_mirror(pid);
    }
    // The grandchild: PID 1 of the new namespace.
    die_with_parent(None)?;
    // SAFETY: setsid is async-signal-safe; this process leads no group.
    check(unsafe { libc::setsid() })?;
    for op in &namespaces.mounts_as_init {
        mount(op)?;
    }
    Ok(())
}

/// The waiter left behind by the second fork: never returns, never execs.
fn wait_and_mirror(child: libc::pid_t) -> ! {
    // SAFETY: only async-signal-safe system calls follow; `_exit` runs no
    // destructor or atexit handler of the parent's copy.
    unsafe {
        // The caller reads `std`'s error pipe (and the child's output) to
        // its end: this process must not hold them open, or a spawn would
        // only return when the command ends.
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        // Handlers inherited from bosun (tokio's) would swallow a SIGTERM
        // meant to end the call; the default action ends this process, and
        // with it, by the parent-death signal, the whole namespace.
        for signal in 1..32 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP && signal != libc::SIGCHLD {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        let mut status: libc::c_int = 0;
        loop {
            let reaped = libc::waitpid(child, &mut status, 0);
            if reaped == child {
                break;
            }
            if reaped < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            let mut unblock: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut unblock);
            libc::sigaddset(&mut unblock, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &unblock, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(127)
    }
}

fn restrict(plan: &ChildPlan) -> io::Result<()> {
    if plan.landlock.is_none() && plan.seccomp.is_empty() {
        // Unconfined (`--sandbox off`): no-new-privs would break `sudo`.
        return Ok(());
    }
    // SAFETY: prctl and the Landlock system call are async-signal-safe; the
    // ruleset descriptor is open (the sandbox holds it for its lifetime).
    unsafe {
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        if let Some(ruleset) = &plan.landlock
            && libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) != 0
        {
            return Err(last_error());
        }
    }
    for program in &plan.seccomp {
        // `apply_filter` makes two system calls and builds its error from
        // the OS error alone.
        if seccompiler::apply_filter(program).is_err() {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
    }
    Ok(())
}

/// What the probe's child needs, in memory it shares with its parent.
struct ProbeArgs<'a> {
    uid_map: &'a [u8],
    gid_map: &'a [u8],
}

extern "C" fn probe_child(args: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `args` is the `ProbeArgs` `namespaces_work` passed, alive
    // while this child runs (the parent is suspended until it exits).
    let args = unsafe { &*args.cast::<ProbeArgs<'_>>() };
    let ok = {
        let _ = write_file(c"/proc/self/setgroups", b"deny");
        write_file(c"/proc/self/uid_map", args.uid_map).is_ok()
    } && write_file(c"/proc/self/gid_map", args.gid_map).is_ok()
        && make_mounts_private().is_ok();
    // SAFETY: leaves without running anything of the parent's.
    unsafe { libc::_exit(if ok { 0 } else { 1 }) }
}

/// Whether this kernel lets this process make the namespaces the sandbox
/// uses: tried in a child made in them that exits at once. The child
/// shares the parent's memory (`CLONE_VM | CLONE_VFORK`, the calling thread
/// suspended until it exits) rather than being forked: a fork would copy
/// the page tables and leave every page the other threads then write to
/// be copied, while start-up goes on beside the probe.
pub(crate) fn namespaces_work(unshare_flags: libc::c_int, uid_map: &[u8], gid_map: &[u8]) -> bool {
    const STACK: usize = 64 * 1024;
    let mut stack = vec![0u8; STACK];
    let mut args = ProbeArgs { uid_map, gid_map };
    let flags = unshare_flags | libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
    // SAFETY: the child runs `probe_child` on its own stack (the top of
    // `stack`, which outlives it), makes system calls only, touches no
    // memory but its arguments and its stack, and leaves by `_exit`; the
    // parent reaps it.
    unsafe {
        // The ABI wants the stack's top 16-byte aligned.
        let end = stack.as_mut_ptr().add(STACK);
        let top = end.wrapping_sub(end as usize % 16).cast::<libc::c_void>();
        let pid = libc::clone(probe_child, top, flags, (&raw mut args).cast());
        if pid < 0 {
            return false;
        }
        let mut status: libc::c_int = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 {
            if *libc::__errno_location() != libc::EINTR {
                return false;
            }
        }
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }
}
