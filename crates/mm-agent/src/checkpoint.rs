//! Undo and redo of a turn's changes to files, whatever tool made them.
//!
//! Before the first call of a turn that may change files, the agent records
//! a checkpoint of the project (mm-checkpoint), and another when the turn
//! ends. A turn that changed nothing leaves no entry. `/undo` brings the
//! files the last turn changed back to the first checkpoint, refusing to
//! overwrite a file changed after the turn unless forced; `/redo` goes
//! forward again. The ids live in the session file, so both work after
//! `--continue`. Recording runs git, so it runs off the async threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mm_checkpoint::{Change, ChangeKind, Checkpoint, CheckpointError, Checkpoints, Restore};
use mm_config::CheckpointSettings;
use mm_store::{CheckpointLog, TurnCheckpoint, title_from};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

/// The spinner's words while the first change of a turn waits for its
/// checkpoint.
pub const RECORDING: &str = "Recording a checkpoint";

/// Most files named in the history line of an undo or a redo.
const NAMED_FILES: usize = 20;

/// Which way a restore goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `/undo`: back to the state before the last turn.
    Undo,
    /// `/redo`: forward to the state after the turn undone last.
    Redo,
}

impl Direction {
    /// The command's name, without the slash.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Undo => "undo",
            Direction::Redo => "redo",
        }
    }
}

/// What `/undo` or `/redo` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewind {
    /// The files are back; the turn's question and what happened to each
    /// file (`Added`: recreated, `Deleted`: removed, `Modified`: restored).
    Done {
        /// The question of the turn undone or redone.
        question: String,
        /// Each file touched, relative to the session's root.
        changes: Vec<Change>,
    },
    /// Nothing was written: these files changed after the turn (or after
    /// its undo), or stand where a file must come back; `force` goes on and
    /// moves each aside as `<name>.mm-undo-<n>`.
    Conflicts(Vec<PathBuf>),
}

/// Why there is nothing to undo or show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewindError {
    /// `checkpoints: false`.
    #[error("checkpoints are off (checkpoints: false)")]
    Off,
    /// Checkpoints cannot work here (no git, the home folder …).
    #[error("{0}")]
    Unavailable(String),
    /// No turn of this session changed files, or all were undone.
    #[error("nothing to {}: no turn of this session changed files{}", .0.name(), if *.0 == Direction::Redo { " after an undo" } else { "" })]
    Nothing(Direction),
    /// Git failed while recording or restoring.
    #[error("{0}")]
    Failed(String),
}

impl From<CheckpointError> for RewindError {
    fn from(e: CheckpointError) -> Self {
        RewindError::Failed(e.to_string())
    }
}

/// The checkpoint state of one agent.
pub(crate) struct Rewinder {
    settings: CheckpointSettings,
    root: PathBuf,
    /// Opened on first use: `None` before, then the handle or why not.
    handle: Option<Result<Arc<Checkpoints>, String>>,
    /// What the session file holds.
    pub log: CheckpointLog,
    /// The running turn recorded its checkpoint before (its entry is the
    /// last of `log.done`).
    taken: bool,
    /// The running turn asked for a checkpoint already (taken or not).
    tried: bool,
    /// The running turn's question.
    question: String,
}

impl Rewinder {
    pub fn new(settings: &CheckpointSettings, root: &Path) -> Rewinder {
        Rewinder {
            settings: settings.clone(),
            root: root.to_path_buf(),
            handle: None,
            log: CheckpointLog::default(),
            taken: false,
            tried: false,
            question: String::new(),
        }
    }

    /// A turn begins with `question`.
    pub fn start_turn(&mut self, question: &str) {
        self.taken = false;
        self.tried = false;
        self.question = question.to_string();
    }

    /// Forget every checkpoint (a new conversation).
    pub fn clear(&mut self) {
        self.log = CheckpointLog::default();
        self.start_turn("");
    }

    /// The handle, opening it on first use. `Err` once and for all when
    /// checkpoints are off or cannot work here.
    async fn handle(&mut self) -> Result<Arc<Checkpoints>, RewindError> {
        if !self.settings.enabled {
            return Err(RewindError::Off);
        }
        if self.handle.is_none() {
            let root = self.root.clone();
            let store = self
                .settings
                .dir
                .join(mm_store::project_folder_name(&canonical(&root)));
            let opened = blocking(move || {
                Checkpoints::open(&root, &store, mm_checkpoint::Options::default())
            })
            .await
            .map(Arc::new)
            .map_err(|e| format!("checkpoints are off here: {e}"));
            self.handle = Some(opened);
        }
        match &self.handle {
            Some(Ok(h)) => Ok(h.clone()),
            Some(Err(why)) => Err(RewindError::Unavailable(why.clone())),
            None => Err(RewindError::Unavailable("checkpoints did not open".into())),
        }
    }

    /// Whether [`Rewinder::before_change`] would record now (the first
    /// change of a turn, checkpoints on): the front end then says so, since
    /// a first checkpoint of a large folder takes a while.
    pub fn will_record(&self) -> bool {
        !self.tried && self.settings.enabled
    }

