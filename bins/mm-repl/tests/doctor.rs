//! `mm-repl --doctor` end to end against the mock: the window and where
//! it came from, the template's caps, which kinds of call work (and that
//! none is run), reasoning, the cache's reuse of an identical prompt, the
//! recommendations, and the exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, text};
use mm_mock::{Options, Reply, Route, Step};
use serde_json::{Value, json};

/// A call of `bash` that would leave a file behind if it ever ran.
const MARK: &str = r#"{"command":"touch ran-by-doctor"}"#;

fn props(supports_tools: bool) -> Route {
    Route::get(
        "/props",
        json!({
            "default_generation_settings": {"n_ctx": 4096},
            "chat_template_caps": {"supports_tools": supports_tools},
        }),
    )
}

fn world(script: Vec<Reply>, extra: &str, routes: Vec<Route>) -> World {
    World::serving(
        script,
        extra,
        Options {
            routes,
            ..Options::default()
        },
    )
}

fn doctor_json(w: &World) -> (Option<i32>, Value, String) {
    let out = w.run(&["--doctor", "--output-format", "json"], None);
    let stdout = text(&out.stdout);
    let report = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out.status.code(), report, text(&out.stderr))
}

#[test]
fn prose_then_a_constrained_call_on_a_template_without_tools() {
    let w = world(
        vec![
            Reply::stream(vec![
                Step::reasoning("the user wants a listing"),
                Step::text("Here it is:\n```bash\nls\n```"),
                Step::Usage {
                    prompt: 40,
                    completion: 12,
                },
                Step::Cached { tokens: 0 },
            ]),
            Reply::stream(vec![
                Step::text(r#"{"name":"bash","#),
                Step::text(format!(r#""arguments":{MARK}}}"#)),
                Step::Usage {
                    prompt: 40,
                    completion: 14,
                },
                Step::Cached { tokens: 39 },
            ]),
        ],
        "",
        vec![props(false)],
    );
    let (code, r, stderr) = doctor_json(&w);
    assert_eq!(code, Some(0), "{stderr}");
    for key in [
        "server",
        "model",
        "window",
        "windowSource",
        "toolCalls",
        "reasoning",
        "cacheReuse",
        "promptTokensPerSecond",
        "tokensPerSecond",
        "recommend",
    ] {
        assert!(r.get(key).is_some(), "{key} missing: {r}");
    }
    assert_eq!(r["server"], format!("{}/v1", w.server.url()));
    assert_eq!(r["model"], "openai-compatible/test");
    assert_eq!(r["window"], 4096);
    assert_eq!(r["windowSource"], "server /props");
    assert_eq!(r["templateRendersTools"], false);
    assert_eq!(
        r["toolCalls"],
        json!({"native": false, "text": false, "constrained": true})
    );
    assert_eq!(r["reasoning"], true);
    assert_eq!(r["cacheReuse"], 0.98);
    // auto already constrains on this template: nothing to change.
    assert_eq!(r["recommend"], json!([]), "{r}");
    assert!(
        r["plan"]
            .as_str()
            .unwrap()
            .contains("constrainedCalls: auto")
    );

    // Two chat requests with the same prompt; the second constrained.
    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[0]["messages"], chats[1]["messages"]);
    assert_eq!(chats[0]["tools"], chats[1]["tools"]);
    assert!(chats[0].get("response_format").is_none());
    assert_eq!(chats[1]["response_format"]["type"], "json_schema");
    assert_eq!(
        chats[0]["messages"][1]["content"],
        "Run the shell command `ls`."
    );
    // Nothing was run.
    assert!(!w.cwd.join("ran-by-doctor").exists());
    // The fixed part in bytes, full and short; this server cannot count
    // tokens, and says nothing it does not know.
    let f = &r["fixedPart"];
    assert!(
        f["bytes"].as_u64().unwrap() > f["shortBytes"].as_u64().unwrap(),
        "{f}"
    );
    assert!(f["tokens"].is_null() && f["shortTokens"].is_null(), "{f}");
}

#[test]
fn the_fixed_part_is_counted_by_a_server_that_can() {
    let w = world(
        vec![Reply::text("ok"), Reply::text("ok")],
        "",
        vec![
            props(false),
            Route::post("/apply-template", json!({"prompt": "rendered"})),
            Route::post("/tokenize", json!({"tokens": [1, 2, 3]})),
        ],
    );
    let (code, r, stderr) = doctor_json(&w);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(r["fixedPart"]["tokens"], 3, "{r}");
    assert_eq!(r["fixedPart"]["shortTokens"], 3, "{r}");
    // Counted as sent: the system prompt, then every declared tool.
    let asked: Vec<Value> = w
        .server
        .all_requests()
        .into_iter()
        .filter(|q| q.path == "/apply-template")
        .map(|q| q.body)
        .collect();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0]["messages"][0]["role"], "system");
    let names = |body: &Value| body["tools"].as_array().map_or(0, Vec::len);
    assert!(names(&asked[0]) > names(&asked[1]), "full, then short");
}

