//! The engine handle: provider, model, address and key chosen from the
//! settings through the registry.

use std::sync::{Arc, Once};
use std::time::Duration;

use mm_config::Config;

use crate::error::EngineError;
use crate::providers::{self, ProviderSettings, ProviderSpec};
use crate::types::{Message, Usage};
use crate::window::{Window, WindowSource};
use crate::wire::Provider;

/// The result of one model request.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Always `Message::Assistant`.
    pub message: Message,
    /// The token counts the server reported for this request; `None` when it
    /// sent none.
    pub usage: Option<Usage>,
    /// The request was cancelled; `message` is the partial answer.
    pub cancelled: bool,
    /// The server said how much of the prompt it read from its cache
    /// (`usage.cached_tokens` is its count, not a missing one).
    pub cache_reported: bool,
}

/// A configured model server. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub spec: &'static ProviderSpec,
    pub provider: Box<dyn Provider>,
    pub model: String,
    pub base_url: String,
    pub key: Option<String>,
    pub client: reqwest::Client,
    pub watchdog: Duration,
    pub watchdog_secs: u64,
    pub retries: u32,
    /// Recover tool calls written into the answer as text.
    pub text_tool_calls: bool,
    /// `maxRetryWait`: the longest `Retry-After` honoured.
    pub max_retry_wait: Duration,
    /// What the provider was built from (kept to build it again with a
    /// session's cache key or the window the server reported).
    pub settings: ProviderSettings,
    /// The window in force (`settings.context_window` is its size).
    pub window: Window,
    /// `vision`: whether the model sees images, when the settings say.
    pub vision: Option<bool>,
}

impl std::fmt::Debug for Engine {
    /// Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("provider", &self.inner.spec.name)
            .field("model", &self.inner.model)
            .field("base_url", &self.inner.base_url)
            .field("watchdog", &self.inner.watchdog)
            .field("retries", &self.inner.retries)
            .finish()
    }
}

