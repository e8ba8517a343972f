//! `bosun sessions …` and `bosun fork`.
//!
//! Stored text (titles, messages, tool results) came from the model, tools
//! and files; on a terminal it is shown through [`crate::sanitize`]
//! (invariant 20), piped it stays as stored.

use std::borrow::Cow;
use std::io::{BufReader, IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, Result};
use bosun_core::{Message, Usage};
use bosun_store::ListFilter;

use crate::cli::SessionsCommand;
use crate::config::workdir;
use crate::config::{self, Env};
use crate::output::Palette;
use crate::sanitize;

/// The store, opened to write to it, or (`write` false) only to read it:
/// then listing, showing and exporting work on a full disk and on a damaged
/// file, which a warning names.
fn store(
    dir: Option<&Path>,
    profile: Option<&str>,
    env: &Env,
    write: bool,
) -> Result<(bosun_store::Store, std::path::PathBuf, config::Settings)> {
    let dir = workdir(dir)?;
    let settings = config::resolve(&dir, env, profile, &Default::default())?;
    let store = if write {
        bosun_agent::parts::store(&settings, env)?
    } else {
        bosun_agent::parts::store_read_only(&settings, env)?
    };
    if let Some(damage) = store.damage() {
        let warning = format!(
            "bosun: warning: `{}` failed its integrity check ({damage}); what is shown is what could still be \
             read, and bosun writes nothing to the file: export the sessions to keep (`bosun sessions export \
             ID > ID.jsonl`), then move the file aside",
            store.path().display()
        );
        eprintln!("{}", sanitize::block(&warning));
    }
    Ok((store, dir, settings))
}

/// The usage line of `sessions show`: the stored tokens and their cost.
/// Turns record their cost as they run, priced by the model they ran on;
/// when every token of the session is so recorded, that is the cost.
/// Otherwise (a session from before costs were recorded, or turns a fork
/// copied) the tokens are priced at the prices of the session's recorded
/// model, else of the model configured now, and the line says which. Each
/// response is priced on its own when the head branch's responses are all
/// the session's usage, which long-context tiers need.
/// How `spec` (a `--model` form, as a session records it) is billed, with
/// the rest of `settings` (the config's price overrides) as they are now.
fn costing_of(settings: &config::Settings, spec: &str) -> Result<config::models::Costing> {
    let mut priced_by = settings.clone();
    priced_by.model = Some(spec.to_owned());
    Ok(config::models::session_model(&priced_by)?.costing)
}

pub(crate) fn usage_line(detail: &bosun_store::SessionDetail, settings: &config::Settings) -> Result<String> {
    let usage = &detail.summary.usage;
    let tokens = format!(
        "usage: {} ({} written), {} out ({} reasoning)",
        crate::output::prompt_tokens(usage),
        usage.cache_write,
        usage.output,
        usage.reasoning,
    );
    let recorded = &detail.summary.spend;
    if !recorded.is_zero()
        && recorded.total().usage == *usage
        && let Some(cost) = config::models::recorded_cost(recorded)
    {
        let local = match &detail.summary.model {
            Some(model) => matches!(costing_of(settings, model)?, config::models::Costing::Local),
            None => false,
        };
        let cost = if local { "$0 (local model)".to_owned() } else { cost };
        return Ok(format!("{tokens}; cost: {cost}"));
    }
    let (spec, whose) = match (&detail.summary.model, settings.model.as_deref()) {
        (Some(recorded), _) => (Some(recorded.as_str()), "the session's model"),
        (None, now) => (now, "the model configured now; this session did not record its model"),
    };
    // With no model named, the default local one would say $0 of a
    // session that may have run on a hosted model: say nothing instead.
    let Some(spec) = spec else {
        return Ok(format!(
            "{tokens}; cost unknown (this session did not record its model: set BOSUN_MODEL=PROVIDER/MODEL to \
             price it)"
        ));
    };
    let costing = costing_of(settings, spec)?;
    if let config::models::Costing::Unknown = costing {
        return Ok(format!("{tokens}; cost unknown (bosun has no prices for {})", sanitize::line(spec)));
    }
    let responses: Vec<&Usage> = detail
        .history
        .iter()
        .filter_map(|(_, message)| match message {
            Message::Assistant { usage, .. } => Some(usage),
            _ => None,
        })
        .collect();
    let summed = responses.iter().fold(Usage::default(), |mut total, one| {
        total += **one;
        total
    });
    let cost =
        if summed == *usage { costing.describe_responses(responses) } else { costing.describe_total(usage) };
    Ok(format!("{tokens}; cost: {cost} at {} prices ({whose})", sanitize::line(spec)))
}

/// One line per ended turn: how it ended and what it spent.
fn turn_lines(detail: &bosun_store::SessionDetail) -> Vec<String> {
    detail
        .turns
        .iter()
        .filter(|turn| !turn.spend.is_zero())
        .map(|turn| {
            let total = turn.spend.total();
            let outcome = serde_json::to_value(turn.outcome)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let cost =
                config::models::recorded_cost(&turn.spend).unwrap_or_else(|| "cost unknown".to_owned());
            format!(
                "turn {:<3} {outcome:<12} {}, {} out, {cost}",
                turn.turn,
                crate::output::prompt_tokens(&total.usage),
                total.usage.output
            )
        })
        .collect()
}

