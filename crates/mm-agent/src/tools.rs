//! Which tools a session declares: one line per tool.

use std::path::Path;
use std::sync::Arc;

use mm_config::Config;
use mm_tools::Tool;
use mm_tools::bash::jobs::Jobs;
use mm_tools::bash::{Bash, BashSettings};
use mm_tools::files::{EditFile, ReadFile, WriteFile};
use mm_tools::glob::Glob;
use mm_tools::grep::Grep;
use mm_tools::job::JobTool;
use mm_tools::lsp::Lsp;
use mm_tools::skill::ReadSkill;
use mm_tools::toolbox::{Toolbox, ToolboxSettings};

/// A session's tools, with what a front end shows about them.
pub struct Tools {
    /// The tools the model may call, and the loop detector that watches
    /// their calls.
    pub toolbox: Toolbox,
    /// The language-server client behind `lsp`, kept to shut servers down.
    pub lsp: Option<Arc<mm_lsp::Client>>,
    /// `[warning: lsp server … not found on the PATH — skipped]` lines, for
    /// the servers the user listed in `lsp.servers`.
    pub warnings: Vec<String>,
    /// The language servers of the built-in list that are not on the
    /// PATH: said once, in the banner's line, not one warning each.
    pub lsp_missing: Vec<String>,
    /// The model's last checklist, which the `todo` tool writes.
    pub checklist: mm_tools::todo::Checklist,
    /// The session's background commands, for `/jobs` and to end them
    /// with the session.
    pub jobs: Arc<Jobs>,
    /// The agents the `task` tool runs, and their finished runs.
    pub subagents: Arc<crate::subagent::Subagents>,
    /// Agent files that could not be loaded, one line each.
    pub agent_warnings: Vec<String>,
}

/// The tools a small window keeps declared: what a model needs to act on
/// files and commands, the lazy `mcp` entry, and `exit_plan` in plan mode.
const CORE: [&str; 6] = [
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "exit_plan",
    "mcp",
];

/// What `toolbox` declares to the model in `mode`: every tool but those
/// the mode hides (plan mode's tools outside it).
pub(crate) fn declarations(toolbox: &Toolbox, mode: mm_ui::AgentMode) -> Vec<mm_engine::ToolDecl> {
    let hidden = toolbox.hidden_in(mode);
    toolbox
        .specs()
        .into_iter()
        .filter(|s| !hidden.contains(&s.name))
        .map(|s| mm_engine::ToolDecl {
            name: s.name,
            description: s.description,
            parameters: s.parameters,
        })
        .collect()
}

/// A declaration's short description: its first clause (up to the first
/// `. ` or `; `), which names what the tool does; the fields keep theirs.
fn short_description(description: &str) -> String {
    let end = [". ", "; ", ": "]
        .iter()
        .filter_map(|sep| description.find(sep))
        .min()
        .unwrap_or(description.len());
    let first = description[..end].trim_end_matches('.');
    format!("{first}.")
}

/// Keep only the [`CORE`] declarations, with their short descriptions;
/// the names left out, in order.
pub(crate) fn keep_core(decls: &mut Vec<mm_engine::ToolDecl>) -> Vec<String> {
    let dropped = decls
        .iter()
        .filter(|d| !CORE.contains(&d.name.as_str()))
        .map(|d| d.name.clone())
        .collect();
    decls.retain(|d| CORE.contains(&d.name.as_str()));
    // Without `job_output` a background job could not be read: `bash`
    // loses its `background` parameter too.
    for d in decls.iter_mut().filter(|d| d.name == "bash") {
        d.description = d.description.replace(mm_tools::bash::BACKGROUND, "");
        if let Some(props) = d
            .parameters
            .get_mut("properties")
            .and_then(|p| p.as_object_mut())
        {
            props.remove("background");
        }
    }
    // The lazy `mcp` entry's description is its catalogue: it stays whole.
    for d in decls.iter_mut().filter(|d| d.name != "mcp") {
        d.description = short_description(&d.description);
    }
    dropped
}

/// Every variable that may hold a key mm uses: each provider's, and the
/// configured `apiKeyEnv`. Tools' children never inherit them.
pub fn key_vars(config: &Config) -> Vec<String> {
    let mut vars: Vec<String> = mm_engine::all_key_vars()
        .into_iter()
        .map(str::to_owned)
        .collect();
    vars.extend(config.api_key_env.clone());
    vars
}

/// Build the session's tools from the settings for a session rooted at
/// `cwd`; `secrets` are the key values to redact from every tool result.
pub fn toolbox(config: &Config, cwd: &Path, secrets: &[String]) -> Tools {
    let mut tools: Vec<Box<dyn Tool>> = Vec::new();
    let jobs = Arc::new(Jobs::new());
    if config.bash_tool {
        let strip = key_vars(config);
        tools.push(Box::new(
            Bash::new(BashSettings {
                timeout: std::time::Duration::from_secs(config.bash_timeout),
                secrets_env: strip,
                secrets: secrets.to_vec(),
            })
            .with_jobs(jobs.clone()),
        ));
    }
    if config.edit_tools {
        tools.push(Box::new(ReadFile::new().with_secrets(secrets)));
        tools.push(Box::new(WriteFile::new()));
        tools.push(Box::new(EditFile::new()));
        tools.push(Box::new(Grep::new().with_secrets(secrets)));
        tools.push(Box::new(Glob));
    }
    if config.bash_tool {
        tools.push(Box::new(JobTool::output(jobs.clone())));
        tools.push(Box::new(JobTool::kill(jobs.clone())));
    }
    if let Some(skill) = ReadSkill::new(config.skills_dir.clone()).map(|s| s.with_secrets(secrets))
    {
        tools.push(Box::new(skill));
    }
    let (lsp, mut warnings) = Lsp::new(config.lsp.servers.clone(), cwd.to_path_buf());
    let client = lsp.as_ref().map(|l| l.client().clone());
    let mut lsp_missing = Vec::new();
    if config.lsp.servers == mm_config::default_lsp_servers() {
        let found: Vec<&str> = client
            .iter()
            .flat_map(|c| c.servers().iter().map(|s| s.name.as_str()))
            .collect();
        lsp_missing = config
            .lsp
            .servers
            .iter()
            .filter(|s| !found.contains(&s.name.as_str()))
            .map(|s| s.name.clone())
            .collect();
        warnings.clear();
    }
    if let Some(lsp) = lsp {
        tools.push(Box::new(lsp));
    }
    tools.push(Box::new(mm_tools::web::WebFetch));
    if let Some(url) = &config.web_search.url {
        tools.push(Box::new(mm_tools::web::WebSearch::new(url.clone())));
    }
    let checklist = mm_tools::todo::Checklist::default();
    tools.push(Box::new(mm_tools::todo::Todo::new(checklist.clone())));
    let (agents, agent_warnings) = crate::subagent::agents(&config.user_dir, cwd);
    let subagents = Arc::new(crate::subagent::Subagents::new(agents));
    tools.push(Box::new(crate::subagent::Task::new(subagents.clone())));
    tools.push(Box::new(mm_tools::exit_plan::ExitPlan));
    let toolbox = Toolbox::new(
        tools,
        ToolboxSettings {
            preview_lines: config.preview_lines,
            secrets: secrets.to_vec(),
        },
    );
    Tools {
        toolbox,
        lsp: client,
        warnings,
        lsp_missing,
        checklist,
        jobs,
        subagents,
        agent_warnings,
    }
}
