//! MCP tools: every tool of every started MCP server, declared to the model
//! as `mcp__<server>__<tool>` with the server's own schema, and — when
//! their declarations are too big for the first request — one `mcp` tool
//! that lists them in a line each (the first few in its description, the
//! others a page or a search at a time, so that a server of thousands of
//! tools never fills the window) and hands out a tool's full declaration
//! on request.
//!
//! The servers themselves live in an [`mm_mcp::Hub`]; this module turns the
//! settings into server specs and the hub's tools into [`Tool`]s, which go
//! through the toolbox like every other tool: permission (they ask like
//! `bash`), redaction, truncation and the loop detector.

use std::sync::{Arc, Mutex};

use mm_config::{McpLazy, McpServer};
use mm_mcp::{Hub, ServerSpec, ToolDef, TransportSpec};
use mm_types::ToolKind;
use serde_json::{Value, json};

use crate::tool::{Described, Plan, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec, parse_args};

/// What the model gets when the user refuses an MCP call.
pub const REJECTED: &str = "[tool call rejected by the user]";
/// A server's tool `name`: it may do anything, so it asks like `bash` and
/// its output is echoed like a command's, live and on replay.
fn row(name: String) -> ToolRow {
    ToolRow {
        name: std::borrow::Cow::Owned(name),
        family: mm_types::ToolFamily::Mcp,
        kind: ToolKind::Other,
        title_from: None,
        echoes: true,
        changes_files: true,
        rejection: Some(REJECTED),
    }
}

/// `mcp`, the lazy mode's tool: lists tools, asks nothing, echoes nothing.
/// It changes no file itself but counts as one that may (as before rows).
pub const LAZY_ROW: ToolRow = ToolRow {
    name: std::borrow::Cow::Borrowed(LAZY_TOOL),
    family: mm_types::ToolFamily::Mcp,
    kind: ToolKind::Read,
    title_from: None,
    echoes: false,
    changes_files: true,
    rejection: None,
};

/// Declarations of MCP tools together larger than this make `mcp.lazy:
/// auto` declare them behind the one `mcp` tool.
pub const LAZY_ABOVE: usize = 4096;
/// The longest tool name providers accept.
const MAX_NAME: usize = 64;
/// The name of the lazy mode's one tool.
pub const LAZY_TOOL: &str = "mcp";
/// Characters of tool lines in the `mcp` tool's description: the first
/// tools, so the model sees what there is; it finds the others with
/// `query` or `page`. Every request carries the description, so it stays
/// small whatever the servers list.
pub const DESCRIPTION_LINES: usize = 1500;
/// Characters of tool lines in one answer of the `mcp` tool.
pub const PAGE_LINES: usize = 4000;

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
                    row: row(entry.name.clone()),
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
    mm_types::fold::first_line(text, 100)
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
    row: ToolRow,
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

#[async_trait::async_trait]
impl Tool for McpTool {
    fn row(&self) -> &ToolRow {
        &self.row
    }

    fn spec(&self) -> ToolSpec {
        spec_of(&self.entry)
    }

    fn describe(&self, args: &Value, _ctx: &ToolContext) -> Described {
        Described {
            title: self.title(args),
            kind: self.row.kind,
            locations: Vec::new(),
        }
    }

    async fn plan(&self, args: &Value, _ctx: &ToolContext) -> Result<Plan, String> {
        Ok(self.row.plan(self.title(args)))
    }

    async fn run(&self, args: &Value, _plan: Plan, ctx: &ToolContext) -> ToolOutput {
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
            Ok(out) => {
                let shown = format!("{}/{}", self.entry.server, self.entry.def.name);
                with_pictures(out, &shown).await
            }
            Err(line) => {
                ToolOutput::fail(format!("[error: mcp server {}: {line}]", self.entry.server))
            }
        }
    }
}

/// A result's text with its pictures as the model's images, bounded and
/// scaled like `read_file`'s; a picture that cannot be read adds a line
/// saying why instead.
async fn with_pictures(out: mm_mcp::CallOutput, shown: &str) -> ToolOutput {
    let mut output = ToolOutput::ok(out.text);
    for picture in out.pictures {
        let shown = shown.to_owned();
        let loaded = tokio::task::spawn_blocking(move || {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(picture.data.trim())
                .map_err(|e| format!("{shown} is not valid base64: {e}"))?;
            crate::image::from_bytes(&bytes, &shown)
        })
        .await;
        match loaded {
            Ok(Ok(image)) => output.images.push(image),
            Ok(Err(why)) => output.text.push_str(&format!("\n[not shown: {why}]")),
            Err(e) => output.text.push_str(&format!("\n[not shown: {e}]")),
        }
    }
    output
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LazyArgs {
    /// `server/tool`: reveal that tool.
    #[serde(default)]
    tool: Option<String>,
    /// Words every listed tool's name or description holds.
    #[serde(default)]
    query: Option<String>,
    /// Which page of the listing, from 1.
    #[serde(default)]
    page: Option<u64>,
}

/// One tool in a line: `server/tool — first line of its description`.
fn tool_line(e: &Entry) -> String {
    format!(
        "{}/{} — {}",
        e.server,
        e.def.name,
        one_line(&e.def.description)
    )
}

/// Whether `e` holds every word of `words` (lower-cased), in its server,
/// name or description.
fn matches(e: &Entry, words: &[String]) -> bool {
    let text = format!("{}/{} {}", e.server, e.def.name, e.def.description).to_lowercase();
    words.iter().all(|w| text.contains(w.as_str()))
}

/// `lines` cut into pages of at most `budget` characters each (a line
/// longer than that is a page of its own).
fn pages(lines: &[String], budget: usize) -> Vec<&[String]> {
    let mut out = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, line) in lines.iter().enumerate() {
        let n = line.chars().count() + 1;
        if i > start && size + n > budget {
            out.push(&lines[start..i]);
            start = i;
            size = 0;
        }
        size += n;
    }
    if start < lines.len() {
        out.push(&lines[start..]);
    }
    out
}

