//! Shared by the server tests: the fake server, the real servers that
//! `.ci/install-mcp` installs, and the skip rule (a server that is not
//! installed skips the test with a message, unless `CI` is set: in CI it
//! must be there).
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use mm_mcp::{ServerSpec, TransportSpec};

/// Every await of a test is bounded: a hung server fails the test.
pub const LIMIT: Duration = Duration::from_secs(60);

pub const FAKE: &str = env!("CARGO_BIN_EXE_mm-mcp-fake");

pub fn stdio(name: &str, command: &str, args: &[&str]) -> ServerSpec {
    ServerSpec {
        name: name.to_string(),
        transport: TransportSpec::Stdio {
            command: command.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
            remove_env: Vec::new(),
            cwd: std::env::temp_dir(),
        },
    }
}

pub fn fake(name: &str, args: &[&str]) -> ServerSpec {
    stdio(name, FAKE, args)
}

pub fn http(name: &str, url: &str, headers: &[(&str, &str)]) -> ServerSpec {
    ServerSpec {
        name: name.to_string(),
        transport: TransportSpec::Http {
            url: url.to_string(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        },
    }
}

#[allow(unused_imports)]
pub use mm_test_support::mcp::installed;

/// A free port on 127.0.0.1 (closed again; a server is started on it next).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Wait until something listens on `port`.
pub async fn wait_listening(port: u16) {
    let until = tokio::time::Instant::now() + LIMIT;
    while tokio::time::Instant::now() < until {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("nothing listens on port {port}");
}

/// Whether process `pid` is still running (a zombie or a missing entry is
/// not).
pub fn running(pid: u32) -> bool {
    mm_test_support::procs::alive(pid as i32)
}

/// Poll `cond` for up to 10 s.
pub async fn eventually(cond: impl FnMut() -> bool) -> bool {
    mm_test_support::wait::eventually(Duration::from_secs(10), cond).await
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
