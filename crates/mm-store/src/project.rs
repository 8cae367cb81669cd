//! The folder name of a project: readable (the last path component) and
//! collision-free (a hash of the whole path). The hash is written out here,
//! not taken from std, because std's hasher may change between releases and
//! the folder name must not.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Longest readable part of a folder name.
const NAME_MAX: usize = 40;

/// The absolute, symlink-free form of `cwd` when it exists, so that the same
/// project reached two ways has one folder.
pub(crate) fn canonical(cwd: &Path) -> PathBuf {
    std::fs::canonicalize(cwd)
        .or_else(|_| std::path::absolute(cwd))
        .unwrap_or_else(|_| cwd.to_path_buf())
}

/// `<last component, filesystem-safe>-<12 hex digits of the path's hash>`.
pub fn project_folder_name(cwd: &Path) -> String {
    let last = cwd
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(NAME_MAX)
        .collect();
    if name.starts_with('.') {
        // No hidden folders, no `.` or `..`.
        name.replace_range(0..1, "_");
    }
    if name.is_empty() {
        name.push_str("root");
    }
    let hash = fnv1a(cwd.as_os_str().as_bytes()) & 0xffff_ffff_ffff;
    format!("{name}-{hash:012x}")
}

/// FNV-1a, 64 bits: stable, tiny, good enough to tell paths apart.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_readable_and_distinct() {
        let a = project_folder_name(Path::new("/home/u/src/my app"));
        let b = project_folder_name(Path::new("/home/v/src/my app"));
        assert!(a.starts_with("my_app-"), "{a}");
        assert!(b.starts_with("my_app-"), "{b}");
        assert_ne!(a, b);
        assert_eq!(a.len(), "my_app-".len() + 12);
        // Stable across runs and Rust releases: pinned value.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn odd_paths_give_safe_names() {
        assert!(project_folder_name(Path::new("/")).starts_with("root-"));
        assert!(project_folder_name(Path::new("/x/.hidden")).starts_with("_hidden-"));
        let long = format!("/x/{}", "n".repeat(300));
        let name = project_folder_name(Path::new(&long));
        assert_eq!(name.len(), NAME_MAX + 1 + 12);
        let weird = project_folder_name(Path::new("/x/a/b\\c:d"));
        assert!(weird.starts_with("b_c_d-"), "{weird}");
    }
}
