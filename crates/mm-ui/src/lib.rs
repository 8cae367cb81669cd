//! mm-ui: the `Sink` every front end supplies, the events it receives, where
//! human output goes (stdout, or stderr in ACP mode), how a long preview is
//! folded, how untrusted text is made safe for a terminal, the spinner and
//! the clipboard.
//!
//! It knows no protocol, no provider and no widget.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod clipboard;
pub mod files;
pub use mm_types::fold;
mod highlight;
pub mod markdown;
pub mod output;
pub mod sanitize;
pub mod sink;
pub mod spinner;
pub mod words;

pub use clipboard::{ClipboardEnv, ClipboardError, Copied, Method, copy, copy_to_clipboard};
pub use output::{Mode, Output, Stream};
pub use sanitize::{Sanitizer, sanitize};
pub use sink::*;
pub use spinner::Spinner;
