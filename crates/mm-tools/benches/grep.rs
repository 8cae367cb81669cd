#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
//! The `grep` tool over this repository against `rg` with the same pattern,
//! in the same run (goal: ≤ 1.5×). `cargo bench -p mm-tools --bench grep`.
//!
//! The tool goes through the `Tool` trait (plan, then run) as the toolbox
//! drives it: the walk with ripgrep's ignore rules, the search of every
//! file, the sorted result cut to the budget (every match still counted).
//! `rg -n` prints every match to a pipe that is read and dropped. Without
//! `rg` on the PATH the bench says so and stops.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mm_tools::grep::Grep;
use mm_tools::{PermissionMode, Permissions, Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 15;
const PATTERNS: [&str; 2] = [r"fn [a-z_]+\(", "ToolOutput"];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let has_rg = Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_rg {
        println!("rg is not on the PATH: grep vs rg skipped (apt-get install ripgrep)");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext {
        cwd: repo.clone(),
        sink: Arc::new(mm_types::NullSink),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::new(PermissionMode::Allow)),
        max_output: 30_000,
        call_id: String::new(),
    };
    let tool = Grep::new();
    for pattern in PATTERNS {
        let args = json!({ "pattern": pattern });
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        let mut rg_lines = 0;
        let mut out = String::new();
        for _ in 0..ROUNDS {
            let t = Instant::now();
            let rg = Command::new("rg")
                .args(["-n", "--no-heading", "--color", "never", pattern])
                .current_dir(&repo)
                .output()
                .unwrap();
            theirs.push(t.elapsed());
            rg_lines = rg.stdout.iter().filter(|&&b| b == b'\n').count();

            let t = Instant::now();
            out = rt.block_on(async {
                let plan = tool.plan(&args, &ctx).await.unwrap();
                tool.run(&args, plan, &ctx).await.text
            });
            ours.push(t.elapsed());
        }
        let shown = out.lines().filter(|l| l.contains(':')).count();
        let left: usize = out
            .lines()
            .last()
            .and_then(|l| l.strip_prefix("[… "))
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let (a, b) = (median(ours), median(theirs));
        println!(
            "pattern {pattern:?}: grep tool {a:.2?}, rg {b:.2?} (median of {ROUNDS}): {:.2}× \
             (goal ≤ 1.5×); matches: tool {}, rg {rg_lines}",
            a.as_secs_f64() / b.as_secs_f64(),
            shown + left,
        );
    }
}
