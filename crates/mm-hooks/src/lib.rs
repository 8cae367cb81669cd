//! mm-hooks: the user's own scripts around every step, in the shape users
//! carry between agents (an event, a matcher over tool names, commands that
//! read one JSON object on stdin and answer with an exit code, stderr and
//! optionally a JSON object on stdout).
//!
//! This crate matches and runs them and reads what they decide; where a
//! decision applies (a call refused, a question dropped, a turn going on)
//! is the caller's. A hook runs through `sh -c` in the session's folder,
//! in its own process group that dies with mm, with the JSON on stdin and
//! nothing else, its output bounded, and its whole group killed when it
//! ends or its timeout passes: no process of a hook outlives it.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod run;

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

pub use run::Ran;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    /// Before a tool call is asked about and run; may refuse it.
    PreToolUse,
    /// After a tool call ran, with its result.
    PostToolUse,
    /// When a question is submitted, before the model sees it; may drop it
    /// or add context.
    UserPromptSubmit,
    /// When the model answered without calls; may make it go on.
    Stop,
    /// When a session's first question is asked; may add context.
    SessionStart,
    /// When mm ends a session (exit, a new session).
    SessionEnd,
    /// Before the conversation is summarised.
    PreCompact,
    /// When mm needs the user (a permission question).
    Notification,
}

impl HookEvent {
    /// Every event, in the order `/hooks` lists them.
    pub const ALL: [HookEvent; 8] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::Notification,
        HookEvent::Stop,
        HookEvent::PreCompact,
        HookEvent::SessionEnd,
    ];

    /// The name in the settings and in `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::Notification => "Notification",
        }
    }

    /// Whether its matcher is over tool names (else it has none).
    pub fn has_tools(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for HookEvent {
    type Err = HookError;
    fn from_str(s: &str) -> Result<HookEvent, HookError> {
        HookEvent::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| HookError::UnknownEvent(s.to_owned()))
    }
}

/// A bad `hooks` setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// Not one of the events.
    #[error(
        "hooks: unknown event \"{0}\" (expected one of: SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Notification, Stop, PreCompact, SessionEnd)"
    )]
    UnknownEvent(String),
    /// The matcher is not a regular expression.
    #[error("hooks.{event}: the matcher \"{matcher}\" is not a regular expression: {problem}")]
    BadMatcher {
        /// The event it is under.
        event: String,
        /// The matcher as written.
        matcher: String,
        /// What the regex parser said, on one line.
        problem: String,
    },
    /// A hook of another type than `command`, or an empty command.
    #[error("hooks.{event}: {problem}")]
    BadHook {
        /// The event it is under.
        event: String,
        /// What is wrong.
        problem: String,
    },
}

/// Claude Code's name of an mm tool, so that matchers written for it
/// (`Bash`, `Write|Edit`) work unchanged; MCP tools are `mcp__server__tool`
/// in both.
pub fn other_name(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "bash" => "Bash",
        "write_file" => "Write",
        "edit_file" => "Edit",
        "read_file" => "Read",
        "grep" => "Grep",
        "glob" => "Glob",
        "web_fetch" => "WebFetch",
        "web_search" => "WebSearch",
        "task" => "Task",
        "todo" => "TodoWrite",
        _ => return None,
    })
}

/// A group of the settings: an event, a matcher, the commands under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSetting {
    /// The event's name (`PreToolUse`).
    pub event: String,
    /// A regular expression over tool names; `None`, empty or `*`: all.
    pub matcher: Option<String>,
    /// Its commands.
    pub hooks: Vec<CommandSetting>,
}

/// A hook of the settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSetting {
    /// `command`, the only type.
    pub kind: String,
    /// The command line.
    pub command: String,
    /// Seconds before it is killed (default 60).
    pub timeout: Option<u64>,
}

/// One command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// The command line, run by `sh -c`.
    pub command: String,
    /// Killed with its group after this long.
    pub timeout: Duration,
}

/// The default timeout of a hook.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The commands of one event whose matcher matches.
#[derive(Debug)]
struct Group {
    event: HookEvent,
    /// As written (`/hooks` shows it); `None` or empty or `*`: every call.
    written: Option<String>,
    matcher: Option<Regex>,
    hooks: Vec<Hook>,
}

