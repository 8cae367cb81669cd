//! Shaping server answers into the reference's texts: locations as
//! `path:line:column  <source line>`, the symbols tree, diagnostics, hover.
//! Everything here is 1-based characters; the wire's UTF-16 offsets are
//! converted with the line's text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lsp_types::{
    Diagnostic, DiagnosticSeverity, DocumentSymbol, DocumentSymbolResponse, HoverContents,
    MarkedString, SymbolInformation, SymbolKind,
};

use crate::text::{char_col_of_utf16, lines};

/// A path as the model sees it: relative inside the project, else absolute.
pub fn display_path(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// A location from the wire: file, 0-based line and UTF-16 offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireLoc {
    pub path: PathBuf,
    pub line: u32,
    pub utf16: u32,
}

/// Reads files once per answer, for the source lines and column
/// conversions of its locations.
#[derive(Default)]
pub struct Sources {
    files: HashMap<PathBuf, Option<String>>,
}

impl Sources {
    /// The text of `path`, or `None` when it cannot be read as text.
    pub fn text(&mut self, path: &Path) -> Option<&str> {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| std::fs::read_to_string(path).ok())
            .as_deref()
    }

    /// 1-based line and character column of a wire location, and the
    /// source line (trimmed) when the file can be read.
    pub fn resolve(&mut self, loc: &WireLoc) -> (usize, usize, Option<String>) {
        let line = loc.line as usize;
        match self
            .text(&loc.path)
            .and_then(|t| lines(t).get(line).map(|l| l.to_string()))
        {
            Some(src) => {
                let col = char_col_of_utf16(&src, loc.utf16);
                let shown = src.trim_end_matches('\r').trim().to_string();
                (line + 1, col + 1, Some(shown))
            }
            None => (line + 1, loc.utf16 as usize + 1, None),
        }
    }
}

/// One `path:line:column  <source line>` per location, sorted by path then
/// position, duplicates removed.
pub fn locations(root: &Path, locs: &[WireLoc], sources: &mut Sources) -> Vec<String> {
    let mut rows: Vec<(String, usize, usize, Option<String>)> = locs
        .iter()
        .map(|loc| {
            let (line, col, src) = sources.resolve(loc);
            (display_path(root, &loc.path), line, col, src)
        })
        .collect();
    rows.sort_by(|a, b| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2)));
    rows.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1 && a.2 == b.2);
    rows.into_iter()
        .map(|(path, line, col, src)| match src {
            Some(src) if !src.is_empty() => format!("{path}:{line}:{col}  {src}"),
            _ => format!("{path}:{line}:{col}"),
        })
        .collect()
}

/// The server's hover text as it sent it; `None` when it is empty.
pub fn hover(contents: &HoverContents) -> Option<String> {
    fn marked(m: &MarkedString) -> String {
        match m {
            MarkedString::String(s) => s.clone(),
            MarkedString::LanguageString(ls) => {
                format!("```{}\n{}\n```", ls.language, ls.value)
            }
        }
    }
    let text = match contents {
        HoverContents::Markup(m) => m.value.clone(),
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(parts) => parts
            .iter()
            .map(marked)
            .filter(|s| !s.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
    };
    if text.trim().is_empty() {
        None
    } else {
        Some(text)
    }
}

/// A symbol kind as a lower-case word.
pub fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::FILE => "file",
        SymbolKind::MODULE => "module",
        SymbolKind::NAMESPACE => "namespace",
        SymbolKind::PACKAGE => "package",
        SymbolKind::CLASS => "class",
        SymbolKind::METHOD => "method",
        SymbolKind::PROPERTY => "property",
        SymbolKind::FIELD => "field",
        SymbolKind::CONSTRUCTOR => "constructor",
        SymbolKind::ENUM => "enum",
        SymbolKind::INTERFACE => "interface",
        SymbolKind::FUNCTION => "function",
        SymbolKind::VARIABLE => "variable",
        SymbolKind::CONSTANT => "constant",
        SymbolKind::STRING => "string",
        SymbolKind::NUMBER => "number",
        SymbolKind::BOOLEAN => "boolean",
        SymbolKind::ARRAY => "array",
        SymbolKind::OBJECT => "object",
        SymbolKind::KEY => "key",
        SymbolKind::NULL => "null",
        SymbolKind::ENUM_MEMBER => "enum member",
        SymbolKind::STRUCT => "struct",
        SymbolKind::EVENT => "event",
        SymbolKind::OPERATOR => "operator",
        SymbolKind::TYPE_PARAMETER => "type parameter",
        _ => "symbol",
    }
}

