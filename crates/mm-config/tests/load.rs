#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The loader against real files in temp dirs, with an explicit environment
//! (never the real HOME).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use mm_config::{
    BaseDirs, Config, ConfigError, ConstrainedCalls, ContextWindow, LspServer, Origin, Overrides,
    PermissionSetting, Sources, TextToolCalls, Thinking, load,
};
use tempfile::TempDir;

struct World {
    _tmp: TempDir,
    root: PathBuf,
    sources: Sources,
}

impl World {
    /// HOME, XDG_CONFIG_HOME and XDG_DATA_HOME in a temp dir; cwd = its `project`.
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        for d in ["home", "conf", "data", "project"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        let mut env = BTreeMap::new();
        env.insert("HOME".to_owned(), root.join("home").display().to_string());
        env.insert(
            "XDG_CONFIG_HOME".to_owned(),
            root.join("conf").display().to_string(),
        );
        env.insert(
            "XDG_DATA_HOME".to_owned(),
            root.join("data").display().to_string(),
        );
        let sources = Sources {
            cwd: root.join("project"),
            env,
            config_file: None,
            flags: Overrides::default(),
        };
        World {
            _tmp: tmp,
            root,
            sources,
        }
    }

    fn user_file(&self) -> PathBuf {
        self.root.join("conf/mm/config.yaml")
    }

    fn project_file(&self) -> PathBuf {
        self.root.join("project/.mm/config.yaml")
    }

    fn write_user(&self, text: &str) -> PathBuf {
        write(&self.user_file(), text)
    }

    fn write_project(&self, text: &str) -> PathBuf {
        write(&self.project_file(), text)
    }

    fn set_env(&mut self, name: &str, value: &str) {
        self.sources.env.insert(name.to_owned(), value.to_owned());
    }

    fn load(&self) -> mm_config::Loaded {
        load(&self.sources).unwrap()
    }

    fn error(&self) -> String {
        load(&self.sources).unwrap_err().to_string()
    }
}

fn write(path: &Path, text: &str) -> PathBuf {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    path.to_path_buf()
}

const TOP_KEYS: &str = "model, baseURL, apiKeyEnv, contextWindow, maxTokens, thinking, showThinking, watchdog, \
                        retries, textToolCalls, constrainedCalls, cacheControl, maxRetryWait, maxTurns, bashTool, bashTimeout, editTools, maxOutput, previewLines, editMode, notify, theme, mouse, skillsDir, \
                        permissions, acp, sessions, checkpoints, compact, lsp, instructions, sandbox, sandboxNetwork, \
                        mcpServers, mcp, agents, hooks, webSearch, vision";

// ---------- defaults ----------

#[test]
fn without_files_every_value_is_the_default() {
    let w = World::new();
    let loaded = w.load();
    let c = &loaded.config;
    assert_eq!(c.model, "ollama/qwen3:8b");
    assert_eq!(c.base_url, None);
    assert_eq!(c.api_key_env, None);
    assert_eq!(c.context_window, ContextWindow::Auto);
    assert_eq!(c.max_tokens, 8192);
    assert_eq!(c.thinking, Thinking::Off);
    assert!(c.show_thinking);
    assert_eq!(c.watchdog, 120);
    assert_eq!(c.retries, 3);
    assert_eq!(c.text_tool_calls, TextToolCalls::Auto);
    assert_eq!(c.max_turns, 100);
    assert!(c.bash_tool);
    assert_eq!(c.bash_timeout, 30);
    assert!(c.edit_tools);
    assert_eq!(c.max_output, 30000);
    assert_eq!(c.preview_lines, 5);
    assert_eq!(c.skills_dir, w.root.join("conf/mm/skills"));
    assert_eq!(c.permissions.default, PermissionSetting::Allow);
    assert_eq!(c.acp.permissions, PermissionSetting::Ask);
    assert!(c.sessions.enabled);
    assert_eq!(c.sessions.dir, w.root.join("data/mm/sessions"));
    assert_eq!(c.compact.threshold, 0.8);
    assert_eq!(c.compact.keep_recent, 4000);
    assert_eq!(c.instructions, vec!["AGENTS.md".to_owned()]);
    let servers: Vec<(&str, &str, Vec<&str>, Vec<&str>)> = c
        .lsp
        .servers
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.command.as_str(),
                s.args.iter().map(String::as_str).collect(),
                s.extensions.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        servers,
        vec![
            ("rust-analyzer", "rust-analyzer", vec![], vec![".rs"]),
            ("gopls", "gopls", vec![], vec![".go"]),
            (
                "clangd",
                "clangd",
                vec![],
                vec![".c", ".h", ".cc", ".cpp", ".hpp"]
            ),
            (
                "pyright",
                "pyright-langserver",
                vec!["--stdio"],
                vec![".py"]
            ),
            (
                "typescript-language-server",
                "typescript-language-server",
                vec!["--stdio"],
                vec![".ts", ".tsx", ".js", ".jsx"]
            ),
        ]
    );
    assert!(loaded.origins().all(|(_, o)| *o == Origin::Default));
    assert_eq!(
        *c,
        Config::defaults_in(&BaseDirs::from_env(&w.sources.env).unwrap())
    );
}

#[test]
fn home_fallback_when_no_xdg_variables() {
    let mut w = World::new();
    w.sources.env.remove("XDG_CONFIG_HOME");
    w.sources.env.remove("XDG_DATA_HOME");
    write(&w.root.join("home/.config/mm/config.yaml"), "maxTurns: 7\n");
    let loaded = w.load();
    assert_eq!(loaded.config.max_turns, 7);
    assert_eq!(
        loaded.config.skills_dir,
        w.root.join("home/.config/mm/skills")
    );
    assert_eq!(
        loaded.config.sessions.dir,
        w.root.join("home/.local/share/mm/sessions")
    );
    assert_eq!(loaded.config.user_dir, w.root.join("home/.config/mm"));
}

#[test]
fn the_user_folder_follows_xdg_config_home_and_no_file_sets_it() {
    let w = World::new();
    assert_eq!(w.load().config.user_dir, w.root.join("conf/mm"));
    let p = w.write_user("userDir: /tmp/elsewhere\n");
    let error = w.error();
    assert!(
        error.starts_with(&format!("{}: unknown key \"userDir\"", p.display())),
        "{error}"
    );
}

