//! Whole-process benchmark of `mm-repl -p` against the local mock server,
//! each figure beside a baseline measured in the same run:
//! - a one-shot answer and a one-shot shell turn vs a bare `curl` doing one
//!   streamed request to the same server (wall, CPU, peak RSS);
//! - the bytes of the first request (system prompt + tool declarations) vs
//!   the 6 KB budget.
//!
//! Usage: `mm-bench <path to release mm-repl> [runs]` (see `scripts/bench`).

use std::path::Path;
use std::process::Command;

use mm_mock::{MockServer, Options, Reply};
use mm_tests::{Cost, measure, median};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(repl) = args.next() else {
        eprintln!("usage: mm-bench <mm-repl binary> [runs]");
        std::process::exit(2);
    };
    let runs: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(10);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mm-bench: {e}");
            std::process::exit(1);
        }
    };
    // The benchmarked process runs in a temp folder: resolve the path first.
    let repl = std::fs::canonicalize(&repl).unwrap_or_else(|_| repl.into());
    if let Err(e) = runtime.block_on(run(&repl, runs)) {
        eprintln!("mm-bench: {e}");
        std::process::exit(1);
    }
}

async fn server(script: Vec<Reply>) -> std::io::Result<MockServer> {
    MockServer::start_with(
        script,
        Options {
            port: 0,
            repeat: true,
            ..Default::default()
        },
    )
    .await
}

fn curl(url: &str) -> Command {
    let mut cmd = Command::new("curl");
    cmd.args([
        "-sSN",
        "-X",
        "POST",
        "-H",
        "content-type: application/json",
        "--data",
    ])
    .arg(r#"{"model":"bench","stream":true,"messages":[{"role":"user","content":"hi"}]}"#)
    .arg(format!("{url}/v1/chat/completions"));
    cmd
}

fn repl(bin: &Path, url: &str, home: &Path, question: &str) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(["-p", question])
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("MM_MODEL", "openai-compatible/bench")
        .env("MM_BASE_URL", format!("{url}/v1"));
    cmd
}

fn times(runs: usize, mut make: impl FnMut() -> Command) -> std::io::Result<Cost> {
    let mut costs = Vec::with_capacity(runs);
    for _ in 0..runs {
        let cost = measure(&mut make())?;
        if !cost.success {
            return Err(std::io::Error::other("a benchmarked command failed"));
        }
        costs.push(cost);
    }
    median(costs).ok_or_else(|| std::io::Error::other("no runs"))
}

fn row(name: &str, cost: Cost, base: Cost) {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| {name} | {:.1} ms | {:.1} ms | {:.1} MB | curl: {:.1} ms, {:.1} ms CPU, {:.1} MB | {:.2}× |",
        ms(cost.wall),
        ms(cost.cpu),
        cost.max_rss_kib as f64 / 1024.0,
        ms(base.wall),
        ms(base.cpu),
        base.max_rss_kib as f64 / 1024.0,
        cost.wall.as_secs_f64() / base.wall.as_secs_f64().max(1e-9),
    );
}

async fn run(bin: &Path, runs: usize) -> std::io::Result<()> {
    let home = tempfile::tempdir()?;
    let answer = server(vec![Reply::text("Hello from the mock server.")]).await?;
    let shell = server(vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"echo hi"}"#),
        Reply::text("The command printed hi."),
    ])
    .await?;

    let (bin, home_path) = (bin.to_path_buf(), home.path().to_path_buf());
    let (a_url, s_url) = (answer.url(), shell.url());
    let results = tokio::task::spawn_blocking(move || -> std::io::Result<_> {
        let base = times(runs, || curl(&a_url))?;
        let one = times(runs, || repl(&bin, &a_url, &home_path, "hi"))?;
        let turn = times(runs, || repl(&bin, &s_url, &home_path, "run echo hi"))?;
        Ok((base, one, turn))
    })
    .await
    .map_err(std::io::Error::other)??;
    let (base, one, turn) = results;

    println!("| measure | wall | CPU | peak RSS | baseline (same run) | ratio |");
    println!("|---|---|---|---|---|---|");
    row("mm-repl -p, one-shot answer", one, base);
    row("mm-repl -p, one-shot shell turn", turn, base);

    let first = answer
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions") && r.body.get("tools").is_some())
        .ok_or_else(|| std::io::Error::other("mm-repl sent no request with tools"))?;
    let system = first.body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .len();
    let tools = first.body["tools"].to_string().len();
    println!(
        "| first request: system prompt + tool declarations | {} B ({} + {}) | | | budget 6144 B | {:.2}× |",
        system + tools,
        system,
        tools,
        (system + tools) as f64 / 6144.0
    );
    Ok(())
}
