//! Where the database lives by default: `$BOSUN_HOME/sessions.db`, else
//! `$XDG_DATA_HOME/bosun/sessions.db`, else `~/.local/share/bosun/sessions.db`.
//! The values come from the caller, so this crate reads no environment.

use std::path::PathBuf;

/// The default database path, from a lookup of environment values
/// (`|name| std::env::var(name).ok()` in a program). `None` when neither
/// `BOSUN_HOME`, `XDG_DATA_HOME` nor `HOME` is set.
pub fn default_path(lookup: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let usable = |name: &str| lookup(name).filter(|v| !v.trim().is_empty()).map(PathBuf::from);
    if let Some(home) = usable("BOSUN_HOME") {
        return Some(home.join("sessions.db"));
    }
    if let Some(data) = usable("XDG_DATA_HOME").filter(|p| p.is_absolute()) {
        return Some(data.join("bosun").join("sessions.db"));
    }
    usable("HOME").map(|home| home.join(".local/share/bosun/sessions.db"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bosun_home_then_xdg_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        assert_eq!(default_path(env(&[("BOSUN_HOME", "/b"), ("HOME", "/h")])), Some("/b/sessions.db".into()));
        assert_eq!(
            default_path(env(&[("XDG_DATA_HOME", "/x"), ("HOME", "/h")])),
            Some("/x/bosun/sessions.db".into())
        );
        assert_eq!(
            default_path(env(&[("XDG_DATA_HOME", "relative"), ("HOME", "/h")])),
            Some("/h/.local/share/bosun/sessions.db".into())
        );
        assert_eq!(default_path(env(&[])), None);
    }
}
