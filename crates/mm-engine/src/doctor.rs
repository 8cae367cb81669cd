//! `mm-repl --doctor`: what the configured server and model can do, found
//! by asking them, and what mm will do with them.
//!
//! The probe is small on purpose (a short system prompt, one `bash`
//! declaration, a fixed question, answers of at most [`PROBE_TOKENS`]), so
//! a 135M model on one thread is through in a few seconds. Nothing the
//! model asks for is ever run: the replies are only read. The same
//! request is sent twice (plain, then constrained where the server can
//! hold a reply to a schema), so the second shows how much of an
//! identical prompt the server's cache serves.
//!
//! Every front end prints [`Report`] as it likes; the probing is here.

use std::time::{Duration, Instant};

use mm_config::{Config, ConstrainedCalls, TextToolCalls, Thinking};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::engine::{Engine, Generation};
use crate::error::{EngineError, GenerateError};
use crate::textcalls::{Out, Recogniser};
use crate::types::{Message, StreamEvent, ToolCall, ToolDecl, Usage};
use crate::window::WindowSource;

/// The question every probe asks.
pub const QUESTION: &str = "Run the shell command `ls`.";

/// The probe's system prompt: short, so a slow server is through quickly.
const SYSTEM: &str = "You are a coding agent. Use the tools to act: to run a command, call bash.";

/// The longest answer a probe asks for: room for a call or a short answer.
pub const PROBE_TOKENS: u64 = 96;

/// llama-server's own fix for a prompt it recomputes: a sliding-window
/// model keeps its whole cache only with `--swa-full`, and
/// `--cache-reuse` lets it reuse chunks that moved.
pub const LLAMA_CACHE_FLAGS: &str = "--swa-full --cache-reuse 256";

/// How long one probe request may take before it counts as failed.
const REQUEST_LIMIT: Duration = Duration::from_secs(45);

/// How long the window questions may take together.
const WINDOW_LIMIT: Duration = Duration::from_secs(10);

/// Below this share of an identical prompt served from the cache, the
/// server is said to recompute it.
const POOR_REUSE: f64 = 0.5;

/// What the probe found. Serialised as `--doctor --output-format json`
/// prints it (docs/reference/json.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The server's address (masked like every URL shown).
    pub server: String,
    /// Whether anything answered there.
    pub reachable: bool,
    /// `PROVIDER/MODEL` as configured.
    pub model: String,
    /// The window in force, in tokens.
    pub window: u64,
    /// Where it came from (`server /props`, `setting`...).
    pub window_source: String,
    /// Ollama only: the `num_ctx` the loaded model runs with and the
    /// model's own (trained) window.
    pub ollama_context: Option<OllamaContext>,
    /// Whether the server said the model's chat template renders tool
    /// declarations and calls; `None` when it did not say.
    pub template_renders_tools: Option<bool>,
    /// Which kinds of call worked for [`QUESTION`].
    pub tool_calls: ToolCalls,
    /// A reply carried reasoning (in any form mm reads).
    pub reasoning: bool,
    /// The share (0..1) of the second, identical prompt the server read
    /// from its cache; `None` when the server does not say.
    pub cache_reuse: Option<f64>,
    /// Prompt tokens computed per second (first request, wall clock).
    pub prompt_tokens_per_second: Option<f64>,
    /// Answer tokens per second after the first (first request).
    pub tokens_per_second: Option<f64>,
    /// Settings worth changing, as `key: value`.
    pub recommend: Vec<String>,
    /// What mm will do with this server and model, in a sentence.
    pub plan: String,
    /// What went wrong or is worth knowing, one line each.
    pub notes: Vec<String>,
    /// The first request's fixed part (system prompt and tool
    /// declarations) as mm would send it, full and short; filled by the
    /// caller that knows the tools (mm-agent).
    pub fixed_part: Option<FixedPart>,
}

/// The size of the fixed part of a request, in bytes and, where the
/// server counts with the model's template and tokenizer, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FixedPart {
    /// Every tool declared, as on a window large enough.
    pub bytes: u64,
    /// The server's count of the same; `None` when it cannot count.
    pub tokens: Option<u64>,
    /// The small-window form: the core tools with short descriptions.
    pub short_bytes: u64,
    /// The server's count of the short form.
    pub short_tokens: Option<u64>,
}

/// Ollama's windows: the loaded model's and the model's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OllamaContext {
    /// `num_ctx` of the loaded model (`/api/ps`), after mm's request.
    pub running: Option<u64>,
    /// The model's trained window (`/api/show`).
    pub model: Option<u64>,
}