/// `<kind> <name>  [<detail>]  line N`, without the indentation.
fn symbol_row(kind: SymbolKind, name: &str, detail: Option<&str>, line0: u32) -> String {
    let detail = detail
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty());
    match detail {
        Some(d) => format!("{} {name}  [{d}]  line {}", kind_name(kind), line0 + 1),
        None => format!("{} {name}  line {}", kind_name(kind), line0 + 1),
    }
}

/// The symbols tree: one row per symbol, children indented two spaces.
pub fn symbols(response: &DocumentSymbolResponse) -> Vec<String> {
    fn walk(out: &mut Vec<String>, syms: &[DocumentSymbol], depth: usize) {
        for s in syms {
            out.push(format!(
                "{}{}",
                "  ".repeat(depth),
                symbol_row(
                    s.kind,
                    &s.name,
                    s.detail.as_deref(),
                    s.selection_range.start.line
                )
            ));
            if let Some(children) = &s.children {
                walk(out, children, depth + 1);
            }
        }
    }
    let mut out = Vec::new();
    match response {
        DocumentSymbolResponse::Nested(syms) => walk(&mut out, syms, 0),
        DocumentSymbolResponse::Flat(infos) => flat(&mut out, infos),
    }
    out
}

/// Flat answers carry only a container name: a symbol whose container is
/// a symbol listed before it is indented under it.
fn flat(out: &mut Vec<String>, infos: &[SymbolInformation]) {
    let mut sorted: Vec<&SymbolInformation> = infos.iter().collect();
    sorted.sort_by_key(|s| {
        (
            s.location.range.start.line,
            s.location.range.start.character,
        )
    });
    let mut depth_of: HashMap<&str, usize> = HashMap::new();
    for s in sorted {
        let depth = s
            .container_name
            .as_deref()
            .and_then(|c| depth_of.get(c))
            .map_or(0, |d| d + 1);
        depth_of.insert(&s.name, depth);
        out.push(format!(
            "{}{}",
            "  ".repeat(depth),
            symbol_row(s.kind, &s.name, None, s.location.range.start.line)
        ));
    }
}

/// A severity as a lower-case word (servers that send none mean an error).
pub fn severity_name(severity: Option<DiagnosticSeverity>) -> &'static str {
    match severity {
        Some(DiagnosticSeverity::WARNING) => "warning",
        Some(DiagnosticSeverity::INFORMATION) => "info",
        Some(DiagnosticSeverity::HINT) => "hint",
        _ => "error",
    }
}

