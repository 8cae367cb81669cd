//! mm-mcp-fake: a small MCP server over stdio that misbehaves on demand,
//! for mm's tests. Hand-written JSON-RPC (no SDK), so that it can break
//! the protocol in the ways real servers do.
//!
//! Flags (all optional):
//!   --silent            never answer `initialize`
//!   --junk-at-start     answer `initialize` with a line that is not JSON
//!   --exit-at-start N   print a line on stderr and exit with status N at once
//!   --start-delay S     wait S seconds (may be fractional) before answering `initialize`
//!   --log FILE          append every line received to FILE
//!   --fillers N         declare N more tools, each with a long description
//!   --grandchild        start a `sleep 300` that the tool `grandchild` names
//!
//! Tools: `echo {text}`, `sleep {seconds}` (answers unless cancelled),
//! `crash` (exits 3 mid-call), `big {bytes}` (one text of that size),
//! `junk` (writes a line that is not JSON, never answers), `image`,
//! `fail` (a result flagged `isError`), `env {name}` (a variable's value or
//! `(unset)`), `grandchild` (the pid of the `sleep` it started).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

struct Opts {
    silent: bool,
    junk_at_start: bool,
    exit_at_start: Option<i32>,
    start_delay: f64,
    log: Option<String>,
    fillers: usize,
    grandchild: bool,
}

fn opts() -> Opts {
    let mut o = Opts {
        silent: false,
        junk_at_start: false,
        exit_at_start: None,
        start_delay: 0.0,
        log: None,
        fillers: 0,
        grandchild: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--silent" => o.silent = true,
            "--junk-at-start" => o.junk_at_start = true,
            "--exit-at-start" => o.exit_at_start = args.next().and_then(|v| v.parse().ok()),
            "--start-delay" => {
                o.start_delay = args.next().and_then(|v| v.parse().ok()).unwrap_or(0.0)
            }
            "--log" => o.log = args.next(),
            "--fillers" => o.fillers = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            "--grandchild" => o.grandchild = true,
            other => {
                eprintln!("mm-mcp-fake: unknown flag {other}");
                std::process::exit(2);
            }
        }
    }
    o
}

type Out = Arc<Mutex<std::io::Stdout>>;

fn send(out: &Out, message: &Value) {
    let mut o = out.lock().unwrap();
    let _ = writeln!(o, "{message}");
    let _ = o.flush();
}

fn send_raw(out: &Out, line: &str) {
    let mut o = out.lock().unwrap();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

fn text_result(id: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
}

fn tool(name: &str, description: &str, props: Value, required: &[&str]) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": props, "required": required}
    })
}

fn tools(fillers: usize) -> Vec<Value> {
    let mut t = vec![
        tool(
            "echo",
            "Echoes the text back",
            json!({"text": {"type": "string", "description": "what to echo"}}),
            &["text"],
        ),
        tool(
            "sleep",
            "Sleeps, then answers",
            json!({"seconds": {"type": "number"}}),
            &["seconds"],
        ),
        tool("crash", "Exits in the middle of the call", json!({}), &[]),
        tool(
            "big",
            "Answers one text of the given size",
            json!({"bytes": {"type": "integer"}}),
            &["bytes"],
        ),
        tool("junk", "Writes a line that is not JSON", json!({}), &[]),
        tool("image", "Answers a tiny image", json!({}), &[]),
        tool(
            "fail",
            "Answers a result flagged as an error",
            json!({}),
            &[],
        ),
        tool(
            "env",
            "The value of an environment variable",
            json!({"name": {"type": "string"}}),
            &["name"],
        ),
        tool(
            "grandchild",
            "The pid of the process it started",
            json!({}),
            &[],
        ),
    ];
    for i in 1..=fillers {
        t.push(tool(
            &format!("filler_{i}"),
            &format!(
                "Filler tool number {i}. It exists to make the declarations of this server \
                 large, the way servers with many tools and long descriptions are. \
                 It does nothing useful and answers with its own name."
            ),
            json!({"value": {"type": "string", "description": "any text at all, ignored"}}),
            &[],
        ));
    }
    t
}

