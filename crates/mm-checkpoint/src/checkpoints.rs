//! Opening the checkpoints of a folder, recording one, comparing two.

use std::collections::{BTreeSet, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use crate::error::CheckpointError;
use crate::git::{Git, PRIVATE_CONFIG, filter_overrides, sanitized_env};
use crate::raw::{self, RawChange};
use crate::{Change, ChangeKind, Checkpoint, Recorded};

/// Largest file recorded by default: larger ones are left out, so that a
/// data set or a build artefact that is not ignored is not copied into the
/// object database at every turn.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 32 * 1024 * 1024;

/// How old an unreferenced object of the private store must be before
/// [`Checkpoints::prune`] deletes it (the same two weeks as git's own
/// `gc.pruneExpire` default, so both stores keep checkpoints as long).
const PRUNE_EXPIRE: &str = "2.weeks.ago";

/// The private store is pruned at most this often.
const PRUNE_EVERY: Duration = Duration::from_secs(24 * 3600);

/// Choices for [`Checkpoints::open`].
#[derive(Debug, Clone)]
pub struct Options {
    /// Files larger than this many bytes are not recorded.
    pub max_file_size: u64,
    /// The environment git starts from, before every `GIT_*` variable is
    /// removed from it; `None` is this process's environment.
    pub env: Option<Vec<(OsString, OsString)>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            env: None,
        }
    }
}

/// Where the checkpoints of a folder are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// In the git repository whose working tree starts at `top`.
    Repository {
        /// The top of the working tree.
        top: PathBuf,
    },
    /// In mm's private bare repository `store`, for a folder outside git.
    Private {
        /// The private repository.
        store: PathBuf,
    },
}

/// The checkpoints of one folder: record, compare, restore.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    pub(crate) git: Git,
    /// The top of the tree a checkpoint holds (the repository's top, or the
    /// folder itself outside git).
    pub(crate) top: PathBuf,
    /// The folder, relative to `top` (empty when it is the top).
    pub(crate) prefix: PathBuf,
    pub(crate) location: Location,
    /// The index each checkpoint starts from: the user's (copied, never
    /// written), or the private store's own.
    pub(crate) seed: PathBuf,
    pub(crate) max_file_size: u64,
}

/// A temporary folder for one operation: its index and an empty hooks
/// folder. Removed when dropped.
pub(crate) struct Scratch {
    dir: tempfile::TempDir,
    pub hooks: PathBuf,
    pub index: PathBuf,
}

impl Scratch {
    /// In the system's temporary folder, or in `base` (the private store,
    /// so that its index can be renamed into place).
    pub fn new(base: Option<&Path>) -> Result<Scratch, CheckpointError> {
        let builder = {
            let mut b = tempfile::Builder::new();
            b.prefix("mm-checkpoint-");
            b
        };
        let dir = match base {
            Some(base) => builder.tempdir_in(base),
            None => builder.tempdir(),
        }
        .map_err(|e| CheckpointError::io(base.unwrap_or(&std::env::temp_dir()), e))?;
        let hooks = dir.path().join("hooks");
        fs::create_dir(&hooks).map_err(|e| CheckpointError::io(&hooks, e))?;
        let index = dir.path().join("index");
        Ok(Scratch { dir, hooks, index })
    }

    /// The folder itself.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Bytes from git as a path.
pub(crate) fn bytes_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// `out` without its one final newline.
fn chomp(out: &[u8]) -> &[u8] {
    out.strip_suffix(b"\n").unwrap_or(out)
}

impl Checkpoints {
    /// The checkpoints of `folder`. In a git repository they live in its
    /// object database; outside git in `private_store`, a bare repository
    /// created on first use (mode 0700). Fails when git is missing, when
    /// `folder` is inside a `.git` directory, and outside git when `folder`
    /// is `/` or the home directory.
    pub fn open(
        folder: &Path,
        private_store: &Path,
        options: Options,
    ) -> Result<Checkpoints, CheckpointError> {
        let folder = fs::canonicalize(folder).map_err(|e| CheckpointError::io(folder, e))?;
        let env = sanitized_env(options.env.unwrap_or_else(|| std::env::vars_os().collect()));
        let probe = Git {
            env,
            cwd: folder.clone(),
            prefix: Vec::new(),
            stop: None,
        };
        let scratch = Scratch::new(None)?;
        let found = probe
            .run(
                &scratch.hooks,
                ["rev-parse", "--is-inside-work-tree", "--show-toplevel"],
            )
            .output();
        match found {
            Ok(out) => {
                let top = out
                    .strip_prefix(b"true\n")
                    .ok_or_else(|| CheckpointError::InsideGitDir(folder.clone()))?;
                let top = bytes_path(chomp(top));
                let index = probe
                    .run(
                        &scratch.hooks,
                        ["rev-parse", "--path-format=absolute", "--git-path", "index"],
                    )
                    .output()?;
                let prefix = relative_to(&folder, &top);
                Ok(Checkpoints {
                    git: Git {
                        cwd: top.clone(),
                        ..probe
                    },
                    location: Location::Repository { top: top.clone() },
                    top,
                    prefix,
                    seed: bytes_path(chomp(&index)),
                    max_file_size: options.max_file_size,
                })
            }
            Err(CheckpointError::Git { message, .. })
                if message.contains("must be run in a work tree") =>
            {
                Err(CheckpointError::InsideGitDir(folder))
            }
            Err(CheckpointError::Git { message, .. })
                if message.contains("not a git repository") =>
            {
                open_private(probe, folder, private_store, options.max_file_size)
            }
            Err(e) => Err(e),
        }
    }

