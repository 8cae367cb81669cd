//! `--doctor`: mm-engine's probe of the server and model, plus what only
//! the agent knows: the size of the fixed part of its requests (system
//! prompt and tool declarations), full and in the small-window form,
//! counted by the server where it can count.

use std::path::Path;

pub use mm_engine::doctor::{
    FixedPart, LLAMA_CACHE_FLAGS, OllamaContext, PROBE_TOKENS, QUESTION, Report, ToolCalls,
};
use mm_engine::{Engine, EngineError, Message, ToolDecl};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::instructions::Instructions;

/// Probe the configured server and model (see [`mm_engine::doctor::probe`])
/// and size this project's fixed part on it.
pub async fn probe(
    config: &Config,
    cwd: &Path,
    cancel: &CancellationToken,
) -> Result<Report, EngineError> {
    let mut report = mm_engine::doctor::probe(config, cancel).await?;
    if report.reachable && !cancel.is_cancelled() {
        let engine = Engine::new(config)?;
        report.fixed_part = Some(fixed_part(&engine, config, cwd).await);
    }
    Ok(report)
}

/// The fixed part of a session in `cwd`, without instructions files
/// (decision 24), as the first request would carry it.
async fn fixed_part(engine: &Engine, config: &Config, cwd: &Path) -> FixedPart {
    let tools = crate::tools::toolbox(config, cwd, &[]);
    let mut decls = crate::tools::declarations(&tools.toolbox, mm_ui::AgentMode::Allow);
    let system = crate::prompt::system_prompt(cwd, &Instructions::default());
    let fixed = [Message::system(system.clone()), Message::user("")];
    let bytes = |decls: &[ToolDecl]| {
        let tools: usize = decls
            .iter()
            .map(|d| d.name.len() + d.description.len() + d.parameters.to_string().len())
            .sum();
        u64::try_from(system.len() + tools).unwrap_or(u64::MAX)
    };
    let full_bytes = bytes(&decls);
    let tokens = engine.count_tokens(&fixed, &decls).await;
    crate::tools::keep_core(&mut decls);
    FixedPart {
        bytes: full_bytes,
        tokens,
        short_bytes: bytes(&decls),
        short_tokens: engine.count_tokens(&fixed, &decls).await,
    }
}