// ---------- layering ----------

#[test]
fn each_layer_wins_over_the_previous_one() {
    let mut w = World::new();
    let user = w.write_user(
        "model: openai/gpt-5-mini\nmaxTurns: 5\nretries: 1\ncompact:\n  threshold: 0.5\n",
    );
    let loaded = w.load();
    assert_eq!(loaded.config.model, "openai/gpt-5-mini");
    assert_eq!(
        loaded.origin("model"),
        Some(&Origin::UserFile(user.clone()))
    );
    assert_eq!(loaded.config.compact.threshold, 0.5);
    // a nested key set alone keeps its siblings' defaults
    assert_eq!(loaded.config.compact.keep_recent, 4000);
    assert_eq!(loaded.origin("compact.keepRecent"), Some(&Origin::Default));
    assert_eq!(
        loaded.origin("compact.threshold"),
        Some(&Origin::UserFile(user.clone()))
    );

    let project = w.write_project("model: anthropic/claude-sonnet-4-5\nmaxTurns: 9\n");
    let loaded = w.load();
    assert_eq!(loaded.config.model, "anthropic/claude-sonnet-4-5");
    assert_eq!(loaded.config.max_turns, 9);
    assert_eq!(loaded.config.retries, 1);
    assert_eq!(
        loaded.origin("model"),
        Some(&Origin::ProjectFile(project.clone()))
    );
    assert_eq!(
        loaded.origin("retries"),
        Some(&Origin::UserFile(user.clone()))
    );

    w.set_env("MM_MODEL", "gemini/gemini-2.5-flash");
    let loaded = w.load();
    assert_eq!(loaded.config.model, "gemini/gemini-2.5-flash");
    assert_eq!(
        loaded.origin("model"),
        Some(&Origin::Env("MM_MODEL".into()))
    );
    assert_eq!(
        loaded.origin("maxTurns"),
        Some(&Origin::ProjectFile(project))
    );

    w.sources.flags.model = Some("ollama/llama3".into());
    w.sources.flags.max_turns = Some(3);
    let loaded = w.load();
    assert_eq!(loaded.config.model, "ollama/llama3");
    assert_eq!(loaded.config.max_turns, 3);
    assert_eq!(
        loaded.origin("model"),
        Some(&Origin::Flag("--model".into()))
    );
    assert_eq!(
        loaded.origin("maxTurns"),
        Some(&Origin::Flag("--max-turns".into()))
    );
}

#[test]
fn base_url_env_beats_user_file_and_flag_beats_env() {
    let mut w = World::new();
    w.write_user("baseURL: http://file:1\n");
    assert_eq!(w.load().config.base_url.as_deref(), Some("http://file:1"));
    w.set_env("MM_BASE_URL", "http://env:2");
    let loaded = w.load();
    assert_eq!(loaded.config.base_url.as_deref(), Some("http://env:2"));
    assert_eq!(
        loaded.origin("baseURL"),
        Some(&Origin::Env("MM_BASE_URL".into()))
    );
    w.sources.flags.base_url = Some("http://flag:3".into());
    let loaded = w.load();
    assert_eq!(loaded.config.base_url.as_deref(), Some("http://flag:3"));
    assert_eq!(
        loaded.origin("baseURL"),
        Some(&Origin::Flag("--base-url".into()))
    );
}

#[test]
fn permissions_env_beats_user_file_and_flag_beats_env() {
    let mut w = World::new();
    w.write_user("permissions: ask\n");
    assert_eq!(w.load().config.permissions.default, PermissionSetting::Ask);
    w.set_env("MM_PERMISSIONS", "allow");
    let loaded = w.load();
    assert_eq!(loaded.config.permissions.default, PermissionSetting::Allow);
    assert_eq!(
        loaded.origin("permissions.default"),
        Some(&Origin::Env("MM_PERMISSIONS".into()))
    );
    w.sources.flags.permissions = Some(PermissionSetting::Ask);
    let loaded = w.load();
    assert_eq!(loaded.config.permissions.default, PermissionSetting::Ask);
    assert_eq!(
        loaded.origin("permissions.default"),
        Some(&Origin::Flag("--permissions".into()))
    );
}

#[test]
fn permission_rules_in_the_map_form() {
    let mut w = World::new();
    let u = w.write_user(
        "permissions:\n  default: ask\n  allow: [\"bash(git status*)\", read_file]\n  \
         ask: \"bash(git push*)\"\n  deny:\n    - bash(rm -rf *)\n    - mcp__*__delete*\n",
    );
    let loaded = w.load();
    let p = &loaded.config.permissions;
    assert_eq!(p.default, PermissionSetting::Ask);
    assert_eq!(p.allow, ["bash(git status*)", "read_file"]);
    assert_eq!(p.ask, ["bash(git push*)"]);
    assert_eq!(p.deny, ["bash(rm -rf *)", "mcp__*__delete*"]);
    assert_eq!(
        loaded.origin("permissions.deny"),
        Some(&Origin::UserFile(u.clone()))
    );
    // A flag sets the default and keeps the file's rules.
    w.sources.flags.permissions = Some(PermissionSetting::Allow);
    let loaded = w.load();
    assert_eq!(loaded.config.permissions.default, PermissionSetting::Allow);
    assert_eq!(loaded.config.permissions.deny.len(), 2);
    assert_eq!(
        loaded.origin("permissions.default"),
        Some(&Origin::Flag("--permissions".into()))
    );
    // Rules without a default keep the built-in one.
    w.sources.flags.permissions = None;
    w.write_user("permissions:\n  deny: [bash]\n");
    let c = w.load().config;
    assert_eq!(c.permissions.default, PermissionSetting::Allow);
    assert_eq!(c.permissions.deny, ["bash"]);
    // The plain form comes from the file, as before.
    w.write_user("permissions: ask\n");
    let loaded = w.load();
    assert_eq!(
        loaded.origin("permissions.default"),
        Some(&Origin::UserFile(u.clone()))
    );
    assert!(loaded.config.permissions.allow.is_empty());
}

#[test]
fn bad_permission_maps() {
    let w = World::new();
    let u = w.write_user("permissions:\n  allowed: [bash]\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: unknown key \"permissions.allowed\" (expected one of: default, allow, ask, deny)",
            u.display()
        )
    );
    w.write_user("permissions:\n  deny: 3\n");
    assert!(w.error().contains("permissions.deny"), "{}", w.error());
    w.write_user("permissions: maybe\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: permissions.default: \"maybe\" is not one of allow, ask, plan",
            u.display()
        )
    );
}

