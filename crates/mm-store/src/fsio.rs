//! The disk side: private folders, the advisory lock, and whole, atomic
//! writes (temp file in the same folder, write, fsync, rename, fsync the
//! folder), so that a crash at any moment leaves the old file or the new one.

use std::fs::{self, DirBuilder, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::StoreError;

/// Which file is on disk: enough to notice that someone replaced or edited
/// it since this process read or wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Stamp {
    pub(crate) fn of(m: &fs::Metadata) -> Self {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
        }
    }
}

/// Create `dir` (and missing parents) with mode 0700 and make sure `dir`
/// itself is 0700 even when it already existed.
pub(crate) fn private_dir(dir: &Path) -> Result<(), StoreError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| StoreError::io(dir, e))?;
    let meta = fs::metadata(dir).map_err(|e| StoreError::io(dir, e))?;
    if meta.permissions().mode() & 0o777 != 0o700 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| StoreError::io(dir, e))?;
    }
    Ok(())
}

/// Take the session's advisory lock (flock) without waiting. The lock lives
/// as long as the returned file; the kernel drops it when the process dies,
/// even by `kill -9`.
pub(crate) fn lock(path: &Path, id: &str) -> Result<File, StoreError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|e| StoreError::io(path, e))?;
    // A child this process is starting shares the lock's open file until
    // it execs (the descriptor is close-on-exec), so a lock this process
    // has just released can look held for an instant; only a lock still
    // held after a short wait is another holder's.
    for _ in 0..LOCK_TRIES {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) => std::thread::sleep(LOCK_PAUSE),
            Err(TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
        }
    }
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StoreError::InUse { id: id.to_string() }),
        Err(TryLockError::Error(e)) => Err(StoreError::io(path, e)),
    }
}

/// How often, and how far apart, a held lock is tried again before the
/// session is said to be in use: half a second in all.
const LOCK_TRIES: usize = 10;
const LOCK_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// Write `bytes` to `dest` atomically through `tmp` (same folder). Returns
/// the stamp of the new file.
pub(crate) fn write_atomic(
    dir: &Path,
    dest: &Path,
    tmp: &Path,
    bytes: &[u8],
) -> Result<Stamp, StoreError> {
    let written = write_temp(tmp, bytes).and_then(|stamp| fs::rename(tmp, dest).map(|()| stamp));
    let stamp = match written {
        Ok(stamp) => stamp,
        Err(e) => {
            let _ = fs::remove_file(tmp);
            return Err(StoreError::io(dest, e));
        }
    };
    // The rename is only durable once the folder is on disk too.
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, e))?;
    Ok(stamp)
}

fn write_temp(tmp: &Path, bytes: &[u8]) -> io::Result<Stamp> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(Stamp::of(&file.metadata()?))
}

/// Temp files of session `id` start with this.
pub(crate) fn temp_prefix(id: &str) -> String {
    format!(".{id}.json.")
}

/// Remove the temp files a killed writer of session `id` left behind. Only
/// the lock holder writes temps for `id`, so the caller must hold the lock.
pub(crate) fn remove_stale_temps(dir: &Path, id: &str) -> Result<(), StoreError> {
    let prefix = temp_prefix(id);
    let entries = fs::read_dir(dir).map_err(|e| StoreError::io(dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&prefix) && name.ends_with(".tmp") {
            let path = entry.path();
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io(path, e)),
            }
        }
    }
    Ok(())
}
