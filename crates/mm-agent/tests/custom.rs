//! Custom commands and instructions files through a real agent against the
//! mock model server: discovery, clashes, placeholders and `@path`
//! mentions in the question sent, nothing in the first request; the
//! instructions order in a nested git repository, the global file and the
//! size cut.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{Recorder, ask, config};
use mm_agent::commands::{Front, Outcome, Parsed};
use mm_agent::ui::Sink;
use mm_agent::{Agent, PermissionSource};
use mm_mock::{MockServer, Reply};
use tokio_util::sync::CancellationToken;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A project in `dir/work` with user commands, project commands and clashes.
fn commands_world(dir: &Path) -> std::path::PathBuf {
    let user = dir.join("user/commands");
    let work = dir.join("work");
    write(
        &user.join("review.md"),
        "---\ndescription: Review a file\nargument-hint: <path> [focus]\n---\nReview @$1 with care. Focus: $2.\nAll: $ARGUMENTS",
    );
    write(
        &user.join("git/commit.md"),
        "Write a commit message for the staged changes.",
    );
    write(&user.join("new.md"), "A user file named like a built-in.");
    write(
        &work.join(".mm/commands/deploy.md"),
        "# Deploy\n\nDeploy to $1.",
    );
    write(
        &work.join(".mm/commands/review.md"),
        "The project's review, never used.",
    );
    write(&work.join(".mm/commands/compact.md"), "Never used either.");
    write(&work.join("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n");
    work
}

fn agent(url: &str, dir: &Path, cwd: &Path) -> Agent {
    Agent::new(config(url, dir), cwd, PermissionSource::Terminal).unwrap()
}

#[tokio::test]
async fn user_and_project_commands_load_and_clashes_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let work = commands_world(dir.path());
    let mock = MockServer::start(vec![]).await.unwrap();
    let agent = agent(&mock.url(), dir.path(), &work);
    let builtins = mm_agent::commands::Commands::builtin();
    let builtin: Vec<&str> = builtins.all().iter().map(|c| c.name()).collect();
    let custom: Vec<(&str, &str, Option<&str>)> = agent
        .commands()
        .all()
        .iter()
        .filter(|c| !builtin.contains(&c.name()))
        .map(|c| (c.name(), c.description(), c.argument()))
        .collect();
    assert_eq!(
        custom,
        [
            (
                "git:commit",
                "Write a commit message for the staged changes. (user)",
                None
            ),
            ("review", "Review a file (user)", Some("<path> [focus]")),
            ("deploy", "Deploy to $1. (project)", Some("[arguments]")),
        ]
    );
    // Offered by every front end and run in one-shot mode, and listed
    // by /help.
    for front in [Front::Repl, Front::Window, Front::Editor] {
        assert!(
            agent
                .commands()
                .for_front(front)
                .any(|c| c.name() == "git:commit" && c.runs_in_one_shot())
        );
    }
    let help = agent.commands().help(Front::Repl);
    assert!(
        help.lines()
            .any(|l| l.starts_with("/review <path> [focus] ")
                && l.ends_with("  Review a file (user)")),
        "{help}"
    );
    let user = std::fs::canonicalize(dir.path().join("user/commands")).unwrap();
    let project = std::fs::canonicalize(work.join(".mm/commands")).unwrap();
    let warnings = agent.warnings().join("\n");
    for want in [
        format!(
            "command file {} not loaded: /new is a built-in command; rename the file",
            user.join("new.md").display()
        ),
        format!(
            "command file {} not loaded: /compact is a built-in command; rename the file",
            project.join("compact.md").display()
        ),
        format!(
            "command file {} not loaded: /review is already a user command ({})",
            project.join("review.md").display(),
            user.join("review.md").display()
        ),
    ] {
        assert!(warnings.contains(&want), "no {want:?} in:\n{warnings}");
    }
    // The built-ins stay what they were.
    let Parsed::Command { command, .. } = agent.commands().parse("/new", Front::Repl) else {
        panic!()
    };
    let builtin = mm_agent::commands::for_front(Front::Repl)
        .find(|c| c.name() == "new")
        .unwrap();
    assert_eq!(command, builtin);
}

