//! The disk side of the file tools: following symlinks, reading what is
//! there, and replacing a file atomically with its mode and owner kept; a
//! file with several hard links is rewritten in place instead, since a
//! rename would leave the other names on the old content.

use std::ffi::CString;
use std::fs::{self, FileType, Metadata, OpenOptions, Permissions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{
    FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{changed_on_disk, io_failure, not_regular, read_only};

/// What a path holds that is neither a regular file nor a directory, as
/// the refusal texts name it; `None` for those two.
pub(super) fn special_kind(ft: FileType) -> Option<&'static str> {
    if ft.is_file() || ft.is_dir() {
        None
    } else if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("a special file")
    }
}

/// Why a path cannot be opened as a regular file.
#[derive(Debug)]
pub(super) enum NotRegular {
    Missing,
    Directory,
    /// A device, FIFO or socket: [`special_kind`]'s name of it.
    Special(&'static str),
    Io(io::Error),
}

/// Open `path` (symlinks followed) for reading, only if it is a regular
/// file. The type is checked before opening, since opening a FIFO blocks
/// until a writer comes and opening a device may act on it; the open itself
/// is non-blocking, and the open file is checked again, so that a swap in
/// between can neither hang nor slip through.
pub(super) fn open_regular(path: &Path) -> Result<(fs::File, Metadata), NotRegular> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(NotRegular::Missing),
        Err(e) => return Err(NotRegular::Io(e)),
    };
    check_regular(&meta)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => NotRegular::Missing,
            _ => NotRegular::Io(e),
        })?;
    let now = file.metadata().map_err(NotRegular::Io)?;
    check_regular(&now)?;
    Ok((file, now))
}

fn check_regular(meta: &Metadata) -> Result<(), NotRegular> {
    if meta.is_dir() {
        return Err(NotRegular::Directory);
    }
    match special_kind(meta.file_type()) {
        Some(kind) => Err(NotRegular::Special(kind)),
        None => Ok(()),
    }
}

/// Whether mm may write `path` in place. The kernel decides (`access(2)`
/// with the effective ids); root, whom it lets write anything, still
/// treats a file without any write bit (0444) as protected, as editors do.
fn may_write(path: &Path, meta: &Metadata) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the
    // call; faccessat only reads it.
    let rc = unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c_path.as_ptr(),
            libc::W_OK,
            libc::AT_EACCESS,
        )
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    rc == 0 && !(root && meta.mode() & 0o222 == 0)
}

/// What a write keeps of the file it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Kept {
    /// Permission bits (`& 0o7777`), applied exactly.
    pub mode: u32,
    /// Owner and group, given back to the new file where we may.
    pub uid: u32,
    pub gid: u32,
    /// Hard links to the file; more than one means "rewrite in place".
    pub links: u64,
}

impl Kept {
    fn of(meta: &Metadata) -> Kept {
        Kept {
            mode: meta.mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
            links: meta.nlink(),
        }
    }
}

/// What a path holds.
#[derive(Debug)]
pub(super) enum Existing {
    Missing,
    Directory,
    File {
        bytes: Vec<u8>,
        kept: Kept,
    },
    /// Something write_file and edit_file must not replace; the text says
    /// why (a device, FIFO or socket; a file mm may not write).
    Refused(Unwritable),
}

/// Why an existing path is not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unwritable {
    /// [`special_kind`]'s name of it.
    Special(&'static str),
    /// A file mm may not write in place, with its permission bits.
    ReadOnly(u32),
}

impl Unwritable {
    /// The refusal the model gets, naming the path as it gave it.
    pub(super) fn text(self, shown: &str) -> String {
        match self {
            Unwritable::Special(kind) => not_regular(shown, kind, "write_file and edit_file write"),
            Unwritable::ReadOnly(mode) => read_only(shown, mode),
        }
    }
}

/// Whether `meta` (of `path`) is something write_file and edit_file may
/// replace.
fn writable(path: &Path, meta: &Metadata) -> Result<(), Unwritable> {
    if let Some(kind) = special_kind(meta.file_type()) {
        return Err(Unwritable::Special(kind));
    }
    if meta.is_file() && !may_write(path, meta) {
        return Err(Unwritable::ReadOnly(meta.mode() & 0o7777));
    }
    Ok(())
}

