//! Stamps the version: `MM_VERSION` at build time, else
//! `git describe` when the source is a git checkout, else the crate version.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MM_VERSION");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let root = Path::new(&manifest).join("../..");
    let git = root.join(".git");
    if git.exists() {
        // Re-run when HEAD moves so the commit stays right.
        println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
        println!("cargo:rerun-if-changed={}", git.join("refs").display());
        // `--dirty` follows the index.
        println!("cargo:rerun-if-changed={}", git.join("index").display());
    }
    let version = std::env::var("MM_VERSION")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| {
            if !git.exists() {
                return None;
            }
            let out = Command::new("git")
                .args(["describe", "--tags", "--always", "--dirty"])
                .current_dir(&root)
                .output()
                .ok()?;
            let text = String::from_utf8(out.stdout).ok()?;
            let text = text.trim();
            (out.status.success() && !text.is_empty()).then(|| {
                format!(
                    "{}-{}",
                    std::env::var("CARGO_PKG_VERSION").unwrap_or_default(),
                    text
                )
            })
        })
        .unwrap_or_else(|| std::env::var("CARGO_PKG_VERSION").unwrap_or_default());
    println!("cargo:rustc-env=MM_BUILD_VERSION={version}");
}
