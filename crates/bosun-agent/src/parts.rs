//! What a session is built from besides its model: the workspace's tools
//! in the sandbox, the store, command hooks, the system prompt with project
//! instructions and skills, and the session builder with the configured
//! mode, rules, limits and prices.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bosun_core::{ContentPart, Model, Session, SessionBuilder, Tool, ToolChoice};
use bosun_store::Store;
use bosun_tools::hooks::CommandHook;
use bosun_tools::{Workspace, WorkspaceTools};

use crate::config::models::uses_local_model;
use crate::config::{Env, Settings};
use crate::error::{Context, Result, bail};
use crate::instructions;
use crate::notice::Notices;

/// Keeps outputs past the bound whole in the session's store, with the
/// `read_artifact` tool, for a hosted model. Not for the local one: a small
/// model's tool list is kept short (its prompt is measured by the local
/// task suite), and its context could not take many pages anyway.
pub fn with_artifacts(
    builder: bosun_core::SessionBuilder,
    settings: &Settings,
    store: &bosun_store::Store,
    session: &str,
) -> bosun_core::SessionBuilder {
    if uses_local_model(settings) { builder } else { builder.artifacts(Arc::new(store.artifacts(session))) }
}

/// The session database path.
pub fn store_path(settings: &Settings, env: &Env) -> Result<PathBuf> {
    if let Some(path) = &settings.sessions_db {
        return Ok(path.clone());
    }
    bosun_store::default_path(|name| env.get(name).map(str::to_owned))
        .context("cannot tell where to keep sessions: set BOSUN_HOME or HOME")
}

/// Opens the store, to write to it: a file that failed its integrity
/// check (opened read-only by the store) fails here, naming the file and
/// what to do, before any work that would need to write is started.
pub fn store(settings: &Settings, env: &Env) -> Result<Store> {
    let path = store_path(settings, env)?;
    let store = Store::open(&path)?;
    store.writable()?;
    Ok(store)
}

/// Opens the store only to read it (no migration, nothing written), so
/// that listing, showing and exporting sessions work on a full disk and on
/// a damaged file (`Store::damage` then says what is wrong with it).
pub fn store_read_only(settings: &Settings, env: &Env) -> Result<Store> {
    let path = store_path(settings, env)?;
    Ok(Store::open_read_only(&path)?)
}

/// The workspace and its tools: the brief set for a local model unless
/// `local_brief_tools` is off.
pub fn tools(
    dir: &Path,
    env: &Env,
    settings: &Settings,
    notices: &Notices,
) -> Result<(Workspace, Vec<Arc<dyn Tool>>)> {
    tools_with(dir, env, settings, notices, Through::default())
}

/// What a front end does for the workspace's tools in its own way (an
/// editor's buffers and terminals), their checks and sandbox unchanged.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Through {
    /// Where the file tools read and write files' text besides the disk.
    pub files: Option<Arc<dyn bosun_tools::FileAccess>>,
    /// Where sandboxed shell calls run besides bosun's own process.
    pub shell: Option<Arc<dyn bosun_tools::ShellRunner>>,
}

/// [`tools`], done partly `through` a front end's own means.
pub fn tools_with(
    dir: &Path,
    env: &Env,
    settings: &Settings,
    notices: &Notices,
    through: Through,
) -> Result<(Workspace, Vec<Arc<dyn Tool>>)> {
    let workspace = Workspace::open(dir)?;
    let sandbox = crate::sandboxing::for_workspace(workspace.root_path(), env, settings, notices)?;
    let mut shell = shell_config(&workspace, env).with_sandbox(sandbox);
    if let Some(runner) = through.shell {
        shell = shell.with_runner(runner);
    }
    let skills = skills(&workspace, settings, env).skills;
    let mut tools = WorkspaceTools::new(workspace.clone()).shell(shell).skills(skills);
    if let Some(access) = through.files {
        tools = tools.file_access(access);
    }
    let mut tools = if settings.local_brief_tools && uses_local_model(settings) {
        tools.build_brief()
    } else {
        tools.build()
    };
    // A small local model's list stays short; hosted models keep a plan.
    if !uses_local_model(settings) {
        tools.push(Arc::new(bosun_core::plan::PlanTool::new()));
    }
    tools.extend(web_tools(settings, env, notices)?);
    tools.extend(openapi_tools(settings, env, notices));
    Ok((workspace, tools))
}