fn main() {
    let o = opts();
    if let Some(code) = o.exit_at_start {
        eprintln!("mm-mcp-fake: exiting at start as asked");
        std::process::exit(code);
    }
    let grandchild = if o.grandchild {
        std::process::Command::new("sleep")
            .arg("300")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .ok()
            .map(|c| c.id())
    } else {
        None
    };
    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    let cancelled: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut log = o.log.as_ref().map(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .unwrap()
    });
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if let Some(f) = log.as_mut() {
            let _ = writeln!(f, "{line}");
            let _ = f.flush();
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = msg["method"].as_str().unwrap_or("").to_string();
        let id = msg.get("id").cloned();
        if method == "notifications/cancelled" {
            let rid = msg["params"]["requestId"].to_string();
            cancelled.lock().unwrap().insert(rid);
            continue;
        }
        let Some(id) = id else { continue };
        if method.is_empty() {
            continue; // a response to something we never asked
        }
        match method.as_str() {
            "initialize" => {
                if o.silent {
                    continue;
                }
                if o.start_delay > 0.0 {
                    std::thread::sleep(Duration::from_secs_f64(o.start_delay));
                }
                if o.junk_at_start {
                    send_raw(&out, "{\"jsonrpc\": \"2.0\", \"id\": oops");
                    continue;
                }
                let version = msg["params"]["protocolVersion"]
                    .as_str()
                    .unwrap_or("2025-06-18")
                    .to_string();
                send(
                    &out,
                    &json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": version,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "mm-mcp-fake", "version": "1.0"}
                    }}),
                );
            }
            "ping" => send(&out, &json!({"jsonrpc": "2.0", "id": id, "result": {}})),
            "tools/list" => send(
                &out,
                &json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools(o.fillers)}}),
            ),
            "tools/call" => call(&out, &cancelled, id, &msg["params"], grandchild),
            _ => send(
                &out,
                &json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": format!("no method {method}")}}),
            ),
        }
    }
}

fn call(
    out: &Out,
    cancelled: &Arc<Mutex<HashSet<String>>>,
    id: Value,
    params: &Value,
    grandchild: Option<u32>,
) {
    let name = params["name"].as_str().unwrap_or("");
    let args = &params["arguments"];
    match name {
        "echo" => send(out, &text_result(&id, args["text"].as_str().unwrap_or(""))),
        "sleep" => {
            let secs = args["seconds"].as_f64().unwrap_or(1.0);
            let out = out.clone();
            let cancelled = cancelled.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs_f64(secs));
                if !cancelled.lock().unwrap().contains(&id.to_string()) {
                    send(&out, &text_result(&id, &format!("slept {secs}s")));
                }
            });
        }
        "crash" => {
            eprintln!("mm-mcp-fake: crashing on purpose");
            std::process::exit(3);
        }
        "big" => {
            let n = args["bytes"].as_u64().unwrap_or(1024) as usize;
            let mut text = "x".repeat(n.saturating_sub(4));
            text.push_str("END!");
            send(out, &text_result(&id, &text));
        }
        "junk" => send_raw(out, "this line is not JSON"),
        "image" => send(
            out,
            &json!({"jsonrpc": "2.0", "id": id, "result": {"content": [
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
            ]}}),
        ),
        "fail" => send(
            out,
            &json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "it failed on purpose"}],
                "isError": true
            }}),
        ),
        "env" => {
            let var = args["name"].as_str().unwrap_or("");
            let value = std::env::var(var).unwrap_or_else(|_| "(unset)".to_string());
            send(out, &text_result(&id, &value));
        }
        "grandchild" => send(
            out,
            &text_result(
                &id,
                &grandchild.map_or("none".to_string(), |p| p.to_string()),
            ),
        ),
        n if n.starts_with("filler_") => send(out, &text_result(&id, n)),
        other => send(
            out,
            &json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32602, "message": format!("unknown tool {other}")}}),
        ),
    }
}
