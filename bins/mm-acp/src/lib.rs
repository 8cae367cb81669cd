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
use agent_client_protocol::{Agent, ByteStreams, Error};
use futures::{AsyncRead, AsyncWrite};

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
                                Connection(cx).update(&id, server::commands_update());
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
                                outlet.update(&id, server::commands_update());
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
        .connect_to(ByteStreams::new(output, input))
        .await
}
