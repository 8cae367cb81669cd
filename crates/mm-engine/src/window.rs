//! The model's context window as the server reports it, and the server's
//! list of models: the questions a provider's row knows how to ask
//! ([`crate::wire::Probe`]), sent here once for every provider alike.
//!
//! The window is asked once per provider, address and model in a process
//! (an editor's sessions share the answer), never for longer than
//! [`DISCOVERY_BOUND`], and an answer that could not be had (a server not
//! up yet, a timeout) is not remembered, so a later session asks again.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use mm_config::FALLBACK_WINDOW;

use crate::engine::{Engine, Inner};
use crate::error::{EngineError, one_line};
use crate::types::{Message, ToolDecl};
use crate::wire::{ModelEntry, Probe};

/// The longest the window question may hold up a first request.
pub const DISCOVERY_BOUND: Duration = Duration::from_secs(3);

/// One question's own limit, so a silent endpoint leaves time for the next.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// How long the model list may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(20);

/// The window in force and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The window's size in tokens (prompt and answer together).
    pub tokens: u64,
    /// Where the size came from.
    pub source: WindowSource,
}

/// Where a window came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowSource {
    /// `contextWindow` set to a number.
    Setting,
    /// The server answered this endpoint (`/props`, `/api/show`...).
    Server(&'static str),
    /// The provider's table of its models.
    KnownModel,
    /// Nothing said: [`FALLBACK_WINDOW`].
    Fallback,
    /// A "prompt too long" answer named the server's window.
    Overflow,
}

impl fmt::Display for WindowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WindowSource::Setting => f.write_str("setting"),
            WindowSource::Server(label) => write!(f, "server {label}"),
            WindowSource::KnownModel => f.write_str("known model"),
            WindowSource::Fallback => f.write_str("default: the server did not say"),
            WindowSource::Overflow => f.write_str("the server's answer to a request too long"),
        }
    }
}

impl Window {
    /// The window before the server was asked: the setting's number, else
    /// the model's known window, else the fallback.
    pub(crate) fn initial(setting: Option<u64>, known: Option<u64>) -> Window {
        match (setting, known) {
            (Some(tokens), _) => Window {
                tokens,
                source: WindowSource::Setting,
            },
            (None, Some(tokens)) => Window {
                tokens,
                source: WindowSource::KnownModel,
            },
            (None, None) => Window {
                tokens: FALLBACK_WINDOW,
                source: WindowSource::Fallback,
            },
        }
    }
}

/// What a server said of a model: its window, and what its template does.
pub(crate) type Found = (Window, Caps);

/// What a server said of the model's chat template.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Caps {
    /// It renders tool declarations and calls (`None`: not said).
    pub tools: Option<bool>,
    /// It renders earlier turns' reasoning.
    pub keeps_reasoning: bool,
    /// The model sees images (Ollama `capabilities`, llama.cpp `/props`
    /// `modalities.vision`; `None`: not said).
    pub sees_images: Option<bool>,
}

/// Answers already had in this process, by provider, address and model.
pub(crate) fn cache() -> &'static Mutex<HashMap<String, Found>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Found>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// What the server said of `inner`'s model's template, once asked.
pub(crate) fn caps_of(inner: &Inner) -> Caps {
    cache()
        .lock()
        .ok()
        .and_then(|c| c.get(&cache_key(inner)).map(|(_, caps)| *caps))
        .unwrap_or_default()
}

pub(crate) fn cache_key(inner: &Inner) -> String {
    format!("{}\n{}\n{}", inner.spec.name, inner.base_url, inner.model)
}

/// Why one question got no usable answer.
pub(crate) enum Miss {
    /// Nothing answers there (yet): not worth remembering.
    Unreachable,
    /// The server answered, but not with a window.
    Answered,
}

impl Inner {
    /// Send one probe; the JSON of a 2xx answer.
    pub(crate) async fn probe_json<T>(
        &self,
        probe: &Probe<T>,
        limit: Duration,
    ) -> Result<serde_json::Value, EngineError> {
        let mut b = match &probe.body {
            Some(body) => self
                .client
                .post(&probe.url)
                .header("content-type", "application/json")
                .body(body.clone()),
            None => self.client.get(&probe.url),
        };
        for (name, value) in &probe.headers {
            b = b.header(*name, value);
        }
        let work = async {
            let resp = b.send().await.map_err(|e| self.send_error(e))?;
            let status = resp.status();
            if !status.is_success() {
                return Err(self.error_of(resp).await);
            }
            let bytes = resp.bytes().await.map_err(|e| {
                EngineError::Stream(format!("the answer of {} broke off: {e}", probe.label))
            })?;
            serde_json::from_slice(&bytes).map_err(|_| {
                EngineError::Stream(format!(
                    "{} at {} answered {} with something that is not JSON: {}",
                    self.spec.name,
                    self.url_for_errors(),
                    probe.label,
                    one_line(&String::from_utf8_lossy(&bytes), 120)
                ))
            })
        };
        match tokio::time::timeout(limit, work).await {
            Ok(r) => r,
            Err(_) => Err(EngineError::Connection {
                provider: self.spec.name.to_owned(),
                url: self.url_for_errors(),
                detail: format!("no answer to {} within {}s", probe.label, limit.as_secs()),
            }),
        }
    }

