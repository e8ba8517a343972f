//! Link settings of the `bosun` binary.
//!
//! With `dynamic-backends`, llama.cpp is a set of shared libraries: the
//! binary looks for them beside itself, so a packaged build is one directory
//! that can move (scripts/build-portable).
//!
//! Where the linker is LLD (Rust's own on x86_64 Linux since 1.90), the
//! functions a hosted run executes (`startup-order.txt`, written by
//! `scripts/bench-footprint --write-order`) are laid out together, and
//! relative relocations are packed (DT_RELR, glibc 2.36 and later): a run
//! then maps a few MB of the binary instead of pieces of every page of it
//! (docs/benchmarks.md). Anything else links as before: the flags are only
//! given where they are known to be understood.

use std::path::Path;
use std::process::Command;

const ORDER: &str = "startup-order.txt";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={ORDER}");
    for variable in ["RUSTC_LINKER", "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER", "BOSUN_NO_LINK_LAYOUT"] {
        println!("cargo:rerun-if-env-changed={variable}");
    }
    if std::env::var_os("CARGO_FEATURE_DYNAMIC_BACKENDS").is_some() {
        match std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
            Ok("macos") => println!("cargo:rustc-link-arg-bins=-Wl,-rpath,@executable_path"),
            Ok("windows") => {} // DLLs are found beside the executable anyway.
            _ => println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN"),
        }
    }
    if links_with_rust_lld() {
        let order = Path::new(env("CARGO_MANIFEST_DIR").as_str()).join(ORDER);
        if order.is_file() {
            println!("cargo:rustc-link-arg-bin=bosun=-Wl,--symbol-ordering-file={}", order.display());
            // Names of functions changed since the file was written are
            // expected, and harmless.
            println!("cargo:rustc-link-arg-bin=bosun=-Wl,--no-warn-symbol-ordering");
        }
        if host_glibc_at_least(2, 36) {
            println!("cargo:rustc-link-arg-bin=bosun=-Wl,-z,pack-relative-relocs");
        }
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

/// Whether this build links with the LLD that rustc brings: the default for
/// x86_64-unknown-linux-gnu from Rust 1.90 on, unless a linker is chosen.
fn links_with_rust_lld() -> bool {
    if std::env::var_os("BOSUN_NO_LINK_LAYOUT").is_some() {
        return false;
    }
    let target = env("TARGET");
    if target != "x86_64-unknown-linux-gnu" || env("HOST") != target {
        return false;
    }
    if std::env::var_os("RUSTC_LINKER").is_some()
        || std::env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
    {
        return false;
    }
    let flags = env("CARGO_ENCODED_RUSTFLAGS");
    if ["linker", "fuse-ld", "link-self-contained"].iter().any(|chosen| flags.contains(chosen)) {
        return false;
    }
    rustc_minor().is_some_and(|minor| minor >= 90)
}

/// The minor version of the rustc this build uses (`1.95.0` is 95).
fn rustc_minor() -> Option<u32> {
    let output = Command::new(env("RUSTC")).arg("-vV").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let release = text.lines().find_map(|line| line.strip_prefix("release: "))?;
    let mut parts = release.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}

/// Whether the C library here (where the binary is built, and in the usual
/// case run) understands packed relative relocations.
fn host_glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(output) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else { return false };
    let text = String::from_utf8_lossy(&output.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else { return false };
    let mut parts = version.split('.').map(|part| part.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
}
