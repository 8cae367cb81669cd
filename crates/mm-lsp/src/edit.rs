//! Turning a server's `WorkspaceEdit` into new file contents: both the
//! `changes` map and `documentChanges` forms, UTF-16 positions converted to
//! byte offsets, edits applied from the end so earlier offsets stay valid.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lsp_types::{DocumentChangeOperation, DocumentChanges, OneOf, TextEdit, WorkspaceEdit};

use crate::text::byte_offset;

/// The text edits of a workspace edit, per file, in a stable order.
pub fn by_file(edit: WorkspaceEdit) -> Result<BTreeMap<PathBuf, Vec<TextEdit>>, String> {
    let mut out: BTreeMap<PathBuf, Vec<TextEdit>> = BTreeMap::new();
    let mut add = |uri: &lsp_types::Url, edits: Vec<TextEdit>| -> Result<(), String> {
        let path = uri
            .to_file_path()
            .map_err(|()| format!("the server sent an edit for {uri}, which is not a file"))?;
        out.entry(path).or_default().extend(edits);
        Ok(())
    };
    if let Some(changes) = edit.document_changes {
        let docs = match changes {
            DocumentChanges::Edits(docs) => docs,
            DocumentChanges::Operations(ops) => {
                let mut docs = Vec::new();
                for op in ops {
                    match op {
                        DocumentChangeOperation::Edit(doc) => docs.push(doc),
                        DocumentChangeOperation::Op(_) => {
                            return Err(
                                "the server wants to create, rename or delete files; mm applies text edits only"
                                    .to_string(),
                            );
                        }
                    }
                }
                docs
            }
        };
        for doc in docs {
            let edits = doc
                .edits
                .into_iter()
                .map(|e| match e {
                    OneOf::Left(e) => e,
                    OneOf::Right(annotated) => annotated.text_edit,
                })
                .collect();
            add(&doc.text_document.uri, edits)?;
        }
    } else if let Some(changes) = edit.changes {
        for (uri, edits) in changes {
            add(&uri, edits)?;
        }
    }
    out.retain(|_, edits| !edits.is_empty());
    Ok(out)
}

/// `text` with `edits` applied. Overlapping edits are refused: the protocol
/// forbids them and applying them would garble the file.
pub fn apply(text: &str, edits: &[TextEdit]) -> Result<String, String> {
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            let start = byte_offset(text, e.range.start.line, e.range.start.character);
            let end = byte_offset(text, e.range.end.line, e.range.end.character);
            (start, end.max(start), e.new_text.as_str())
        })
        .collect();
    // Stable: edits at the same offset keep the server's order.
    spans.sort_by_key(|s| (s.0, s.1));
    for pair in spans.windows(2) {
        if pair[0].1 > pair[1].0 {
            return Err("the server sent overlapping edits".to_string());
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new) in spans {
        out.push_str(&text[at..start]);
        out.push_str(new);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::{Position, Range, Url};
    use std::collections::HashMap;

    fn edit(line: u32, a: u32, b: u32, new: &str) -> TextEdit {
        TextEdit::new(
            Range::new(Position::new(line, a), Position::new(line, b)),
            new.into(),
        )
    }

    #[test]
    fn edits_apply_at_utf16_positions() {
        // "greet" starts after "é😀 " : 1 + 2 + 1 = 4 UTF-16 units.
        let text = "é😀 greet(greet)\ngreet\n";
        let out = apply(
            text,
            &[
                edit(0, 4, 9, "hello"),
                edit(1, 0, 5, "hello"),
                edit(0, 10, 15, "hello"),
            ],
        )
        .unwrap();
        assert_eq!(out, "é😀 hello(hello)\nhello\n");
    }

    #[test]
    fn overlapping_edits_are_refused() {
        assert!(apply("abcdef", &[edit(0, 0, 3, "x"), edit(0, 2, 4, "y")]).is_err());
    }

    #[test]
    fn both_workspace_edit_forms_are_read() {
        let uri = Url::from_file_path("/tmp/a.py").unwrap();
        let mut changes = HashMap::new();
        changes.insert(uri.clone(), vec![edit(0, 0, 1, "z")]);
        let map = by_file(WorkspaceEdit::new(changes)).unwrap();
        assert_eq!(map.len(), 1);
        assert_eq!(map[&PathBuf::from("/tmp/a.py")].len(), 1);

        let doc = lsp_types::TextDocumentEdit {
            text_document: lsp_types::OptionalVersionedTextDocumentIdentifier {
                uri,
                version: Some(1),
            },
            edits: vec![
                OneOf::Left(edit(0, 0, 1, "z")),
                OneOf::Left(edit(1, 0, 1, "z")),
            ],
        };
        let we = WorkspaceEdit {
            document_changes: Some(DocumentChanges::Edits(vec![doc])),
            ..WorkspaceEdit::default()
        };
        assert_eq!(by_file(we).unwrap()[&PathBuf::from("/tmp/a.py")].len(), 2);
    }
}