    /// Where the checkpoints are kept.
    pub fn location(&self) -> &Location {
        &self.location
    }

    pub(crate) fn scratch(&self) -> Result<Scratch, CheckpointError> {
        match &self.location {
            Location::Private { store } => Scratch::new(Some(store)),
            Location::Repository { .. } => Scratch::new(None),
        }
    }

    /// The same checkpoints, whose git commands stop (the running one
    /// killed) once `stop` is set: their work then ends in
    /// [`CheckpointError::Stopped`]. A first checkpoint outside git reads
    /// every file, which takes seconds in a large folder; a cancelled turn
    /// must not wait for it.
    pub fn stopped_by(&self, stop: Arc<AtomicBool>) -> Checkpoints {
        let mut stoppable = self.clone();
        stoppable.git.stop = Some(stop);
        stoppable
    }

    /// Record the files as they are now.
    pub fn record(&self) -> Result<Recorded, CheckpointError> {
        let scratch = self.scratch()?;
        let index = &scratch.index;
        let (git, drivers) = self.without_filters(&scratch)?;
        seed_index(&self.seed, index)?;
        // Tracked files that differ from the index (deleted ones included)
        // and files that are neither tracked nor ignored.
        let listed = git
            .run(
                &scratch.hooks,
                ["ls-files", "-z", "-m", "-o", "--exclude-standard"],
            )
            .index(index)
            .output()?;
        let mut listed: BTreeSet<&[u8]> = raw::names(&listed).collect();
        // A file under a filter is stored as the filter made it (Git LFS
        // stores a pointer): its entry in the user's index is not the bytes
        // on disk, and restoring it without the filter would write that
        // stored form. Such files are read again, as they are, every time.
        let filtered = self.filtered(&git, &scratch, &drivers)?;
        if !filtered.is_empty() {
            let names: Vec<&[u8]> = raw::names(&filtered).collect();
            git.run(
                &scratch.hooks,
                ["update-index", "-z", "--force-remove", "--stdin"],
            )
            .index(index)
            .stdin(nul_joined(&names))
            .output()?;
            listed.extend(names);
        }
        let sorted = self.sort(listed);
        if !sorted.gone.is_empty() {
            // Gone, or now beyond a symbolic link (which git refuses to
            // look through): out of the checkpoint.
            git.run(
                &scratch.hooks,
                ["update-index", "-z", "--force-remove", "--stdin"],
            )
            .index(index)
            .stdin(nul_joined(&sorted.gone))
            .output()?;
        }
        if !sorted.update.is_empty() {
            // `--remove` drops the entries of files that became a folder;
            // `--replace` lets a file take the place of a folder and the
            // other way round.
            git.run(
                &scratch.hooks,
                [
                    "update-index",
                    "-z",
                    "--add",
                    "--remove",
                    "--replace",
                    "--stdin",
                ],
            )
            .index(index)
            .stdin(nul_joined(&sorted.update))
            .output()?;
        }
        let tree = git
            .run(&scratch.hooks, ["write-tree"])
            .index(index)
            .output()?;
        let checkpoint = Checkpoint::parse(String::from_utf8_lossy(chomp(&tree)).trim())?;
        if let Location::Private { .. } = self.location {
            // The store's index keeps the files' stat data: the next
            // checkpoint reads only what changed.
            fs::rename(index, &self.seed).map_err(|e| CheckpointError::io(&self.seed, e))?;
        }
        Ok(Recorded {
            checkpoint,
            skipped: sorted.skipped.iter().map(|p| self.display(p)).collect(),
        })
    }