/// The description's list: the first tools within [`DESCRIPTION_LINES`],
/// then how to reach the rest.
fn description_list(entries: &[Entry]) -> String {
    let lines: Vec<String> = entries.iter().map(tool_line).collect();
    let first = pages(&lines, DESCRIPTION_LINES)
        .first()
        .map_or(0, |p| p.len());
    let mut out = String::new();
    for line in &lines[..first] {
        out.push('\n');
        out.push_str(line);
    }
    if first < lines.len() {
        out.push_str(&format!(
            "\n… and {} more: call with {{\"query\": \"words\"}} to find tools by name \
             and description, or {{\"page\": 2}} for the next ones",
            lines.len() - first
        ));
    }
    out
}

/// One page of the tools that hold every word of `query`.
fn listing(entries: &[Entry], query: Option<&str>, page: u64) -> Result<String, String> {
    let words: Vec<String> = query
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    let lines: Vec<String> = entries
        .iter()
        .filter(|e| matches(e, &words))
        .map(tool_line)
        .collect();
    let matching = if words.is_empty() {
        String::new()
    } else {
        format!(" matching {:?}", words.join(" "))
    };
    if lines.is_empty() {
        return Ok(format!(
            "no MCP tool{matching}; call {LAZY_TOOL} with other words, or with {{}} to list them all"
        ));
    }
    let all = pages(&lines, PAGE_LINES);
    let index = usize::try_from(page.max(1) - 1).unwrap_or(usize::MAX);
    let Some(this) = all.get(index) else {
        return Err(format!(
            "page {page} is past the end: {} page(s) of MCP tools{matching}",
            all.len()
        ));
    };
    let first = all[..index].iter().map(|p| p.len()).sum::<usize>() + 1;
    let mut out = format!(
        "MCP tools {first}–{} of {}{matching}:",
        first + this.len() - 1,
        lines.len()
    );
    for line in *this {
        out.push('\n');
        out.push_str(line);
    }
    if index + 1 < all.len() {
        let query = if words.is_empty() {
            String::new()
        } else {
            format!(", \"query\": {:?}", words.join(" "))
        };
        out.push_str(&format!(
            "\nMore: call {LAZY_TOOL} with {{\"page\": {}{query}}}.",
            index + 2
        ));
    }
    out.push_str(&format!(
        "\nCall {LAZY_TOOL} with {{\"tool\": \"server/tool\"}} to use one."
    ));
    Ok(out)
}

/// The lazy mode's one tool: lists the MCP tools in a line each (the
/// first ones in its description, the others by page or search), and
/// gives the full declaration of the one asked for, which is declared
/// from the next request on.
struct LazyTool {
    catalog: Arc<Catalog>,
}

#[async_trait::async_trait]
impl Tool for LazyTool {
    fn row(&self) -> &ToolRow {
        &LAZY_ROW
    }

