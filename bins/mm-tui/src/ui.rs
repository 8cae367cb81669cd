//! What the window holds besides the transcript: the input box and its
//! history, the scroll position and layout cache, the selection, the open
//! popup, and the status bar's facts. Only the event loop touches it.

use std::time::Instant;

use ratatui::style::{Modifier, Style};
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

use crate::popup::Popup;
use crate::transcript::Transcript;
use crate::view::{Cache, Look, Scroll};
use crate::wrap;

/// Questions sent before, for Up/Down and Ctrl-R in the input; kept in
/// the file the REPL keeps its history in, so both share one.
#[derive(Debug, Default, Clone)]
pub struct History {
    items: Vec<String>,
    /// Position while browsing; `None` when editing a new line.
    at: Option<usize>,
    /// What was typed before browsing began.
    draft: String,
    /// The history file, when there is one.
    file: Option<std::path::PathBuf>,
}

/// Most entries read from the history file.
pub const HISTORY_MAX: usize = 2000;

impl History {
    /// The history in `path` (none yet is fine); new entries are added to
    /// it as they are sent.
    pub fn load(path: &std::path::Path) -> History {
        use rustyline::history::{FileHistory, History as _};
        let mut file = FileHistory::new();
        let _ = file.set_max_len(HISTORY_MAX);
        if let Err(e) = file.load(path) {
            tracing::debug!("no history read from {}: {e}", path.display());
        }
        History {
            items: file.iter().cloned().collect(),
            at: None,
            draft: String::new(),
            file: Some(path.to_path_buf()),
        }
    }

    pub fn push(&mut self, text: &str) {
        if !text.trim().is_empty() && self.items.last().map(String::as_str) != Some(text) {
            self.items.push(text.to_string());
            self.append(text);
        }
        self.at = None;
    }

    /// Add `text` to the file, after what others (a REPL) wrote there.
    fn append(&self, text: &str) {
        use rustyline::history::{FileHistory, History as _};
        let Some(path) = &self.file else { return };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let mut file = FileHistory::new();
        let _ = file.set_max_len(HISTORY_MAX);
        let _ = file.load(path);
        let saved = file.add(text).and_then(|_| file.append(path));
        if let Err(e) = saved {
            tracing::warn!("history not saved to {}: {e}", path.display());
        }
    }

    /// The newest entry before `before` (an index; all when `None`) that
    /// holds `query`: its index.
    pub fn search(&self, query: &str, before: Option<usize>) -> Option<usize> {
        let end = before.unwrap_or(self.items.len()).min(self.items.len());
        self.items[..end].iter().rposition(|i| i.contains(query))
    }

    /// The older entry, keeping `current` as the draft when browsing starts.
    pub fn older(&mut self, current: &str) -> Option<&str> {
        let at = match self.at {
            None if self.items.is_empty() => return None,
            None => {
                self.draft = current.to_string();
                self.items.len() - 1
            }
            Some(0) => return None,
            Some(i) => i - 1,
        };
        self.at = Some(at);
        self.items.get(at).map(String::as_str)
    }

    /// The newer entry, then the draft.
    pub fn newer(&mut self) -> Option<String> {
        let i = self.at?;
        if i + 1 < self.items.len() {
            self.at = Some(i + 1);
            self.items.get(i + 1).cloned()
        } else {
            self.at = None;
            Some(std::mem::take(&mut self.draft))
        }
    }

    pub fn items(&self) -> &[String] {
        &self.items
    }
}

/// A Ctrl-R history search under way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Search {
    pub query: String,
    /// The entry found, by index.
    pub found: Option<usize>,
    /// The input before the search, for Esc.
    pub draft: String,
}

/// The window's own state.
pub struct Ui {
    pub input: TextArea<'static>,
    pub history: History,
    pub cache: Cache,
    pub scroll: Scroll,
    /// A foldable entry chosen with Tab.
    pub selected: Option<usize>,
    pub popup: Option<Popup>,
    pub model: String,
    pub cwd: String,
    pub version: String,
    /// Spinner frame; moves while something runs.
    pub tick: u64,
    pub now: Instant,
    /// A one-line hint in the status bar (`Press Ctrl-C again to quit`).
    pub hint: Option<String>,
    /// The mode in force, always on the status bar.
    pub mode: mm_ui::AgentMode,
    /// Messages sent while a turn runs: each goes when the turn before it
    /// ends; Esc puts them back in the input.
    pub queued: Vec<String>,
    /// Ctrl-R: searching the history.
    pub search: Option<Search>,
    /// First row of the change shown in the permission prompt.
    pub prompt_scroll: usize,
    /// The call the prompt's scroll belongs to.
    pub prompt_for: Option<String>,
    /// Rows of the transcript area in the last frame (for paging).
    pub transcript_rows: u16,
    pub width: u16,
    /// `editMode: vi`: the input's vi mode (`None` in emacs mode).
    pub vi: Option<crate::vi::Vi>,
    /// The `theme` setting: the colours of each frame.
    pub theme: mm_config::Theme,
}