    /// Before a call that may change files: record the files once per turn.
    /// `Some(text)` is a notice for the user (checkpoints unavailable, said
    /// once per session; a checkpoint that failed). Cancelling stops the
    /// recording at once (its git command killed), with no notice: the
    /// turn ends and runs nothing.
    pub async fn before_change(&mut self, cancel: &CancellationToken) -> Option<String> {
        if self.tried || !self.settings.enabled {
            return None;
        }
        self.tried = true;
        let first_open = self.handle.is_none();
        let handle = match self.handle().await {
            Ok(h) => h,
            Err(RewindError::Unavailable(why)) if first_open => return Some(why),
            Err(_) => return None,
        };
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stoppable = handle.stopped_by(stop.clone());
        let mut recording = std::pin::pin!(blocking(move || stoppable.record()));
        let recorded = tokio::select! {
            recorded = &mut recording => recorded,
            () = cancel.cancelled() => {
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
                // Ends at once: the git command is killed, none other starts.
                recording.await
            }
        };
        match recorded {
            Ok(recorded) => {
                let before = recorded.checkpoint.to_string();
                if self.log.start.is_none() {
                    self.log.start = Some(before.clone());
                }
                self.log.done.push(TurnCheckpoint {
                    before,
                    after: None,
                    question: title_from(&self.question),
                    at: OffsetDateTime::now_utc(),
                });
                self.taken = true;
                None
            }
            Err(CheckpointError::Stopped) => None,
            Err(e) => Some(format!(
                "no checkpoint before this turn's changes (/undo cannot undo them): {e}"
            )),
        }
    }

    /// When a turn ends: record where it left the files. A turn that
    /// changed nothing leaves no entry; one that changed files ends what
    /// `/redo` could bring back. `Some(text)` is a notice for the user.
    pub async fn after_turn(&mut self) -> Option<String> {
        if !std::mem::take(&mut self.taken) {
            return None;
        }
        let Ok(handle) = self.handle().await else {
            return None;
        };
        let keep = self.settings.keep.max(1) as usize;
        let recorder = handle.clone();
        match blocking(move || recorder.record()).await {
            Ok(recorded) => {
                let after = recorded.checkpoint.to_string();
                let unchanged = self
                    .log
                    .done
                    .last()
                    .is_some_and(|entry| entry.before == after);
                if unchanged {
                    self.log.done.pop();
                    return None;
                }
                if let Some(entry) = self.log.done.last_mut() {
                    entry.after = Some(after);
                }
                self.log.undone.clear();
                if self.log.done.len() > keep {
                    let extra = self.log.done.len() - keep;
                    self.log.done.drain(..extra);
                }
                let kept = self.kept();
                // Pruning is housekeeping: a failure costs disk, not undo.
                if let Err(e) = blocking(move || handle.prune(&kept)).await {
                    tracing::warn!("checkpoint pruning failed: {e}");
                }
                None
            }
            Err(e) => Some(format!(
                "no checkpoint after this turn (/undo will compare with the files as they are then): {e}"
            )),
        }
    }

    /// Every checkpoint the session still refers to.
    fn kept(&self) -> Vec<Checkpoint> {
        let log = &self.log;
        log.start
            .iter()
            .chain(
                log.done
                    .iter()
                    .chain(&log.undone)
                    .flat_map(|t| std::iter::once(&t.before).chain(&t.after)),
            )
            .filter_map(|id| Checkpoint::parse(id).ok())
            .collect()
    }

    /// `/undo` or `/redo`, forced or not.
    pub async fn rewind(
        &mut self,
        direction: Direction,
        force: bool,
    ) -> Result<Rewind, RewindError> {
        let handle = self.handle().await?;
        let stack = match direction {
            Direction::Undo => &self.log.done,
            Direction::Redo => &self.log.undone,
        };
        let Some(mut entry) = stack.last().cloned() else {
            return Err(RewindError::Nothing(direction));
        };
        let before = parse(&entry.before)?;
        let after = match &entry.after {
            Some(id) => parse(id)?,
            // The turn never ended (mm stopped during it): its end is the
            // files as they are now.
            None => {
                let h = handle.clone();
                let now = blocking(move || h.record()).await?.checkpoint;
                entry.after = Some(now.to_string());
                now
            }
        };
        let (target, expected) = match direction {
            Direction::Undo => (before, after),
            Direction::Redo => (after, before),
        };
        let outcome = blocking(move || handle.restore(&target, &expected, force)).await?;
        match outcome {
            Restore::Conflicts(paths) => Ok(Rewind::Conflicts(paths)),
            Restore::Done(changes) => {
                let question = entry.question.clone();
                match direction {
                    Direction::Undo => {
                        self.log.done.pop();
                        self.log.undone.push(entry);
                    }
                    Direction::Redo => {
                        self.log.undone.pop();
                        self.log.done.push(entry);
                    }
                }
                Ok(Rewind::Done { question, changes })
            }
        }
    }

