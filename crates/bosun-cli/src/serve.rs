//! `bosun serve`: the HTTP front end over `bosun-serve`, on the user's
//! configuration and store. The token is `BOSUN_SERVE_TOKEN`, else the one
//! kept beside the store (made at first start, `0600`, printed with the
//! page's address).

use std::net::SocketAddr;

use anyhow::{Context, Result};
use bosun_core::env::Env;
use bosun_serve::{ServeOptions, Server, Token, TokenSource};

use crate::cli::ServeArgs;
use crate::config;
use crate::exec::Outcome;
use crate::output::Palette;

/// The token file's name, beside the sessions database.
const TOKEN_FILE: &str = "serve-token";

pub(crate) async fn run(
    dir: Option<&std::path::Path>,
    profile: Option<&str>,
    args: ServeArgs,
    env: &Env,
    stderr: Palette,
) -> Result<Outcome> {
    let addr: SocketAddr = args
        .listen
        .parse()
        .with_context(|| format!("`{}` is not an address such as 127.0.0.1:7777", args.listen))?;
    bosun_serve::check_loopback(&addr, args.allow_remote)?;
    let settings = config::resolve(&config::workdir(dir)?, env, profile, &Default::default())?;
    let store = bosun_agent::parts::store(&settings, env)?;
    let token_file = store.path().with_file_name(TOKEN_FILE);
    let (token, source) = Token::load_or_create(env.get("BOSUN_SERVE_TOKEN"), &token_file)?;
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    // The token from the environment is the caller's own: not echoed.
    let fragment = match source {
        TokenSource::Environment => String::new(),
        _ => format!("#token={}", token.reveal()),
    };
    crate::output::out(format_args!("bosun serve: listening on http://{local}/{fragment}\n"))?;
    if source == TokenSource::Created {
        eprintln!("{}", stderr.dim(&format!("bosun: a new API token is kept in {}", token_file.display())));
    }
    let mut options = ServeOptions::new(token, env.clone(), store);
    if let Some(url) = &settings.store_url {
        let shared = bosun_agent::shared::connect(&settings)
            .await
            .with_context(|| format!("cannot open the shared store {url} (store_url)"))?;
        eprintln!("{}", stderr.dim(&format!("bosun: sessions are kept in {url}, shared with other servers")));
        options.shared = shared;
    }
    options.cors_origins = args.cors_origin;
    if !args.allow_roots.is_empty() {
        let roots = args
            .allow_roots
            .iter()
            .map(|root| root.canonicalize().with_context(|| format!("--allow-root {}", root.display())))
            .collect::<Result<Vec<_>>>()?;
        options.allowed_roots = Some(roots);
    }
    options.notices = crate::mcp::stderr_notices(stderr);
    Server::new(options).serve(listener, stop_signal()).await?;
    Ok(Outcome::Success)
}

/// Resolves at the first SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        // Without handlers the default action stops the process anyway.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}
