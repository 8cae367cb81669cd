//! What a question attaches, end to end through `mm-repl -p` and the
//! mock: a mentioned text file's text, a mentioned picture as each wire's
//! image part (or, for a model that cannot see, one line instead), and a
//! picture `read_file` returns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod contract_support;

use common::{World, messages, text};
use contract_support::*;
use mm_mock::Reply;
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG: [u8; 70] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 100, 248, 207, 80, 15, 0, 3,
    134, 1, 128, 90, 52, 125, 107, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

/// [`PNG`] in base64.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// A world on `provider` (`openai-compatible` or `anthropic`) with the
/// model `model` and `extra` settings.
fn on(provider: &str, model: &str, script: Vec<Reply>, extra: &str) -> World {
    let w = World::new(script, "");
    let base = match provider {
        "anthropic" | "gemini" | "ollama" => w.server.url(),
        _ => format!("{}/v1", w.server.url()),
    };
    w.write_config(&format!(
        "model: {provider}/{model}\nbaseURL: {base}\nretries: 0\nwatchdog: 15\nlsp:\n  servers: []\n{extra}"
    ));
    w
}

/// The body of every request the mock got, in order.
fn bodies(w: &World) -> Vec<Value> {
    w.requests().into_iter().map(|r| r.body).collect()
}

#[test]
fn a_mentioned_text_file_sends_its_text_and_says_how_much() {
    let w = World::new(vec![Reply::text("Read it.")], "");
    std::fs::write(w.cwd.join("README.md"), "# mm\nA small agent.\nMIT\n").unwrap();
    let out = w.run(&["-p", "summarise @README.md"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        messages(&w.chats()[0])[1]["content"],
        "summarise @README.md\n\n[attached file: README.md]\n```\n# mm\nA small agent.\nMIT\n```"
    );
    assert!(stderr.contains("attached README.md (3 lines)"), "{stderr}");
}

#[test]
fn a_mentioned_picture_is_an_image_url_data_url_on_the_openai_wire() {
    let w = on(
        "openai-compatible",
        "test",
        vec![Reply::text("A dot.")],
        "vision: true\n",
    );
    std::fs::write(w.cwd.join("shot.png"), PNG).unwrap();
    let out = w.run(&["-p", "what is in @shot.png?"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let user = &messages(&w.chats()[0])[1];
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": "what is in @shot.png?\n\n[attached file: shot.png]"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}}
        ])
    );
    assert!(stderr.contains("attached shot.png (an image)"), "{stderr}");
}

