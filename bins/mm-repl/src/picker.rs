//! A list to choose from under the prompt (`/resume`, `/model` alone):
//! arrows move, typing filters, Enter takes the row, Esc or Ctrl-C leaves
//! it. Drawn in place and wiped when done, so the scrollback keeps only
//! what the chosen command says.

use std::io::{self, IsTerminal, Write};

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::{cursor, queue, style, terminal};
use mm_agent::commands::Pick;

/// How many rows are shown at once.
const SHOWN: usize = 10;

/// What the user did with the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Picked {
    /// The command of the chosen row.
    Run(String),
    /// Left without choosing.
    Left,
    /// No terminal to choose on: the rows were printed instead.
    Printed,
}

/// Let the user choose a row of `pick` on the terminal. Without one, the
/// rows are printed (numbered where the title says how to choose).
pub fn pick(pick: &Pick) -> Picked {
    if !io::stdin().is_terminal() || !io::stdout().is_terminal() {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "{}", mm_ui::sanitize(&pick.title));
        for row in &pick.rows {
            let _ = writeln!(out, "  {}", mm_ui::sanitize(&row.label));
        }
        return Picked::Printed;
    }
    if terminal::enable_raw_mode().is_err() {
        return Picked::Left;
    }
    let picked = choose(pick);
    let _ = terminal::disable_raw_mode();
    picked
}

/// The list's state: what is typed, and the selected row among the
/// filtered ones.
struct State {
    typed: String,
    selected: usize,
}

fn choose(pick: &Pick) -> Picked {
    let mut out = io::stdout();
    let mut state = State {
        typed: String::new(),
        selected: 0,
    };
    let mut drawn = 0u16;
    loop {
        let rows = pick.filter(&state.typed);
        state.selected = state.selected.min(rows.len().saturating_sub(1));
        drawn = draw(&mut out, pick, &rows, &state, drawn);
        let Ok(Event::Key(key)) = event::read() else {
            continue;
        };
        if key.kind == KeyEventKind::Release {
            continue;
        }
        match step(key, &mut state, rows.len()) {
            Step::Stay => {}
            Step::Leave => {
                wipe(&mut out, drawn);
                return Picked::Left;
            }
            Step::Take => {
                wipe(&mut out, drawn);
                return match rows.get(state.selected) {
                    Some((_, row)) => Picked::Run(row.command.clone()),
                    None => Picked::Left,
                };
            }
        }
    }
}

enum Step {
    Stay,
    Leave,
    Take,
}

fn step(key: KeyEvent, state: &mut State, count: usize) -> Step {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let up = matches!(key.code, KeyCode::Up | KeyCode::BackTab)
        || (ctrl && key.code == KeyCode::Char('p'));
    let down = matches!(key.code, KeyCode::Down | KeyCode::Tab)
        || (ctrl && key.code == KeyCode::Char('n'));
    if up {
        state.selected = state
            .selected
            .checked_sub(1)
            .unwrap_or(count.saturating_sub(1));
        return Step::Stay;
    }
    if down {
        state.selected = if state.selected + 1 >= count {
            0
        } else {
            state.selected + 1
        };
        return Step::Stay;
    }
    match key.code {
        KeyCode::Esc => Step::Leave,
        KeyCode::Char('c' | 'd') if ctrl => Step::Leave,
        KeyCode::Enter => Step::Take,
        KeyCode::Backspace => {
            state.typed.pop();
            state.selected = 0;
            Step::Stay
        }
        KeyCode::Char('u') if ctrl => {
            state.typed.clear();
            state.selected = 0;
            Step::Stay
        }
        KeyCode::Char(c) if !ctrl => {
            state.typed.push(c);
            state.selected = 0;
            Step::Stay
        }
        _ => Step::Stay,
    }
}

/// Draw the title, the filter and a window of rows around the selected
/// one, over what was drawn before (`drawn` lines); returns the count now.
fn draw(
    out: &mut impl Write,
    pick: &Pick,
    rows: &[(usize, &mm_agent::commands::PickRow)],
    state: &State,
    drawn: u16,
) -> u16 {
    let width = usize::from(terminal::size().map_or(80, |(w, _)| w).max(20));
    let fit = |text: &str| -> String { mm_ui::sanitize(text).chars().take(width - 1).collect() };
    let mut lines: Vec<(bool, String)> = pick
        .title
        .lines()
        .map(|l| (false, fit(l)))
        .collect::<Vec<_>>();
    lines.push((false, fit(&format!("filter: {}", state.typed))));
    let first = state.selected.saturating_sub(SHOWN - 1);
    for (i, (_, row)) in rows.iter().enumerate().skip(first).take(SHOWN) {
        let mark = if i == state.selected { "› " } else { "  " };
        lines.push((i == state.selected, fit(&format!("{mark}{}", row.label))));
    }
    if rows.is_empty() {
        lines.push((false, fit("  (nothing matches)")));
    } else if rows.len() > SHOWN {
        lines.push((false, fit(&format!("  … {} rows", rows.len()))));
    }
    wipe(out, drawn);
    for (selected, line) in &lines {
        if *selected {
            let _ = queue!(
                out,
                style::SetAttribute(style::Attribute::Reverse),
                style::Print(line),
                style::SetAttribute(style::Attribute::Reset),
                style::Print("\r\n")
            );
        } else {
            let _ = queue!(out, style::Print(line), style::Print("\r\n"));
        }
    }
    let _ = out.flush();
    u16::try_from(lines.len()).unwrap_or(u16::MAX)
}

/// Remove the `drawn` lines above the cursor.
fn wipe(out: &mut impl Write, drawn: u16) {
    if drawn > 0 {
        let _ = queue!(out, cursor::MoveUp(drawn));
    }
    let _ = queue!(
        out,
        cursor::MoveToColumn(0),
        terminal::Clear(terminal::ClearType::FromCursorDown)
    );
    let _ = out.flush();
}
