//! Key values taken out of the process environment at start
//! (docs/design.md#keys-stay-out-of-tools).
//!
//! A child can read its parent's environment (`/proc/$PPID/environ` shows
//! the block the process started with, whatever `unsetenv` did later), so
//! removing keys from the children's environment is not enough: the front
//! ends call [`take_from_env`] before any thread exists, which copies each
//! key into this process's memory, overwrites it in the original block,
//! and removes the variable. [`var`] then reads the environment first and
//! the taken keys second, so the engine still finds its key.
//!
//! This is the one process-wide store of the crate: the environment it
//! replaces is process-wide too. A library user who never calls
//! [`take_from_env`] keeps an untouched environment.

use std::collections::BTreeMap;
use std::sync::Mutex;

static TAKEN: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

/// The value of the variable `name`: from the environment, else a key
/// [`take_from_env`] took. Like `std::env::var(name).ok()`.
pub fn var(name: &str) -> Option<String> {
    if let Ok(value) = std::env::var(name) {
        return Some(value);
    }
    TAKEN.lock().ok()?.get(name).cloned()
}

/// Whether `name` is set, in the environment or among the taken keys.
pub fn is_set(name: &str) -> bool {
    std::env::var_os(name).is_some() || TAKEN.lock().is_ok_and(|t| t.contains_key(name))
}

/// Take the variables `names` out of the environment: keep their values
/// for [`var`], unset them, and overwrite their `NAME=value` strings with
/// zero bytes where the process's environment block holds them; then mark the process
/// not dumpable, so that another process of the same user can neither read
/// its memory nor attach to it. Returns the names that were taken.
///
/// # Safety
/// No other thread may exist that reads or writes the environment: call it
/// first thing in `main`, before a runtime or any thread is started.
pub unsafe fn take_from_env(names: &[String]) -> Vec<String> {
    let mut taken = Vec::new();
    let Ok(mut store) = TAKEN.lock() else {
        return taken;
    };
    for name in names {
        if name.is_empty() || name.contains(['=', '\0']) {
            continue;
        }
        let Ok(value) = std::env::var(name) else {
            continue;
        };
        // SAFETY: single-threaded by this function's contract; the name is
        // a valid C string (no NUL, checked above).
        let entry = unsafe { entry_of(name) };
        // SAFETY: as above, no other thread touches the environment.
        unsafe { std::env::remove_var(name) };
        if let Some((start, len)) = entry {
            // SAFETY: `start..start + len` is the `NAME=value` string the
            // environment held; unsetting only took it out of the pointer
            // array (the C library never frees it), so it is still ours to
            // overwrite, and nothing points at it any more.
            unsafe { std::ptr::write_bytes(start, 0, len) };
        }
        store.insert(name.clone(), value);
        taken.push(name.clone());
    }
    if !taken.is_empty() {
        // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    }
    taken
}

/// Where the `NAME=value` string of `name` lies, as `getenv` finds it:
/// for a variable inherited at start, in the block `/proc/self/environ`
/// shows. `None` when it is not set or does not look as expected.
///
/// # Safety
/// Single-threaded; `name` holds no NUL.
unsafe fn entry_of(name: &str) -> Option<(*mut libc::c_char, usize)> {
    let c_name = std::ffi::CString::new(name).ok()?;
    // SAFETY: getenv returns a pointer to the value inside the environment
    // string `NAME=value` (or null), valid until the environment changes;
    // nothing else runs meanwhile.
    let value = unsafe { libc::getenv(c_name.as_ptr()) };
    if value.is_null() {
        return None;
    }
    let name_len = name.len();
    // SAFETY: the value is preceded by `NAME=` in the same string; it is
    // checked byte by byte before use.
    unsafe {
        let start = value.sub(name_len + 1);
        let prefix = std::slice::from_raw_parts(start.cast::<u8>(), name_len + 1);
        if &prefix[..name_len] != name.as_bytes() || prefix[name_len] != b'=' {
            return None;
        }
        Some((start, name_len + 1 + libc::strlen(value)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_name_with_an_equals_sign_or_nul_is_never_taken() {
        // Nothing is set under these names; the call must not touch them.
        // SAFETY: the names are refused before the environment is read.
        let taken = unsafe { super::take_from_env(&["A=B".into(), "A\0B".into(), String::new()]) };
        assert!(taken.is_empty());
    }
}
