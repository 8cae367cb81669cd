//! `web_fetch` and `web_search`: mm's own HTTP requests for the model.
//!
//! `web_fetch` reads one http(s) URL: an HTML page comes back as Markdown
//! (scripts, styles and navigation dropped), JSON and text as they are, any
//! other type named in one line. Redirects are followed by hand, at most
//! [`MAX_REDIRECTS`], each hop judged again: its host by the deny rules, its
//! addresses by the private-address check. Only the first [`MAX_BODY`]
//! bytes of a body are read, before anything is decoded; the result is cut
//! to the call's budget like every tool's. No cookies are kept and no
//! credentials sent (a URL's `user:password@` is dropped); proxies come from
//! the environment, as for the model's requests. The sandbox of `bash` does
//! not govern these requests: the permission rules do (`domain:` patterns).
//!
//! A loopback, private or link-local address is reached only when an allow
//! rule names its host (`web_fetch(domain:127.0.0.1)`), so that a prompt
//! cannot reach the services of the user's machine or network unasked; the
//! host is resolved once and the request goes to the addresses checked.
//!
//! `web_search` asks the user's SearXNG instance (`webSearch.url`, user file
//! only) and lists title, URL and snippet per hit.
//!
//! Texts:
//! - `[refused: <host> is <ip>, a loopback or private address; an allow rule such as web_fetch(domain:<host>) lets web_fetch reach it]`
//! - `[error: more than 10 redirects, stopped at <url>]`
//! - `[redirected to <url>]` (first line when the page came from elsewhere)
//! - `[HTTP <status>]` (first line of a failed status, the page following)
//! - `[page cut: only the first N bytes were read]`
//! - `<url>: <type>, N bytes: not a text page`

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use htmd::Element;
use htmd::element_handler::{HandlerResult, Handlers};
use reqwest::Url;
use serde::Deserialize;

use crate::output::fit;
use crate::tool::{
    Plan, Subject, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec, invalid_args, parse_args,
};

const NAME: &str = "web_fetch";
const SEARCH: &str = "web_search";

/// What the model gets when the user refuses a fetch.
pub const REJECTED: &str = "[fetch rejected by the user]";

/// Redirects followed before a fetch stops.
pub const MAX_REDIRECTS: usize = 10;

/// Bytes of a body read at most, before decoding.
pub const MAX_BODY: usize = 2 * 1024 * 1024;

/// How long one request may take, headers and body.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Hits `web_search` lists.
const HITS: usize = 10;

/// Elements whose text is no part of the page's content.
const SKIPPED: &[&str] = &[
    "head", "script", "style", "noscript", "nav", "footer", "iframe", "svg", "template", "form",
    "button",
];

/// `web_fetch`: reads, asks in `ask` mode (a URL can carry data out), runs
/// in plan mode.
pub const ROW: ToolRow = ToolRow {
    name: std::borrow::Cow::Borrowed(NAME),
    family: mm_types::ToolFamily::Other,
    kind: mm_types::ToolKind::Fetch,
    title_from: Some("url"),
    echoes: false,
    changes_files: false,
    rejection: Some(REJECTED),
};

/// `web_search`: like `web_fetch`, titled by the query.
pub const SEARCH_ROW: ToolRow = ToolRow {
    name: std::borrow::Cow::Borrowed(SEARCH),
    family: mm_types::ToolFamily::Other,
    kind: mm_types::ToolKind::Fetch,
    title_from: Some("query"),
    echoes: false,
    changes_files: false,
    rejection: Some(REJECTED),
};

/// The `web_fetch` tool.
#[derive(Debug, Default)]
pub struct WebFetch;

#[derive(Deserialize)]
struct Args {
    url: String,
    #[serde(default)]
    max_chars: Option<u64>,
}

/// The URL of a call, checked: http or https, a host, no credentials.
fn parse_url(tool: &str, text: &str) -> Result<Url, String> {
    let mut url = Url::parse(text.trim()).map_err(|e| invalid_args(tool, &format!("url: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid_args(
            tool,
            "url: only http and https URLs are fetched",
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid_args(tool, "url: no host"));
    }
    // No credentials leave mm.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_fragment(None);
    Ok(url)
}

/// The host as rules name it: lower case, an IPv6 address without brackets.
fn host_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .to_ascii_lowercase()
}