    /// The window, and whether the template renders tools when an answer
    /// on the way said so.
    pub(crate) async fn ask_window(&self, caps: &mut Caps) -> Result<Window, Miss> {
        let mut miss = Miss::Unreachable;
        for probe in self.provider.window_probes() {
            match self.probe_json(&probe, PROBE_TIMEOUT).await {
                Ok(json) => {
                    if caps.tools.is_none() {
                        caps.tools = self.provider.renders_tools(probe.label, &json);
                    }
                    caps.keeps_reasoning |= self.provider.keeps_reasoning(probe.label, &json);
                    if caps.sees_images.is_none() {
                        caps.sees_images = self.provider.sees_images(probe.label, &json);
                    }
                    if let Some(tokens) = (probe.read)(&json, &self.model) {
                        return Ok(Window {
                            tokens,
                            source: WindowSource::Server(probe.label),
                        });
                    }
                    miss = Miss::Answered;
                }
                Err(EngineError::Unreachable { .. } | EngineError::Connection { .. }) => {}
                Err(e) => {
                    tracing::debug!(probe = probe.label, %e, "no window from the server");
                    miss = Miss::Answered;
                }
            }
        }
        Err(miss)
    }
}

impl Engine {
    /// The window in force: the setting's number, else what the server
    /// reported (once [`Engine::discover_window`] ran and the agent took
    /// it with [`Engine::with_window`]), else the model's known window,
    /// else 32768.
    pub fn window(&self) -> Window {
        self.inner.window.clone()
    }

    /// Ask the server for the model's window
    /// (docs/design.md#context-window): at most once per provider, address
    /// and model in this process, and never for longer than
    /// [`DISCOVERY_BOUND`]. A number in `contextWindow` wins without
    /// asking. Without an answer, the window in force stays.
    pub async fn discover_window(&self) -> Window {
        let inner = &*self.inner;
        if inner.window.source == WindowSource::Setting {
            return inner.window.clone();
        }
        let key = cache_key(inner);
        if let Some((w, _)) = cache().lock().ok().and_then(|c| c.get(&key).cloned()) {
            return w;
        }
        let known = Window::initial(None, inner.provider.known_window());
        let mut caps = Caps::default();
        let asked = tokio::time::timeout(DISCOVERY_BOUND, inner.ask_window(&mut caps)).await;
        let found = match asked {
            Ok(Ok(w)) => Some(w),
            Ok(Err(Miss::Answered)) => Some(known.clone()),
            Ok(Err(Miss::Unreachable)) | Err(_) => None,
        };
        match found {
            Some(w) => {
                if let Ok(mut c) = cache().lock() {
                    c.insert(key, (w.clone(), caps));
                }
                w
            }
            None => inner.window.clone(),
        }
    }

    /// Remember `window` as this model's for the rest of the process (a
    /// server's overflow answer named it), so other sessions start with it.
    pub fn remember_window(&self, window: &Window) {
        if let Ok(mut c) = cache().lock() {
            let entry = c
                .entry(cache_key(&self.inner))
                .or_insert_with(|| (window.clone(), Caps::default()));
            entry.0 = window.clone();
        }
    }

    /// Whether the server said the model's chat template renders tool
    /// declarations and calls (llama.cpp `/props`
    /// `chat_template_caps.supports_tools`, Ollama `/api/show`
    /// `capabilities`), once [`Engine::discover_window`] asked; `None`
    /// when it did not say or was not asked.
    pub fn renders_tools(&self) -> Option<bool> {
        self.caps().tools
    }

    /// What the server said of the model's template, once asked.
    pub(crate) fn caps(&self) -> Caps {
        caps_of(&self.inner)
    }

    /// The exact number of tokens `messages` and `tools` make once the
    /// server renders them with the model's template and counts them with
    /// its tokenizer (llama.cpp `/apply-template` then `/tokenize`); `None`
    /// where the server cannot say. Exact counts may refuse or shrink what
    /// an estimate only plans (decision 43).
    pub async fn count_tokens(&self, messages: &[Message], tools: &[ToolDecl]) -> Option<u64> {
        let inner = &*self.inner;
        let template = inner.provider.template_probe(messages, tools)?;
        let json = inner.probe_json(&template, PROBE_TIMEOUT).await.ok()?;
        let prompt = (template.read)(&json, &inner.model)?;
        let tokenize = inner.provider.tokenize_probe(&prompt)?;
        let json = inner.probe_json(&tokenize, PROBE_TIMEOUT).await.ok()?;
        (tokenize.read)(&json, &inner.model)
    }

    /// Whether the model sees images: the `vision` setting when set, else
    /// what the server said when [`Engine::discover_window`] asked
    /// (Ollama `capabilities`, llama.cpp `/props` `modalities`), else the
    /// provider's known models, else no. A model that does not see gets
    /// each image replaced by one line saying so.
    pub fn sees_images(&self) -> bool {
        let inner = &*self.inner;
        inner
            .vision
            .or_else(|| caps_of(inner).sees_images)
            .or_else(|| inner.provider.known_vision())
            .unwrap_or(false)
    }

    /// The server's models (`/model` without a name): Ollama's
    /// `/api/tags`, the OpenAI-shaped `/models`, Anthropic's and Gemini's
    /// lists.
    pub async fn list_models(&self) -> Result<Vec<ModelEntry>, EngineError> {
        let inner = &*self.inner;
        let Some(probe) = inner.provider.models_probe() else {
            return Ok(Vec::new());
        };
        let json = inner.probe_json(&probe, LIST_TIMEOUT).await?;
        let mut models = (probe.read)(&json, &inner.model).ok_or_else(|| {
            EngineError::Stream(format!(
                "{} at {} answered {} without a list of models",
                inner.spec.name,
                inner.url_for_errors(),
                probe.label
            ))
        })?;
        models.sort_by(|a, b| a.id.cmp(&b.id));
        models.dedup_by(|a, b| a.id == b.id);
        Ok(models)
    }
}
