//! What the terminal does with saved sessions besides resuming them:
//! forking, renaming and searching. A child of the agent's module, so
//! that the agent's own file stays about the turn.

use mm_store::{Found, SessionData};

use super::{Agent, AgentError, secrets};
use crate::commands::export::{self, Heading};

impl Agent {
    /// `/fork [title]`: go on in a new session that holds a copy of this
    /// one (history, checkpoints, token counts), titled `title` or this
    /// one's title with ` (fork)`. The session left keeps its file exactly
    /// as it was. Returns the new session's id and the old one's.
    pub fn fork(&mut self, title: Option<&str>) -> Result<(String, String), AgentError> {
        if self.history.is_empty() {
            return Err(AgentError::NothingToFork);
        }
        if self.store.is_none() {
            return Err(AgentError::SessionsDisabled);
        }
        if self.session.is_none() {
            // Never written (a save failed): the original is written now,
            // so the fork has something to be a fork of.
            self.start_session()?;
        }
        let (Some(store), Some(data)) = (&self.store, self.snapshot()) else {
            return Err(AgentError::SessionsDisabled);
        };
        let mut fork = store.fork(&data, title)?;
        fork.save()?;
        let ids = (fork.id().to_owned(), data.id);
        // The old session's lock goes with it; its file is not written.
        self.session = Some(fork);
        self.not_saved = None;
        Ok(ids)
    }

    /// An editor's `session/fork`: this agent (new, of the same project)
    /// goes on from a copy of `from`'s session, which is left as it is.
    /// Returns the new session's id.
    pub fn fork_from(&mut self, from: &Agent) -> Result<String, AgentError> {
        if from.history.is_empty() {
            return Err(AgentError::NothingToFork);
        }
        let (Some(store), Some(mut data)) = (&self.store, from.snapshot()) else {
            return Err(AgentError::SessionsDisabled);
        };
        data.cwd.clone_from(&self.cwd);
        let mut fork = store.fork(&data, None)?;
        fork.save()?;
        self.history = from.history.clone();
        self.last_answer.clone_from(&from.last_answer);
        self.rewinder.log = from.rewinder.log.clone();
        self.usage = from.usage;
        self.in_context = from.in_context;
        self.cache_key.clone_from(&from.cache_key);
        self.engine = self.engine.with_cache_key(&self.cache_key);
        let id = fork.id().to_owned();
        self.session = Some(fork);
        Ok(id)
    }

    /// What the session file would hold if it were saved now; `None`
    /// before it was written.
    fn snapshot(&self) -> Option<SessionData> {
        let mut data = self.session.as_ref()?.data.clone();
        data.messages = self.history.clone();
        data.checkpoints = self.rewinder.log.clone();
        data.usage = self.usage;
        data.cache_key.clone_from(&self.cache_key);
        Some(data)
    }

    /// `/rename TITLE`: the session's title in lists, written at once (a
    /// session not yet written is started for it).
    pub fn rename(&mut self, title: &str) -> Result<String, AgentError> {
        if self.start_session()?.is_none() {
            return Err(AgentError::SessionsDisabled);
        }
        let session = self.session.as_mut().ok_or(AgentError::SessionsDisabled)?;
        session.rename(title)?;
        Ok(session.data.title.clone())
    }

    /// The session's title: the user's, else its first question's; `None`
    /// before the session is written.
    pub fn session_title(&self) -> Option<String> {
        self.session.as_ref().map(|s| s.data.title.clone())
    }

    /// `/export`: the conversation as Markdown, key values redacted as
    /// in the session file.
    pub fn export_markdown(&self) -> String {
        let title = self.session_title().unwrap_or_default();
        let id = self.session_id();
        let model = self.model();
        let text = export::markdown(
            &Heading {
                title: &title,
                id: id.as_deref(),
                model: &model,
                cwd: &self.cwd,
            },
            &self.history,
        );
        mm_redact::redact(&text, &secrets(&self.config, &self.engine))
    }

    /// `/sessions WORDS`: the sessions of this project (of every project
    /// with `all_projects`) whose questions and answers hold every word,
    /// most recent first.
    pub fn search_sessions(
        &self,
        words: &[&str],
        all_projects: bool,
    ) -> Result<Vec<Found>, AgentError> {
        let store = self.store.as_ref().ok_or(AgentError::SessionsDisabled)?;
        let cwd = (!all_projects).then_some(self.cwd.as_path());
        Ok(store.search(cwd, words)?)
    }
}
