#![allow(clippy::unwrap_used, clippy::expect_used)]
//! mm against a real llama.cpp `llama-server` with a real small model
//! (SmolLM2-135M, one thread), the way a user runs it: `mm-repl -p` on the
//! OpenAI-compatible and the Anthropic wire, `--continue`, `mm-acp`
//! answering a prompt, the window read from `/props`, five questions on a
//! 1024-token window all answered, and the server's prompt cache reused
//! from the second turn on (mm never rewrites its prefix).
//!
//! One test, its steps in order, one server: two cores and a model that
//! reads ~100 tokens a second leave no room for several at once. Locally
//! it skips, loudly, when `.ci/install-llama` has not run; in CI it is
//! required.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mm_tests::child::{Finished, Running, built_binary};
use mm_tests::llama::{Install, Server};
use mm_tests::sandbox::Sandbox;
use serde_json::{Value, json};

/// One `mm-repl -p` may take this long (the first request reads ~950
/// tokens at ~100 a second on one thread).
const RUN_LIMIT: Duration = Duration::from_secs(180);

fn repl() -> PathBuf {
    built_binary("mm-repl").unwrap()
}

/// `mm-repl -p QUESTION --output-format json` with `extra` flags; the run
/// and its JSON events.
fn ask(sb: &Sandbox, server: &Server, extra: &[&str], question: &str) -> (Finished, Vec<Value>) {
    let mut cmd = sb.command(&repl(), &format!("{}/v1", server.url()));
    cmd.args(extra)
        .args(["--output-format", "json", "-p", question]);
    let run = Running::spawn(&mut cmd).unwrap();
    let done = run.wait(RUN_LIMIT).unwrap();
    let events = done
        .stdout_text()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (done, events)
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn answer(events: &[Value]) -> String {
    of_type(events, "text")
        .iter()
        .filter_map(|e| e["text"].as_str())
        .collect()
}

/// A user's notes pasted before each story request: about 200 tokens, so
/// that the history grows by a known amount whatever the model answers.
const NOTES: &str = "My notes for the story, please keep them in mind. \
The story is set in a small harbour town in the north, in late autumn, \
when the fishing boats come back early because of the wind. The main \
character is an old carpenter named Ilse who repairs boats and tells \
stories to the children of the town in the evening. Her workshop smells \
of tar and pine, and a grey cat sleeps on the bench by the window. Her \
brother left the town forty years ago and never wrote. One evening a \
stranger arrives with a letter, a wooden box and a map of the coast. The \
town has a bakery, a church with a broken bell, a school with twelve \
pupils and a lighthouse that has not been lit for years. The tone should \
be warm and a little sad, with short sentences, simple words, and an \
ending that leaves a question open for the reader to think about.";

/// The turn was stopped by the answer-loop guard, with an answer kept.
fn looped(events: &[Value]) -> bool {
    of_type(events, "turn_end")
        .last()
        .is_some_and(|e| e["outcome"] == "repeated")
        && !answer(events).trim().is_empty()
}

/// The turn ended normally, with an answer and the server's counts.
fn answered(step: &str, done: &Finished, events: &[Value], server: &Server) -> Value {
    let end = of_type(events, "turn_end")
        .last()
        .map(|e| (*e).clone())
        .unwrap_or_else(|| {
            panic!(
                "{step}: no turn_end: {}\n{}",
                done.describe(),
                server.log_text()
            )
        });
    assert_eq!(
        end["outcome"],
        "done",
        "{step}: {end}\n{}\n{}",
        done.describe(),
        server.log_text()
    );
    assert_eq!(done.code, Some(0), "{step}: {}", done.describe());
    assert!(!answer(events).trim().is_empty(), "{step}: an empty answer");
    assert!(end["prompt_tokens"].as_u64().unwrap() > 0, "{step}: {end}");
    end
}

#[test]
fn mm_against_a_real_llama_server() {
    let Some(install) = Install::or_skip("mm_against_a_real_llama_server") else {
        return;
    };
    let started = Instant::now();
    let server = Server::start(&install, 1024).unwrap();
    eprintln!("llama-server up in {:?}", started.elapsed());

    // The window comes from the server's /props.
    let sb = Sandbox::new("lsp:\n  servers: []\n").unwrap();
    let mut cmd = sb.command(&repl(), &format!("{}/v1", server.url()));
    cmd.arg("--print-config");
    let printed = Running::spawn(&mut cmd).unwrap().wait(RUN_LIMIT).unwrap();
    assert!(
        printed
            .stdout_text()
            .contains("contextWindow       = auto: 1024 (server /props)  # default"),
        "{}",
        printed.describe()
    );

    // A streamed answer with usage on the OpenAI-compatible wire.
    let t = Instant::now();
    let (done, events) = ask(&sb, &server, &[], "What is the capital of France?");
    let first = answered("openai-compatible", &done, &events, &server);
    eprintln!("first answer in {:?}: {first}", t.elapsed());
    let session = of_type(&events, "session")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Five more questions in the same session, each a new process
    // (--continue), on a window of 1024 tokens that mm's prompt and tools
    // nearly fill: every one is answered, the overflows are compacted
    // away, and each turn that did not compact read its whole prompt but
    // the new question from the server's cache.
    let questions = [
        "What is 2 plus 2?",
        "Name a colour of the sky.",
        "What is the largest ocean on Earth?",
        "Say hello in Spanish.",
        "What is the opposite of hot?",
    ];
    // Each question carries ~50 tokens of notes, so that the window
    // fills within five turns whatever the fixed part (the short form of
    // a small window leaves more room than it used to).
    let notes: String = (0..20).map(|i| format!("note{i} ")).collect::<String>();
    let mut compactions = 0;
    let mut reuse = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        let t = Instant::now();
        let q = format!("{q} (My notes, ignore them: {notes})");
        let (done, events) = ask(&sb, &server, &["--continue"], &q);
        assert_eq!(
            of_type(&events, "session")[0]["session_id"],
            session.as_str()
        );
        let notices: Vec<&str> = of_type(&events, "notice")
            .iter()
            .filter_map(|e| e["text"].as_str())
            .collect();
        let compacted = notices.iter().any(|n| n.contains("compacted:"));
        if compacted {
            compactions += 1;
        }
        // A 135M model may loop on its answer (seen after a compaction:
        // "The user's goal:" six times); the guard stops it with the text
        // before the loop kept. That is an answer too, with its own outcome.
        if looped(&events) {
            eprintln!(
                "question {}: the answer looped and was stopped, its text kept; notices {notices:?}",
                i + 2
            );
            continue;
        }
        let end = answered(&format!("question {}", i + 2), &done, &events, &server);
        let (cached, prompt) = (
            end["cached_tokens"].as_u64().unwrap(),
            end["prompt_tokens"].as_u64().unwrap(),
        );
        eprintln!(
            "question {}: {:?}, {cached} of {prompt} prompt tokens cached, notices {notices:?}",
            i + 2,
            t.elapsed()
        );
        if !compacted {
            reuse.push((i + 2, cached, prompt));
        }
    }
    assert!(
        compactions >= 1,
        "a 1024-token window overflowed at least once"
    );
    assert!(!reuse.is_empty());
    for (turn, cached, prompt) in &reuse {
        // Only the new question (with its notes, ~70 tokens) and the
        // template's marks around it are computed again.
        assert!(
            prompt - cached <= 128,
            "turn {turn}: only {cached} of {prompt} prompt tokens came from the cache"
        );
    }

    // The Anthropic wire: llama-server's /v1/messages, keyless on loopback.
    let sb2 = Sandbox::new("lsp:\n  servers: []\n").unwrap();
    let (done, events) = ask(
        &sb2,
        &server,
        &["--model", "anthropic/smol", "--base-url", &server.url()],
        "What is the capital of Italy?",
    );
    answered("anthropic", &done, &events, &server);

    // mm-acp answers a prompt over the protocol.
    acp_prompt(&server);
    drop(server);

    // On a window with room for a summary, the model writes one, and it
    // fits: long questions (the notes below) and long answers (300 tokens
    // each, to bound the time) fill a 2048-token window. The questions
    // alone fill it within a few turns, so the test does not depend on
    // how much a looping answer keeps.
    let server = Server::start(&install, 2048).unwrap();
    let sb = Sandbox::new("lsp:\n  servers: []\nmaxTokens: 300\n").unwrap();
    let mut summaries = Vec::new();
    let topics = [
        "a dragon",
        "a lighthouse",
        "a robot",
        "a river",
        "a city",
        "a ship",
        "a garden",
        "a mountain",
        "a library",
        "a storm",
        "a clockmaker",
        "a desert",
    ];
    for (i, topic) in topics.iter().enumerate() {
        if !summaries.is_empty() {
            break;
        }
        let t = Instant::now();
        let flags: &[&str] = if i == 0 { &[] } else { &["--continue"] };
        let (done, events) = ask(
            &sb,
            &server,
            flags,
            &format!("{NOTES}\n\nWrite a long story about {topic}."),
        );
        // A 135M model asked for a long story often loops ("Kael was a
        // robot that could talk." over and over): the answer-loop guard
        // stopping it is mm working, and what came before stays in the
        // history, so the session still grows toward compaction.
        if !looped(&events) {
            answered(&format!("story {}", i + 1), &done, &events, &server);
        }
        let notices: Vec<String> = of_type(&events, "notice")
            .iter()
            .filter_map(|e| e["text"].as_str().map(str::to_owned))
            .collect();
        eprintln!("story {}: {:?}, notices {notices:?}", i + 1, t.elapsed());
        summaries.extend(notices.into_iter().filter(|n| n.contains("→ summary of")));
    }
    assert!(
        !summaries.is_empty(),
        "no summary was written on a 2048-token window"
    );
    eprintln!("the whole suite took {:?}", started.elapsed());
}

