//! `web_fetch` end to end: the built `mm-repl -p` against the mock model,
//! fetching pages from a small HTTP server on 127.0.0.1 (which needs an
//! allow rule naming it: a private address is refused without one), and
//! asserting on the result the model received in the next request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod contract_support;

use std::net::SocketAddr;

use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use contract_support::*;
use serde_json::json;

/// The rule that lets `web_fetch` reach the page server.
const RULE: &str = "permissions:\n  allow: [\"web_fetch(domain:127.0.0.1)\"]\n";

const PAGE: &str = "<!doctype html><html><head><title>Doc</title>\
<style>body { color: red }</style><script>var SCRIPT_SECRET = 'x';</script></head>\
<body><nav><a href=\"/\">NAV_HOME</a></nav><h1>Install</h1>\
<p>Run <code>cargo add mm</code>, then read <a href=\"https://docs.example/guide\">the guide</a>.</p>\
<p>See <a href=\"/api/v2\">the API</a>, <a href=\"next.html#top\">next</a>, <a href=\"#usage\">usage</a> \
and <img src=\"img/logo.png\" alt=\"logo\">.</p>\
<ul><li>fast</li><li>small</li></ul>\
<table><tr><th>key</th><th>value</th></tr><tr><td>a</td><td>1</td></tr></table>\
<script>document.write('MORE_SCRIPT')</script></body></html>";

async fn page() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE).into_response()
}

async fn big() -> Response {
    let line = "<p>lorem ipsum dolor sit amet, consectetur adipiscing elit</p>\n";
    let body = line.repeat(20 * 1024 * 1024 / line.len());
    ([(header::CONTENT_TYPE, "text/html")], body).into_response()
}

async fn hop(Path(n): Path<u32>) -> Response {
    (
        StatusCode::FOUND,
        [(header::LOCATION, format!("/hop/{}", n + 1))],
    )
        .into_response()
}

async fn json_doc() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        "{\"name\": \"mm\", \"tags\": [1, 2]}",
    )
        .into_response()
}

async fn binary() -> Response {
    ([(header::CONTENT_TYPE, "application/pdf")], vec![0u8; 1234]).into_response()
}

/// A SearXNG answer, echoing the query it got.
async fn search(
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Response {
    let body = json!({"results": [
        {"title": format!("About {}", q["q"]), "url": "https://a.example/1", "content": "first\n  snippet"},
        {"title": "Second", "url": "https://b.example/2", "content": format!("format={}", q["format"])}
    ]});
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A redirect to another loopback address, which no rule names.
async fn elsewhere() -> Response {
    (
        StatusCode::FOUND,
        [(header::LOCATION, "http://127.0.0.2:9/secret")],
    )
        .into_response()
}

/// The page server on its own runtime, for as long as it lives.
struct Pages {
    addr: SocketAddr,
    _rt: tokio::runtime::Runtime,
}

fn serve() -> Pages {
    let app = Router::new()
        .route("/page", get(page))
        .route("/big", get(big))
        .route("/hop/{n}", get(hop))
        .route("/doc.json", get(json_doc))
        .route("/file.pdf", get(binary))
        .route("/elsewhere", get(elsewhere))
        .route("/search", get(search));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let addr = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        addr
    });
    Pages { addr, _rt: rt }
}

fn fetch(url: String) -> (&'static str, String) {
    ("web_fetch", args(json!({ "url": url })))
}

/// `127.0.0.1:PORT` of the page server, from the line a binary gets.
fn page_host(not_text: &str) -> &str {
    let rest = not_text.strip_prefix("http://").unwrap();
    &rest[..rest.find('/').unwrap()]
}