/// The network tools the user's `[web]` table turns on (invariant 19), for
/// a hosted model. Not for the local one: it is the offline, private
/// choice, and a small model's tool list is kept short (its prompt is
/// measured by the local task suite); a notice says they were left out.
fn web_tools(settings: &Settings, env: &Env, notices: &Notices) -> Result<Vec<Arc<dyn Tool>>> {
    let web = &settings.web;
    if !web.fetch && web.search.is_none() {
        return Ok(Vec::new());
    }
    if uses_local_model(settings) {
        notices.info("the web tools ([web] in your config) are not offered to a local model");
        return Ok(Vec::new());
    }
    let built = web.tools(env)?;
    if let Some(why) = built.left_out {
        notices.warn(why);
    }
    Ok(built.tools)
}

/// The tools of the OpenAPI specs the user's `[openapi.NAME]` tables name
/// (invariant 19: each call asks), for a hosted model, as the web tools.
fn openapi_tools(settings: &Settings, env: &Env, notices: &Notices) -> Vec<Arc<dyn Tool>> {
    if settings.openapi.specs.is_empty() {
        return Vec::new();
    }
    if uses_local_model(settings) {
        notices.info("the OpenAPI tools ([openapi] in your config) are not offered to a local model");
        return Vec::new();
    }
    let built = settings.openapi.tools(env, settings.web.limits());
    for notice in built.notices {
        notices.warn(notice);
    }
    built.tools
}

/// What the shell and command hooks run with: the workspace root, PATH and
/// HOME from bosun's environment, nothing else of it.
fn shell_config(workspace: &Workspace, env: &Env) -> bosun_tools::ShellConfig {
    bosun_tools::ShellConfig::new(workspace.root_path().to_path_buf())
        .with_path(env.get("PATH").unwrap_or("/usr/local/bin:/usr/bin:/bin"))
        .with_home(env.get("HOME"))
}

/// Adds the configured command hooks (docs/hooks.md) to `builder`, in
/// their order, each run for the stored session `session` in the workspace
/// root with the shell's PATH and HOME.
pub fn with_hooks(
    mut builder: SessionBuilder,
    settings: &Settings,
    env: &Env,
    workspace: &Workspace,
    session: &str,
) -> SessionBuilder {
    for hook in command_hooks(settings, env, workspace, session) {
        builder = builder.hook(hook);
    }
    builder
}

/// The configured command hooks, in their order, each run for the stored
/// session `session` in the workspace root with the shell's PATH and HOME.
pub fn command_hooks(
    settings: &Settings,
    env: &Env,
    workspace: &Workspace,
    session: &str,
) -> Vec<Arc<dyn bosun_core::hooks::SessionHooks>> {
    let root = workspace.root_path();
    // `tools` builds the same sandbox first and stops the start when it
    // cannot; a failure here is that one, already reported.
    let shell = match crate::sandboxing::for_workspace(root, env, settings, &Notices::ignored()) {
        Ok(sandbox) => shell_config(workspace, env).with_sandbox(sandbox),
        Err(error) => {
            tracing::warn!("hooks: the sandbox could not be built: {error:#}");
            shell_config(workspace, env)
        }
    };
    settings
        .hooks
        .iter()
        .map(|hook| {
            Arc::new(CommandHook::new(hook.spec.clone(), session, root, &shell))
                as Arc<dyn bosun_core::hooks::SessionHooks>
        })
        .collect()
}

const BASE_PROMPT: &str = "You are bosun, a careful coding agent working in the user's workspace. Use the tools \
to read, search, edit and run things; paths are relative to the workspace root. Read a file before changing it, \
keep changes small and focused, and run the project's checks when it helps. When you are done, answer briefly \
with what you did.";

