//! mm-tui: the full-screen window over mm-agent. Its own Sink
//! records events into one `Transcript` value and wakes the event loop;
//! only the event loop draws, from the transcript's current state, so a
//! lost wake-up costs a late frame, never a lost line.
//!
//! It owns the window: transcript, layout, painter, key map, its Sink and
//! its flags. It must never reach into a provider or a tool's internals
//! (it uses only mm-agent, mm-ui and mm-config), and never print while the
//! window is open: its logs go to a file (`mm_agent::logging`).

pub mod app;
pub mod cli;
pub mod keymap;
pub mod layout;
pub mod markdown;
pub mod painter;
pub mod popup;
pub mod sink;
pub mod terminal;
pub mod transcript;
pub mod ui;
pub mod vi;
pub mod view;
pub mod wrap;

pub use app::App;
pub use sink::{Shared, WindowSink};
pub use transcript::Transcript;
