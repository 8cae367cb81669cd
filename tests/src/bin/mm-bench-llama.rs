//! Whole-process figures against a real llama.cpp server with a real small
//! model (what `.ci/install-llama` installs), each beside a baseline from
//! the same run:
//! - `mm-repl -p` answering vs a bare `curl` streaming mm's own first
//!   request to the same server (wall, peak RSS);
//! - the time asking the server for its window adds: `contextWindow: auto`
//!   vs a fixed `contextWindow: 1024`, runs alternating;
//! - the server's prompt cache per turn of one session (`--continue`);
//! - a ten-question session on a 1024-token window: answered, compacted.
//!
//! Usage: `mm-bench-llama <path to release mm-repl> [runs]` (`scripts/bench`
//! runs it when the server is installed).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mm_mock::{MockServer, Reply};
use mm_tests::llama::{Install, Server};
use mm_tests::{Cost, measure, median};
use serde_json::Value;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(repl) = args.next() else {
        eprintln!("usage: mm-bench-llama <mm-repl binary> [runs]");
        std::process::exit(2);
    };
    let runs: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(10);
    let repl = std::fs::canonicalize(&repl).unwrap_or_else(|_| repl.into());
    let install = match Install::find() {
        Ok(i) => i,
        Err(why) => {
            println!("(skipped: {why})");
            return;
        }
    };
    if let Err(e) = run(&repl, &install, runs) {
        eprintln!("mm-bench-llama: {e}");
        std::process::exit(1);
    }
}

type Result<T> = std::result::Result<T, String>;

/// A user's folders in a temp dir, with a user file holding `yaml`.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new(yaml: &str) -> Result<Home> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        std::fs::create_dir_all(dir.path().join("config/mm")).map_err(|e| e.to_string())?;
        std::fs::write(dir.path().join("config/mm/config.yaml"), yaml)
            .map_err(|e| e.to_string())?;
        Ok(Home { dir })
    }

    fn repl(&self, bin: &Path, args: &[&str]) -> Command {
        let home = self.dir.path();
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .current_dir(home)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_STATE_HOME", home.join("state"));
        cmd
    }
}

fn settings(url: &str, extra: &str) -> String {
    format!("model: openai-compatible/smol\nbaseURL: {url}/v1\nlsp:\n  servers: []\n{extra}")
}

