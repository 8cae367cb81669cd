//! The store: where session files live, and the handle of one open session.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use time::OffsetDateTime;

use crate::StoreError;
use crate::data::{Compaction, SessionData, TurnError, VERSION, title_from, title_given};
use crate::fsio::{self, Stamp};
use crate::project::{canonical, project_folder_name};
use mm_redact::redact_json;

/// Session files under one root: `<root>/<project>/<id>.json`.
#[derive(Clone)]
pub struct Store {
    root: PathBuf,
    secrets: Arc<[String]>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("root", &self.root)
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

/// What a list of sessions shows, read without loading the history.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    /// The session's id.
    pub id: String,
    /// The project's absolute path.
    pub cwd: PathBuf,
    /// The first question, shortened; empty until one was asked.
    pub title: String,
    /// `PROVIDER/MODEL` the session was started with.
    pub model: String,
    /// When the session was created.
    pub created_at: OffsetDateTime,
    /// When the session was last saved.
    pub updated_at: OffsetDateTime,
    /// Number of messages in the history.
    pub messages: usize,
    /// The session file.
    pub path: PathBuf,
}

/// The sessions found, most recently updated first, and the files that
/// could not be read (each error names its path and what is wrong).
#[derive(Debug, Default)]
pub struct Listing {
    /// The sessions that could be read.
    pub sessions: Vec<SessionInfo>,
    /// One error per file that could not be read.
    pub skipped: Vec<StoreError>,
}

/// A session whose questions or answers hold every word searched for.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The session, as a list shows it.
    pub info: SessionInfo,
    /// The first line of a question or answer that holds one of the words,
    /// shortened like a title.
    pub excerpt: String,
}

/// The longest list number `--resume N` takes: a longer run of digits is
/// the start of an id.
const NUMBER_DIGITS: usize = 4;

impl Store {
    /// A store rooted at `dir` (`sessions.dir`). Nothing is touched until a
    /// session is created.
    pub fn new(dir: PathBuf) -> Store {
        Store {
            root: dir,
            secrets: Arc::from(Vec::new()),
        }
    }

    /// The key values that must never reach a file: each is replaced by
    /// `[redacted]` wherever it appears when a session is saved.
    pub fn with_secrets(mut self, secrets: impl IntoIterator<Item = String>) -> Store {
        let secrets: Vec<String> = secrets.into_iter().filter(|s| !s.is_empty()).collect();
        self.secrets = Arc::from(secrets);
        self
    }

    /// The root folder.
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// The folder of the project at `cwd`.
    pub fn project_dir(&self, cwd: &Path) -> PathBuf {
        let cwd = canonical(cwd);
        self.root.join(project_folder_name(&cwd))
    }

    /// Start a new session for the project at `cwd` and take its lock. The
    /// file is written by the first [`Session::save`].
    pub fn create(&self, cwd: &Path, model: &str) -> Result<Session, StoreError> {
        let cwd = canonical(cwd);
        let dir = self.root.join(project_folder_name(&cwd));
        fsio::private_dir(&dir)?;
        let id = uuid::Uuid::now_v7().to_string();
        let lock = fsio::lock(&lock_path(&dir, &id), &id)?;
        Ok(Session {
            path: dir.join(format!("{id}.json")),
            data: SessionData::new(id, cwd, model),
            dir,
            secrets: Arc::clone(&self.secrets),
            lock: Some(lock),
            on_disk: None,
            writes: 0,
        })
    }

