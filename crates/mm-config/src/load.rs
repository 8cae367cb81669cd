//! The loader: defaults → user file → project file → environment → flags,
//! later wins (docs/reference/settings.md), merged with figment.
//!
//! `load` reads nothing hidden: the working directory, the environment and
//! the flags come in `Sources`, so tests pass their own (no real HOME).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use figment::Figment;
use figment::value::Value;

use crate::dirs::BaseDirs;
use crate::error::{ConfigError, from_figment};
use crate::provider::Layer;
use crate::settings::{
    Config, McpServer, PermissionSetting, SandboxSetting, Thinking, mcp_server_name_problem,
};
use crate::table::{SETTINGS, project_may_set};

/// Where a value came from, as `--print-config` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Built in.
    Default,
    /// `$XDG_CONFIG_HOME/mm/config.yaml`.
    UserFile(PathBuf),
    /// `<cwd>/.mm/config.yaml`: not trusted
    /// (docs/design.md#untrusted-project-file).
    ProjectFile(PathBuf),
    /// The one file named by `MM_CONFIG` or `--config` (`via`), which
    /// replaces both files and is trusted like the user's.
    ChosenFile {
        /// The file.
        path: PathBuf,
        /// What named it: `MM_CONFIG` or `--config`.
        via: String,
    },
    /// One environment variable: `MM_MODEL`.
    Env(String),
    /// One command-line flag: `--model`.
    Flag(String),
}

impl Origin {
    /// The file behind this origin, if any.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Origin::UserFile(p) | Origin::ProjectFile(p) | Origin::ChosenFile { path: p, .. } => {
                Some(p)
            }
            _ => None,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::UserFile(p) => write!(f, "user file {}", p.display()),
            Origin::ProjectFile(p) => write!(f, "project file {}", p.display()),
            Origin::ChosenFile { path, via } => write!(f, "file {} ({via})", path.display()),
            Origin::Env(var) => write!(f, "env {var}"),
            Origin::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// Settings given on the command line. Each front end maps its own flags
/// here; origins name them `--model`, `--base-url`, `--permissions`,
/// `--thinking`, `--max-turns`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--model`: `PROVIDER/MODEL`.
    pub model: Option<String>,
    /// `--base-url`: the model server's address.
    pub base_url: Option<String>,
    /// `--permissions`: the default for calls no rule speaks of (the rules of
    /// the files are kept).
    pub permissions: Option<PermissionSetting>,
    /// `--thinking`.
    pub thinking: Option<Thinking>,
    /// `--max-turns`: model requests per question.
    pub max_turns: Option<u32>,
}

/// Everything the loader reads besides the files themselves.
#[derive(Clone, Default)]
pub struct Sources {
    /// The session's working directory: `.mm/config.yaml` is looked for here,
    /// and relative `MM_CONFIG`/`--config` paths are taken from here.
    pub cwd: PathBuf,
    /// The environment (the process's, or a test's). Only `MM_MODEL`,
    /// `MM_BASE_URL`, `MM_PERMISSIONS`, `MM_CONFIG`, `HOME`, the `XDG_*_HOME`
    /// variables and the key variable in force (set or not) are looked at.
    pub env: BTreeMap<String, String>,
    /// `--config FILE`: like `MM_CONFIG`, and wins over it.
    pub config_file: Option<PathBuf>,
    /// The command line's settings, the last layer.
    pub flags: Overrides,
}

impl fmt::Debug for Sources {
    /// Variable names only: the environment holds API keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sources")
            .field("cwd", &self.cwd)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("config_file", &self.config_file)
            .field("flags", &self.flags)
            .finish()
    }
}

impl Sources {
    /// The sources of this process: its environment (variables that are
    /// not UTF-8 are skipped), plus `HOME` from the system when the
    /// environment lacks it.
    pub fn from_process(
        cwd: impl Into<PathBuf>,
        config_file: Option<PathBuf>,
        flags: Overrides,
    ) -> Sources {
        let mut env: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        if !env.contains_key("HOME")
            && let Ok(home) = etcetera::home_dir()
        {
            env.insert("HOME".to_owned(), home.display().to_string());
        }
        Sources {
            cwd: cwd.into(),
            env,
            config_file,
            flags,
        }
    }

