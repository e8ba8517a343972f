//! The seccomp filters: system calls a sandboxed process never needs and
//! that reach past the file-system and namespace boundary.
//!
//! Refused with `EPERM`: debugging another process (`ptrace`,
//! `process_vm_readv`/`writev`), changing mounts and namespaces (`mount`,
//! `umount2`, `pivot_root`, the new mount API, `unshare`, `setns`, `clone`
//! with namespace flags), loading kernel code or filters (`init_module`,
//! `kexec_load`, `bpf`, `perf_event_open`), the keyring, `userfaultfd`,
//! `io_uring` (its operations skip these filters), file handles
//! (`open_by_handle_at` opens any inode of a mounted file system), and the
//! terminal-injection `ioctl`s (`TIOCSTI`, `TIOCLINUX`) that would type into
//! bosun's own terminal. With the network off, `socket` for the internet
//! and packet families is refused too (Unix sockets stay: many programs
//! talk to themselves over them).
//!
//! `clone3` answers `ENOSYS` (a second filter): its flags sit in a struct
//! seccomp cannot read, and libc falls back to `clone`, whose flags it can.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use crate::SandboxError;

/// Refused outright.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_syslog,
    libc::SYS_acct,
    libc::SYS_quotactl,
];

/// The namespace flags `clone` may not carry.
const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

/// Socket families refused with the network off.
const NETWORK_FAMILIES: &[libc::c_int] = &[libc::AF_INET, libc::AF_INET6, libc::AF_PACKET];

fn arch() -> Result<TargetArch, SandboxError> {
    std::env::consts::ARCH
        .try_into()
        .map_err(|_| SandboxError::Seccomp(format!("no seccomp filter for {}", std::env::consts::ARCH)))
}

fn condition(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, SandboxError> {
    SeccompCondition::new(index, SeccompCmpArgLen::Qword, op, value).map_err(seccomp_error)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, SandboxError> {
    SeccompRule::new(conditions).map_err(seccomp_error)
}

fn seccomp_error(error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Seccomp(error.to_string())
}

/// The two programs, installed in order.
pub(crate) fn programs(network: bool) -> Result<Vec<BpfProgram>, SandboxError> {
    let arch = arch()?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED.iter().map(|call| (*call, Vec::new())).collect();
    // One rule per flag (rules are alternatives): `flags & FLAG == FLAG`.
    let namespace_rules = NAMESPACE_FLAGS
        .iter()
        .map(|flag| rule(vec![condition(0, SeccompCmpOp::MaskedEq(*flag), *flag)?]))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, namespace_rules);
    rules.insert(
        libc::SYS_ioctl,
        vec![
            rule(vec![condition(1, SeccompCmpOp::MaskedEq(0xffff_ffff), libc::TIOCSTI)?])?,
            rule(vec![condition(1, SeccompCmpOp::MaskedEq(0xffff_ffff), libc::TIOCLINUX)?])?,
        ],
    );
    if !network {
        let families = NETWORK_FAMILIES
            .iter()
            .map(|family| rule(vec![condition(0, SeccompCmpOp::MaskedEq(0xffff_ffff), *family as u64)?]))
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(libc::SYS_socket, families);
    }
    let denied =
        SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
            .map_err(seccomp_error)?;
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(seccomp_error)?;
    Ok(vec![
        BpfProgram::try_from(clone3).map_err(seccomp_error)?,
        BpfProgram::try_from(denied).map_err(seccomp_error)?,
    ])
}