    /// Load session `id` of the project at `cwd` and take its lock. A file
    /// that cannot be read is reported and left as it is.
    pub fn open(&self, cwd: &Path, id: &str) -> Result<Session, StoreError> {
        if !valid_id(id) {
            return Err(StoreError::InvalidId { id: id.to_string() });
        }
        let cwd = canonical(cwd);
        let dir = self.root.join(project_folder_name(&cwd));
        let path = dir.join(format!("{id}.json"));
        match fs::symlink_metadata(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound {
                    id: id.to_string(),
                    dir,
                });
            }
            Err(e) => return Err(StoreError::io(&path, e)),
        }
        let lock = fsio::lock(&lock_path(&dir, id), id)?;
        fsio::remove_stale_temps(&dir, id)?;

        // Read and stamp through one handle, so the stamp is of these bytes.
        let mut file = File::open(&path).map_err(|e| StoreError::io(&path, e))?;
        let stamp = Stamp::of(&file.metadata().map_err(|e| StoreError::io(&path, e))?);
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io(&path, e))?;
        let data: SessionData = decode(&bytes, &path, |d: &SessionData| u64::from(d.version))?;
        check_identity(&path, id, &cwd, &data.id, &data.cwd)?;
        Ok(Session {
            data,
            path,
            dir,
            secrets: Arc::clone(&self.secrets),
            lock: Some(lock),
            on_disk: Some(stamp),
            writes: 0,
        })
    }

    /// The id of the session of the project at `cwd` that `token` names:
    /// its whole id, the start of exactly one id (eight characters are
    /// enough but for sessions begun within a minute of each other), or
    /// `N`, the Nth of [`Store::list`] (1 is the most recent; at most four
    /// digits, so a longer number is the start of an id).
    pub fn resolve(&self, cwd: &Path, token: &str) -> Result<String, StoreError> {
        let token = token.trim();
        let dir = self.project_dir(cwd);
        if !token.is_empty()
            && token.len() <= NUMBER_DIGITS
            && token.bytes().all(|b| b.is_ascii_digit())
        {
            let n: usize = token.parse().unwrap_or(0);
            let list = self.list(Some(cwd))?;
            return match n.checked_sub(1).and_then(|i| list.get(i)) {
                Some(info) => Ok(info.id.clone()),
                None => Err(StoreError::NoNumber {
                    number: n,
                    count: list.len(),
                }),
            };
        }
        if !valid_id(token) {
            return Err(StoreError::InvalidId {
                id: token.to_string(),
            });
        }
        let Some(files) = session_files(&dir)? else {
            return Err(StoreError::NotFound {
                id: token.to_string(),
                dir,
            });
        };
        let mut matching = Vec::new();
        for (id, _) in files {
            if id == token {
                return Ok(id);
            }
            if id.starts_with(token) {
                matching.push(id);
            }
        }
        matching.sort();
        match matching.len() {
            0 => Err(StoreError::NotFound {
                id: token.to_string(),
                dir,
            }),
            1 => Ok(matching.remove(0)),
            _ => Err(StoreError::Ambiguous {
                prefix: token.to_string(),
                ids: matching,
            }),
        }
    }

    /// A new session of the same project holding a copy of `from`: its
    /// history, compactions, errors, checkpoints, token counts and cache
    /// key, titled `title` (else `from`'s title with ` (fork)`), and
    /// locked. It is written by its first [`Session::save`]; `from`'s own
    /// file is never touched.
    pub fn fork(&self, from: &SessionData, title: Option<&str>) -> Result<Session, StoreError> {
        let mut session = self.create(&from.cwd, &from.model)?;
        let id = session.data.id.clone();
        let created = session.data.created_at;
        session.data = from.clone();
        session.data.id = id;
        session.data.created_at = created;
        session.data.updated_at = created;
        session.data.forked_from = Some(from.id.clone());
        session.data.title = match title.map(title_given).filter(|t| !t.is_empty()) {
            Some(title) => title,
            None => {
                let base = match (from.title.is_empty(), from.first_question()) {
                    (true, Some(q)) => title_from(q),
                    _ => from.title.clone(),
                };
                title_from(&format!("{base} (fork)"))
            }
        };
        Ok(session)
    }

    /// The sessions of the project at `cwd` (all projects when `None`)
    /// whose questions and answers, taken together, hold every one of
    /// `words` (any case), most recently updated first. Files that cannot
    /// be read are left out, as [`Store::list`] leaves them.
    pub fn search(&self, cwd: Option<&Path>, words: &[&str]) -> Result<Vec<Found>, StoreError> {
        let words: Vec<String> = words
            .iter()
            .map(|w| w.to_lowercase())
            .filter(|w| !w.is_empty())
            .collect();
        let mut found = Vec::new();
        for info in self.scan(cwd)?.sessions {
            let Ok(bytes) = fs::read(&info.path) else {
                continue;
            };
            let Ok(data) = decode(&bytes, &info.path, |d: &SessionData| u64::from(d.version))
            else {
                continue;
            };
            if let Some(excerpt) = matches(&data, &words) {
                found.push(Found { info, excerpt });
            }
        }
        Ok(found)
    }

    /// The most recently updated readable session of the project at `cwd`.
    pub fn latest(&self, cwd: &Path) -> Result<Option<SessionInfo>, StoreError> {
        Ok(self.list(Some(cwd))?.into_iter().next())
    }

    /// The sessions of the project at `cwd` (all projects when `None`), most
    /// recently updated first, unreadable files left out. [`Store::scan`]
    /// says which were left out and why.
    pub fn list(&self, cwd: Option<&Path>) -> Result<Vec<SessionInfo>, StoreError> {
        Ok(self.scan(cwd)?.sessions)
    }

    /// [`Store::list`] with the notes: unreadable files are skipped and
    /// reported in [`Listing::skipped`] (path and what is wrong); they are
    /// never touched.
    pub fn scan(&self, cwd: Option<&Path>) -> Result<Listing, StoreError> {
        let mut listing = Listing::default();
        let project = cwd.map(canonical);
        let dirs = match &project {
            Some(cwd) => vec![self.root.join(project_folder_name(cwd))],
            None => match fs::read_dir(&self.root) {
                Ok(entries) => {
                    let mut dirs = Vec::new();
                    for entry in entries {
                        let entry = entry.map_err(|e| StoreError::io(&self.root, e))?;
                        if entry.file_type().is_ok_and(|t| t.is_dir()) {
                            dirs.push(entry.path());
                        }
                    }
                    dirs
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(StoreError::io(&self.root, e)),
            },
        };
        for dir in dirs {
            for (id, path) in session_files(&dir)?.unwrap_or_default() {
                match read_info(&path, &id, project.as_deref()) {
                    Ok(Some(info)) => listing.sessions.push(info),
                    Ok(None) => {}
                    Err(e) => listing.skipped.push(e),
                }
            }
        }
        listing.sessions.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| b.id.cmp(&a.id))
        });
        Ok(listing)
    }
}