/// Run `calls` (made from the page server's address) with `extra`
/// settings; the results, the run ending normally.
fn fetched(extra: &str, calls: impl Fn(SocketAddr) -> Vec<(&'static str, String)>) -> Vec<String> {
    let pages = serve();
    let list = calls(pages.addr);
    let w = world(&list, extra);
    let run = ask(&w);
    run.assert_ok();
    results(&w, &run, list.len())
}

#[test]
fn an_html_page_arrives_as_markdown_without_its_scripts() {
    let got = fetched(RULE, |a| {
        vec![
            fetch(format!("http://{a}/page")),
            fetch(format!("http://{a}/doc.json")),
            fetch(format!("http://{a}/file.pdf")),
        ]
    });
    let page = &got[0];
    assert!(page.contains("# Install"), "{page}");
    assert!(page.contains("`cargo add mm`"), "{page}");
    assert!(
        page.contains("[the guide](https://docs.example/guide)"),
        "{page}"
    );
    assert!(page.contains("fast") && page.contains("small"), "{page}");
    assert!(page.contains("| key | value |"), "{page}");
    // A relative link or image is given whole, so the model can fetch it.
    let base = format!("http://{}", page_host(&got[2]));
    for link in [
        format!("[the API]({base}/api/v2)"),
        format!("[next]({base}/next.html#top)"),
        format!("[usage]({base}/page#usage)"),
        format!("![logo]({base}/img/logo.png)"),
    ] {
        assert!(page.contains(&link), "{link} not in {page}");
    }
    for gone in ["SCRIPT_SECRET", "MORE_SCRIPT", "color: red", "NAV_HOME"] {
        assert!(!page.contains(gone), "{gone} in {page}");
    }
    assert_eq!(got[1], "{\"name\": \"mm\", \"tags\": [1, 2]}");
    assert!(
        got[2].ends_with("/file.pdf: application/pdf, 1234 bytes: not a text page"),
        "{}",
        got[2]
    );
}

#[test]
fn a_twenty_megabyte_page_is_cut_within_the_budget() {
    let got = fetched(RULE, |a| vec![fetch(format!("http://{a}/big"))]);
    let page = &got[0];
    assert!(page.chars().count() <= 30_000, "{}", page.chars().count());
    assert!(page.starts_with("lorem ipsum"), "{}", &page[..100]);
    assert!(page.contains("characters omitted …]"), "no marker");
    assert!(
        page.ends_with("[page cut: only the first 2097152 bytes were read]"),
        "{}",
        &page[page.len() - 200..]
    );
}

#[test]
fn a_chain_of_twenty_redirects_stops() {
    let got = fetched(RULE, |a| vec![fetch(format!("http://{a}/hop/0"))]);
    assert!(
        got[0].starts_with("[error: more than 10 redirects, stopped at http://127.0.0.1:")
            && got[0].ends_with("/hop/11]"),
        "{}",
        got[0]
    );
}

#[test]
fn a_private_address_needs_a_rule_that_names_it() {
    let got = fetched("", |a| {
        vec![
            fetch(format!("http://{a}/page")),
            fetch(format!("http://localhost:{}/page", a.port())),
        ]
    });
    assert_eq!(
        got[0],
        "[refused: 127.0.0.1 is 127.0.0.1, a loopback or private address; an allow rule such as \
         web_fetch(domain:127.0.0.1) lets web_fetch reach it]"
    );
    assert!(
        got[1].starts_with("[refused: localhost is ")
            && got[1].contains("web_fetch(domain:localhost)"),
        "{}",
        got[1]
    );
    // Named, it is reached; a redirect from there to an address no rule
    // names is refused.
    let got = fetched(RULE, |a| {
        vec![
            fetch(format!("http://{a}/page")),
            fetch(format!("http://{a}/elsewhere")),
        ]
    });
    assert!(got[0].contains("# Install"), "{}", got[0]);
    assert_eq!(
        got[1],
        "[refused: 127.0.0.2 is 127.0.0.2, a loopback or private address; an allow rule such as \
         web_fetch(domain:127.0.0.2) lets web_fetch reach it]"
    );
}

#[test]
fn ask_mode_without_a_terminal_refuses_a_fetch() {
    let list = [fetch("https://docs.rs/mm".to_owned())];
    let w = world(&list, "permissions: ask\n");
    let run = ask(&w);
    assert_eq!(run.code(), Some(4), "{}", run.stderr);
    let chats = w.chats();
    let got = result_of(&chats[1], "c1");
    assert_eq!(
        got,
        "[not run: this call needs permission and there is no terminal to ask; use --permissions or an allow rule]"
    );
}

#[test]
fn web_search_is_declared_only_with_a_search_server_and_lists_its_hits() {
    let pages = serve();
    let list = [("web_search", args(json!({"query": "rust html"})))];
    let w = world(
        &list,
        &format!("webSearch:\n  url: http://{}/search\n", pages.addr),
    );
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 1);
    assert_eq!(
        got[0],
        "1. About rust html\n   https://a.example/1\n   first snippet\n\
         2. Second\n   https://b.example/2\n   format=json\n"
    );
    // Without the setting there is no such tool.
    let w = world(&[], "");
    ask(&w).assert_ok();
    assert!(!tool_names(&w.chats()[0]).contains(&"web_search".to_owned()));
}
