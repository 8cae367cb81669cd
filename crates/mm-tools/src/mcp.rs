//! MCP tools: every tool of every started MCP server, declared to the model
//! as `mcp__<server>__<tool>` with the server's own schema, and — when
//! their declarations are too big for the first request — one `mcp` tool
//! that lists them in a line each and hands out a tool's full declaration
//! on request.
//!
//! The servers themselves live in an [`mm_mcp::Hub`]; this module turns the
//! settings into server specs and the hub's tools into [`Tool`]s, which go
//! through the toolbox like every other tool: permission (they ask like
//! `bash`), redaction, truncation and the loop detector.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mm_config::{McpLazy, McpServer};
use mm_mcp::{Hub, ServerSpec, ToolDef, TransportSpec};
use mm_ui::ToolKind;
use serde_json::{Value, json};

use crate::tool::{Described, Plan, Tool, ToolContext, ToolOutput, ToolSpec, parse_args};

/// What the model gets when the user refuses an MCP call.
pub const REJECTED: &str = "[tool call rejected by the user]";
/// Declarations of MCP tools together larger than this make `mcp.lazy:
/// auto` declare them behind the one `mcp` tool.
pub const LAZY_ABOVE: usize = 4096;
/// The longest tool name providers accept.
const MAX_NAME: usize = 64;
/// The name of the lazy mode's one tool.
pub const LAZY_TOOL: &str = "mcp";

/// The variables a server's `env` and `headers` may read, and whether to
/// expand `${VAR}` at all (an editor's values are taken as they are).
pub struct SpecSource<'a> {
    /// Looks a variable up in mm's environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Variables a stdio server does not inherit (the provider key
    /// variables), unless its own `env` sets them.
    pub remove_env: Vec<String>,
    /// The session's root: where stdio servers run.
    pub cwd: std::path::PathBuf,
}

/// The spec of server `name` from its settings, `${VAR}` expanded when
/// `expand`; the error is one line naming the server.
pub fn server_spec(
    name: &str,
    server: &McpServer,
    source: &SpecSource<'_>,
    expand: bool,
) -> Result<ServerSpec, String> {
    let fail = |why: String| format!("mcp server {name}: {why}");
    let value = |text: &str| -> Result<String, String> {
        if expand {
            mm_mcp::expand(text, source.env).map_err(|e| fail(e.to_string()))
        } else {
            Ok(text.to_string())
        }
    };
    if server.kind.as_deref() == Some("sse") {
        return Err(fail(
            "the SSE transport is not supported; use a streamable-HTTP url".to_string(),
        ));
    }
    let transport = match (&server.command, &server.url) {
        (Some(command), _) => {
            let mut env = Vec::new();
            for (k, v) in &server.env {
                env.push((k.clone(), value(v)?));
            }
            TransportSpec::Stdio {
                command: command.clone(),
                args: server.args.clone(),
                env,
                remove_env: source.remove_env.clone(),
                cwd: source.cwd.clone(),
            }
        }
        (None, Some(url)) => {
            let mut headers = Vec::new();
            for (k, v) in &server.headers {
                headers.push((k.clone(), value(v)?));
            }
            TransportSpec::Http {
                url: url.clone(),
                headers,
            }
        }
        (None, None) => return Err(fail("no command and no url".to_string())),
    };
    Ok(ServerSpec {
        name: name.to_string(),
        transport,
    })
}

/// One MCP tool as declared: its declared name, its server, the server's
/// own tool.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    server: String,
    def: ToolDef,
}

/// The MCP tools of a session, shared by the tools built from it and the
/// agent (which learns from it what the lazy `mcp` tool revealed).
pub struct Catalog {
    hub: Hub,
    entries: Vec<Entry>,
    lazy: bool,
    /// Declared names the `mcp` tool revealed and the agent has not
    /// declared yet.
    revealed: Mutex<Vec<String>>,
    /// Every name declared or revealed so far (a second reveal of one
    /// tool declares nothing new).
    declared: Mutex<Vec<String>>,
}

impl Catalog {
    /// The tools of every ready server of `hub`; lazy per `mode`.
    pub async fn new(hub: Hub, mode: McpLazy) -> Arc<Catalog> {
        let tools = hub.tools().await;
        let mut entries: Vec<Entry> = Vec::new();
        for (server, def) in tools {
            let name = declared_name(&server, &def.name, &entries);
            entries.push(Entry { name, server, def });
        }
        let size: usize = entries.iter().map(|e| declaration_size(&spec_of(e))).sum();
        let lazy = match mode {
            McpLazy::Always => !entries.is_empty(),
            McpLazy::Never => false,
            McpLazy::Auto => size > LAZY_ABOVE,
        };
        let declared = if lazy {
            Vec::new()
        } else {
            entries.iter().map(|e| e.name.clone()).collect()
        };
        Arc::new(Catalog {
            hub,
            entries,
            lazy,
            revealed: Mutex::new(Vec::new()),
            declared: Mutex::new(declared),
        })
    }

