#![allow(clippy::unwrap_used, clippy::expect_used)]
//! read_skill through the Tool trait on a real skills folder.

mod files_support;

use std::fs;
use std::os::unix::fs::symlink;

use files_support::Env;
use mm_tools::Tool;
use mm_tools::skill::{DESCRIPTION, ReadSkill};
use mm_types::ToolKind;
use serde_json::json;

const DEPLOY: &str =
    "---\ndescription: Ship a release to production\n---\n# Deploy\n\n1. Build.\n2. Ship.\n";
const REVIEW: &str = "# Review\n\nRead the diff line by line.\n";

/// A skills folder inside the env: deploy (flat, front matter), review
/// (folder), bare (no description), plus a flat-vs-folder clash.
fn skills(env: &Env) -> std::path::PathBuf {
    env.write("skills/deploy.md", DEPLOY);
    env.write("skills/review/SKILL.md", REVIEW);
    env.write("skills/bare.md", "# Just a title\n");
    env.write("skills/clash.md", "Flat text.\n");
    env.write("skills/clash/SKILL.md", "Folder text.\n");
    env.write("skills/notes.txt", "not a skill");
    env.path("skills")
}

#[test]
fn not_declared_without_skills() {
    let env = Env::with_max(1000);
    assert!(ReadSkill::new(env.path("none")).is_none());
    fs::create_dir(env.path("empty")).unwrap();
    env.write("empty/readme.txt", "x");
    assert!(ReadSkill::new(env.path("empty")).is_none());
}

#[test]
fn description_is_the_sentence_then_the_sorted_catalogue() {
    let env = Env::with_max(10_000);
    let tool = ReadSkill::new(skills(&env)).unwrap();
    let spec = tool.spec();
    assert_eq!(spec.name, "read_skill");
    assert_eq!(
        spec.description,
        format!(
            "{DESCRIPTION}\n  bare\n  clash — Flat text.\n  deploy — Ship a release to production\n  review — Read the diff line by line."
        )
    );
    assert_eq!(spec.parameters["required"], json!(["name"]));
}

#[tokio::test]
async fn output_is_the_full_markdown_flat_file_first() {
    let env = Env::with_max(10_000);
    let tool = ReadSkill::new(skills(&env)).unwrap();
    assert_eq!(env.call(&tool, json!({"name": "deploy"})).await, DEPLOY);
    assert_eq!(env.call(&tool, json!({"name": "review"})).await, REVIEW);
    assert_eq!(
        env.call(&tool, json!({"name": "clash"})).await,
        "Flat text.\n"
    );
}

#[tokio::test]
async fn unknown_name_lists_the_skills() {
    let env = Env::with_max(10_000);
    let tool = ReadSkill::new(skills(&env)).unwrap();
    assert_eq!(
        env.call(&tool, json!({"name": "x"})).await,
        "No skill named \"x\". Available skills: bare, clash, deploy, review"
    );
}

#[tokio::test]
async fn only_the_base_name_is_used_and_echoed() {
    let env = Env::with_max(10_000);
    let dir = skills(&env);
    env.write("secret.md", "outside the folder\n");
    let tool = ReadSkill::new(dir).unwrap();
    // A path is cut to its base name, which is then a known skill…
    assert_eq!(
        env.call(&tool, json!({"name": "../../deploy"})).await,
        DEPLOY
    );
    // …or not, and the message echoes the base name used.
    assert_eq!(
        env.call(&tool, json!({"name": "../secret"})).await,
        "No skill named \"secret\". Available skills: bare, clash, deploy, review"
    );
    assert_eq!(
        env.call(&tool, json!({"name": ".."})).await,
        "No skill named \"\". Available skills: bare, clash, deploy, review"
    );
    let plan = env
        .plan(&tool, json!({"name": "a/b/deploy"}))
        .await
        .unwrap();
    assert_eq!(plan.title, "deploy");
}

