//! `--print-config`'s lines that need the provider registry: the key
//! variable in force and whether it is set, never its value.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_agent::start::key_in_force;
use mm_config::{Config, KeyInForce};

fn config(model: &str, api_key_env: Option<&str>) -> Config {
    Config {
        model: model.into(),
        api_key_env: api_key_env.map(str::to_owned),
        ..Config::default()
    }
}

#[test]
fn the_key_in_force_is_the_providers_first_unless_named() {
    let nothing_set = |_: &str| false;
    assert_eq!(
        key_in_force(&config("openai/gpt-5", None), nothing_set),
        KeyInForce {
            var: Some("OPENAI_API_KEY".into()),
            set: false
        }
    );
    // Gemini reads GOOGLE_API_KEY when GEMINI_API_KEY is unset: set.
    assert_eq!(
        key_in_force(&config("gemini/gemini-2.5-flash", None), |v| v
            == "GOOGLE_API_KEY"),
        KeyInForce {
            var: Some("GEMINI_API_KEY".into()),
            set: true
        }
    );
    assert_eq!(
        key_in_force(&config("ollama/qwen3:8b", None), nothing_set),
        KeyInForce {
            var: None,
            set: false
        }
    );
    assert_eq!(
        key_in_force(
            &config("openai-compatible/llama", Some("MY_PROXY_KEY")),
            |v| v == "MY_PROXY_KEY"
        ),
        KeyInForce {
            var: Some("MY_PROXY_KEY".into()),
            set: true
        }
    );
}

#[test]
fn print_config_names_the_variable_and_whether_it_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = std::collections::BTreeMap::new();
    env.insert("HOME".to_string(), dir.path().display().to_string());
    env.insert("MM_MODEL".to_string(), "openai/gpt-5".to_string());
    let sources = mm_config::Sources {
        cwd: dir.path().to_path_buf(),
        env,
        ..mm_config::Sources::default()
    };
    let loaded = mm_config::load(&sources).unwrap();
    let printed = loaded.print_with(&mm_config::Resolved {
        window: None,
        key: Some(key_in_force(&loaded.config, |_| false)),
    });
    let line = printed
        .lines()
        .find(|l| l.starts_with("apiKeyEnv"))
        .unwrap();
    assert_eq!(
        line,
        "apiKeyEnv           = OPENAI_API_KEY (not set)  # default"
    );
}
