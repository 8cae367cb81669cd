//! mm-mock: a scripted mock model server over real HTTP on 127.0.0.1, for
//! tests and for `mm-repl --demo`. Serves OpenAI, Ollama, Anthropic and
//! Gemini wire formats from a script of replies, misbehaves on demand, and
//! records every request. Depends on no mm crate.

pub mod script;

pub use script::*;
