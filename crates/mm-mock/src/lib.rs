//! mm-mock: a scripted mock model server over real HTTP on 127.0.0.1, for
//! tests and for `mm-repl --demo`. Serves OpenAI, Ollama, Anthropic and
//! Gemini wire formats from a script of replies, misbehaves on demand, and
//! records every request. Depends on no mm crate.
//!
//! It must never listen beyond 127.0.0.1, never reach the network, and
//! never hold a whole runaway in memory: bodies are played lazily and stop
//! when the client hangs up.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod anthropic;
mod demo;
mod gemini;
mod offline;
mod ollama;
mod openai;
mod render;
pub mod script;
mod server;

pub use demo::{demo_script, start_demo};
pub use offline::render_body;
pub use script::*;
pub use server::{MockServer, Options, Route, mock_tokens};