/// Whether `url` names this machine: `localhost`, 127.0.0.0/8 or `::1`.
pub(crate) fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    if host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// rustls needs a process-wide crypto provider before the first client;
/// ring builds without C toolchains. "Already installed" is fine.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl Engine {
    /// Registry lookup of `PROVIDER/MODEL`, reading the key from the
    /// process environment (or the keys the front end took out of it).
    pub fn new(cfg: &Config) -> Result<Engine, EngineError> {
        Engine::with_env(cfg, mm_redact::keys::var)
    }

    /// Like [`Engine::new`], reading variables through `env` (tests, and
    /// callers that hold their own environment).
    pub fn with_env(
        cfg: &Config,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Engine, EngineError> {
        let (provider_name, model) = match cfg.model.split_once('/') {
            Some((p, m)) if !p.is_empty() && !m.is_empty() => (p, m),
            _ => {
                return Err(EngineError::BadModel {
                    model: cfg.model.clone(),
                });
            }
        };
        let spec =
            providers::lookup(provider_name).ok_or_else(|| EngineError::UnknownProvider {
                name: provider_name.to_owned(),
                known: providers::known_providers()
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            })?;

        let base_url = match &cfg.base_url {
            Some(u) if !u.trim().is_empty() => u.trim().to_owned(),
            _ => {
                let from_var = spec.host_var.and_then(|(var, to_url)| {
                    env(var)
                        .filter(|h| !h.trim().is_empty())
                        .map(|h| to_url(&h))
                });
                match (from_var, spec.default_base_url) {
                    (Some(url), _) => url,
                    (None, Some(d)) => d.to_owned(),
                    (None, None) => {
                        return Err(EngineError::MissingBaseUrl {
                            provider: spec.name.to_owned(),
                        });
                    }
                }
            }
        };
        let base_url = base_url.trim_end_matches('/').to_owned();

        let key = match &cfg.api_key_env {
            // A named variable must hold the key: the user asked for it.
            Some(var) if !var.trim().is_empty() => match env(var).filter(|k| !k.is_empty()) {
                Some(k) => Some(k),
                None => {
                    return Err(EngineError::MissingKey {
                        provider: spec.name.to_owned(),
                        var: var.clone(),
                    });
                }
            },
            _ => {
                let candidates = spec.key_vars;
                let found = candidates
                    .iter()
                    .find_map(|v| env(v).filter(|k| !k.is_empty()));
                // A server on this machine (llama-server's Anthropic
                // endpoint, a local proxy) takes requests without a key
                // (docs/design.md#keyless-loopback-servers).
                let required = spec.key_required && !is_loopback(&base_url);
                match (found, required) {
                    (Some(k), _) => Some(k),
                    (None, true) => {
                        return Err(EngineError::MissingKey {
                            provider: spec.name.to_owned(),
                            var: candidates.first().copied().unwrap_or("").to_owned(),
                        });
                    }
                    (None, false) => None,
                }
            }
        };

        install_crypto_provider();
        let mut builder = reqwest::Client::builder();
        if base_url.starts_with("http://") {
            // A plain-HTTP server (a local one, mostly) needs no TLS roots:
            // loading the system's store reads every file of it, a
            // measurable part of a one-shot answer's start-up. Requests go
            // only to the base URL, so an empty store is never consulted.
            builder = builder.tls_certs_only(Vec::new());
        }
        let client = builder
            .connect_timeout(Duration::from_secs(30))
            .tcp_nodelay(true)
            // A redirect would carry the key header (`x-api-key`,
            // `x-goog-api-key`: reqwest strips only `authorization`) to
            // another host; keys go only where they belong
            // (docs/design.md#where-keys-go).
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| EngineError::Connection {
                provider: spec.name.to_owned(),
                url: mm_config::mask_url(&base_url),
                detail: format!("cannot set up the HTTP client: {e}"),
            })?;

        let mut settings = ProviderSettings {
            model: model.to_owned(),
            base_url: base_url.clone(),
            key: key.clone(),
            max_tokens: cfg.max_tokens,
            context_window: 0,
            thinking: cfg.thinking,
            cache_control: cfg.cache_control,
            cache_key: None,
            output_schema: None,
            constrained_calls: false,
            reasoning_back: false,
            slot: None,
        };
        // A watchdog of 0 means "never cut".
        let watchdog = if cfg.watchdog == 0 {
            Duration::from_secs(365 * 24 * 3600)
        } else {
            Duration::from_secs(cfg.watchdog)
        };
        // The window before the server is asked: the provider's own table
        // needs a built provider to read it.
        let window = Window::initial(
            cfg.context_window.fixed(),
            (spec.build)(settings.clone()).known_window(),
        );
        settings.context_window = window.tokens;
        Ok(Engine {
            inner: Arc::new(Inner {
                spec,
                provider: (spec.build)(settings.clone()),
                window,
                model: model.to_owned(),
                base_url,
                key,
                client,
                watchdog,
                watchdog_secs: cfg.watchdog,
                retries: cfg.retries,
                text_tool_calls: cfg.text_tool_calls == mm_config::TextToolCalls::Auto,
                max_retry_wait: Duration::from_secs(cfg.max_retry_wait),
                settings,
                vision: cfg.vision,
            }),
        })
    }

    /// This engine for the session whose prompt-cache key is `key`: sent
    /// as `prompt_cache_key` where the provider's row says its server
    /// takes it and `cacheControl` is on, so the server routes the
    /// session's requests to the cache that holds its prefix. The HTTP
    /// client (and its connections) is shared.
    pub fn with_cache_key(&self, key: &str) -> Engine {
        let i = &self.inner;
        let mut settings = i.settings.clone();
        settings.cache_key =
            (i.spec.prompt_cache_key && settings.cache_control).then(|| key.to_owned());
        self.rebuilt(settings, i.window.clone())
    }

    /// This engine for the final answer of a run with `--output-schema`:
    /// its requests carry `schema` as the provider's structured output
    /// (OpenAI's `response_format`, Ollama's `format`, Gemini's
    /// `responseJsonSchema`, Anthropic's forced [`crate::ANSWER_TOOL`])
    /// and ask for no other tool call.
    pub fn with_output_schema(&self, schema: serde_json::Value) -> Engine {
        let i = &self.inner;
        let mut settings = i.settings.clone();
        settings.output_schema = Some(schema);
        self.rebuilt(settings, i.window.clone())
    }

    /// This engine with `window` in force: requests that carry the window
    /// (Ollama's `num_ctx`) carry this one. A number in the settings wins
    /// over what the server reports, but not over a server's refusal of a
    /// request too long ([`WindowSource::Overflow`]): that is a fact.
    pub fn with_window(&self, window: Window) -> Engine {
        let i = &self.inner;
        let set = i.window.source == WindowSource::Setting;
        if (set && window.source != WindowSource::Overflow) || i.window == window {
            return self.clone();
        }
        let mut settings = i.settings.clone();
        settings.context_window = window.tokens;
        self.rebuilt(settings, window)
    }

    /// This engine asking for answers of at most `tokens` (a summary must
    /// leave room in a small window).
    pub fn with_max_tokens(&self, tokens: u64) -> Engine {
        let mut settings = self.inner.settings.clone();
        settings.max_tokens = tokens.max(1);
        self.rebuilt(settings, self.inner.window.clone())
    }

    pub(crate) fn rebuilt(&self, settings: ProviderSettings, window: Window) -> Engine {
        self.rebuilt_with(settings, window, self.inner.text_tool_calls)
    }

    /// [`Engine::rebuilt`], recovering text-form calls or not.
    pub(crate) fn rebuilt_with(
        &self,
        settings: ProviderSettings,
        window: Window,
        text_tool_calls: bool,
    ) -> Engine {
        let i = &self.inner;
        let mut settings = settings;
        // Learnt with the window: whether earlier reasoning goes back.
        settings.reasoning_back = crate::window::caps_of(i).keeps_reasoning;
        Engine {
            inner: Arc::new(Inner {
                spec: i.spec,
                provider: (i.spec.build)(settings.clone()),
                window,
                model: i.model.clone(),
                base_url: i.base_url.clone(),
                key: i.key.clone(),
                client: i.client.clone(),
                watchdog: i.watchdog,
                watchdog_secs: i.watchdog_secs,
                retries: i.retries,
                text_tool_calls,
                max_retry_wait: i.max_retry_wait,
                settings,
                vision: i.vision,
            }),
        }
    }

    /// The registry name: `ollama`, `openai`...
    pub fn provider(&self) -> &str {
        self.inner.spec.name
    }

    /// The model part of `PROVIDER/MODEL`.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The server address in use (without a trailing slash).
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// Key values this engine holds, so tool output can be redacted
    /// (docs/design.md#keys-stay-out-of-tools).
    pub fn secrets(&self) -> Vec<String> {
        self.inner.key.iter().cloned().collect()
    }

    /// Whether the server cuts an overlong prompt without an error
    /// (Ollama): the agent then watches the reported prompt size.
    pub fn truncates_silently(&self) -> bool {
        self.inner.spec.truncates_silently
    }

    /// The watchdog period in force.
    pub fn watchdog(&self) -> Duration {
        self.inner.watchdog
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_addresses() {
        for url in [
            "http://localhost:8080",
            "http://LOCALHOST/v1",
            "http://127.0.0.1:8080/v1",
            "http://127.1.2.3",
            "https://[::1]:8443/v1",
            "http://user:pw@127.0.0.1:1/",
            "http://app.localhost:3000",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in [
            "https://api.anthropic.com",
            "http://10.0.0.2:8080",
            "http://localhost.example.com",
            "http://127.0.0.1.example.com",
            "http://[::2]:1",
            "http://evil.com/?x=localhost",
            "http://localhost@evil.com",
        ] {
            assert!(!is_loopback(url), "{url}");
        }
    }
}