#[async_trait::async_trait]
impl Tool for WebFetch {
    fn row(&self) -> &ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_string(),
            description: "Fetch an http(s) URL: a page as Markdown, JSON or text as is."
                .to_string(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string"},
                    "max_chars": {"type": "integer"}
                },
                "required": ["url"]
            }),
        }
    }

    /// The URL's host, for `domain:` rules.
    fn subject(&self, args: &serde_json::Value, _ctx: &ToolContext) -> Subject {
        args.get("url")
            .and_then(serde_json::Value::as_str)
            .and_then(|u| parse_url(NAME, u).ok())
            .map_or(Subject::None, |u| Subject::Domain(host_of(&u)))
    }

    async fn plan(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<Plan, String> {
        let a: Args = parse_args(NAME, args)?;
        let url = parse_url(NAME, &a.url)?;
        // A literal private address is refused before anyone is asked.
        let host = host_of(&url);
        if let Ok(ip) = host.parse::<IpAddr>()
            && !is_public(ip)
            && !ctx.permissions.policy().names_domain(NAME, &host)
        {
            return Err(private_text(&host, ip));
        }
        Ok(ROW.plan(url.to_string()))
    }

    async fn run(&self, args: &serde_json::Value, _plan: Plan, ctx: &ToolContext) -> ToolOutput {
        let a: Args = match parse_args(NAME, args) {
            Ok(a) => a,
            Err(text) => return ToolOutput::fail(text),
        };
        let url = match parse_url(NAME, &a.url) {
            Ok(u) => u,
            Err(text) => return ToolOutput::fail(text),
        };
        let budget = budget(ctx.max_output, a.max_chars);
        tokio::select! {
            out = fetch(url, ctx, budget) => out,
            () = ctx.cancel.cancelled() => ToolOutput::fail(crate::NOT_RUN),
        }
    }
}

/// The characters a result may hold: the call's budget, or less when the
/// model asked for less (at least 200).
fn budget(max_output: usize, asked: Option<u64>) -> usize {
    match asked {
        Some(n) => usize::try_from(n)
            .unwrap_or(usize::MAX)
            .clamp(200, max_output.max(200)),
        None => max_output,
    }
}

/// `[refused: …]` for a private address no rule names.
fn private_text(host: &str, ip: IpAddr) -> String {
    format!(
        "[refused: {host} is {ip}, a loopback or private address; an allow rule such as \
         web_fetch(domain:{host}) lets web_fetch reach it]"
    )
}

/// Whether `ip` is an address of the open internet: not loopback, private,
/// link-local, shared (carrier NAT), unspecified, broadcast or multicast.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let [o0, o1, ..] = a.octets();
            !(a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_broadcast()
                || a.is_multicast()
                || o0 == 0
                || (o0 == 100 && (64..128).contains(&o1)))
        }
        IpAddr::V6(a) => {
            if let Some(v4) = a.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = a.segments()[0];
            !(a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// One GET of `url` to the addresses checked for it; no redirects
/// followed, no cookies.
async fn get(url: &Url, host: &str, addrs: &[SocketAddr]) -> Result<reqwest::Response, String> {
    install_crypto_provider();
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(15))
        .user_agent(concat!("mm/", env!("CARGO_PKG_VERSION")));
    if host.parse::<IpAddr>().is_err() {
        builder = builder.resolve_to_addrs(host, addrs);
    }
    let client = builder
        .build()
        .map_err(|e| format!("[error: cannot set up the HTTP client: {e}]"))?;
    client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5",
        )
        .send()
        .await
        .map_err(|e| format!("[error: cannot fetch {url}: {}]", error_chain(&e)))
}

/// The error and its causes on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// Resolve `url`'s host and check every address; `Err` is the refusal.
async fn addresses(url: &Url, host: &str, ctx: &ToolContext) -> Result<Vec<SocketAddr>, String> {
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| format!("[error: cannot resolve {host}: {e}]"))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(format!("[error: cannot resolve {host}: no address]"));
    }
    if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip()))
        && !ctx.permissions.policy().names_domain(NAME, host)
    {
        return Err(private_text(host, bad.ip()));
    }
    Ok(addrs)
}