    /// Whether the tools are declared behind the `mcp` tool.
    pub fn is_lazy(&self) -> bool {
        self.lazy
    }

    /// How many MCP tools there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every MCP tool (callable whether declared or not), then, in lazy
    /// mode, the `mcp` tool.
    pub fn tools(self: &Arc<Self>) -> Vec<Box<dyn Tool>> {
        let mut out: Vec<Box<dyn Tool>> = self
            .entries
            .iter()
            .cloned()
            .map(|entry| {
                Box::new(McpTool {
                    catalog: self.clone(),
                    entry,
                }) as Box<dyn Tool>
            })
            .collect();
        if self.lazy {
            out.push(Box::new(LazyTool {
                catalog: self.clone(),
            }));
        }
        out
    }

    /// The names to declare in the first request: every MCP tool, or only
    /// `mcp` when lazy.
    pub fn declared_first(&self) -> Vec<String> {
        if self.lazy {
            vec![LAZY_TOOL.to_string()]
        } else {
            self.entries.iter().map(|e| e.name.clone()).collect()
        }
    }

    /// The names the `mcp` tool revealed since the last call: the agent
    /// appends their declarations.
    pub fn take_revealed(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.revealed))
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// `server/tool` or a declared name, to an entry.
    fn lookup(&self, wanted: &str) -> Option<&Entry> {
        let wanted = wanted.trim();
        self.entry(wanted).or_else(|| {
            let (server, tool) = wanted.split_once('/')?;
            self.entries
                .iter()
                .find(|e| e.server == server && e.def.name == tool)
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `mcp__<server>__<tool>`, with characters providers refuse turned into
/// `_`, at most 64 characters, distinct from the names in `taken`.
fn declared_name(server: &str, tool: &str, taken: &[Entry]) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = format!("mcp__{server}__{clean}");
    let fit = |name: &str, suffix: &str| -> String {
        let room = MAX_NAME - suffix.len();
        let mut cut: String = name.chars().take(room).collect();
        cut.push_str(suffix);
        cut
    };
    let mut name = fit(&base, "");
    let mut n = 2;
    while taken.iter().any(|e| e.name == name) {
        name = fit(&base, &format!("_{n}"));
        n += 1;
    }
    name
}

fn spec_of(entry: &Entry) -> ToolSpec {
    ToolSpec {
        name: entry.name.clone(),
        description: entry.def.description.clone(),
        parameters: schema_of(&entry.def),
    }
}

/// The server's input schema, as an object schema (a server that sent
/// none, or not an object, gets the empty object schema).
fn schema_of(def: &ToolDef) -> Value {
    match &def.input_schema {
        Value::Object(map) if !map.is_empty() => def.input_schema.clone(),
        _ => json!({"type": "object", "properties": {}}),
    }
}

/// The bytes a declaration adds to a request, about: its JSON.
pub fn declaration_size(spec: &ToolSpec) -> usize {
    json!({"name": spec.name, "description": spec.description, "parameters": spec.parameters})
        .to_string()
        .len()
}

/// The first line of `text`, at most 100 characters.
fn one_line(text: &str) -> String {
    mm_ui::fold::first_line(text, 100)
}

/// The arguments, compact, at most 80 characters: for the title.
fn args_summary(args: &Value) -> String {
    match args.as_object() {
        Some(map) if map.is_empty() => String::new(),
        None => String::new(),
        Some(_) => {
            let text = args.to_string();
            if text.chars().count() > 80 {
                let mut cut: String = text.chars().take(79).collect();
                cut.push('…');
                format!(" {cut}")
            } else {
                format!(" {text}")
            }
        }
    }
}

/// One tool of one server.
struct McpTool {
    catalog: Arc<Catalog>,
    entry: Entry,
}

impl McpTool {
    fn title(&self, args: &Value) -> String {
        format!(
            "{}/{}{}",
            self.entry.server,
            self.entry.def.name,
            args_summary(args)
        )
    }
}

impl Tool for McpTool {
    fn family(&self) -> mm_ui::ToolFamily {
        mm_ui::ToolFamily::Mcp
    }

    fn spec(&self) -> ToolSpec {
        spec_of(&self.entry)
    }

    fn describe(&self, args: &Value, _ctx: &ToolContext) -> Described {
        Described {
            title: self.title(args),
            kind: ToolKind::Other,
            locations: Vec::new(),
        }
    }

    fn plan<'a>(
        &'a self,
        args: &'a Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Plan, String>> {
        Box::pin(async move {
            let mut plan = Plan::simple(self.title(args), ToolKind::Other);
            // A server can do anything: it asks like bash.
            plan.rejection = Some(REJECTED);
            plan.echo = true;
            Ok(plan)
        })
    }

    fn run<'a>(
        &'a self,
        args: &'a Value,
        _plan: Plan,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let arguments = args.as_object().cloned();
            let result = self
                .catalog
                .hub
                .call(
                    &self.entry.server,
                    &self.entry.def.name,
                    arguments,
                    &ctx.cancel,
                )
                .await;
            match result {
                Ok(out) if out.is_error => ToolOutput::fail(out.text),
                Ok(out) => ToolOutput::ok(out.text),
                Err(line) => {
                    ToolOutput::fail(format!("[error: mcp server {}: {line}]", self.entry.server))
                }
            }
        })
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LazyArgs {
    tool: String,
}

