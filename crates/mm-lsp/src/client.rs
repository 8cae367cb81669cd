//! The client a session holds: the servers found on the PATH, started on
//! first use for a file's extension, and each action from the query to the
//! reference's text.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use lsp_types::request::{DocumentSymbolRequest, GotoDefinition, HoverRequest, References, Rename};
use lsp_types::{
    DocumentSymbolParams, GotoDefinitionParams, GotoDefinitionResponse, HoverParams, Location,
    PartialResultParams, Position, ReferenceContext, ReferenceParams, RenameParams,
    TextDocumentIdentifier, TextDocumentPositionParams, WorkDoneProgressParams,
};
use tokio::sync::Mutex;

use crate::format::{self, Sources, WireLoc, display_path};
use crate::server::{Conn, REQUEST_TIMEOUT, RequestError, file_url};
use crate::text::{Spot, line_chars, lines, occurrences, utf16_of_char_col};
use crate::{Action, DIAGNOSTICS_WAIT, LspError, Query, RENAME_NEEDS_NEW_NAME, ServerConfig};

/// Occurrences of a symbol tried before giving up.
const MAX_TRIES: usize = 10;
/// A new server's first request waits for this much quiet (no progress)...
const SETTLE_QUIET: Duration = Duration::from_millis(400);
/// ...but never longer than this.
const SETTLE_LIMIT: Duration = Duration::from_secs(20);
/// An empty answer from a busy server is asked again once it is idle; all
/// such waits of one call together stay under this.
const BUSY_WAIT: Duration = Duration::from_secs(15);
/// An empty answer right after a change is asked again after these pauses:
/// servers may answer from the old state while they rebuild (clangd's
/// preamble after a header changed).
const RETRY_PAUSES: [Duration; 3] = [
    Duration::from_millis(300),
    Duration::from_millis(700),
    Duration::from_millis(1500),
];

/// The diagnostics wait of a server that has not published anything yet.
const STARTUP_DIAGNOSTICS_WAIT: Duration = Duration::from_secs(20);
/// How long a rename waits for the server to take the new contents in.
const RENAME_SETTLE: Duration = Duration::from_secs(3);
/// A change this recent makes an empty answer suspect.
const RECENT_CHANGE: Duration = Duration::from_secs(5);

/// Whether to ask again after an empty round `round` (0-based), waiting
/// first as the server's state says. `busy_until` bounds all the waits for
/// a busy server within one call.
async fn another_round(conn: &Conn, round: usize, busy_until: tokio::time::Instant) -> bool {
    if round >= RETRY_PAUSES.len() {
        return false;
    }
    if conn.busy() {
        let left = busy_until.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        conn.wait_idle(left).await;
        return true;
    }
    if conn.changed_within(RECENT_CHANGE) {
        tokio::time::sleep(RETRY_PAUSES[round]).await;
        return true;
    }
    false
}

/// True when a failed request means the other spots need not be tried:
/// the server is gone, or it did not answer in time.
fn hopeless(conn: &Conn, error: &RequestError) -> bool {
    !conn.connected() || error.ends_the_call()
}

/// The language-server client of one session (one project root).
pub struct Client {
    root: PathBuf,
    servers: Vec<ServerConfig>,
    warnings: Vec<String>,
    /// Running servers by their index in `servers`. One call at a time: a
    /// call holds the lock from sync to answer, so documents and answers
    /// never interleave.
    conns: Mutex<HashMap<usize, Conn>>,
}

/// The file a call is about.
struct Target {
    abs: PathBuf,
    display: String,
    text: String,
    ext: String,
    server: usize,
}

/// A rename computed but not yet written: what a front end shows while it
/// asks, and what [`Client::apply_rename`] writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenamePlan {
    server: usize,
    /// The identifier every occurrence becomes.
    pub new_name: String,
    /// Sorted by displayed path.
    pub files: Vec<RenameFile>,
}

