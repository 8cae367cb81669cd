//! The provider registry: one row per provider. Adding a provider is one
//! module here and one row in [`REGISTRY`].

pub mod anthropic;
pub mod gemini;
pub mod ollama;
pub mod openai;

use mm_config::Thinking;

use crate::wire::Provider;

/// What a provider module needs to build its requests.
#[derive(Clone)]
pub struct ProviderSettings {
    pub model: String,
    /// Without a trailing slash.
    pub base_url: String,
    pub key: Option<String>,
    pub max_tokens: u64,
    pub context_window: u64,
    pub thinking: Thinking,
    /// `cacheControl`: mark what the provider may cache.
    pub cache_control: bool,
    /// OpenAI's `prompt_cache_key`: one per session, set only for rows
    /// whose server takes it ([`ProviderSpec::prompt_cache_key`]).
    pub cache_key: Option<String>,
    /// The JSON Schema the answer to this request must fit
    /// (`--output-schema`): the request is the final answer, sent as the
    /// provider's structured output, and asks for no tool call.
    pub output_schema: Option<serde_json::Value>,
    /// `output_schema` holds the calls-or-answer schema of
    /// `constrainedCalls`: the tools stay declared (the prompt is the one
    /// an unconstrained request renders) and thinking is switched off.
    pub constrained_calls: bool,
    /// The server's template renders earlier turns' reasoning (llama.cpp
    /// `supports_preserve_reasoning`): it goes back with each answer.
    pub reasoning_back: bool,
    /// llama.cpp's `id_slot`: the slot that serves this engine's requests
    /// (a subagent's, so that the session's own slot keeps its cache).
    pub slot: Option<u64>,
}

impl std::fmt::Debug for ProviderSettings {
    /// Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("key", &self.key.as_ref().map(|_| "[redacted]"))
            .field("max_tokens", &self.max_tokens)
            .field("context_window", &self.context_window)
            .field("thinking", &self.thinking)
            .field("cache_control", &self.cache_control)
            .field("cache_key", &self.cache_key)
            .field("output_schema", &self.output_schema.is_some())
            .field("constrained_calls", &self.constrained_calls)
            .field("slot", &self.slot)
            .finish()
    }
}

/// Whether `tokens` can be a model's window: within the documented range
/// of `contextWindow` (1 to 100,000,000).
pub(crate) fn in_window_range(tokens: u64) -> bool {
    mm_config::setting("contextWindow")
        .and_then(|s| s.range)
        .map_or((1..=100_000_000).contains(&tokens), |r| {
            (r.min..=r.max).contains(&tokens)
        })
}

/// A window a server reports, when it is one: a number within
/// [`in_window_range`]. Anything else (0, or the 18446744073709551615 of
/// a field never set) is the server saying nothing, so the model's known
/// window or the fallback is used instead (docs/design.md#context-window).
pub(crate) fn window_field(v: Option<&serde_json::Value>) -> Option<u64> {
    crate::wire::positive(v).filter(|n| in_window_range(*n))
}

/// A variable that sets a server's address, and how its value becomes a
/// base URL.
pub type HostVar = (&'static str, fn(&str) -> String);

/// One row of the registry.
#[derive(Debug)]
pub struct ProviderSpec {
    pub name: &'static str,
    /// `None`: the user must give `baseURL`.
    pub default_base_url: Option<&'static str>,
    /// Whether a request without a key is refused up front.
    pub key_required: bool,
    /// The variables the key is read from when `apiKeyEnv` is not set, in
    /// the order they are tried; empty: no key unless `apiKeyEnv` names
    /// one.
    pub key_vars: &'static [&'static str],
    /// A variable that sets the server's address when `baseURL` is not
    /// set, and how its value becomes a URL (`OLLAMA_HOST`).
    pub host_var: Option<HostVar>,
    pub build: fn(ProviderSettings) -> Box<dyn Provider>,
    /// The server takes OpenAI's `prompt_cache_key`. Servers of the
    /// OpenAI-compatible family are not known to (vLLM and others may
    /// refuse unknown fields), so they never get it.
    pub prompt_cache_key: bool,
    /// The server cuts a prompt longer than its window without saying so
    /// (Ollama keeps the end and answers 200): a prompt that fills the
    /// window may have lost its start.
    pub truncates_silently: bool,
    /// The server can hold a reply to a JSON Schema and may need to for
    /// tool calls (`constrainedCalls`): local servers. Hosted APIs call
    /// tools natively.
    pub constrained_calls: bool,
}

/// The registry table: one row per provider.
pub static REGISTRY: &[ProviderSpec] = &[
    ProviderSpec {
        name: "ollama",
        default_base_url: Some("http://localhost:11434"),
        key_required: false,
        key_vars: &[],
        host_var: Some(("OLLAMA_HOST", ollama_host_url)),
        build: |s| Box::new(ollama::Ollama::new(s)),
        prompt_cache_key: false,
        constrained_calls: true,
        truncates_silently: true,
    },
    ProviderSpec {
        name: "openai",
        default_base_url: Some("https://api.openai.com/v1"),
        key_required: true,
        key_vars: &["OPENAI_API_KEY"],
        host_var: None,
        build: |s| Box::new(openai::OpenAi::new("openai", s)),
        prompt_cache_key: true,
        constrained_calls: false,
        truncates_silently: false,
    },
    ProviderSpec {
        name: "openai-compatible",
        default_base_url: None,
        key_required: false,
        key_vars: &[],
        host_var: None,
        build: |s| Box::new(openai::OpenAi::new("openai-compatible", s)),
        prompt_cache_key: false,
        constrained_calls: true,
        truncates_silently: false,
    },
    ProviderSpec {
        name: "anthropic",
        default_base_url: Some("https://api.anthropic.com"),
        key_required: true,
        key_vars: &["ANTHROPIC_API_KEY"],
        host_var: None,
        build: |s| Box::new(anthropic::Anthropic::new(s)),
        prompt_cache_key: false,
        constrained_calls: false,
        truncates_silently: false,
    },
    ProviderSpec {
        name: "gemini",
        default_base_url: Some("https://generativelanguage.googleapis.com"),
        key_required: true,
        key_vars: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        host_var: None,
        build: |s| Box::new(gemini::Gemini::new(s)),
        prompt_cache_key: false,
        constrained_calls: false,
        truncates_silently: false,
    },
];

