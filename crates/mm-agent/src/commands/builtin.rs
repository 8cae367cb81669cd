//! The built-in commands: their rows and handlers, and every reply text
//! they give.

use std::sync::Arc;

use futures::future::BoxFuture;
use mm_ui::Sink;
use tokio_util::sync::CancellationToken;

use super::{Argument, Call, Command, Commands, Front, Outcome, Pick, PickRow, Run, TERMINAL};
use crate::Agent;
use crate::checkpoint::{self, Direction, Rewind};
use crate::compact::SUMMARY_PREFIX;
use mm_engine::Message;
use mm_ui::fold::first_line;

/// The built-in rows, in the order `/help` lists them.
pub(super) fn table() -> Vec<Command> {
    vec![
        Command::new(
            "new",
            "Start a new session (forgets the conversation and resets the loop detector)",
            Run::Now(new),
        ),
        Command::new(
            "compact",
            "Summarise the conversation so far to free context",
            Run::Task(compact),
        )
        .with_argument(Argument::Optional("[focus]".into())),
        Command::new(
            "undo",
            "Undo the last turn's changes to files (force: even over files changed since)",
            Run::Task(undo),
        )
        .with_argument(Argument::Optional("[force]".into()))
        .in_one_shot(),
        Command::new(
            "redo",
            "Redo the changes to files of the turn undone last",
            Run::Task(redo),
        )
        .with_argument(Argument::Optional("[force]".into())),
        Command::new(
            "diff",
            "Show how the files differ from the start of the session",
            Run::Task(diff),
        )
        .in_one_shot(),
        Command::new(
            "mcp",
            "List the MCP servers, their state and their tools",
            Run::Now(mcp),
        ),
        Command::new(
            "hooks",
            "List the hooks of the user's settings and when they run",
            Run::Now(hooks),
        ),
        Command::new(
            "copy",
            "Copy the last answer to the clipboard",
            Run::Now(copy_last),
        )
        .with_fronts(TERMINAL),
        Command::new(
            "output",
            "Show the last tool's whole output (the preview shows its first lines)",
            Run::Now(last_output),
        )
        .with_fronts(&[Front::Repl]),
        Command::new(
            "sessions",
            "List this project's saved sessions, or those that mention WORDS (--all-projects: every project's)",
            Run::Now(sessions),
        )
        .with_argument(Argument::Optional("[words]".into()))
        .with_fronts(TERMINAL),
        Command::new(
            "resume",
            "Resume a saved session by id, the start of one, or its /sessions number (alone: choose from a list)",
            Run::Now(resume),
        )
        .with_argument(Argument::Optional("[id|number]".into()))
        .with_fronts(TERMINAL),
        Command::new(
            "fork",
            "Go on in a copy of this session (the original stays as it is)",
            Run::Now(fork),
        )
        .with_argument(Argument::Optional("[title]".into()))
        .with_fronts(TERMINAL),
        Command::new(
            "rename",
            "Give this session a title (lists show it)",
            Run::Now(rename),
        )
        .with_argument(Argument::Required("<title>".into()))
        .with_fronts(TERMINAL),
        Command::new(
            "export",
            "Write this session as Markdown (questions, answers, tool calls and their output)",
            Run::Now(export),
        )
        .with_argument(Argument::Optional("[path]".into()))
        .with_fronts(TERMINAL)
        .in_one_shot(),
        Command::new(
            "model",
            "Choose among the server's models, or switch to MODEL (of this provider) or PROVIDER/MODEL",
            Run::Task(model),
        )
        .with_argument(Argument::Optional("[model]".into()))
        .with_fronts(TERMINAL),
        Command::new(
            "permissions",
            "Show the permission rules, this session's rules and the sandbox",
            Run::Now(permissions),
        ),
        Command::new(
            "mode",
            "Show the mode, or switch to allow, ask or plan (read-only)",
            Run::Now(super::mode::mode),
        )
        .with_argument(Argument::Optional("[allow|ask|plan]".into()))
        .with_fronts(TERMINAL),
        Command::new(
            "jobs",
            "List the background commands (state, age), or end one: kill N",
            Run::Task(jobs),
        )
        .with_argument(Argument::Optional("[kill N]".into()))
        .with_fronts(TERMINAL),
        Command::new(
            "init",
            "Ask the model to write a first AGENTS.md for this project",
            Run::Now(init),
        )
        .with_fronts(TERMINAL),
        Command::new("help", "List the commands", Run::Free(Arc::new(help))).with_fronts(TERMINAL),
        Command::new(
            "quit",
            "Leave mm",
            Run::Free(Arc::new(|_: &Call<'_>| Outcome::Quit)),
        )
        .with_fronts(TERMINAL),
    ]
}

/// `/new`. In an editor the session keeps its id and file (the editor
/// holds the id); in a terminal the next question starts a new file.
fn new(agent: &mut Agent, call: &Call<'_>) -> Outcome {
    match call.front {
        Front::Editor => {
            agent.clear_conversation();
            Outcome::Say("Started a new session.".into())
        }
        Front::Repl | Front::Window => {
            agent.new_session();
            Outcome::Fresh("new session".into())
        }
    }
}

fn compact<'a>(
    agent: &'a mut Agent,
    call: Call<'a>,
    sink: Arc<dyn Sink>,
    cancel: CancellationToken,
) -> BoxFuture<'a, Outcome> {
    Box::pin(async move {
        match agent.compact(call.argument(), sink, cancel).await {
            Ok(()) => Outcome::Done,
            Err(e) => Outcome::Error(e.to_string()),
        }
    })
}

