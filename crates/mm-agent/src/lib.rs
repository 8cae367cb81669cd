//! mm-agent: the turn: system prompt, model, tools, history, compaction,
//! the command table, mentions and the version. It never prints: it emits
//! events into the turn's Sink.