/// The sessions stored in one project's folder `dir`, as id and path:
/// `<id>.json` files with a valid id, not hidden (a save's temporary file
/// is). `None` when the folder does not exist.
fn session_files(dir: &Path) -> Result<Option<Vec<(String, PathBuf)>>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(dir, e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        if name.starts_with('.') || !valid_id(id) {
            continue;
        }
        files.push((id.to_string(), entry.path()));
    }
    Ok(Some(files))
}

/// The excerpt of `data` when its questions and answers hold every one
/// of `words` (lower-cased): the first line that holds one of them.
fn matches(data: &SessionData, words: &[String]) -> Option<String> {
    use mm_types::Message;
    let texts: Vec<&str> = data
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content, .. } | Message::Assistant { content, .. } => {
                Some(content.as_str())
            }
            _ => None,
        })
        .collect();
    let lower: Vec<String> = texts.iter().map(|t| t.to_lowercase()).collect();
    if !words
        .iter()
        .all(|w| lower.iter().any(|t| t.contains(w.as_str())))
    {
        return None;
    }
    let line = texts
        .iter()
        .flat_map(|t| t.lines())
        .find(|line| {
            let line = line.to_lowercase();
            words.iter().any(|w| line.contains(w.as_str()))
        })
        .unwrap_or("");
    Some(title_from(line))
}

