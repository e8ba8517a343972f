//! An `LD_PRELOAD` library for `tests/it/durability.rs`: logs every `fsync` and
//! `fdatasync` the process makes, with the path of the file synced, to the
//! file named by `BOSUN_FSYNC_LOG`, then makes the real call. Built by the
//! test with `rustc`; it is not part of any crate.

use std::ffi::{c_char, c_int, c_void};
use std::io::Write;

type SyncFn = unsafe extern "C" fn(c_int) -> c_int;

unsafe extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// glibc's `RTLD_NEXT`: the next definition after this library's.
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

fn log(call: &str, fd: c_int) {
    let Some(path) = std::env::var_os("BOSUN_FSYNC_LOG") else { return };
    let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap_or_default();
    if let Ok(mut file) = std::fs::OpenOptions::new().append(true).create(true).open(path) {
        // One write per line: O_APPEND keeps lines from several threads whole.
        let _ = file.write_all(format!("{call} {}\n", target.display()).as_bytes());
    }
}

unsafe fn real(name: &[u8]) -> Option<SyncFn> {
    // SAFETY: `name` is NUL-terminated; dlsym returns the address of a
    // function with this C signature, or null.
    let address = unsafe { dlsym(RTLD_NEXT, name.as_ptr().cast()) };
    // SAFETY: a non-null address from dlsym for these names is the libc
    // function of type `SyncFn`.
    (!address.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, SyncFn>(address) })
}

/// # Safety
/// Called by C code as `fsync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    log("fsync", fd);
    // SAFETY: forwarding to libc's own fsync.
    unsafe { real(b"fsync\0").map_or(-1, |f| f(fd)) }
}

/// # Safety
/// Called by C code as `fdatasync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    log("fdatasync", fd);
    // SAFETY: forwarding to libc's own fdatasync.
    unsafe { real(b"fdatasync\0").map_or(-1, |f| f(fd)) }
}