#[test]
fn sandbox_settings() {
    let w = World::new();
    let c = w.load().config;
    assert_eq!(c.sandbox, mm_config::SandboxSetting::Off);
    assert!(!c.sandbox_network);
    let u = w.write_user("sandbox: workspace-write\nsandboxNetwork: true\n");
    let c = w.load().config;
    if cfg!(target_os = "linux") {
        assert_eq!(c.sandbox, mm_config::SandboxSetting::WorkspaceWrite);
        assert!(c.sandbox_network);
        w.write_user("sandbox: read-only\n");
        assert_eq!(w.load().config.sandbox, mm_config::SandboxSetting::ReadOnly);
    } else {
        assert!(w.error().contains("needs Linux"), "{}", w.error());
    }
    w.write_user("sandbox: strict\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: sandbox: \"strict\" is not one of off, read-only, workspace-write",
            u.display()
        )
    );
}

#[test]
fn thinking_flag_beats_files() {
    let mut w = World::new();
    w.write_project("thinking: low\n");
    assert_eq!(w.load().config.thinking, Thinking::Low);
    w.sources.flags.thinking = Some(Thinking::High);
    let loaded = w.load();
    assert_eq!(loaded.config.thinking, Thinking::High);
    assert_eq!(
        loaded.origin("thinking"),
        Some(&Origin::Flag("--thinking".into()))
    );
}

#[test]
fn lists_are_replaced_not_appended() {
    let w = World::new();
    w.write_user(
        "lsp:\n  servers:\n    - name: pylsp\n      command: pylsp\n      extensions: [.py]\n",
    );
    let servers = w.load().config.lsp.servers;
    assert_eq!(
        servers,
        vec![LspServer {
            name: "pylsp".into(),
            command: "pylsp".into(),
            args: vec![],
            extensions: vec![".py".into()],
        }]
    );
}

#[test]
fn empty_files_and_empty_variables_change_nothing() {
    let mut w = World::new();
    w.write_user("");
    w.write_project("# nothing here\n");
    w.set_env("MM_MODEL", "");
    let loaded = w.load();
    assert_eq!(loaded.config.model, "ollama/qwen3:8b");
    assert_eq!(loaded.origin("model"), Some(&Origin::Default));
}

#[test]
fn mm_config_replaces_both_files() {
    let mut w = World::new();
    w.write_user("maxTurns: 5\nretries: 7\n");
    w.write_project("maxTurns: 6\nthinking: high\n");
    let chosen = write(
        &w.root.join("elsewhere/mm.yaml"),
        "model: openai/gpt-5\nbaseURL: https://proxy/v1\n",
    );
    w.set_env("MM_CONFIG", chosen.to_str().unwrap());
    let loaded = w.load();
    assert_eq!(loaded.config.model, "openai/gpt-5");
    // trusted like the user's file: baseURL is allowed
    assert_eq!(loaded.config.base_url.as_deref(), Some("https://proxy/v1"));
    assert_eq!(loaded.config.max_turns, 100);
    assert_eq!(loaded.config.retries, 3);
    assert_eq!(loaded.config.thinking, Thinking::Off);
    let origin = Origin::ChosenFile {
        path: chosen.clone(),
        via: "MM_CONFIG".into(),
    };
    assert_eq!(loaded.origin("model"), Some(&origin));
    assert_eq!(
        origin.to_string(),
        format!("file {} (MM_CONFIG)", chosen.display())
    );
}

#[test]
fn config_flag_beats_mm_config_and_relative_paths_use_cwd() {
    let mut w = World::new();
    write(&w.root.join("a.yaml"), "maxTurns: 1\n");
    write(&w.root.join("project/b.yaml"), "maxTurns: 2\n");
    w.set_env("MM_CONFIG", w.root.join("a.yaml").to_str().unwrap());
    assert_eq!(w.load().config.max_turns, 1);
    w.sources.config_file = Some(PathBuf::from("b.yaml"));
    let loaded = w.load();
    assert_eq!(loaded.config.max_turns, 2);
    assert_eq!(
        loaded.origin("maxTurns"),
        Some(&Origin::ChosenFile {
            path: w.root.join("project/b.yaml"),
            via: "--config".into(),
        })
    );
}

#[test]
fn a_missing_chosen_file_is_an_error() {
    let mut w = World::new();
    let missing = w.root.join("nope.yaml");
    w.set_env("MM_CONFIG", missing.to_str().unwrap());
    assert_eq!(
        w.error(),
        format!(
            "{}: cannot read the file: No such file or directory (os error 2)",
            missing.display()
        )
    );
}

#[test]
fn other_mm_variables_are_ignored() {
    let mut w = World::new();
    for (k, v) in [
        ("MM_MAX_TURNS", "5"),
        ("MM_THINKING", "high"),
        ("MM_CONTEXT_WINDOW", "10"),
        ("MM_ACP_PERMISSIONS", "allow"),
        ("MM", "1"),
    ] {
        w.set_env(k, v);
    }
    let loaded = w.load();
    assert_eq!(
        loaded.config,
        Config::defaults_in(&BaseDirs::from_env(&w.sources.env).unwrap())
    );
    assert!(loaded.origins().all(|(_, o)| *o == Origin::Default));
}

#[test]
fn instructions_take_one_name_or_a_list() {
    let w = World::new();
    w.write_project("instructions: CONTRIBUTING.md\n");
    assert_eq!(
        w.load().config.instructions,
        vec!["CONTRIBUTING.md".to_owned()]
    );
    w.write_project("instructions: [AGENTS.md, docs/../NOTES.md]\n");
    assert_eq!(
        w.load().config.instructions,
        vec!["AGENTS.md".to_owned(), "docs/../NOTES.md".to_owned()]
    );
    // the user's own file may name files anywhere
    fs::remove_file(w.project_file()).unwrap();
    w.write_user("instructions: /home/me/ALWAYS.md\n");
    assert_eq!(
        w.load().config.instructions,
        vec!["/home/me/ALWAYS.md".to_owned()]
    );
}

