//! `kill_all` ends every stdio server of the process. A test binary of its
//! own: it would kill the servers of the other tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use mm_mcp::Server;
use support::*;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn kill_all_reaches_every_server() {
    let server = Server::start(
        &fake("victim", &["--grandchild"]),
        mm_mcp::Timeouts::default(),
    )
    .await
    .unwrap();
    let pid: u32 = server
        .call("grandchild", None, &CancellationToken::new())
        .await
        .unwrap()
        .text
        .parse()
        .unwrap();
    assert!(mm_mcp::kill_all() >= 1);
    assert!(
        eventually(|| !running(pid)).await,
        "the grandchild {pid} survived"
    );
    assert!(eventually(|| server.is_gone()).await);
}