/// Which kinds of call worked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ToolCalls {
    /// The server sent a call of `bash` in its tool-call field.
    pub native: bool,
    /// The answer's text held a call mm recovers (`textToolCalls`).
    pub text: bool,
    /// A reply held to a declared call or an answer was a call.
    pub constrained: bool,
}

/// The probe's only tool; never run.
fn probe_tools() -> Vec<ToolDecl> {
    vec![ToolDecl {
        name: "bash".into(),
        description: "Run a shell command and return its output.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command line."}},
            "required": ["command"],
        }),
    }]
}

/// The probe's messages. A fresh id opens the prompt, so the first
/// request finds nothing of it in the server's cache (an earlier run sent
/// the same text) and its time measures the prompt's computation.
fn probe_messages() -> Vec<Message> {
    let id = crate::new_cache_key();
    vec![
        Message::system(format!("Probe {}. {SYSTEM}", &id[id.len() - 8..])),
        Message::user(QUESTION),
    ]
}

/// When a probe request began and when its reply's first piece came.
struct Clock {
    start: Instant,
    first: Option<Duration>,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            start: Instant::now(),
            first: None,
        }
    }

    fn see(&mut self, e: &StreamEvent) {
        if self.first.is_none()
            && matches!(
                e,
                StreamEvent::Text(_)
                    | StreamEvent::Reasoning(_)
                    | StreamEvent::ToolCallStarted { .. }
            )
        {
            self.first = Some(self.start.elapsed());
        }
    }
}

/// One probe request, timed: its result, the time to its first piece and
/// the whole time.
struct Timed {
    result: Result<Generation, GenerateError>,
    first: Option<Duration>,
    total: Duration,
}

/// `request` within [`REQUEST_LIMIT`], unless cancelled.
async fn bounded(
    cancel: &CancellationToken,
    request: impl Future<Output = Result<Generation, GenerateError>>,
) -> Result<Generation, GenerateError> {
    tokio::select! {
        r = tokio::time::timeout(REQUEST_LIMIT, request) => match r {
            Ok(r) => r,
            Err(_) => Err(EngineError::Stream(format!(
                "no whole answer within {}s",
                REQUEST_LIMIT.as_secs()
            ))
            .into()),
        },
        _ = cancel.cancelled() => Err(EngineError::Cancelled.into()),
    }
}

/// One plain or constrained probe request of `engine`, timed.
async fn ask(
    engine: &Engine,
    constrained: bool,
    messages: &[Message],
    tools: &[ToolDecl],
    cancel: &CancellationToken,
) -> Timed {
    let mut clock = Clock::new();
    let result = {
        let mut on_event = |e: StreamEvent| clock.see(&e);
        if constrained {
            bounded(
                cancel,
                engine.generate_calls(messages, tools, &mut on_event, cancel),
            )
            .await
        } else {
            bounded(
                cancel,
                engine.generate(messages, tools, &mut on_event, cancel),
            )
            .await
        }
    };
    Timed {
        result,
        first: clock.first,
        total: clock.start.elapsed(),
    }
}

/// A call of `bash` among `calls`.
fn calls_bash(calls: &[ToolCall]) -> bool {
    calls.iter().any(|c| c.name == "bash")
}

/// Whether `text` holds a call of `tools` written as text that mm
/// recovers.
fn text_call(tools: &[ToolDecl], text: &str) -> bool {
    let mut found = false;
    let mut take = |o: Out<'_>| {
        if let Out::Call(c) = o {
            found |= c.name == "bash";
        }
    };
    let mut r = Recogniser::new(tools);
    if r.push(text, &mut take).is_ok() {
        r.finish(&mut take);
    }
    found
}

fn unreachable(e: &EngineError) -> bool {
    matches!(
        e,
        EngineError::Unreachable { .. } | EngineError::Connection { .. }
    )
}