#[test]
fn tilde_in_directories_means_home() {
    let w = World::new();
    w.write_user(
        "skillsDir: ~/my-skills\nsessions:\n  dir: ~/sessions\ncheckpoints:\n  dir: ~/cps\n",
    );
    let c = w.load().config;
    assert_eq!(c.checkpoints.dir, w.root.join("home/cps"));
    assert_eq!(c.skills_dir, w.root.join("home/my-skills"));
    assert_eq!(c.sessions.dir, w.root.join("home/sessions"));
}

#[test]
fn keep_recent_is_capped_at_a_quarter_of_the_window() {
    let w = World::new();
    w.write_user("contextWindow: 8000\n");
    let c = w.load().config;
    assert_eq!(c.compact.keep_recent, 4000);
    assert_eq!(c.keep_recent_tokens(8000), 2000);
    w.write_user("contextWindow: 100000\ncompact: {keepRecent: 3000}\n");
    assert_eq!(w.load().config.keep_recent_tokens(100000), 3000);
}

#[test]
fn context_window_is_auto_or_a_number() {
    let w = World::new();
    w.write_user("contextWindow: auto\n");
    assert_eq!(w.load().config.context_window, ContextWindow::Auto);
    let printed = w.load().print();
    assert!(
        line(&printed, "contextWindow").starts_with("contextWindow       = auto  # user file"),
        "{printed}"
    );
    // What the server said, shown beside `auto`; keepRecent's cap follows.
    let resolved = mm_config::WindowInForce {
        tokens: 1024,
        source: "server /props".into(),
    };
    let printed = w.load().print_with(&mm_config::Resolved {
        window: Some(resolved),
        key: None,
    });
    assert!(
        line(&printed, "contextWindow")
            .starts_with("contextWindow       = auto: 1024 (server /props)  # user file"),
        "{printed}"
    );
    assert_eq!(
        line(&printed, "compact.keepRecent"),
        "compact.keepRecent  = 4000 (capped at 256, a quarter of contextWindow)  # default"
    );
    // A project file may set it, to a number or back to auto.
    w.write_project("contextWindow: 4096\n");
    assert_eq!(w.load().config.context_window, ContextWindow::Tokens(4096));
    let p = w.write_user("contextWindow: big\n");
    w.write_project("");
    let e = w.error();
    assert!(
        e.starts_with(&format!("{}: contextWindow", p.display())),
        "{e}"
    );
    assert!(e.contains("a number of tokens or auto"), "{e}");
}

#[test]
fn from_process_reads_this_process() {
    let s = Sources::from_process(
        "/some/cwd",
        Some(PathBuf::from("x.yaml")),
        Overrides::default(),
    );
    assert_eq!(s.cwd, PathBuf::from("/some/cwd"));
    assert_eq!(s.config_file, Some(PathBuf::from("x.yaml")));
    if let Ok(path) = std::env::var("PATH") {
        assert_eq!(s.env.get("PATH"), Some(&path));
    }
    assert!(s.env.contains_key("HOME"));
}

// ---------- errors, with their exact texts ----------

#[test]
fn unknown_key() {
    let w = World::new();
    let p = w.write_project("maxTurn: 5\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: unknown key \"maxTurn\" (expected one of: {TOP_KEYS})",
            p.display()
        )
    );
}

#[test]
fn unknown_nested_key() {
    let w = World::new();
    let p = w.write_user("compact:\n  keep: 5\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: unknown key \"compact.keep\" (expected one of: threshold, keepRecent)",
            p.display()
        )
    );
}

#[test]
fn wrong_types() {
    let w = World::new();
    let cases = [
        (
            "maxTurns: ten\n",
            "maxTurns: expected an unsigned integer, found a string \"ten\"",
        ),
        (
            "retries: -1\n",
            "retries: expected an unsigned integer, found an integer -1",
        ),
        (
            "maxTurns: 2.5\n",
            "maxTurns: expected an unsigned integer, found a number 2.5",
        ),
        (
            "maxTurns: 5000000000\n",
            "maxTurns: expected an unsigned integer no larger than 4294967295, found an integer 5000000000",
        ),
        (
            "bashTool: yes\n",
            "bashTool: expected true or false, found a string \"yes\"",
        ),
        ("model: 5\n", "model: expected a string, found an integer 5"),
        ("model:\n", "model: expected a string, found nothing (null)"),
        (
            "compact: 3\n",
            "compact: expected a mapping of keys to values, found an integer 3",
        ),
        (
            "compact:\n  threshold: high\n",
            "compact.threshold: expected a number, found a string \"high\"",
        ),
        (
            "instructions: 5\n",
            "instructions: expected a file name or a list of file names, found an integer 5",
        ),
        (
            "instructions: [A.md, 5]\n",
            "instructions[1]: expected a string, found an integer 5",
        ),
        (
            "lsp:\n  servers:\n    - name: x\n      command: x\n      args: --stdio\n      extensions: [.x]\n",
            "lsp.servers[0].args: expected a list, found a string \"--stdio\"",
        ),
        (
            "lsp:\n  servers:\n    - name: x\n      extensions: [.x]\n",
            "lsp.servers[0]: missing key \"command\"",
        ),
    ];
    for (yaml, message) in cases {
        let p = w.write_user(yaml);
        assert_eq!(
            w.error(),
            format!("{}: {message}", p.display()),
            "for {yaml:?}"
        );
    }
}

#[test]
fn bad_enum_values() {
    let w = World::new();
    let p = w.write_project("thinking: hgh\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: thinking: \"hgh\" is not one of off, on, low, medium, high",
            p.display()
        )
    );
    // a number is not taken as the n-th name
    w.write_project("thinking: 1\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: thinking: expected one of off, on, low, medium, high, found an integer 1",
            p.display()
        )
    );
    w.write_project("constrainedCalls: sometimes\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: constrainedCalls: \"sometimes\" is not one of auto, always, off",
            p.display()
        )
    );
    w.write_project("textToolCalls: maybe\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: textToolCalls: \"maybe\" is not one of auto, off",
            p.display()
        )
    );
    let u = w.write_user("acp:\n  permissions: sometimes\n");
    fs::remove_file(&p).unwrap();
    assert_eq!(
        w.error(),
        format!(
            "{}: acp.permissions: \"sometimes\" is not one of allow, ask, plan",
            u.display()
        )
    );
}

