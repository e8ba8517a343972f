//! `bosun models pull | warm | list | devices | rm`: the front end of
//! `bosun_models`, which finds, fetches, checks and lists the files. Here:
//! which model a pull without a name means, progress on stderr (notes in
//! the stderr palette, bars only on a terminal), the prompt cache warmed
//! after a pull (`bosun_agent::warm`) and what is printed.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use bosun_models::{DEFAULT_MODEL, Progress, list, models_dir, prompt_cache_dir, pull_named, remove};

use crate::cli::ModelsCommand;
use crate::config::Env;
use crate::output::{Palette, Palettes};

/// Progress on stderr: notes dimmed, bars only when stderr is a terminal.
fn progress(palette: Palette) -> Progress {
    Progress::new(std::io::stderr().is_terminal(), move |text| eprintln!("{}", palette.dim(text)))
}

/// What `bosun models pull` fetches: the name given, else the configured
/// `local_model`, else the built-in default. A configured file path has
/// nothing to pull.
fn pull_name<'a>(given: Option<&'a str>, local_model: Option<&'a str>) -> Result<&'a str> {
    match (given, local_model) {
        (Some(name), _) => Ok(name),
        (None, Some(path)) if Path::new(path).is_absolute() => {
            bail!("local_model is the file {path}; there is nothing to pull (name a model to pull one)")
        }
        (None, Some(name)) => Ok(name),
        (None, None) => Ok(DEFAULT_MODEL),
    }
}

/// Runs a `models` subcommand. `local_model` is what the configuration
/// names as the default, if any. Answers the file a pull left, for the
/// caller to warm its prompt cache.
pub async fn run(
    command: ModelsCommand,
    env: &Env,
    local_model: Option<&str>,
    stderr: Palette,
) -> Result<Option<PathBuf>> {
    let dir = models_dir(env)?;
    match command {
        ModelsCommand::Pull { name, .. } => {
            let name = pull_name(name.as_deref(), local_model)?;
            let path = pull_named(env, name, &progress(stderr)).await?;
            crate::output::outln(format_args!("{}", path.display()))?;
            return Ok(Some(path));
        }
        // The caller warms: it has the settings a session is built from.
        ModelsCommand::Warm { .. } => {}
        ModelsCommand::List => crate::output::out(format_args!("{}", list(&dir)))?,
        ModelsCommand::Devices => {
            let devices = tokio::task::spawn_blocking(bosun_local::devices)
                .await
                .context("starting llama.cpp stopped")?
                .context("cannot start llama.cpp")?;
            crate::output::out(format_args!("{}", bosun_models::devices(&devices)))?;
        }
        ModelsCommand::Rm { name } => {
            for path in remove(&dir, &prompt_cache_dir(env)?, &name)? {
                crate::output::outln(format_args!("removed {}", path.display()))?;
            }
        }
    }
    Ok(None)
}

/// `bosun models warm`: fills the prompt cache of the model at `model`,
/// saying how long it took.
pub async fn warm(model: &Path, env: &Env, profile: Option<&str>, palettes: Palettes) -> Result<()> {
    let started = Instant::now();
    let notices = crate::mcp::stderr_notices(palettes.stderr);
    let tokens = bosun_agent::warm::warm(model, env, profile, &notices).await?;
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("{}", palettes.stderr.dim(&format!("prompt cache ready: {tokens} tokens in {seconds:.1} s")));
    Ok(())
}

/// After a pull: fills the cache of `model` unless it has one, saying what
/// it does; a failure is a warning, since the model itself was pulled.
pub async fn after_pull(model: &Path, env: &Env, profile: Option<&str>, palettes: Palettes) {
    if bosun_agent::warm::is_warm(model, env) {
        return;
    }
    let stderr = palettes.stderr;
    let preparing =
        "preparing the prompt cache: the system prompt and tools every command opens with, processed once";
    eprintln!("{}", stderr.dim(preparing));
    if let Err(error) = warm(model, env, profile, palettes).await {
        let warning = format!(
            "warning: the prompt cache was not prepared ({error:#}); the first command will process its whole prompt"
        );
        eprintln!("{}", stderr.red(&crate::sanitize::line(&warning)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_without_a_name_fetches_the_configured_local_model() {
        assert_eq!(pull_name(Some("hf:o/r/f.gguf"), Some("other")).unwrap(), "hf:o/r/f.gguf");
        assert_eq!(
            pull_name(None, Some("qwen2.5-coder-1.5b-instruct-q4_k_m")).unwrap(),
            "qwen2.5-coder-1.5b-instruct-q4_k_m"
        );
        assert_eq!(pull_name(None, None).unwrap(), DEFAULT_MODEL);
        let error = pull_name(None, Some("/models/mine.gguf")).unwrap_err().to_string();
        assert!(error.contains("nothing to pull"), "{error}");
    }

    #[tokio::test]
    async fn the_pull_command_refuses_unknown_names_and_a_bad_hub_endpoint_before_fetching() {
        let home = tempfile::tempdir().unwrap();
        let home = ("BOSUN_HOME", home.path().to_str().unwrap());
        let pull = |name: &str| ModelsCommand::Pull { name: Some(name.to_owned()), no_warm: true };
        let error = run(pull("nope"), &Env::from_pairs(&[home]), None, Palette::PLAIN).await.unwrap_err();
        let text = format!("{error:#}");
        assert!(text.contains("unknown model `nope`") && text.contains("hf:OWNER/REPO"), "{text}");
        let bad = Env::from_pairs(&[home, ("HF_ENDPOINT", "ftp://mirror")]);
        let error = run(pull("qwen3-4b-q4_k_m"), &bad, None, Palette::PLAIN).await.unwrap_err();
        assert!(format!("{error:#}").contains("HF_ENDPOINT"), "{error:#}");
    }
}
