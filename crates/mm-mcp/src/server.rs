//! One connected MCP server: the handshake, its tools, and calls with a
//! timeout and cancellation.

use std::sync::{Arc, Once};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject,
};
use rmcp::service::{ClientInitializeError, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::McpError;
use crate::shape::{CallOutput, shape};
use crate::spec::{ServerSpec, TransportSpec};
use crate::stdio::{Diag, Proc};

/// How long a closing server may take to exit by itself before its group
/// is killed.
const CLOSE_GRACE: Duration = Duration::from_millis(500);
/// How much longer than mm's own bounds an HTTP read may stay silent.
const IDLE_MARGIN: Duration = Duration::from_secs(5);

/// The bounds a server works with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Bound on starting: process, handshake and tool list
    /// (`mcp.startTimeout`).
    pub start: Duration,
    /// Bound on one call (`mcp.toolTimeout`).
    pub call: Duration,
}

impl Default for Timeouts {
    /// 10 s to start, 60 s per call.
    fn default() -> Self {
        Timeouts {
            start: Duration::from_secs(10),
            call: Duration::from_secs(60),
        }
    }
}

/// One tool a server offers, as it declared it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// The server's own name for it.
    pub name: String,
    /// Its description (may be empty).
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: serde_json::Value,
}

/// A connected server.
pub struct Server {
    name: String,
    service: RunningService<RoleClient, ClientConfig>,
    tools: Vec<ToolDef>,
    timeouts: Timeouts,
    /// The child process, for stdio servers.
    proc: Option<Proc>,
    /// What the child told us besides its messages (stdio only).
    diag: Option<Arc<Diag>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl Server {
    /// Start the server, shake hands and list its tools, all within
    /// `timeouts.start`. A failure kills what was started.
    pub async fn start(spec: &ServerSpec, timeouts: Timeouts) -> Result<Server, McpError> {
        let timeout = timeouts.start;
        let deadline = Instant::now() + timeout;
        let info = client_config();
        let (service, proc, diag) = match &spec.transport {
            TransportSpec::Stdio {
                command,
                args,
                env,
                remove_env,
                cwd,
            } => {
                let (proc, transport) = crate::stdio::spawn(command, args, env, remove_env, cwd)?;
                let diag = proc.diag.clone();
                let served = tokio::time::timeout_at(deadline, info.serve(transport)).await;
                let service = match served {
                    Ok(Ok(service)) => service,
                    Ok(Err(e)) => {
                        let err = init_error(e, Some(&diag)).await;
                        proc.kill().await;
                        return Err(err);
                    }
                    Err(_) => {
                        let detail = diag.detail();
                        proc.kill().await;
                        return Err(McpError::StartTimeout {
                            after: timeout,
                            detail,
                        });
                    }
                };
                (service, Some(proc), Some(diag))
            }
            TransportSpec::Http { url, headers } => {
                let transport = http_transport(url, headers, timeouts)?;
                let served = tokio::time::timeout_at(deadline, info.serve(transport)).await;
                match served {
                    Ok(Ok(service)) => (service, None, None),
                    Ok(Err(e)) => return Err(init_error(e, None).await),
                    Err(_) => {
                        return Err(McpError::StartTimeout {
                            after: timeout,
                            detail: String::new(),
                        });
                    }
                }
            }
        };
        let mut server = Server {
            name: spec.name.clone(),
            service,
            tools: Vec::new(),
            timeouts,
            proc,
            diag,
        };
        let listed =
            tokio::time::timeout_at(deadline, server.service.peer().list_all_tools()).await;
        match listed {
            Ok(Ok(tools)) => {
                server.tools = tools
                    .into_iter()
                    .map(|t| ToolDef {
                        name: t.name.into_owned(),
                        description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
                        input_schema: serde_json::Value::Object((*t.input_schema).clone()),
                    })
                    .collect();
                Ok(server)
            }
            Ok(Err(e)) => {
                let err = server.call_error(e).await;
                server.close().await;
                Err(match err {
                    McpError::Rpc { .. } | McpError::Protocol(_) => {
                        McpError::Protocol(format!("tools/list failed: {err}"))
                    }
                    other => other,
                })
            }
            Err(_) => {
                let detail = server.detail();
                server.close().await;
                Err(McpError::StartTimeout {
                    after: timeout,
                    detail: format!(" (tools/list){detail}"),
                })
            }
        }
    }

    /// The name it was started under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its tools, in the order it listed them.
    pub fn tools(&self) -> &[ToolDef] {
        &self.tools
    }

    /// The server's own name and version, from its `initialize` answer.
    pub fn server_info(&self) -> Option<String> {
        let info = self.service.peer().peer_info()?;
        let imp = info.server_info.as_ref()?;
        Some(format!("{} {}", imp.name, imp.version))
    }

    /// Whether the connection ended (the process exited, the pipe closed):
    /// the next call should start the server again.
    pub fn is_gone(&self) -> bool {
        self.service.peer().is_transport_closed()
            || self.service.is_closed()
            || self.diag.as_ref().is_some_and(|d| d.exit().is_some())
    }

    /// Call `tool` with `arguments`. At the call timeout or when `cancel`
    /// fires the request is abandoned, which sends the server
    /// `notifications/cancelled`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: &CancellationToken,
    ) -> Result<CallOutput, McpError> {
        let timeout = self.timeouts.call;
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        let peer = self.service.peer();
        // Dropping the request future (timeout, cancel) sends the
        // cancellation notification; the SDK does that for abandoned calls.
        let result = tokio::select! {
            r = tokio::time::timeout(timeout, peer.call_tool(params)) => r,
            () = cancel.cancelled() => return Err(McpError::Cancelled),
        };
        match result {
            Ok(Ok(result)) => Ok(shape(&result)),
            Ok(Err(e)) => Err(self.call_error(e).await),
            Err(_) => Err(McpError::CallTimeout {
                after: timeout,
                detail: self.detail(),
            }),
        }
    }

