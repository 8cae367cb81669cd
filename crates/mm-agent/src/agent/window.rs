//! The window budget of a session: the window in force and how it was
//! learnt, what a request costs in tokens, when to compact, and what the
//! server's usage teaches. A child of the agent's module, so that the
//! agent's own file stays about the turn.

use super::*;

impl Agent {
    /// The model's window in force and where it came from: the setting's
    /// number, else what the server reported (once a question waited for
    /// it, see [`Agent::settle_window`]), else the model's known window,
    /// else 32768 (docs/design.md#context-window).
    pub fn window(&self) -> Window {
        self.engine.window()
    }

    /// Take the server's answer about the model's window, waiting for it
    /// at most [`mm_engine::DISCOVERY_BOUND`]. Every question does this
    /// first; a front end may call it earlier to show the window.
    pub async fn settle_window(&mut self) -> Window {
        if !self.window_settled {
            self.window_settled = true;
            let found = match self.window_task.take() {
                Some(task) => task.await.ok(),
                None => Some(self.engine.discover_window().await),
            };
            if let Some(w) = found {
                self.engine = self.engine.with_window(w);
            }
            self.fit_small_window().await;
        }
        self.engine.window()
    }

    /// On a small window the fixed part must leave room for the
    /// conversation: when system prompt and declarations take more than a
    /// quarter of it, only the core tools stay declared, with short
    /// descriptions, once, before the first request, so the prefix of
    /// later requests never changes. The size is the server's exact count
    /// where it can give one (llama.cpp renders them with the model's
    /// template, which may leave the declarations out), else an estimate.
    async fn fit_small_window(&mut self) {
        let window = self.engine.window().tokens;
        let estimate = u64::try_from(self.fixed_chars() / 4).unwrap_or(u64::MAX);
        if estimate <= window / 4 {
            return;
        }
        let fixed = [Message::system(self.system.clone()), Message::user("")];
        if let Some(exact) = self.engine.count_tokens(&fixed, &self.decls).await {
            tracing::info!(
                exact,
                estimate,
                window,
                "the fixed part, counted by the server"
            );
            if exact <= window / 4 {
                return;
            }
        }
        let dropped = crate::tools::keep_core(&mut self.decls);
        if !dropped.is_empty() {
            self.small_window_notice = Some(format!(
                "the model's window ({window} tokens) is small: only {} are declared ({} left out)",
                self.decls
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                dropped.join(", ")
            ));
        }
    }

    /// The most characters one tool result may hold: `maxOutput`, or the
    /// window's size in tokens when that is smaller (a quarter of the
    /// window at four characters a token, docs/design.md#tool-result-budget).
    pub fn output_budget(&self) -> usize {
        let window = usize::try_from(self.engine.window().tokens).unwrap_or(usize::MAX);
        self.config.max_output.min(window)
    }

    /// Tokens the model's window holds now: as the server counted the last
    /// request and its answer, or mm's estimate of the next request after a
    /// compaction or a resume; 0 for an empty conversation.
    pub fn context_used(&self) -> u64 {
        self.in_context
    }

    /// An overflow teaches the true window (when the server named it) and,
    /// from the server's count of the request, what a character costs here
    /// (a new process has not learnt it yet), so the compaction that
    /// follows cuts enough. Returns the prompt's tokens and the window.
    pub(super) fn learn_overflow(&mut self, told: Option<u64>, counted: Option<u64>) -> (u64, u64) {
        self.adopt_window(told);
        if let Some(counted) = counted {
            self.learn_ratio(Usage {
                prompt_tokens: counted,
                ..Usage::default()
            });
        }
        let prompt =
            counted.unwrap_or_else(|| compact::estimate_tokens(self.request_chars(), self.ratio));
        (prompt, self.engine.window().tokens)
    }

