//! A `session/prompt`'s content blocks turned into the one question the
//! agent asks: text as typed, an embedded text `resource` as its
//! `[attached file: …]` line followed by its text (used as given), a
//! `resource_link` read by the agent as an `@path` mention is, an `image`
//! block as a picture of the question.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use mm_agent::mention::{Extra, attached_line};

/// What a prompt asks: the text, and what the agent attaches besides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The question's text, embedded resources included.
    pub text: String,
    /// Linked files (read like mentions) and pictures.
    pub extra: Extra,
}

/// The question a prompt asks, built from its blocks in order. Text blocks
/// are joined as sent (editors split a message around its mentions); each
/// embedded resource follows the text on its own line, like a mention's
/// attachment; links and images go to [`Prompt::extra`].
pub fn question(blocks: &[ContentBlock]) -> Prompt {
    let mut text = String::new();
    let mut attached: Vec<String> = Vec::new();
    let mut extra = Extra::default();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ResourceLink(link) => {
                let path = uri_to_path(&link.uri);
                if !extra.paths.contains(&path) {
                    extra.paths.push(path);
                }
            }
            ContentBlock::Image(image) => {
                let source = image.uri.clone().unwrap_or_default();
                match mm_agent::mention::image_from_base64(&image.data, &source) {
                    Ok(image) => extra.images.push(image),
                    // One line for the model: the editor's picture could
                    // not be sent.
                    Err(why) => attached.push(format!("[image not sent: {why}]")),
                }
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    let mut body = attached_line(&uri_to_path(&r.uri));
                    body.push_str("\n```\n");
                    body.push_str(&r.text);
                    if !r.text.ends_with('\n') {
                        body.push('\n');
                    }
                    body.push_str("```");
                    attached.push(body);
                }
                EmbeddedResourceResource::BlobResourceContents(r) => {
                    let line = attached_line(&uri_to_path(&r.uri));
                    if !attached.contains(&line) {
                        attached.push(line);
                    }
                }
                _ => {}
            },
            // Audio is not advertised (promptCapabilities).
            _ => {}
        }
    }
    if attached.is_empty() {
        return Prompt { text, extra };
    }
    let mut out = text.trim_end().to_string();
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(&attached.join("\n"));
    Prompt { text: out, extra }
}

/// The path a `file://` URI names (percent-decoded); any other URI as is.
pub fn uri_to_path(uri: &str) -> String {
    let Some(rest) = uri.strip_prefix("file://") else {
        return uri.to_string();
    };
    // `file://host/path`: only an empty host or `localhost` name local files.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    percent_decode(rest)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// `path` made absolute against `cwd` (paths sent to the client are absolute).
pub fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ResourceLink, TextContent, TextResourceContents,
    };

    #[test]
    fn text_blocks_are_joined_as_sent() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("fix ")),
            ContentBlock::Text(TextContent::new("the build")),
        ];
        assert_eq!(question(&blocks).text, "fix the build");
    }

    #[test]
    fn resource_links_are_attached_by_the_agent_once() {
        let link = ResourceLink::new("main.rs", "file:///work/my%20dir/main.rs");
        let blocks = vec![
            ContentBlock::Text(TextContent::new("look at ")),
            ContentBlock::ResourceLink(link.clone()),
            ContentBlock::Text(TextContent::new(" please")),
            ContentBlock::ResourceLink(link),
        ];
        let p = question(&blocks);
        assert_eq!(p.text, "look at  please");
        assert_eq!(p.extra.paths, ["/work/my dir/main.rs"]);
    }

    #[test]
    fn embedded_text_resources_carry_their_text() {
        let res = TextResourceContents::new("fn main() {}", "file:///p/src/main.rs");
        let blocks = vec![
            ContentBlock::Text(TextContent::new("what does this do?")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(res),
            )),
        ];
        assert_eq!(
            question(&blocks).text,
            "what does this do?\n\n[attached file: /p/src/main.rs]\n```\nfn main() {}\n```"
        );
    }

    #[test]
    fn uris_that_are_not_files_stay_as_given() {
        assert_eq!(uri_to_path("zed://selection/1"), "zed://selection/1");
        assert_eq!(uri_to_path("file://localhost/etc/hosts"), "/etc/hosts");
        assert_eq!(uri_to_path("file:///a%2"), "/a%2");
    }

    #[test]
    fn relative_paths_are_made_absolute() {
        assert_eq!(
            absolute(Path::new("/p"), "a.txt"),
            PathBuf::from("/p/a.txt")
        );
        assert_eq!(absolute(Path::new("/p"), "/q/b"), PathBuf::from("/q/b"));
    }
}