/// The prompt for small local models. Measured on Qwen2.5-Coder-0.5B: the
/// longer prompt above, with the tool list, makes it guess what a file says
/// instead of reading it; this shorter one, which says plainly that files are
/// unseen until read, gets the call.
const LOCAL_PROMPT: &str = "You are bosun, a helpful coding assistant. You cannot see the user's files: call \
read_file to read one, and the other tools to search, edit or run things. Paths are relative to the workspace \
root. When you have what you need, answer briefly.";

/// The system prompt, with the person's own instructions, project
/// instructions when enabled and the skills' list; also returns a warning to show when the instructions were
/// cut or a skill was skipped.
pub fn system_prompt(workspace: &Workspace, settings: &Settings, env: &Env) -> (String, Option<String>) {
    let base = if uses_local_model(settings) { LOCAL_PROMPT } else { BASE_PROMPT };
    let mut prompt = base.to_owned();
    let mut warnings = Vec::new();
    let personal = instructions::personal(env);
    prompt.extend(instructions::personal_section(&personal));
    warnings.extend(personal.warning);
    if settings.project_docs {
        // Read through the workspace's own handle, as the file tools read.
        let found = instructions::collect(workspace);
        if let Some(section) = instructions::section(&found) {
            prompt.push_str(&section);
        }
        warnings.extend(found.warning);
    }
    let found = skills(workspace, settings, env);
    prompt.extend(found.skills.prompt_section());
    warnings.extend(found.warnings);
    (prompt, (!warnings.is_empty()).then(|| warnings.join("; ")))
}

/// The skills of a run (docs/skills.md): the user's (`skills/` beside the
/// user's config file, then `~/.claude/skills/`) and, unless
/// `project_docs` is off, the project's.
/// An untrusted project's are read too, as its AGENTS.md is: prompt text and
/// files to read, not authority.
fn skills(workspace: &Workspace, settings: &Settings, env: &Env) -> bosun_tools::skills::Discovery {
    bosun_tools::skills::discover(settings.project_docs.then_some(workspace), &user_folders(env, "skills"))
}

/// The folders beside the user's config file named `name` (`skills`,
/// `agents`, `commands`), then the same in `~/.claude/`: the user's own
/// files, read by every front end. bosun's own folder comes first, so it
/// wins a name both hold.
pub fn user_folders(env: &Env, name: &str) -> Vec<PathBuf> {
    let bosun = crate::config::user_file(env).and_then(|file| file.parent().map(|dir| dir.join(name)));
    let claude = env.get("HOME").map(|home| PathBuf::from(home).join(".claude").join(name));
    bosun.into_iter().chain(claude).collect()
}

/// The custom slash commands of a conversation (docs/interactive.md): the
/// user's ([`user_folders`]) and, when the project is trusted, its
/// `.bosun/commands/` and `.claude/commands/`. Unlike skills, an untrusted
/// project's commands are not read at all: a command is a prompt the person
/// sends as their own, with its own tool list and model; one warning says
/// so. `reserved` are the built-in commands' names, which are kept.
pub fn commands(
    workspace: &Workspace,
    settings: &Settings,
    env: &Env,
    reserved: &[&str],
) -> bosun_tools::commands::CommandDiscovery {
    use bosun_tools::commands::{PROJECT_DIRS, discover};
    let user = user_folders(env, "commands");
    let project = settings.project_docs && settings.workspace_trusted;
    let mut found = discover(project.then_some(workspace), &user, reserved);
    if settings.project_docs && !settings.workspace_trusted {
        let present = PROJECT_DIRS.iter().filter(|dir| {
            let path = bosun_tools::workspace::RelPath::parse(dir).ok();
            path.and_then(|path| workspace.kind(&path).ok().flatten()).is_some()
        });
        let present: Vec<&str> = present.copied().collect();
        if !present.is_empty() {
            found.warnings.push(format!(
                "the project's commands ({}) are not read: the project is not trusted (`bosun trust`)",
                present.join(", ")
            ));
        }
    }
    found
}