/// Run `line` as the one-shot front end does: a custom command gives the
/// question to ask.
async fn question_of(agent: &mut Agent, line: &str) -> String {
    let commands = agent.commands().clone();
    let Parsed::Command { command, argument } = commands.parse(line, Front::Repl) else {
        panic!("{line} is not a command");
    };
    assert!(command.runs_in_one_shot(), "{line}");
    let sink: Arc<dyn Sink> = Recorder::new();
    match agent
        .run_command(
            command,
            argument,
            Front::Repl,
            sink,
            CancellationToken::new(),
        )
        .await
    {
        Outcome::Ask(question) => question,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_command_sends_its_prompt_with_the_arguments_and_attaches_mentions() {
    let dir = tempfile::tempdir().unwrap();
    let work = commands_world(dir.path());
    let mock = MockServer::start(vec![Reply::text("Looks fine."), Reply::text("ok")])
        .await
        .unwrap();
    let mut agent = agent(&mock.url(), dir.path(), &work);
    let question = question_of(&mut agent, r#"/review src/lib.rs "error handling""#).await;
    assert_eq!(
        question,
        "Review @src/lib.rs with care. Focus: error handling.\nAll: src/lib.rs \"error handling\""
    );
    let (report, _) = ask(&mut agent, &question).await;
    assert!(report.ok());
    let sent = &mock.requests()[0].body["messages"];
    assert_eq!(
        sent[1]["content"],
        "Review @src/lib.rs with care. Focus: error handling.\nAll: src/lib.rs \"error handling\"\n\n[attached file: src/lib.rs]\n```\npub fn answer() -> u32 { 42 }\n```"
    );
    // A sub-folder command, without placeholders or arguments.
    let question = question_of(&mut agent, "/git:commit").await;
    assert_eq!(question, "Write a commit message for the staged changes.");
    // Built-in commands other than /undo do not run in one-shot mode:
    // they are text there.
    let Parsed::Command { command, .. } = agent.commands().parse("/compact", Front::Repl) else {
        panic!()
    };
    assert!(!command.runs_in_one_shot());
}

#[tokio::test]
async fn commands_cost_nothing_in_the_first_request() {
    let with_dir = tempfile::tempdir().unwrap();
    let work = commands_world(with_dir.path());
    let bare_dir = tempfile::tempdir().unwrap();
    let bare_work = bare_dir.path().join("work");
    std::fs::create_dir_all(&bare_work).unwrap();
    let mock = MockServer::start(vec![Reply::text("a"), Reply::text("b")])
        .await
        .unwrap();
    let mut with = agent(&mock.url(), with_dir.path(), &work);
    let mut bare = agent(&mock.url(), bare_dir.path(), &bare_work);
    ask(&mut with, "hi").await;
    ask(&mut bare, "hi").await;
    let requests = mock.requests();
    let fixed = |i: usize| {
        let body = &requests[i].body;
        let system = body["messages"][0]["content"].as_str().unwrap().to_string();
        // The working directory differs; the rest must not.
        let system = system.replace(&work.display().to_string(), "CWD");
        let system = system.replace(&bare_work.display().to_string(), "CWD");
        (system, body["tools"].clone())
    };
    assert_eq!(fixed(0), fixed(1));
    let all = requests[0].body.to_string();
    for absent in ["Review", "commit message", "Deploy", "review"] {
        assert!(!all.contains(absent), "{absent:?} sent: {all}");
    }
}

/// The instructions order: global, then the repository root down to the
/// working directory; the file above the repository is never read.
#[tokio::test]
async fn instructions_come_from_the_global_file_and_the_repository_root_down() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("mono");
    let pkg = repo.join("packages/api");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    // A nested repository's root is the nearest .git.
    std::fs::create_dir_all(pkg.join(".git")).unwrap();
    let inner = pkg.join("src");
    write(
        &dir.path().join("user/AGENTS.md"),
        "Global: answer in English.",
    );
    write(&dir.path().join("AGENTS.md"), "Above every repository.");
    write(&repo.join("AGENTS.md"), "Mono root: use pnpm.");
    write(&pkg.join("AGENTS.md"), "Api root: run the api tests.");
    write(&inner.join("AGENTS.md"), "Src: no unwrap.");
    let mock = MockServer::start(vec![Reply::text("ok"), Reply::text("ok")])
        .await
        .unwrap();
    let mut first = agent(&mock.url(), dir.path(), &inner);
    ask(&mut first, "hi").await;
    let system = mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let global = dir.path().join("user/AGENTS.md").display().to_string();
    assert!(
        system.ends_with(&format!(
            "\n\nUser instructions from {global}:\nGlobal: answer in English.\n\nProject instructions from ../AGENTS.md:\nApi root: run the api tests.\n\nProject instructions from AGENTS.md:\nSrc: no unwrap."
        )),
        "{system}"
    );
    assert!(
        !system.contains("Mono root"),
        "a nested repository stops at its own root"
    );
    assert!(!system.contains("Above every"));
    assert_eq!(
        first.instructions().banner_line(),
        format!("instructions  {global}, ../AGENTS.md, AGENTS.md")
    );

    // From the outer repository's own folder the mono root is read.
    std::fs::remove_dir_all(pkg.join(".git")).unwrap();
    let mut agent2 = agent(&mock.url(), dir.path(), &inner);
    ask(&mut agent2, "hi").await;
    let system = mock.requests()[1].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let mono = system.find("Mono root").unwrap();
    let api = system.find("Api root").unwrap();
    let src = system.find("Src: no unwrap").unwrap();
    let glob = system.find("Global: answer").unwrap();
    assert!(glob < mono && mono < api && api < src, "{system}");
    assert!(system.contains("Project instructions from ../../../AGENTS.md:\nMono root"));
}

#[tokio::test]
async fn over_the_size_limit_the_outermost_files_are_cut_and_a_warning_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let pkg = repo.join("pkg");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let line = format!("{}\n", "r".repeat(79));
    write(
        &dir.path().join("user/AGENTS.md"),
        &format!("GLOBAL\n{}", line.repeat(50)),
    );
    write(
        &repo.join("AGENTS.md"),
        &format!("ROOT\n{}", line.repeat(100)),
    );
    write(
        &pkg.join("AGENTS.md"),
        &format!("PKG\n{}", line.repeat(150)),
    );
    let mock = MockServer::start(vec![Reply::text("ok")]).await.unwrap();
    let mut agent = agent(&mock.url(), dir.path(), &pkg);
    let global = dir.path().join("user/AGENTS.md").display().to_string();
    let warning = agent
        .warnings()
        .iter()
        .find(|w| w.starts_with("instructions are over"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        warning,
        format!(
            "instructions are over the 16 KB limit, outermost first: left out {global} (4007 bytes); cut ../AGENTS.md (8005 bytes)"
        )
    );
    ask(&mut agent, "hi").await;
    let system = mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!system.contains("GLOBAL"));
    assert!(system.contains("ROOT"));
    assert!(system.contains("[cut: the instructions are over their size limit]"));
    assert!(system.ends_with(&format!("PKG\n{}", line.repeat(150).trim_end())));
    let instructions_bytes: usize = agent
        .instructions()
        .files
        .iter()
        .map(|f| f.text.len())
        .sum();
    assert!(instructions_bytes <= mm_agent::instructions::MAX_INSTRUCTIONS);
}
