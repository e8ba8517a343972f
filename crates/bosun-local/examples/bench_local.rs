//! Benchmark of [`LocalModel`] on one GGUF file, through the public
//! [`Model::stream`] API as bosun runs it (`scripts/bench-local` runs it and
//! compares it with llama.cpp's own benchmark tool):
//!
//! - **Prompt and generation speed**: a request of about 1,000 prompt tokens
//!   asking for a long list, answered greedily up to 128 tokens, `--runs`
//!   times. Each run's system prompt differs from its second token on, so
//!   the KV cache is not reused between runs (what little is, the chat
//!   template's opening tokens, is reported and left out of the rate). The
//!   rates come from [`LocalModel::last_generation`]: prompt tokens decoded
//!   over the prompt time, generated tokens over the generation time.
//! - **Second-turn latency**: after each run, a second user message extending
//!   that conversation, first with the KV cache holding the first turn
//!   (reused), then the same request again after a request with another
//!   prefix has replaced the cache (cold). Reported: time to the first text
//!   delta, and the prompt time.
//!
//! ```sh
//! cargo run --release -p bosun-local --example bench_local -- MODEL.gguf \
//!     [--runs 3] [--threads N] [--context 8192] [--prompt-tokens 1000] [--prompt-cache DIR] \
//!     [--json OUT.json]
//! ```
//!
//! Threads default to bosun's own choice (the physical cores) and the context
//! to the CLI's 8,192 tokens. The prompt cache on disk (which the CLI turns
//! on) is off unless `--prompt-cache` names a directory: saving it after a
//! long prompt adds to the time to the first text, not to the prompt time.

use std::error::Error;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bosun_core::{
    ContentPart, GenerationOptions, Message, Model, ModelEvent, ModelRequest, ResponsePart, StopReason, Usage,
};
use bosun_local::{GenerationStats, LocalModel, LocalOptions};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Generated tokens per timed run.
const GENERATE: u32 = 128;
/// Generated tokens of a second turn (only its start is measured).
const SECOND_TURN_TOKENS: u32 = 16;
/// The question that ends the first turn: one a model answers at length.
const ASK: &str = "Ignore the log above. Write a numbered list of 300 different animals, one per line, \
                   with no other text.";
/// The second turn's message.
const FOLLOW_UP: &str = "Continue the list from where you stopped, with 20 more animals.";

struct Args {
    model: PathBuf,
    runs: usize,
    threads: Option<u32>,
    context: u32,
    prompt_tokens: usize,
    prompt_cache: Option<PathBuf>,
    json: Option<PathBuf>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = std::env::args_os().skip(1);
    let mut model = None;
    let mut parsed = Args {
        model: PathBuf::new(),
        runs: 3,
        threads: None,
        context: 8192,
        prompt_tokens: 1000,
        prompt_cache: None,
        json: None,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next().and_then(|v| v.into_string().ok()).ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.to_str() {
            Some("--runs") => parsed.runs = value("--runs")?.parse()?,
            Some("--threads") => parsed.threads = Some(value("--threads")?.parse()?),
            Some("--context") => parsed.context = value("--context")?.parse()?,
            Some("--prompt-tokens") => parsed.prompt_tokens = value("--prompt-tokens")?.parse()?,
            Some("--prompt-cache") => parsed.prompt_cache = Some(PathBuf::from(value("--prompt-cache")?)),
            Some("--json") => parsed.json = Some(PathBuf::from(value("--json")?)),
            Some(flag) if flag.starts_with("--") => return Err(format!("unknown option {flag}").into()),
            _ => model = Some(PathBuf::from(arg)),
        }
    }
    parsed.model = model.ok_or("usage: bench_local MODEL.gguf [--runs N] [--threads N] [--json OUT]")?;
    if parsed.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    Ok(parsed)
}

/// What one request measured.
#[derive(Clone, Copy, Debug)]
struct Measured {
    stats: GenerationStats,
    /// From the call of `stream` to the first text delta (or the end).
    first_text: Duration,
    /// From the call of `stream` to `Done`.
    total: Duration,
}

impl Measured {
    fn decoded(&self) -> usize {
        self.stats.prompt_tokens - self.stats.reused_tokens
    }

    fn pp_rate(&self) -> f64 {
        rate(self.decoded(), self.stats.prompt_time)
    }

    fn tg_rate(&self) -> f64 {
        rate(self.stats.generated_tokens, self.stats.generation_time)
    }