/// The session-wide generation options the settings ask for: the
/// reasoning effort, when one is set and the model can be told (a model
/// that cannot, such as a local one whose template has no thinking switch,
/// runs on its own default rather than fail every turn; `/effort` says so).
pub fn generation_options(
    settings: &Settings,
    capabilities: &bosun_core::Capabilities,
) -> Option<bosun_core::GenerationOptions> {
    let effort = settings.reasoning_effort?;
    if capabilities.thinking_toggle == bosun_core::Support::No {
        return None;
    }
    let mut options = bosun_core::GenerationOptions::default();
    options.thinking = Some(effort.map_or(bosun_core::Thinking::Off, bosun_core::Thinking::from));
    Some(options)
}

/// A builder with everything but the journal, prompt and approver.
pub fn builder(
    model: Arc<dyn Model>,
    context_window: Option<u64>,
    workspace: &Workspace,
    tools: Vec<Arc<dyn Tool>>,
    source: Option<Arc<dyn bosun_core::ToolSource>>,
    settings: &Settings,
) -> Result<SessionBuilder> {
    let model_capabilities = model.capabilities();
    let mut builder = Session::builder_shared(model)
        .workspace(workspace.identity().clone())
        .tools(tools)
        .mode(settings.mode)
        .rules(settings.rules.clone())
        .clock(settings.clock);
    if let Some(source) = source {
        builder = builder.tool_source(source);
    }
    if let Some(options) = generation_options(settings, &model_capabilities) {
        builder = builder.options(options);
    }
    if let Some(rounds) = settings.max_rounds {
        builder = builder.max_rounds(rounds);
    }
    if let Some(secs) = settings.tool_timeout_secs {
        builder = builder.tool_timeout(Duration::from_secs(secs));
    }
    let limits = settings.turn_limits;
    if let Some(tokens) = limits.tokens {
        builder = builder.max_turn_tokens(tokens);
    }
    if let Some(secs) = limits.seconds {
        builder = builder.max_turn_time(Duration::from_secs(secs));
    }
    if let Some(micros) = limits.cost_micros {
        // A cost limit on a model bosun cannot price could never be kept.
        let Some(pricing) = crate::config::models::pricing(settings) else {
            bail!(
                "max_turn_cost is set, but bosun has no prices for {}: add them under [models] in the config, \
                 or drop the cost limit",
                settings.model.as_deref().unwrap_or("the local model")
            );
        };
        builder = builder.max_turn_cost(micros, pricing);
    } else if let Some(pricing) = crate::config::models::pricing(settings) {
        // Events, the journal and `sessions show` then carry costs.
        builder = builder.pricing(pricing);
    }
    if let Some(window) = context_window {
        builder = builder.context_window(window);
    }
    if let Some(fraction) = settings.compact_at {
        builder = builder.compact_at(fraction);
    }
    if settings.local_persistence && uses_local_model(settings) {
        // The rules decide the first round too: a look only when the
        // prompt is about the workspace (`local_first_call`).
        let rules = bosun_core::Persistence::for_small_models().with_look_first(settings.local_first_call);
        builder = builder.persistence(rules);
    } else if settings.local_first_call && uses_local_model(settings) {
        builder = builder.first_round_tool_choice(ToolChoice::Required);
    }
    if settings.local_read_named && uses_local_model(settings) {
        builder = builder.opening_calls(read_named_files(workspace.clone()));
    }
    // `disabled_tools` leaves tools out of what the model is offered; a
    // call to one gets a refusal before any approval (invariant 5). A name
    // that is no tool fails the build, naming it.
    for tool in &settings.disabled_tools {
        builder = builder.disable(tool.clone());
    }
    Ok(builder)
}

/// Files a local model is shown before its first round: up to this many
/// that the prompt names.
const NAMED_FILES_READ: usize = 3;

/// The opening calls that read, with `read_file`, the files a prompt names.
fn read_named_files(workspace: Workspace) -> bosun_core::OpeningCalls {
    Arc::new(move |prompt: &[ContentPart]| {
        let text = bosun_core::message::text_lines(prompt);
        bosun_tools::named::named_files(&workspace, &text, NAMED_FILES_READ)
            .into_iter()
            .map(|path| bosun_core::OpeningCall::new("read_file", serde_json::json!({ "path": path })))
            .collect()
    })
}