    /// This tree's git with every content filter of the configuration
    /// turned off (see [`filter_overrides`]), and the filters' names. Read
    /// again for each operation: the configuration may change meanwhile.
    pub(crate) fn without_filters(
        &self,
        scratch: &Scratch,
    ) -> Result<(Git, Vec<Vec<u8>>), CheckpointError> {
        let config = self
            .git
            .run(&scratch.hooks, ["config", "--list", "-z"])
            .output()?;
        let (args, drivers) = filter_overrides(&config);
        Ok((self.git.with(args), drivers))
    }

    /// The NUL-separated names of the index `scratch.index` whose
    /// `.gitattributes` name one of `drivers` as their filter.
    fn filtered(
        &self,
        git: &Git,
        scratch: &Scratch,
        drivers: &[Vec<u8>],
    ) -> Result<Vec<u8>, CheckpointError> {
        if drivers.is_empty() {
            return Ok(Vec::new());
        }
        let tracked = git
            .run(&scratch.hooks, ["ls-files", "-z", "--cached"])
            .index(&scratch.index)
            .output()?;
        if tracked.is_empty() {
            return Ok(Vec::new());
        }
        let attrs = git
            .run(&scratch.hooks, ["check-attr", "-z", "--stdin", "filter"])
            .index(&scratch.index)
            .stdin(tracked)
            .output()?;
        // `<path> NUL filter NUL <value> NUL` for each name.
        let fields: Vec<&[u8]> = attrs.split(|b| *b == 0).collect();
        let mut out = Vec::new();
        for record in fields.chunks_exact(3) {
            if drivers.iter().any(|d| d.as_slice() == record[2]) {
                out.extend_from_slice(record[0]);
                out.push(0);
            }
        }
        Ok(out)
    }

