//! The whole-process cost of one one-shot answer from a local mock server:
//! wall time, CPU time and peak memory of `mm-repl -p`, next to a bare
//! `curl` of the same endpoint.
//!
//! The memory budget (< 15 MB peak RSS, from the process's own `VmHWM`,
//! which mm-repl logs at exit) is checked on every test run. The report:
//! `cargo test -p mm-repl --release --test bench -- --ignored --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::World;
use mm_mock::Reply;

/// Peak RSS budget of the whole `-p` process: 15 MB for a release build.
/// An unoptimised debug binary maps far more pages (measured: 9.4 MB
/// release, 19.8 MB debug; 35.7 MB debug once the HTML and image decoders
/// came in, whose debug code is large), so a debug run gets a looser bound
/// instead of no check at all; `scripts/bench` measures the release one.
const RSS_BUDGET_KB: u64 = if cfg!(debug_assertions) {
    44 * 1024
} else {
    15 * 1024
};

/// The last `peak memory N kB` the log holds.
fn logged_peak_kb(w: &World) -> u64 {
    let log = std::fs::read_to_string(w.state_dir().join("mm/mm-repl.log")).unwrap();
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("peak memory"))
        .expect("no peak memory line in the log");
    let words: Vec<&str> = line.split_whitespace().collect();
    let i = words.iter().position(|w| *w == "memory").unwrap();
    words[i + 1].parse().unwrap()
}

struct Cost {
    wall: Duration,
    cpu: Duration,
    /// Only when GNU time is installed: a `vfork`ed child's own
    /// `ru_maxrss` starts at its parent's size, so it cannot be read
    /// directly from a large test process.
    max_rss_kb: Option<u64>,
}

fn tv(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// Run `cmd` once; CPU time from `wait4` of that very child.
fn measure(mut cmd: Command) -> Cost {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let start = Instant::now();
    let child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers; `pid` is a child of this process not yet reaped.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert_eq!(got, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed: {status}"
    );
    std::mem::forget(child);
    Cost {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kb: None,
    }
}

/// Peak RSS through GNU time, when it is installed.
fn gnu_time_rss(cmd: &Command) -> Option<u64> {
    if !std::path::Path::new("/usr/bin/time").exists() {
        return None;
    }
    let mut timed = Command::new("/usr/bin/time");
    timed
        .arg("-f")
        .arg("MAXRSS %M")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    timed.env_clear();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            timed.env(k, v);
        }
    }
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    let out = timed
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    err.lines()
        .find_map(|l| l.strip_prefix("MAXRSS ")?.trim().parse().ok())
}

fn world() -> World {
    let replies: Vec<Reply> = (0..40)
        .map(|i| Reply::text(format!("answer {i}")))
        .collect();
    World::new(replies, "")
}

#[test]
fn one_shot_peak_memory_is_within_budget() {
    let w = world();
    let out = w.run(&["-p", "hello"], None);
    assert_eq!(common::text(&out.stdout), "answer 0\n");
    let kb = logged_peak_kb(&w);
    assert!(kb > 500, "implausible peak {kb} kB");
    assert!(
        kb < RSS_BUDGET_KB,
        "peak RSS {kb} kB over the {RSS_BUDGET_KB} kB budget"
    );
}

#[test]
#[ignore = "benchmark: run with --ignored --nocapture, ideally with --release"]
fn benchmark_one_shot_against_curl() {
    let w = world();
    let runs = 5;
    let mut mm = Vec::new();
    for _ in 0..runs {
        let mut cost = measure(w.command(&["-p", "hello"]));
        cost.max_rss_kb = Some(logged_peak_kb(&w));
        mm.push(cost);
    }
    let body = r#"{"model":"test","stream":true,"messages":[{"role":"user","content":"hello"}]}"#;
    let curl = || {
        let mut c = Command::new("curl");
        c.args([
            "-s",
            "-N",
            "-H",
            "content-type: application/json",
            "-d",
            body,
        ])
        .arg(format!("{}/v1/chat/completions", w.server.url()));
        c
    };
    let have_curl = Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let mut curls = Vec::new();
    if have_curl {
        for _ in 0..runs {
            let mut cost = measure(curl());
            cost.max_rss_kb = gnu_time_rss(&curl());
            curls.push(cost);
        }
    }
    let report = |name: &str, costs: &[Cost]| -> Option<(Duration, Duration)> {
        if costs.is_empty() {
            println!("{name:>8}: not installed");
            return None;
        }
        let n = costs.len() as u32;
        let wall = costs.iter().map(|c| c.wall).sum::<Duration>() / n;
        let cpu = costs.iter().map(|c| c.cpu).sum::<Duration>() / n;
        let rss = costs
            .iter()
            .filter_map(|c| c.max_rss_kb)
            .max()
            .map_or("n/a".to_owned(), |kb| format!("{kb} kB"));
        println!(
            "{name:>8}: wall {wall:>9.2?}  cpu {cpu:>9.2?}  peak rss {rss}  (mean of {n} runs)"
        );
        Some((wall, cpu))
    };
    println!("one-shot answer from a local mock server:");
    let m = report("mm-repl", &mm);
    let c = report("curl", &curls);
    if let (Some((mw, _)), Some((cw, _))) = (m, c) {
        println!(
            "   ratio: wall {:.1}× curl",
            mw.as_secs_f64() / cw.as_secs_f64()
        );
    }
}