/// Read what `target` holds now. Only a regular file mm may write is
/// read; anything else is [`Existing::Refused`] without being opened.
pub(super) fn load(target: &Path) -> io::Result<Existing> {
    let (mut file, meta) = match open_regular(target) {
        Ok(opened) => opened,
        Err(NotRegular::Missing) => return Ok(Existing::Missing),
        Err(NotRegular::Directory) => return Ok(Existing::Directory),
        Err(NotRegular::Special(kind)) => return Ok(Existing::Refused(Unwritable::Special(kind))),
        Err(NotRegular::Io(e)) => return Err(e),
    };
    if let Err(why) = writable(target, &meta) {
        return Ok(Existing::Refused(why));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(Existing::File {
        bytes,
        kept: Kept::of(&meta),
    })
}

/// What to write: a whole text (write_file), or the replacements of an
/// edit spliced into `before` as it is written, so a 50 MB edit never
/// builds a second copy of the file.
pub(super) enum Content {
    Whole(String),
    Edited(mm_fileedit::Applied),
}

/// A write that `plan` prepared and `run` carries out.
pub(crate) struct Pending {
    /// The file to replace (symlinks followed).
    pub(super) target: PathBuf,
    /// The bytes `plan` saw; `None` when there was no file.
    pub(super) before: Option<Vec<u8>>,
    /// The new content.
    pub(super) after: Content,
    /// What to keep of the file as `plan` saw it; `None` for a new file
    /// (created 0666 minus the umask).
    pub(super) kept: Option<Kept>,
    /// What the model gets once written.
    pub(super) output: String,
}

/// Write `pending` unless the file changed since it was planned
/// (docs/design.md#preview-before-permission). `shown` is the path as the
/// model gave it. `Err` is a failure (nothing or, for an in-place write
/// that broke off, part was written), with its text.
pub(super) fn commit(pending: Pending, shown: &str) -> Result<String, String> {
    // What is there now must still be something we may replace: a device
    // or FIFO put in its place since the plan is never renamed over.
    match fs::metadata(&pending.target) {
        Ok(meta) => writable(&pending.target, &meta).map_err(|why| why.text(shown))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_failure("read", shown, &e)),
    }
    match unchanged_since(&pending.target, pending.before.as_deref()) {
        Ok(true) => {}
        Ok(false) => return Err(changed_on_disk(shown)),
        Err(e) => return Err(io_failure("read", shown, &e)),
    }
    if pending.before.is_none()
        && let Some(dir) = pending.target.parent()
        && !dir.as_os_str().is_empty()
        && let Err(e) = fs::create_dir_all(dir)
    {
        return Err(io_failure("create the folders of", shown, &e));
    }
    // The content is as planned; its links, owner or mode may have moved
    // since, and what is there now is what to keep.
    let kept = match fs::metadata(&pending.target) {
        Ok(meta) if pending.before.is_some() => Some(Kept::of(&meta)),
        _ => pending.kept,
    };
    let pieces: Vec<&[u8]> = match &pending.after {
        Content::Whole(text) => vec![text.as_bytes()],
        Content::Edited(applied) => {
            let original = pending
                .before
                .as_deref()
                .and_then(|b| std::str::from_utf8(b).ok())
                .unwrap_or("");
            applied
                .pieces(original)
                .into_iter()
                .map(str::as_bytes)
                .collect()
        }
    };
    let written = match kept {
        Some(k) if k.links > 1 => write_in_place(&pending.target, &pieces),
        kept => write_atomic(&pending.target, &pieces, kept.as_ref()),
    };
    match written {
        Ok(()) => Ok(pending.output),
        Err(e) => Err(io_failure("write", shown, &e)),
    }
}

/// Rewrite `target` itself (truncate, write, fsync): every hard link to it
/// sees the new content, and its mode and owner stay as they are. Not
/// atomic, which is the price of keeping the links.
fn write_in_place(target: &Path, pieces: &[&[u8]]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).truncate(true).open(target)?;
    let mut out = io::BufWriter::with_capacity(1 << 16, &mut file);
    for piece in pieces {
        out.write_all(piece)?;
    }
    out.flush()?;
    drop(out);
    file.sync_all()
}

/// Give the new file the old one's owner and group, as far as we may: only
/// root may give a file away, anyone may pick one of their own groups. So
/// try both, then the group alone; a refusal (EPERM, or EINVAL for an id
/// this user namespace cannot map) leaves the file ours, not unwritten.
fn keep_owner(file: &fs::File, kept: &Kept) -> io::Result<()> {
    let now = file.metadata()?;
    if now.uid() == kept.uid && now.gid() == kept.gid {
        return Ok(());
    }
    let refused = |e: &io::Error| matches!(e.raw_os_error(), Some(libc::EPERM | libc::EINVAL));
    match std::os::unix::fs::fchown(file, Some(kept.uid), Some(kept.gid)) {
        Ok(()) => Ok(()),
        Err(e) if refused(&e) => match std::os::unix::fs::fchown(file, None, Some(kept.gid)) {
            Err(e) if !refused(&e) => Err(e),
            _ => Ok(()),
        },
        Err(e) => Err(e),
    }
}

