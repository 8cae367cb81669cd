//! Against the servers users run, installed from the registries by
//! `.ci/install-mcp`: the reference server (`@modelcontextprotocol/
//! server-everything`, stdio and streamable HTTP) and a Python one
//! (`mcp-server-time`), plus HTTP endpoints that misbehave.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use mm_mcp::{McpError, Server, Timeouts};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

async fn start(spec: &mm_mcp::ServerSpec) -> Result<Server, McpError> {
    let timeouts = Timeouts {
        start: Duration::from_secs(30),
        call: Duration::from_secs(30),
    };
    timeout(LIMIT, Server::start(spec, timeouts))
        .await
        .expect("bounded")
}

async fn call(
    server: &Server,
    tool: &str,
    a: serde_json::Value,
) -> Result<mm_mcp::CallOutput, McpError> {
    timeout(
        LIMIT,
        server.call(tool, a.as_object().cloned(), &CancellationToken::new()),
    )
    .await
    .expect("bounded")
}

#[tokio::test]
async fn mcp_server_time_through_python_m() {
    let Some(python) = installed("python3", "mcp_server_time_through_python_m") else {
        return;
    };
    let spec = stdio("time", python.to_str().unwrap(), &["-m", "mcp_server_time"]);
    let server = start(&spec).await.unwrap();
    let names: Vec<&str> = server.tools().iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"get_current_time"), "{names:?}");
    let out = call(
        &server,
        "get_current_time",
        serde_json::json!({"timezone": "Etc/UTC"}),
    )
    .await
    .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("Etc/UTC"), "{}", out.text);
    assert!(out.text.contains("datetime"), "{}", out.text);
    // A bad argument is the server's error result, as text.
    let out = call(
        &server,
        "get_current_time",
        serde_json::json!({"timezone": "Mars/Olympus"}),
    )
    .await
    .unwrap();
    assert!(out.is_error, "{}", out.text);
    server.close().await;
}

#[tokio::test]
async fn everything_over_stdio() {
    let Some(bin) = installed("mcp-server-everything", "everything_over_stdio") else {
        return;
    };
    let server = start(&stdio("everything", bin.to_str().unwrap(), &["stdio"]))
        .await
        .unwrap();
    let names: Vec<&str> = server.tools().iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "get-sum", "get-tiny-image"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert_eq!(
        call(&server, "echo", serde_json::json!({"message": "hi"}))
            .await
            .unwrap()
            .text,
        "Echo: hi"
    );
    let sum = call(&server, "get-sum", serde_json::json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(sum.text.contains('5'), "{}", sum.text);
    let image = call(&server, "get-tiny-image", serde_json::json!({}))
        .await
        .unwrap();
    assert!(image.text.contains("[image: image/png, "), "{}", image.text);
    assert!(
        !image.text.contains("iVBOR"),
        "the image data leaked: {}",
        image.text
    );
    server.close().await;
}

#[tokio::test]
async fn everything_over_streamable_http() {
    let Some(bin) = installed("mcp-server-everything", "everything_over_streamable_http") else {
        return;
    };
    let port = free_port();
    let mut child = tokio::process::Command::new(&bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_listening(port).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let server = start(&http("everything", &url, &[("X-Test", "yes")]))
        .await
        .unwrap();
    assert!(server.tools().iter().any(|t| t.name == "echo"));
    assert_eq!(
        call(&server, "echo", serde_json::json!({"message": "over http"}))
            .await
            .unwrap()
            .text,
        "Echo: over http"
    );
    server.close().await;
    child.kill().await.unwrap();
}

#[tokio::test]
async fn http_headers_are_sent_and_an_endpoint_that_never_answers_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 8192];
        let mut got = Vec::new();
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = sock.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        // Never answer; the client closes the connection once it stops
        // waiting (its read bound: the longest timeout plus a margin).
        let closed = tokio::time::timeout(Duration::from_secs(20), sock.read(&mut buf)).await;
        assert!(
            closed.is_ok(),
            "the connection to a hung server stayed open"
        );
        String::from_utf8_lossy(&got).to_lowercase()
    });
    let url = format!("http://127.0.0.1:{port}/mcp");
    let spec = http("mute", &url, &[("Authorization", "Bearer tok-abcdefgh")]);
    let err = timeout(
        LIMIT,
        Server::start(
            &spec,
            Timeouts {
                start: Duration::from_secs(1),
                call: Duration::from_secs(1),
            },
        ),
    )
    .await
    .unwrap()
    .unwrap_err();
    assert_eq!(err.to_string(), "no answer to initialize within 1s");
    let head = seen.await.unwrap();
    assert!(head.starts_with("post /mcp "), "{head}");
    assert!(
        head.contains("authorization: bearer tok-abcdefgh"),
        "{head}"
    );
}

#[tokio::test]
async fn an_http_endpoint_that_refuses_or_errs_is_one_line() {
    // Nothing listens.
    let port = free_port();
    let err = start(&http("down", &format!("http://127.0.0.1:{port}/mcp"), &[]))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("initialize failed: "), "{text}");
    assert!(
        text.ends_with("Connection refused (os error 111)"),
        "{text}"
    );
    assert!(
        !text.contains("127.0.0.1"),
        "the URL is not repeated: {text}"
    );

    // An endpoint that answers 500 with a page.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let mut buf = vec![0u8; 8192];
            let _ = sock.read(&mut buf).await;
            let body = "<html>oops</html>";
            let _ = sock
                .write_all(
                    format!(
                        "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/html\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                )
                .await;
        }
    });
    let err = start(&http(
        "broken",
        &format!("http://127.0.0.1:{port}/mcp"),
        &[],
    ))
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("initialize failed: "), "{text}");
    assert_eq!(text, "initialize failed: HTTP 500");
}
