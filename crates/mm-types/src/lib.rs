//! mm-types: the words every part of mm shares, on the lowest floor.
//!
//! The provider-neutral messages and usage a session is made of, the
//! events a turn emits, what a tool call is (`ToolInfo`), and the `Sink`
//! contract a front end implements. Storing a session or writing a tool
//! needs these and nothing else: no HTTP client, no Markdown renderer, no
//! terminal. Rendering stays in mm-ui, talking to servers in mm-engine.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod event;
pub mod fold;
pub mod json;
pub mod message;

pub use event::*;
pub use message::*;
