//! mm-acp: the Agent Client Protocol server editors spawn (docs/acp.md). A thin
//! front end over `mm-agent`: it answers ACP v1 over stdio, runs one
//! `Agent` per ACP session, and turns the agent's events into
//! `session/update` notifications and permission requests (its own Sink).
//!
//! It owns the protocol mapping and nothing else. It must never write to
//! stdout anything but protocol messages (logs and human output go to
//! stderr, and fd 1 itself is pointed at stderr so that nothing inherited
//! can reach the protocol), never run a turn inside the dispatch loop, and
//! never reach into a provider or a tool (docs/architecture.md#the-floors).

pub mod mcp;
pub mod models;
pub mod prompt;
pub mod server;
pub mod sink;

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CancelNotification, ForkSessionRequest, InitializeRequest, ListSessionsRequest,
    LoadSessionRequest, NewSessionRequest, PromptRequest, SessionId, SetSessionConfigOptionRequest,
    SetSessionModeRequest,
};
use agent_client_protocol::{Agent, Error, JsonRpcResponse, Lines, Responder, V1};
use futures::channel::mpsc::UnboundedSender;
use futures::{
    AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, Sink, SinkExt, Stream, StreamExt,
};

pub use server::{Options, Server};
use sink::{Connection, Outlet};