fn undo<'a>(
    agent: &'a mut Agent,
    call: Call<'a>,
    sink: Arc<dyn Sink>,
    _cancel: CancellationToken,
) -> BoxFuture<'a, Outcome> {
    Box::pin(rewind(agent, call, sink, Direction::Undo))
}

fn redo<'a>(
    agent: &'a mut Agent,
    call: Call<'a>,
    sink: Arc<dyn Sink>,
    _cancel: CancellationToken,
) -> BoxFuture<'a, Outcome> {
    Box::pin(rewind(agent, call, sink, Direction::Redo))
}

/// `/undo [force]` and `/redo [force]`. Not cancellable: a restore stopped
/// half-way would leave the files in neither state.
async fn rewind(agent: &mut Agent, call: Call<'_>, sink: Arc<dyn Sink>, way: Direction) -> Outcome {
    let name = way.name();
    let force = match call.argument() {
        None => false,
        Some("force") => true,
        Some(_) => return Outcome::Error(format!("usage: /{name} [force]")),
    };
    match agent.rewind(way, force, &sink).await {
        Ok(Rewind::Done { question, changes }) => {
            let did = match way {
                Direction::Undo => "undid",
                Direction::Redo => "redid",
            };
            if changes.is_empty() {
                Outcome::Say(format!(
                    "{did} \"{question}\" (the files were already in that state)"
                ))
            } else {
                Outcome::Say(format!(
                    "{did} \"{question}\": {}",
                    checkpoint::files_line(way, &changes)
                ))
            }
        }
        Ok(Rewind::Conflicts(paths)) => {
            let since = match way {
                Direction::Undo => "the turn",
                Direction::Redo => "the undo",
            };
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            Outcome::Error(format!(
                "not {name}ne: changed since {since}: {}; /{name} force goes on and keeps each as <name>.mm-undo-<n>",
                names.join(", ")
            ))
        }
        // Nothing to take back is a plain reply, not a failure.
        Err(e @ crate::checkpoint::RewindError::Nothing(_)) => Outcome::Say(e.to_string()),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

fn diff<'a>(
    agent: &'a mut Agent,
    _call: Call<'a>,
    _sink: Arc<dyn Sink>,
    _cancel: CancellationToken,
) -> BoxFuture<'a, Outcome> {
    Box::pin(async move {
        match agent.diff().await {
            Ok(diff) if diff.is_empty() => {
                Outcome::Say("no file differs from the start of the session".into())
            }
            Ok(diff) => Outcome::Diff(diff),
            Err(e) => Outcome::Error(e.to_string()),
        }
    })
}

