#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The fault suite, `mm-repl` side: the built binary is driven from outside
//! like a user drives it, against the scripted mock server misbehaving on
//! purpose. Each case checks the clear message, the exit code, that nothing
//! hangs (every run is bounded and killed on overrun), that no process is
//! left behind, and that every session file parses — never torn.
//!
//! Texts mm promises (docs/reference/, docs/design.md) are compared byte
//! for byte.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mm_mock::{MockServer, Recorded, Reply, Step};
use mm_tests::child::{Finished, Running, built_binary};
use mm_tests::sandbox::Sandbox;
use serde_json::Value;

/// The notice after a watchdog cut (docs/design.md#watchdog).
const STALL_NOTICE: &str = "stream stalled; retrying without streaming";
/// The result of a call that never ran
/// (docs/design.md#every-call-gets-a-result).
const NOT_RUN: &str = "[not run: the turn was stopped]";
/// The longest any single case may take before it counts as a hang.
const BOUND: Duration = Duration::from_secs(60);

fn repl() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| built_binary("mm-repl")).clone().unwrap()
}

fn base(server: &MockServer) -> String {
    format!("{}/v1", server.url())
}

/// Run `mm-repl` with `args` in the sandbox against `url`, bounded.
async fn run(sb: &Sandbox, url: &str, args: &[&str]) -> Finished {
    let mut cmd = sb.command(&repl(), url);
    cmd.args(args);
    let running = Running::spawn(&mut cmd).unwrap();
    tokio::task::spawn_blocking(move || running.wait(BOUND))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("mm-repl {args:?}: {e}"))
}

/// Every session file parses; returns them.
fn sessions(sb: &Sandbox) -> Vec<Value> {
    let all = sb.sessions().unwrap_or_else(|e| panic!("{e}"));
    assert!(sb.temp_files().is_empty(), "{:?}", sb.temp_files());
    all
}

