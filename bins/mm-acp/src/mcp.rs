//! The editor's `mcpServers` (in `session/new` and `session/load`) as the
//! agent takes them: stdio and streamable-HTTP servers, names made valid
//! and distinct. An SSE server is passed on as one, and the agent refuses
//! it in one line like any server that cannot start (`initialize` says
//! `sse: false`).

use agent_client_protocol::v1::schema::McpServer;
use mm_agent::EditorServer;
use mm_config::{McpServer as Settings, sanitize_mcp_server_name};

/// The servers to start.
pub fn editor_servers(servers: &[McpServer]) -> Vec<EditorServer> {
    let mut out: Vec<EditorServer> = Vec::new();
    for server in servers {
        let (name, settings) = match server {
            McpServer::Stdio(s) => (
                s.name.clone(),
                Settings {
                    command: Some(s.command.display().to_string()),
                    args: s.args.clone(),
                    env: s
                        .env
                        .iter()
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect(),
                    ..Settings::default()
                },
            ),
            McpServer::Http(s) => (
                s.name.clone(),
                Settings {
                    url: Some(s.url.clone()),
                    headers: s
                        .headers
                        .iter()
                        .map(|h| (h.name.clone(), h.value.clone()))
                        .collect(),
                    ..Settings::default()
                },
            ),
            McpServer::Sse(s) => (
                s.name.clone(),
                Settings {
                    kind: Some("sse".to_string()),
                    url: Some(s.url.clone()),
                    ..Settings::default()
                },
            ),
            // A transport of a newer schema: nothing mm can start.
            #[allow(unreachable_patterns)]
            _ => continue,
        };
        let base = sanitize_mcp_server_name(&name);
        let mut unique = base.clone();
        let mut n = 2;
        while out.iter().any(|e| e.name == unique) {
            unique = format!("{base}-{n}");
            n += 1;
        }
        out.push(EditorServer {
            name: unique,
            server: settings,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio,
    };

    #[test]
    fn stdio_http_and_sse_are_passed_on_with_valid_names() {
        let servers = vec![
            McpServer::Stdio(
                McpServerStdio::new("My Time", "/usr/bin/python3")
                    .args(vec!["-m".into(), "mcp_server_time".into()])
                    .env(vec![EnvVariable::new("TZ", "UTC")]),
            ),
            McpServer::Http(
                McpServerHttp::new("docs", "http://127.0.0.1:1/mcp")
                    .headers(vec![HttpHeader::new("Authorization", "Bearer x")]),
            ),
            McpServer::Http(McpServerHttp::new("docs", "http://127.0.0.1:2/mcp")),
            McpServer::Sse(McpServerSse::new("old", "http://127.0.0.1:3/sse")),
        ];
        let taken = editor_servers(&servers);
        let names: Vec<&str> = taken.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["My_Time", "docs", "docs-2", "old"]);
        assert_eq!(taken[0].server.command.as_deref(), Some("/usr/bin/python3"));
        assert_eq!(taken[0].server.args, ["-m", "mcp_server_time"]);
        assert_eq!(taken[0].server.env["TZ"], "UTC");
        assert_eq!(taken[1].server.headers["Authorization"], "Bearer x");
        assert_eq!(taken[3].server.kind.as_deref(), Some("sse"));
    }
}
