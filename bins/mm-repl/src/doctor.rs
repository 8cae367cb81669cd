//! `mm-repl --doctor`: prints what the probe found (mm-engine's
//! `doctor`), as lines for a person or as one JSON object.

use std::fmt::Write as _;

use mm_agent::doctor::{self, Report};
use mm_agent::{CancellationToken, StartError};
use mm_config::Config;

use crate::cli::OutputFormat;

/// Probe the configured server and model and print the report; returns
/// the exit code: 0 when the server answered, 1 when it did not.
pub async fn run(config: &Config, format: OutputFormat) -> Result<u8, StartError> {
    let cancel = CancellationToken::new();
    let cwd = std::env::current_dir().map_err(|e| StartError::Front(e.to_string()))?;
    let report = doctor::probe(config, &cwd, &cancel)
        .await
        .map_err(|e| StartError::Front(e.to_string()))?;
    let out = match format {
        OutputFormat::Json => json(&report),
        OutputFormat::Text => text(&report),
    };
    print!("{out}");
    Ok(if report.reachable { 0 } else { 1 })
}

/// The report as one JSON object and a newline.
pub fn json(report: &Report) -> String {
    let mut line = serde_json::to_string(report).unwrap_or_else(|_| "{}".into());
    line.push('\n');
    line
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// The report as lines for a person.
pub fn text(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "server: {} ({})", r.server, yes_reach(r.reachable));
    let _ = writeln!(o, "model: {}", r.model);
    if !r.reachable {
        for note in &r.notes {
            let _ = writeln!(o, "note: {note}");
        }
        return mm_ui::sanitize(&o).into_owned();
    }
    let _ = writeln!(o, "window: {} tokens ({})", r.window, r.window_source);
    if let Some(c) = &r.ollama_context {
        let _ = writeln!(
            o,
            "ollama: the loaded model runs with num_ctx {}; the model's own window is {}",
            opt(c.running),
            opt(c.model)
        );
    }
    let _ = writeln!(
        o,
        "template renders tools: {}",
        match r.template_renders_tools {
            Some(b) => yes(b),
            None => "the server does not say",
        }
    );
    let _ = writeln!(
        o,
        "tool calls for \"{}\" (nothing is run):",
        doctor::QUESTION
    );
    let _ = writeln!(o, "  native: {}", yes(r.tool_calls.native));
    let _ = writeln!(o, "  text-form: {}", yes(r.tool_calls.text));
    let _ = writeln!(o, "  constrained: {}", yes(r.tool_calls.constrained));
    let _ = writeln!(o, "reasoning: {}", yes(r.reasoning));
    let _ = writeln!(
        o,
        "cache reuse: {}",
        match r.cache_reuse {
            Some(share) => format!(
                "{}% of an identical prompt came from the cache",
                (share * 100.0).round()
            ),
            None => "the server does not say".into(),
        }
    );
    let _ = writeln!(
        o,
        "speed: prompt {} tokens/s, generation {} tokens/s",
        optf(r.prompt_tokens_per_second),
        optf(r.tokens_per_second)
    );
    if let Some(f) = &r.fixed_part {
        let _ = writeln!(
            o,
            "fixed part (system prompt + tools): {} B{}; small-window form {} B{}",
            f.bytes,
            tokens(f.tokens),
            f.short_bytes,
            tokens(f.short_tokens)
        );
    }
    let _ = writeln!(o, "mm will: {}", r.plan);
    if r.recommend.is_empty() {
        let _ = writeln!(o, "recommend: nothing to change");
    } else {
        let _ = writeln!(o, "recommend:");
        for line in &r.recommend {
            let _ = writeln!(o, "  {line}");
        }
    }
    for note in &r.notes {
        let _ = writeln!(o, "note: {note}");
    }
    mm_ui::sanitize(&o).into_owned()
}

fn yes_reach(reachable: bool) -> &'static str {
    if reachable {
        "reachable"
    } else {
        "not reachable"
    }
}

fn opt(n: Option<u64>) -> String {
    n.map_or_else(|| "unknown".into(), |n| n.to_string())
}

fn optf(n: Option<f64>) -> String {
    n.map_or_else(|| "unknown".into(), |n| n.to_string())
}

/// `, 320 tokens (the server's count)`, or nothing when it cannot count.
fn tokens(n: Option<u64>) -> String {
    n.map_or_else(String::new, |n| {
        format!(", {n} tokens (the server's count)")
    })
}