#[tokio::test]
async fn a_symlink_escaping_the_folder_is_not_followed() {
    let env = Env::with_max(10_000);
    let dir = skills(&env);
    env.write("outside.md", "secret\n");
    symlink(env.path("outside.md"), dir.join("leak.md")).unwrap();
    symlink("deploy.md", dir.join("ship.md")).unwrap();
    let tool = ReadSkill::new(dir).unwrap();
    assert!(!tool.spec().description.contains("leak"));
    assert_eq!(
        env.call(&tool, json!({"name": "leak"})).await,
        "No skill named \"leak\". Available skills: bare, clash, deploy, review, ship"
    );
    // A link that stays inside is a skill like any other.
    assert_eq!(env.call(&tool, json!({"name": "ship"})).await, DEPLOY);
}

#[tokio::test]
async fn long_skills_are_truncated_to_max_output() {
    let env = Env::with_max(300);
    let body: String = (0..200).map(|i| format!("step {i:03}\n")).collect(); // 1800 chars
    env.write("skills/long.md", &body);
    let tool = ReadSkill::new(env.path("skills")).unwrap();
    let out = env.call(&tool, json!({"name": "long"})).await;
    // docs/design.md#truncation: the marker line costs its length plus a
    // newline; the head is half of the rest, the tail the other half.
    let marker_line = "[… 1530 characters omitted …]\n";
    let budget = 300 - marker_line.chars().count();
    assert_eq!(1800 - budget, 1530);
    let head: String = body.chars().take(budget / 2).collect();
    let tail: String = body.chars().skip(1800 - (budget - budget / 2)).collect();
    assert_eq!(out, format!("{head}{marker_line}{tail}"));
    assert_eq!(out.chars().count(), 300);
}

#[tokio::test]
async fn plan_is_kind_read_titled_by_name_without_permission() {
    let env = Env::with_max(10_000);
    let tool = ReadSkill::new(skills(&env)).unwrap();
    let plan = env.plan(&tool, json!({"name": "review"})).await.unwrap();
    assert_eq!(plan.kind, ToolKind::Read);
    assert_eq!(plan.title, "review");
    assert!(plan.rejection.is_none());
    assert!(plan.change.is_none());
}

#[tokio::test]
async fn a_skill_edited_after_start_is_read_fresh() {
    let env = Env::with_max(10_000);
    let tool = ReadSkill::new(skills(&env)).unwrap();
    env.write("skills/review/SKILL.md", "Updated.\n");
    assert_eq!(
        env.call(&tool, json!({"name": "review"})).await,
        "Updated.\n"
    );
}

#[tokio::test]
async fn a_key_across_the_cut_is_redacted_before_truncation() {
    let env = Env::with_max(300);
    let key = "sk-live-0123456789abcdef";
    // max 300, 1800 + 24 characters: the head keeps 134 characters, so a
    // key starting at 125 is cut by the truncation.
    let body = format!("{}{key}{}", "a".repeat(125), "b".repeat(1675));
    env.write("skills/k.md", &body);
    let tool = ReadSkill::new(env.path("skills"))
        .unwrap()
        .with_secrets(&[key.to_string()]);
    let out = env.call(&tool, json!({"name": "k"})).await;
    let expected = mm_tools::output::fit(&body.replace(key, "[redacted]"), "", 300);
    assert_eq!(out, expected);
    assert!(
        out.starts_with(&format!("{}[redacted]", "a".repeat(125))),
        "{out}"
    );
    assert!(!out.contains("sk-live"), "{out}");
    // Without the keys the tool shows the text as it is.
    let plain = ReadSkill::new(env.path("skills")).unwrap();
    assert!(
        env.call(&plain, json!({"name": "k"}))
            .await
            .contains("sk-live")
    );
}

#[tokio::test]
async fn an_unknown_skill_is_a_failure_and_a_skill_is_not() {
    let env = Env::with_max(10_000);
    let tool = ReadSkill::new(skills(&env)).unwrap();
    assert!(env.outcome(&tool, json!({"name": "nope"})).await.failed);
    let out = env.outcome(&tool, json!({"name": "deploy"})).await;
    assert_eq!(out, mm_tools::ToolOutput::ok(DEPLOY));
}
