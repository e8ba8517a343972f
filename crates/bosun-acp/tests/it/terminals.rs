//! The editor's terminals, as a client runs them: each `terminal/create`
//! starts the command it names (here: bosun's own binary, the far side of a
//! shell call) with its output collected; the other `terminal/*` requests
//! read, wait for, kill and release it.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, CreateTerminalResponse, TerminalExitStatus, TerminalOutputResponse,
};
use tokio::io::AsyncReadExt;
use tokio::sync::{oneshot, watch};

/// One running (or ended) terminal.
pub struct Term {
    output: Arc<Mutex<String>>,
    exit: watch::Receiver<Option<TerminalExitStatus>>,
    kill: Mutex<Option<oneshot::Sender<()>>>,
}

impl Term {
    pub fn output(&self) -> TerminalOutputResponse {
        let exit = self.exit.borrow().clone();
        TerminalOutputResponse::new(self.output.lock().unwrap().clone(), false).exit_status(exit)
    }

    pub async fn wait(&self) -> TerminalExitStatus {
        let mut exit = self.exit.clone();
        exit.wait_for(Option::is_some).await.unwrap().clone().unwrap()
    }

    pub fn kill(&self) {
        if let Some(kill) = self.kill.lock().unwrap().take() {
            let _ = kill.send(());
        }
    }
}

/// The terminals the editor opened, and what it was asked to do with them.
#[derive(Default)]
pub struct Terminals {
    pub open: Mutex<HashMap<String, Arc<Term>>>,
    pub created: Mutex<Vec<CreateTerminalRequest>>,
    pub killed: Mutex<Vec<String>>,
    pub released: Mutex<Vec<String>>,
    /// Told when a terminal starts.
    pub started: tokio::sync::Notify,
}

impl Terminals {
    pub fn get(&self, id: &str) -> Arc<Term> {
        self.open.lock().unwrap().get(id).cloned().unwrap()
    }

    /// Starts the command `request` names.
    pub fn create(&self, request: CreateTerminalRequest) -> CreateTerminalResponse {
        let id = format!("term-{}", self.created.lock().unwrap().len());
        let mut command = tokio::process::Command::new(&request.command);
        command.args(&request.args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(cwd) = &request.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        let readers = [
            Box::new(child.stdout.take().unwrap()) as Box<dyn tokio::io::AsyncRead + Send + Unpin>,
            Box::new(child.stderr.take().unwrap()),
        ]
        .map(|mut pipe| {
            let output = output.clone();
            tokio::spawn(async move {
                let mut buffer = vec![0; 8192];
                while let Ok(n) = pipe.read(&mut buffer).await
                    && n > 0
                {
                    output.lock().unwrap().push_str(&String::from_utf8_lossy(&buffer[..n]));
                }
            })
        });
        let (exit_tx, exit) = watch::channel(None);
        let (kill, killed) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status.unwrap(),
                _ = killed => {
                    child.start_kill().unwrap();
                    child.wait().await.unwrap()
                }
            };
            for reader in readers {
                let _ = reader.await;
            }
            let code = status.code().map(|c| c as u32);
            exit_tx.send(Some(TerminalExitStatus::new().exit_code(code))).unwrap();
        });
        let term = Arc::new(Term { output, exit, kill: Mutex::new(Some(kill)) });
        self.open.lock().unwrap().insert(id.clone(), term);
        self.created.lock().unwrap().push(request);
        self.started.notify_one();
        CreateTerminalResponse::new(id)
    }
}