#[test]
fn unreadable_file() {
    let w = World::new();
    // a directory where the file should be
    fs::create_dir_all(w.user_file()).unwrap();
    assert_eq!(
        w.error(),
        format!(
            "{}: cannot read the file: it is a folder, not a regular file",
            w.user_file().display()
        )
    );
}

#[test]
fn yaml_syntax_errors_give_line_and_column() {
    let w = World::new();
    let p = w.write_user("model: ollama/x\nmaxTurns: [1, 2\n");
    let err = load(&w.sources).unwrap_err();
    match &err {
        ConfigError::Syntax { line, column, .. } => {
            assert_eq!(*line, Some(3));
            assert_eq!(*column, Some(1));
        }
        other => panic!("not a syntax error: {other}"),
    }
    assert_eq!(
        err.to_string(),
        format!(
            "{}: YAML syntax error at line 3, column 1: did not find expected ',' or ']', while parsing a flow sequence at line 2 column 11",
            p.display()
        )
    );
    let p = w.write_user("model: a/b\n  bad: indent\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: YAML syntax error at line 2, column 6: mapping values are not allowed in this context",
            p.display()
        )
    );
    let p = w.write_user("model: a/b\nmodel: c/d\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: YAML syntax error at line 1, column 1: duplicate entry with key \"model\"",
            p.display()
        )
    );
}

#[test]
fn max_output_below_200() {
    let w = World::new();
    let p = w.write_project("maxOutput: 199\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: maxOutput: expected at least 200, found 199",
            p.display()
        )
    );
    w.write_project("maxOutput: 200\n");
    assert_eq!(w.load().config.max_output, 200);
}

#[test]
fn bad_compact_threshold() {
    let w = World::new();
    for (value, shown) in [("1.5", "1.5"), ("0", "0"), ("-0.2", "-0.2")] {
        let p = w.write_user(&format!("compact:\n  threshold: {value}\n"));
        assert_eq!(
            w.error(),
            format!(
                "{}: compact.threshold: expected a number above 0 and at most 1, found {shown}",
                p.display()
            )
        );
    }
    w.write_user("compact:\n  threshold: 1\n");
    assert_eq!(w.load().config.compact.threshold, 1.0);
}

#[test]
fn zero_context_window() {
    let w = World::new();
    let p = w.write_user("contextWindow: 0\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: contextWindow: expected at least 1, found 0",
            p.display()
        )
    );
}

#[test]
fn zero_bash_timeout() {
    let w = World::new();
    let p = w.write_project("bashTimeout: 0\n");
    assert_eq!(
        w.error(),
        format!("{}: bashTimeout: expected at least 1, found 0", p.display())
    );
    w.write_project("bashTimeout: 1\n");
    assert_eq!(w.load().config.bash_timeout, 1);
}

#[test]
fn model_without_provider_in_each_source() {
    let mut w = World::new();
    let p = w.write_user("model: qwen3\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: model: expected PROVIDER/MODEL (e.g. ollama/qwen3:8b), found \"qwen3\"",
            p.display()
        )
    );
    fs::remove_file(&p).unwrap();
    w.set_env("MM_MODEL", "gpt-4o");
    assert_eq!(
        w.error(),
        "MM_MODEL: expected PROVIDER/MODEL (e.g. ollama/qwen3:8b), found \"gpt-4o\""
    );
    w.sources.env.remove("MM_MODEL");
    w.sources.flags.model = Some("ollama/".into());
    assert_eq!(
        w.error(),
        "--model: expected PROVIDER/MODEL (e.g. ollama/qwen3:8b), found \"ollama/\""
    );
}

#[test]
fn bad_base_url() {
    let mut w = World::new();
    let p = w.write_user("baseURL: localhost:8080\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: baseURL: expected an http:// or https:// address, found \"localhost:8080\"",
            p.display()
        )
    );
    fs::remove_file(&p).unwrap();
    w.set_env("MM_BASE_URL", "ftp://me:hunter2@host");
    assert_eq!(
        w.error(),
        "MM_BASE_URL: expected an http:// or https:// address, found \"ftp://me:***@host\""
    );
}

#[test]
fn bad_mm_permissions_names_the_variable() {
    let mut w = World::new();
    w.set_env("MM_PERMISSIONS", "sometimes");
    assert_eq!(
        w.error(),
        "MM_PERMISSIONS: \"sometimes\" is not one of allow, ask, plan"
    );
}

#[test]
fn a_bad_value_is_an_error_even_when_overridden_later() {
    let w = World::new();
    let u = w.write_user("maxTurns: ten\n");
    w.write_project("maxTurns: 10\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: maxTurns: expected an unsigned integer, found a string \"ten\"",
            u.display()
        )
    );
}

// ---------- the untrusted project file ----------

#[test]
fn forbidden_project_keys() {
    let w = World::new();
    let user = w.user_file();
    let cases = [
        ("baseURL: http://evil:1\n", "baseURL"),
        ("apiKeyEnv: HOME\n", "apiKeyEnv"),
        ("lsp:\n  servers: []\n", "lsp.servers"),
        ("permissions: allow\n", "permissions"),
        ("acp:\n  permissions: allow\n", "acp.permissions"),
        ("skillsDir: /tmp/skills\n", "skillsDir"),
        ("sessions:\n  dir: /tmp/s\n", "sessions.dir"),
        ("sessions:\n  enabled: false\n", "sessions.enabled"),
        ("checkpoints: false\n", "checkpoints.enabled"),
        ("checkpoints:\n  keep: 3\n", "checkpoints.keep"),
        // the value's type does not matter: the key is refused first
        ("permissions: whatever\n", "permissions"),
        ("permissions:\n  deny: [bash]\n", "permissions.deny"),
        ("permissions:\n  allow: [bash]\n", "permissions.allow"),
        ("sandbox: off\n", "sandbox"),
        ("sandboxNetwork: true\n", "sandboxNetwork"),
    ];
    for (yaml, key) in cases {
        let p = w.write_project(yaml);
        assert_eq!(
            w.error(),
            format!(
                "{}: {key} may not be set in a project file; set it in {}",
                p.display(),
                user.display()
            ),
            "for {yaml:?}"
        );
    }
}

#[test]
fn forbidden_key_message_shows_home_as_tilde() {
    let mut w = World::new();
    w.sources.env.remove("XDG_CONFIG_HOME");
    let p = w.write_project("model: ollama/x\npermissions: allow\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: permissions may not be set in a project file; set it in ~/.config/mm/config.yaml",
            p.display()
        )
    );
}