fn time(ms: i64) -> String {
    // Minutes precision, UTC, without a date library.
    let (year, month, day, hour, minute, _) = bosun_core::calendar::utc(ms.div_euclid(1000));
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
}

/// Stored text as shown: sanitised as one line on a terminal, as stored
/// otherwise.
/// The first line of `text` with how many images `message` holds, which
/// `show` lists instead of their bytes (`  [1 image]`).
fn with_images(text: &str, message: &Message) -> String {
    let first = text.lines().next().unwrap_or_default();
    match message.content().iter().filter(|p| matches!(p, bosun_core::ContentPart::Image { .. })).count() {
        0 => first.to_owned(),
        1 => format!("{first}  [1 image]"),
        n => format!("{first}  [{n} images]"),
    }
}

fn shown(terminal: bool, text: &str) -> Cow<'_, str> {
    if terminal { sanitize::line(text) } else { Cow::Borrowed(text) }
}

/// Runs a `sessions` subcommand.
pub fn run(
    dir: Option<&Path>,
    profile: Option<&str>,
    command: SessionsCommand,
    env: &Env,
    style: Palette,
) -> Result<()> {
    let reads = matches!(
        command,
        SessionsCommand::List { .. } | SessionsCommand::Show { .. } | SessionsCommand::Export { .. }
    );
    let (store, dir, settings) = store(dir, profile, env, !reads)?;
    let mut out = std::io::stdout().lock();
    let terminal = out.is_terminal();
    match command {
        SessionsCommand::List { all, children, json } => {
            let mut filter = if all {
                ListFilter::default()
            } else {
                let root = bosun_tools::Workspace::open(&dir)?.identity().path.clone();
                ListFilter::workspace(root)
            };
            if children {
                filter = filter.with_children();
            }
            let sessions = store.list(&filter)?;
            if json {
                writeln!(out, "{}", serde_json::to_string(&sessions)?)?;
            } else if sessions.is_empty() {
                eprintln!(
                    "no sessions{}",
                    if all { "" } else { " in this workspace (--all for every workspace)" }
                );
            } else {
                for s in sessions {
                    let title = s.title.unwrap_or_default();
                    writeln!(
                        out,
                        "{}  {}  {:>4} msgs  {}",
                        s.id,
                        time(s.updated_at),
                        s.message_count,
                        shown(terminal, &title)
                    )?;
                }
            }
        }
        SessionsCommand::Show { id, json } => {
            let id = store.resolve_id(&id)?;
            let detail = store.show(&id)?;
            if json {
                writeln!(out, "{}", serde_json::to_string(&detail)?)?;
            } else {
                writeln!(out, "session {}  ({} branches)", detail.summary.id, detail.branches.len())?;
                // Each round priced at its session's recorded model's prices.
                let round_prices =
                    detail.summary.model.as_ref().and_then(|model| costing_of(&settings, model).ok());
                if let Some(model) = &detail.summary.model {
                    writeln!(out, "{}", style.dim(&format!("model: {}", shown(terminal, model))))?;
                }
                if let Some(url) = &detail.summary.base_url {
                    writeln!(out, "{}", style.dim(&format!("base URL: {}", shown(terminal, url))))?;
                }
                if let Some(parent) = &detail.summary.parent {
                    let line = format!("sub-agent of session {} (call {})", parent.session, parent.call);
                    writeln!(out, "{}", style.dim(&shown(terminal, &line)))?;
                }
                for child in store.children(&id)? {
                    let title = child.title.unwrap_or_default();
                    let line =
                        format!("sub-agent {}  {}", child.id, title.lines().next().unwrap_or_default());
                    writeln!(out, "{}", style.dim(&shown(terminal, &line)))?;
                }
                for line in branch_lines(&detail) {
                    writeln!(out, "{}", style.dim(&line))?;
                }
                writeln!(out, "{}", style.dim(&usage_line(&detail, &settings)?))?;
                for line in turn_lines(&detail) {
                    writeln!(out, "{}", style.dim(&line))?;
                }
                // A rolled-back turn's prompt (invariant 21), after the
                // message it followed.
                let failed_after = |out: &mut std::io::StdoutLock<'_>, after: Option<i64>| -> Result<()> {
                    for failed in detail.failed_turns.iter().filter(|f| f.after == after) {
                        let text = failed.message.text();
                        let first = shown(terminal, text.lines().next().unwrap_or_default());
                        // A killed process's turn was never answered; a
                        // failed one was refused.
                        let why = if failed.interrupted {
                            "(turn interrupted before an answer)"
                        } else {
                            "(turn failed, not sent again automatically)"
                        };
                        writeln!(out, "{} {:>9}  {first}  {}", style.dim("#-    "), "user", style.dim(why))?;
                    }
                    Ok(())
                };
                failed_after(&mut out, None)?;
                // Where each turn began, as `rewind --to` names them.
                let turns = store.turns(&id)?;
                let mut starts =
                    turns.iter().filter(|t| !t.rolled_back).map(|t| (t.after, t.turn)).peekable();
                let mut previous = None;
                for (message_id, message) in &detail.history {
                    while let Some((_, turn)) = starts.next_if(|(after, _)| *after == previous) {
                        writeln!(out, "{}", style.dim(&format!("── turn {turn}")))?;
                    }
                    previous = Some(*message_id);
                    let (role, text) = match message {
                        Message::User { .. } => ("user", with_images(&message.text(), message)),
                        Message::Assistant { usage, .. } => {
                            let calls: Vec<String> = message
                                .tool_calls()
                                .map(|c| format!("{}({})", c.name, c.arguments))
                                .collect();
                            let text = [message.text(), calls.join(" ")].join(" ").trim().to_owned();
                            let line = text.lines().next().unwrap_or_default().to_owned();
                            // The round's usage after its first line.
                            let spent = if usage.is_zero() {
                                String::new()
                            } else {
                                let cost = match &round_prices {
                                    Some(costing @ config::models::Costing::Priced(_)) => {
                                        format!(", {}", costing.describe_responses([usage]))
                                    }
                                    _ => String::new(),
                                };
                                format!(
                                    "  [{}, {} out{cost}]",
                                    crate::output::prompt_tokens(usage),
                                    usage.output
                                )
                            };
                            ("assistant", format!("{line}{spent}"))
                        }
                        Message::ToolResult { tool_name, .. } => {
                            ("tool", with_images(&format!("{tool_name}: {}", message.text()), message))
                        }
                        _ => ("system", message.text()),
                    };
                    let first = shown(terminal, text.lines().next().unwrap_or_default());
                    writeln!(out, "{} {:>9}  {first}", style.dim(&format!("#{message_id:<5}")), role)?;
                    failed_after(&mut out, Some(*message_id))?;
                }
            }
        }
        SessionsCommand::Rm { id } => {
            let id = store.resolve_id(&id)?;
            store.delete(&id)?;
            eprintln!("deleted session {id}");
        }
        SessionsCommand::Export { id, output } => match (store.resolve_id(&id)?, output) {
            (id, Some(path)) => {
                let mut file = std::fs::File::create(&path)
                    .with_context(|| format!("cannot create {}", path.display()))?;
                store.export(&id, &mut file)?;
            }
            (id, None) => store.export(&id, &mut out)?,
        },
        SessionsCommand::Import { file } => {
            // All or nothing: a refusal names the line and why, and
            // nothing of the file is in the store.
            let refused = || format!("cannot import {}; nothing was imported", file.display());
            let id = if file.as_os_str() == "-" {
                store.import(&mut std::io::stdin().lock()).with_context(refused)?
            } else {
                let reader =
                    std::fs::File::open(&file).with_context(|| format!("cannot open {}", file.display()))?;
                store.import(&mut BufReader::new(reader)).with_context(refused)?
            };
            writeln!(out, "{id}")?;
        }
    }
    Ok(())
}

