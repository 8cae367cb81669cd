//! What the workspace's tests share, written once: a recording [`Sink`]
//! ([`Recorder`]), a user in a temp folder ([`User`]), scanners of `/proc`
//! ([`procs`]), bounded waits ([`wait`]) and the installed MCP servers of
//! CI ([`mcp`]). Nothing here ships; every test crate takes it as a
//! dev-dependency. It stands on `mm-types` alone, so that no crate it
//! serves is below it twice.
//!
//! [`Sink`]: mm_types::Sink
#![deny(missing_docs)]
// Test code: a failed set-up is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod git;
pub mod mcp;
pub mod procs;
pub mod sink;
pub mod user;
pub mod wait;

pub use sink::Recorder;
pub use user::{TempDir, User};
pub use wait::wait_for;