/// The JSON events of one `mm-repl -p --output-format json` run.
fn json_run(home: &Home, bin: &Path, args: &[&str]) -> Result<(Vec<Value>, Duration)> {
    let t = Instant::now();
    let out = home
        .repl(bin, args)
        .args(["--output-format", "json"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let events = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Ok((events, t.elapsed()))
}

fn turn_end(events: &[Value]) -> Value {
    events
        .iter()
        .rev()
        .find(|e| e["type"] == "turn_end")
        .cloned()
        .unwrap_or(Value::Null)
}

fn notices(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "notice")
        .filter_map(|e| e["text"].as_str().map(str::to_owned))
        .collect()
}

/// mm's first request for `question`, as a mock server received it, made
/// into the same request for the real server.
fn first_request(bin: &Path, question: &str) -> Result<String> {
    // A worker of its own: the mock serves while this thread waits for mm.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mock = rt
        .block_on(MockServer::start(vec![Reply::text("ok")]))
        .map_err(|e| e.to_string())?;
    let home = Home::new(&settings(&mock.url(), "contextWindow: 1024\n"))?;
    home.repl(bin, &["-p", question])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    let mut body = mock
        .requests()
        .first()
        .map(|r| r.body.clone())
        .ok_or("mm sent the mock nothing")?;
    body["model"] = Value::from("smol");
    Ok(body.to_string())
}

fn times(runs: usize, mut make: impl FnMut() -> Command) -> Result<Cost> {
    let mut costs = Vec::with_capacity(runs);
    for _ in 0..runs {
        let cost = measure(&mut make()).map_err(|e| e.to_string())?;
        if !cost.success {
            return Err("a benchmarked command failed".into());
        }
        costs.push(cost);
    }
    median(costs).ok_or_else(|| "no runs".into())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn run(bin: &Path, install: &Install, runs: usize) -> Result<()> {
    let server = Server::start(install, 1024)?;
    let url = server.url();
    let question = "What is the capital of France?";

    // mm-repl -p against curl with mm's own first request; the window
    // asked vs fixed. Every run after the first finds the prompt cached.
    let body = first_request(bin, question)?;
    let curl = || {
        let mut cmd = Command::new("curl");
        cmd.args(["-sSN", "-X", "POST", "-H", "content-type: application/json"])
            .arg("--data-binary")
            .arg(&body)
            .arg(format!("{url}/v1/chat/completions"));
        cmd
    };
    let auto = Home::new(&settings(&url, "sessions: {enabled: false}\n"))?;
    let fixed = Home::new(&settings(
        &url,
        "sessions: {enabled: false}\ncontextWindow: 1024\n",
    ))?;
    measure(&mut curl()).map_err(|e| e.to_string())?;
    let (mut base, mut asked, mut set) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        base.push(times(1, curl)?);
        asked.push(times(1, || auto.repl(bin, &["-p", question]))?);
        set.push(times(1, || fixed.repl(bin, &["-p", question]))?);
    }
    let (base, asked, set) = (
        median(base).ok_or("no runs")?,
        median(asked).ok_or("no runs")?,
        median(set).ok_or("no runs")?,
    );
    println!(
        "| measure (real llama-server, SmolLM2-135M, -c 1024, median of {runs}) | wall | peak RSS | baseline (same run) | ratio |"
    );
    println!("|---|---|---|---|---|");
    println!(
        "| mm-repl -p, contextWindow: 1024 | {:.0} ms | {:.1} MB | curl, mm's first request: {:.0} ms | {:.2}× |",
        ms(set.wall),
        set.max_rss_kib as f64 / 1024.0,
        ms(base.wall),
        set.wall.as_secs_f64() / base.wall.as_secs_f64()
    );
    println!(
        "| mm-repl -p, contextWindow: auto (asks /props) | {:.0} ms | {:.1} MB | contextWindow: 1024: {:.0} ms | {:.2}× ({:+.0} ms) |",
        ms(asked.wall),
        asked.max_rss_kib as f64 / 1024.0,
        ms(set.wall),
        asked.wall.as_secs_f64() / set.wall.as_secs_f64(),
        ms(asked.wall) - ms(set.wall)
    );
    drop(server);

    // Ten questions of one session on a fresh server.
    let server = Server::start(install, 1024)?;
    let home = Home::new(&settings(&server.url(), ""))?;
    let questions = [
        "What is the capital of France?",
        "What is 2 plus 2?",
        "Name a colour of the sky.",
        "What is the largest ocean on Earth?",
        "Say hello in Spanish.",
        "What is the opposite of hot?",
        "Name a fruit that is yellow.",
        "How many legs does a spider have?",
        "What do bees make?",
        "What is frozen water called?",
    ];
    println!();
    println!(
        "| question (one session, -c 1024) | outcome | time | prompt tokens | from the cache | compacted |"
    );
    println!("|---|---|---|---|---|---|");
    let (mut answered, mut compactions) = (0, 0);
    for (i, q) in questions.iter().enumerate() {
        let mut args = vec!["-p", q];
        if i > 0 {
            args.insert(0, "--continue");
        }
        let (events, took) = json_run(&home, bin, &args)?;
        let end = turn_end(&events);
        let compacted = notices(&events).iter().any(|n| n.contains("compacted:"));
        answered += usize::from(end["outcome"] == "done");
        compactions += usize::from(compacted);
        let (cached, prompt) = (
            end["cached_tokens"].as_u64().unwrap_or(0),
            end["prompt_tokens"].as_u64().unwrap_or(0),
        );
        println!(
            "| {} | {} | {:.1} s | {prompt} | {cached} ({:.1}%) | {} |",
            i + 1,
            end["outcome"].as_str().unwrap_or("?"),
            took.as_secs_f64(),
            100.0 * cached as f64 / prompt.max(1) as f64,
            if compacted { "yes" } else { "" }
        );
    }
    println!(
        "answered {answered} of {}, {compactions} compaction(s)",
        questions.len()
    );
    Ok(())
}