/// The first fields of a session file; the history is checked for syntax
/// and counted, not built.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    version: u64,
    id: String,
    #[serde(with = "crate::pathform")]
    cwd: PathBuf,
    title: String,
    model: String,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    updated_at: OffsetDateTime,
    messages: Vec<IgnoredAny>,
}

/// `Ok(None)` for a file of another project that hashed to the same folder.
fn read_info(
    path: &Path,
    id: &str,
    project: Option<&Path>,
) -> Result<Option<SessionInfo>, StoreError> {
    let bytes = fs::read(path).map_err(|e| StoreError::io(path, e))?;
    let head: Head = decode(&bytes, path, |h: &Head| h.version)?;
    if project.is_some_and(|p| p != head.cwd) {
        return Ok(None);
    }
    check_identity(path, id, &head.cwd, &head.id, &head.cwd)?;
    Ok(Some(SessionInfo {
        id: head.id,
        cwd: head.cwd,
        title: head.title,
        model: head.model,
        created_at: head.created_at,
        updated_at: head.updated_at,
        messages: head.messages.len(),
        path: path.to_path_buf(),
    }))
}

/// The store's parsers, for the fuzz target; not an interface.
#[doc(hidden)]
pub mod fuzzing {
    use std::path::Path;

    use super::{Head, SessionData, StoreError, decode};

    /// What [`super::Store::open`] makes of a file's bytes (before it checks
    /// that the file is the session and project asked for).
    pub fn open_bytes(bytes: &[u8]) -> Result<SessionData, StoreError> {
        decode(bytes, Path::new("fuzz.json"), |d: &SessionData| {
            u64::from(d.version)
        })
    }

    /// What a listing makes of them: the id and the number of messages.
    pub fn list_bytes(bytes: &[u8]) -> Result<(String, usize), StoreError> {
        let head: Head = decode(bytes, Path::new("fuzz.json"), |h: &Head| h.version)?;
        Ok((head.id, head.messages.len()))
    }
}

/// Parse a session file, telling a newer format from a damaged file.
fn decode<T: DeserializeOwned>(
    bytes: &[u8],
    path: &Path,
    version: impl Fn(&T) -> u64,
) -> Result<T, StoreError> {
    #[derive(Deserialize)]
    struct Probe {
        version: u64,
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: "the file is empty".to_owned(),
        });
    }
    match serde_json::from_slice::<T>(bytes) {
        Ok(v) if version(&v) == u64::from(VERSION) => Ok(v),
        Ok(v) => Err(StoreError::Version {
            path: path.to_path_buf(),
            found: version(&v),
        }),
        Err(e) => match serde_json::from_slice::<Probe>(bytes) {
            Ok(p) if p.version != u64::from(VERSION) => Err(StoreError::Version {
                path: path.to_path_buf(),
                found: p.version,
            }),
            _ => Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                reason: e.to_string(),
            }),
        },
    }
}

fn check_identity(
    path: &Path,
    id: &str,
    cwd: &Path,
    found_id: &str,
    found_cwd: &Path,
) -> Result<(), StoreError> {
    if found_id != id {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("it holds session {found_id}"),
        });
    }
    if found_cwd != cwd {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("it belongs to the project {}", found_cwd.display()),
        });
    }
    Ok(())
}

/// Ids name files: only letters, digits and `-` (a uuid), nothing that
/// could leave the folder.
fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn lock_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!(".{id}.lock"))
}