/// Whether `target` still holds exactly `before` (`None`: no file). Reads
/// through a small buffer compared piece by piece: no second copy of a big
/// file, and a size change is caught without reading at all.
pub(super) fn unchanged_since(target: &Path, before: Option<&[u8]>) -> io::Result<bool> {
    let meta = match fs::metadata(target) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(before.is_none()),
        Err(e) => return Err(e),
    };
    let Some(before) = before else {
        return Ok(false);
    };
    if !meta.is_file() || meta.len() != before.len() as u64 {
        return Ok(false);
    }
    let mut file = match open_regular(target) {
        Ok((file, _)) => file,
        Err(NotRegular::Io(e)) => return Err(e),
        Err(_) => return Ok(false),
    };
    let mut buf = vec![0u8; (1 << 20).min(before.len() + 1)];
    let mut pos = 0;
    loop {
        let n = match file.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(pos == before.len());
        }
        if pos + n > before.len() || buf[..n] != before[pos..pos + n] {
            return Ok(false);
        }
        pos += n;
    }
}

/// Removes the temporary file unless it was renamed into place.
struct TempGuard(Option<PathBuf>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Replace `target` with the concatenation of `pieces`: a temp file in the same folder, synced,
/// then renamed over it, so a reader sees the old file or the new one and
/// never half of either. `kept`'s mode is applied exactly (the umask does
/// not cut a kept mode) and its owner where allowed; without it the file is
/// created 0666 minus the umask.
pub(super) fn write_atomic(target: &Path, pieces: &[&[u8]], kept: Option<&Kept>) -> io::Result<()> {
    let mode = kept.map(|k| k.mode);
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?
        .to_string_lossy();
    // Keep the temp name under NAME_MAX whatever the file's name.
    let mut short = name.as_ref();
    while short.len() > 200 {
        let mut cut = short.len() - 1;
        while !short.is_char_boundary(cut) {
            cut -= 1;
        }
        short = &short[..cut];
    }
    for _ in 0..100 {
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{short}.{}.{seq}.mm-tmp", std::process::id()));
        let mut file = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode.unwrap_or(0o666))
            .open(&tmp)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let mut guard = TempGuard(Some(tmp.clone()));
        // Buffered: an edit's pieces can be many small ones.
        let mut out = io::BufWriter::with_capacity(1 << 16, &mut file);
        for piece in pieces {
            out.write_all(piece)?;
        }
        out.flush()?;
        drop(out);
        if let Some(kept) = kept {
            // Owner first: a change of owner clears set-user-ID bits that
            // the mode then puts back.
            keep_owner(&file, kept)?;
            file.set_permissions(Permissions::from_mode(kept.mode))?;
        }
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, target)?;
        guard.0 = None;
        // Make the rename itself durable; a failure here loses nothing.
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        return Ok(());
    }
    Err(io::Error::other("no free temporary file name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_since_compares_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        assert!(unchanged_since(&f, None).unwrap());
        assert!(!unchanged_since(&f, Some(b"")).unwrap());
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        fs::write(&f, &big).unwrap();
        assert!(unchanged_since(&f, Some(&big)).unwrap());
        assert!(!unchanged_since(&f, None).unwrap());
        // Same size, one byte different far into the file.
        let mut other = big.clone();
        other[2_500_000] ^= 1;
        assert!(!unchanged_since(&f, Some(&other)).unwrap());
        assert!(!unchanged_since(&f, Some(&big[..big.len() - 1])).unwrap());
        fs::write(&f, "").unwrap();
        assert!(unchanged_since(&f, Some(b"")).unwrap());
        assert!(!unchanged_since(dir.path(), Some(b"")).unwrap());
    }

    #[test]
    fn write_atomic_keeps_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs::write(&f, "old").unwrap();
        fs::set_permissions(&f, Permissions::from_mode(0o751)).unwrap();
        let kept = Kept::of(&fs::metadata(&f).unwrap());
        write_atomic(&f, &[b"ne", b"w"], Some(&kept)).unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(fs::metadata(&f).unwrap().mode() & 0o7777, 0o751);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn failed_rename_removes_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("inside"), "x").unwrap();
        // Renaming a file over a non-empty directory fails.
        assert!(write_atomic(&target, &[b"data"], None).is_err());
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn long_names_get_a_short_temp_name() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("é".repeat(120)); // 240 bytes
        write_atomic(&f, &[b"ok"], None).unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"ok");
    }
}