/// `bosun fork ID [--at MESSAGE]`.
pub fn fork(dir: Option<&Path>, profile: Option<&str>, id: &str, at: Option<i64>, env: &Env) -> Result<()> {
    let (store, _, _) = store(dir, profile, env, true)?;
    let id = &store.resolve_id(id)?;
    let at = match at {
        Some(at) => at,
        None => store
            .show(id)?
            .history
            .last()
            .map(|(m, _)| *m)
            .context("the session has no messages to fork at")?,
    };
    let left = store.show(id)?.head_branch;
    let branch = store.fork(id, at)?;
    let branches = store.show(id)?.branches;
    let ids: Vec<&str> = branches.iter().map(|b| b.id.as_str()).collect();
    let short = |branch: &str| crate::rewind::short_id(branch, &ids);
    eprintln!(
        "forked session {id} at message {at}: branch {} is now its head (continue with `bosun resume {id}`); the \
         branch it left stays: `bosun resume {id} --branch {}` continues it",
        short(&branch),
        short(&left)
    );
    Ok(())
}

/// The branches of a session with more than one: a shortest unique id,
/// which is the head, where it came off, its messages and when it was made.
fn branch_lines(detail: &bosun_store::SessionDetail) -> Vec<String> {
    if detail.branches.len() < 2 {
        return Vec::new();
    }
    let ids: Vec<&str> = detail.branches.iter().map(|b| b.id.as_str()).collect();
    let mut lines =
        vec![format!("branches (`bosun resume {} --branch B` continues one):", detail.summary.id)];
    for branch in &detail.branches {
        let head = if branch.id == detail.head_branch { "* " } else { "  " };
        let from = match (&branch.parent_branch, branch.fork_message) {
            (None, _) => "the first".to_owned(),
            (Some(_), Some(message)) => format!("forked at #{message}"),
            (Some(_), None) => "forked before the first message".to_owned(),
        };
        lines.push(format!(
            "{head}{}  {:>4} msgs  {}  {from}{}",
            crate::rewind::short_id(&branch.id, &ids),
            branch.message_count,
            time(branch.created_at),
            if head == "* " { "  (head)" } else { "" }
        ));
    }
    lines
}