impl Group {
    fn matches(&self, tool: Option<&str>) -> bool {
        match (&self.matcher, tool) {
            (None, _) | (_, None) => true,
            (Some(re), Some(tool)) => {
                re.is_match(tool) || other_name(tool).is_some_and(|o| re.is_match(o))
            }
        }
    }
}

/// What the payload of every hook carries besides its event's fields.
#[derive(Debug, Clone, Default)]
struct Session {
    id: String,
    transcript: String,
}

/// The configured hooks of a session.
#[derive(Debug, Default)]
pub struct Hooks {
    groups: Vec<Group>,
    session: Mutex<Session>,
}

/// What the hooks of one event decided, put together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// A hook blocked (exit 2, or `"decision": "block"`): its reason (the
    /// stderr, or the JSON's `reason`).
    pub block: Option<String>,
    /// `PreToolUse`: what a hook said of the permission, the strictest of
    /// all (deny over ask over allow).
    pub permission: Option<Permission>,
    /// What exit-0 hooks printed that is not a JSON decision: context for
    /// the model where the event adds context.
    pub context: String,
    /// One line per hook that ran: what the user sees of it.
    pub lines: Vec<String>,
}

/// A `PreToolUse` hook's word on the permission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    /// Run without asking, unless a deny rule or the sandbox says no.
    Allow,
    /// Ask the user even where the rules allow.
    Ask,
    /// Refuse, with this reason for the model.
    Deny(String),
}

impl Hooks {
    /// No hooks.
    pub fn none() -> Hooks {
        Hooks::default()
    }

    /// Hooks from the settings, checked.
    pub fn new(settings: &[GroupSetting]) -> Result<Hooks, HookError> {
        let mut groups = Vec::new();
        for GroupSetting {
            event,
            matcher,
            hooks,
        } in settings
        {
            let event: HookEvent = event.parse()?;
            let written = matcher.clone().filter(|m| !m.is_empty() && m != "*");
            let matcher =
                match &written {
                    Some(m) => Some(Regex::new(&format!("^(?:{m})$")).map_err(|e| {
                        HookError::BadMatcher {
                            event: event.name().to_owned(),
                            matcher: m.clone(),
                            problem: e.to_string().replace('\n', " "),
                        }
                    })?),
                    None => None,
                };
            let mut commands = Vec::new();
            for CommandSetting {
                kind,
                command,
                timeout,
            } in hooks
            {
                if kind != "command" {
                    return Err(HookError::BadHook {
                        event: event.name().to_owned(),
                        problem: format!("type \"{kind}\" is not supported (expected command)"),
                    });
                }
                if command.trim().is_empty() {
                    return Err(HookError::BadHook {
                        event: event.name().to_owned(),
                        problem: "a hook has an empty command".to_owned(),
                    });
                }
                commands.push(Hook {
                    command: command.clone(),
                    timeout: timeout.map_or(DEFAULT_TIMEOUT, Duration::from_secs),
                });
            }
            groups.push(Group {
                event,
                written,
                matcher,
                hooks: commands,
            });
        }
        Ok(Hooks {
            groups,
            session: Mutex::default(),
        })
    }

    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.hooks.is_empty())
    }

    /// Whether some hook of `event` is configured.
    pub fn has(&self, event: HookEvent) -> bool {
        self.groups
            .iter()
            .any(|g| g.event == event && !g.hooks.is_empty())
    }

    /// The session the payloads name (its id and file).
    pub fn set_session(&self, id: &str, transcript: &Path) {
        if let Ok(mut s) = self.session.lock() {
            s.id = id.to_owned();
            s.transcript = transcript.display().to_string();
        }
    }

    /// One line per configured hook, for `/hooks`:
    /// `PreToolUse bash|write_file: ~/guard.py (timeout 30s)`.
    pub fn listing(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for event in HookEvent::ALL {
            for g in self.groups.iter().filter(|g| g.event == event) {
                for h in &g.hooks {
                    let on = match &g.written {
                        Some(m) if event.has_tools() => format!("{event} {m}"),
                        _ => event.name().to_owned(),
                    };
                    lines.push(format!(
                        "{on}: {} (timeout {}s)",
                        h.command,
                        h.timeout.as_secs()
                    ));
                }
            }
        }
        lines
    }

    /// The payload of `event`: the session's fields, then `fields`.
    pub fn payload(&self, event: HookEvent, cwd: &Path, fields: Value) -> Value {
        let session = self.session.lock().map(|s| s.clone()).unwrap_or_default();
        let mut map = Map::new();
        map.insert("session_id".into(), json!(session.id));
        map.insert("transcript_path".into(), json!(session.transcript));
        map.insert("cwd".into(), json!(cwd.display().to_string()));
        map.insert("hook_event_name".into(), json!(event.name()));
        if let Value::Object(extra) = fields {
            map.extend(extra);
        }
        Value::Object(map)
    }

    /// Run every hook of `event` that matches `tool`, at once, and put
    /// together what they decided. `fields` are the event's own
    /// (`tool_name`, `tool_input`, `prompt`...).
    pub async fn run(
        &self,
        event: HookEvent,
        tool: Option<&str>,
        cwd: &Path,
        fields: Value,
        cancel: &CancellationToken,
    ) -> Decision {
        let hooks: Vec<&Hook> = self
            .groups
            .iter()
            .filter(|g| g.event == event && g.matches(tool))
            .flat_map(|g| g.hooks.iter())
            .collect();
        if hooks.is_empty() {
            return Decision::default();
        }
        let payload = self.payload(event, cwd, fields).to_string();
        let runs =
            futures::future::join_all(hooks.iter().map(|h| run::run(h, &payload, cwd, cancel)))
                .await;
        decide(event, &runs)
    }
}