    /// Decide what to do with each listed name.
    fn sort<'a>(&self, listed: BTreeSet<&'a [u8]>) -> Sorted<'a> {
        let mut sorted = Sorted::default();
        let mut real_dirs: HashSet<PathBuf> = HashSet::new();
        for name in listed {
            if name.ends_with(b"/") {
                // A nested repository that is not a submodule: left alone.
                continue;
            }
            let path = self.top.join(OsStr::from_bytes(name));
            if !self.under_real_folders(&path, &mut real_dirs) {
                sorted.gone.push(name);
                continue;
            }
            match fs::symlink_metadata(&path) {
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                    ) =>
                {
                    sorted.gone.push(name)
                }
                Err(_) => sorted.skipped.push(name),
                Ok(m) if m.is_dir() => {
                    // A submodule stays as the index has it; a tracked file
                    // that became a folder leaves the index (the files in
                    // the folder are listed on their own).
                    if !path.join(".git").exists() {
                        sorted.update.push(name);
                    }
                }
                Ok(m) if m.file_type().is_symlink() => sorted.update.push(name),
                Ok(m) if m.is_file() => {
                    if m.len() > self.max_file_size || fs::File::open(&path).is_err() {
                        sorted.skipped.push(name);
                    } else {
                        sorted.update.push(name);
                    }
                }
                Ok(_) => sorted.skipped.push(name),
            }
        }
        sorted
    }

    /// Whether every folder between the top and `path` is a real folder
    /// (not a symbolic link, not a file); `known` remembers those seen.
    fn under_real_folders(&self, path: &Path, known: &mut HashSet<PathBuf>) -> bool {
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == self.top.as_path() || known.contains(d) {
                return true;
            }
            match fs::symlink_metadata(d) {
                Ok(m) if m.is_dir() => {
                    known.insert(d.to_path_buf());
                }
                _ => return false,
            }
            dir = d.parent();
        }
        true
    }

    /// The files that differ between two checkpoints (submodules left out).
    pub fn changes(
        &self,
        from: &Checkpoint,
        to: &Checkpoint,
    ) -> Result<Vec<Change>, CheckpointError> {
        let scratch = self.scratch()?;
        Ok(self
            .raw_diff(&scratch, from, to)?
            .into_iter()
            .filter(|c| !c.is_gitlink())
            .map(|c| Change {
                path: self.display(&c.path),
                kind: match (&c.from, &c.to) {
                    (None, _) => ChangeKind::Added,
                    (_, None) => ChangeKind::Deleted,
                    _ => ChangeKind::Modified,
                },
                kept: Vec::new(),
            })
            .collect())
    }

    /// A unified diff from one checkpoint to another, paths relative to the
    /// top of the tree (`a/…`, `b/…`), without colour. No program of the
    /// user's configuration runs (no external diff, no text conversion).
    pub fn diff(&self, from: &Checkpoint, to: &Checkpoint) -> Result<String, CheckpointError> {
        let scratch = self.scratch()?;
        let out = self
            .git
            .run(
                &scratch.hooks,
                [
                    "diff-tree",
                    "-r",
                    "-p",
                    "--no-renames",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--no-color",
                    "--submodule=short",
                    "--src-prefix=a/",
                    "--dst-prefix=b/",
                    from.as_str(),
                    to.as_str(),
                ],
            )
            .output()?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Every entry that differs between two checkpoints.
    pub(crate) fn raw_diff(
        &self,
        scratch: &Scratch,
        from: &Checkpoint,
        to: &Checkpoint,
    ) -> Result<Vec<RawChange>, CheckpointError> {
        let out = self
            .git
            .run(
                &scratch.hooks,
                [
                    "diff-tree",
                    "-r",
                    "-z",
                    "--no-renames",
                    from.as_str(),
                    to.as_str(),
                ],
            )
            .output()?;
        raw::diff_tree(&out)
    }

    /// Forget old checkpoints. In a repository this does nothing: objects
    /// without a ref are the repository's garbage, deleted by the user's
    /// `git gc` after its expiry. In the private store, at most once a day,
    /// objects older than two weeks are deleted unless `keep` (the
    /// checkpoints of the session still in use) reaches them. Returns
    /// whether a pruning ran.
    pub fn prune(&self, keep: &[Checkpoint]) -> Result<bool, CheckpointError> {
        let Location::Private { store } = &self.location else {
            return Ok(false);
        };
        let stamp = store.join("mm-pruned");
        let recent = fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age < PRUNE_EVERY);
        if recent {
            return Ok(false);
        }
        let scratch = self.scratch()?;
        let mut args = vec!["prune".to_string(), format!("--expire={PRUNE_EXPIRE}")];
        args.extend(keep.iter().map(|c| c.as_str().to_string()));
        self.git.run(&scratch.hooks, args).output()?;
        fs::write(&stamp, b"").map_err(|e| CheckpointError::io(&stamp, e))?;
        Ok(true)
    }

    /// A name relative to the top as a path relative to the folder.
    pub(crate) fn display(&self, name: &[u8]) -> PathBuf {
        let path = bytes_path(name);
        let here: Vec<Component> = self.prefix.components().collect();
        let there: Vec<Component> = path.components().collect();
        let common = here.iter().zip(&there).take_while(|(a, b)| a == b).count();
        let mut out = PathBuf::new();
        for _ in common..here.len() {
            out.push("..");
        }
        for c in &there[common..] {
            out.push(c);
        }
        out
    }
}

/// The names [`Checkpoints::record`] gives to `git update-index`.
#[derive(Default)]
struct Sorted<'a> {
    /// Read again, for the first time, or (a folder now) taken out.
    update: Vec<&'a [u8]>,
    /// No longer there as git sees it: taken out of the index.
    gone: Vec<&'a [u8]>,
    /// Left out of the checkpoint.
    skipped: Vec<&'a [u8]>,
}

/// Copy the index `seed` to `index`, keeping its modification time: git
/// trusts the stat data of an entry only when the file is older than the
/// index ("racy git"), so a copy that looked newer would hide a change made
/// in the same second as the user's last `git add`. No seed (a repository
/// where nothing was added, a new store) leaves no index: git starts empty.
fn seed_index(seed: &Path, index: &Path) -> Result<(), CheckpointError> {
    let modified = match fs::metadata(seed) {
        Ok(m) => m.modified().map_err(|e| CheckpointError::io(seed, e))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(CheckpointError::io(seed, e)),
    };
    match fs::copy(seed, index) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(CheckpointError::io(seed, e)),
    }
    let copy = fs::File::options()
        .write(true)
        .open(index)
        .map_err(|e| CheckpointError::io(index, e))?;
    copy.set_modified(modified)
        .map_err(|e| CheckpointError::io(index, e))
}

/// `names`, each followed by a NUL.
fn nul_joined(names: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(names.iter().map(|n| n.len() + 1).sum());
    for n in names {
        out.extend_from_slice(n);
        out.push(0);
    }
    out
}

