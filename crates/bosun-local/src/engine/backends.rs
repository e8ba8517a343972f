//! Which llama.cpp backends the process runs on.
//!
//! A default build links llama.cpp's CPU code statically, compiled for one
//! portable instruction-set level (x86-64 with AVX2, no AVX-512), so a CPU
//! with more leaves speed unused. The `dynamic-backends` feature builds ggml
//! as shared libraries instead, with the CPU code once per level
//! (`libggml-cpu-haswell.so`, `libggml-cpu-icelake.so`, …) and any GPU
//! backend as a module of its own: ggml scores every variant against the
//! running CPU and loads the best one, so one binary is fast everywhere.
//!
//! The modules are code loaded into bosun, so where they may come from is
//! fixed here: beside the executable (a packaged build, see
//! `scripts/build-portable`), then the directory the build installed them to.
//! Never the current directory, which ggml searches when given no path and
//! which is the user's workspace: a repository could plant a library there.

use std::path::{Path, PathBuf};

/// A compute device llama.cpp found, for logs and `bosun models`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Device {
    /// The backend it belongs to (`CPU`, `CUDA`, `Vulkan`, `Metal`).
    pub backend: String,
    /// Its description (the CPU or GPU model).
    pub description: String,
    /// Whether it is a GPU (discrete or integrated) or another accelerator.
    pub accelerator: bool,
    /// For the CPU of a `dynamic-backends` build, the module ggml chose
    /// (`libggml-cpu-icelake.so`): which instruction sets the code uses.
    pub module: Option<String>,
}

/// The devices llama.cpp has registered (none before [`load`] in a
/// `dynamic-backends` build).
pub(crate) fn list() -> Vec<Device> {
    use llama_cpp_2::LlamaBackendDeviceType as Kind;
    let cpu_module = mapped_cpu_module();
    llama_cpp_2::list_llama_ggml_backend_devices()
        .into_iter()
        .map(|d| {
            let cpu = d.device_type == Kind::Cpu;
            Device {
                module: cpu.then(|| cpu_module.clone()).flatten(),
                backend: d.backend,
                description: d.description,
                accelerator: !matches!(d.device_type, Kind::Cpu | Kind::Unknown),
            }
        })
        .collect()
}

/// The CPU module mapped into this process, read from `/proc/self/maps`:
/// ggml does not say which variant won, but the loader does.
fn mapped_cpu_module() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.rsplit('/').next())
        .find(|name| name.starts_with("libggml-cpu-") && name.ends_with(".so"))
        .map(str::to_owned)
}

/// Where backend modules may be loaded from, in order: `exe_dir` first,
/// then the build's own directory. Only directories that hold a CPU
/// module count, so a packaged binary is not shadowed by the build tree.
#[cfg_attr(not(feature = "dynamic-backends"), allow(dead_code))]
pub(crate) fn search_dirs(exe_dir: Option<&Path>, built: Option<&Path>) -> Vec<PathBuf> {
    exe_dir.into_iter().chain(built).filter(|dir| holds_cpu_module(dir)).map(Path::to_path_buf).collect()
}

#[cfg_attr(not(feature = "dynamic-backends"), allow(dead_code))]
fn holds_cpu_module(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        name.starts_with("libggml-cpu") || name.starts_with("ggml-cpu")
    })
}

/// Loads the backend modules once, before llama.cpp starts. A no-op in a
/// build without `dynamic-backends`, whose backends are linked in.
#[cfg(feature = "dynamic-backends")]
pub(crate) fn load() -> Result<(), String> {
    let exe = std::env::current_exe().ok();
    let exe_dir = exe.as_deref().and_then(Path::parent);
    let built = llama_cpp_sys_2::BACKENDS_DIR.map(Path::new);
    let dirs = search_dirs(exe_dir, built);
    let Some(dir) = dirs.first() else {
        let looked: Vec<String> = exe_dir.into_iter().chain(built).map(|d| d.display().to_string()).collect();
        return Err(format!(
            "no llama.cpp CPU backend (libggml-cpu-*.so) found in {}; a `dynamic-backends` build \
             needs them beside the bosun binary (scripts/build-portable puts them there)",
            looked.join(" or ")
        ));
    };
    // `load_backends_from_path` takes UTF-8 without NUL; refuse other paths
    // here rather than let it panic.
    match dir.to_str() {
        Some(text) if !text.contains('\0') => {}
        _ => return Err(format!("the backend directory {} is not a UTF-8 path", dir.display())),
    }
    llama_cpp_2::llama_backend::load_backends_from_path(dir);
    if !list().iter().any(|d| d.backend.eq_ignore_ascii_case("cpu")) {
        return Err(format!("llama.cpp loaded no CPU backend from {}", dir.display()));
    }
    tracing::debug!(dir = %dir.display(), "llama.cpp backends loaded");
    Ok(())
}

#[cfg(not(feature = "dynamic-backends"))]
pub(crate) fn load() -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_modules_load_only_from_beside_the_binary_or_the_build_never_the_workspace() {
        let exe = tempfile::tempdir().unwrap();
        let built = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("libggml-cpu-evil.so"), b"").unwrap();
        std::fs::write(built.path().join("libggml-cpu-haswell.so"), b"").unwrap();

        // The workspace is never a candidate, whatever it holds.
        let dirs = search_dirs(Some(exe.path()), Some(built.path()));
        assert_eq!(dirs, vec![built.path().to_path_buf()], "an empty exe dir is skipped");

        std::fs::write(exe.path().join("libggml-cpu-icelake.so"), b"").unwrap();
        let dirs = search_dirs(Some(exe.path()), Some(built.path()));
        assert_eq!(dirs, vec![exe.path().to_path_buf(), built.path().to_path_buf()]);
        assert!(search_dirs(None, None).is_empty());
    }

    #[test]
    fn a_build_always_has_a_cpu_device() {
        load().unwrap();
        assert!(list().iter().any(|d| d.backend.eq_ignore_ascii_case("cpu")), "{:?}", list());
    }
}