    fn to_json(self) -> Value {
        json!({
            "prompt_tokens": self.stats.prompt_tokens,
            "reused_tokens": self.stats.reused_tokens,
            "decoded_tokens": self.decoded(),
            "prompt_ms": ms(self.stats.prompt_time),
            "pp_tps": self.pp_rate(),
            "generated_tokens": self.stats.generated_tokens,
            "generation_ms": ms(self.stats.generation_time),
            "tg_tps": self.tg_rate(),
            "first_text_ms": ms(self.first_text),
            "total_ms": ms(self.total),
        })
    }
}

fn rate(tokens: usize, time: Duration) -> f64 {
    tokens as f64 / time.as_secs_f64().max(1e-9)
}

fn ms(time: Duration) -> f64 {
    time.as_secs_f64() * 1e3
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
}

/// Sends one request and drains its stream; returns the measures and the answer text.
async fn request(
    model: &LocalModel,
    system: &str,
    messages: &[Message],
    max_tokens: u32,
) -> Result<(Measured, String, StopReason), Box<dyn Error>> {
    let mut options = GenerationOptions::default();
    options.max_tokens = Some(max_tokens);
    let request = ModelRequest::new(Some(system), messages, &[][..], options);
    let started = Instant::now();
    let mut stream = model.stream(request, CancellationToken::new());
    let mut first_text = None;
    let mut done = None;
    while let Some(event) = stream.next().await {
        match event? {
            ModelEvent::TextDelta(_) => {
                first_text.get_or_insert_with(|| started.elapsed());
            }
            ModelEvent::Done(response) => done = Some(response),
            _ => {}
        }
    }
    let total = started.elapsed();
    drop(stream);
    let response = done.ok_or("the stream ended without Done")?;
    let stats = model.last_generation().ok_or("no generation statistics")?;
    let text: String = response
        .content
        .iter()
        .filter_map(|part| match part {
            ResponsePart::Content(ContentPart::Text { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let measured = Measured { stats, first_text: first_text.unwrap_or(total), total };
    Ok((measured, text, response.stop_reason))
}

/// The first turn's user message: `lines` lines of a made-up log, then [`ASK`].
fn first_message(lines: usize) -> String {
    let mut text = String::from("Here is a build log.\n");
    for i in 0..lines {
        text.push_str(&format!(
            "Line {i:04}: step {} of the nightly build finished; the quick brown fox jumps over the lazy dog.\n",
            i * 7 % 101
        ));
    }
    text.push_str(ASK);
    text
}

/// A system prompt that differs between runs from its first word on.
fn system_prompt(run: usize) -> String {
    format!("Session {run}. You are a helpful assistant.")
}

async fn bench(args: &Args) -> Result<Value, Box<dyn Error>> {
    let mut options = LocalOptions::default().context_cap(args.context);
    if let Some(threads) = args.threads {
        options = options.threads(threads);
    }
    if let Some(dir) = &args.prompt_cache {
        options = options.prompt_cache(dir);
    }
    let loading = Instant::now();
    let model = LocalModel::load(&args.model, options)?;
    let load_time = loading.elapsed();
    let name = args.model.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    println!(
        "{name}: loaded in {:.0} ms; {} threads, context {} tokens",
        ms(load_time),
        model.threads(),
        model.context_size()
    );

    // Calibration (and warm-up): two prompt lengths give tokens per log line.
    let system = system_prompt(0);
    let (short, ..) = request(&model, &system, &[Message::user(first_message(10))], 1).await?;
    let (long, ..) = request(&model, &system, &[Message::user(first_message(40))], 1).await?;
    let per_line = (long.stats.prompt_tokens - short.stats.prompt_tokens) as f64 / 30.0;
    let fixed = short.stats.prompt_tokens as f64 - 10.0 * per_line;
    let lines = ((args.prompt_tokens as f64 - fixed) / per_line).round().max(1.0) as usize;
    let user = Message::user(first_message(lines));

    let mut runs = Vec::new();
    let mut turns = Vec::new();
    println!(
        "{:>4} {:>7} {:>6} {:>8} {:>9} {:>6} {:>8} {:>9} {:>10}",
        "run", "prompt", "reused", "pp ms", "pp tok/s", "gen", "tg ms", "tg tok/s", "1st text"
    );
    for run in 1..=args.runs {
        let system = system_prompt(run);
        let first = [user.clone()];
        let (measured, answer, stop) = request(&model, &system, &first, GENERATE).await?;
        let s = measured.stats;
        println!(
            "{run:>4} {:>7} {:>6} {:>8.1} {:>9.1} {:>6} {:>8.1} {:>9.1} {:>7.0} ms{}",
            s.prompt_tokens,
            s.reused_tokens,
            ms(s.prompt_time),
            measured.pp_rate(),
            s.generated_tokens,
            ms(s.generation_time),
            measured.tg_rate(),
            ms(measured.first_text),
            if stop == StopReason::Length { "" } else { "  (stopped early)" },
        );
        runs.push(measured);

        // The second turn: extending this conversation (cache warm), then the
        // same request once another prefix has replaced the cache (cold).
        let assistant = Message::Assistant {
            content: vec![ContentPart::text(answer)],
            usage: Usage::default(),
            stop_reason: stop,
        };
        let second = [user.clone(), assistant, Message::user(FOLLOW_UP)];
        let (warm, ..) = request(&model, &system, &second, SECOND_TURN_TOKENS).await?;
        request(&model, "Another session.", &[Message::user("Hello.")], 1).await?;
        let (cold, ..) = request(&model, &system, &second, SECOND_TURN_TOKENS).await?;
        turns.push((warm, cold));
    }

    let count = |values: Vec<f64>| median(values).round() as i64;
    let summary = json!({
        "prompt_tokens": count(runs.iter().map(|r| r.stats.prompt_tokens as f64).collect()),
        "decoded_tokens": count(runs.iter().map(|r| r.decoded() as f64).collect()),
        "pp_tps": median(runs.iter().map(Measured::pp_rate).collect()),
        "generated_tokens": count(runs.iter().map(|r| r.stats.generated_tokens as f64).collect()),
        "tg_tps": median(runs.iter().map(Measured::tg_rate).collect()),
        "first_text_ms": median(runs.iter().map(|r| ms(r.first_text)).collect()),
    });
    let side = |which: fn(&(Measured, Measured)) -> Measured| {
        let all: Vec<Measured> = turns.iter().map(which).collect();
        json!({
            "prompt_tokens": count(all.iter().map(|m| m.stats.prompt_tokens as f64).collect()),
            "reused_tokens": count(all.iter().map(|m| m.stats.reused_tokens as f64).collect()),
            "decoded_tokens": count(all.iter().map(|m| m.decoded() as f64).collect()),
            "prompt_ms": median(all.iter().map(|m| ms(m.stats.prompt_time)).collect()),
            "first_text_ms": median(all.iter().map(|m| ms(m.first_text)).collect()),
        })
    };
    let warm = side(|t| t.0);
    let cold = side(|t| t.1);
    println!(
        "median: pp {:.1} tok/s over {} decoded tokens; tg {:.1} tok/s over {} tokens",
        summary["pp_tps"].as_f64().unwrap_or(f64::NAN),
        summary["decoded_tokens"],
        summary["tg_tps"].as_f64().unwrap_or(f64::NAN),
        summary["generated_tokens"],
    );
    println!("second turn (median of {}):", turns.len());
    println!(
        "{:>12} {:>7} {:>6} {:>8} {:>9} {:>14}",
        "cache", "prompt", "reused", "decoded", "pp ms", "1st text ms"
    );
    for (label, side) in [("reused", &warm), ("cold", &cold)] {
        println!(
            "{label:>12} {:>7} {:>6} {:>8} {:>9.1} {:>14.1}",
            side["prompt_tokens"],
            side["reused_tokens"],
            side["decoded_tokens"],
            side["prompt_ms"].as_f64().unwrap_or(f64::NAN),
            side["first_text_ms"].as_f64().unwrap_or(f64::NAN),
        );
    }
    Ok(json!({
        "model": args.model.display().to_string(),
        "threads": model.threads(),
        "context": model.context_size(),
        "load_ms": ms(load_time),
        "log_lines": lines,
        "prompt_cache": args.prompt_cache.as_ref().map(|d| d.display().to_string()),
        "runs": runs.into_iter().map(Measured::to_json).collect::<Vec<_>>(),
        "median": summary,
        "second_turn": {
            "runs": turns.iter().map(|(w, c)| json!({"reused": w.to_json(), "cold": c.to_json()})).collect::<Vec<_>>(),
            "median": {"reused": warm, "cold": cold},
        },
    }))
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let result = runtime.block_on(bench(&args))?;
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&result)?)?;
    }
    Ok(())
}