/// The lazy mode's one tool: lists every MCP tool in a line, and gives the
/// full declaration of the one asked for, which is declared from the next
/// request on.
struct LazyTool {
    catalog: Arc<Catalog>,
}

impl Tool for LazyTool {
    fn family(&self) -> mm_ui::ToolFamily {
        mm_ui::ToolFamily::Mcp
    }

    fn spec(&self) -> ToolSpec {
        let mut description = String::from(
            "Tools of MCP servers, declared on request. Call this with \
             {\"tool\": \"server/tool\"} to get that tool's description and \
             JSON schema; from the next step on it is declared as \
             mcp__<server>__<tool> and you call it directly. Tools:",
        );
        for e in &self.catalog.entries {
            description.push_str(&format!(
                "\n{}/{} — {}",
                e.server,
                e.def.name,
                one_line(&e.def.description)
            ));
        }
        ToolSpec {
            name: LAZY_TOOL.to_string(),
            description,
            parameters: json!({
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "description": "server/tool, as listed"}
                },
                "required": ["tool"]
            }),
        }
    }

    fn describe(&self, args: &Value, _ctx: &ToolContext) -> Described {
        let title = crate::tool::text_field(args, "tool")
            .unwrap_or("")
            .to_string();
        Described {
            title,
            kind: ToolKind::Read,
            locations: Vec::new(),
        }
    }

    fn plan<'a>(
        &'a self,
        args: &'a Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Plan, String>> {
        Box::pin(async move {
            let a: LazyArgs = parse_args(LAZY_TOOL, args)?;
            Ok(Plan::simple(a.tool, ToolKind::Read))
        })
    }

    fn run<'a>(
        &'a self,
        args: &'a Value,
        _plan: Plan,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let a: LazyArgs = match parse_args(LAZY_TOOL, args) {
                Ok(a) => a,
                Err(text) => return ToolOutput::fail(text),
            };
            let Some(entry) = self.catalog.lookup(&a.tool) else {
                return ToolOutput::fail(format!(
                    "no MCP tool {:?}; the tools are listed in the description of {LAZY_TOOL}",
                    a.tool
                ));
            };
            {
                let mut declared = lock(&self.catalog.declared);
                if !declared.contains(&entry.name) {
                    declared.push(entry.name.clone());
                    lock(&self.catalog.revealed).push(entry.name.clone());
                }
            }
            let spec = spec_of(entry);
            ToolOutput::ok(format!(
                "{} is declared from now on; call it directly.\ndescription: {}\nparameters: {}",
                spec.name,
                if spec.description.is_empty() {
                    "(none)"
                } else {
                    spec.description.as_str()
                },
                spec.parameters
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str) -> Entry {
        Entry {
            name: name.to_string(),
            server: "s".into(),
            def: ToolDef {
                name: "t".into(),
                description: String::new(),
                input_schema: Value::Null,
            },
        }
    }

    #[test]
    fn declared_names_are_what_providers_accept() {
        assert_eq!(
            declared_name("time", "get_current_time", &[]),
            "mcp__time__get_current_time"
        );
        assert_eq!(declared_name("ev", "get-sum", &[]), "mcp__ev__get-sum");
        assert_eq!(declared_name("ev", "a.b c", &[]), "mcp__ev__a_b_c");
        let long = declared_name("server", &"x".repeat(100), &[]);
        assert_eq!(long.len(), 64);
        let taken = [entry("mcp__ev__a_b")];
        assert_eq!(declared_name("ev", "a.b", &taken), "mcp__ev__a_b_2");
        let taken = [entry(&long)];
        let second = declared_name("server", &"x".repeat(100), &taken);
        assert_eq!(second.len(), 64);
        assert!(second.ends_with("_2"));
    }

    #[test]
    fn one_lines_and_summaries() {
        assert_eq!(one_line("\n  First line.\nSecond"), "First line.");
        assert_eq!(one_line(&"y".repeat(150)).chars().count(), 100);
        assert_eq!(args_summary(&json!({})), "");
        assert_eq!(args_summary(&json!({"a": 1})), " {\"a\":1}");
        assert_eq!(
            args_summary(&json!({"a": "z".repeat(100)})).chars().count(),
            81
        );
    }
}