#[test]
fn native_and_text_form_calls_are_told_apart_and_none_runs() {
    // A native call, then (the second, constrained request) an answer.
    let w = world(
        vec![
            Reply::tool_call("c1", "bash", MARK),
            Reply::text(r#"{"answer":"I would run ls."}"#),
        ],
        "",
        vec![props(true)],
    );
    let (code, r, stderr) = doctor_json(&w);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        r["toolCalls"],
        json!({"native": true, "text": false, "constrained": false})
    );
    assert_eq!(r["templateRendersTools"], true);
    assert_eq!(r["reasoning"], false);
    // The mock says nothing of its cache here.
    assert_eq!(r["cacheReuse"], Value::Null);
    assert!(!w.cwd.join("ran-by-doctor").exists());

    // A call written as text: recovered, not native.
    let w = world(
        vec![
            Reply::text(format!(
                "<tool_call>\n{{\"name\": \"bash\", \"arguments\": {MARK}}}\n</tool_call>"
            )),
            Reply::text(format!(r#"{{"name":"bash","arguments":{MARK}}}"#)),
        ],
        "constrainedCalls: off\n",
        vec![props(true)],
    );
    let (code, r, stderr) = doctor_json(&w);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        r["toolCalls"],
        json!({"native": false, "text": true, "constrained": true})
    );
    assert!(!w.cwd.join("ran-by-doctor").exists());
}

#[test]
fn prose_everywhere_but_under_constraint_recommends_always() {
    // The template renders tools (auto would not constrain up front), yet
    // only the constrained reply calls.
    let w = world(
        vec![
            Reply::text("You can list files with ls."),
            Reply::text(format!(r#"{{"name":"bash","arguments":{MARK}}}"#)),
        ],
        "",
        vec![props(true)],
    );
    let (code, r, stderr) = doctor_json(&w);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(r["recommend"], json!(["constrainedCalls: always"]), "{r}");

    // The same as lines for a person.
    let w = world(
        vec![
            Reply::text("You can list files with ls."),
            Reply::text(format!(r#"{{"name":"bash","arguments":{MARK}}}"#)),
        ],
        "",
        vec![props(true)],
    );
    let out = w.run(&["--doctor"], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for line in [
        "window: 4096 tokens (server /props)\n",
        "template renders tools: yes\n",
        "  native: no\n",
        "  constrained: yes\n",
        "recommend:\n  constrainedCalls: always\n",
    ] {
        assert!(stdout.contains(line), "{line:?} not in:\n{stdout}");
    }
}

#[test]
fn a_server_that_recomputes_an_identical_prompt_gets_the_llama_flags() {
    let reply = |cached| {
        Reply::stream(vec![
            Step::text(format!(r#"{{"name":"bash","arguments":{MARK}}}"#)),
            Step::Usage {
                prompt: 40,
                completion: 14,
            },
            Step::Cached { tokens: cached },
        ])
    };
    let w = world(vec![reply(0), reply(0)], "", vec![props(false)]);
    let (code, r, stderr) = doctor_json(&w);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(r["cacheReuse"], 0.0);
    assert!(
        r["recommend"]
            .as_array()
            .unwrap()
            .contains(&json!("llama-server: --swa-full --cache-reuse 256")),
        "{r}"
    );
}

#[test]
fn ollama_reports_the_running_window_against_the_models() {
    let w = world(
        vec![
            Reply::tool_call("c1", "bash", MARK),
            Reply::text(format!(r#"{{"name":"bash","arguments":{MARK}}}"#)),
        ],
        "",
        vec![
            Route::post(
                "/api/show",
                json!({
                    "parameters": "num_ctx 8192",
                    "capabilities": ["completion", "tools"],
                    "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
                }),
            ),
            Route::get(
                "/api/ps",
                json!({"models": [{"name": "test:latest", "model": "test:latest", "context_length": 4096}]}),
            ),
        ],
    );
    w.write_config(&format!(
        "model: ollama/test\nbaseURL: {}\nretries: 0\nlsp:\n  servers: []\n",
        w.server.url()
    ));
    let (code, r, stderr) = doctor_json(&w);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(r["window"], 8192);
    assert_eq!(r["windowSource"], "server /api/show");
    assert_eq!(r["templateRendersTools"], true);
    assert_eq!(r["ollamaContext"], json!({"running": 4096, "model": 40960}));
    assert_eq!(r["toolCalls"]["native"], true);
    assert_eq!(r["toolCalls"]["constrained"], true);
    let notes = r["notes"].to_string();
    assert!(notes.contains("num_ctx 4096"), "{notes}");
    let chats: Vec<Value> = w
        .requests()
        .into_iter()
        .filter(|q| q.path == "/api/chat")
        .map(|q| q.body)
        .collect();
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[0]["options"]["num_ctx"], 8192);
    assert!(chats[1]["format"]["oneOf"].is_array());
}

#[test]
fn an_unreachable_server_exits_1_and_bad_settings_exit_2() {
    let w = World::new(vec![], "");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    w.write_config(&format!(
        "model: openai-compatible/test\nbaseURL: http://127.0.0.1:{port}/v1\nretries: 0\n"
    ));
    let (code, r, stderr) = doctor_json(&w);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(r["reachable"], false);
    let out = w.run(&["--doctor"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("(not reachable)"),
        "{}",
        text(&out.stdout)
    );

    w.write_config("model: nope\n");
    let out = w.run(&["--doctor"], None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = w.run(&["--doctor", "-p", "hi"], None);
    assert_eq!(out.status.code(), Some(2));
}
