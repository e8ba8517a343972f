//! Layering, provenance and refusals.

use std::path::Path;

use bosun_core::Mode;

use super::*;
use crate::cli::RunOptions;

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn layers_apply_in_order_and_remember_their_source() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    write(
        home.path(),
        ".config/bosun/config.toml",
        "model = \"openai/gpt-5\"\nmode = \"write\"\n[profiles.fast]\nmodel = \"groq/llama\"\n",
    );
    write(
        project.path(),
        ".bosun/config.toml",
        "mode = \"read-only\"\n[permissions]\nshell = { allow = [\"git status\"] }\n",
    );
    let home_var = home.path().display().to_string();
    let env = Env::from_pairs(&[("HOME", &home_var), ("BOSUN_MAX_ROUNDS", "7")]);
    let flags = RunOptions { mode: Some(ModeArg::Autonomous), ..RunOptions::default() };
    let settings = resolve(project.path(), &env, None, &flags).unwrap();
    assert_eq!(settings.model.as_deref(), Some("openai/gpt-5"));
    assert_eq!(settings.mode, Mode::Autonomous);
    assert_eq!(settings.max_rounds, Some(7));
    assert_eq!(settings.rules.len(), 1);
    assert_eq!(settings.sources["mode"].1, Source::Flag("--mode"));
    assert_eq!(settings.sources["max_rounds"].1, Source::Env("BOSUN_MAX_ROUNDS"));
    assert!(
        matches!(&settings.sources["model"].1, Source::File(p) if p.ends_with(".config/bosun/config.toml"))
    );
    let shown = show(&settings);
    assert!(shown.contains("mode = autonomous    # flag --mode"), "{shown}");
    let profiled = resolve(project.path(), &env, Some("fast"), &RunOptions::default()).unwrap();
    assert_eq!(profiled.model.as_deref(), Some("groq/llama"));
    let missing = resolve(project.path(), &env, Some("nope"), &RunOptions::default()).unwrap_err();
    assert!(missing.to_string().contains("no profile `nope`"), "{missing}");
}

#[test]
fn unknown_keys_are_errors_naming_their_path() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "c.toml", "[permissions.shell]\nalow = [\"ls\"]\n");
    let err = Layer::load(&dir.path().join("c.toml")).unwrap_err().to_string();
    assert!(err.contains("permissions.shell"), "{err}");
    write(dir.path(), "d.toml", "modle = \"x\"\n");
    let err = Layer::load(&dir.path().join("d.toml")).unwrap_err().to_string();
    assert!(err.contains("modle"), "{err}");
}

#[test]
fn literal_api_keys_are_refused_pointing_to_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "k.toml", "api_key = \"whatever\"\n");
    let err = Layer::load(&dir.path().join("k.toml")).unwrap_err().to_string();
    assert!(err.contains("`api_key`") && err.contains("environment variable"), "{err}");
    write(dir.path(), "h.toml", "[headers]\nx-custom = \"sk-ant-api03-abcdefghijklmnopqrstuvwxyz\"\n");
    let err = Layer::load(&dir.path().join("h.toml")).unwrap_err().to_string();
    assert!(err.contains("looks like an API key") && !err.contains("abcdefghijklmnop"), "{err}");
}

#[test]
fn local_model_limits_come_from_files_and_the_environment_and_are_checked() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    write(project.path(), ".bosun/config.toml", "local_context = 4096\nlocal_threads = 3\n");
    let settings = resolve(project.path(), &Env::from_pairs(&[]), None, &RunOptions::default()).unwrap();
    assert_eq!((settings.local_context, settings.local_threads), (Some(4096), Some(3)));
    let env = Env::from_pairs(&[("BOSUN_LOCAL_CONTEXT", "16384")]);
    let settings = resolve(project.path(), &env, None, &RunOptions::default()).unwrap();
    assert_eq!(settings.local_context, Some(16384));
    assert_eq!(settings.sources["local_context"].1, Source::Env("BOSUN_LOCAL_CONTEXT"));
    for (var, value, expected) in [
        ("BOSUN_LOCAL_CONTEXT", "100", "at least 512"),
        ("BOSUN_LOCAL_THREADS", "0", "at least 1"),
        ("BOSUN_LOCAL_THREADS", "many", "not a number"),
    ] {
        let env = Env::from_pairs(&[(var, value)]);
        let err = resolve(project.path(), &env, None, &RunOptions::default()).unwrap_err();
        assert!(format!("{err:#}").contains(expected), "{var}={value}: {err:#}");
    }
}