    /// `/diff`: a unified diff of the files since the session's first
    /// checkpoint; empty when nothing differs.
    pub async fn diff(&mut self) -> Result<String, RewindError> {
        let handle = self.handle().await?;
        let Some(start) = self.log.start.clone() else {
            return Ok(String::new());
        };
        let start = parse(&start)?;
        let h = handle.clone();
        let now = blocking(move || h.record()).await?.checkpoint;
        Ok(blocking(move || handle.diff(&start, &now)).await?)
    }
}

/// The line the history gets after an undo or a redo, so that the model
/// knows its earlier changes are gone (or back).
pub fn history_line(direction: Direction, question: &str, changes: &[Change]) -> String {
    let what = match direction {
        Direction::Undo => format!(
            "the user undid the file changes of the turn \"{question}\"; the files are as they were before it"
        ),
        Direction::Redo => format!(
            "the user redid the file changes of the turn \"{question}\"; the files are as that turn left them"
        ),
    };
    if changes.is_empty() {
        return format!("[/{}: {what} (no file needed restoring)]", direction.name());
    }
    format!(
        "[/{}: {what}: {}]",
        direction.name(),
        files_line(direction, changes)
    )
}

/// `a.txt restored, b.txt recreated, c.txt removed` (at most
/// `NAMED_FILES`, then `and N more`). A file whose way was cleared by a
/// forced restore is always named, with where the user's file went:
/// `notes recreated (notes/ moved to notes.mm-undo-1/)`.
pub fn files_line(direction: Direction, changes: &[Change]) -> String {
    let with_kept = changes.iter().filter(|c| !c.kept.is_empty()).count();
    let mut plain = NAMED_FILES.saturating_sub(with_kept);
    let mut parts: Vec<String> = Vec::new();
    for c in changes {
        if c.kept.is_empty() {
            if plain == 0 {
                continue;
            }
            plain -= 1;
        }
        let verb = match (c.kind, direction) {
            (ChangeKind::Added, _) => "recreated",
            (ChangeKind::Deleted, _) => "removed",
            (ChangeKind::Modified, Direction::Undo) => "restored",
            (ChangeKind::Modified, Direction::Redo) => "changed again",
        };
        let mut part = format!("{} {verb}", c.path.display());
        if !c.kept.is_empty() {
            let moves: Vec<String> = c
                .kept
                .iter()
                .map(|k| format!("{} moved to {}", k.path.display(), k.backup.display()))
                .collect();
            part.push_str(&format!(" ({})", moves.join("; ")));
        }
        parts.push(part);
    }
    if changes.len() > parts.len() {
        parts.push(format!("and {} more", changes.len() - parts.len()));
    }
    parts.join(", ")
}

fn parse(id: &str) -> Result<Checkpoint, RewindError> {
    Checkpoint::parse(id).map_err(|e| RewindError::Failed(format!("session file: {e}")))
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Run git work on the blocking threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CheckpointError> + Send + 'static,
) -> Result<T, CheckpointError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(e) => Err(CheckpointError::Git {
            command: "checkpoint".into(),
            message: format!("the checkpoint task ended early: {e}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mm_checkpoint::Kept;

    fn change(path: &str, kind: ChangeKind) -> Change {
        Change {
            path: PathBuf::from(path),
            kind,
            kept: Vec::new(),
        }
    }

    #[test]
    fn the_history_line_says_what_happened_to_each_file() {
        let changes = [
            change("a.txt", ChangeKind::Modified),
            change("b.txt", ChangeKind::Added),
            change("c.txt", ChangeKind::Deleted),
        ];
        assert_eq!(
            history_line(Direction::Undo, "fix the parser", &changes),
            "[/undo: the user undid the file changes of the turn \"fix the parser\"; the files are as they were before it: a.txt restored, b.txt recreated, c.txt removed]"
        );
        assert!(
            history_line(Direction::Redo, "q", &changes[..1]).ends_with(": a.txt changed again]")
        );
        let many: Vec<Change> = (0..25)
            .map(|i| change(&format!("f{i}"), ChangeKind::Deleted))
            .collect();
        assert!(files_line(Direction::Undo, &many).ends_with("f19 removed, and 5 more"));
    }

    #[test]
    fn what_a_forced_undo_moved_aside_is_always_named() {
        let mut many: Vec<Change> = (0..25)
            .map(|i| change(&format!("f{i}"), ChangeKind::Deleted))
            .collect();
        many[24] = Change {
            kept: vec![Kept {
                path: PathBuf::from("notes/"),
                backup: PathBuf::from("notes.mm-undo-1/"),
            }],
            ..change("notes", ChangeKind::Added)
        };
        let line = files_line(Direction::Undo, &many);
        assert!(line.starts_with("f0 removed, "), "{line}");
        assert!(
            line.ends_with(
                "f18 removed, notes recreated (notes/ moved to notes.mm-undo-1/), and 5 more"
            ),
            "{line}"
        );
    }
}
