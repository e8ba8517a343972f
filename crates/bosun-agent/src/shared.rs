//! Sessions kept in a Postgres database several hosts share (`store_url`,
//! read by `bosun serve`): a session's journal is written there, under a
//! lease that lets one host at a time write it and another take it over
//! when its holder dies, so any host can list, resume and stream it.
//!
//! What is only of use where the session runs stays in the host's local
//! file: the workspace's file contents kept for rewind, outputs kept whole
//! as artifacts, and sub-agents' sessions (a resumed parent starts new
//! ones). A session is resumed on another host with its history whole;
//! rewinding there restores no files.

use bosun_core::{Session, SessionBuilder};
use bosun_store::StoreJournal;
use bosun_store_pg::{LeaseSettings, PgJournal, PgStore};

use crate::StoredSession;
use crate::config::Settings;
use crate::error::{Result, bail};
use crate::stored::{Recorded, recorded_base_url, recorded_effort};

/// Connects to the store `store_url` names, when it names one; its schema
/// brought up to this build's, leases left by dead holders on this host
/// released.
///
/// # Errors
/// When the server cannot be reached or its schema is a newer bosun's.
pub async fn connect(settings: &Settings) -> Result<Option<PgStore>> {
    match &settings.store_url {
        Some(url) => Ok(Some(PgStore::connect_to(url.clone(), LeaseSettings::default()).await?)),
        None => Ok(None),
    }
}

/// A new session's journal: in `shared` when there is one, else in the
/// local store.
pub(crate) enum NewJournal {
    Local(StoreJournal),
    Shared(PgJournal),
}

impl NewJournal {
    pub(crate) fn session_id(&self) -> &str {
        match self {
            Self::Local(journal) => journal.session_id(),
            Self::Shared(journal) => journal.session_id(),
        }
    }

    /// Builds the session `builder` describes on this journal.
    pub(crate) async fn build(self, builder: SessionBuilder) -> Result<Session> {
        Ok(match self {
            Self::Local(journal) => builder.journal(journal).build().await?,
            Self::Shared(journal) => builder.journal(journal).build().await?,
        })
    }
}

/// A new session's journal, recording the model it runs on.
pub(crate) async fn new_journal(
    local: &bosun_store::Store,
    shared: Option<&PgStore>,
    settings: &Settings,
) -> Result<NewJournal> {
    let (label, base_url) = (crate::model::model_label(settings), recorded_base_url(settings));
    let effort = recorded_effort(settings);
    Ok(match shared {
        Some(shared) => {
            NewJournal::Shared(shared.new_session().await?.with_model_at(label, base_url).with_effort(effort))
        }
        None => NewJournal::Local(local.new_session().with_model_at(label, base_url).with_effort(effort)),
    })
}

/// Stored session `id`'s journal in `shared`, its lease taken.
pub(crate) async fn open_journal(shared: &PgStore, id: &str, settings: &Settings) -> Result<PgJournal> {
    let journal = shared.open_session(id).await?;
    let journal = journal.with_model_at(crate::model::model_label(settings), recorded_base_url(settings));
    Ok(journal.with_effort(recorded_effort(settings)))
}

/// What a session in the shared store recorded of how it ran.
pub(crate) struct SharedRecord {
    id: String,
    model: Option<String>,
    base_url: Option<String>,
    effort: Option<String>,
}

impl SharedRecord {
    pub(crate) fn recorded(&self) -> Recorded<'_> {
        Recorded {
            id: &self.id,
            model: self.model.as_deref(),
            base_url: self.base_url.as_deref(),
            effort: self.effort.as_deref(),
        }
    }
}

/// The id of the session `which` names in `shared` (for
/// [`StoredSession::Latest`], the newest of the workspace whose identity
/// path is `workspace`) and what it recorded.
pub(crate) async fn find(
    shared: &PgStore,
    workspace: &str,
    which: &StoredSession,
) -> Result<(String, SharedRecord)> {
    let id = match which {
        StoredSession::Id(id) => shared.resolve_id(id).await?,
        StoredSession::Latest => match shared.list(Some(workspace), 1).await?.into_iter().next() {
            Some(latest) => latest.id,
            None => bail!("no session of this workspace to resume"),
        },
    };
    let session = shared.session(&id).await?;
    if session.parent.is_some() {
        // bosun keeps sub-agents' sessions in the local file; one here was
        // written by another program.
        bail!("session {id} is a sub-agent's: it is resumed through the session that started it");
    }
    let record = SharedRecord {
        id: id.clone(),
        model: session.model,
        base_url: session.base_url,
        effort: session.effort,
    };
    Ok((id, record))
}
