//! The conversation `--demo` plays (`mm-repl`, `mm-tui`): the model
//! reasons, lists the folder with `bash`, then sums up. Works in every wire
//! format.

use crate::script::{Reply, Step};
use crate::server::{MockServer, Options};

/// The demo's model: [`demo_script`] on a free port of 127.0.0.1, played
/// again from the start whenever it runs out.
pub async fn start_demo() -> std::io::Result<MockServer> {
    let options = Options {
        port: 0,
        repeat: true,
        ..Options::default()
    };
    MockServer::start_with(demo_script(), options).await
}

/// A short scripted conversation: a `bash` call (`ls`) with reasoning, then
/// a text answer with reasoning.
pub fn demo_script() -> Vec<Reply> {
    vec![
        Reply::stream(vec![
            Step::Reasoning {
                text: "The user wants to know what is here. ".into(),
                signature: None,
            },
            Step::Reasoning {
                text: "Listing the folder with ls will show it.".into(),
                signature: Some("mm-mock-demo-signature-1".into()),
            },
            Step::text("Let me look at the files."),
            Step::tool_start(0, "call_demo_ls", "bash"),
            Step::tool_args(0, "{\"command\":"),
            Step::tool_args(0, "\"ls\"}"),
            Step::Usage {
                prompt: 412,
                completion: 38,
            },
        ]),
        Reply::stream(vec![
            Step::Reasoning {
                text: "The listing is in the tool result; summarise it briefly.".into(),
                signature: Some("mm-mock-demo-signature-2".into()),
            },
            Step::text("That is the content of this folder"),
            Step::text(" (see the `ls` output above). "),
            Step::text("This was a demo: mm ran a tool and read its result. "),
            Step::text("Point mm at a real model to do actual work."),
            Step::Usage {
                prompt: 530,
                completion: 41,
            },
        ]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_calls_ls_then_answers() {
        let script = demo_script();
        assert_eq!(script.len(), 2);
        let Reply::Stream { steps } = &script[0] else {
            panic!("first reply streams")
        };
        let args: String = steps
            .iter()
            .filter_map(|s| match s {
                Step::ToolArgs { fragment, .. } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        let args: serde_json::Value = serde_json::from_str(&args).unwrap();
        assert_eq!(args, serde_json::json!({"command": "ls"}));
        assert!(
            steps
                .iter()
                .any(|s| matches!(s, Step::ToolStart { name, .. } if name == "bash"))
        );
        let Reply::Stream { steps } = &script[1] else {
            panic!("second reply streams")
        };
        assert!(steps.iter().any(|s| matches!(s, Step::Text { .. })));
        assert!(steps.iter().any(|s| matches!(s, Step::Reasoning { .. })));
    }
}