/// `/jobs`: one row per background command of the session; `/jobs kill
/// N` ends job N as `job_kill` does.
fn jobs<'a>(
    agent: &'a mut Agent,
    call: Call<'a>,
    _sink: Arc<dyn Sink>,
    _cancel: CancellationToken,
) -> BoxFuture<'a, Outcome> {
    Box::pin(async move {
        let jobs = agent.jobs().clone();
        let Some(argument) = call.argument() else {
            let rows: Vec<String> = jobs
                .list()
                .iter()
                .map(|j| {
                    let state = j.ended.as_deref().unwrap_or("running");
                    let age = mm_tools::bash::jobs::age(j.age);
                    format!("{}  {state}  {age}  {}", j.id, first_line(&j.command, 80))
                })
                .collect();
            return if rows.is_empty() {
                Outcome::Say("No background jobs.".into())
            } else {
                Outcome::List(rows)
            };
        };
        let id = argument
            .strip_prefix("kill")
            .map(str::trim)
            .and_then(|n| n.trim_start_matches('%').parse::<u32>().ok());
        let Some(id) = id else {
            return Outcome::Error("usage: /jobs, or /jobs kill N".into());
        };
        let out = jobs.kill(id).await;
        let last = out.text.lines().last().unwrap_or_default();
        let said = last.trim_start_matches('[').trim_end_matches(']');
        if out.failed {
            Outcome::Error(said.to_string())
        } else {
            Outcome::Say(format!("{}.", upper_first(said)))
        }
    })
}

/// `text` with its first letter in capitals.
fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `/mcp`: a line per server (`time: ready, 2 tools`).
fn mcp(agent: &mut Agent, _call: &Call<'_>) -> Outcome {
    let lines = agent.mcp_status();
    if lines.is_empty() {
        Outcome::Say("no MCP servers (mcpServers in the user settings names them)".into())
    } else {
        Outcome::List(lines)
    }
}

/// `/hooks`: a line per hook (`PreToolUse Bash: ~/guard.py (timeout 60s)`).
fn hooks(agent: &mut Agent, _call: &Call<'_>) -> Outcome {
    let lines = agent.hook_lines();
    if lines.is_empty() {
        Outcome::Say("no hooks (hooks in the user settings names them)".into())
    } else {
        Outcome::List(lines)
    }
}

/// `/permissions`: the default, the rules, the session's rules, the sandbox.
fn permissions(agent: &mut Agent, _call: &Call<'_>) -> Outcome {
    Outcome::List(agent.permission_lines())
}

fn copy_last(agent: &mut Agent, _call: &Call<'_>) -> Outcome {
    let answer = agent.last_answer();
    if answer.is_empty() {
        Outcome::Say("nothing to copy yet".into())
    } else {
        Outcome::Copy(answer.to_string())
    }
}

/// `/output`: the last tool result of the conversation, as the model got
/// it, for a terminal whose preview showed only its first lines (the
/// window unfolds a block instead).
fn last_output(agent: &mut Agent, _call: &Call<'_>) -> Outcome {
    let last = agent.history().iter().rev().find_map(|m| match m {
        mm_engine::Message::Tool { name, content, .. } => Some((name, content)),
        _ => None,
    });
    match last {
        None => Outcome::Say("no tool has run in this conversation yet".into()),
        Some((name, content)) if content.is_empty() => {
            Outcome::Say(format!("the last tool call ({name}) had no output"))
        }
        Some((_, content)) => Outcome::Say(content.trim_end_matches('\n').to_string()),
    }
}

/// Put `text` on the clipboard and say how (or why not): how a front end
/// renders [`Outcome::Copy`].
pub fn copy(text: &str) -> Outcome {
    match mm_ui::copy_to_clipboard(text) {
        Ok(copied) => Outcome::Say(copied.to_string()),
        Err(e) => Outcome::Error(format!("copy failed: {e}")),
    }
}

/// The flag of `/sessions` that searches every project.
const ALL_PROJECTS: &str = "--all-projects";

/// `/sessions`: this project's sessions, numbered for `/resume N`.
/// `/sessions WORDS`: those whose questions or answers hold every word.
fn sessions(agent: &mut Agent, call: &Call<'_>) -> Outcome {
    let mut words: Vec<&str> = call.argument.split_whitespace().collect();
    let all_projects = words.contains(&ALL_PROJECTS);
    words.retain(|w| *w != ALL_PROJECTS);
    if !words.is_empty() || all_projects {
        return search(agent, &words, all_projects);
    }
    let list = match agent.sessions() {
        Ok(list) => list,
        Err(e) => return Outcome::Error(e.to_string()),
    };
    // Files that cannot be read are named too, with what is wrong.
    let unreadable: Vec<String> = agent
        .unreadable_sessions()
        .into_iter()
        .map(|u| format!("! unreadable: {}", u.text))
        .collect();
    if list.is_empty() && unreadable.is_empty() {
        return Outcome::Say("no saved session for this directory".into());
    }
    let current = agent.session_id();
    Outcome::List(
        list.iter()
            .enumerate()
            .map(|(i, info)| {
                let mark = if current.as_deref() == Some(info.id.as_str()) {
                    "*"
                } else {
                    " "
                };
                format!(
                    "{:>2} {mark} {}  {}  {:>3} messages  {}",
                    i + 1,
                    info.id,
                    short_time(&info.updated_at),
                    info.messages,
                    info.title
                )
            })
            .chain(unreadable)
            .collect(),
    )
}