/// `<severity> path:line:column <message> [<source>]` per diagnostic,
/// sorted by position. `text` is the file's content the server saw.
pub fn diagnostics(display: &str, text: &str, diags: &[Diagnostic]) -> Vec<String> {
    let file_lines = lines(text);
    let mut rows: Vec<(u32, usize, String)> = diags
        .iter()
        .map(|d| {
            let line0 = d.range.start.line;
            let col0 = file_lines
                .get(line0 as usize)
                .map_or(d.range.start.character as usize, |l| {
                    char_col_of_utf16(l, d.range.start.character)
                });
            let message = d.message.split_whitespace().collect::<Vec<_>>().join(" ");
            let source = match d.source.as_deref() {
                Some(s) if !s.is_empty() => format!(" [{s}]"),
                _ => String::new(),
            };
            let row = format!(
                "{} {display}:{}:{} {message}{source}",
                severity_name(d.severity),
                line0 + 1,
                col0 + 1
            );
            (line0, col0, row)
        })
        .collect();
    rows.sort_by_key(|a| (a.0, a.1));
    rows.dedup_by(|a, b| a.2 == b.2);
    rows.into_iter().map(|r| r.2).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{MarkupContent, MarkupKind, Position, Range};

    fn range(line: u32, ch: u32) -> Range {
        Range::new(Position::new(line, ch), Position::new(line, ch + 1))
    }

    #[test]
    fn paths_inside_the_project_are_relative() {
        let root = Path::new("/p/proj");
        assert_eq!(
            display_path(root, Path::new("/p/proj/src/a.rs")),
            "src/a.rs"
        );
        assert_eq!(
            display_path(root, Path::new("/usr/include/stdio.h")),
            "/usr/include/stdio.h"
        );
    }

    #[test]
    fn locations_sorted_deduplicated_with_character_columns() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("b.py"), "x = 1\n  y = \"é😀\" + x\n").unwrap();
        std::fs::write(root.join("a.py"), "import b\n").unwrap();
        let at = |name: &str, line, utf16| WireLoc {
            path: root.join(name),
            line,
            utf16,
        };
        // "x" on line 2 stands after é (1 unit) and 😀 (2 units): UTF-16
        // offset 14 is character 13.
        let locs = vec![
            at("b.py", 1, 14),
            at("a.py", 0, 7),
            at("b.py", 0, 0),
            at("b.py", 1, 14),
        ];
        let mut sources = Sources::default();
        assert_eq!(
            locations(root, &locs, &mut sources),
            vec![
                "a.py:1:8  import b".to_string(),
                "b.py:1:1  x = 1".to_string(),
                "b.py:2:14  y = \"é😀\" + x".to_string(),
            ]
        );
    }

    #[test]
    fn symbols_tree_indents_children() {
        #[allow(deprecated)]
        let child = DocumentSymbol {
            name: "greet".into(),
            detail: Some("(self) -> str".into()),
            kind: SymbolKind::METHOD,
            tags: None,
            deprecated: None,
            range: range(2, 4),
            selection_range: range(2, 8),
            children: None,
        };
        #[allow(deprecated)]
        let parent = DocumentSymbol {
            name: "Person".into(),
            detail: None,
            kind: SymbolKind::CLASS,
            tags: None,
            deprecated: None,
            range: range(0, 0),
            selection_range: range(0, 6),
            children: Some(vec![child]),
        };
        assert_eq!(
            symbols(&DocumentSymbolResponse::Nested(vec![parent])),
            vec![
                "class Person  line 1".to_string(),
                "  method greet  [(self) -> str]  line 3".to_string(),
            ]
        );
    }

    #[test]
    fn diagnostics_rows_name_severity_position_and_source() {
        let d = Diagnostic {
            range: range(1, 3),
            severity: Some(DiagnosticSeverity::WARNING),
            source: Some("clang".into()),
            message: "unused\nvariable".into(),
            ..Diagnostic::default()
        };
        let e = Diagnostic {
            range: range(0, 0),
            message: "bad".into(),
            ..Diagnostic::default()
        };
        assert_eq!(
            diagnostics("m.c", "int x;\n😀 y;\n", &[d, e]),
            vec![
                "error m.c:1:1 bad".to_string(),
                "warning m.c:2:3 unused variable [clang]".to_string(),
            ]
        );
    }

    #[test]
    fn hover_keeps_the_servers_text() {
        let h = HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: "```python\ndef greet() -> str\n```".into(),
        });
        assert_eq!(
            hover(&h).as_deref(),
            Some("```python\ndef greet() -> str\n```")
        );
        let empty = HoverContents::Array(vec![]);
        assert_eq!(hover(&empty), None);
    }
}