/// The whole fetch: hops, body, conversion, budget.
async fn fetch(start: Url, ctx: &ToolContext, budget: usize) -> ToolOutput {
    let mut url = start.clone();
    for hop in 0..=MAX_REDIRECTS {
        let host = host_of(&url);
        if hop > 0 {
            // Each hop's host is judged by the deny rules again.
            let verdict = ctx.permissions.policy().check(&mm_policy::Call {
                tool: NAME,
                subject: mm_policy::Subject::Domain(&host),
                changes: false,
                cwd: &ctx.cwd,
            });
            if let mm_policy::Verdict::Deny(rule) = verdict {
                return ToolOutput::fail(crate::toolbox::denied_text(&rule));
            }
        }
        let addrs = match addresses(&url, &host, ctx).await {
            Ok(a) => a,
            Err(text) => return ToolOutput::fail(text),
        };
        let resp = match get(&url, &host, &addrs).await {
            Ok(r) => r,
            Err(text) => return ToolOutput::fail(text),
        };
        let status = resp.status();
        if status.is_redirection()
            && let Some(next) = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
        {
            url = match url.join(next).map_err(|e| e.to_string()).and_then(|u| {
                parse_url(NAME, u.as_str()).map_err(|_| format!("{u} is not an http(s) URL"))
            }) {
                Ok(u) => u,
                Err(e) => {
                    return ToolOutput::fail(format!("[error: bad redirect from {url}: {e}]"));
                }
            };
            continue;
        }
        let page = match read(resp).await {
            Ok(p) => p,
            Err(text) => return ToolOutput::fail(text),
        };
        let mut head = String::new();
        if url != start {
            head.push_str(&format!("[redirected to {url}]\n"));
        }
        let failed = !status.is_success();
        if failed {
            head.push_str(&format!("[HTTP {status}]\n"));
        }
        let body = match render(&url, page).await {
            Ok(body) => body,
            Err(text) => return ToolOutput::fail(text),
        };
        let text = format!("{head}{}", body.text);
        let out = fit(&text, &body.suffix, budget);
        return ToolOutput {
            text: out,
            failed,
            images: Vec::new(),
        };
    }
    ToolOutput::fail(format!(
        "[error: more than {MAX_REDIRECTS} redirects, stopped at {url}]"
    ))
}

/// A body as read: at most [`MAX_BODY`] bytes.
struct Body {
    content_type: String,
    bytes: Vec<u8>,
    /// More was sent than was read.
    cut: bool,
}

async fn read(mut resp: reqwest::Response) -> Result<Body, String> {
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut bytes = Vec::new();
    let mut cut = false;
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_BODY - bytes.len();
                if chunk.len() >= room {
                    bytes.extend_from_slice(&chunk[..room]);
                    cut = chunk.len() > room || resp.chunk().await.ok().flatten().is_some();
                    break;
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => {
                return Err(format!(
                    "[error: reading the page failed: {}]",
                    error_chain(&e)
                ));
            }
        }
    }
    Ok(Body {
        content_type,
        bytes,
        cut,
    })
}

/// What the model reads of a body, and the line that ends it.
struct Rendered {
    text: String,
    suffix: String,
}

/// HTML as Markdown, text as it is, anything else in one line.
async fn render(url: &Url, body: Body) -> Result<Rendered, String> {
    let mime = body
        .content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_owned();
    let suffix = if body.cut {
        format!("[page cut: only the first {MAX_BODY} bytes were read]")
    } else {
        String::new()
    };
    let sniffed_html = mime.is_empty() && looks_like_html(&body.bytes);
    let html = matches!(mime.as_str(), "text/html" | "application/xhtml+xml") || sniffed_html;
    let text = mime.starts_with("text/")
        || mime.ends_with("json")
        || mime.ends_with("+xml")
        || matches!(
            mime.as_str(),
            "application/xml"
                | "application/javascript"
                | "application/x-yaml"
                | "application/yaml"
        )
        || (mime.is_empty() && std::str::from_utf8(&body.bytes).is_ok());
    if html {
        let source = String::from_utf8_lossy(&body.bytes).into_owned();
        let base = url.clone();
        let markdown = tokio::task::spawn_blocking(move || to_markdown(&source, Some(&base)))
            .await
            .map_err(|e| format!("[error: converting the page failed: {e}]"))??;
        return Ok(Rendered {
            text: markdown,
            suffix,
        });
    }
    if text {
        return Ok(Rendered {
            text: String::from_utf8_lossy(&body.bytes).into_owned(),
            suffix,
        });
    }
    let size = if body.cut {
        format!("more than {MAX_BODY} bytes")
    } else {
        format!("{} bytes", body.bytes.len())
    };
    let shown = if mime.is_empty() { "no type" } else { &mime };
    Ok(Rendered {
        text: format!("{url}: {shown}, {size}: not a text page"),
        suffix: String::new(),
    })
}

