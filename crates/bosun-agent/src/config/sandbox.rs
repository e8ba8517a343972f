//! The `[sandbox]` table and `--sandbox`: what an OS sandbox around the
//! commands bosun runs may write, reach and read. Settings only: the sandbox
//! itself reads them from [`Settings::sandbox`](super::Settings::sandbox).
//!
//! Precedence: `--sandbox`, then the user's config, then a trusted
//! project's, then the default (`workspace-write`, no network). A project,
//! trusted or not, may always tighten (a stricter mode, `network = false`,
//! more `deny_read`); a trusted project's looser values apply only where the
//! user's own file set nothing, and an untrusted project's never do (its
//! `writable_roots` are ignored and named, invariant 20).

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Result, bail};
use serde::Deserialize;

/// How much a sandboxed command may write: the sandbox's own type, so the
/// two cannot drift apart.
pub use bosun_sandbox::SandboxMode;

/// The resolved sandbox settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    /// How much a sandboxed command may write.
    pub mode: SandboxMode,
    /// Whether a sandboxed command may reach the network.
    pub network: bool,
    /// Extra writable paths beside the workspace, absolute.
    pub writable_roots: Vec<PathBuf>,
    /// Extra secret paths hidden from sandboxed processes, absolute (`~`
    /// expanded once every layer is read).
    pub deny_read: Vec<PathBuf>,
}

/// `[sandbox]` as one layer writes it; what is unset keeps the value below.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SandboxLayer {
    /// `read-only`, `workspace-write` or `off`.
    pub mode: Option<SandboxMode>,
    /// Whether sandboxed commands may reach the network.
    pub network: Option<bool>,
    /// Extra writable paths, absolute; they replace a lower layer's.
    pub writable_roots: Option<Vec<PathBuf>>,
    /// Extra paths hidden from sandboxed processes, absolute or `~/…`;
    /// added to a lower layer's (hiding more only tightens).
    pub deny_read: Option<Vec<PathBuf>>,
}

impl SandboxLayer {
    /// Whether it sets nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl SandboxSettings {
    /// Applies one layer's table, checking its paths; `source` names the
    /// layer in errors.
    pub fn apply(&mut self, layer: &SandboxLayer, source: &dyn fmt::Display) -> Result<()> {
        let SandboxLayer { mode, network, writable_roots, deny_read } = layer;
        if let Some(mode) = mode {
            self.mode = *mode;
        }
        if let Some(network) = network {
            self.network = *network;
        }
        if let Some(roots) = writable_roots {
            for root in roots {
                if !root.is_absolute() {
                    bail!(
                        "sandbox.writable_roots entry `{}`, from {source}, is not an absolute path",
                        root.display()
                    );
                }
            }
            self.writable_roots = roots.clone();
        }
        for path in deny_read.iter().flatten() {
            if !(path.is_absolute() || path.starts_with("~")) || is_other_users_home(path) {
                bail!(
                    "sandbox.deny_read entry `{}`, from {source}, is not an absolute path or one under ~/",
                    path.display()
                );
            }
            if !self.deny_read.contains(path) {
                self.deny_read.push(path.clone());
            }
        }
        Ok(())
    }

    /// Expands `~` in `deny_read` to `home`, once every layer is applied.
    pub fn expand_home(&mut self, home: Option<&str>) -> Result<()> {
        for path in &mut self.deny_read {
            let Ok(rest) = path.strip_prefix("~") else { continue };
            let Some(home) = home.filter(|h| Path::new(h).is_absolute()) else {
                bail!("sandbox.deny_read entry `{}` needs HOME set to an absolute path", path.display());
            };
            *path = Path::new(home).join(rest);
        }
        let mut seen = Vec::new();
        self.deny_read.retain(|p| {
            let new = !seen.contains(p);
            seen.push(p.clone());
            new
        });
        Ok(())
    }
}

/// `~user/…`: another user's home, which bosun does not look up.
fn is_other_users_home(path: &Path) -> bool {
    path.to_str().is_some_and(|text| text.starts_with('~') && !(text == "~" || text.starts_with("~/")))
}

/// The part of a project's `[sandbox]` that applies, naming in `ignored`
/// what does not. `user` is the user's own file's table (what it set wins
/// over a trusted project's looser value); `before` the settings in effect.
pub fn gate(
    layer: &SandboxLayer,
    trusted: bool,
    user: Option<&SandboxLayer>,
    before: &SandboxSettings,
    ignored: &mut Vec<String>,
) -> SandboxLayer {
    let SandboxLayer { mode, network, writable_roots, deny_read } = layer;
    let user = user.cloned().unwrap_or_default();
    // A looser value is the project's only where the user left it unset,
    // and only in a trusted project.
    let loosening_allowed = |user_set: bool| trusted && !user_set;
    // The notice already says when the project is untrusted.
    let whose = |user_set: bool| if trusted && user_set { " (your own config sets it)" } else { "" };
    let mode = match mode {
        Some(mode) if mode.looser_than(before.mode) && !loosening_allowed(user.mode.is_some()) => {
            ignored.push(format!(
                "sandbox.mode = \"{mode}\" (looser than {}){}",
                before.mode,
                whose(user.mode.is_some())
            ));
            None
        }
        other => *other,
    };
    let network = match network {
        Some(true) if !before.network && !loosening_allowed(user.network.is_some()) => {
            ignored.push(format!("sandbox.network = true{}", whose(user.network.is_some())));
            None
        }
        other => *other,
    };
    let writable_roots = match writable_roots {
        Some(_) if !loosening_allowed(user.writable_roots.is_some()) => {
            ignored.push(format!("sandbox.writable_roots{}", whose(user.writable_roots.is_some())));
            None
        }
        other => other.clone(),
    };
    SandboxLayer { mode, network, writable_roots, deny_read: deny_read.clone() }
}

