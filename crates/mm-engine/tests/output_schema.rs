//! `--output-schema`'s final request, as each provider sends it: the
//! schema as the provider's structured output, and no other tool call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use mm_mock::Reply;
use serde_json::json;

#[tokio::test]
async fn each_provider_carries_the_schema_and_asks_for_no_tool() {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    for p in [
        "openai",
        "openai-compatible",
        "ollama",
        "gemini",
        "anthropic",
    ] {
        let server = mock(vec![Reply::text("{\"n\": 1}")]).await;
        let e = engine(&cfg(p, &server.url())).with_output_schema(schema.clone());
        let (_, r) = run(&e, &ask("count"), &tools()).await;
        r.unwrap();
        let body = &server.requests()[0].body;
        match p {
            "openai" | "openai-compatible" => {
                assert_eq!(body["response_format"]["type"], "json_schema", "{p}");
                assert_eq!(body["response_format"]["json_schema"]["schema"], schema);
                assert_eq!(body["tool_choice"], "none", "{p}");
            }
            "ollama" => {
                assert_eq!(body["format"], schema);
                assert!(body.get("tools").is_none(), "{body}");
            }
            "gemini" => {
                let g = &body["generationConfig"];
                assert_eq!(g["responseMimeType"], "application/json");
                assert_eq!(g["responseJsonSchema"], schema);
                assert!(body.get("tools").is_none(), "{body}");
            }
            _ => {
                let tools = body["tools"].as_array().unwrap();
                let answer = tools.last().unwrap();
                assert_eq!(answer["name"], mm_engine::ANSWER_TOOL);
                assert_eq!(answer["input_schema"]["properties"]["answer"], schema);
                assert_eq!(
                    body["tool_choice"],
                    json!({"type": "tool", "name": mm_engine::ANSWER_TOOL})
                );
                assert!(body.get("thinking").is_none(), "{body}");
            }
        }
        // Without the schema, nothing of it is sent.
        let server = mock(vec![Reply::text("x")]).await;
        let (_, r) = run(&engine(&cfg(p, &server.url())), &ask("count"), &tools()).await;
        r.unwrap();
        let body = &server.requests()[0].body;
        for k in ["response_format", "format", "tool_choice"] {
            assert!(body.get(k).is_none(), "{p}: {k} in {body}");
        }
        assert!(body["generationConfig"].get("responseJsonSchema").is_none());
    }
}