#[test]
fn every_allowed_project_key_is_accepted() {
    let w = World::new();
    w.write_project(
        "model: openai/gpt-5\ncontextWindow: 1000\nmaxTokens: 10\nthinking: medium\nshowThinking: false\n\
         watchdog: 9\nretries: 0\ntextToolCalls: off\nconstrainedCalls: always\nmaxRetryWait: 7\nmaxTurns: 4\nbashTool: false\neditTools: false\nmaxOutput: 500\n\
         previewLines: 2\nbashTimeout: 8\ncompact:\n  threshold: 0.9\n  keepRecent: 100\ninstructions: [A.md]\n",
    );
    let c = w.load().config;
    assert_eq!(c.model, "openai/gpt-5");
    assert_eq!(c.context_window, ContextWindow::Tokens(1000));
    assert_eq!(c.max_tokens, 10);
    assert_eq!(c.thinking, Thinking::Medium);
    assert!(!c.show_thinking);
    assert_eq!(c.watchdog, 9);
    assert_eq!(c.retries, 0);
    assert_eq!(c.text_tool_calls, TextToolCalls::Off);
    assert_eq!(c.constrained_calls, ConstrainedCalls::Always);
    assert_eq!(c.max_retry_wait, 7);
    assert_eq!(c.max_turns, 4);
    assert!(!c.bash_tool);
    assert!(!c.edit_tools);
    assert_eq!(c.max_output, 500);
    assert_eq!(c.preview_lines, 2);
    assert_eq!(c.bash_timeout, 8);
    assert_eq!(c.compact.threshold, 0.9);
    assert_eq!(c.compact.keep_recent, 100);
    assert_eq!(c.instructions, vec!["A.md".to_owned()]);
}

#[test]
fn project_instructions_may_not_leave_the_project() {
    let w = World::new();
    for name in ["../secret.md", "/etc/passwd", "docs/../../x.md"] {
        let p = w.write_project(&format!("instructions: [AGENTS.md, \"{name}\"]\n"));
        assert_eq!(
            w.error(),
            format!(
                "{}: instructions: \"{name}\" is outside the project (a project file may name only files inside it)",
                p.display()
            )
        );
    }
}

// ---------- --print-config ----------

fn line<'a>(printed: &'a str, key: &str) -> &'a str {
    printed
        .lines()
        .find(|l| l.split(" = ").next().map(str::trim_end) == Some(key))
        .unwrap_or_else(|| panic!("no line for {key} in:\n{printed}"))
}

#[test]
fn print_lists_every_key_with_value_and_origin() {
    let mut w = World::new();
    let user = w.write_user("maxTurns: 7\ncompact:\n  threshold: 0.5\n");
    let project = w.write_project("thinking: high\n");
    w.set_env("MM_MODEL", "openai/gpt-5-mini");
    w.sources.flags.permissions = Some(PermissionSetting::Ask);
    let printed = w.load().print();
    assert_eq!(printed.lines().count(), mm_config::SETTINGS.len());
    for row in mm_config::SETTINGS {
        line(&printed, row.key);
    }
    assert_eq!(
        line(&printed, "model"),
        "model               = openai/gpt-5-mini  # env MM_MODEL"
    );
    assert_eq!(
        line(&printed, "maxTurns"),
        format!("maxTurns            = 7  # user file {}", user.display())
    );
    assert_eq!(
        line(&printed, "compact.threshold"),
        format!("compact.threshold   = 0.5  # user file {}", user.display())
    );
    assert_eq!(
        line(&printed, "compact.keepRecent"),
        "compact.keepRecent  = 4000  # default"
    );
    assert_eq!(
        line(&printed, "thinking"),
        format!(
            "thinking            = high  # project file {}",
            project.display()
        )
    );
    assert_eq!(
        line(&printed, "permissions.default"),
        "permissions.default = ask  # flag --permissions"
    );
    assert_eq!(
        line(&printed, "instructions"),
        "instructions        = AGENTS.md  # default"
    );
    assert_eq!(
        line(&printed, "lsp.servers"),
        "lsp.servers         = rust-analyzer (.rs); gopls (.go); clangd (.c .h .cc .cpp .hpp); \
         pyright: pyright-langserver --stdio (.py); \
         typescript-language-server --stdio (.ts .tsx .js .jsx)  # default"
    );
    assert_eq!(
        line(&printed, "baseURL"),
        "baseURL             = (the provider's default)  # default"
    );
    // The provider's own key variable is the engine's to say (mm-agent's
    // tests of --print-config); the file names none.
    assert_eq!(
        line(&printed, "apiKeyEnv"),
        "apiKeyEnv           = (the provider's)  # default"
    );
}

#[test]
fn print_masks_secrets() {
    let mut w = World::new();
    let user = w.write_user("model: openai-compatible/llama\nbaseURL: https://me:hunter2@proxy:8443/v1?api_key=abc123\napiKeyEnv: MY_PROXY_KEY\n");
    w.set_env("MY_PROXY_KEY", "sk-topsecret-value");
    let printed = w.load().print();
    assert!(!printed.contains("hunter2"), "{printed}");
    assert!(!printed.contains("abc123"), "{printed}");
    assert!(!printed.contains("sk-topsecret-value"), "{printed}");
    assert_eq!(
        line(&printed, "baseURL"),
        format!(
            "baseURL             = https://me:***@proxy:8443/v1?api_key=***  # user file {}",
            user.display()
        )
    );
    // Whether it is set is said by the caller that knows the provider.
    let resolved = mm_config::Resolved {
        window: None,
        key: Some(mm_config::KeyInForce {
            var: Some("MY_PROXY_KEY".into()),
            set: true,
        }),
    };
    assert_eq!(
        line(&w.load().print_with(&resolved), "apiKeyEnv"),
        format!(
            "apiKeyEnv           = MY_PROXY_KEY (set)  # user file {}",
            user.display()
        )
    );
}

