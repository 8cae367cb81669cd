#![allow(clippy::unwrap_used, clippy::expect_used)]
//! edit_file on a 50 MB file against plainly reading and writing it, in the
//! same run (goal: ≤ 3×). `cargo bench -p mm-tools --bench edit50mb`.
//!
//! The edit goes through the `Tool` trait (plan, then run) exactly as the
//! toolbox drives it: read + UTF-8 check, three matches each proved unique
//! over the whole file, the new text, the diff of the changed regions, the
//! changed-on-disk re-read, then the atomic write (temp file, fsync,
//! rename). The plain side is `read_to_string` + `write`, no fsync.

use std::fs;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mm_tools::files::EditFile;
use mm_tools::{PermissionMode, Permissions, Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SIZE: usize = 50 * 1024 * 1024;
const ROUNDS: usize = 7;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.txt");
    let mut text = String::with_capacity(SIZE + 100);
    let mut lines = 0usize;
    while text.len() < SIZE {
        lines += 1;
        text.push_str(&format!(
            "line {lines:08}: the quick brown fox jumps over the lazy dog, again and again\n"
        ));
    }
    fs::write(&path, &text).unwrap();
    let marks = [lines / 10, lines / 2, lines * 9 / 10].map(|n| format!("line {n:08}:"));
    drop(text);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext {
        cwd: dir.path().to_path_buf(),
        sink: Arc::new(mm_types::NullSink),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::new(PermissionMode::Allow)),
        max_output: 30_000,
        call_id: String::new(),
    };
    let tool = EditFile::new();

    let mut plain = Vec::new();
    let mut edit = Vec::new();
    for round in 0..ROUNDS {
        // Plain read + write of the same file.
        let t = Instant::now();
        let s = fs::read_to_string(&path).unwrap();
        fs::write(&path, &s).unwrap();
        plain.push(t.elapsed());
        drop(s);

        // Three edits spread through the file; each round flips them back.
        let (from, to) = if round % 2 == 0 {
            ("", "EDITED ")
        } else {
            ("EDITED ", "")
        };
        let edits: Vec<_> = marks
            .iter()
            .map(|m| json!({"old": format!("{from}{m}"), "new": format!("{to}{m}")}))
            .collect();
        let args = json!({"path": "big.txt", "edits": edits});
        let t = Instant::now();
        let out = rt.block_on(async {
            let plan = tool.plan(&args, &ctx).await.unwrap();
            tool.run(&args, plan, &ctx).await.text
        });
        edit.push(t.elapsed());
        assert!(
            out.starts_with("edited big.txt: 3 edit(s), +3 -3 lines, first change at line "),
            "{}",
            &out[..out.len().min(300)]
        );
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (p, e) = (median(&mut plain), median(&mut edit));
    println!(
        "file: {} bytes, {lines} lines, {ROUNDS} rounds (median)",
        SIZE
    );
    println!("plain read_to_string + write: {:>8.1} ms", ms(p));
    println!("edit_file, 3 edits (Tool):    {:>8.1} ms", ms(e));
    println!(
        "ratio: {:.2}x (goal <= 3x)",
        e.as_secs_f64() / p.as_secs_f64()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
