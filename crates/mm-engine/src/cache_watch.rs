//! The prompt cache, watched: a local server that computes the whole
//! prompt again turn after turn makes every turn as slow as the first, and
//! nothing says why. From the second request of a session, the part of the
//! prompt the server read from its cache is compared with the previous
//! request's prompt, which the new one begins with; when the server read
//! less than half of it two requests running, mm says so once, with the
//! server's own fix.

use crate::engine::{Engine, Generation};

/// A previous prompt shorter than this is cheap to compute again: not
/// watched.
pub const MIN_PREFIX: u64 = 256;

/// Requests running that must miss before the notice.
const MISSES: u32 = 2;

/// The notice's text after the counts.
pub const FIX: &str = "every turn pays for the whole prompt again. On llama-server a \
sliding-window model (Gemma, gpt-oss…) keeps its cache only with --swa-full, and \
--cache-reuse 256 lets it reuse chunks that moved; vLLM needs --enable-prefix-caching; a chat \
template that rewrites earlier turns (one that drops earlier reasoning) defeats any cache";

/// One session's watch.
#[derive(Debug, Clone, Default)]
pub struct CacheWatch {
    /// The previous request's prompt, in tokens.
    previous: Option<u64>,
    /// Requests running whose cached part fell short.
    misses: u32,
    /// The notice was given.
    said: bool,
}

impl CacheWatch {
    /// Take one request's reply; the notice to show, once per session,
    /// when the server recomputed (nearly) the whole prompt two requests
    /// running. Only local servers that say what their cache held are
    /// watched. A prompt shorter than the previous one (compaction, a
    /// cleared history) does not begin with it and is not judged.
    pub fn observe(&mut self, engine: &Engine, generation: &Generation) -> Option<String> {
        let usage = generation.usage?;
        if !generation.cache_reported || !engine.is_local() || usage.prompt_tokens == 0 {
            return None;
        }
        let previous = self.previous.replace(usage.prompt_tokens);
        let shared = previous.filter(|p| *p >= MIN_PREFIX && usage.prompt_tokens >= *p)?;
        if usage.cached_tokens * 2 >= shared {
            self.misses = 0;
            return None;
        }
        self.misses += 1;
        if self.misses < MISSES || self.said {
            return None;
        }
        self.said = true;
        Some(format!(
            "the model server computed the whole prompt again on each of the last {MISSES} \
             requests (this one read {} of the {shared} tokens it shares with the one before \
             from its cache): {FIX}",
            usage.cached_tokens
        ))
    }
}

impl Engine {
    /// Whether the server is one the user runs (a provider of the local
    /// family on this machine or a private network), whose cache settings
    /// the user can change.
    pub fn is_local(&self) -> bool {
        self.can_constrain_calls() && is_private(self.base_url())
    }
}

/// Whether `url` names this machine or a private network address
/// (10/8, 172.16/12, 192.168/16, fc00::/7, `.local`, `.lan`).
fn is_private(url: &str) -> bool {
    if crate::engine::is_loopback(url) {
        return true;
    }
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    let lower = host.to_ascii_lowercase();
    if lower.ends_with(".local") || lower.ends_with(".lan") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_private(),
        Ok(std::net::IpAddr::V6(ip)) => (ip.segments()[0] & 0xfe00) == 0xfc00,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, Usage};

    fn engine(model: &str, url: &str) -> Engine {
        let cfg = mm_config::Config {
            model: model.into(),
            base_url: Some(url.into()),
            ..mm_config::Config::default()
        };
        Engine::with_env(&cfg, |_| Some("k".into())).unwrap()
    }

    fn reply(prompt: u64, cached: Option<u64>) -> Generation {
        Generation {
            message: Message::assistant("ok"),
            usage: Some(Usage {
                prompt_tokens: prompt,
                completion_tokens: 10,
                cached_tokens: cached.unwrap_or(0),
            }),
            cancelled: false,
            cache_reported: cached.is_some(),
        }
    }

    fn run(e: &Engine, replies: &[(u64, Option<u64>)]) -> Vec<bool> {
        let mut w = CacheWatch::default();
        replies
            .iter()
            .map(|(p, c)| w.observe(e, &reply(*p, *c)).is_some())
            .collect()
    }

    #[test]
    fn two_recomputed_prompts_running_are_said_once() {
        let e = engine("openai-compatible/m", "http://127.0.0.1:8080/v1");
        let recomputed = [
            (1000, Some(0)),
            (1500, Some(3)),
            (2000, Some(0)),
            (2500, Some(0)),
            (3000, Some(0)),
        ];
        assert_eq!(run(&e, &recomputed), [false, false, true, false, false]);
        // A cache that serves the prefix is never reported.
        let served = [(1000, Some(0)), (1500, Some(999)), (2000, Some(1499))];
        assert_eq!(run(&e, &served), [false, false, false]);
        // One miss between hits (a side request took the slot) is not.
        let once = [
            (1000, Some(0)),
            (1500, Some(0)),
            (2000, Some(1499)),
            (2500, Some(0)),
        ];
        assert_eq!(run(&e, &once), [false; 4]);
        // A compacted (shorter) prompt is not judged, nor a small one.
        let shrinking = [(3000, Some(0)), (1000, Some(0)), (900, Some(0))];
        assert_eq!(run(&e, &shrinking), [false; 3]);
        let small = [(100, Some(0)), (200, Some(0)), (250, Some(0))];
        assert_eq!(run(&e, &small), [false; 3]);
        // A server that does not say is not judged.
        assert_eq!(
            run(&e, &[(1000, None), (1500, None), (2000, None)]),
            [false; 3]
        );
    }

    #[test]
    fn only_local_servers_are_watched() {
        let recomputed = [(1000, Some(0)), (1500, Some(0)), (2000, Some(0))];
        for (model, url, watched) in [
            ("openai-compatible/m", "http://192.168.1.5:8080/v1", true),
            ("openai-compatible/m", "http://gpu.lan:8080/v1", true),
            ("ollama/m", "http://localhost:11434", true),
            ("openai-compatible/m", "https://openrouter.ai/api/v1", false),
            ("openai/gpt-4o", "http://127.0.0.1:9/v1", false),
        ] {
            let got = run(&engine(model, url), &recomputed);
            assert_eq!(got[2], watched, "{model} at {url}");
        }
    }
}