/// An editor's exchange with `mm-acp`, as raw JSON-RPC lines: initialize,
/// a session, one prompt answered with text and `end_turn`.
fn acp_prompt(server: &Server) {
    let sb = Sandbox::new("lsp:\n  servers: []\n").unwrap();
    let mut cmd = sb.command(
        &built_binary("mm-acp").unwrap(),
        &format!("{}/v1", server.url()),
    );
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let send = |stdin: &mut std::process::ChildStdin, v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    let answer_to = |id: u64, texts: &mut String| -> Value {
        let deadline = Instant::now() + RUN_LIMIT;
        loop {
            let v = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| panic!("no answer to request {id}\n{}", server.log_text()));
            if v["id"] == id {
                return v;
            }
            let update = &v["params"]["update"];
            if update["sessionUpdate"] == "agent_message_chunk" {
                texts.push_str(update["content"]["text"].as_str().unwrap_or(""));
            }
        }
    };
    let mut text = String::new();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
    );
    answer_to(1, &mut text);
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": sb.work, "mcpServers": []}}),
    );
    let created = answer_to(2, &mut text);
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "What is the capital of Spain?"}]}}),
    );
    let answered = answer_to(3, &mut text);
    assert_eq!(answered["result"]["stopReason"], "end_turn", "{answered}");
    assert!(!text.trim().is_empty(), "no agent_message_chunk text");
    // The editor closes its end: mm-acp ends, cleanly and soon.
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mm-acp did not end after its stdin closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "mm-acp exited with {status}");
}
