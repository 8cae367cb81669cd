//! `read_skill`: the full markdown of one skill under `skillsDir`. The
//! finding rules (flat file first, no traversal, no symlink escape) live in
//! `mm-skills`; this tool only declares the catalogue and shapes the text.
//! Key values are redacted before the text is cut
//! (docs/design.md#keys-stay-out-of-tools).

use std::path::PathBuf;

use serde::Deserialize;

use crate::output::fit;
use crate::tool::{
    Described, Plan, Tool, ToolContext, ToolOutput, ToolSpec, parse_args, text_field,
};
use mm_redact::redacted;

const NAME: &str = "read_skill";

/// `read_skill`: what the tool is, for every consumer.
pub const ROW: crate::tool::ToolRow = crate::tool::ToolRow {
    name: std::borrow::Cow::Borrowed(NAME),
    family: mm_types::ToolFamily::Skill,
    kind: mm_types::ToolKind::Read,
    title_from: Some("name"),
    echoes: false,
    changes_files: false,
    rejection: None,
};

/// The sentence before the catalogue in the tool's description.
pub const DESCRIPTION: &str = "Read a skill: a markdown procedure for a kind of task. When a \
                               task matches one of these skills, read it first and follow it. \
                               Available skills:";

/// The `read_skill` tool. Reads only: no permission, kind `read`.
#[derive(Debug)]
pub struct ReadSkill {
    dir: PathBuf,
    catalogue: String,
    secrets: Vec<String>,
}

impl ReadSkill {
    /// `None` when `skills_dir` holds no skill: the tool is then not
    /// declared at all.
    pub fn new(skills_dir: PathBuf) -> Option<ReadSkill> {
        let skills = mm_skills::discover(&skills_dir);
        if skills.is_empty() {
            return None;
        }
        Some(ReadSkill {
            catalogue: mm_skills::catalogue(&skills),
            dir: skills_dir,
            secrets: Vec::new(),
        })
    }

    /// Key values to replace by `[redacted]` before the text is cut
    /// (docs/design.md#keys-stay-out-of-tools): give it the toolbox's secrets.
    pub fn with_secrets(mut self, secrets: &[String]) -> Self {
        self.secrets = secrets.to_vec();
        self
    }

    /// The base name asked for, or the unknown-name text.
    fn find(&self, args: &serde_json::Value) -> Result<mm_skills::Skill, String> {
        let a: Args = parse_args(NAME, args)?;
        let name = mm_skills::base_name(&a.name);
        mm_skills::find(&self.dir, name).ok_or_else(|| {
            let names: Vec<String> = mm_skills::discover(&self.dir)
                .into_iter()
                .map(|s| s.name)
                .collect();
            format!(
                "No skill named \"{name}\". Available skills: {}",
                names.join(", ")
            )
        })
    }
}

#[derive(Deserialize)]
struct Args {
    name: String,
}

#[async_trait::async_trait]
impl Tool for ReadSkill {
    fn row(&self) -> &crate::tool::ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_string(),
            description: format!("{DESCRIPTION}\n{}", self.catalogue),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Skill name, exactly as listed in the tool description."}
                },
                "required": ["name"]
            }),
        }
    }

    /// `📖 read_skill: <name>` with the base name that is looked up, kind
    /// `read`.
    fn describe(&self, args: &serde_json::Value, _ctx: &ToolContext) -> Described {
        Described {
            title: text_field(args, "name")
                .map(mm_skills::base_name)
                .filter(|n| !n.is_empty())
                .unwrap_or(NAME)
                .to_string(),
            kind: ROW.kind,
            locations: Vec::new(),
        }
    }

    async fn plan(&self, args: &serde_json::Value, _ctx: &ToolContext) -> Result<Plan, String> {
        let skill = self.find(args)?;
        Ok(ROW.plan(skill.name))
    }

    async fn run(&self, args: &serde_json::Value, _plan: Plan, ctx: &ToolContext) -> ToolOutput {
        let skill = match self.find(args) {
            Ok(s) => s,
            Err(text) => return ToolOutput::fail(text),
        };
        match mm_skills::read(&skill) {
            Ok(markdown) => {
                ToolOutput::ok(fit(&redacted(&markdown, &self.secrets), "", ctx.max_output))
            }
            Err(e) => ToolOutput::fail(format!("cannot read skill \"{}\": {e}", skill.name)),
        }
    }
}