/// One file of a rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenameFile {
    /// The file's absolute path.
    pub path: PathBuf,
    /// Relative inside the project.
    pub display: String,
    /// The whole file before the rename.
    pub old_text: String,
    /// The whole file after the rename.
    pub new_text: String,
    /// How many of the server's edits fall in this file.
    pub edits: usize,
}

impl RenamePlan {
    /// How many edits the rename makes, over every file.
    pub fn edit_count(&self) -> usize {
        self.files.iter().map(|f| f.edits).sum()
    }
}

/// True when `command` can be run: a path to an executable file, or a name
/// found in one of the `PATH` directories.
pub fn on_path(command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        return runnable(Path::new(command));
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| runnable(&dir.join(command))))
}

/// `.` and `..` removed without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The language id a server expects in `didOpen`.
fn language_id(ext: &str) -> &str {
    match ext {
        ".rs" => "rust",
        ".go" => "go",
        ".c" | ".h" => "c",
        ".cc" | ".cpp" | ".cxx" | ".hpp" | ".hh" | ".hxx" => "cpp",
        ".py" | ".pyi" => "python",
        ".ts" => "typescript",
        ".tsx" => "typescriptreact",
        ".js" | ".mjs" | ".cjs" => "javascript",
        ".jsx" => "javascriptreact",
        ".java" => "java",
        ".rb" => "ruby",
        ".sh" | ".bash" => "shellscript",
        other => other.trim_start_matches('.'),
    }
}

fn failed(server: &str, action: Action, why: &dyn std::fmt::Display) -> String {
    format!("[lsp: {server}: {action} failed: {why}]")
}