/// Serve ACP on `output`/`input` until the client closes its side. Every
/// request that may wait runs in a tokio task of its own.
pub async fn serve(
    server: Arc<Server>,
    output: impl AsyncWrite + Send + 'static,
    input: impl AsyncRead + Send + 'static,
) -> Result<(), Error> {
    let on_init = server.clone();
    let on_new = server.clone();
    let on_load = server.clone();
    let on_fork = server.clone();
    let on_list = server.clone();
    let on_prompt = server.clone();
    let on_option = server.clone();
    let on_mode = server.clone();
    let on_cancel = server;
    // One queue to stdout for the protocol library and for the answers
    // given here to requests it would answer without their id.
    let (queue, lines) = futures::channel::mpsc::unbounded::<String>();
    let writer = lines.map(Ok).forward(outgoing(output));
    let answers = queue.clone();
    let sdk_out = queue.sink_map_err(|_| std::io::Error::other("the output queue closed"));
    let connection = Agent
        .v1()
        .name("mm")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                responder.respond(on_init.initialize(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let server = on_new.clone();
                tokio::spawn(async move {
                    let result = server.new_session(request).map(|r| {
                        let id = r.session_id.clone();
                        (r, id)
                    });
                    answer_opened(&server, responder, result, &Connection(cx)).await;
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let server = on_load.clone();
                tokio::spawn(async move {
                    let id = request.session_id.clone();
                    let outlet = Arc::new(Connection(cx));
                    // The load response does not repeat the id: the request has it.
                    let result = server.load_session(request, outlet.clone()).await;
                    let result = result.map(|r| (r, id));
                    answer_opened(&server, responder, result, outlet.as_ref()).await;
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ForkSessionRequest, responder, cx| {
                let server = on_fork.clone();
                tokio::spawn(async move {
                    let result = server.fork_session(request).await.map(|r| {
                        let id = r.session_id.clone();
                        (r, id)
                    });
                    answer_opened(&server, responder, result, &Connection(cx)).await;
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                let server = on_list.clone();
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(server.list_sessions(request));
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                on_prompt.clone().prompt(request, responder, cx);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                let server = on_option.clone();
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(server.set_config_option(request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                let server = on_mode.clone();
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(server.set_mode(request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                on_cancel.cancel(notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Lines::new(sdk_out, answered(incoming(input), answers)));
    // The connection's end drops both senders: the writer then writes what
    // is queued and ends.
    let (ret, written) = futures::join!(connection, writer);
    ret.and(
        written.map_err(|e| Error::internal_error().data(serde_json::Value::from(e.to_string()))),
    )
}

/// Answer a request that opened a session (`session/new`, `session/load`,
/// `session/fork`) with its response and the session's id; once the client
/// has the answer, tell it the session's commands and models.
async fn answer_opened<T: JsonRpcResponse>(
    server: &Server,
    responder: Responder<T, V1>,
    result: Result<(T, SessionId), Error>,
    outlet: &dyn Outlet,
) {
    match result {
        Ok((response, id)) => {
            if responder.respond(response).is_ok() {
                outlet.update(&id, server.commands_update(&id));
                server.offer_models(&id, outlet).await;
            }
        }
        Err(e) => {
            let _ = responder.respond_with_error(e);
        }
    }
}

/// Each message as one line, flushed at once (the editor waits for it).
/// Once the client has closed its end (a broken pipe), what is left to send
/// is dropped: an editor that goes away is the normal end of a session,
/// and its stdin closing ends the connection cleanly (exit 0), where a
/// write error would end it as a failure.
fn outgoing(
    output: impl AsyncWrite + Send + 'static,
) -> impl Sink<String, Error = std::io::Error> + Send + 'static {
    let state = (Box::pin(output), false);
    futures::sink::unfold(state, |(mut out, gone), line: String| async move {
        if gone {
            return Ok((out, true));
        }
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        match out.write_all(&bytes).await.and(out.flush().await) {
            Ok(()) => Ok((out, false)),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                tracing::debug!("the client closed its end; dropping what is left to send");
                Ok((out, true))
            }
            Err(e) => Err(e),
        }
    })
}

/// `lines` without the requests whose id is readable but which break
/// JSON-RPC 2.0 in a way the protocol library answers with `"id": null`
/// (`"jsonrpc": "1.0"`, `"params": "str"`): those are answered here, with
/// their id, through `answers`.
fn answered(
    lines: impl Stream<Item = std::io::Result<String>> + Send + 'static,
    answers: UnboundedSender<String>,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    lines.filter_map(move |line| {
        let answer = line.as_ref().ok().and_then(|l| invalid_request_answer(l));
        let answers = answers.clone();
        async move {
            match answer {
                Some(text) => {
                    let _ = answers.unbounded_send(text);
                    None
                }
                None => Some(line),
            }
        }
    })
}

/// The -32600 answer, with its id, to a request whose id is readable but
/// whose `jsonrpc` is not "2.0" or whose `params` is neither an object nor
/// an array; `None` for anything else (the library's to answer).
fn invalid_request_answer(line: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let request = v.as_object()?;
    let id = request
        .get("id")
        .filter(|id| id.is_string() || id.is_number())?;
    request.get("method").filter(|m| m.is_string())?;
    let problem = if request.get("jsonrpc").and_then(|j| j.as_str()) != Some("2.0") {
        "\"jsonrpc\" must be \"2.0\""
    } else if request
        .get("params")
        .is_some_and(|p| !(p.is_object() || p.is_array() || p.is_null()))
    {
        "\"params\" must be an object or an array"
    } else {
        return None;
    };
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32600, "message": format!("Invalid Request: {problem}")},
    });
    Some(answer.to_string())
}

/// The client's lines without their `\n` or `\r\n`, decoded lossily: a
/// line that is not UTF-8 reaches the protocol as text that does not parse
/// and gets its -32700 answer, instead of ending the connection: the
/// agent keeps running after a malformed line.
fn incoming(
    input: impl AsyncRead + Send + 'static,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    let reader = Box::pin(futures::io::BufReader::new(input));
    futures::stream::unfold(reader, |mut reader| async move {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) => None,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                }
                Some((Ok(String::from_utf8_lossy(&line).into_owned()), reader))
            }
            Err(e) => Some((Err(e), reader)),
        }
    })
}

#[cfg(test)]
mod tests {
    use futures::{SinkExt, StreamExt};

    #[tokio::test]
    async fn lines_that_are_not_utf8_are_decoded_lossily() {
        let input: &[u8] = b"{\"a\":1}\n\xff\xfe garbage\r\n\nlast";
        let lines: Vec<String> = super::incoming(futures::io::Cursor::new(input.to_vec()))
            .map(|l| l.unwrap())
            .collect()
            .await;
        assert_eq!(lines, ["{\"a\":1}", "\u{fffd}\u{fffd} garbage", "", "last"]);
    }

    #[test]
    fn a_broken_request_with_a_readable_id_is_answered_with_it() {
        let answer = |l: &str| {
            super::invalid_request_answer(l)
                .map(|a| serde_json::from_str::<serde_json::Value>(&a).unwrap())
        };
        let a = answer(r#"{"jsonrpc":"1.0","id":7,"method":"session/list","params":{}}"#).unwrap();
        assert_eq!(a["id"], 7);
        assert_eq!(a["error"]["code"], -32600);
        assert_eq!(
            a["error"]["message"],
            "Invalid Request: \"jsonrpc\" must be \"2.0\""
        );
        let a =
            answer(r#"{"jsonrpc":"2.0","id":"x","method":"session/list","params":"str"}"#).unwrap();
        assert_eq!(a["id"], "x");
        assert_eq!(
            a["error"]["message"],
            "Invalid Request: \"params\" must be an object or an array"
        );
        // Left to the library: valid requests, no id, responses, not JSON.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"session/list"}"#,
            r#"{"jsonrpc":"1.0","method":"session/cancel","params":{}}"#,
            r#"{"jsonrpc":"1.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":3,"result":{}}"#,
            "not json",
        ] {
            assert_eq!(answer(line), None, "{line}");
        }
    }

    #[tokio::test]
    async fn each_message_is_one_line() {
        let (tx, rx) = tokio::io::duplex(1024);
        let mut sink = Box::pin(super::outgoing(
            tokio_util::compat::TokioAsyncWriteCompatExt::compat_write(tx),
        ));
        sink.send("{}".to_string()).await.unwrap();
        sink.send("[1]".to_string()).await.unwrap();
        drop(sink);
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut { rx }, &mut text)
            .await
            .unwrap();
        assert_eq!(text, "{}\n[1]\n");
    }

    #[tokio::test]
    async fn a_client_that_went_away_is_not_a_failure() {
        let (tx, rx) = tokio::io::duplex(64);
        drop(rx);
        let mut sink = Box::pin(super::outgoing(
            tokio_util::compat::TokioAsyncWriteCompatExt::compat_write(tx),
        ));
        sink.send("{}".to_string()).await.unwrap();
        sink.send("{}".to_string()).await.unwrap();
    }
}
