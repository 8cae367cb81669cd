//! mm-ui: the `Sink` every front end supplies, the events it receives, where
//! human output goes, the spinner and the clipboard.
//!
//! It knows no protocol, no provider and no widget.

pub mod sink;

pub use sink::*;
