//! The Landlock ruleset: reads everywhere, writes only beneath the
//! workspace (in `workspace-write`), the sandbox's temporary folder, the
//! configured roots and a few device files; with the network off, no TCP
//! bind or connect; signals and abstract Unix sockets scoped to the domain
//! (so a sandboxed process cannot signal bosun or reach its sockets).
//!
//! Built once per sandbox by the parent; children only call
//! `landlock_restrict_self` on its descriptor. Rights the running kernel
//! does not know are dropped (best effort), and the ABI it reports is kept
//! for the notice.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope, path_beneath_rules,
};

use crate::SandboxError;

/// The newest ABI this code asks for; older kernels get what they know.
const TARGET_ABI: ABI = ABI::V6;

/// Device files every program may write (and `ioctl`).
const WRITABLE_DEVICES: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/ptmx", "/dev/pts"];

/// What the ruleset lets a process write.
#[derive(Debug)]
pub(crate) struct Writable<'a> {
    pub(crate) roots: Vec<&'a Path>,
}

/// The kernel's Landlock ABI version, or `None` when Landlock is off.
pub(crate) fn kernel_abi() -> Option<i32> {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute and size
    // 0 only asks for the version; no memory is touched.
    #[allow(unsafe_code)]
    let version =
        unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    i32::try_from(version).ok().filter(|v| *v >= 1)
}

fn landlock_error(error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(error.to_string())
}

/// The ruleset's descriptor.
pub(crate) fn ruleset(writable: &Writable<'_>, network: bool) -> Result<OwnedFd, SandboxError> {
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(landlock_error)?
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(landlock_error)?;
    if !network {
        ruleset = ruleset.handle_access(AccessNet::from_all(TARGET_ABI)).map_err(landlock_error)?;
    }
    let mut created = ruleset.create().map_err(landlock_error)?;
    created = created
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(TARGET_ABI)))
        .map_err(landlock_error)?;
    let devices: Vec<PathBuf> =
        WRITABLE_DEVICES.iter().map(PathBuf::from).filter(|device| device.exists()).collect();
    created = created
        .add_rules(path_beneath_rules(&devices, AccessFs::from_all(TARGET_ABI)))
        .map_err(landlock_error)?;
    let roots: Vec<&Path> = writable.roots.iter().copied().filter(|root| root.exists()).collect();
    created = created
        .add_rules(path_beneath_rules(&roots, AccessFs::from_all(TARGET_ABI)))
        .map_err(landlock_error)?;
    Option::<OwnedFd>::from(created)
        .ok_or_else(|| SandboxError::Unsupported("Landlock is not enabled in this kernel".to_owned()))
}