/// Per second, when both counts make sense.
fn rate(tokens: u64, time: Duration) -> Option<f64> {
    let secs = time.as_secs_f64();
    (tokens > 0 && secs > 0.0).then(|| round1(tokens as f64 / secs))
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

impl Engine {
    /// Whether a request that declares tools is held up front to one
    /// declared call or an answer (`constrainedCalls`): `always` on a
    /// server that can, `auto` when the server said the model's template
    /// cannot render tools, never with `off`.
    pub fn constrains_calls(&self, setting: ConstrainedCalls) -> bool {
        if !self.can_constrain_calls() {
            return false;
        }
        match setting {
            ConstrainedCalls::Always => true,
            ConstrainedCalls::Auto => self.renders_tools() == Some(false),
            ConstrainedCalls::Off => false,
        }
    }
}

/// Probe the server and model `config` names. `Err` only when no engine
/// can be built from the settings (a bad start); a server that does not
/// answer is a report with `reachable: false`.
pub async fn probe(config: &Config, cancel: &CancellationToken) -> Result<Report, EngineError> {
    let mut cfg = config.clone();
    // A doctor waits for nobody: no retries, a bounded answer.
    cfg.retries = 0;
    cfg.max_tokens = PROBE_TOKENS;
    let base = Engine::new(&cfg)?;
    let mut report = Report {
        server: mm_config::mask_url(base.base_url()),
        reachable: false,
        model: config.model.clone(),
        window: base.window().tokens,
        window_source: base.window().source.to_string(),
        ollama_context: None,
        template_renders_tools: None,
        tool_calls: ToolCalls::default(),
        reasoning: false,
        cache_reuse: None,
        prompt_tokens_per_second: None,
        tokens_per_second: None,
        recommend: Vec::new(),
        plan: String::new(),
        notes: Vec::new(),
        fixed_part: None,
    };

    // The window, and whether the template renders tools.
    let inner = &*base.inner;
    let mut caps = crate::window::Caps::default();
    let asked = tokio::time::timeout(WINDOW_LIMIT, inner.ask_window(&mut caps)).await;
    let renders = caps.tools;
    let server_window = match asked {
        Ok(Ok(w)) => {
            report.reachable = true;
            Some(w)
        }
        Ok(Err(crate::window::Miss::Answered)) => {
            report.reachable = true;
            None
        }
        _ => None,
    };
    report.template_renders_tools = renders;
    if let Ok(mut c) = crate::window::cache().lock() {
        // What the agent would learn: the answer is this process's.
        let w = server_window.clone().unwrap_or_else(|| base.window());
        c.insert(crate::window::cache_key(inner), (w, caps));
    }
    let engine = match &server_window {
        Some(w) => base.with_window(w.clone()),
        None => base.clone(),
    };
    let window = engine.window();
    report.window = window.tokens;
    report.window_source = window.source.to_string();
    if let (Some(found), WindowSource::Setting) = (&server_window, &window.source)
        && found.tokens != window.tokens
    {
        report.notes.push(format!(
            "contextWindow sets {} tokens; the server says {} ({})",
            window.tokens, found.tokens, found.source
        ));
        report.recommend.push("contextWindow: auto".into());
    }
    if window.source == WindowSource::Fallback {
        report.notes.push(format!(
            "the server did not say the model's window: mm assumes {} tokens",
            window.tokens
        ));
        report
            .recommend
            .push("contextWindow: <the window the server runs the model with>".into());
    }

    let tools = probe_tools();
    let messages = probe_messages();

    // 1. Unconstrained, text-form calls left in the text: a native call
    //    is one the server parsed.
    let plain = engine.rebuilt_with(engine.inner.settings.clone(), window.clone(), false);
    let first = ask(&plain, false, &messages, &tools, cancel).await;
    let first_usage = match &first.result {
        Ok(g) => {
            report.reachable = true;
            if let Message::Assistant {
                content,
                reasoning,
                tool_calls,
            } = &g.message
            {
                report.tool_calls.native = calls_bash(tool_calls);
                report.tool_calls.text = text_call(&tools, content);
                report.reasoning |= !reasoning.is_empty();
            }
            g.usage
        }
        Err(e) => {
            if unreachable(&e.error) {
                if !report.reachable {
                    report
                        .notes
                        .push(format!("cannot reach the server: {}", e.error));
                    report.plan = "nothing: the server does not answer".into();
                    return Ok(report);
                }
            } else {
                report.reachable = true;
            }
            report.notes.push(format!(
                "the request with a tool declared failed: {}",
                e.error
            ));
            None
        }
    };
    if let (Some(u), Some(to_first)) = (first_usage, first.first) {
        let tps = rate(
            u.completion_tokens.saturating_sub(1),
            first.total.saturating_sub(to_first),
        );
        // The first piece came after the prompt and one answer token.
        let one = tps.map_or(Duration::ZERO, |r| Duration::from_secs_f64(1.0 / r));
        let prompt_time = to_first.checked_sub(one).unwrap_or(to_first);
        let computed = u.prompt_tokens.saturating_sub(u.cached_tokens);
        report.prompt_tokens_per_second = rate(computed, prompt_time);
        report.tokens_per_second = tps;
    }

    // 2. The same request again: constrained where the server can be
    //    asked to, plain elsewhere. Its cached share is the cache's reuse.
    let second = if engine.can_constrain_calls() {
        let t = ask(&engine, true, &messages, &tools, cancel).await;
        match &t.result {
            Ok(g) => {
                if let Message::Assistant {
                    tool_calls,
                    reasoning,
                    content,
                } = &g.message
                {
                    report.tool_calls.constrained = calls_bash(tool_calls);
                    report.reasoning |= !reasoning.is_empty();
                    if !report.tool_calls.constrained {
                        report.notes.push(format!(
                            "the constrained reply was no call of bash: {}",
                            crate::error::one_line(content, 100)
                        ));
                    }
                }
            }
            Err(e) => report
                .notes
                .push(format!("the constrained request failed: {}", e.error)),
        }
        Some(t)
    } else if first.result.is_ok() {
        Some(ask(&plain, false, &messages, &tools, cancel).await)
    } else {
        None
    };
    if let Some(Ok(g)) = second.as_ref().map(|t| &t.result)
        && g.cache_reported
        && let Some(Usage {
            prompt_tokens,
            cached_tokens,
            ..
        }) = g.usage
        && prompt_tokens > 0
    {
        let share = (cached_tokens as f64 / prompt_tokens as f64).clamp(0.0, 1.0);
        report.cache_reuse = Some((share * 100.0).round() / 100.0);
    }

    // Ollama: the window the loaded model runs with against its own.
    if let Some(probe) = inner.provider.running_window_probe() {
        let running = inner
            .probe_json(&probe, WINDOW_LIMIT)
            .await
            .ok()
            .and_then(|json| (probe.read)(&json, &inner.model));
        let own = match inner.provider.model_window_probe() {
            Some(p) => inner
                .probe_json(&p, WINDOW_LIMIT)
                .await
                .ok()
                .and_then(|json| (p.read)(&json, &inner.model)),
            None => None,
        };
        if let Some(r) = running
            && r != window.tokens
        {
            report.notes.push(format!(
                "Ollama runs the model with num_ctx {r}, not the {} tokens mm asks for",
                window.tokens
            ));
        }
        report.ollama_context = Some(OllamaContext {
            running,
            model: own,
        });
    }

    advise(config, &engine, &mut report);
    Ok(report)
}

/// What mm will do, and the settings worth changing.
fn advise(config: &Config, engine: &Engine, report: &mut Report) {
    let calls = report.tool_calls;
    let up_front = engine.constrains_calls(config.constrained_calls);
    let text_on = config.text_tool_calls == TextToolCalls::Auto;
    report.plan = if up_front {
        format!(
            "hold every reply that may call a tool to one declared call or an answer \
             (constrainedCalls: {})",
            config.constrained_calls.as_str()
        )
    } else {
        let mut how = vec!["take native calls"];
        if text_on {
            how.push("recover calls written as text");
        }
        if engine.can_constrain_calls() && config.constrained_calls == ConstrainedCalls::Auto {
            how.push("ask once more, constrained, when a reply describes a command instead");
        }
        how.join(", ")
    };
    if engine.can_constrain_calls() {
        let acts = calls.native || (calls.text && text_on);
        if !acts && calls.constrained && !up_front {
            report.recommend.push("constrainedCalls: always".into());
        } else if calls.native
            && !calls.constrained
            && config.constrained_calls == ConstrainedCalls::Always
        {
            report.recommend.push("constrainedCalls: auto".into());
        }
    }
    if calls.text && !calls.native && !text_on {
        report.recommend.push("textToolCalls: auto".into());
    }
    if !calls.native && !calls.text && !calls.constrained && report.reachable {
        report.notes.push(
            "no kind of call worked: the model may be too small to act, or the server \
             cannot hold a reply to a schema"
                .into(),
        );
    }
    if report.reasoning && config.thinking == Thinking::Off {
        report
            .notes
            .push("the model reasons although thinking is off".into());
    }
    let local = engine.can_constrain_calls();
    if local
        && engine.provider() == "openai-compatible"
        && report.cache_reuse.is_some_and(|r| r < POOR_REUSE)
    {
        report.notes.push(
            "the server recomputed an identical prompt: every turn pays for the whole \
             prompt again"
                .into(),
        );
        report
            .recommend
            .push(format!("llama-server: {}", LLAMA_CACHE_FLAGS));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_form_call_is_recognised_and_prose_is_not() {
        let tools = probe_tools();
        assert!(text_call(
            &tools,
            "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>"
        ));
        assert!(!text_call(&tools, "Here is the command:\n```bash\nls\n```"));
    }

    #[test]
    fn rates_are_rounded_and_need_time_and_tokens() {
        assert_eq!(rate(10, Duration::from_millis(300)), Some(33.3));
        assert_eq!(rate(0, Duration::from_secs(1)), None);
        assert_eq!(rate(5, Duration::ZERO), None);
    }
}