/// `/sessions WORDS [--all-projects]`: one row per session found, with
/// the line where a word was found (and the folder, across projects).
fn search(agent: &Agent, words: &[&str], all_projects: bool) -> Outcome {
    let found = match agent.search_sessions(words, all_projects) {
        Ok(found) => found,
        Err(e) => return Outcome::Error(e.to_string()),
    };
    let words = words.join(" ");
    let place = if all_projects {
        "any project"
    } else {
        "this project"
    };
    if found.is_empty() {
        return Outcome::Say(match words.is_empty() {
            true => format!("no saved session in {place}"),
            false => format!("no session of {place} mentions {words}"),
        });
    }
    let current = agent.session_id();
    let mut rows = Vec::with_capacity(found.len() + 1);
    if !words.is_empty() {
        rows.push(format!(
            "sessions of {place} that mention {words}, newest first:"
        ));
    }
    for f in found {
        let info = &f.info;
        let mark = if current.as_deref() == Some(info.id.as_str()) {
            "*"
        } else {
            " "
        };
        let folder = if all_projects {
            format!("  {}", info.cwd.display())
        } else {
            String::new()
        };
        rows.push(format!(
            "{mark} {}  {}  {}{folder}",
            info.id,
            short_time(&info.updated_at),
            info.title
        ));
        if !f.excerpt.is_empty() && f.excerpt != info.title {
            rows.push(format!("      {}", f.excerpt));
        }
    }
    Outcome::List(rows)
}

