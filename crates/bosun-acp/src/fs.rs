//! Files through the editor: when the client says at `initialize` that it
//! reads text files (`fs.readTextFile`), `read_file` asks it
//! (`fs/read_text_file`), so the model sees the editor's unsaved buffer;
//! when it writes them (`fs.writeTextFile`), `write_file` hands it the new
//! text (`fs/write_text_file`), so the change lands in its buffer and undo
//! history; when it does both, `edit_file` and `apply_patch` read and write
//! through it too. The tools are bosun's own (`bosun_tools::FileAccess`):
//! same names, schemas and effects, so the same permission pipeline judges
//! them, and every check of a path (beneath the workspace root, no symbolic
//! link, a regular file, the size cap, read before changed) is made before
//! the editor is asked anything.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use bosun_agent::FileAccess;

/// How long a request to the editor may go unanswered: the file tools run
/// to completion, so an editor that never answers must not hold the turn.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// What the client said it does with files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ClientFiles {
    pub(crate) reads: bool,
    pub(crate) writes: bool,
}

/// The editor's file system, for one session.
pub(crate) struct EditorFiles {
    offered: ClientFiles,
    connection: ConnectionTo<Client>,
    /// The session's id, known once it is made.
    session: Arc<OnceLock<String>>,
}

impl std::fmt::Debug for EditorFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EditorFiles").field("offered", &self.offered).finish_non_exhaustive()
    }
}

impl EditorFiles {
    pub(crate) fn new(
        offered: ClientFiles,
        connection: ConnectionTo<Client>,
        session: Arc<OnceLock<String>>,
    ) -> Self {
        Self { offered, connection, session }
    }

    fn session(&self) -> Result<String, String> {
        self.session.get().cloned().ok_or_else(|| "the session is not ready".to_owned())
    }

    /// Waits for `answer` on the blocking thread the tool runs on.
    fn wait<T>(
        &self,
        answer: impl Future<Output = Result<T, agent_client_protocol::Error>>,
    ) -> Result<T, String> {
        let handle = tokio::runtime::Handle::try_current().map_err(|e| e.to_string())?;
        match handle.block_on(tokio::time::timeout(ANSWER_WITHIN, answer)) {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("no answer within {} s", ANSWER_WITHIN.as_secs())),
        }
    }
}

impl FileAccess for EditorFiles {
    fn reads(&self) -> bool {
        self.offered.reads
    }

    fn writes(&self) -> bool {
        self.offered.writes
    }

    fn read_text(&self, path: &Path) -> Result<String, String> {
        let request = ReadTextFileRequest::new(self.session()?, path);
        self.wait(self.connection.send_request(request).block_task()).map(|read| read.content)
    }

    fn write_text(&self, path: &Path, text: &str) -> Result<(), String> {
        let request = WriteTextFileRequest::new(self.session()?, path, text);
        self.wait(self.connection.send_request(request).block_task()).map(|_| ())
    }
}
