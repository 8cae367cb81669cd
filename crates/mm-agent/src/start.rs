//! Start-up: the steps every front end takes before its first question,
//! and the one error (with one exit code) for when it cannot start.

use std::path::Path;

use mm_config::{Config, ConfigError, KeyInForce, Loaded, Overrides, Resolved, WindowInForce};

use crate::{Agent, AgentError, PermissionSource, commands};

/// The exit code of every start-up failure: flags, settings, the working
/// directory, the agent, a session to resume, the front end's own setup.
pub const EXIT_START: u8 = 2;

/// Why a front end could not start. Each binary prints it as one line,
/// `<binary>: <error>`, and exits with [`EXIT_START`].
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `--cwd` names no directory, or the process has none.
    #[error("{0}")]
    WorkingDir(String),
    /// The settings are wrong (the message names the file, variable or flag).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The agent could not be built from the settings.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The session `--continue` or `--resume` asked for cannot be continued.
    #[error("cannot resume: {0}")]
    Resume(AgentError),
    /// `--demo`'s scripted model could not be served.
    #[error("cannot start the demo model: {0}")]
    Demo(std::io::Error),
    /// Anything else the front end needs before it runs (its runtime, its
    /// terminal, its question).
    #[error("{0}")]
    Front(String),
}

impl StartError {
    /// The process's exit code for this error.
    pub fn exit_code(&self) -> u8 {
        EXIT_START
    }
}

/// An agent of a session rooted at `cwd`, continuing the saved session
/// `resume` names (`Some(None)`: the latest of `cwd`). Returns the agent
/// and, when one was resumed, the line that says so.
pub fn agent(
    config: Config,
    cwd: &Path,
    source: PermissionSource,
    resume: Option<Option<&str>>,
) -> Result<(Agent, Option<String>), StartError> {
    let mut agent = Agent::new(config, cwd, source)?;
    let resumed = match resume {
        Some(id) => {
            let id = agent.resume(id).map_err(StartError::Resume)?;
            Some(commands::resumed(&agent, &id))
        }
        None => None,
    };
    Ok((agent, resumed))
}

/// What one run may set beyond the flags every terminal front end shares
/// (`mm-repl`'s flags for scripts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFlags {
    /// `--max-turns`: model requests per question (`maxTurns`).
    pub max_turns: Option<u32>,
    /// `--permissions`: the default for calls no rule speaks of.
    pub permissions: Option<mm_config::PermissionSetting>,
    /// `--allowed-tools`: allow rules added for this run.
    pub allow: Vec<String>,
    /// `--disallowed-tools`: deny rules added for this run.
    pub deny: Vec<String>,
}

impl RunFlags {
    /// Put the rules in `config`, after checking them like the settings'
    /// rules; the error names the flags.
    pub fn add_rules(&self, config: &mut Config, cwd: &Path) -> Result<(), StartError> {
        if self.allow.is_empty() && self.deny.is_empty() {
            return Ok(());
        }
        let mut check = config.clone();
        check.sandbox = mm_config::SandboxSetting::Off;
        check.permissions = mm_config::PermissionRules {
            allow: self.allow.clone(),
            deny: self.deny.clone(),
            ..mm_config::PermissionRules::plain(mm_config::PermissionSetting::Allow)
        };
        if let Err(e) = crate::permissions::build(&check, cwd, PermissionSource::Terminal) {
            let why = match e {
                AgentError::Rules(why) => why,
                other => other.to_string(),
            };
            return Err(StartError::Front(format!(
                "--allowed-tools/--disallowed-tools: {why}"
            )));
        }
        config.permissions.allow.extend(self.allow.iter().cloned());
        config.permissions.deny.extend(self.deny.iter().cloned());
        Ok(())
    }
}

/// What a terminal front end starts from: its working folder and the
/// settings in force.
#[cfg(feature = "cli")]
#[derive(Debug)]
pub struct Terminal {
    /// The session's root (`--cwd` or the process's own folder).
    pub cwd: std::path::PathBuf,
    /// The settings, flags and the demo's model included.
    pub config: Config,
}

/// What a terminal front end does after [`Terminal::load`].
#[cfg(feature = "cli")]
#[derive(Debug)]
pub enum Launch {
    /// Start the agent and run.
    Run(Box<Terminal>),
    /// `--print-config`: print this and exit (the agent never prints).
    Print(String),
}

#[cfg(feature = "cli")]
impl Terminal {
    /// The settings of a terminal front end from its flags, the demo's
    /// model in place of the user's when `demo` is given.
    pub fn load(
        flags: &mm_config::TerminalFlags,
        demo: Option<&Demo>,
    ) -> Result<Launch, StartError> {
        Terminal::load_with(flags, demo, &RunFlags::default())
    }

