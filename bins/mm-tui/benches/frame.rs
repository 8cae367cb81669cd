#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Time per frame of a 10,000-entry transcript against an empty one, on
//! ratatui's test backend at 120×40, in the same run (`cargo bench -p
//! mm-tui --bench frame`). Goal: at most 4 ms per frame.

use std::hint::black_box;
use std::time::{Duration, Instant};

use mm_tui::painter;
use mm_tui::transcript::{EntryKind, Transcript};
use mm_tui::ui::Ui;
use mm_tui::view::Scroll;
use mm_ui::{Event, ToolInfo, ToolKind, ToolStatus};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const W: u16 = 120;
const H: u16 = 40;
const ENTRIES: usize = 10_000;
const GOAL: Duration = Duration::from_millis(4);

/// A realistic transcript: questions, reasoning, tool calls with output,
/// markdown answers with code, wide characters.
fn big() -> Transcript {
    let t0 = Instant::now();
    let mut t = Transcript::new();
    let mut i = 0;
    while t.len() < ENTRIES {
        t.start_turn(
            &format!("question {i}: what does the parser do with 漢字 and 🦀 in line {i}?"),
            t0,
        );
        t.apply(
            Event::Reasoning {
                text: "Look at the parser first. ".repeat(8),
            },
            t0,
        );
        let id = format!("c{i}");
        t.apply(
            Event::ToolStart {
                info: ToolInfo {
                    id: id.clone(),
                    tool: "bash".into(),
                    family: mm_ui::ToolFamily::Command,
                    echoes: true,
                    title: format!("grep -rn parse src/ | head -{i}"),
                    kind: ToolKind::Execute,
                    input: serde_json::json!({}),
                    locations: vec![],
                    change: None,
                },
            },
            t0,
        );
        t.apply(Event::ToolRunning { id: id.clone() }, t0);
        t.apply(
            Event::ToolEnd {
                id,
                tool: "bash".into(),
                status: ToolStatus::Completed,
                output: (0..20)
                    .map(|k| format!("src/parse.rs:{k}: fn parse_{k}() {{}}\n"))
                    .collect(),
                preview: vec![],
            },
            t0 + Duration::from_millis(300),
        );
        if i % 7 == 0 {
            let last = t.len() - 1;
            t.toggle(last);
        }
        t.apply(
            Event::Status {
                text: "Thinking".into(),
            },
            t0,
        );
        t.apply(
            Event::Text {
                text: format!(
                    "## Answer {i}\n\nThe parser **splits** the input into `tokens` and then:\n\n- reads each line\n- keeps the long ones: {}\n\n```rust\nfn parse(s: &str) -> Vec<Token> {{ todo!() }}\n```\n",
                    "word ".repeat(40)
                ),
            },
            t0,
        );
        t.end_busy();
        i += 1;
    }
    t
}

fn ui() -> Ui {
    Ui::new("openai-compatible/qwen2.5-coder", "~/src/project", "bench")
}

/// Mean time of one frame over `n` frames (after `warm` unmeasured ones).
fn per_frame(
    t: &mut Transcript,
    ui: &mut Ui,
    n: u32,
    mut between: impl FnMut(&mut Transcript, &mut Ui),
) -> Duration {
    let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
    for _ in 0..5 {
        between(t, ui);
        term.draw(|f| painter::draw(f, t, ui)).unwrap();
    }
    let start = Instant::now();
    for _ in 0..n {
        between(t, ui);
        term.draw(|f| painter::draw(f, black_box(t), ui)).unwrap();
    }
    start.elapsed() / n
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let n = 300;
    let mut empty = Transcript::new();
    let empty_frame = per_frame(&mut empty, &mut ui(), n, |_, _| {});

    let mut t = big();
    println!("transcript: {} entries", t.len());

    // The first frame of a fresh window (nothing cached yet).
    let mut cold_ui = ui();
    let mut term = Terminal::new(TestBackend::new(W, H)).unwrap();
    let start = Instant::now();
    term.draw(|f| painter::draw(f, &t, &mut cold_ui)).unwrap();
    let cold = start.elapsed();

    // Following the end, nothing changing (a tick of the spinner).
    let mut u = ui();
    let steady = per_frame(&mut t, &mut u, n, |_, _| {});

    // Following the end while an answer streams: the last entry changes every frame.
    let last = t.push(EntryKind::Answer(String::new()));
    let mut u = ui();
    let streaming = per_frame(&mut t, &mut u, n, |t, _| {
        t.edit(last, |k| {
            if let EntryKind::Answer(s) = k {
                s.push_str("more streamed words, ");
            }
        })
    });

    // Scrolled to the middle, paging one screen down each frame.
    let mut u = ui();
    u.scroll = Scroll::At {
        entry: ENTRIES / 2,
        row: 0,
    };
    let paging = per_frame(&mut t, &mut u, n, |t, u| {
        let look = u.look();
        let rows = usize::from(u.transcript_rows.max(1));
        u.scroll = mm_tui::view::down(t, &mut u.cache, &look, rows, u.scroll, rows);
        if u.scroll == Scroll::Bottom {
            u.scroll = Scroll::At {
                entry: ENTRIES / 2,
                row: 0,
            };
        }
    });

    // Resized every frame: everything on screen wraps again.
    let mut u = ui();
    let mut flip = false;
    let mut term2 = Terminal::new(TestBackend::new(W, H)).unwrap();
    let start = Instant::now();
    for _ in 0..n {
        flip = !flip;
        let w = if flip { W } else { W - 17 };
        term2.backend_mut().resize(w, H);
        term2.draw(|f| painter::draw(f, &t, &mut u)).unwrap();
    }
    let resizing = start.elapsed() / n;

    println!("frame {W}x{H}, mean of {n} frames:");
    println!("  empty transcript                 {}", ms(empty_frame));
    println!("  {ENTRIES} entries, first frame      {}", ms(cold));
    println!(
        "  {ENTRIES} entries, following end    {}  ({:.2}x empty)",
        ms(steady),
        ratio(steady, empty_frame)
    );
    println!(
        "  {ENTRIES} entries, answer streaming {}  ({:.2}x empty)",
        ms(streaming),
        ratio(streaming, empty_frame)
    );
    println!(
        "  {ENTRIES} entries, paging mid-way   {}  ({:.2}x empty)",
        ms(paging),
        ratio(paging, empty_frame)
    );
    println!(
        "  {ENTRIES} entries, resizing         {}  ({:.2}x empty)",
        ms(resizing),
        ratio(resizing, empty_frame)
    );
    let worst = [cold, steady, streaming, paging, resizing]
        .into_iter()
        .max()
        .unwrap_or_default();
    println!(
        "goal ≤ {}: {}",
        ms(GOAL),
        if worst <= GOAL { "met" } else { "NOT met" }
    );
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}
