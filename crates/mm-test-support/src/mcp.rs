//! The MCP servers the tests start: the real ones `.ci/install-mcp`
//! installs (a server that is not installed skips its test with a note,
//! unless `CI` is set: in CI it must be there) and mm-mcp's own fake.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where `.ci/install-mcp` put the servers: `$MM_MCP_DIR`, else
/// `~/.cache/mm-ci/mcp`.
pub fn mcp_dir() -> PathBuf {
    match std::env::var_os("MM_MCP_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/mm-ci/mcp")
        }
    }
}

/// `<mcp_dir>/bin/<name>` when installed. Else: in CI a panic, elsewhere a
/// printed skip for `test` and `None`.
pub fn installed(name: &str, test: &str) -> Option<PathBuf> {
    let path = mcp_dir().join("bin").join(name);
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{} is not installed but CI is set: run .ci/install-mcp",
            path.display()
        );
    }
    eprintln!(
        "SKIPPED {test}: {} is not installed (bash .ci/install-mcp installs it)",
        path.display()
    );
    None
}

/// mm-mcp's misbehaving test server (`mm-mcp-fake`) beside the running
/// test binary, built first when it is not there yet (a test crate other
/// than mm-mcp does not get it built by cargo).
pub fn fake_server() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let dir = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
        let path = dir.join("mm-mcp-fake");
        if !path.is_file() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
            let mut cmd = std::process::Command::new(cargo);
            cmd.args(["build", "--quiet", "-p", "mm-mcp", "--bin", "mm-mcp-fake"])
                .arg("--manifest-path")
                .arg(&manifest);
            if dir.file_name().is_some_and(|p| p == "release") {
                cmd.arg("--release");
            }
            if let Some(target) = dir.parent() {
                cmd.env("CARGO_TARGET_DIR", target);
            }
            assert!(cmd.status().unwrap().success(), "cannot build mm-mcp-fake");
        }
        path
    })
    .clone()
}