    /// Count a request's tokens for the turn and the session, and learn
    /// from them; a prompt that filled the window compacts before the
    /// next request.
    pub(super) fn take_usage(&mut self, u: Usage, usage: &mut Usage, sink: &Arc<dyn Sink>) {
        usage.add(u);
        self.usage.add(u);
        self.in_context = u.prompt_tokens + u.completion_tokens;
        if self.prompt_filled_window(u) {
            self.compact_next = true;
            sink.event(Event::Notice {
                text: format!(
                    "the prompt filled the model's window ({} of {} tokens): the \
                     server may have cut its start; compacting before the next request",
                    u.prompt_tokens,
                    self.engine.window().tokens
                ),
            });
        } else {
            self.learn_ratio(u);
        }
    }

    /// Characters of the next request.
    pub(super) fn request_chars(&self) -> usize {
        self.fixed_chars() + self.history_chars()
    }

    /// Characters of what every request carries: the system prompt and the
    /// tool declarations.
    pub(super) fn fixed_chars(&self) -> usize {
        compact::fixed_chars(&self.system, &self.decls)
    }

    pub(super) fn history_chars(&self) -> usize {
        self.history.iter().map(compact::message_chars).sum()
    }

    /// Tokens a compacted history may hold beside the fixed part, with an
    /// eighth of the window left for the answer: half for the summary, half
    /// for the latest exchanges kept verbatim. On a window that barely
    /// holds mm's prompt and tools this is nothing.
    pub(super) fn history_room(&self) -> u64 {
        compact::Budget::history_room(self.engine.window().tokens, self.fixed_chars(), self.ratio)
    }

    /// What compaction may keep verbatim: `compact.keepRecent` (capped at
    /// a quarter of the window), and never more than half the room.
    pub(super) fn keep_tokens(&self) -> u64 {
        let window = self.engine.window().tokens;
        self.config
            .keep_recent_tokens(window)
            .min(self.history_room() / 2)
    }

    /// The next request passes `compact.threshold` of the window and
    /// compaction would shorten it (on a window taken up by the fixed part
    /// alone, an empty history is not worth a notice at every turn).
    pub(super) fn over_threshold(&self) -> bool {
        let estimate = compact::estimate_tokens(self.request_chars(), self.ratio);
        estimate as f64 > self.config.compact.threshold * self.engine.window().tokens as f64
            && compact::shortens(
                &self.history,
                compact::cut_index(&self.history, self.keep_tokens(), self.ratio),
            )
    }

    /// A smaller window an overflow answer named becomes the one in force,
    /// for this session and the process's next ones.
    pub(super) fn adopt_window(&mut self, told: Option<u64>) {
        if let Some(tokens) = told.filter(|t| *t > 0 && *t < self.engine.window().tokens) {
            let window = Window {
                tokens,
                source: WindowSource::Overflow,
            };
            self.engine = self.engine.with_window(window.clone());
            self.engine.remember_window(&window);
        }
    }

    /// On a server that cuts long prompts silently (Ollama), a reported
    /// prompt that fills the window was probably cut
    /// (docs/design.md#overflow).
    pub(super) fn prompt_filled_window(&self, usage: Usage) -> bool {
        let window = self.engine.window().tokens;
        self.engine.truncates_silently() && usage.prompt_tokens >= window - window / 20
    }

    pub(super) fn learn_ratio(&mut self, usage: Usage) {
        let chars = self.request_chars();
        if usage.prompt_tokens > 0 && chars > 0 {
            // Bounded: one odd count (a server leaving out cached tokens,
            // say) must not switch compaction off or on for good.
            let ratio = usage.prompt_tokens as f64 / chars as f64;
            self.ratio = Some(ratio.clamp(1.0 / 8.0, 1.0 / 1.5));
        }
    }
}

/// Start asking the server for the model's window, when there is a
/// runtime to do it in (else the first question asks).
pub(super) fn ask_window(engine: &Engine) -> Option<tokio::task::JoinHandle<Window>> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    let engine = engine.clone();
    Some(runtime.spawn(async move { engine.discover_window().await }))
}
