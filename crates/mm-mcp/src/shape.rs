//! A tool result as text for the model: text content as it is, a picture
//! in a format models read (PNG, JPEG, GIF, WebP) kept beside the text,
//! and one line in place of what a model cannot read (audio, resources,
//! other images).

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
    let pictures = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image(i) if PICTURES.contains(&i.mime_type.as_str()) => Some(Picture {
                mime_type: i.mime_type.clone(),
                data: i.data.clone(),
            }),
            _ => None,
        })
        .collect();
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

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) if PICTURES.contains(&i.mime_type.as_str()) => {
            format!("[image: {}, {} bytes]", i.mime_type, base64_len(&i.data))
        }
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
                format!(
                    "[resource: {uri}, {} characters, not shown]",
                    text.chars().count()
                )
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {uri}, {}{} bytes, not shown]",
                mime_type
                    .as_deref()
                    .map(|m| format!("{m}, "))
                    .unwrap_or_default(),
                base64_len(blob)
            ),
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
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "abc"}},
                {"type": "resource", "resource": {"uri": "x:b", "blob": "AAAA", "mimeType": "application/gzip"}},
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
             [resource: file:///a.txt, 3 characters, not shown]\n\
             [resource: x:b, application/gzip, 3 bytes, not shown]\n\
             [resource link: x:c (c)]"
        );
        assert!(out.is_error);
        assert_eq!(
            out.pictures,
            [Picture {
                mime_type: "image/png".into(),
                data: "AAAA".into()
            }]
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
