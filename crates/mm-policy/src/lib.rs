//! mm-policy: what a tool call may do. The permission rules of the
//! settings (`permissions.allow`, `ask`, `deny`, and the rules "allow for
//! the session" adds), with `bash` command lines read by a real shell
//! parser; and the operating-system sandbox that confines `bash` commands
//! (Landlock and seccomp on Linux), with the same writable folders for the
//! file tools.
//!
//! It decides and prepares; it never runs a tool, asks the user or prints.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod policy;
pub mod readonly;
pub mod rule;
pub mod sandbox;
pub mod shell;

pub use policy::{
    AskReason, Call, Listing, Mode, Policy, PolicyError, RuleLists, Subject, Verdict,
};
pub use rule::{Rule, RuleError};
pub use sandbox::{Confinement, Sandbox, SandboxMode};