fn looks_like_html(bytes: &[u8]) -> bool {
    let start = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_ascii_lowercase();
    let start = start.trim_start();
    start.starts_with("<!doctype html") || start.starts_with("<html")
}

/// HTML as Markdown, without the elements of `SKIPPED`. Links and images
/// relative to `base` (the page's address after redirects) are given
/// whole, so that the model can fetch what they point to.
pub fn to_markdown(html: &str, base: Option<&Url>) -> Result<String, String> {
    let mut builder = htmd::HtmlToMarkdown::builder().skip_tags(SKIPPED.to_vec());
    if let Some(base) = base.cloned() {
        builder = builder.add_handler(
            vec!["a", "img"],
            move |handlers: &dyn Handlers, element: Element| whole_link(&base, handlers, element),
        );
    }
    builder
        .build()
        .convert(html)
        .map_err(|e| format!("[error: converting the page failed: {e}]"))
}

/// A link or an image as Markdown, its address joined to `base` when it
/// is relative (the converter's own handlers keep addresses as written).
fn whole_link(base: &Url, handlers: &dyn Handlers, element: Element) -> Option<HandlerResult> {
    let attr = |name: &str| {
        element
            .attrs
            .iter()
            .find(|a| &*a.name.local == name)
            .map(|a| one_line(&a.value))
    };
    let image = element.tag == "img";
    let Some(target) = attr(if image { "src" } else { "href" }) else {
        // An image without a source is nothing; an anchor, its text.
        return (!image).then(|| handlers.walk_children(element.node));
    };
    let target = match Url::parse(&target) {
        Ok(_) => target,
        Err(_) => base.join(&target).map_or(target, |whole| whole.to_string()),
    };
    let mut target = target.replace('(', "\\(").replace(')', "\\)");
    if target.contains(' ') {
        target = format!("<{target}>");
    }
    let title = attr("title")
        .map(|t| format!(" \"{}\"", t.replace('"', "\\\"")))
        .unwrap_or_default();
    if image {
        let alt = attr("alt").unwrap_or_default().replace('"', "\\\"");
        return Some(format!("![{alt}]({target}{title})").into());
    }
    let content = handlers.walk_children(element.node).content;
    let text = content.trim();
    let after = if text.len() < content.trim_start().len() {
        " "
    } else {
        ""
    };
    Some(format!("[{text}]({target}{title}){after}").into())
}

/// An attribute's text on one line, trimmed.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `web_search` tool: the user's SearXNG instance.
#[derive(Debug)]
pub struct WebSearch {
    url: String,
}

impl WebSearch {
    /// A search tool asking the SearXNG instance at `url` (its `/search`).
    pub fn new(url: impl Into<String>) -> Self {
        WebSearch { url: url.into() }
    }
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
}

#[derive(Deserialize)]
struct Hits {
    #[serde(default)]
    results: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: String,
}

#[async_trait::async_trait]
impl Tool for WebSearch {
    fn row(&self) -> &ToolRow {
        &SEARCH_ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SEARCH.to_string(),
            description: "Search the web: title, URL and snippet per hit.".to_string(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"]
            }),
        }
    }

    /// The search server's host, for `domain:` rules.
    fn subject(&self, _args: &serde_json::Value, _ctx: &ToolContext) -> Subject {
        Url::parse(&self.url).map_or(Subject::None, |u| Subject::Domain(host_of(&u)))
    }

    async fn plan(&self, args: &serde_json::Value, _ctx: &ToolContext) -> Result<Plan, String> {
        let a: SearchArgs = parse_args(SEARCH, args)?;
        if a.query.trim().is_empty() {
            return Err(invalid_args(SEARCH, "query is empty"));
        }
        Ok(SEARCH_ROW.plan(a.query))
    }

    async fn run(&self, args: &serde_json::Value, _plan: Plan, ctx: &ToolContext) -> ToolOutput {
        let a: SearchArgs = match parse_args(SEARCH, args) {
            Ok(a) => a,
            Err(text) => return ToolOutput::fail(text),
        };
        tokio::select! {
            out = self.search(&a.query, ctx.max_output) => out.into(),
            () = ctx.cancel.cancelled() => ToolOutput::fail(crate::NOT_RUN),
        }
    }
}