/// `path` relative to `base`, when it lies inside it (else empty).
fn relative_to(path: &Path, base: &Path) -> PathBuf {
    let base = fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
    path.strip_prefix(&base)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Outside git: the private store of `folder`, created on first use.
fn open_private(
    probe: Git,
    folder: PathBuf,
    store: &Path,
    max_file_size: u64,
) -> Result<Checkpoints, CheckpointError> {
    let home = probe
        .env
        .iter()
        .find(|(k, _)| k == "HOME")
        .and_then(|(_, v)| fs::canonicalize(v).ok());
    if folder == Path::new("/") || home.as_deref() == Some(folder.as_path()) {
        return Err(CheckpointError::TooBroad(folder));
    }
    if !store.join("HEAD").exists() {
        create_store(&probe, &folder, store)?;
    }
    raw_attributes(store)?;
    let store = fs::canonicalize(store).map_err(|e| CheckpointError::io(store, e))?;
    let mut prefix: Vec<OsString> = vec![
        "--git-dir".into(),
        store.clone().into(),
        "--work-tree".into(),
        folder.clone().into(),
    ];
    for c in PRIVATE_CONFIG {
        prefix.push("-c".into());
        prefix.push(c.into());
    }
    Ok(Checkpoints {
        git: Git {
            cwd: folder.clone(),
            prefix,
            ..probe
        },
        seed: store.join("index"),
        location: Location::Private { store },
        top: folder,
        prefix: PathBuf::new(),
        max_file_size,
    })
}

/// The private store's attributes: the bytes on disk are recorded and
/// written back as they are, whatever a `.gitattributes` in the folder asks
/// (no filter, no line-ending or encoding conversion). `info/attributes`
/// comes before every `.gitattributes`.
const PRIVATE_ATTRIBUTES: &str = "* -text -eol -filter -ident -working-tree-encoding\n";

/// Write the store's [`PRIVATE_ATTRIBUTES`] when missing (a store made by
/// an earlier mm). Its index, a cache of what was read, may then hold
/// converted content: it goes, and the next checkpoint reads every file.
fn raw_attributes(store: &Path) -> Result<(), CheckpointError> {
    let info = store.join("info");
    let path = info.join("attributes");
    if fs::read(&path).is_ok_and(|b| b == PRIVATE_ATTRIBUTES.as_bytes()) {
        return Ok(());
    }
    fs::create_dir_all(&info).map_err(|e| CheckpointError::io(&info, e))?;
    fs::write(&path, PRIVATE_ATTRIBUTES).map_err(|e| CheckpointError::io(&path, e))?;
    let index = store.join("index");
    match fs::remove_file(&index) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CheckpointError::io(&index, e)),
        _ => Ok(()),
    }
}

/// `git init --bare` without templates (no sample hooks), in a folder only
/// the user can read.
fn create_store(probe: &Git, folder: &Path, store: &Path) -> Result<(), CheckpointError> {
    fs::create_dir_all(store).map_err(|e| CheckpointError::io(store, e))?;
    fs::set_permissions(store, fs::Permissions::from_mode(0o700))
        .map_err(|e| CheckpointError::io(store, e))?;
    let scratch = Scratch::new(None)?;
    let mut args: Vec<OsString> = vec!["init".into(), "--bare".into(), "--quiet".into()];
    args.push("--template=".into());
    args.push(store.into());
    probe.run(&scratch.hooks, args).output()?;
    let about = format!("mm checkpoints of {} (safe to delete)\n", folder.display());
    let description = store.join("description");
    fs::write(&description, about).map_err(|e| CheckpointError::io(&description, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_prefix(prefix: &str) -> Checkpoints {
        Checkpoints {
            git: Git {
                env: Vec::new(),
                cwd: PathBuf::from("/r"),
                prefix: Vec::new(),
                stop: None,
            },
            top: PathBuf::from("/r"),
            prefix: PathBuf::from(prefix),
            location: Location::Repository {
                top: PathBuf::from("/r"),
            },
            seed: PathBuf::from("/r/.git/index"),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
        }
    }

    #[test]
    fn names_are_shown_relative_to_the_folder() {
        let top = with_prefix("");
        assert_eq!(top.display(b"src/a.rs"), PathBuf::from("src/a.rs"));
        let sub = with_prefix("src/app");
        assert_eq!(sub.display(b"src/app/a.rs"), PathBuf::from("a.rs"));
        assert_eq!(sub.display(b"src/lib.rs"), PathBuf::from("../lib.rs"));
        assert_eq!(sub.display(b"README"), PathBuf::from("../../README"));
    }
}