/// The one session file of the sandbox.
fn the_session(sb: &Sandbox) -> Value {
    let mut all = sessions(sb);
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

/// `(role, content)` of each stored message.
fn shape(session: &Value) -> Vec<(String, String)> {
    session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pair(role: &str, content: &str) -> (String, String) {
    (role.to_owned(), content.to_owned())
}

/// The messages of a recorded OpenAI request.
fn messages(req: &Recorded) -> &Vec<Value> {
    req.body["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("not a chat request: {:?}", req.body))
}

/// The content of the tool message answering `call_id` in `req`.
fn tool_result(req: &Recorded, call_id: &str) -> String {
    let found: Vec<&Value> = messages(req)
        .iter()
        .filter(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .collect();
    assert_eq!(found.len(), 1, "results for {call_id}: {found:?}");
    found[0]["content"].as_str().unwrap().to_owned()
}

fn assert_failed(done: &Finished) {
    assert_eq!(done.code, Some(1), "{}", done.describe());
}

fn assert_ok(done: &Finished) {
    assert_eq!(done.code, Some(0), "{}", done.describe());
}

/// The one `error:` line of stderr.
fn error_line(done: &Finished) -> String {
    let errors: Vec<&str> = done
        .stderr_lines()
        .into_iter()
        .filter(|l| l.starts_with("error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", done.describe());
    errors[0].to_owned()
}

const CONFIG: &str = "retries: 1\nwatchdog: 1\nbashTimeout: 1\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_down_is_one_line_naming_the_url_and_how_to_change_it() {
    let sb = Sandbox::new(CONFIG).unwrap();
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let done = run(&sb, &url, &["-p", "hi"]).await;
    assert_failed(&done);
    assert!(done.stdout.is_empty(), "{}", done.describe());
    let lines = done.stderr_lines();
    assert_eq!(
        lines.len(),
        1,
        "one line, never a stack: {}",
        done.describe()
    );
    for part in [url.as_str(), "openai-compatible", "MM_BASE_URL", "baseURL"] {
        assert!(lines[0].contains(part), "{part:?} missing: {}", lines[0]);
    }
    // A question that got no answer at all is dropped; nothing is torn.
    for s in sessions(&sb) {
        assert!(shape(&s).is_empty(), "{s}");
    }
    assert!(sb.leftovers(&[]).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_then_answered_after_retry_after() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![
        Reply::retry_after(429, 2, "slow down"),
        Reply::text("hello"),
    ])
    .await
    .unwrap();
    let done = run(&sb, &base(&server), &["-p", "hi"]).await;
    assert_ok(&done);
    assert_eq!(done.stdout_text().trim_end(), "hello");
    assert!(
        done.wall >= Duration::from_secs(2),
        "Retry-After: 2 not honoured: {:?}",
        done.wall
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        shape(&the_session(&sb)),
        vec![pair("user", "hi"), pair("assistant", "hello")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_the_server_asks_for_is_said_and_a_long_one_refused() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![
        Reply::retry_after(429, 1, "slow down"),
        Reply::text("hello"),
        Reply::retry_after(429, 100_000, "slow down"),
        Reply::text("never asked for"),
    ])
    .await
    .unwrap();
    let done = run(&sb, &base(&server), &["-p", "hi"]).await;
    assert_ok(&done);
    assert!(
        done.stderr_lines().contains(
            &"the model server answered 429: slow down; retrying in 1s, as the server asks \
              (Retry-After)"
        ),
        "{}",
        done.describe()
    );
    // 27 hours asked: the turn fails at once with that text.
    let done = run(&sb, &base(&server), &["-p", "again"]).await;
    assert_failed(&done);
    assert!(done.wall < Duration::from_secs(20), "{:?}", done.wall);
    let line = error_line(&done);
    assert!(
        line.contains(
            "asks to wait 100000s before a retry (Retry-After), longer than maxRetryWait (60s)"
        ),
        "{line}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_exhaust_the_retries_and_show_the_body() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![
        Reply::status(500, "the model fell over"),
        Reply::status(500, "the model fell over"),
        Reply::text("never asked for"),
    ])
    .await
    .unwrap();
    let done = run(&sb, &base(&server), &["-p", "hi"]).await;
    assert_failed(&done);
    let line = error_line(&done);
    assert!(line.contains("500"), "{line}");
    assert!(line.contains("the model fell over"), "{line}");
    // retries: 1 → the request and one retry, no more.
    assert_eq!(server.requests().len(), 2);
    assert_eq!(server.remaining(), 1);
    for s in sessions(&sb) {
        assert!(shape(&s).is_empty(), "{s}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_is_cut_and_the_retry_without_streaming_answers() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![
        Reply::stream(vec![
            Step::text("partial "),
            Step::stall(30_000),
            Step::text("rest"),
        ]),
        Reply::text("hello"),
    ])
    .await
    .unwrap();
    let done = run(&sb, &base(&server), &["-p", "hi"]).await;
    assert_ok(&done);
    assert!(
        done.stderr_lines().contains(&STALL_NOTICE),
        "{}",
        done.describe()
    );
    assert!(
        done.wall < Duration::from_secs(20),
        "not cut: {:?}",
        done.wall
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].body["stream"], true);
    assert_ne!(reqs[1].body["stream"], true, "the retry must not stream");
    // The partial streamed text is discarded (docs/design.md#watchdog).
    assert_eq!(
        shape(&the_session(&sb)),
        vec![pair("user", "hi"), pair("assistant", "hello")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_whose_retry_stalls_too_ends_within_five_watchdogs() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![
        Reply::stream(vec![Step::stall(30_000), Step::text("late")]),
        Reply::stream(vec![Step::stall(30_000), Step::text("late")]),
    ])
    .await
    .unwrap();
    let done = run(&sb, &base(&server), &["-p", "hi"]).await;
    assert_failed(&done);
    assert!(done.stderr_lines().contains(&STALL_NOTICE));
    let line = error_line(&done);
    assert!(line.contains("without streaming"), "{line}");
    // watchdog 1 s, then the retry bounded by 5 × watchdog.
    assert!(
        done.wall < Duration::from_secs(15),
        "the retry was not bounded: {:?}",
        done.wall
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_ne!(reqs[1].body["stream"], true);
    for s in sessions(&sb) {
        assert!(shape(&s).is_empty(), "{s}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_dropped_midway_keeps_the_partial_answer() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![
        Reply::stream(vec![Step::text("partial "), Step::Drop]),
        Reply::text("never asked for"),
    ])
    .await
    .unwrap();
    let done = run(&sb, &base(&server), &["-p", "hi"]).await;
    assert_failed(&done);
    assert_eq!(done.stdout_text().trim_end(), "partial");
    let line = error_line(&done);
    assert!(line.contains("openai-compatible"), "{line}");
    assert_eq!(
        shape(&the_session(&sb)),
        vec![pair("user", "hi"), pair("assistant", "partial ")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_stream_line_is_named_and_the_partial_kept() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::text("partial "),
        Step::raw("data: {not json"),
        Step::text("rest"),
    ])])
    .await
    .unwrap();
    let done = run(&sb, &base(&server), &["-p", "hi"]).await;
    assert_failed(&done);
    let line = error_line(&done);
    assert!(line.contains("malformed"), "{line}");
    assert!(line.contains("{not json"), "{line}");
    assert_eq!(
        shape(&the_session(&sb)),
        vec![pair("user", "hi"), pair("assistant", "partial ")]
    );
}

/// The runaway call stays in the history with the not-run result; the next
/// request (a later question) carries exactly that, never an output.
async fn assert_runaway_never_ran(sb: &Sandbox, server: &MockServer, sentence: &str) {
    let done = run(sb, &base(server), &["-p", "hi"]).await;
    assert_failed(&done);
    assert!(
        done.stderr.lines().any(|l| l.contains(sentence)),
        "expected {sentence:?} in {}",
        done.describe()
    );
    assert_eq!(server.requests().len(), 1, "the turn must stop at once");
    let stored = shape(&the_session(sb));
    assert_eq!(stored.len(), 3, "{stored:?}");
    assert_eq!(stored[2], pair("tool", NOT_RUN));

    server.push(Reply::text("fine"));
    let again = run(sb, &base(server), &["--continue", "-p", "again"]).await;
    assert_ok(&again);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(tool_result(&reqs[1], "c1"), NOT_RUN);
    assert!(sb.leftovers(&[]).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runaway_arguments_repeating_a_pattern_stop_the_generation() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let prefix = r#"{"command": ""#;
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::tool_start(0, "c1", "bash"),
        Step::tool_args(0, prefix),
        Step::Runaway {
            index: 0,
            fragment: "abcd".into(),
            times: 1_000_000,
        },
    ])])
    .await
    .unwrap();
    // The guard trips when the last 256 characters are "abcd" repeated.
    let n = prefix.len() + 256;
    let sentence = format!(
        "[error: the model's tool call ran away: its arguments repeat the same pattern \
         ({n} characters so far: \"abcd\") — generation stopped; rephrase the request, \
         or try another model]"
    );
    assert_runaway_never_ran(&sb, &server, &sentence).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runaway_arguments_passing_256_kib_stop_the_generation() {
    // A context large enough that the 256 KiB call does not trigger
    // compaction on the next question.
    let sb = Sandbox::new(&format!("{CONFIG}contextWindow: 1000000\n")).unwrap();
    let prefix = r#"{"command": ""#;
    // 80 different characters: no period of 4 to 64 anywhere.
    let fragment =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!#$%&()*+,-./:;<=>";
    assert_eq!(fragment.len(), 80);
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::tool_start(0, "c1", "bash"),
        Step::tool_args(0, prefix),
        Step::Runaway {
            index: 0,
            fragment: fragment.into(),
            times: 100_000,
        },
    ])])
    .await
    .unwrap();
    let mut n = prefix.len();
    while n <= 262_144 {
        n += fragment.len();
    }
    let sentence = format!(
        "[error: the model's tool call ran away: its arguments passed 256 KiB ({n} bytes so far) \
         — generation stopped; rephrase the request, or try another model]"
    );
    assert_runaway_never_ran(&sb, &server, &sentence).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_timeout_kills_the_grandchildren_too() {
    let sb = Sandbox::new("retries: 1\nwatchdog: 30\nbashTimeout: 1\n").unwrap();
    let server = MockServer::start(vec![
        Reply::tool_call(
            "c1",
            "bash",
            r#"{"command": "bash -c 'sleep 60 & sleep 60'"}"#,
        ),
        // Time to look at /proc while the agent waits for the answer.
        Reply::stream(vec![Step::stall(1_500), Step::text("done")]),
    ])
    .await
    .unwrap();
    let mut cmd = sb.command(&repl(), &base(&server));
    cmd.args(["-p", "hi"]);
    let running = Running::spawn(&mut cmd).unwrap();
    let pid = running.pid();

    // The sleeps run while the call lasts (the inner bash, its two sleeps:
    // seen through the sandbox's mark, so the check below can see them) …
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut most = 0;
    while most < 3 && server.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the command never started");
        most = most.max(sb.leftovers(&[pid]).len());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(most >= 2, "the grandchildren were never seen ({most})");
    // … and none survives it: by the next request the group is dead.
    while server.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the call never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let grace = Instant::now() + Duration::from_millis(500);
    while !sb.leftovers(&[pid]).is_empty() && Instant::now() < grace {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = sb.leftovers(&[pid]);

    let done = tokio::task::spawn_blocking(move || running.wait(BOUND))
        .await
        .unwrap()
        .unwrap();
    assert!(left.is_empty(), "left running after the call: {left:?}");
    assert_ok(&done);
    assert_eq!(done.stdout_text().trim_end(), "done");
    assert!(done.wall < Duration::from_secs(30), "{:?}", done.wall);
    let reqs = server.requests();
    assert_eq!(tool_result(&reqs[1], "c1"), "[error: 1s timeout exceeded]");
    assert!(sb.leftovers(&[]).is_empty());
    the_session(&sb);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_of_output_is_read_in_bounded_memory() {
    let sb = Sandbox::new("retries: 1\nwatchdog: 60\nbashTimeout: 120\n").unwrap();
    let total: usize = 1_000_000_000;
    let server = MockServer::start(vec![
        Reply::tool_call(
            "c1",
            "bash",
            format!(r#"{{"command": "yes abcdefghij | head -c {total}"}}"#),
        ),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let mut cmd = sb.command(&repl(), &base(&server));
    cmd.args(["-p", "hi"]);
    let running = Running::spawn(&mut cmd).unwrap();
    let done = tokio::task::spawn_blocking(move || running.wait(Duration::from_secs(150)))
        .await
        .unwrap()
        .unwrap();
    assert_ok(&done);
    assert!(
        done.max_rss_kib < 100 * 1024,
        "peak RSS {} KiB for 1 GB of output",
        done.max_rss_kib
    );

    // What the model got: head and tail of the output around the marker,
    // maxOutput (30000) characters in all (docs/design.md#truncation).
    let reqs = server.requests();
    let result = tool_result(&reqs[1], "c1");
    let max_output = 30_000;
    assert_eq!(result.chars().count(), max_output, "{}", &result[..200]);
    let line = "abcdefghij\n";
    let char_at = |i: usize| line.as_bytes()[i % line.len()] as char;
    let marker_for = |omitted: usize| format!("[… {omitted} characters omitted …]");
    // The marker's own length depends on N; N's digits settle at once.
    let mut budget = max_output - (marker_for(total).chars().count() + 1);
    budget = max_output - (marker_for(total - budget).chars().count() + 1);
    let (head, tail) = (budget / 2, budget - budget / 2);
    let marker = marker_for(total - budget);
    assert!(result.contains(&marker), "no {marker:?} in the result");
    let want_head: String = (0..head).map(char_at).collect();
    let want_tail: String = (total - tail..total).map(char_at).collect();
    assert!(
        result.starts_with(&want_head),
        "head is not the output's start"
    );
    assert!(result.ends_with(&want_tail), "tail is not the output's end");
    assert!(sb.leftovers(&[]).is_empty());
    the_session(&sb);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_output_reaches_the_model_as_utf8_text() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![
        Reply::tool_call("c1", "bash", r#"{"command": "head -c 2000 /dev/urandom"}"#),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let done = run(&sb, &base(&server), &["-p", "hi"]).await;
    assert_ok(&done);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    // The mock records `Null` for a body that is not JSON (not UTF-8).
    assert_ne!(reqs[1].body, Value::Null, "the request was not UTF-8 JSON");
    let result = tool_result(&reqs[1], "c1");
    assert!(!result.is_empty());
    assert!(result.contains('\u{FFFD}'), "invalid bytes not replaced");
    the_session(&sb);
}

/// One broken settings file: where it is, what it holds, and the words
/// the one-line error must contain (file path always included).
struct BadConfig {
    what: &'static str,
    user: &'static str,
    project: Option<&'static str>,
    words: &'static [&'static str],
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_config_error_is_one_clear_line() {
    let cases = [
        BadConfig {
            what: "unknown key",
            user: "modle: ollama/x\n",
            project: None,
            words: &["\"modle\"", "model"],
        },
        BadConfig {
            what: "wrong type",
            user: "retries: ten\n",
            project: None,
            words: &["retries", "ten", "integer"],
        },
        BadConfig {
            what: "wrong type, nested key",
            user: "compact:\n  threshold: high\n",
            project: None,
            words: &["compact.threshold", "high"],
        },
        BadConfig {
            what: "bad enum value",
            user: "thinking: extreme\n",
            project: None,
            words: &["thinking", "extreme", "off", "high"],
        },
        BadConfig {
            what: "value out of range",
            user: "maxOutput: 100\n",
            project: None,
            words: &["maxOutput", "200"],
        },
        BadConfig {
            what: "a duration too large, from the project file",
            user: "retries: 1\n",
            project: Some("watchdog: 18446744073709551615\n"),
            words: &["watchdog", "expected at most 86400"],
        },
        BadConfig {
            what: "a command timeout too large",
            user: "bashTimeout: 18446744073709551615\n",
            project: None,
            words: &["bashTimeout", "expected at most 604800"],
        },
        BadConfig {
            what: "a count of zero",
            user: "retries: 1\n",
            project: Some("maxTurns: 0\n"),
            words: &["maxTurns", "expected at least 1, found 0"],
        },
        BadConfig {
            what: "a number past 64 bits is a value error, not a YAML one",
            user: "watchdog: 99999999999999999999999\n",
            project: None,
            words: &[
                "watchdog",
                "expected at most 86400, found 99999999999999999999999",
            ],
        },
        BadConfig {
            what: "YAML syntax",
            user: "retries: [1\n",
            project: None,
            words: &["YAML", "line"],
        },
        BadConfig {
            what: "forbidden project key",
            user: "retries: 1\n",
            project: Some("baseURL: http://127.0.0.1:1/v1\n"),
            words: &["baseURL"],
        },
        BadConfig {
            what: "forbidden nested project key",
            user: "retries: 1\n",
            project: Some("sessions:\n  enabled: false\n"),
            words: &["sessions"],
        },
        BadConfig {
            what: "unknown key in the project file",
            user: "retries: 1\n",
            project: Some("modle: x\n"),
            words: &["\"modle\""],
        },
    ];
    let server = MockServer::start(vec![]).await.unwrap();
    let mut failures = Vec::new();
    for case in &cases {
        let sb = Sandbox::new(case.user).unwrap();
        let file = match case.project {
            Some(text) => sb.write_project_config(text).unwrap(),
            None => sb.user_config(),
        };
        let done = run(&sb, &base(&server), &["-p", "hi"]).await;
        let lines = done.stderr_lines();
        let path = file.display().to_string();
        let mut problems = Vec::new();
        if done.code == Some(0) || done.code.is_none() {
            problems.push("exit code is not a failure".to_owned());
        }
        if lines.len() != 1 {
            problems.push(format!("{} stderr lines", lines.len()));
        }
        // The words are looked for in the line naming the file, so that a
        // second line does not hide what the first one says.
        let text = lines
            .iter()
            .copied()
            .find(|l| l.contains(&path))
            .or(lines.first().copied())
            .unwrap_or_default();
        for word in std::iter::once(path.as_str()).chain(case.words.iter().copied()) {
            if !text.contains(word) {
                problems.push(format!("{word:?} missing"));
            }
        }
        if !done.stdout.is_empty() {
            problems.push("stdout is not empty".to_owned());
        }
        if !sb.session_files().is_empty() {
            problems.push("a session file was written".to_owned());
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{}: {} — {}",
                case.what,
                problems.join(", "),
                done.describe()
            ));
        }
    }
    assert!(
        server.requests().is_empty(),
        "a broken config reached the model"
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