    /// [`Terminal::load`] with the flags of one run on top: `--max-turns`
    /// and `--permissions` as settings, the rules added to the settings'.
    pub fn load_with(
        flags: &mm_config::TerminalFlags,
        demo: Option<&Demo>,
        run: &RunFlags,
    ) -> Result<Launch, StartError> {
        if flags.session.fork && flags.session.resume().is_none() {
            return Err(StartError::Front(
                "--fork needs --continue or --resume ID: the session to copy".to_owned(),
            ));
        }
        let cwd = flags
            .session
            .working_dir()
            .map_err(StartError::WorkingDir)?;
        let mut overrides = flags.settings.overrides();
        overrides.max_turns = run.max_turns.or(overrides.max_turns);
        overrides.permissions = run.permissions.or(overrides.permissions);
        if let Some(demo) = demo {
            demo.overrides(&mut overrides);
        }
        let sources =
            mm_config::Sources::from_process(cwd.clone(), flags.settings.config.clone(), overrides);
        let loaded = mm_config::load(&sources)?;
        if flags.settings.print_config {
            return Ok(Launch::Print(config_text(&loaded)));
        }
        let mut config = loaded.config;
        run.add_rules(&mut config, &cwd)?;
        Ok(Launch::Run(Box::new(Terminal { cwd, config })))
    }

    /// The agent, resuming what `--continue`/`--resume` name: the demo's
    /// when `demo` is given. With the line that says what was resumed.
    pub fn agent(
        self,
        flags: &mm_config::TerminalFlags,
        demo: Option<&Demo>,
    ) -> Result<(Agent, Option<String>), StartError> {
        let (source, resume) = (PermissionSource::Terminal, flags.session.resume());
        let (mut agent, resumed) = match demo {
            Some(demo) => demo.agent(self.config, &self.cwd, source, resume)?,
            None => agent(self.config, &self.cwd, source, resume)?,
        };
        if !flags.session.fork {
            return Ok((agent, resumed));
        }
        let (new, old) = agent.fork(None).map_err(StartError::Resume)?;
        let said = commands::forked(&agent, &new, &old);
        Ok((agent, Some(said)))
    }
}

/// What every front end says first in `--demo`.
pub const DEMO_NOTICE: &str = "This is the demo: a scripted model answers, not a real one. \
     Its sessions are kept in a temporary folder that goes when you quit.";

/// `--demo`: a scripted model (the front end serves it) stands in for the
/// user's, and the sessions go to a temporary folder. Why a folder and not
/// sessions turned off: `/sessions` and `/resume` work as they would, and
/// nothing of the demo mixes with real sessions. Keep it alive until exit:
/// dropping it removes the folder.
#[derive(Debug)]
pub struct Demo {
    url: String,
    sessions: tempfile::TempDir,
}

impl Demo {
    /// The demo of the scripted model served at `server_url`.
    pub fn new(server_url: &str) -> Result<Demo, StartError> {
        let sessions = tempfile::Builder::new()
            .prefix("mm-demo-")
            .tempdir()
            .map_err(|e| StartError::Front(format!("cannot make the demo's folder: {e}")))?;
        Ok(Demo {
            url: server_url.trim_end_matches('/').to_owned(),
            sessions,
        })
    }

    /// Point the flags at the demo's model.
    pub fn overrides(&self, overrides: &mut Overrides) {
        overrides.model = Some("openai-compatible/demo".to_owned());
        overrides.base_url = Some(format!("{}/v1", self.url));
    }

    /// [`agent`] for the demo: sessions in the demo's folder, and
    /// [`DEMO_NOTICE`] first among the start-up warnings.
    pub fn agent(
        &self,
        mut config: Config,
        cwd: &Path,
        source: PermissionSource,
        resume: Option<Option<&str>>,
    ) -> Result<(Agent, Option<String>), StartError> {
        config.sessions.enabled = true;
        config.sessions.dir = self.sessions.path().to_path_buf();
        let (mut agent, resumed) = agent(config, cwd, source, resume)?;
        agent.warn_first(DEMO_NOTICE);
        Ok((agent, resumed))
    }
}

/// What `--print-config` prints: every setting and where it came from,
/// with `contextWindow: auto` resolved by asking the server (within
/// [`mm_engine::DISCOVERY_BOUND`]). The same on every binary.
pub fn config_text(loaded: &Loaded) -> String {
    let window = match loaded.config.context_window.fixed() {
        Some(_) => None,
        None => window_in_force(&loaded.config),
    };
    let key = key_in_force(&loaded.config, mm_redact::keys::is_set);
    let mut text = loaded.print_with(&Resolved {
        window,
        key: Some(key),
    });
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The variable the key is read from (`apiKeyEnv`, else the provider's
/// first) and whether it, or one of the provider's, is set.
pub fn key_in_force(config: &Config, is_set: impl Fn(&str) -> bool) -> KeyInForce {
    match &config.api_key_env {
        Some(var) => KeyInForce {
            var: Some(var.clone()),
            set: is_set(var),
        },
        None => {
            let vars = mm_engine::key_vars(config.provider());
            KeyInForce {
                var: vars.first().map(|v| (*v).to_owned()),
                set: vars.iter().any(|v| is_set(v)),
            }
        }
    }
}

/// The window `auto` stands for now, asked on a thread of its own so that
/// a caller inside or outside a runtime can wait for it.
fn window_in_force(config: &Config) -> Option<WindowInForce> {
    let engine = mm_engine::Engine::new(config).ok()?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .ok()?;
                let w = runtime.block_on(engine.discover_window());
                Some(WindowInForce {
                    tokens: w.tokens,
                    source: w.source.to_string(),
                })
            })
            .join()
            .ok()
            .flatten()
    })
}