    /// A variable's value; an empty one counts as not set.
    fn var(&self, name: &str) -> Option<&str> {
        self.env
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// The merged settings and where each value came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The settings, every layer merged and checked.
    pub config: Config,
    /// Every key of [`SETTINGS`], in that order.
    origins: Vec<(&'static str, Origin)>,
}

impl Loaded {
    /// Where `key` (camelCase, dotted: `compact.threshold`) came from.
    pub fn origin(&self, key: &str) -> Option<&Origin> {
        self.origins.iter().find(|(k, _)| *k == key).map(|(_, o)| o)
    }

    /// Every key with its origin, in [`SETTINGS`] order.
    pub fn origins(&self) -> impl Iterator<Item = (&'static str, &Origin)> {
        self.origins.iter().map(|(k, o)| (*k, o))
    }
}

/// Loads the settings from `sources`; the first bad input is the error.
pub fn load(sources: &Sources) -> Result<Loaded, ConfigError> {
    let dirs = BaseDirs::from_env(&sources.env)?;
    let defaults = Config::defaults_in(&dirs);
    let user_file = dirs.config.join("mm").join("config.yaml");

    let default_layer = Layer::values(Origin::Default, &defaults)?;
    let mut files = Vec::new();
    let chosen = match (&sources.config_file, sources.var("MM_CONFIG")) {
        (Some(path), _) => Some((path.clone(), "--config")),
        (None, Some(path)) => Some((PathBuf::from(path), "MM_CONFIG")),
        (None, None) => None,
    };
    if let Some((path, via)) = chosen {
        let path = sources.cwd.join(path);
        let origin = Origin::ChosenFile {
            path: path.clone(),
            via: via.to_owned(),
        };
        files.extend(Layer::yaml_file(origin, &path, true)?);
    } else {
        files.extend(Layer::yaml_file(
            Origin::UserFile(user_file.clone()),
            &user_file,
            false,
        )?);
        let project = sources.cwd.join(".mm").join("config.yaml");
        if let Some(layer) =
            Layer::yaml_file(Origin::ProjectFile(project.clone()), &project, false)?
        {
            check_project_keys(&layer, &default_layer, &dirs.display_short(&user_file))?;
            files.push(layer);
        }
    }

    files.iter_mut().for_each(normalize);
    // Each file is checked alone over the defaults: a bad value is an
    // error even where a later layer would override it.
    for file in &files {
        check_layer(file, &default_layer)?;
    }

    let mut layers = vec![default_layer];
    layers.extend(files);
    layers.extend(env_layers(sources)?);
    layers.extend(flag_layers(&sources.flags)?);

    let all_origins: Vec<Origin> = layers.iter().map(|l| l.origin.clone()).collect();
    let figment = layers
        .iter()
        .fold(Figment::new(), |f, layer| f.merge(layer));
    let mut config: Config = figment
        .extract()
        .map_err(|e| from_figment(e, &all_origins, &Origin::Default))?;
    // Files were checked alone; a variable or a flag (`--max-turns 0`) is
    // checked here, named by where the value came from.
    if let Some((key, problem)) = crate::ranges::first_out_of_range(&config) {
        let at = figment
            .find_metadata(key)
            .and_then(|m| all_origins.iter().find(|o| o.to_string() == m.name))
            .cloned()
            .unwrap_or(Origin::Default);
        return Err(bad(&at, key, problem));
    }
    config.skills_dir = dirs.expand_tilde(&config.skills_dir);
    config.sessions.dir = dirs.expand_tilde(&config.sessions.dir);
    config.checkpoints.dir = dirs.expand_tilde(&config.checkpoints.dir);
    config.user_dir = defaults.user_dir.clone();

    let origins = SETTINGS
        .iter()
        .map(|row| {
            let key = &row.key;
            // A mapping merges across layers; name the last one that set it.
            let origin = if *key == "mcpServers" {
                layers
                    .iter()
                    .rev()
                    .find(|l| {
                        l.dict
                            .get(*key)
                            .is_some_and(|v| v.as_dict().is_some_and(|d| !d.is_empty()))
                    })
                    .map(|l| l.origin.clone())
            } else {
                figment
                    .find_metadata(key)
                    .and_then(|m| all_origins.iter().find(|o| o.to_string() == m.name))
                    .cloned()
            };
            (*key, origin.unwrap_or(Origin::Default))
        })
        .collect();
    Ok(Loaded { config, origins })
}

/// One file's settings over the defaults, checked alone (types, ranges,
/// the project's paths).
fn check_layer(file: &Layer, default_layer: &Layer) -> Result<Config, ConfigError> {
    let origins = [Origin::Default, file.origin.clone()];
    let config: Config = Figment::from(default_layer)
        .merge(file)
        .extract()
        .map_err(|e| from_figment(e, &origins, &file.origin))?;
    check_values(&config, &file.origin)?;
    Ok(config)
}

/// What [`load`] does with the text of one settings file found at
/// `origin` (a project file gets its key check too), with `dirs` for the
/// defaults: the settings it gives, or the first error. Reads nothing;
/// the fuzz target drives it with arbitrary text.
pub fn check_file_text(
    origin: &Origin,
    text: &str,
    dirs: &BaseDirs,
) -> Result<Config, ConfigError> {
    let path = origin.file().map(Path::to_path_buf).unwrap_or_default();
    let layer = Layer {
        origin: origin.clone(),
        dict: crate::provider::parse_yaml(origin, &path, text)?,
    };
    let default_layer = Layer::values(Origin::Default, Config::defaults_in(dirs))?;
    if matches!(origin, Origin::ProjectFile(_)) {
        check_project_keys(&layer, &default_layer, "the user's file")?;
    }
    check_layer(&layer, &default_layer)
}

/// `MM_MODEL`, `MM_BASE_URL`, `MM_PERMISSIONS`, read by name; every other
/// `MM_*` variable is ignored (docs/design.md#environment-variables).
fn env_layers(sources: &Sources) -> Result<Vec<Layer>, ConfigError> {
    let mut layers = Vec::new();
    if let Some(model) = sources.var("MM_MODEL") {
        let at = Origin::Env("MM_MODEL".to_owned());
        check_model(model).map_err(|p| bad(&at, "model", p))?;
        layers.push(Layer::single(at, "model", model));
    }
    if let Some(url) = sources.var("MM_BASE_URL") {
        let at = Origin::Env("MM_BASE_URL".to_owned());
        check_base_url(url).map_err(|p| bad(&at, "baseURL", p))?;
        layers.push(Layer::single(at, "baseURL", url));
    }
    if let Some(value) = sources.var("MM_PERMISSIONS") {
        let at = Origin::Env("MM_PERMISSIONS".to_owned());
        let setting: PermissionSetting = value
            .parse()
            .map_err(|e| bad(&at, "permissions", format!("{e}")))?;
        layers.push(permissions_default(at, setting));
    }
    Ok(layers)
}

fn flag_layers(flags: &Overrides) -> Result<Vec<Layer>, ConfigError> {
    let flag = |name: &str| Origin::Flag(name.to_owned());
    let mut layers = Vec::new();
    if let Some(model) = &flags.model {
        let at = flag("--model");
        check_model(model).map_err(|p| bad(&at, "model", p))?;
        layers.push(Layer::single(at, "model", model.as_str()));
    }
    if let Some(url) = &flags.base_url {
        let at = flag("--base-url");
        check_base_url(url).map_err(|p| bad(&at, "baseURL", p))?;
        layers.push(Layer::single(at, "baseURL", url.as_str()));
    }
    if let Some(p) = flags.permissions {
        layers.push(permissions_default(flag("--permissions"), p));
    }
    if let Some(t) = flags.thinking {
        layers.push(Layer::single(flag("--thinking"), "thinking", t.as_str()));
    }
    if let Some(n) = flags.max_turns {
        layers.push(Layer::single(
            flag("--max-turns"),
            "maxTurns",
            Value::from(n),
        ));
    }
    Ok(layers)
}

/// `MM_PERMISSIONS` and `--permissions` set the default and keep the rules
/// of the files.
fn permissions_default(at: Origin, setting: PermissionSetting) -> Layer {
    let mut dict = figment::value::Dict::new();
    dict.insert("default".to_owned(), Value::from(setting.as_str()));
    Layer::single(at, "permissions", dict)
}

/// `permissions: ask` in a file is `permissions: {default: ask}`, so that
/// it merges with rules and flags like the map form does.
fn normalize(layer: &mut Layer) {
    if let Some(value) = layer.dict.get_mut("permissions")
        && !matches!(value, Value::Dict(..) | Value::Array(..))
    {
        let mut dict = figment::value::Dict::new();
        dict.insert("default".to_owned(), value.clone());
        *value = Value::from(dict);
    }
}

fn bad(at: &Origin, key: &str, problem: String) -> ConfigError {
    ConfigError::BadValue {
        at: at.clone(),
        key: key.to_owned(),
        problem,
    }
}

/// The untrusted project file may set only what [`project_may_set`]
/// allows; unknown keys
/// are left for the type check, which names them as unknown.
fn check_project_keys(
    project: &Layer,
    defaults: &Layer,
    user_file: &str,
) -> Result<(), ConfigError> {
    for (key, value) in &project.dict {
        if project_may_set(key) || !defaults.dict.contains_key(key) {
            continue;
        }
        let key = match value {
            Value::Dict(_, sub) => match sub.keys().next() {
                Some(first) => format!("{key}.{first}"),
                None => key.clone(),
            },
            _ => key.clone(),
        };
        return Err(ConfigError::ForbiddenInProject {
            path: project
                .origin
                .file()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            key,
            user_file: user_file.to_owned(),
        });
    }
    Ok(())
}

/// Values serde cannot judge. `config` is the defaults overlaid with the
/// one layer `at`, so anything wrong here came from `at`.
fn check_values(config: &Config, at: &Origin) -> Result<(), ConfigError> {
    check_model(&config.model).map_err(|p| bad(at, "model", p))?;
    if let Some(url) = &config.base_url {
        check_base_url(url).map_err(|p| bad(at, "baseURL", p))?;
    }
    if let Some((key, problem)) = crate::ranges::first_out_of_range(config) {
        return Err(bad(at, key, problem));
    }
    if config.sandbox != SandboxSetting::Off && !cfg!(target_os = "linux") {
        return Err(bad(
            at,
            "sandbox",
            format!(
                "{} needs Linux (Landlock and seccomp); this system has no sandbox mm can use, so set sandbox: off",
                config.sandbox
            ),
        ));
    }
    let t = config.compact.threshold;
    if !(t > 0.0 && t <= 1.0) {
        return Err(bad(
            at,
            "compact.threshold",
            format!("expected a number above 0 and at most 1, found {t}"),
        ));
    }
    for (name, server) in &config.mcp_servers {
        check_mcp_server(name, server).map_err(|(key, p)| {
            let key = if key.is_empty() {
                format!("mcpServers.{name}")
            } else {
                format!("mcpServers.{name}.{key}")
            };
            bad(at, &key, p)
        })?;
    }
    for (event, groups) in &config.hooks {
        for hook in groups.iter().flat_map(|g| &g.hooks) {
            if let Some(t) = hook.timeout
                && !(1..=86_400).contains(&t)
            {
                return Err(bad(
                    at,
                    &format!("hooks.{event}"),
                    format!("timeout: expected 1 to 86400 seconds, found {t}"),
                ));
            }
        }
    }
    if matches!(at, Origin::ProjectFile(_))
        && let Some(name) = config.instructions.iter().find(|n| escapes(n))
    {
        return Err(bad(
            at,
            "instructions",
            format!(
                "\"{name}\" is outside the project (a project file may name only files inside it)"
            ),
        ));
    }
    Ok(())
}

/// One `mcpServers` entry: a command or a URL, and only the keys that go
/// with it. The error is the key under the server (empty for the server
/// itself) and what is wrong.
fn check_mcp_server(name: &str, s: &McpServer) -> Result<(), (&'static str, String)> {
    if let Some(problem) = mcp_server_name_problem(name) {
        return Err(("", problem));
    }
    match (&s.command, &s.url) {
        (None, None) => {
            return Err((
                "",
                "expected command (a stdio server) or url (a streamable-HTTP server)".to_owned(),
            ));
        }
        (Some(_), Some(_)) => {
            return Err((
                "",
                "expected command (a stdio server) or url (a streamable-HTTP server), not both"
                    .to_owned(),
            ));
        }
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err((
                    "command",
                    "expected a program, found an empty string".to_owned(),
                ));
            }
            if !s.headers.is_empty() {
                return Err((
                    "headers",
                    "headers go with url, not with command".to_owned(),
                ));
            }
        }
        (None, Some(url)) => {
            check_base_url(url).map_err(|p| ("url", p))?;
            if !s.args.is_empty() {
                return Err(("args", "args go with command, not with url".to_owned()));
            }
            if !s.env.is_empty() {
                return Err(("env", "env goes with command, not with url".to_owned()));
            }
        }
    }
    match (s.kind.as_deref(), s.command.is_some()) {
        (None, _) | (Some("stdio"), true) | (Some("http" | "streamable-http"), false) => Ok(()),
        (Some("sse"), _) => Err((
            "type",
            "the SSE transport is not supported; use a streamable-HTTP url (type: http)".to_owned(),
        )),
        (Some(kind @ ("stdio" | "http" | "streamable-http")), _) => Err((
            "type",
            format!(
                "\"{kind}\" does not match the server's {}",
                if s.command.is_some() {
                    "command"
                } else {
                    "url"
                }
            ),
        )),
        (Some(other), _) => Err(("type", format!("\"{other}\" is not one of stdio, http"))),
    }
}