impl Ui {
    pub fn new(model: &str, cwd: &str, version: &str) -> Ui {
        Ui {
            input: new_input(),
            history: History::default(),
            cache: Cache::new(),
            scroll: Scroll::Bottom,
            selected: None,
            popup: None,
            model: model.to_string(),
            cwd: cwd.to_string(),
            version: version.to_string(),
            tick: 0,
            now: Instant::now(),
            hint: None,
            mode: mm_ui::AgentMode::Allow,
            queued: Vec::new(),
            search: None,
            prompt_scroll: 0,
            prompt_for: None,
            transcript_rows: 0,
            width: 0,
            vi: None,
            theme: mm_config::Theme::Dark,
        }
    }

    pub fn look(&self) -> Look {
        Look {
            width: self.width,
            now: self.now,
            tick: self.tick,
            selected: self.selected,
        }
    }

    /// The whole input text.
    pub fn text(&self) -> String {
        self.input.lines().join("\n")
    }

    pub fn set_text(&mut self, text: &str) {
        self.fresh_input();
        self.input.insert_str(text);
        self.input.move_cursor(CursorMove::Bottom);
        self.input.move_cursor(CursorMove::End);
    }

    /// Empty the input, returning what it held.
    pub fn take_text(&mut self) -> String {
        let text = self.text();
        self.fresh_input();
        text
    }

    /// A new, empty input that keeps what the last cut or copy took
    /// (Ctrl-Y and vi's `p` put it into the next question too).
    fn fresh_input(&mut self) {
        let copy = self.input.yank_text();
        self.input = new_input();
        self.input.set_yank_text(copy);
    }

    /// Rows the input needs at `width`.
    pub fn input_rows(&self, width: u16) -> u16 {
        let w = usize::from(width.max(1));
        let rows: usize = self
            .input
            .lines()
            .iter()
            .map(|l| wrap::width(l).div_ceil(w).max(1))
            .sum();
        u16::try_from(rows).unwrap_or(u16::MAX)
    }

    /// Move the selection to the previous (`back`) or next foldable entry.
    pub fn select(&mut self, t: &Transcript, back: bool) {
        let foldable = |i: usize| t.entries().get(i).is_some_and(|e| e.kind.foldable());
        let n = t.len();
        let next = match (self.selected, back) {
            (None, true) => (0..n).rev().find(|&i| foldable(i)),
            (None, false) => None,
            (Some(s), true) => (0..s).rev().find(|&i| foldable(i)).or(Some(s)),
            (Some(s), false) => (s + 1..n).find(|&i| foldable(i)),
        };
        self.selected = next;
    }
}

fn new_input() -> TextArea<'static> {
    let mut t = TextArea::default();
    t.set_wrap_mode(WrapMode::WordOrGlyph);
    t.set_cursor_line_style(Style::default());
    t.set_cursor_style(Style::default().add_modifier(Modifier::REVERSED));
    t.set_placeholder_text("Ask mm anything — / for commands, @ to attach a file");
    // Italic as well as grey: the high-contrast theme does not dim, and
    // the hint must not read as typed text there.
    t.set_placeholder_style(
        Style::default()
            .fg(ratatui::style::Color::DarkGray)
            .add_modifier(Modifier::ITALIC),
    );
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::EntryKind;

    #[test]
    fn what_was_cut_outlives_the_question() {
        let mut ui = Ui::new("m", "/", "0");
        ui.set_text("take this");
        ui.input.move_cursor(CursorMove::Head);
        ui.input.delete_line_by_end();
        assert_eq!(ui.take_text(), "");
        ui.set_text("an older question");
        assert_eq!(
            ui.input.yank_text(),
            "take this",
            "Ctrl-Y and p still put it"
        );
    }

    #[test]
    fn history_walks_back_and_returns_to_the_draft() {
        let mut h = History::default();
        h.push("first");
        h.push("second");
        h.push("second");
        assert_eq!(h.items(), ["first", "second"]);
        assert_eq!(h.older("draft"), Some("second"));
        assert_eq!(h.older("second"), Some("first"));
        assert_eq!(h.older("first"), None);
        assert_eq!(h.newer().as_deref(), Some("second"));
        assert_eq!(h.newer().as_deref(), Some("draft"));
        assert_eq!(h.newer(), None);
    }

    #[test]
    fn selection_moves_over_foldable_entries_only() {
        let mut t = Transcript::new();
        t.push(EntryKind::Question("q".into()));
        t.push(EntryKind::Thinking {
            text: "x".into(),
            expanded: false,
        });
        t.push(EntryKind::Answer("a".into()));
        t.push(EntryKind::Notice("n".into()));
        let mut ui = Ui::new("m", "/", "v");
        ui.select(&t, true);
        assert_eq!(ui.selected, Some(1));
        ui.select(&t, true);
        assert_eq!(ui.selected, Some(1), "stays on the first foldable entry");
        ui.select(&t, false);
        assert_eq!(ui.selected, None, "past the last one the selection goes");
    }

    #[test]
    fn input_rows_count_wrapped_rows() {
        let mut ui = Ui::new("m", "/", "v");
        assert_eq!(ui.input_rows(10), 1);
        ui.set_text("0123456789abc\nx");
        assert_eq!(ui.input_rows(10), 3);
        assert_eq!(ui.text(), "0123456789abc\nx");
        assert_eq!(ui.take_text(), "0123456789abc\nx");
        assert_eq!(ui.text(), "");
    }
}
