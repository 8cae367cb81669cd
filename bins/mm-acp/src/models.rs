//! The session's model as an editor's choice: a `model` config option
//! (category `model`) whose values are the server's models, each as
//! `PROVIDER/MODEL`. The session answers with the model in use alone; the
//! server's list follows as a `config_option_update` once it is in, so
//! that `session/new` never waits for it.

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelect, SessionConfigSelectOption, SessionConfigSelectOptions, SessionUpdate,
};
use mm_agent::ModelEntry;

/// The id of the option, as `session/set_config_option` names it.
pub const MODEL_OPTION: &str = "model";

/// The choices a session offers: the model in use, then the server's.
#[derive(Debug, Clone, Default)]
pub struct Choices {
    /// `PROVIDER/MODEL` of each listed model, with its window if known.
    listed: Vec<(String, Option<u64>)>,
}

impl Choices {
    /// The server's models of `provider`.
    pub fn of(provider: &str, models: Vec<ModelEntry>) -> Choices {
        Choices {
            listed: models
                .into_iter()
                .map(|m| (format!("{provider}/{}", m.id), m.window))
                .collect(),
        }
    }

    /// The option with `current` selected (listed first when the server
    /// does not list it).
    pub fn option(&self, current: &str) -> SessionConfigOption {
        let mut rows: Vec<SessionConfigSelectOption> = Vec::new();
        if !self.listed.iter().any(|(name, _)| name == current) {
            rows.push(SessionConfigSelectOption::new(
                current.to_owned(),
                current.to_owned(),
            ));
        }
        rows.extend(self.listed.iter().map(|(name, window)| {
            SessionConfigSelectOption::new(name.clone(), name.clone())
                .description(window.map(|w| format!("{w} tokens")))
        }));
        SessionConfigOption::new(
            MODEL_OPTION,
            "Model",
            SessionConfigKind::Select(SessionConfigSelect::new(
                current.to_owned(),
                SessionConfigSelectOptions::Ungrouped(rows),
            )),
        )
        .description(Some("The model server's models".to_owned()))
        .category(Some(SessionConfigOptionCategory::Model))
    }

    /// The update that tells the editor the options changed.
    pub fn update(&self, current: &str) -> SessionUpdate {
        SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(vec![self.option(current)]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_in_use_is_selected_and_listed_once() {
        let choices = Choices::of(
            "ollama",
            vec![
                ModelEntry {
                    id: "llama3.1".into(),
                    window: None,
                },
                ModelEntry {
                    id: "qwen3:8b".into(),
                    window: Some(40960),
                },
            ],
        );
        let v = serde_json::to_value(choices.option("ollama/qwen3:8b")).unwrap();
        assert_eq!(v["id"], "model");
        assert_eq!(v["category"], "model");
        assert_eq!(v["type"], "select");
        assert_eq!(v["currentValue"], "ollama/qwen3:8b");
        let values: Vec<&str> = v["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["value"].as_str().unwrap())
            .collect();
        assert_eq!(values, ["ollama/llama3.1", "ollama/qwen3:8b"]);
        assert_eq!(v["options"][1]["description"], "40960 tokens");
        // A model the server does not list is still the one shown.
        let v = serde_json::to_value(Choices::default().option("ollama/x")).unwrap();
        assert_eq!(v["options"][0]["value"], "ollama/x");
    }
}
