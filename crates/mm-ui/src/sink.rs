//! The Sink contract and its events, from the vocabulary floor
//! (mm-types); mm-ui renders them for people.

pub use mm_types::event::*;

/// The checklist as a terminal draws it, one line per item: `☐ ◐ ☑`, or
/// `[ ] [~] [x]` where the terminal may lack the glyphs (`ascii`:
/// `TERM=dumb`, `NO_COLOR`).
pub fn checklist_lines(items: &[PlanItem], ascii: bool) -> Vec<String> {
    items
        .iter()
        .map(|item| {
            let mark = match (item.status, ascii) {
                (PlanStatus::Pending, false) => "☐",
                (PlanStatus::InProgress, false) => "◐",
                (PlanStatus::Completed, false) => "☑",
                (PlanStatus::Pending, true) => "[ ]",
                (PlanStatus::InProgress, true) => "[~]",
                (PlanStatus::Completed, true) => "[x]",
            };
            format!("{mark} {}", crate::sanitize(&item.text))
        })
        .collect()
}