    fn spec(&self) -> ToolSpec {
        let mut description = String::from(
            "Tools of MCP servers, declared on request. Call this with \
             {\"tool\": \"server/tool\"} to get that tool's description and \
             JSON schema; from the next step on it is declared as \
             mcp__<server>__<tool> and you call it directly. Tools:",
        );
        description.push_str(&description_list(&self.catalog.entries));
        ToolSpec {
            name: LAZY_TOOL.to_string(),
            description,
            parameters: json!({
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "description": "server/tool, as listed: declare it"},
                    "query": {"type": "string", "description": "words to find tools by (name and description)"},
                    "page": {"type": "integer", "minimum": 1, "description": "page of the list (or of the tools found)"}
                }
            }),
        }
    }

    fn describe(&self, args: &Value, _ctx: &ToolContext) -> Described {
        let title = lazy_title(args);
        Described {
            title,
            kind: LAZY_ROW.kind,
            locations: Vec::new(),
        }
    }

    async fn plan(&self, args: &Value, _ctx: &ToolContext) -> Result<Plan, String> {
        let _: LazyArgs = parse_args(LAZY_TOOL, args)?;
        Ok(LAZY_ROW.plan(lazy_title(args)))
    }

    async fn run(&self, args: &Value, _plan: Plan, _ctx: &ToolContext) -> ToolOutput {
        let a: LazyArgs = match parse_args(LAZY_TOOL, args) {
            Ok(a) => a,
            Err(text) => return ToolOutput::fail(text),
        };
        let Some(wanted) = a.tool.filter(|t| !t.trim().is_empty()) else {
            return match listing(
                &self.catalog.entries,
                a.query.as_deref(),
                a.page.unwrap_or(1),
            ) {
                Ok(text) => ToolOutput::ok(text),
                Err(text) => ToolOutput::fail(text),
            };
        };
        let Some(entry) = self.catalog.lookup(&wanted) else {
            return ToolOutput::fail(format!(
                "no MCP tool {wanted:?}; find one with {LAZY_TOOL} {{\"query\": \"words\"}}"
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
    }
}

/// The `mcp` call in a few words: the tool asked for, the search, or
/// the page.
fn lazy_title(args: &Value) -> String {
    let field = |k: &str| crate::tool::text_field(args, k).filter(|v| !v.trim().is_empty());
    if let Some(tool) = field("tool") {
        return tool.to_string();
    }
    let page = args.get("page").and_then(Value::as_u64).unwrap_or(1);
    match field("query") {
        Some(q) if page > 1 => format!("find {q:?}, page {page}"),
        Some(q) => format!("find {q:?}"),
        None => format!("list, page {page}"),
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

    /// A server of `n` tools, `tool_1`…, and one `weather` tool last.
    fn many(n: usize) -> Vec<Entry> {
        let mut out: Vec<Entry> = (1..=n)
            .map(|i| Entry {
                name: format!("mcp__big__tool_{i}"),
                server: "big".into(),
                def: ToolDef {
                    name: format!("tool_{i}"),
                    description: format!("Does thing {i}, the way a generated tool does.\nMore."),
                    input_schema: Value::Null,
                },
            })
            .collect();
        out.push(Entry {
            name: "mcp__big__weather".into(),
            server: "big".into(),
            def: ToolDef {
                name: "weather".into(),
                description: "The Weather of a city".into(),
                input_schema: Value::Null,
            },
        });
        out
    }

    #[test]
    fn the_description_lists_the_first_tools_within_its_budget() {
        let few = many(3);
        assert_eq!(
            description_list(&few),
            "\nbig/tool_1 — Does thing 1, the way a generated tool does.\
             \nbig/tool_2 — Does thing 2, the way a generated tool does.\
             \nbig/tool_3 — Does thing 3, the way a generated tool does.\
             \nbig/weather — The Weather of a city"
        );
        let list = description_list(&many(2000));
        assert!(list.chars().count() < DESCRIPTION_LINES + 200, "{list}");
        assert!(list.starts_with("\nbig/tool_1 — "), "{list}");
        assert!(
            list.ends_with(
                " more: call with {\"query\": \"words\"} to find tools by name and \
                 description, or {\"page\": 2} for the next ones"
            ),
            "{list}"
        );
    }

    #[test]
    fn pages_and_searches_are_bounded() {
        let all = many(2000);
        let first = listing(&all, None, 1).unwrap();
        assert!(first.starts_with("MCP tools 1–"), "{first}");
        assert!(first.contains(" of 2001:\nbig/tool_1 — "), "{first}");
        assert!(
            first.contains("\nMore: call mcp with {\"page\": 2}."),
            "{first}"
        );
        assert!(first.chars().count() < PAGE_LINES + 300, "{}", first.len());
        // Every tool is on exactly one page.
        let mut seen = 0;
        for page in 1.. {
            let Ok(text) = listing(&all, None, page) else {
                break;
            };
            seen += text.lines().filter(|l| l.starts_with("big/")).count();
        }
        assert_eq!(seen, 2001);
        assert!(
            listing(&all, None, 999)
                .unwrap_err()
                .starts_with("page 999 is past the end: ")
        );
        // A search: every word, any case, in the name or the description.
        let found = listing(&all, Some("WEATHER city"), 1).unwrap();
        assert_eq!(
            found,
            "MCP tools 1–1 of 1 matching \"weather city\":\nbig/weather — The Weather of a city\
             \nCall mcp with {\"tool\": \"server/tool\"} to use one."
        );
        let found = listing(&all, Some("tool_19"), 1).unwrap();
        assert!(found.contains(" of 111 matching \"tool_19\":"), "{found}");
        assert!(
            found.contains("\nMore: call mcp with {\"page\": 2, \"query\": \"tool_19\"}."),
            "{found}"
        );
        assert!(
            listing(&all, Some("snow"), 1)
                .unwrap()
                .starts_with("no MCP tool matching \"snow\"; "),
        );
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
