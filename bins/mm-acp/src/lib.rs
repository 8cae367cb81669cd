//! mm-acp: the Agent Client Protocol server editors spawn (acp.md). A thin
//! front end over `mm-agent`: it answers ACP v1 over stdio, runs one
//! `Agent` per ACP session, and turns the agent's events into
//! `session/update` notifications and permission requests (its own Sink).
//!
//! It owns the protocol mapping and nothing else. It must never write to
//! stdout anything but protocol messages (logs and human output go to
//! stderr, and fd 1 itself is pointed at stderr so that nothing inherited
//! can reach the protocol), never run a turn inside the dispatch loop, and
//! never reach into a provider or a tool (crates.md).

pub mod prompt;
pub mod replay;
pub mod server;
pub mod sink;

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CancelNotification, InitializeRequest, ListSessionsRequest, LoadSessionRequest,
    NewSessionRequest, PromptRequest,
};
use agent_client_protocol::{Agent, Error, Lines};
use futures::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, Sink, Stream};

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
    let on_list = server.clone();
    let on_prompt = server.clone();
    let on_cancel = server;
    Agent
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
                    match server.new_session(request) {
                        Ok(response) => {
                            let id = response.session_id.clone();
                            if responder.respond(response).is_ok() {
                                Connection(cx).update(&id, server.commands_update(&id));
                            }
                        }
                        Err(e) => {
                            let _ = responder.respond_with_error(e);
                        }
                    }
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
                    let outlet = Connection(cx);
                    match server.load_session(request, &outlet).await {
                        Ok(response) => {
                            if responder.respond(response).is_ok() {
                                outlet.update(&id, server.commands_update(&id));
                            }
                        }
                        Err(e) => {
                            let _ = responder.respond_with_error(e);
                        }
                    }
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
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                on_cancel.cancel(notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Lines::new(outgoing(output), incoming(input)))
        .await
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

/// The client's lines without their `\n` or `\r\n`, decoded lossily: a
/// line that is not UTF-8 reaches the protocol as text that does not parse
/// and gets its -32700 answer, instead of ending the connection (acp.md:
/// the agent keeps running after a malformed line).
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
