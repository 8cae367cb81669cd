//! How many requests a local server serves at once, and pinning an
//! engine's requests to one of its slots (llama.cpp `id_slot`), so that a
//! subagent's requests leave the session's own slot, and its cached
//! prompt, alone.

use std::time::Duration;

use crate::engine::Engine;
use crate::wire::Probe;

/// llama.cpp's `/props`: its parallel slots (`-np`).
fn read_slots(v: &serde_json::Value, _model: &str) -> Option<u64> {
    v.get("total_slots")?.as_u64().filter(|n| *n > 0)
}

impl Engine {
    /// How many requests the server serves at once, where it can be
    /// known: llama.cpp says it in `/props` (`total_slots`); Ollama cannot
    /// say (`OLLAMA_NUM_PARALLEL` is the server's), so one is assumed.
    /// `None` for other servers.
    pub async fn server_slots(&self) -> Option<u64> {
        let i = &self.inner;
        match i.spec.name {
            "ollama" => Some(1),
            "openai-compatible" => {
                let base = i.base_url.trim_end_matches('/');
                let root = base.strip_suffix("/v1").unwrap_or(base);
                let probe = Probe {
                    label: "/props",
                    url: format!("{root}/props"),
                    headers: i
                        .key
                        .iter()
                        .map(|k| ("authorization", format!("Bearer {k}")))
                        .collect(),
                    body: None,
                    read: read_slots,
                };
                let answer = i.probe_json(&probe, Duration::from_secs(5)).await.ok()?;
                read_slots(&answer, &i.model)
            }
            _ => None,
        }
    }

    /// This engine with its requests served by llama.cpp slot `slot`
    /// (`id_slot`; other servers ignore the field).
    pub fn with_slot(&self, slot: u64) -> Engine {
        let mut settings = self.inner.settings.clone();
        settings.slot = Some(slot);
        self.rebuilt(settings, self.inner.window.clone())
    }

    /// The slot this engine's requests are pinned to, if any.
    pub fn slot(&self) -> Option<u64> {
        self.inner.settings.slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_slots_is_read_from_props() {
        let props = serde_json::json!({"total_slots": 2, "n_ctx": 4096});
        assert_eq!(read_slots(&props, "m"), Some(2));
        assert_eq!(read_slots(&serde_json::json!({}), "m"), None);
        assert_eq!(
            read_slots(&serde_json::json!({"total_slots": 0}), "m"),
            None
        );
    }
}
