//! Session save at 1k and 10k messages, against a baseline in the same run:
//! serialising the same messages and writing them with `fs::write` +
//! `sync_all` (the same durability, without the temp file, rename, lock and
//! redaction). `cargo bench -p mm-store --bench save`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::io::Write;
use std::time::{Duration, Instant};

use mm_store::Store;
use mm_types::{Message, ToolCall};

fn messages(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| match i % 4 {
            0 => Message::user(format!(
                "question {i}: please look at src/lib.rs and fix the parser"
            )),
            1 => Message::Assistant {
                content: String::new(),
                reasoning: Vec::new(),
                tool_calls: vec![ToolCall {
                    id: format!("call_{i}"),
                    name: "bash".into(),
                    arguments: format!("{{\"command\":\"grep -n parse src/lib.rs # {i}\"}}"),
                }],
            },
            2 => Message::tool(
                format!("call_{}", i - 1),
                "bash",
                "12: fn parse(input: &str) -> Result<Ast, Error> {\n".repeat(8),
            ),
            _ => Message::assistant(format!(
                "Answer {i}: the parser now handles the empty input case."
            )),
        })
        .collect()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store =
        Store::new(dir.path().join("sessions")).with_secrets(vec!["sk-test-secret".to_string()]);
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).expect("project dir");
    println!("| session save | mm-store | baseline: serialise + write + fsync | ratio |");
    println!("|---|---|---|---|");
    for n in [1_000usize, 10_000] {
        let msgs = messages(n);
        let mut session = store.create(&project, "ollama/qwen3:8b").expect("create");
        session.data.messages = msgs.clone();
        let rounds = if n > 5_000 { 9 } else { 21 };
        let mut ours = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            session.save().expect("save");
            ours.push(t.elapsed());
        }
        let plain = dir.path().join(format!("plain-{n}.json"));
        let mut base = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            let bytes = serde_json::to_vec(black_box(&msgs)).expect("json");
            let mut f = std::fs::File::create(&plain).expect("file");
            f.write_all(&bytes).expect("write");
            f.sync_all().expect("sync");
            base.push(t.elapsed());
        }
        let (o, b) = (median(ours), median(base));
        println!(
            "| {n} messages | {:.2} ms | {:.2} ms | {:.2}× |",
            o.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            o.as_secs_f64() / b.as_secs_f64()
        );
    }
}