/// The names of every registered provider, in table order.
pub fn known_providers() -> Vec<&'static str> {
    REGISTRY.iter().map(|p| p.name).collect()
}

/// The variables `provider` reads its key from when `apiKeyEnv` is not
/// set, in order (Google's own clients take `GOOGLE_API_KEY` when
/// `GEMINI_API_KEY` is unset); empty for a provider that sends no key by
/// default, or one not in the registry.
pub fn key_vars(provider: &str) -> &'static [&'static str] {
    lookup(provider).map_or(&[], |spec| spec.key_vars)
}

/// Every variable that holds a provider key by default: what tools' child
/// processes never inherit and what is redacted wherever it appears
/// (docs/design.md#keys-stay-out-of-tools).
pub fn all_key_vars() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = Vec::new();
    for var in REGISTRY.iter().flat_map(|spec| spec.key_vars) {
        if !all.contains(var) {
            all.push(var);
        }
    }
    all
}

/// Look a provider up by name.
pub fn lookup(name: &str) -> Option<&'static ProviderSpec> {
    REGISTRY.iter().find(|p| p.name == name)
}

/// `OLLAMA_HOST` as Ollama's own client reads it: `host`, `host:port` or a
/// URL; a missing scheme is `http`, a missing port 11434.
pub fn ollama_host_url(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    let (scheme, rest) = match host.split_once("://") {
        Some((s, r)) => (s, r),
        None => ("http", host),
    };
    // 0.0.0.0 is how a server is told to listen everywhere; a client
    // reaches it on the loopback address.
    let rest = rest.replacen("0.0.0.0", "127.0.0.1", 1);
    let has_port = match rest.rsplit_once(':') {
        Some((_, port)) => {
            !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) && !rest.ends_with(']')
        }
        None => false,
    };
    if has_port || rest.contains('/') {
        format!("{scheme}://{rest}")
    } else {
        format!("{scheme}://{rest}:11434")
    }
}

/// The text of the user message that carries a tool's images on a wire
/// whose tool results hold text only.
pub(crate) const RESULT_IMAGES: &str = "[the images the tool results above returned]";

/// On a wire whose tool results hold text only: after each run of tool
/// results (`out` has one entry per message, in order), one user message
/// (`message`) with the images those results returned.
pub(crate) fn images_after_results(
    messages: &[mm_types::Message],
    out: &mut Vec<serde_json::Value>,
    message: impl Fn(&[mm_types::Image]) -> serde_json::Value,
) {
    if !messages
        .iter()
        .any(|m| matches!(m, mm_types::Message::Tool { images, .. } if !images.is_empty()))
    {
        return;
    }
    let mut with: Vec<serde_json::Value> = Vec::with_capacity(out.len() + 1);
    let mut pending: Vec<mm_types::Image> = Vec::new();
    for (m, v) in messages.iter().zip(out.drain(..)) {
        if !matches!(m, mm_types::Message::Tool { .. }) && !pending.is_empty() {
            with.push(message(&pending));
            pending.clear();
        }
        if let mm_types::Message::Tool { images, .. } = m {
            pending.extend(images.iter().cloned());
        }
        with.push(v);
    }
    if !pending.is_empty() {
        with.push(message(&pending));
    }
    *out = with;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_host_forms() {
        assert_eq!(ollama_host_url("127.0.0.1"), "http://127.0.0.1:11434");
        assert_eq!(
            ollama_host_url("example.lan:8080"),
            "http://example.lan:8080"
        );
        assert_eq!(
            ollama_host_url("https://gpu.box:443/"),
            "https://gpu.box:443"
        );
        assert_eq!(ollama_host_url("0.0.0.0"), "http://127.0.0.1:11434");
        assert_eq!(ollama_host_url("[::1]:9000"), "http://[::1]:9000");
    }

    #[test]
    fn registry_names() {
        assert_eq!(
            known_providers(),
            vec![
                "ollama",
                "openai",
                "openai-compatible",
                "anthropic",
                "gemini"
            ]
        );
        assert!(lookup("openai").is_some());
        assert!(lookup("nope").is_none());
    }

    #[test]
    fn providers_that_need_a_key_have_candidates() {
        for spec in REGISTRY {
            assert_eq!(
                spec.key_required,
                !spec.key_vars.is_empty(),
                "{}",
                spec.name
            );
        }
        assert_eq!(
            all_key_vars(),
            [
                "OPENAI_API_KEY",
                "ANTHROPIC_API_KEY",
                "GEMINI_API_KEY",
                "GOOGLE_API_KEY"
            ]
        );
        assert_eq!(key_vars("gemini"), ["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
        assert!(key_vars("ollama").is_empty());
        assert!(key_vars("nope").is_empty());
    }
}
