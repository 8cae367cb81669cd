#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `mm-repl --doctor` on a real llama.cpp `llama-server` with SmolLM2-135M
//! and its own chat template (no tool-call format): the window the server
//! runs with and its source, the template's caps (no tools), a constrained
//! call that works, and the cache serving the identical second prompt.
//!
//! Locally it skips, loudly, when `.ci/install-llama` has not run; in CI
//! it is required.

use std::path::PathBuf;
use std::time::Duration;

use mm_tests::child::{Running, built_binary};
use mm_tests::llama::{Install, Server};
use mm_tests::sandbox::Sandbox;
use serde_json::Value;

/// The doctor's own aim is 30 s on a small model; CI's machine is shared.
const RUN_LIMIT: Duration = Duration::from_secs(120);

fn repl() -> PathBuf {
    built_binary("mm-repl").unwrap()
}

#[test]
fn the_doctor_reports_window_caps_and_a_working_constrained_call() {
    let Some(install) =
        Install::or_skip("the_doctor_reports_window_caps_and_a_working_constrained_call")
    else {
        return;
    };
    let server = Server::start_with(&install, 2048, None, &["--temp", "0", "--seed", "7"]).unwrap();
    let sb = Sandbox::new("lsp:\n  servers: []\n").unwrap();
    let mut cmd = sb.command(&repl(), &format!("{}/v1", server.url()));
    cmd.args(["--doctor", "--output-format", "json"]);
    let done = Running::spawn(&mut cmd).unwrap().wait(RUN_LIMIT).unwrap();
    assert_eq!(done.code, Some(0), "{}", done.describe());
    let r: Value = serde_json::from_str(done.stdout_text().trim())
        .unwrap_or_else(|e| panic!("{e}: {}", done.describe()));
    eprintln!("doctor took {:?}: {r}", done.wall);
    assert_eq!(r["window"], 2048, "{r}");
    assert_eq!(r["windowSource"], "server /props", "{r}");
    assert_eq!(r["templateRendersTools"], false, "{r}");
    assert_eq!(r["toolCalls"]["constrained"], true, "{r}");
    // SmolLM2's template has no tool-call format: no native call.
    assert_eq!(r["toolCalls"]["native"], false, "{r}");
    // The second request's prompt is the first's: llama.cpp serves all
    // but its last token from the cache.
    assert!(r["cacheReuse"].as_f64().unwrap() > 0.5, "{r}");
    assert!(r["promptTokensPerSecond"].as_f64().is_some(), "{r}");
    assert!(r["tokensPerSecond"].as_f64().is_some(), "{r}");
    // The fixed part counted by the server's own template and tokenizer:
    // SmolLM2's template leaves the declarations out, so the count is far
    // below what four characters a token would guess, full or short.
    let f = &r["fixedPart"];
    let (bytes, tokens) = (f["bytes"].as_u64().unwrap(), f["tokens"].as_u64().unwrap());
    let short = f["shortTokens"].as_u64().unwrap();
    assert!(tokens > 0 && tokens < bytes / 8, "{f}");
    assert!(short > 0 && short <= tokens, "{f}");
    assert!(f["shortBytes"].as_u64().unwrap() < bytes, "{f}");
}