/// One session held by this process: its data and its lock. Dropping it
/// releases the lock.
pub struct Session {
    /// The session's contents; change them, then [`Session::save`].
    pub data: SessionData,
    path: PathBuf,
    dir: PathBuf,
    secrets: Arc<[String]>,
    lock: Option<File>,
    /// The file as this process last read or wrote it; `None` before the
    /// first save of a new session.
    on_disk: Option<Stamp>,
    writes: u64,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.data.id)
            .field("path", &self.path)
            .field("messages", &self.data.messages.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The session's id.
    pub fn id(&self) -> &str {
        &self.data.id
    }

    /// The session's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Give the session `title` (one line, shortened like a title) and
    /// write it. An empty title is refused, the file left as it was.
    pub fn rename(&mut self, title: &str) -> Result<(), StoreError> {
        let title = title_given(title);
        if title.is_empty() {
            return Err(StoreError::EmptyTitle);
        }
        self.data.title = title;
        self.save()
    }

    /// Note a compaction that replaced `replaced` messages by `summary`.
    pub fn record_compaction(&mut self, replaced: usize, summary: impl Into<String>) {
        self.data.compactions.push(Compaction {
            at: OffsetDateTime::now_utc(),
            replaced,
            summary: summary.into(),
        });
    }

    /// Note an error that ended a turn; `place` is e.g. `generation`.
    pub fn record_error(&mut self, place: &str, message: impl Into<String>) {
        self.data.errors.push(TurnError {
            at: OffsetDateTime::now_utc(),
            place: place.to_string(),
            message: message.into(),
        });
    }

    /// Write the whole session atomically, key values redacted. Sets
    /// `updatedAt`, and the title from the first question when it has none.
    /// Refused when the file on disk is not the one this session last read
    /// or wrote: someone else's change is never overwritten silently.
    pub fn save(&mut self) -> Result<(), StoreError> {
        self.data.updated_at = OffsetDateTime::now_utc();
        if self.data.title.is_empty()
            && let Some(q) = self.data.first_question()
        {
            self.data.title = title_from(q);
        }
        let mut bytes = encode(&self.data, &self.secrets)?;
        bytes.push(b'\n');
        self.check_unchanged()?;
        self.writes += 1;
        let tmp = self.dir.join(format!(
            "{}{}.{}.tmp",
            fsio::temp_prefix(&self.data.id),
            std::process::id(),
            self.writes
        ));
        let stamp = fsio::write_atomic(&self.dir, &self.path, &tmp, &bytes)?;
        self.on_disk = Some(stamp);
        Ok(())
    }

    fn check_unchanged(&self) -> Result<(), StoreError> {
        match fs::symlink_metadata(&self.path) {
            Ok(m) if self.on_disk == Some(Stamp::of(&m)) => Ok(()),
            Ok(_) => Err(StoreError::Changed {
                path: self.path.clone(),
            }),
            // Deleted by hand: writing it again destroys nothing.
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(&self.path, e)),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // A session that never reached the disk leaves no lock file behind.
        // Nobody else can be waiting on it: `open` needs the session file.
        if self.on_disk.is_none() && !self.path.exists() {
            let _ = fs::remove_file(lock_path(&self.dir, &self.data.id));
        }
        drop(self.lock.take());
    }
}

/// The file's bytes, with every secret replaced. Redaction works on the JSON
/// value so that every string is searched, then rebuilds the typed data so
/// the file keeps its field order.
fn encode(data: &SessionData, secrets: &[String]) -> Result<Vec<u8>, StoreError> {
    let fail = |e: serde_json::Error| StoreError::Encode {
        id: data.id.clone(),
        reason: e.to_string(),
    };
    if secrets.is_empty() {
        return serde_json::to_vec_pretty(data).map_err(fail);
    }
    let mut value = serde_json::to_value(data).map_err(fail)?;
    if !redact_json(&mut value, secrets) {
        return serde_json::to_vec_pretty(data).map_err(fail);
    }
    match SessionData::deserialize(&value) {
        Ok(clean) => serde_json::to_vec_pretty(&clean).map_err(fail),
        // A secret inside a structural field: the key still stays out.
        Err(_) => serde_json::to_vec_pretty(&value).map_err(fail),
    }
}
