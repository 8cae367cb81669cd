//! A tool result as text for the model: text content as it is, an embedded
//! resource's text under a line naming it, a picture in a format models
//! read (PNG, JPEG, GIF, WebP) kept beside the text, and one line in place
//! of what a model cannot read (audio, binary resources, other images).

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What a call gave, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutput {
    /// The text the model receives.
    pub text: String,
    /// The server flagged the result as an error (`isError`).
    pub is_error: bool,
    /// The pictures of the result, in order; the text has a line for each.
    pub pictures: Vec<Picture>,
}

/// A picture a tool answered with, as the server sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
    /// The bytes, base64.
    pub data: String,
}

/// The picture formats a model reads.
const PICTURES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Shape a `tools/call` result: each content block on its own, blocks
/// separated by a newline; `structuredContent` as JSON when there is no
/// content at all; `(no output)` when there is nothing.
pub fn shape(result: &CallToolResult) -> CallOutput {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    let pictures = result.content.iter().filter_map(picture).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
        && !structured.is_null()
    {
        parts.push(structured.to_string());
    }
    let text = if parts.is_empty() {
        "(no output)".to_string()
    } else {
        parts.join("\n")
    };
    CallOutput {
        text,
        is_error: result.is_error.unwrap_or(false),
        pictures,
    }
}

/// The picture a block holds, in a format models read: an image, or an
/// embedded resource whose blob is one.
fn picture(block: &ContentBlock) -> Option<Picture> {
    let (mime_type, data) = match block {
        ContentBlock::Image(i) => (i.mime_type.as_str(), &i.data),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::BlobResourceContents {
                mime_type: Some(m),
                blob,
                ..
            } => (m.as_str(), blob),
            _ => return None,
        },
        _ => return None,
    };
    PICTURES.contains(&mime_type).then(|| Picture {
        mime_type: mime_type.to_string(),
        data: data.clone(),
    })
}

fn block_text(block: &ContentBlock) -> String {
    if let Some(p) = picture(block) {
        let line = format!("[image: {}, {} bytes]", p.mime_type, base64_len(&p.data));
        return match block {
            // A resource says which one it is.
            ContentBlock::Resource(r) => {
                format!("[resource: {}]\n{line}", resource_uri(&r.resource))
            }
            _ => line,
        };
    }
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!(
            "[image: {}, {} bytes, not shown]",
            i.mime_type,
            base64_len(&i.data)
        ),
        ContentBlock::Audio(a) => format!(
            "[audio: {}, {} bytes, not shown]",
            a.mime_type,
            base64_len(&a.data)
        ),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => match blob_text(mime_type.as_deref(), blob) {
                Some(text) => format!("[resource: {uri}]\n{text}"),
                None => format!(
                    "[resource: {uri}, {}{} bytes, not shown]",
                    mime_type
                        .as_deref()
                        .map(|m| format!("{m}, "))
                        .unwrap_or_default(),
                    base64_len(blob)
                ),
            },
            #[allow(unreachable_patterns)]
            _ => "[resource, not shown]".to_string(),
        },
        ContentBlock::ResourceLink(link) => {
            format!("[resource link: {} ({})]", link.uri, link.name)
        }
        #[allow(unreachable_patterns)]
        _ => "[content of an unknown kind, not shown]".to_string(),
    }
}

/// A resource's URI.
fn resource_uri(contents: &ResourceContents) -> &str {
    match contents {
        ResourceContents::TextResourceContents { uri, .. }
        | ResourceContents::BlobResourceContents { uri, .. } => uri,
        #[allow(unreachable_patterns)]
        _ => "",
    }
}

/// A blob resource's text, when its type says text (or says nothing) and
/// its bytes are UTF-8 without NULs: servers send text files as blobs too.
fn blob_text(mime_type: Option<&str>, blob: &str) -> Option<String> {
    let textual = mime_type.is_none_or(|m| {
        let m = m.split(';').next().unwrap_or(m).trim().to_ascii_lowercase();
        m.starts_with("text/")
            || ["json", "xml", "yaml", "toml", "javascript", "x-sh", "csv"]
                .iter()
                .any(|t| m.ends_with(t))
    });
    if !textual {
        return None;
    }
    let compact: String = blob.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    // Padded or not, standard or URL-safe: servers send all four.
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let bytes = [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(&compact).ok())?;
    let text = String::from_utf8(bytes).ok()?;
    (!text.contains('\0')).then_some(text)
}

/// The decoded size of base64 `data`, without decoding it.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let pad = data.bytes().rev().take_while(|b| *b == b'=').count();
    let digits = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    (digits * 3 / 4).saturating_sub(pad)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(json: serde_json::Value) -> CallToolResult {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn text_and_placeholders() {
        let r = result(serde_json::json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "image", "data": "AAAA", "mimeType": "image/tiff"},
                {"type": "audio", "data": "AAAAAA==", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "abc\ndef"}},
                {"type": "resource", "resource": {"uri": "x:b", "blob": "AAAA", "mimeType": "application/gzip"}},
                {"type": "resource", "resource": {"uri": "x:t", "blob": "aGkK", "mimeType": "text/plain; charset=utf-8"}},
                {"type": "resource", "resource": {"uri": "x:j", "blob": "eyJhIjox\nfQ==", "mimeType": "Application/JSON"}},
                {"type": "resource", "resource": {"uri": "x:u", "blob": "aGk_Pz8", "mimeType": "text/plain"}},
                {"type": "resource", "resource": {"uri": "x:n", "blob": "AAAA", "mimeType": "text/plain"}},
                {"type": "resource", "resource": {"uri": "x:p", "blob": "BBBB", "mimeType": "image/png"}},
                {"type": "resource_link", "uri": "x:c", "name": "c"}
            ],
            "isError": true
        }));
        let out = shape(&r);
        assert_eq!(
            out.text,
            "hello\n\
             [image: image/png, 3 bytes]\n\
             [image: image/tiff, 3 bytes, not shown]\n\
             [audio: audio/wav, 4 bytes, not shown]\n\
             [resource: file:///a.txt]\n\
             abc\n\
             def\n\
             [resource: x:b, application/gzip, 3 bytes, not shown]\n\
             [resource: x:t]\n\
             hi\n\n\
             [resource: x:j]\n\
             {\"a\":1}\n\
             [resource: x:u]\n\
             hi???\n\
             [resource: x:n, text/plain, 3 bytes, not shown]\n\
             [resource: x:p]\n\
             [image: image/png, 3 bytes]\n\
             [resource link: x:c (c)]"
        );
        assert!(out.is_error);
        assert_eq!(
            out.pictures,
            [
                Picture {
                    mime_type: "image/png".into(),
                    data: "AAAA".into()
                },
                Picture {
                    mime_type: "image/png".into(),
                    data: "BBBB".into()
                }
            ]
        );
    }

    #[test]
    fn structured_content_when_there_is_no_content() {
        let r = result(serde_json::json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(shape(&r).text, r#"{"sum":3}"#);
        let r = result(serde_json::json!({"content": []}));
        assert_eq!(shape(&r).text, "(no output)");
        assert!(!shape(&r).is_error);
    }
}