/// `/fork [title]`: the conversation goes on in a copy.
fn fork(agent: &mut Agent, call: &Call<'_>) -> Outcome {
    match agent.fork(call.argument()) {
        Ok((new, old)) => Outcome::Resumed(forked(agent, &new, &old)),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

/// What is said when session `old` was forked into `new` (by `/fork` or
/// `--fork`).
pub fn forked(agent: &Agent, new: &str, old: &str) -> String {
    format!(
        "forked: now in session {new} \"{}\" ({} messages); session {old} stays as it was",
        agent.session_title().unwrap_or_default(),
        agent.history().len()
    )
}

/// `/rename TITLE`.
fn rename(agent: &mut Agent, call: &Call<'_>) -> Outcome {
    let Some(title) = call.argument() else {
        return Outcome::Error("usage: /rename TITLE".into());
    };
    match agent.rename(title) {
        Ok(title) => Outcome::Say(format!("this session is now titled \"{title}\"")),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

/// `/export [path]`: the session as Markdown in a file.
fn export(agent: &mut Agent, call: &Call<'_>) -> Outcome {
    if agent.history().is_empty() {
        return Outcome::Say("nothing to export yet".into());
    }
    let id = agent.session_id();
    let path = super::export::target(agent.cwd(), call.argument(), id.as_deref());
    if path.is_dir() {
        return Outcome::Error(format!("{} is a folder; give a file name", path.display()));
    }
    match std::fs::write(&path, agent.export_markdown()) {
        Ok(()) => Outcome::Say(format!(
            "exported {} messages to {}",
            agent.history().len(),
            path.display()
        )),
        Err(e) => Outcome::Error(format!("cannot write {}: {e}", path.display())),
    }
}

/// `2026-11-05 14:03`.
fn short_time(t: &time::OffsetDateTime) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]");
    t.format(&format).unwrap_or_else(|_| t.to_string())
}

fn resume(agent: &mut Agent, call: &Call<'_>) -> Outcome {
    if call.argument().is_none() {
        return session_pick(agent);
    }
    match agent.resume(call.argument()) {
        Ok(id) => Outcome::Resumed(resumed(agent, &id)),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

/// `/resume` alone: this project's sessions to choose from, newest first,
/// each with its age, first question and size; empty ones are left out.
pub fn session_pick(agent: &Agent) -> Outcome {
    let list = match agent.sessions() {
        Ok(list) => list,
        Err(e) => return Outcome::Error(e.to_string()),
    };
    let now = time::OffsetDateTime::now_utc();
    let current = agent.session_id();
    let rows: Vec<PickRow> = list
        .iter()
        .filter(|info| info.messages > 0)
        .enumerate()
        .map(|(i, info)| {
            let mark = if current.as_deref() == Some(info.id.as_str()) {
                " (this one)"
            } else {
                ""
            };
            PickRow {
                label: format!(
                    "{:>2}  {:>9}  {:>4} messages  {}{mark}",
                    i + 1,
                    age(now - info.updated_at),
                    info.messages,
                    info.title,
                ),
                command: format!("/resume {}", info.id),
            }
        })
        .collect();
    if rows.is_empty() {
        return Outcome::Say("no saved session for this directory".into());
    }
    Outcome::Pick(Pick {
        title: "Resume which session? (arrows or type to filter, Enter resumes, Esc cancels; /resume N or an id's start also work)".into(),
        rows,
    })
}

/// `12 min ago`: how long ago, in the largest whole unit.
fn age(d: time::Duration) -> String {
    let s = d.whole_seconds().max(0);
    match s {
        0..60 => "just now".into(),
        60..3600 => format!("{} min ago", s / 60),
        3600..86_400 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

/// What is said when session `id` was resumed (by `/resume` or a flag).
pub fn resumed(agent: &Agent, id: &str) -> String {
    format!("resumed session {id} ({} messages)", agent.history().len())
}

/// How long a recap line's quoted text may be, in characters.
const RECAP_WIDTH: usize = 72;

/// A few lines on the last exchange of `history`, for a front end that
/// does not show a resumed conversation whole: the question, the tools it
/// took and the first line of the answer. Empty when nothing was asked
/// (or only a compaction summary is left).
pub fn recap(history: &[Message]) -> Vec<String> {
    let asked = history.iter().rposition(
        |m| matches!(m, Message::User { content, .. } if !content.starts_with(SUMMARY_PREFIX)),
    );
    let Some(at) = asked else {
        return Vec::new();
    };
    let Message::User {
        content: question, ..
    } = &history[at]
    else {
        return Vec::new();
    };
    let question = crate::agent::without_mode_note(question);
    let mut lines = vec![format!(
        "last question: {}",
        first_line(question, RECAP_WIDTH)
    )];
    // Tool names in the order first called, each with its count.
    let mut tools: Vec<(&str, usize)> = Vec::new();
    let mut answer = None;
    for message in &history[at + 1..] {
        if let Message::Assistant {
            content,
            tool_calls,
            ..
        } = message
        {
            for call in tool_calls {
                match tools.iter_mut().find(|(name, _)| *name == call.name) {
                    Some((_, n)) => *n += 1,
                    None => tools.push((&call.name, 1)),
                }
            }
            if !content.trim().is_empty() {
                answer = Some(content);
            }
        }
    }
    if !tools.is_empty() {
        let named: Vec<String> = tools
            .iter()
            .map(|(name, n)| match n {
                1 => (*name).to_string(),
                n => format!("{name} ×{n}"),
            })
            .collect();
        lines.push(format!("tools used: {}", named.join(" · ")));
    }
    lines.push(match answer {
        Some(text) => format!("last answer: {}", first_line(text, RECAP_WIDTH)),
        None => "last answer: none (the turn ended before the model answered)".to_string(),
    });
    lines
}

/// `/model PROVIDER/MODEL` switches; `/model` alone says which model is
/// in use and lists the server's (Ollama's tags, an OpenAI-shaped
/// `/models`, Anthropic's and Gemini's lists).
fn model<'a>(
    agent: &'a mut Agent,
    call: Call<'a>,
    _sink: Arc<dyn Sink>,
    cancel: CancellationToken,
) -> BoxFuture<'a, Outcome> {
    Box::pin(async move {
        if let Some(model) = call.argument() {
            if let Err(e) = agent.set_model(model) {
                return Outcome::Error(e.to_string());
            }
            // The line names the window in force: the new server's answer,
            // not the old model's number.
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {}
                _ = agent.settle_window() => {}
            }
            return Outcome::Say(model_line(agent));
        }
        let listed = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Outcome::Say(model_line(agent)),
            listed = agent.server_models() => listed,
        };
        let provider = agent.provider().to_owned();
        match listed {
            Ok(models) if models.is_empty() => {
                Outcome::Say(format!("{}; the server lists no models", model_line(agent)))
            }
            Ok(models) => {
                let current = agent.model();
                let rows = models
                    .into_iter()
                    .map(|m| {
                        let name = format!("{provider}/{}", m.id);
                        let mark = if name == current { "*" } else { " " };
                        let label = match m.window {
                            Some(w) => format!("{mark} {name}  ({w} tokens)"),
                            None => format!("{mark} {name}"),
                        };
                        PickRow {
                            label,
                            command: format!("/model {name}"),
                        }
                    })
                    .collect();
                Outcome::Pick(Pick {
                    title: format!(
                        "{}\nthe server's models (Enter switches, Esc keeps it; /model NAME also switches):",
                        model_line(agent)
                    ),
                    rows,
                })
            }
            Err(e) => Outcome::Say(format!(
                "{}; the server's models cannot be listed: {e}",
                model_line(agent)
            )),
        }
    })
}

/// `model: ollama/qwen3:8b at http://localhost:11434 (window 40960 tokens,
/// server /api/show)`.
fn model_line(agent: &Agent) -> String {
    let w = agent.window();
    format!(
        "model: {} at {} (window {} tokens, {})",
        agent.model(),
        agent.base_url(),
        w.tokens,
        w.source
    )
}

/// What `/init` asks; `{file}` is the first name of the `instructions`
/// setting (`AGENTS.md` by default).
pub const INIT_PROMPT: &str = "Write a first {file} for this project: the instructions a coding agent reads before it works here.
Look before you write: list the files, read the README and the build and CI files.
Say, briefly and only what is true here: what the project is; the exact commands to build, test, lint and format it; how its folders are laid out; the conventions its code follows; anything a newcomer would get wrong.
Plain Markdown, at most about 60 lines. If {file} exists already, read it and improve it instead of starting over.
Write it with write_file or edit_file, then say what you wrote.";

/// `/init`: a question for the model, not a reply.
fn init(agent: &mut Agent, _call: &Call<'_>) -> Outcome {
    let file = agent
        .config()
        .instructions
        .first()
        .map_or("AGENTS.md", String::as_str);
    Outcome::Ask(INIT_PROMPT.replace("{file}", file))
}

fn help(call: &Call<'_>) -> Outcome {
    Outcome::Help(call.commands.help(call.front))
}

/// The reply to `/name` when `front` offers no such command: where to look.
pub(super) fn unknown(commands: &Commands, name: &str, front: Front) -> Outcome {
    let offers_help = commands.for_front(front).any(|c| c.name() == "help");
    if offers_help {
        return Outcome::Error(format!("unknown command /{name}; /help lists the commands"));
    }
    let names: Vec<String> = commands
        .for_front(front)
        .map(|c| format!("/{}", c.name()))
        .collect();
    Outcome::Error(format!(
        "unknown command /{name}; the commands here are {}",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mm_engine::ToolCall;

    fn user(text: &str) -> Message {
        Message::user(text)
    }

    fn reply(text: &str, calls: &[&str]) -> Message {
        Message::Assistant {
            content: text.to_string(),
            reasoning: Vec::new(),
            tool_calls: calls
                .iter()
                .enumerate()
                .map(|(i, name)| ToolCall {
                    id: format!("c{i}"),
                    name: name.to_string(),
                    arguments: "{}".to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_recap_names_the_last_question_its_tools_and_answer() {
        let long = "why ".repeat(40);
        let history = vec![
            user("old question"),
            reply("Old answer.", &[]),
            user(&format!("{long}\n[attached file: a.rs]")),
            reply("", &["bash", "read_file", "bash"]),
            reply("\nThe test failed because\nof the parser.", &["edit_file"]),
        ];
        let lines = recap(&history);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].starts_with("last question: why why"), "{lines:?}");
        assert!(lines[0].ends_with('…'));
        assert_eq!(lines[0].chars().count(), "last question: ".len() + 72);
        assert_eq!(lines[1], "tools used: bash ×2 · read_file · edit_file");
        assert_eq!(lines[2], "last answer: The test failed because");
    }

    #[test]
    fn a_recap_of_a_stopped_turn_or_an_empty_session() {
        assert!(recap(&[]).is_empty());
        let summary = format!("{SUMMARY_PREFIX}they talked");
        assert!(recap(&[user(&summary)]).is_empty());
        let lines = recap(&[user("go"), reply("", &["bash"])]);
        assert_eq!(
            lines,
            [
                "last question: go",
                "tools used: bash",
                "last answer: none (the turn ended before the model answered)"
            ]
        );
    }
}
