//! The contents of a session file. The JSON shape is the on-disk format:
//! renaming a field here needs a new `VERSION`.

use std::path::PathBuf;

use mm_types::{Message, Usage};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The session format this crate writes and reads.
pub const VERSION: u32 = 1;

/// Longest title, in characters, before it is shortened with `…`.
const TITLE_MAX: usize = 60;

/// One session as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionData {
    /// The format version ([`VERSION`] when written by this crate).
    pub version: u32,
    /// The session's id (a UUID v7), also the file's name.
    pub id: String,
    /// The project's absolute path (its bytes when it is not UTF-8).
    #[serde(with = "crate::pathform")]
    pub cwd: PathBuf,
    /// The first question, shortened (see [`title_from`]).
    pub title: String,
    /// `PROVIDER/MODEL` the session was started with.
    pub model: String,
    /// When the session was created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When the session was last saved.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// The history, compacted or not: what a resumed session continues from.
    pub messages: Vec<Message>,
    /// Every compaction of the history, oldest first.
    #[serde(default)]
    pub compactions: Vec<Compaction>,
    /// Every error that ended a turn, oldest first.
    #[serde(default)]
    pub errors: Vec<TurnError>,
    /// Checkpoints of the project's files around the turns, for `/undo`,
    /// `/redo` and `/diff`. Absent in older files and when none was taken.
    #[serde(default, skip_serializing_if = "CheckpointLog::is_empty")]
    pub checkpoints: CheckpointLog,
    /// The tokens the session's requests used, summed over its turns: the
    /// prompt (cached part included), the answers, and the part of the
    /// prompt the provider read from its cache. Absent in older files.
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
    /// The key a provider's prompt cache knows the session by (OpenAI
    /// `prompt_cache_key`), so a continued session keeps it. Absent in
    /// older files (the session id serves then).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cache_key: String,
    /// The session this one was forked from (`/fork`, `--fork`); absent
    /// for a session started afresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    /// The model's last checklist (the `todo` tool), drawn again when the
    /// session is continued. Absent when it never kept one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<mm_types::PlanItem>,
    /// What each subagent (a `task` call) did, by the call's id: its own
    /// transcript, replayed under the call. Absent when none ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<Subagent>,
}

/// One subagent's run, kept under the `task` call that started it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subagent {
    /// The id of the `task` call in the parent's history.
    pub call_id: String,
    /// The agent's name (`explore`, `general`, a file's).
    pub agent: String,
    /// The subagent's conversation: the job, its replies and tool results
    /// (its system prompt is not kept).
    pub messages: Vec<Message>,
    /// The tokens its requests used (counted in the session's too).
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
}

/// The checkpoints a session took of its project's files. Ids are opaque
/// here (git tree ids, written by mm-agent through mm-checkpoint).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointLog {
    /// The state before the session's first checkpointed turn: what
    /// `/diff` compares with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Turns that changed files and can be undone, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub done: Vec<TurnCheckpoint>,
    /// Turns undone that can be redone, the next one to redo last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undone: Vec<TurnCheckpoint>,
}

impl CheckpointLog {
    /// Nothing recorded (the field is then left out of the file).
    pub fn is_empty(&self) -> bool {
        self.start.is_none() && self.done.is_empty() && self.undone.is_empty()
    }
}

/// The checkpoints around one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCheckpoint {
    /// The files before the turn's first call that could change them.
    pub before: String,
    /// The files when the turn ended; `None` while it runs, or when mm
    /// stopped before the turn ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The turn's question, shortened like a title (for the undo line).
    pub question: String,
    /// When the `before` checkpoint was taken.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// A compaction of the history, as the session file records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compaction {
    /// When the history was compacted.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// How many messages the summary replaced.
    pub replaced: usize,
    /// The summary that replaced them; empty when the messages were dropped
    /// without one (no room for a summary).
    pub summary: String,
}

/// An error that ended a turn (the loop detector's stop, a dead server …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnError {
    /// When the error was recorded.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Where it happened, e.g. `generation`.
    #[serde(rename = "where")]
    pub place: String,
    /// The error as the user was told it.
    pub message: String,
}

impl SessionData {
    pub(crate) fn new(id: String, cwd: PathBuf, model: &str) -> Self {
        let now = OffsetDateTime::now_utc();
        SessionData {
            version: VERSION,
            id,
            cwd,
            title: String::new(),
            model: model.to_string(),
            created_at: now,
            updated_at: now,
            messages: Vec::new(),
            compactions: Vec::new(),
            errors: Vec::new(),
            checkpoints: CheckpointLog::default(),
            usage: Usage::default(),
            cache_key: String::new(),
            forked_from: None,
            plan: Vec::new(),
            subagents: Vec::new(),
        }
    }

    /// The first question of the history, if any.
    pub fn first_question(&self) -> Option<&str> {
        self.messages.iter().find_map(|m| match m {
            Message::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
    }
}

/// A title the user gave (`/rename`): one line, trimmed, cut like
/// [`title_from`]; empty when nothing but whitespace was given.
pub fn title_given(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    title_from(&line)
}

/// A session title from a question: its first non-empty line, trimmed, cut
/// to 60 characters with `…` so that a list of sessions stays one line each.
pub fn title_from(question: &str) -> String {
    let line = question
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= TITLE_MAX {
        return line.to_string();
    }
    let mut title: String = line.chars().take(TITLE_MAX - 1).collect();
    title.truncate(title.trim_end().len());
    title.push('…');
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_is_the_first_line_trimmed() {
        assert_eq!(title_from("\n  fix the build  \nplease"), "fix the build");
        assert_eq!(title_from(""), "");
    }

    #[test]
    fn long_titles_are_cut_with_an_ellipsis() {
        let q = "é".repeat(100);
        let t = title_from(&q);
        assert_eq!(t.chars().count(), 60);
        assert!(t.ends_with('…'));
        assert_eq!(t, format!("{}…", "é".repeat(59)));
        let exact = "a".repeat(60);
        assert_eq!(title_from(&exact), exact);
    }

    #[test]
    fn errors_serialise_with_the_where_key() {
        let e = TurnError {
            at: time::macros::datetime!(2026-01-02 03:04:05 UTC),
            place: "generation".into(),
            message: "stop".into(),
        };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(
            json,
            r#"{"at":"2026-01-02T03:04:05Z","where":"generation","message":"stop"}"#
        );
    }
}