/// What the runs of one event decided.
fn decide(event: HookEvent, runs: &[Ran]) -> Decision {
    let mut d = Decision::default();
    let mut reasons = Vec::new();
    for ran in runs {
        d.lines.push(ran.line(event));
        let json = ran.json();
        let said = |key: &str| -> Option<String> {
            let j = json.as_ref()?;
            j.get(key)
                .or_else(|| j.get("hookSpecificOutput").and_then(|h| h.get(key)))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let reason = said("reason")
            .or_else(|| said("permissionDecisionReason"))
            .unwrap_or_default();
        if ran.code == Some(2) {
            let why = ran.stderr.trim();
            reasons.push(if why.is_empty() {
                format!("blocked by the hook {}", ran.command)
            } else {
                why.to_owned()
            });
            continue;
        }
        if ran.code != Some(0) {
            continue;
        }
        if said("decision").as_deref() == Some("block") {
            reasons.push(if reason.is_empty() {
                format!("blocked by the hook {}", ran.command)
            } else {
                reason.clone()
            });
        }
        let permission = match said("permissionDecision").as_deref() {
            Some("allow") => Some(Permission::Allow),
            Some("ask") => Some(Permission::Ask),
            Some("deny") => Some(Permission::Deny(if reason.is_empty() {
                format!("denied by the hook {}", ran.command)
            } else {
                reason.clone()
            })),
            _ => None,
        };
        d.permission = match (d.permission.take(), permission) {
            (Some(Permission::Deny(r)), _) | (_, Some(Permission::Deny(r))) => {
                Some(Permission::Deny(r))
            }
            (Some(Permission::Ask), _) | (_, Some(Permission::Ask)) => Some(Permission::Ask),
            (a, b) => a.or(b),
        };
        if json.is_none() && !ran.stdout.trim().is_empty() {
            if !d.context.is_empty() {
                d.context.push('\n');
            }
            d.context.push_str(ran.stdout.trim_end());
        }
    }
    if !reasons.is_empty() {
        d.block = Some(reasons.join("\n"));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(event: &str, matcher: Option<&str>, commands: &[&str]) -> Hooks {
        Hooks::new(&[GroupSetting {
            event: event.to_owned(),
            matcher: matcher.map(str::to_owned),
            hooks: commands.iter().map(|c| command(c, 5)).collect(),
        }])
        .unwrap()
    }

    fn group(event: &str, matcher: Option<&str>, hooks: Vec<CommandSetting>) -> GroupSetting {
        GroupSetting {
            event: event.to_owned(),
            matcher: matcher.map(str::to_owned),
            hooks,
        }
    }

    fn command(c: &str, timeout: u64) -> CommandSetting {
        CommandSetting {
            kind: "command".to_owned(),
            command: c.to_owned(),
            timeout: Some(timeout),
        }
    }

    #[test]
    fn matchers_take_mm_names_and_the_other_agents_names() {
        let h = hooks("PreToolUse", Some("Bash|write_file"), &["true"]);
        let g = &h.groups[0];
        assert!(g.matches(Some("bash")));
        assert!(g.matches(Some("write_file")));
        assert!(!g.matches(Some("edit_file")));
        // Anchored: `Bash` does not match `bash_extra`.
        assert!(!g.matches(Some("bashful")));
        let all = hooks("PreToolUse", Some("*"), &["true"]);
        assert!(all.groups[0].matches(Some("mcp__time__now")));
        let mcp = hooks("PreToolUse", Some("mcp__time__.*"), &["true"]);
        assert!(mcp.groups[0].matches(Some("mcp__time__now")));
    }

    #[test]
    fn bad_settings_are_named() {
        let bad = Hooks::new(&[group("Prompt", None, vec![])]).unwrap_err();
        assert!(
            bad.to_string().contains("unknown event \"Prompt\""),
            "{bad}"
        );
        let bad = Hooks::new(&[group("PreToolUse", Some("("), vec![])]).unwrap_err();
        assert!(
            bad.to_string()
                .starts_with("hooks.PreToolUse: the matcher \"(\""),
            "{bad}"
        );
        let mut prompt = command("x", 5);
        prompt.kind = "prompt".into();
        let bad = Hooks::new(&[group("Stop", None, vec![prompt])]).unwrap_err();
        assert!(bad.to_string().contains("type \"prompt\""), "{bad}");
    }

    #[tokio::test]
    async fn exit_two_blocks_with_stderr_and_json_decides() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let h = hooks("PreToolUse", None, &["echo 'no rm here' >&2; exit 2"]);
        let d = h
            .run(
                HookEvent::PreToolUse,
                Some("bash"),
                dir.path(),
                json!({}),
                &cancel,
            )
            .await;
        assert_eq!(d.block.as_deref(), Some("no rm here"));
        let h = hooks(
            "PreToolUse",
            None,
            &[
                r#"echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"not today"}}'"#,
                r#"echo '{"permissionDecision":"allow"}'"#,
            ],
        );
        let d = h
            .run(
                HookEvent::PreToolUse,
                Some("bash"),
                dir.path(),
                json!({}),
                &cancel,
            )
            .await;
        assert_eq!(d.permission, Some(Permission::Deny("not today".into())));
        assert_eq!(d.block, None);
        let h = hooks("UserPromptSubmit", None, &["echo extra context", "exit 3"]);
        let d = h
            .run(
                HookEvent::UserPromptSubmit,
                None,
                dir.path(),
                json!({}),
                &cancel,
            )
            .await;
        assert_eq!(d.context, "extra context");
        assert_eq!(d.block, None);
        assert!(d.lines[1].contains("exited 3"), "{:?}", d.lines);
    }

    #[tokio::test]
    async fn a_hook_past_its_timeout_is_killed_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let line = format!("sleep 60 & echo $! > {}; sleep 60", pidfile.display());
        let h = Hooks::new(&[group("Stop", None, vec![command(&line, 1)])]).unwrap();
        let d = h
            .run(
                HookEvent::Stop,
                None,
                dir.path(),
                json!({}),
                &CancellationToken::new(),
            )
            .await;
        assert!(
            d.lines[0].contains("timed out and was killed"),
            "{:?}",
            d.lines
        );
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        // Killed; at most a zombie until its new parent reaps it.
        let alive = || {
            std::fs::read_to_string(&stat).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| !r.trim_start().starts_with('Z'))
            })
        };
        for _ in 0..50 {
            if !alive() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!alive(), "the hook's background sleep outlived it");
    }

    #[tokio::test]
    async fn the_payload_arrives_on_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("payload.json");
        let h = hooks(
            "PostToolUse",
            Some("Bash"),
            &[&format!("cat > {}", out.display())],
        );
        h.set_session("s-1", Path::new("/tmp/s-1.json"));
        h.run(
            HookEvent::PostToolUse,
            Some("bash"),
            dir.path(),
            json!({"tool_name": "bash", "tool_response": "ok"}),
            &CancellationToken::new(),
        )
        .await;
        let got: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(got["session_id"], "s-1");
        assert_eq!(got["hook_event_name"], "PostToolUse");
        assert_eq!(got["tool_response"], "ok");
        assert_eq!(got["cwd"], dir.path().display().to_string());
    }
}