#[cfg(test)]
mod tests {
    use super::super::{Env, resolve};
    use super::*;
    use crate::config::Overrides;
    use crate::config::tests::write;

    /// A home with `user` as its config (trusting the project when
    /// `trusted`), a project with `project` as its config.
    fn settings(
        user: &str,
        project: Option<&str>,
        trusted: bool,
        flag: Option<SandboxMode>,
    ) -> Result<SandboxSettings> {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let trust = if trusted {
            format!("[projects.\"{}\"]\ntrust_level = \"trusted\"\n", root.display())
        } else {
            String::new()
        };
        write(home.path(), ".config/bosun/config.toml", &format!("{trust}{user}"));
        if let Some(project) = project {
            write(&root, ".bosun/config.toml", project);
        }
        let home_var = home.path().display().to_string();
        let flags = Overrides { sandbox: flag, ..Overrides::default() };
        Ok(resolve(&root, &Env::from_pairs(&[("HOME", &home_var)]), None, &flags)?.sandbox)
    }

    #[test]
    fn the_default_is_workspace_write_without_network() {
        let sandbox = settings("", None, false, None).unwrap();
        assert_eq!(sandbox, SandboxSettings::default());
        assert_eq!((sandbox.mode, sandbox.network), (SandboxMode::WorkspaceWrite, false));
    }

    #[test]
    fn the_flag_wins_over_the_user_who_wins_over_a_trusted_projects_looser_values() {
        let user = "[sandbox]\nmode = \"read-only\"\nwritable_roots = [\"/srv/mine\"]\n";
        let project = "[sandbox]\nmode = \"off\"\nnetwork = true\nwritable_roots = [\"/srv/theirs\"]\n";
        let trusted = settings(user, Some(project), true, None).unwrap();
        assert_eq!(trusted.mode, SandboxMode::ReadOnly, "the user's mode over the trusted project's");
        assert_eq!(trusted.writable_roots, [PathBuf::from("/srv/mine")]);
        assert!(trusted.network, "the user left network unset: the trusted project's applies");

        let unset = settings("", Some(project), true, None).unwrap();
        assert_eq!((unset.mode, unset.network), (SandboxMode::Off, true), "trusted, user unset: applies");
        assert_eq!(unset.writable_roots, [PathBuf::from("/srv/theirs")]);

        let flagged = settings(user, Some(project), true, Some(SandboxMode::Off)).unwrap();
        assert_eq!(flagged.mode, SandboxMode::Off, "the flag over every file");
        let flagged =
            settings("", Some("[sandbox]\nmode = \"read-only\"\n"), false, Some(SandboxMode::WorkspaceWrite));
        assert_eq!(flagged.unwrap().mode, SandboxMode::WorkspaceWrite);
    }

    #[test]
    fn invariant_20_an_untrusted_project_may_only_tighten_the_sandbox() {
        let user = "[sandbox]\nmode = \"off\"\nnetwork = true\ndeny_read = [\"/etc/mine\"]\n";
        let tighter = "[sandbox]\nmode = \"read-only\"\nnetwork = false\ndeny_read = [\"~/.secrets\"]\n";
        let sandbox = settings(user, Some(tighter), false, None).unwrap();
        assert_eq!((sandbox.mode, sandbox.network), (SandboxMode::ReadOnly, false));
        assert_eq!(sandbox.deny_read.len(), 2, "added to the user's: {:?}", sandbox.deny_read);
        assert!(sandbox.deny_read[1].is_absolute() && sandbox.deny_read[1].ends_with(".secrets"));

        let looser = "[sandbox]\nmode = \"off\"\nnetwork = true\nwritable_roots = [\"/\"]\n";
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        write(dir.path(), ".bosun/config.toml", looser);
        let home_var = home.path().display().to_string();
        let all = resolve(dir.path(), &Env::from_pairs(&[("HOME", &home_var)]), None, &Overrides::default())
            .unwrap();
        assert_eq!(all.sandbox, SandboxSettings::default(), "nothing looser applies");
        let ignored = &all.project.as_ref().unwrap().ignored;
        for key in [
            "sandbox.mode = \"off\" (looser than workspace-write)",
            "sandbox.network = true",
            "sandbox.writable_roots",
        ] {
            assert!(ignored.iter().any(|i| i == key), "{key} not in {ignored:?}");
        }
    }

    #[test]
    fn relative_paths_are_errors_naming_the_entry() {
        for (table, entry) in [
            ("writable_roots = [\"/ok\", \"build/out\"]", "sandbox.writable_roots entry `build/out`"),
            ("writable_roots = [\"~/out\"]", "sandbox.writable_roots entry `~/out`"),
            ("deny_read = [\"secrets\"]", "sandbox.deny_read entry `secrets`"),
            ("deny_read = [\"~root/x\"]", "sandbox.deny_read entry `~root/x`"),
        ] {
            let error =
                format!("{:#}", settings(&format!("[sandbox]\n{table}\n"), None, false, None).unwrap_err());
            assert!(error.contains(entry) && error.contains("config.toml"), "{table}: {error}");
        }
        let error = settings("[sandbox]\nmode = \"loose\"\n", None, false, None).unwrap_err();
        assert!(format!("{error:#}").contains("sandbox.mode"), "{error:#}");
    }
}
