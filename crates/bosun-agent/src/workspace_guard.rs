//! Which folder bosun may work in: never `/` or the user's home folder
//! unless told (`--allow-any-workspace`, [`crate::config::Overrides`]),
//! since every file beneath would be the agent's to read and change; and a
//! word of advice when the workspace is not inside a version-controlled
//! tree, where nothing bosun changes can be reviewed or undone with git.

use std::path::{Path, PathBuf};

use crate::config::Env;
use crate::error::{Result, bail};

/// `given` as a workspace a caller (another program, over `bosun serve` or
/// `bosun mcp-server`) named, when it is an absolute path to a folder
/// inside one of `roots` (canonical paths): its canonical path. `..` and
/// links are resolved first, so neither leads out.
///
/// # Errors
/// A message naming the path and why it is refused.
pub fn inside_roots(given: &str, roots: &[PathBuf]) -> std::result::Result<PathBuf, String> {
    let path = Path::new(given);
    if !path.is_absolute() {
        return Err(format!("the workspace `{given}` is not an absolute path"));
    }
    let real = path.canonicalize().map_err(|e| format!("the workspace `{given}`: {e}"))?;
    if !real.is_dir() {
        return Err(format!("the workspace `{given}` is not a folder"));
    }
    if roots.iter().any(|root| real.starts_with(root)) {
        Ok(real)
    } else {
        Err(format!("the workspace `{given}` is not under a folder the user allowed (--allow-root DIR)"))
    }
}

/// Checks `dir` as a workspace: an error for `/` or the home folder (from
/// `env`'s `HOME`) unless `allow_any`; otherwise the advice to give when no
/// `.git` is found in it or any folder above it.
///
/// # Errors
/// [`crate::Error::Invalid`] naming the folder and the flag that allows it.
pub fn check(dir: &Path, env: &Env, allow_any: bool) -> Result<Option<String>> {
    let dir = canonical(dir);
    if !allow_any {
        let home = env.get("HOME").filter(|h| !h.is_empty()).map(|h| canonical(Path::new(h)));
        let what = if dir.parent().is_none() {
            Some("the root of the file system")
        } else if home.as_deref() == Some(dir.as_path()) {
            Some("your home folder")
        } else {
            None
        };
        if let Some(what) = what {
            bail!(
                "bosun will not use {} as the workspace: it is {what}, and every file beneath it would be the \
                 agent's to read and change; run bosun in a project's folder (`-C DIR`), or pass \
                 --allow-any-workspace to use it anyway",
                dir.display()
            );
        }
    }
    let versioned = dir.ancestors().any(|folder| std::fs::symlink_metadata(folder.join(".git")).is_ok());
    Ok((!versioned).then(|| {
        format!(
            "{} is not inside a version-controlled tree, with no .git in it or above it, so what bosun \
             changes here can only be reviewed and undone by hand",
            dir.display()
        )
    }))
}

/// `path` with symlinks resolved, or as given when it cannot be.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn env_with_home(home: &Path) -> Env {
        Env::from_pairs(&[("HOME", home.to_str().unwrap())])
    }

    #[test]
    fn the_root_and_the_home_folder_are_refused_unless_allowed() {
        let home = tempfile::tempdir().unwrap();
        let env = env_with_home(home.path());
        for dir in [Path::new("/"), home.path()] {
            let error = check(dir, &env, false).unwrap_err().to_string();
            assert!(error.contains("--allow-any-workspace"), "{error}");
            assert!(error.contains(&canonical(dir).display().to_string()), "{error}");
            assert!(check(dir, &env, true).is_ok());
        }
        // The home folder through a symlink is the home folder.
        let link = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(home.path(), link.path().join("home")).unwrap();
        assert!(check(&link.path().join("home"), &env, false).is_err());
        // A folder inside the home folder is a project's.
        std::fs::create_dir(home.path().join("project")).unwrap();
        assert!(check(&home.path().join("project"), &env, false).is_ok());
    }

    #[test]
    fn a_workspace_outside_version_control_gets_advice() {
        let root = tempfile::tempdir().unwrap();
        let env = Env::default();
        let plain = root.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        let advice = check(&plain, &env, false).unwrap().expect("advice");
        assert!(advice.contains("not inside a version-controlled tree"), "{advice}");
        // A .git (a folder, or a worktree's file) in it or above it.
        let repo = root.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        assert_eq!(check(&repo.join("src/deep"), &env, false).unwrap(), None);
        std::fs::write(plain.join(".git"), "gitdir: /elsewhere\n").unwrap();
        assert_eq!(check(&plain, &env, false).unwrap(), None);
    }
}