impl WebSearch {
    async fn search(&self, query: &str, budget: usize) -> Result<String, String> {
        let mut url = Url::parse(&self.url)
            .map_err(|e| format!("[error: webSearch.url {}: {e}]", self.url))?;
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        let host = host_of(&url);
        // The user's own server: its address needs no rule.
        let port = url.port_or_known_default().unwrap_or(80);
        let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((host.as_str(), port))
                .await
                .map_err(|e| format!("[error: cannot resolve {host}: {e}]"))?
                .collect(),
        };
        let resp = get(&url, &host, &addrs).await?;
        let status = resp.status();
        let body = read(resp).await?;
        if !status.is_success() {
            return Err(format!("[error: the search server answered HTTP {status}]"));
        }
        let hits: Hits = serde_json::from_slice(&body.bytes).map_err(|e| {
            format!("[error: the search server's answer is not SearXNG JSON ({e}); is format=json enabled?]")
        })?;
        if hits.results.is_empty() {
            return Ok(format!("no results for \"{query}\""));
        }
        let text: String = hits
            .results
            .iter()
            .take(HITS)
            .enumerate()
            .map(|(i, h)| {
                let snippet = h.content.split_whitespace().collect::<Vec<_>>().join(" ");
                format!(
                    "{}. {}\n   {}\n   {}\n",
                    i + 1,
                    h.title.trim(),
                    h.url,
                    snippet
                )
            })
            .collect();
        Ok(fit(&text, "", budget))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_known() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn html_becomes_markdown_without_scripts_or_navigation() {
        let md = to_markdown(
            "<html><head><title>T</title><style>p{}</style></head><body><nav><a href=/>Home</a></nav>\
             <h1>Title</h1><script>var secret = 1;</script><p>See <a href=\"https://x.example/a\">the docs</a>.</p>\
             <ul><li>one</li><li>two</li></ul><pre><code>let x = 1;</code></pre></body></html>",
            None,
        )
        .unwrap();
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("[the docs](https://x.example/a)"), "{md}");
        assert!(md.contains("one") && md.contains("let x = 1;"), "{md}");
        assert!(
            !md.contains("secret") && !md.contains("Home") && !md.contains("p{}"),
            "{md}"
        );
    }

    #[test]
    fn relative_links_and_images_are_made_whole() {
        let base = Url::parse("https://x.example/docs/intro.html?v=1").unwrap();
        let md = to_markdown(
            "<p>Go <a href=\"../api (v2).html\" title=\"The &quot;API&quot;\">on  </a>now, \
             <a href=\"https://y.example/\">away</a>, <a href=\"mailto:a@x.example\">mail</a>, \
             <a>plain</a>, <a href=\"#top\">top</a> <img src=\"/i.png\" alt=\"an\n icon\"><img alt=\"none\"></p>",
            Some(&base),
        )
        .unwrap();
        assert_eq!(
            md,
            "Go [on](https://x.example/api%20\\(v2\\).html \"The \\\"API\\\"\") now, \
             [away](https://y.example/), [mail](mailto:a@x.example), plain, \
             [top](https://x.example/docs/intro.html?v=1#top) ![an icon](https://x.example/i.png)"
        );
    }

    #[test]
    fn credentials_and_other_schemes_never_leave() {
        let u = parse_url(NAME, "https://me:pw@example.com/a#b").unwrap();
        assert_eq!(u.as_str(), "https://example.com/a");
        assert!(parse_url(NAME, "file:///etc/passwd").is_err());
        assert!(parse_url(NAME, "ftp://example.com/").is_err());
        assert_eq!(host_of(&parse_url(NAME, "http://[::1]:8/").unwrap()), "::1");
    }
}