fn locations_of(resp: Option<GotoDefinitionResponse>) -> Vec<WireLoc> {
    let from_loc = |l: Location| {
        l.uri.to_file_path().ok().map(|path| WireLoc {
            path,
            line: l.range.start.line,
            utf16: l.range.start.character,
        })
    };
    match resp {
        None => Vec::new(),
        Some(GotoDefinitionResponse::Scalar(l)) => from_loc(l).into_iter().collect(),
        Some(GotoDefinitionResponse::Array(ls)) => ls.into_iter().filter_map(from_loc).collect(),
        Some(GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .filter_map(|l| {
                l.target_uri.to_file_path().ok().map(|path| WireLoc {
                    path,
                    line: l.target_selection_range.start.line,
                    utf16: l.target_selection_range.start.character,
                })
            })
            .collect(),
    }
}

impl Client {
    /// A client for the servers whose command is on the `PATH`; the others
    /// give the reference's warning (see [`Client::warnings`]). Nothing is
    /// started yet.
    pub fn new(servers: Vec<ServerConfig>, root: PathBuf) -> Client {
        let root = root.canonicalize().unwrap_or(root);
        let mut found = Vec::new();
        let mut warnings = Vec::new();
        for server in servers {
            if on_path(&server.command) {
                found.push(server);
            } else {
                warnings.push(crate::not_found_warning(&server));
            }
        }
        Client {
            root,
            servers: found,
            warnings,
            conns: Mutex::new(HashMap::new()),
        }
    }

    /// One warning per listed server that is not on the `PATH`, for the
    /// front end to print.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The servers found, in configuration order.
    pub fn servers(&self) -> &[ServerConfig] {
        &self.servers
    }

    /// The project root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `clangd (.c .h), pyright (.py)`.
    pub fn servers_line(&self) -> String {
        self.servers
            .iter()
            .map(ServerConfig::label)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Process id of a running server, by name (for tests and `/status`).
    pub async fn server_pid(&self, name: &str) -> Option<u32> {
        let mut conns = self.conns.lock().await;
        let idx = self.servers.iter().position(|s| s.name == name)?;
        let conn = conns.get_mut(&idx)?;
        if conn.is_alive() { conn.pid() } else { None }
    }

    /// `shutdown`, `exit`, then the process, for every running server.
    pub async fn shutdown_all(&self) {
        let conns: Vec<Conn> = self.conns.lock().await.drain().map(|(_, c)| c).collect();
        futures::future::join_all(conns.into_iter().map(Conn::shutdown)).await;
    }

    /// Run one call: its answer, or why it failed. A rename is written
    /// with [`Client::apply_rename`]'s plain writer; the `lsp` tool plans
    /// and writes its renames itself.
    pub async fn call(&self, query: &Query) -> Result<String, LspError> {
        if query.action == Action::Rename {
            let plan = self.prepare_rename(query).await?;
            return self.apply_rename(&plan).await;
        }
        Ok(self.navigate(query).await?)
    }

    /// The file of a query: resolved, read, and matched with a server.
    fn target(&self, path: &str) -> Result<Target, String> {
        let given = Path::new(path);
        let abs = normalize(&if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        });
        let ext = abs
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let server = self
            .servers
            .iter()
            .position(|s| s.extensions.contains(&ext))
            .or_else(|| {
                self.servers
                    .iter()
                    .position(|s| s.extensions.iter().any(|e| e.eq_ignore_ascii_case(&ext)))
            })
            .filter(|_| !ext.is_empty());
        let Some(server) = server else {
            return Err(format!(
                "[lsp: no language server for \"{path}\" — configured: {}]",
                self.servers_line()
            ));
        };
        let abs = abs.canonicalize().unwrap_or(abs);
        let display = display_path(&self.root, &abs);
        if abs.is_dir() {
            return Err(format!("[lsp: {display} is a directory]"));
        }
        let text = match std::fs::read(&abs) {
            Ok(bytes) => String::from_utf8(bytes)
                .map_err(|_| format!("[lsp: {display} is not a text file]"))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("[lsp: {display} does not exist]"));
            }
            Err(e) => return Err(format!("[lsp: cannot read {display}: {e}]")),
        };
        Ok(Target {
            abs,
            display,
            text,
            ext,
            server,
        })
    }

    /// The positions to try, in order. `qualifier` is what the model wrote
    /// before the identifier ([`crate::text::qualifier`]).
    fn spots(&self, t: &Target, q: &Query, qualifier: &str) -> Result<Vec<Spot>, String> {
        let file_lines = lines(&t.text);
        if q.line as usize > file_lines.len() {
            return Err(format!(
                "[lsp: line {} is past the end of {} ({} lines)]",
                q.line,
                t.display,
                file_lines.len()
            ));
        }
        let only_line = (q.line > 0).then(|| q.line as usize - 1);
        if !q.symbol.is_empty() {
            let mut found = occurrences(&t.text, &q.symbol, qualifier, only_line, &t.ext);
            if found.is_empty() {
                return Err(match only_line {
                    Some(_) => format!(
                        "[lsp: \"{}\" not found on line {} of {}]",
                        q.symbol, q.line, t.display
                    ),
                    None => format!("[lsp: \"{}\" not found in {}]", q.symbol, t.display),
                });
            }
            found.truncate(MAX_TRIES);
            return Ok(found);
        }
        if q.line > 0 && q.column > 0 {
            let line = file_lines[q.line as usize - 1];
            let chars = line_chars(line);
            if q.column as usize > chars.max(1) {
                return Err(format!(
                    "[lsp: column {} is past the end of line {} ({} characters)]",
                    q.column, q.line, chars
                ));
            }
            return Ok(vec![Spot {
                line: q.line as usize - 1,
                col: q.column as usize - 1,
            }]);
        }
        Err(format!(
            "[lsp: {} needs a symbol (or a line and a column) in {}]",
            q.action, t.display
        ))
    }

    /// The running server for `idx`, started (again) when needed.
    async fn conn<'a>(
        &self,
        conns: &'a mut HashMap<usize, Conn>,
        idx: usize,
    ) -> Result<&'a mut Conn, String> {
        if conns.get_mut(&idx).is_some_and(|c| !c.is_alive()) {
            // Died since the last call: dropping it kills what is left.
            conns.remove(&idx);
        }
        match conns.entry(idx) {
            std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(e) => {
                let cfg = &self.servers[idx];
                let conn = Conn::start(cfg, &self.root)
                    .await
                    .map_err(|err| format!("[lsp: {}: {err}]", cfg.name))?;
                Ok(e.insert(conn))
            }
        }
    }

    /// Bring every document the server has open up to date with the disk
    /// (edits made by other tools), then the target itself.
    fn sync_all(conn: &mut Conn, t: &Target) -> Result<crate::server::Synced, String> {
        for (path, ext) in conn.open_paths() {
            if path != t.abs
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                conn.sync(&path, &text, language_id(&ext))?;
            }
        }
        conn.sync(&t.abs, &t.text, language_id(&t.ext))
    }

    async fn navigate(&self, raw: &Query) -> Result<String, String> {
        let q = &raw.cleaned();
        let t = self.target(&q.path)?;
        let spots = if q.action.needs_position() {
            self.spots(&t, q, crate::text::qualifier(&raw.symbol, &q.symbol))?
        } else {
            Vec::new()
        };
        // A server found dead during the call (it crashed just before, or
        // while answering) is started again and asked once more.
        for attempt in 0..2 {
            let mut conns = self.conns.lock().await;
            let conn = self.conn(&mut conns, t.server).await?;
            let out = self.navigate_on(conn, q, &t, &spots).await;
            if attempt == 0 && !conn.is_alive() {
                continue;
            }
            return out;
        }
        Err(format!(
            "[lsp: {}: the server stopped]",
            self.servers[t.server].name
        ))
    }

    async fn navigate_on(
        &self,
        conn: &mut Conn,
        q: &Query,
        t: &Target,
        spots: &[Spot],
    ) -> Result<String, String> {
        let name = conn.name.clone();
        let synced = Self::sync_all(conn, t).map_err(|e| failed(&name, q.action, &e))?;
        let doc = TextDocumentIdentifier {
            uri: file_url(&t.abs)?,
        };
        match q.action {
            Action::Diagnostics => Ok(self.diagnostics(conn, t, synced).await),
            Action::Symbols => {
                conn.settle(SETTLE_QUIET, SETTLE_LIMIT).await;
                let params = DocumentSymbolParams {
                    text_document: doc,
                    work_done_progress_params: WorkDoneProgressParams::default(),
                    partial_result_params: PartialResultParams::default(),
                };
                let resp = conn
                    .request::<DocumentSymbolRequest>(params, REQUEST_TIMEOUT)
                    .await
                    .map_err(|e| failed(&name, q.action, &e))?;
                let rows = resp.map(|r| format::symbols(&r)).unwrap_or_default();
                if rows.is_empty() {
                    Ok(format!("no symbols in {}", t.display))
                } else {
                    Ok(rows.join("\n"))
                }
            }
            _ => {
                conn.settle(SETTLE_QUIET, SETTLE_LIMIT).await;
                self.at_spots(conn, t, q, spots, doc).await
            }
        }
    }

    /// Definition, references or hover: each spot in turn until the server
    /// answers with something. An empty round from a busy server, or right
    /// after a change, is tried again (see [`another_round`]).
    async fn at_spots(
        &self,
        conn: &mut Conn,
        t: &Target,
        q: &Query,
        spots: &[Spot],
        doc: TextDocumentIdentifier,
    ) -> Result<String, String> {
        let file_lines = lines(&t.text);
        let position = |s: &Spot| {
            let line = file_lines.get(s.line).copied().unwrap_or("");
            Position::new(s.line as u32, utf16_of_char_col(line, s.col))
        };
        let mut errors = Vec::new();
        let busy_until = tokio::time::Instant::now() + BUSY_WAIT;
        for round in 0.. {
            if round > 0 && !another_round(conn, round - 1, busy_until).await {
                break;
            }
            errors.clear();
            for spot in spots {
                let at = TextDocumentPositionParams {
                    text_document: doc.clone(),
                    position: position(spot),
                };
                let answer = match q.action {
                    Action::Definition => self.definition(conn, at).await,
                    Action::References => self.references(conn, at).await,
                    _ => self.hover(conn, at).await,
                };
                match answer {
                    Ok(Some(text)) => return Ok(text),
                    Ok(None) => {}
                    Err(e) if hopeless(conn, &e) => return Err(failed(&conn.name, q.action, &e)),
                    Err(e) => errors.push(e),
                }
            }
        }
        if errors.len() == spots.len()
            && let Some(e) = errors.first()
        {
            return Err(failed(&conn.name, q.action, e));
        }
        let first = spots.first().copied().unwrap_or(Spot { line: 0, col: 0 });
        let what = match q.action {
            Action::Definition => "definition",
            Action::References => "references",
            _ => "hover information",
        };
        Err(format!(
            "[lsp: no {what} found for the symbol at {}:{}:{}]",
            t.display,
            first.line + 1,
            first.col + 1
        ))
    }

    async fn definition(
        &self,
        conn: &Conn,
        at: TextDocumentPositionParams,
    ) -> Result<Option<String>, RequestError> {
        let params = GotoDefinitionParams {
            text_document_position_params: at,
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
        };
        let resp = conn
            .request::<GotoDefinition>(params, REQUEST_TIMEOUT)
            .await?;
        let locs = locations_of(resp);
        if locs.is_empty() {
            return Ok(None);
        }
        let rows = format::locations(&self.root, &locs, &mut Sources::default());
        Ok(Some(rows.join("\n")))
    }

    async fn references(
        &self,
        conn: &Conn,
        at: TextDocumentPositionParams,
    ) -> Result<Option<String>, RequestError> {
        let params = ReferenceParams {
            text_document_position: at,
            work_done_progress_params: WorkDoneProgressParams::default(),
            partial_result_params: PartialResultParams::default(),
            context: ReferenceContext {
                include_declaration: true,
            },
        };
        let resp = conn.request::<References>(params, REQUEST_TIMEOUT).await?;
        let locs: Vec<WireLoc> = resp
            .unwrap_or_default()
            .into_iter()
            .filter_map(|l| {
                l.uri.to_file_path().ok().map(|path| WireLoc {
                    path,
                    line: l.range.start.line,
                    utf16: l.range.start.character,
                })
            })
            .collect();
        if locs.is_empty() {
            return Ok(None);
        }
        let rows = format::locations(&self.root, &locs, &mut Sources::default());
        Ok(Some(format!(
            "{} reference(s):\n{}",
            rows.len(),
            rows.join("\n")
        )))
    }

    async fn hover(
        &self,
        conn: &Conn,
        at: TextDocumentPositionParams,
    ) -> Result<Option<String>, RequestError> {
        let params = HoverParams {
            text_document_position_params: at,
            work_done_progress_params: WorkDoneProgressParams::default(),
        };
        let resp = conn
            .request::<HoverRequest>(params, REQUEST_TIMEOUT)
            .await?;
        Ok(resp.and_then(|h| format::hover(&h.contents)))
    }

    /// The file was synced; wait (up to 3 s) for the server's publication
    /// for this content, unless it already spoke after the last change.
    async fn diagnostics(&self, conn: &Conn, t: &Target, synced: crate::server::Synced) -> String {
        let fresh = |p: &crate::server::Published| {
            p.seq > synced.synced_seq && p.version.is_none_or(|v| v >= synced.version)
        };
        let render = |items: &[lsp_types::Diagnostic], suffix: &str| {
            let rows = format::diagnostics(&t.display, &t.text, items);
            if rows.is_empty() {
                format!("no diagnostics: {} is clean{suffix}", t.display)
            } else {
                format!(
                    "{} diagnostic(s) in {}{suffix}:\n{}",
                    rows.len(),
                    t.display,
                    rows.join("\n")
                )
            }
        };
        if !synced.sent
            && let Some(p) = conn.last_published(&t.abs).filter(|p| fresh(p))
        {
            return render(&p.items, " (as last published)");
        }
        // A server that never published gets its start-up time on top.
        let limit = if conn.published_any() {
            DIAGNOSTICS_WAIT
        } else {
            STARTUP_DIAGNOSTICS_WAIT
        };
        match conn
            .wait_diagnostics(&t.abs, synced.synced_seq, synced.version, limit)
            .await
        {
            Some(p) => render(&p.items, ""),
            None => format!(
                "no diagnostics received for {} within {}s ({} published nothing for this version of the file; it may still be starting or indexing — try again)",
                t.display,
                limit.as_secs(),
                conn.name
            ),
        }
    }

    /// Ask the server for a rename and compute the new contents, without
    /// writing anything (the preview shown before permission).
    pub async fn prepare_rename(&self, query: &Query) -> Result<RenamePlan, LspError> {
        Ok(self.plan_rename(query).await?)
    }

    async fn plan_rename(&self, query: &Query) -> Result<RenamePlan, String> {
        let q = query.cleaned();
        if !query.new_name.trim().is_empty()
            && let Some(problem) = crate::text::new_name_problem(&query.new_name, &q.new_name)
        {
            return Err(problem);
        }
        if q.new_name.is_empty() {
            return Err(RENAME_NEEDS_NEW_NAME.to_string());
        }
        let t = self.target(&q.path)?;
        let spots = self.spots(&t, &q, crate::text::qualifier(&query.symbol, &q.symbol))?;
        let mut by_file = None;
        for attempt in 0..2 {
            let mut conns = self.conns.lock().await;
            let conn = self.conn(&mut conns, t.server).await?;
            let out = Self::rename_edits(conn, &q, &t, &spots).await;
            if attempt == 0 && !conn.is_alive() {
                continue;
            }
            by_file = Some(out?);
            break;
        }
        let name = self.servers[t.server].name.clone();
        let Some(by_file) = by_file else {
            return Err(format!("[lsp: {name}: the server stopped]"));
        };
        let mut files = Vec::new();
        for (path, edits) in by_file {
            let path = path.canonicalize().unwrap_or(path);
            let display = display_path(&self.root, &path);
            if !path.starts_with(&self.root) {
                return Err(format!(
                    "[lsp: {name}: rename would edit {display}, outside the project; nothing was changed]"
                ));
            }
            let old_text = if path == t.abs {
                t.text.clone()
            } else {
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("[lsp: cannot read {display}: {e}]"))?
            };
            let new_text =
                crate::edit::apply(&old_text, &edits).map_err(|e| failed(&name, q.action, &e))?;
            files.push(RenameFile {
                path,
                display,
                old_text,
                new_text,
                edits: edits.len(),
            });
        }
        files.sort_by(|a, b| a.display.cmp(&b.display));
        Ok(RenamePlan {
            server: t.server,
            new_name: q.new_name,
            files,
        })
    }

    /// The server's rename edits, per file, trying each spot in turn.
    async fn rename_edits(
        conn: &mut Conn,
        q: &Query,
        t: &Target,
        spots: &[Spot],
    ) -> Result<std::collections::BTreeMap<PathBuf, Vec<lsp_types::TextEdit>>, String> {
        let name = conn.name.clone();
        Self::sync_all(conn, t).map_err(|e| failed(&name, q.action, &e))?;
        conn.settle(SETTLE_QUIET, SETTLE_LIMIT).await;
        let doc = TextDocumentIdentifier {
            uri: file_url(&t.abs)?,
        };
        let file_lines = lines(&t.text);
        let mut errors = Vec::new();
        let mut edits = None;
        let busy_until = tokio::time::Instant::now() + BUSY_WAIT;
        for round in 0.. {
            if edits.is_some() || (round > 0 && !another_round(conn, round - 1, busy_until).await) {
                break;
            }
            errors.clear();
            for spot in spots {
                let line = file_lines.get(spot.line).copied().unwrap_or("");
                let params = RenameParams {
                    text_document_position: TextDocumentPositionParams {
                        text_document: doc.clone(),
                        position: Position::new(
                            spot.line as u32,
                            utf16_of_char_col(line, spot.col),
                        ),
                    },
                    new_name: q.new_name.clone(),
                    work_done_progress_params: WorkDoneProgressParams::default(),
                };
                match conn.request::<Rename>(params, REQUEST_TIMEOUT).await {
                    Ok(Some(we)) => {
                        let by_file =
                            crate::edit::by_file(we).map_err(|e| failed(&name, q.action, &e))?;
                        if !by_file.is_empty() {
                            edits = Some(by_file);
                            break;
                        }
                    }
                    Ok(None) => {}
                    Err(e) if hopeless(conn, &e) => return Err(failed(&name, q.action, &e)),
                    Err(e) => errors.push(e),
                }
            }
        }
        let Some(by_file) = edits else {
            if errors.len() == spots.len()
                && let Some(e) = errors.first()
            {
                return Err(failed(&name, q.action, e));
            }
            let first = spots[0];
            return Err(format!(
                "[lsp: no rename edits found for the symbol at {}:{}:{}]",
                t.display,
                first.line + 1,
                first.col + 1
            ));
        };
        Ok(by_file)
    }

    /// Write a prepared rename with `std::fs::write` and tell the server
    /// the new contents: for callers without a writer of their own (see
    /// [`Client::apply_rename_with`]).
    pub async fn apply_rename(&self, plan: &RenamePlan) -> Result<String, LspError> {
        self.apply_rename_with(plan, |f| {
            std::fs::write(&f.path, &f.new_text)
                .map_err(|e| LspError::Write(format!("[lsp: could not write {}: {e}]", f.display)))
        })
        .await
    }

    /// Write a prepared rename with `write` (the caller's writer: the `lsp`
    /// tool's is atomic, keeps each file's mode and asks the sandbox), then
    /// tell the server the new contents and answer `renamed to …`. A file
    /// that changed on disk since the plan is not written
    /// (docs/design.md#preview-before-permission), and then nothing is; a
    /// write that fails stops there.
    pub async fn apply_rename_with(
        &self,
        plan: &RenamePlan,
        mut write: impl FnMut(&RenameFile) -> Result<(), LspError>,
    ) -> Result<String, LspError> {
        for f in &plan.files {
            match std::fs::read_to_string(&f.path) {
                Ok(now) if now == f.old_text => {}
                _ => {
                    return Err(LspError::ChangedOnDisk {
                        display: f.display.clone(),
                    });
                }
            }
        }
        for f in &plan.files {
            write(f)?;
        }
        {
            let mut conns = self.conns.lock().await;
            if let Some(conn) = conns.get_mut(&plan.server)
                && conn.is_alive()
            {
                let mut sent = Vec::new();
                for f in &plan.files {
                    let ext = f
                        .path
                        .extension()
                        .map(|e| format!(".{}", e.to_string_lossy()))
                        .unwrap_or_default();
                    if let Ok(synced) = conn.sync(&f.path, &f.new_text, language_id(&ext)) {
                        sent.push((&f.path, synced));
                    }
                }
                // Let the server take the new contents in before the next
                // call: its diagnostics for a version show it has (bounded,
                // for servers that publish nothing).
                let deadline = tokio::time::Instant::now() + RENAME_SETTLE;
                for (path, synced) in sent {
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    conn.wait_diagnostics(path, synced.synced_seq, synced.version, left)
                        .await;
                }
            }
        }
        let mut out = format!(
            "renamed to {}: {} edit(s) in {} file(s)",
            plan.new_name,
            plan.edit_count(),
            plan.files.len()
        );
        for f in &plan.files {
            out.push_str(&format!("\n{}: {} edit(s)", f.display, f.edits));
        }
        Ok(out)
    }
}
