//! What a session's calls may do, built from the settings: the permission
//! rules (mm-policy) and the sandbox of `bash` commands; and how
//! `/permissions` lists them.

use std::path::Path;
use std::sync::Arc;

use mm_config::{Config, PermissionSetting, SandboxSetting};
use mm_policy::{Call, Listing, Mode, Policy, RuleLists, Sandbox, SandboxMode, Subject, Verdict};
use mm_tools::Permissions;

use crate::agent::{AgentError, PermissionSource};

/// The rules and the sandbox of a session rooted at `cwd`, and the line to
/// show at start when the sandbox asked for cannot be enforced here, or
/// only by Landlock.
pub fn build(
    config: &Config,
    cwd: &Path,
    source: PermissionSource,
) -> Result<(Permissions, Option<String>), AgentError> {
    let default = match source {
        PermissionSource::Terminal => config.permissions.default,
        PermissionSource::Editor => config.acp.permissions,
    };
    let rules = &config.permissions;
    let policy = Policy::new(RuleLists {
        default: match default {
            PermissionSetting::Allow => Mode::Allow,
            PermissionSetting::Ask => Mode::Ask,
            PermissionSetting::Plan => Mode::Plan,
        },
        allow: &rules.allow,
        ask: &rules.ask,
        deny: &rules.deny,
    })
    .map_err(|e| AgentError::Rules(e.to_string()))?;
    let mode = match config.sandbox {
        SandboxSetting::Off => SandboxMode::Off,
        SandboxSetting::ReadOnly => SandboxMode::ReadOnly,
        SandboxSetting::WorkspaceWrite => SandboxMode::WorkspaceWrite,
    };
    let sandbox = Sandbox::new(mode, config.sandbox_network, cwd, &std::env::temp_dir());
    let warning = sandbox.warning();
    let hooks = crate::hooks::build(config)?;
    Ok((
        Permissions::with(policy, sandbox).with_hooks(Arc::new(hooks)),
        warning,
    ))
}

/// The deny rule that keeps `read_file` from `path`, if one does: files
/// mm reads by itself (instructions) obey the same rules as the model's
/// reads.
pub fn read_denied(permissions: &Permissions, cwd: &Path, path: &Path) -> Option<String> {
    let call = Call {
        tool: "read_file",
        subject: Subject::Path(path),
        changes: false,
        cwd,
    };
    match permissions.policy().check(&call) {
        Verdict::Deny(rule) => Some(rule),
        _ => None,
    }
}

/// The `/permissions` lines: the default, each list of rules (the
/// session's last), and the sandbox.
pub fn lines(permissions: &Permissions) -> Vec<String> {
    let Listing {
        default,
        deny,
        ask,
        allow,
        session,
    } = permissions.policy().listing();
    let list = |rules: &[String]| {
        if rules.is_empty() {
            "(none)".to_owned()
        } else {
            rules.join(", ")
        }
    };
    let default = match default {
        Mode::Allow => "allow",
        Mode::Ask => "ask",
        Mode::Plan => "plan",
    };
    vec![
        format!("default: {default}"),
        format!("deny: {}", list(&deny)),
        format!("ask: {}", list(&ask)),
        format!("allow: {}", list(&allow)),
        format!("allowed for this session: {}", list(&session)),
        permissions.sandbox().describe(),
    ]
}
