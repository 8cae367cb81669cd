//! Hostile input met through `mm-repl -p`: a repository's instruction
//! files that point at secrets, settings files that are FIFOs, devices or
//! huge, and commands that look for the provider key in mm's own
//! environment. Each test is the attack first: it fails without the fix.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, all_text, messages, text};
use mm_mock::Reply;

/// rot13 over letters and a rotation of digits: what the key looks like
/// after the test's `tr`, so that the literal (which mm redacts) is not
/// what the test looks for.
fn rot(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            '0'..='9' => (((c as u8 - b'0') + 5) % 10 + b'0') as char,
            other => other,
        })
        .collect()
}

const KEY: &str = "sk-live-Zq7Wp2Lm9Xk4";

/// Every environment a command can see: its own, and that of each of its
/// ancestors up to init (mm among them), scrambled so redaction cannot
/// hide what leaked.
const LOOK_FOR_KEYS: &str = "p=$$; while [ \"$p\" -gt 1 ]; do cat /proc/$p/environ 2>/dev/null; \
     p=$(awk '{print $4}' /proc/$p/stat); done | tr '\\0A-Za-z0-9' '\\nN-ZA-Mn-za-m5-90-4'; \
     env | tr 'A-Za-z0-9' 'N-ZA-Mn-za-m5-90-4'";

fn key_search(extra: &str) -> (World, std::process::Output) {
    let w = World::new(
        vec![
            Reply::tool_call(
                "call_1",
                "bash",
                serde_json::json!({ "command": LOOK_FOR_KEYS }).to_string(),
            ),
            Reply::text("done"),
        ],
        &format!("apiKeyEnv: MY_PROVIDER_TOKEN\n{extra}"),
    );
    let mut cmd = w.command(&["-p", "look"]);
    cmd.env("MY_PROVIDER_TOKEN", KEY)
        .env("OPENAI_API_KEY", format!("{KEY}-openai"))
        .env("KEEP_ME", "visible-value");
    let out = common::run_bounded(cmd, None);
    (w, out)
}

fn assert_no_key_leaked(w: &World, out: &std::process::Output) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    let result = messages(&chats[1]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    // The search itself worked: an ordinary variable is seen.
    assert!(result.contains(&rot("KEEP_ME=visible-value")), "{result}");
    assert!(
        !result.contains(&rot(KEY)),
        "a command read the provider key from mm's environment: {result}"
    );
    assert!(!result.contains(&rot("MY_PROVIDER_TOKEN")), "{result}");
    assert!(!result.contains(&rot("OPENAI_API_KEY")), "{result}");
    // And mm itself still used the key.
    let auth: Vec<String> = w
        .requests()
        .iter()
        .flat_map(|r| r.headers.clone())
        .filter(|(k, _)| k == "authorization")
        .map(|(_, v)| v)
        .collect();
    assert!(
        auth.iter().any(|v| v == &format!("Bearer {KEY}")),
        "the key still reaches the server: {auth:?}"
    );
}

#[test]
fn commands_cannot_read_the_key_from_mms_environment() {
    let (w, out) = key_search("");
    assert_no_key_leaked(&w, &out);
}

#[test]
fn commands_cannot_read_the_key_inside_the_sandbox_either() {
    let (w, out) = key_search("sandbox: workspace-write\n");
    let stderr = text(&out.stderr);
    if stderr.contains("sandbox") && stderr.contains("not") && !stderr.contains("🛠") {
        eprintln!("SKIPPED: the sandbox cannot run here: {stderr}");
        return;
    }
    assert_no_key_leaked(&w, &out);
}

#[test]
fn instruction_files_that_link_to_secrets_or_are_denied_are_skipped() {
    let w = World::new(
        vec![Reply::text("ok"), Reply::text("ok"), Reply::text("ok")],
        "permissions:\n  deny: [\"read_file(.env)\"]\n",
    );
    let cwd = &w.cwd;
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    std::fs::write(
        cwd.join(".git/config"),
        "[remote \"origin\"]\n\turl = https://user:GIT-SECRET-9@example.invalid/r\n",
    )
    .unwrap();
    std::fs::write(cwd.join(".env"), "API_TOKEN=ENV-SECRET-7\n").unwrap();
    std::os::unix::fs::symlink(".env", cwd.join("AGENTS.md")).unwrap();
    std::fs::create_dir_all(cwd.join("sub")).unwrap();
    std::os::unix::fs::symlink("../.git/config", cwd.join("sub/AGENTS.md")).unwrap();
    std::fs::write(cwd.join("NOTES.md"), "Run the linter first.\n").unwrap();
    std::fs::create_dir_all(cwd.join(".mm")).unwrap();
    std::fs::write(
        cwd.join(".mm/config.yaml"),
        "instructions: [AGENTS.md, .env, .git/config, NOTES.md]\n",
    )
    .unwrap();

    for dir in [cwd.clone(), cwd.join("sub")] {
        let mut cmd = w.command(&["-p", "hello"]);
        cmd.current_dir(&dir);
        let out = common::run_bounded(cmd, None);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
        let chats = w.chats();
        let system = all_text(chats.last().unwrap());
        assert!(!system.contains("ENV-SECRET-7"), "{system}");
        assert!(!system.contains("GIT-SECRET-9"), "{system}");
        if dir == *cwd {
            assert!(system.contains("Run the linter first."), "{system}");
        }
        assert!(
            stderr.contains("instructions: skipped") && stderr.contains("symbolic link"),
            "one line says a link was skipped: {stderr}"
        );
    }
    let mut cmd = w.command(&["-p", "hello"]);
    cmd.current_dir(cwd);
    let stderr = text(&common::run_bounded(cmd, None).stderr);
    assert!(
        stderr.contains("instructions: skipped .env: denied by rule \"read_file(.env)\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("instructions: skipped .git/config: it is inside .git"),
        "{stderr}"
    );
}

/// A project settings file that is not a regular file stops start-up with
/// one line at once: no hang on a FIFO, no memory spent on a device.
#[test]
fn a_settings_file_that_is_a_fifo_a_device_or_huge_is_one_line() {
    let w = World::new(vec![Reply::text("ok")], "");
    let project = w.cwd.join(".mm");
    std::fs::create_dir_all(&project).unwrap();
    let target = project.join("config.yaml");

    let fifo = w.user.path().join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    std::os::unix::fs::symlink(&fifo, &target).unwrap();
    let out = w.run(&["-p", "hi"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("it is a FIFO, not a regular file"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    std::fs::remove_file(&target).unwrap();

    // A zero device of our own, in the temp folder (needs CAP_MKNOD).
    let zero = w.user.path().join("zero");
    let made = std::process::Command::new("mknod")
        .arg(&zero)
        .args(["c", "1", "5"])
        .status()
        .is_ok_and(|s| s.success());
    if made {
        std::os::unix::fs::symlink(&zero, &target).unwrap();
        let out = w.run(&["-p", "hi"], None);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("it is a character device"), "{stderr}");
        std::fs::remove_file(&target).unwrap();
    } else {
        eprintln!("SKIPPED: mknod is not allowed here; the device case was not checked");
    }

    // 3 MiB of comments: valid YAML, too large to be a settings file.
    std::fs::write(&target, "# padding\n".repeat(300_000)).unwrap();
    let out = w.run(&["-p", "hi"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("larger than 1024 KiB"), "{stderr}");
}