    /// End the connection: close its input, give the process a moment to
    /// exit, then kill its whole group.
    pub async fn close(mut self) {
        let _ = self.service.close_with_timeout(CLOSE_GRACE).await;
        if let Some(proc) = self.proc.take() {
            proc.end(CLOSE_GRACE).await;
        }
    }

    fn detail(&self) -> String {
        self.diag.as_ref().map(|d| d.detail()).unwrap_or_default()
    }

    async fn call_error(&self, e: ServiceError) -> McpError {
        match e {
            ServiceError::McpError(data) => McpError::Rpc {
                code: data.code.0,
                message: data.message.into_owned(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                McpError::Gone(match &self.diag {
                    Some(d) => d.gone().await,
                    None => format!("the connection closed ({e})"),
                })
            }
            ServiceError::Timeout { timeout } => McpError::CallTimeout {
                after: timeout,
                detail: self.detail(),
            },
            ServiceError::Cancelled { .. } => McpError::Cancelled,
            other => McpError::Protocol(other.to_string()),
        }
    }
}

/// Who mm says it is, and what it can do: nothing beyond tools (no roots,
/// sampling or elicitation).
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mm", env!("CARGO_PKG_VERSION")),
    )
}

async fn init_error(e: ClientInitializeError, diag: Option<&Arc<Diag>>) -> McpError {
    match e {
        ClientInitializeError::ConnectionClosed(_)
        | ClientInitializeError::TransportError { .. }
            if diag.is_some() =>
        {
            let why = match diag {
                Some(d) => d.gone().await,
                None => String::new(),
            };
            McpError::Gone(why)
        }
        ClientInitializeError::JsonRpcError(data) => McpError::Initialize(format!(
            "the server answered error {}: {}",
            data.code.0, data.message
        )),
        ClientInitializeError::TransportError { error, .. } => {
            McpError::Initialize(without_url(&transport_text(error.error.as_ref())))
        }
        other => McpError::Initialize(other.to_string()),
    }
}

/// An error and its sources on one line: `a: b: c`.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// A transport error as one line; an HTTP client error is shown by its
/// causes (`tcp connect error: Connection refused`), which the SDK's
/// wrapper hides.
fn transport_text(e: &(dyn std::error::Error + Send + Sync + 'static)) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(inner)) => error_chain(inner),
        _ => error_chain(e),
    }
}

/// `text` without reqwest's ` for url (…)`: the URL is the user's own,
/// and may carry a credential in its query.
fn without_url(text: &str) -> String {
    let mut out = text.to_string();
    while let Some(start) = out.find(" for url (") {
        match out[start..].find(')') {
            Some(end) => out.replace_range(start..start + end + 1, ""),
            None => break,
        }
    }
    out
}

/// rustls needs a process-wide crypto provider before the first client;
/// ring builds without a C toolchain. "Already installed" is fine.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn http_transport(
    url: &str,
    headers: &[(String, String)],
    timeouts: Timeouts,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(McpError::BadSpec(format!(
            "expected an http:// or https:// address, found {url:?}"
        )));
    }
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let n = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| McpError::BadSpec(format!("{name:?} is not a valid header name")))?;
        let mut v = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| McpError::BadSpec(format!("the value of header {name} is not valid")))?;
        v.set_sensitive(true);
        custom.insert(n, v);
    }
    install_crypto_provider();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        // No answer is awaited longer than the longest bound mm keeps; the
        // SDK would otherwise keep a request to a hung server open (its
        // start-up request is not cancelled when the client gives up).
        .read_timeout(timeouts.start.max(timeouts.call) + IDLE_MARGIN)
        .tcp_nodelay(true)
        // The headers may hold a token: never follow a redirect elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| McpError::BadSpec(format!("cannot set up the HTTP client: {e}")))?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.custom_headers = custom;
    Ok(StreamableHttpClientTransport::with_client(client, config))
}