fn check_model(model: &str) -> Result<(), String> {
    match model.split_once('/') {
        Some((provider, name)) if !provider.trim().is_empty() && !name.trim().is_empty() => Ok(()),
        _ => Err(format!(
            "expected PROVIDER/MODEL (e.g. ollama/qwen3:8b), found {model:?}"
        )),
    }
}

fn check_base_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') => Ok(()),
        _ => Err(format!(
            "expected an http:// or https:// address, found {:?}",
            crate::print::mask_url(url)
        )),
    }
}

/// Whether a path leaves the project: absolute, or `..` past its root
/// (judged on the text; the project's own symlinks are its business).
fn escapes(name: &str) -> bool {
    let mut depth = 0usize;
    for part in Path::new(name).components() {
        match part {
            Component::Prefix(_) | Component::RootDir => return true,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return true,
            },
            Component::Normal(_) => depth += 1,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_about_a_key_or_value_with_a_line_break_is_one_line() {
        // YAML lets a key (`? …` complex key) or a quoted value hold line
        // breaks; the error shows them escaped, never as a second line.
        let dirs = BaseDirs::from_env(&std::collections::BTreeMap::from([(
            "HOME".to_owned(),
            "/home/u".to_owned(),
        )]))
        .unwrap();
        let origin = Origin::UserFile("/home/u/.config/mm/config.yaml".into());
        for text in [
            "? |\n  two\n  lines\n: 1\n",
            "theme: \"dark\\nlight\"\n",
            "compact:\n  ? \"a\\nb\"\n  : 1\n",
            // What the settings fuzz target found.
            "to!mpact:\n? 0ketompact:pact:\n? 0ketompacpac 0\n\n 0tomp:m",
        ] {
            let line = check_file_text(&origin, text, &dirs)
                .unwrap_err()
                .to_string();
            assert!(!line.contains('\n'), "{text:?} gave {line:?}");
            assert!(line.contains("\\n"), "{text:?} gave {line:?}");
        }
    }

    #[test]
    fn escaping_paths() {
        assert!(!escapes("AGENTS.md"));
        assert!(!escapes("docs/../AGENTS.md"));
        assert!(!escapes("./docs/x.md"));
        assert!(escapes("../x.md"));
        assert!(escapes("docs/../../x.md"));
        assert!(escapes("/etc/passwd"));
    }

    #[test]
    fn model_and_url_shapes() {
        assert!(check_model("ollama/qwen3:8b").is_ok());
        assert!(check_model("openai-compatible/org/model").is_ok());
        assert!(check_model("qwen3").is_err());
        assert!(check_model("/qwen3").is_err());
        assert!(check_model("ollama/").is_err());
        assert!(check_base_url("http://localhost:11434").is_ok());
        assert!(check_base_url("https://api.openai.com/v1").is_ok());
        assert_eq!(
            check_base_url("ftp://u:secret@host").unwrap_err(),
            "expected an http:// or https:// address, found \"ftp://u:***@host\""
        );
        assert!(check_base_url("http://").is_err());
    }

    #[test]
    fn origins_display() {
        assert_eq!(Origin::Default.to_string(), "default");
        assert_eq!(
            Origin::UserFile("/c/mm/config.yaml".into()).to_string(),
            "user file /c/mm/config.yaml"
        );
        assert_eq!(
            Origin::ProjectFile("/p/.mm/config.yaml".into()).to_string(),
            "project file /p/.mm/config.yaml"
        );
        assert_eq!(Origin::Env("MM_MODEL".into()).to_string(), "env MM_MODEL");
        assert_eq!(Origin::Flag("--model".into()).to_string(), "flag --model");
        assert_eq!(
            Origin::ChosenFile {
                path: "/x.yaml".into(),
                via: "MM_CONFIG".into()
            }
            .to_string(),
            "file /x.yaml (MM_CONFIG)"
        );
    }

    #[test]
    fn sources_debug_hides_values() {
        let mut s = Sources::default();
        s.env
            .insert("OPENAI_API_KEY".into(), "sk-very-secret".into());
        let shown = format!("{s:?}");
        assert!(shown.contains("OPENAI_API_KEY"));
        assert!(!shown.contains("sk-very-secret"));
    }
}