#[test]
fn a_mentioned_picture_is_an_image_block_on_the_anthropic_wire() {
    let w = on("anthropic", "claude-test", vec![Reply::text("A dot.")], "");
    std::fs::write(w.cwd.join("shot.png"), PNG).unwrap();
    let out = w.run(&["-p", "what is in @shot.png?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let body = &bodies(&w)[0];
    let content = &body["messages"][0]["content"];
    assert_eq!(content[1]["type"], "image", "{content:#}");
    assert_eq!(
        content[1]["source"],
        json!({"type": "base64", "media_type": "image/png", "data": PNG_B64}),
        "{content:#}"
    );
}

#[test]
fn a_mentioned_picture_is_inline_data_on_the_gemini_wire() {
    let w = on("gemini", "gemini-test", vec![Reply::text("A dot.")], "");
    std::fs::write(w.cwd.join("shot.png"), PNG).unwrap();
    let out = w.run(&["-p", "what is in @shot.png?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "A dot.\n");
    let body = &bodies(&w)[0];
    let parts = &body["contents"][0]["parts"];
    assert_eq!(
        parts[0]["text"], "what is in @shot.png?\n\n[attached file: shot.png]",
        "{body:#}"
    );
    assert_eq!(
        parts[1],
        json!({"inline_data": {"mime_type": "image/png", "data": PNG_B64}}),
        "{body:#}"
    );
}

#[test]
fn a_mentioned_picture_is_in_images_on_the_ollama_wire() {
    let w = on(
        "ollama",
        "llava",
        vec![Reply::text("A dot.")],
        "vision: true\n",
    );
    std::fs::write(w.cwd.join("shot.png"), PNG).unwrap();
    let out = w.run(&["-p", "what is in @shot.png?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "A dot.\n");
    let chat = w
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/chat")
        .expect("a chat request");
    let user = &chat.body["messages"][1];
    assert_eq!(user["role"], "user", "{:#}", chat.body);
    assert_eq!(
        user["content"],
        "what is in @shot.png?\n\n[attached file: shot.png]"
    );
    assert_eq!(user["images"], json!([PNG_B64]), "{:#}", chat.body);
}

#[test]
fn a_pasted_picture_path_attaches_without_an_at() {
    // A terminal pastes a dropped file as its absolute path, quoted when
    // it has a space; a picture that does not exist stays text.
    let w = on(
        "openai-compatible",
        "test",
        vec![Reply::text("A dot.")],
        "vision: true\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("my shot.png");
    std::fs::write(&shot, PNG).unwrap();
    let shown = shot.display().to_string();
    let missing = dir.path().join("gone.png").display().to_string();
    // A file manager's copy: a file: URL, spaces percent-encoded.
    let second = dir.path().join("dot two.png");
    std::fs::write(&second, PNG).unwrap();
    let second_shown = second.display().to_string();
    let url = format!("file://{}", second_shown.replace(' ', "%20"));
    let question = format!("what is in '{shown}' and {missing}? Also {url}");
    let out = w.run(&["-p", &question], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let user = &messages(&w.chats()[0])[1];
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": format!(
                "{question}\n\n[attached file: {shown}]\n[attached file: {second_shown}]"
            )},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}}
        ])
    );
    for path in [&shown, &second_shown] {
        assert!(
            stderr.contains(&format!("attached {path} (an image)")),
            "{stderr}"
        );
    }
}

#[test]
fn a_model_that_cannot_see_gets_one_line_instead() {
    let w = on(
        "openai-compatible",
        "test",
        vec![Reply::text("No picture.")],
        "vision: false\n",
    );
    std::fs::write(w.cwd.join("shot.png"), PNG).unwrap();
    let out = w.run(&["-p", "what is in @shot.png?"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        messages(&w.chats()[0])[1]["content"],
        "what is in @shot.png?\n\n[attached file: shot.png]\n[the image shot.png is not shown: this model cannot see images]"
    );
    assert!(
        stderr.contains("attached shot.png (an image, not shown: the model cannot see images)"),
        "{stderr}"
    );
}

#[test]
fn read_file_of_a_picture_returns_the_picture() {
    let call = || {
        vec![
            Reply::tool_call("c1", "read_file", r#"{"path": "shot.png"}"#),
            Reply::text("A dot."),
        ]
    };
    // OpenAI-compatible: the tool message holds text; the picture follows.
    let w = on("openai-compatible", "test", call(), "vision: true\n");
    std::fs::write(w.cwd.join("shot.png"), PNG).unwrap();
    let run = ask(&w);
    run.assert_ok();
    let second = messages(&w.chats()[1]);
    let n = second.len();
    assert_eq!(second[n - 2]["role"], "tool");
    assert_eq!(second[n - 2]["content"], "[image shot.png: image/png]");
    assert_eq!(second[n - 1]["role"], "user");
    assert_eq!(
        second[n - 1]["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{PNG_B64}")
    );
    // Anthropic: inside the tool result.
    let w = on("anthropic", "claude-test", call(), "");
    std::fs::write(w.cwd.join("shot.png"), PNG).unwrap();
    let run = ask(&w);
    run.assert_ok();
    let second = &bodies(&w)[1]["messages"];
    let last = second.as_array().unwrap().last().unwrap();
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(
        last["content"][0]["content"],
        json!([
            {"type": "text", "text": "[image shot.png: image/png]"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}
        ])
    );
}

#[test]
fn a_resumed_session_sends_its_pictures_again() {
    let w = on(
        "openai-compatible",
        "test",
        vec![Reply::text("A dot."), Reply::text("Still a dot.")],
        "vision: true\n",
    );
    std::fs::write(w.cwd.join("shot.png"), PNG).unwrap();
    let out = w.run(&["-p", "what is in @shot.png?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The picture is gone from the disk: the session file holds it.
    std::fs::remove_file(w.cwd.join("shot.png")).unwrap();
    let out = w.run(&["--continue", "-p", "and now?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let user = &messages(&w.chats()[1])[1];
    assert_eq!(
        user["content"][1]["image_url"]["url"],
        format!("data:image/png;base64,{PNG_B64}")
    );
}

#[test]
fn a_llama_server_that_says_it_sees_gets_the_picture() {
    for (vision, sent) in [(true, true), (false, false)] {
        let props = json!({
            "default_generation_settings": {"n_ctx": 8192},
            "modalities": {"vision": vision},
        });
        let w = World::serving(
            vec![Reply::text("ok")],
            "",
            mm_mock::Options {
                routes: vec![mm_mock::Route::get("/props", props)],
                ..mm_mock::Options::default()
            },
        );
        std::fs::write(w.cwd.join("shot.png"), PNG).unwrap();
        let out = w.run(&["-p", "what is in @shot.png?"], None);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let content = &messages(&w.chats()[0])[1]["content"];
        assert_eq!(content.is_array(), sent, "{content}");
        assert_eq!(
            stderr.contains("attached shot.png (an image)"),
            sent,
            "{stderr}"
        );
    }
}