#[test]
fn print_shows_a_keyless_provider_and_the_keep_recent_cap() {
    let w = World::new();
    w.write_user("contextWindow: 8000\n");
    let keyless = mm_config::Resolved {
        window: None,
        key: Some(mm_config::KeyInForce {
            var: None,
            set: false,
        }),
    };
    let printed = w.load().print_with(&keyless);
    assert_eq!(
        line(&printed, "apiKeyEnv"),
        "apiKeyEnv           = (none: this provider takes no key)  # default"
    );
    assert_eq!(
        line(&printed, "compact.keepRecent"),
        "compact.keepRecent  = 4000 (capped at 2000, a quarter of contextWindow)  # default"
    );
}

// ---------- MCP servers ----------

const MCP_USER: &str = "\
mcpServers:
  time:
    command: python3
    args: [\"-m\", \"mcp_server_time\"]
    env: {TZ: UTC, TIME_TOKEN: \"${TIME_TOKEN}\"}
  docs:
    url: http://127.0.0.1:8931/mcp?token=abc123
    headers: {Authorization: \"Bearer ${DOCS_TOKEN}\", X-Literal: hunter2-literal}
mcp:
  startTimeout: 20
  toolTimeout: 90
  lazy: always
";

#[test]
fn mcp_servers_come_from_the_user_file() {
    let w = World::new();
    let user = w.write_user(MCP_USER);
    let loaded = w.load();
    let c = &loaded.config;
    let time = &c.mcp_servers["time"];
    assert_eq!(time.command.as_deref(), Some("python3"));
    assert_eq!(time.args, ["-m", "mcp_server_time"]);
    // Kept as written: `${VAR}` is taken from the environment when the
    // server starts.
    assert_eq!(time.env["TIME_TOKEN"], "${TIME_TOKEN}");
    let docs = &c.mcp_servers["docs"];
    assert_eq!(
        docs.url.as_deref(),
        Some("http://127.0.0.1:8931/mcp?token=abc123")
    );
    assert_eq!(docs.headers["Authorization"], "Bearer ${DOCS_TOKEN}");
    assert_eq!(c.mcp.start_timeout, 20);
    assert_eq!(c.mcp.tool_timeout, 90);
    assert_eq!(c.mcp.lazy, mm_config::McpLazy::Always);
    assert_eq!(
        loaded.origin("mcpServers"),
        Some(&mm_config::Origin::UserFile(user.clone()))
    );
}

#[test]
fn mcp_defaults() {
    let w = World::new();
    let c = w.load().config;
    assert!(c.mcp_servers.is_empty());
    assert_eq!(c.mcp.start_timeout, 10);
    assert_eq!(c.mcp.tool_timeout, 60);
    assert_eq!(c.mcp.lazy, mm_config::McpLazy::Auto);
    let printed = w.load().print();
    assert_eq!(
        line(&printed, "mcpServers"),
        "mcpServers          = (none)  # default"
    );
    assert_eq!(
        line(&printed, "mcp.lazy"),
        "mcp.lazy            = auto  # default"
    );
}

#[test]
fn print_names_mcp_env_and_headers_but_never_their_values() {
    let mut w = World::new();
    let user = w.write_user(MCP_USER);
    w.set_env("DOCS_TOKEN", "docs-token-value");
    let printed = w.load().print();
    for secret in ["hunter2-literal", "abc123", "docs-token-value", "UTC"] {
        assert!(!printed.contains(secret), "{secret} shown:\n{printed}");
    }
    assert_eq!(
        line(&printed, "mcpServers"),
        format!(
            "mcpServers          = docs: http://127.0.0.1:8931/mcp?token=*** \
             (headers Authorization X-Literal); time: python3 -m mcp_server_time \
             (env TIME_TOKEN TZ)  # user file {}",
            user.display()
        )
    );
    assert_eq!(
        line(&printed, "mcp.startTimeout"),
        format!("mcp.startTimeout    = 20  # user file {}", user.display())
    );
    assert!(!format!("{:?}", w.load().config).contains("hunter2-literal"));
}

#[test]
fn a_project_file_may_not_set_mcp_settings() {
    for (text, key) in [
        ("mcpServers:\n  evil:\n    command: sh\n", "mcpServers.evil"),
        ("mcp:\n  lazy: never\n", "mcp.lazy"),
    ] {
        let w = World::new();
        let p = w.write_project(text);
        assert_eq!(
            w.error(),
            format!(
                "{}: {key} may not be set in a project file; set it in {}",
                p.display(),
                w.user_file().display()
            )
        );
    }
}

#[test]
fn bad_mcp_servers_are_named() {
    let cases = [
        (
            "mcpServers:\n  x: {}\n",
            "mcpServers.x: expected command (a stdio server) or url (a streamable-HTTP server)",
        ),
        (
            "mcpServers:\n  x: {command: a, url: \"http://h/mcp\"}\n",
            "mcpServers.x: expected command (a stdio server) or url (a streamable-HTTP server), not both",
        ),
        (
            "mcpServers:\n  x: {url: \"ftp://h\"}\n",
            "mcpServers.x.url: expected an http:// or https:// address, found \"ftp://h\"",
        ),
        (
            "mcpServers:\n  x: {url: \"http://h/mcp\", env: {A: b}}\n",
            "mcpServers.x.env: env goes with command, not with url",
        ),
        (
            "mcpServers:\n  x: {command: a, headers: {A: b}}\n",
            "mcpServers.x.headers: headers go with url, not with command",
        ),
        (
            "mcpServers:\n  x: {command: \"\"}\n",
            "mcpServers.x.command: expected a program, found an empty string",
        ),
        (
            "mcpServers:\n  a__b: {command: a}\n",
            "mcpServers.a__b: server name \"a__b\" may not contain \"__\"",
        ),
        (
            "mcpServers:\n  \"a b\": {command: a}\n",
            "mcpServers.a b: server name \"a b\" may hold only letters, digits, - and _",
        ),
        (
            "mcpServers:\n  x: {type: sse, url: \"http://h/sse\"}\n",
            "mcpServers.x.type: the SSE transport is not supported; use a streamable-HTTP url (type: http)",
        ),
        (
            "mcpServers:\n  x: {type: http, command: a}\n",
            "mcpServers.x.type: \"http\" does not match the server's command",
        ),
        (
            "mcp:\n  startTimeout: 0\n",
            "mcp.startTimeout: expected at least 1, found 0",
        ),
        (
            "mcp:\n  toolTimeout: 0\n",
            "mcp.toolTimeout: expected at least 1, found 0",
        ),
        (
            "mcp:\n  lazy: sometimes\n",
            "mcp.lazy: \"sometimes\" is not one of auto, always, never",
        ),
    ];
    for (text, expected) in cases {
        let w = World::new();
        let p = w.write_user(text);
        assert_eq!(
            w.error(),
            format!("{}: {expected}", p.display()),
            "for {text:?}"
        );
    }
    // Keys a server may not have are unknown keys.
    let w = World::new();
    let p = w.write_user("mcpServers:\n  x: {command: a, cwd: /tmp}\n");
    let err = w.error();
    assert!(
        err.starts_with(&format!(
            "{}: unknown key \"mcpServers.x.cwd\"",
            p.display()
        )),
        "{err}"
    );
}

#[test]
fn a_type_key_that_matches_is_accepted() {
    let w = World::new();
    w.write_user(
        "mcpServers:\n  a: {type: stdio, command: x}\n  b: {type: http, url: \"http://h/mcp\"}\n",
    );
    let c = w.load().config;
    assert_eq!(c.mcp_servers.len(), 2);
}

// ---------- checkpoints ----------

#[test]
fn checkpoints_take_a_bare_switch_or_a_mapping() {
    let w = World::new();
    let c = w.load().config;
    assert!(c.checkpoints.enabled);
    assert_eq!(c.checkpoints.keep, 50);
    assert_eq!(c.checkpoints.dir, w.root.join("data/mm/checkpoints"));

    let user = w.write_user("checkpoints: false\n");
    let loaded = w.load();
    assert!(!loaded.config.checkpoints.enabled);
    assert_eq!(loaded.config.checkpoints.keep, 50, "keep stays the default");
    assert_eq!(
        loaded.origin("checkpoints.enabled"),
        Some(&Origin::UserFile(user.clone()))
    );
    assert_eq!(loaded.origin("checkpoints.keep"), Some(&Origin::Default));
    assert!(loaded.print().contains("checkpoints.enabled"));

    w.write_user("checkpoints:\n  keep: 7\n");
    let c = w.load().config;
    assert!(c.checkpoints.enabled);
    assert_eq!(c.checkpoints.keep, 7);
    w.write_user("checkpoints: {enabled: false, keep: 3}\n");
    let c = w.load().config;
    assert!(!c.checkpoints.enabled);
    assert_eq!(c.checkpoints.keep, 3);
}

#[test]
fn bad_checkpoint_settings_are_named() {
    let w = World::new();
    let p = w.write_user("checkpoints:\n  keep: 0\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: checkpoints.keep: expected at least 1, found 0",
            p.display()
        )
    );
    w.write_user("checkpoints:\n  kept: 3\n");
    assert_eq!(
        w.error(),
        format!(
            "{}: unknown key \"checkpoints.kept\" (expected one of: enabled, keep, dir)",
            p.display()
        )
    );
    w.write_user("checkpoints: sometimes\n");
    let e = w.error();
    assert!(
        e.starts_with(&format!("{}: checkpoints", p.display())),
        "{e}"
    );
}

#[test]
fn every_number_has_a_range_named_with_the_file_and_key() {
    // From the untrusted project file, as in the report: each of these
    // used to be accepted (and later panicked or was silently changed).
    let cases = [
        (
            "watchdog: 18446744073709551615\n",
            "watchdog",
            "expected at most 86400, found 18446744073709551615",
        ),
        (
            "bashTimeout: 18446744073709551615\n",
            "bashTimeout",
            "expected at most 604800, found 18446744073709551615",
        ),
        ("maxTurns: 0\n", "maxTurns", "expected at least 1, found 0"),
        (
            "maxTurns: 4294967295\n",
            "maxTurns",
            "expected at most 1000000, found 4294967295",
        ),
        (
            "retries: 1000\n",
            "retries",
            "expected at most 100, found 1000",
        ),
        (
            "maxRetryWait: 100000\n",
            "maxRetryWait",
            "expected at most 86400, found 100000",
        ),
        (
            "contextWindow: 18446744073709551615\n",
            "contextWindow",
            "expected at most 100000000, found 18446744073709551615",
        ),
        (
            "maxTokens: 0\n",
            "maxTokens",
            "expected at least 1, found 0",
        ),
        (
            "maxOutput: 18446744073709551615\n",
            "maxOutput",
            "expected at most 100000000, found 18446744073709551615",
        ),
        (
            "previewLines: 18446744073709551615\n",
            "previewLines",
            "expected at most 100000, found 18446744073709551615",
        ),
        (
            "compact:\n  keepRecent: 18446744073709551615\n",
            "compact.keepRecent",
            "expected at most 100000000, found 18446744073709551615",
        ),
        // Past 64 bits: a value error too, not a YAML syntax error.
        (
            "watchdog: 18446744073709551616\n",
            "watchdog",
            "expected at most 86400, found 18446744073709551616",
        ),
        (
            "maxOutput: 99999999999999999999\n",
            "maxOutput",
            "expected at most 100000000, found 99999999999999999999",
        ),
    ];
    for (text, key, problem) in cases {
        let w = World::new();
        let p = w.write_project(text);
        assert_eq!(
            w.error(),
            format!("{}: {key}: {problem}", p.display()),
            "{text:?}"
        );
    }
    // The bounds themselves are accepted.
    for (text, want) in [("watchdog: 86400\n", 86_400), ("watchdog: 0\n", 0)] {
        let w = World::new();
        w.write_project(text);
        assert_eq!(w.load().config.watchdog, want);
    }
    let w = World::new();
    w.write_project("bashTimeout: 604800\nmaxTurns: 1\nretries: 100\n");
    let c = w.load().config;
    assert_eq!((c.bash_timeout, c.max_turns, c.retries), (604_800, 1, 100));
}

#[test]
fn a_flag_out_of_range_is_named() {
    let mut w = World::new();
    w.sources.flags.max_turns = Some(0);
    assert_eq!(w.error(), "--max-turns: expected at least 1, found 0");
}

#[test]
fn cache_control_defaults_on_and_a_project_may_turn_it_off() {
    let w = World::new();
    assert!(w.load().config.cache_control);
    w.write_project("cacheControl: false\n");
    assert!(!w.load().config.cache_control);
    w.write_project("cacheControl: maybe\n");
    assert!(w.error().contains("cacheControl"), "{}", w.error());
}
