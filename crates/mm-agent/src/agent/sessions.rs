//! A session's file: creating, saving and resuming it, and what the
//! terminal does with saved sessions besides (forking, renaming,
//! searching). A child of the agent's module, so that the agent's own
//! file stays about the turn.

use mm_store::{Found, SessionData};

use super::*;
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
        data.subagents.clone_from(&self.children);
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

/// Where the session lives: its id and file, creating, saving, resuming
/// and listing it.
impl Agent {
    /// The session id, once the first question created the session file.
    pub fn session_id(&self) -> Option<String> {
        self.session.as_ref().map(|s| s.data.id.clone())
    }

    /// The session's id and file, once it has one.
    pub(crate) fn session_file(&self) -> Option<(String, PathBuf)> {
        self.session
            .as_ref()
            .map(|s| (s.data.id.clone(), s.path().to_path_buf()))
    }

    /// Create the session file now (an editor's `session/new` names it
    /// before any question). Returns its id; `None` when sessions are off.
    pub fn start_session(&mut self) -> Result<Option<String>, AgentError> {
        let Some(store) = &self.store else {
            return Ok(None);
        };
        if self.session.is_none() {
            let mut session = store.create(&self.cwd, &self.model())?;
            session.data.messages = self.history.clone();
            session.data.checkpoints = self.rewinder.log.clone();
            session.data.usage = self.usage;
            session.data.cache_key = self.cache_key.clone();
            session.save()?;
            self.session = Some(session);
        }
        Ok(self.session_id())
    }

    /// `/new`: forget the conversation, start a new session file on the next
    /// question, and reset the loop detector.
    pub fn new_session(&mut self) {
        self.hook_session_started = false;
        self.history.clear();
        self.set_checklist(Vec::new());
        self.session = None;
        self.rewinder.clear();
        self.last_answer.clear();
        self.ratio = None;
        self.usage = Usage::default();
        self.in_context = 0;
        self.cache_key = mm_engine::new_cache_key();
        self.engine = self.engine.with_cache_key(&self.cache_key);
        self.toolbox.reset_detector();
        self.jobs.kill_all();
        self.children.clear();
    }

    /// This project's saved sessions, most recent first.
    pub fn sessions(&self) -> Result<Vec<SessionInfo>, AgentError> {
        match &self.store {
            Some(store) => Ok(store.list(Some(&self.cwd))?),
            None => Err(AgentError::SessionsDisabled),
        }
    }

    /// This project's session files that cannot be read, each named with
    /// what is wrong (they are left as they are): what `/sessions` shows
    /// after the list.
    pub fn unreadable_sessions(&self) -> Vec<Unreadable> {
        match &self.store {
            Some(store) => store
                .scan(Some(&self.cwd))
                .map(|l| Unreadable::of(&l))
                .unwrap_or_default(),
            None => Vec::new(),
        }
    }

    /// Continue session `id` (or the latest of this project when `None`).
    pub fn resume(&mut self, id: Option<&str>) -> Result<String, AgentError> {
        let store = self.store.as_ref().ok_or(AgentError::SessionsDisabled)?;
        let id = match id {
            // The whole id, its start, or the list's number.
            Some(id) => store.resolve(&self.cwd, id)?,
            None => latest_session(&store.scan(Some(&self.cwd))?, &self.cwd)?,
        };
        if self.session_id().as_deref() == Some(id.as_str()) {
            return Ok(id);
        }
        // Open first: a failed open keeps the current session as it was.
        let session = store.open(&self.cwd, &id)?;
        // A process killed mid-tool leaves calls without results; give them
        // the not-run result so the next request is valid.
        self.history = history::close_open_calls(&session.data.messages);
        self.last_answer = self
            .history
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Assistant { content, .. } if !content.is_empty() => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        self.rewinder.log = session.data.checkpoints.clone();
        self.set_checklist(session.data.plan.clone());
        self.children = session.data.subagents.clone();
        self.usage = session.data.usage;
        self.in_context = compact::estimate_tokens(self.request_chars(), self.ratio);
        self.cache_key = if session.data.cache_key.is_empty() {
            session.data.id.clone()
        } else {
            session.data.cache_key.clone()
        };
        self.engine = self.engine.with_cache_key(&self.cache_key);
        self.session = Some(session);
        Ok(id)
    }

    pub(super) fn record_error(&mut self, text: &str) {
        if let Some(session) = self.session.as_mut() {
            session.record_error("generation", text);
        }
    }

    /// [`Agent::save`] with `calls` recorded as [`INTERRUPTED`], what the
    /// file must say if mm dies while they run. Later calls of the
    /// same reply have no result yet: on `--continue` they get the not-run
    /// one, which is true of them.
    pub(super) fn save_running(&mut self, sink: &Arc<dyn Sink>, calls: &[ToolCall]) {
        for call in calls {
            let running = Message::tool_result(&call.id, &call.name, INTERRUPTED, true);
            self.history.push(running);
        }
        self.save(sink);
        self.history.truncate(self.history.len() - calls.len());
    }

    /// Write the session file (created on the first question). A failure is
    /// shown, never fatal: the conversation goes on in memory, and the
    /// turn's report says it was not saved.
    pub(super) fn save(&mut self, sink: &Arc<dyn Sink>) {
        let Some(store) = &self.store else {
            return;
        };
        if self.session.is_none() {
            if self.history.is_empty() {
                return;
            }
            match store.create(&self.cwd, &self.model()) {
                Ok(session) => self.session = Some(session),
                Err(e) => {
                    self.save_failed(sink, &e);
                    return;
                }
            }
        }
        let plan = self.checklist();
        if let Some(session) = self.session.as_mut() {
            session.data.messages = self.history.clone();
            session.data.checkpoints = self.rewinder.log.clone();
            session.data.usage = self.usage;
            session.data.cache_key.clone_from(&self.cache_key);
            session.data.plan = plan;
            session.data.subagents.clone_from(&self.children);
            match session.save() {
                Ok(()) => self.not_saved = None,
                Err(e) => self.save_failed(sink, &e),
            }
        }
    }

    pub(super) fn save_failed(&mut self, sink: &Arc<dyn Sink>, e: &mm_store::StoreError) {
        let text = format!("session not saved: {e}");
        sink.event(Event::Error { text: text.clone() });
        self.not_saved = Some(text);
    }
}
