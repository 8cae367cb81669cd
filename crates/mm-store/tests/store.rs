#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mm_store::{Store, StoreError, project_folder_name, title_from};
use mm_types::{Message, ToolCall};

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A project folder and a sessions root that does not exist yet.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("my project");
    fs::create_dir(&project).unwrap();
    let root = tmp.path().join("data/mm/sessions");
    (tmp, project.canonicalize().unwrap(), root)
}

fn history() -> Vec<Message> {
    vec![
        Message::system("You are mm."),
        Message::user("list the files\nin the repo"),
        Message::Assistant {
            content: String::new(),
            reasoning: Vec::new(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "bash".into(),
                arguments: r#"{"command":"ls"}"#.into(),
            }],
        },
        Message::tool(
            "call_1",
            "bash",
            "Cargo.toml\nsrc\n[exit code: exit status 0]",
        ),
        Message::assistant("Two entries."),
    ]
}

#[test]
fn create_save_open_round_trip_and_file_shape() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root.clone());
    let mut s = store.create(&project, "qwen3:8b").unwrap();
    let id = s.id().to_string();
    assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 7);
    let expected_path = root
        .join(project_folder_name(&project))
        .join(format!("{id}.json"));
    assert_eq!(s.path(), expected_path);
    assert!(
        !expected_path.exists(),
        "nothing is written before the first save"
    );

    s.data.messages = history();
    s.record_compaction(12, "Goal: list files.");
    s.record_error("generation", "[LOOP_DETECTED: stop]");
    s.save().unwrap();
    let saved = s.data.clone();
    assert_eq!(saved.title, "list the files");
    drop(s);

    let raw: serde_json::Value =
        serde_json::from_slice(&fs::read(&expected_path).unwrap()).unwrap();
    assert_eq!(raw["version"], 1);
    assert_eq!(raw["id"], id.as_str());
    assert_eq!(raw["cwd"], project.to_str().unwrap());
    assert_eq!(raw["title"], "list the files");
    assert_eq!(raw["model"], "qwen3:8b");
    for key in ["createdAt", "updatedAt"] {
        let text = raw[key].as_str().unwrap();
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).unwrap();
    }
    assert_eq!(raw["messages"].as_array().unwrap().len(), 5);
    assert_eq!(raw["messages"][1]["role"], "user");
    assert_eq!(raw["compactions"][0]["replaced"], 12);
    assert_eq!(raw["compactions"][0]["summary"], "Goal: list files.");
    assert!(raw["compactions"][0]["at"].is_string());
    assert_eq!(raw["errors"][0]["where"], "generation");
    assert_eq!(raw["errors"][0]["message"], "[LOOP_DETECTED: stop]");

    let reopened = store.open(&project, &id).unwrap();
    assert_eq!(reopened.data, saved);
    // The same project reached through a relative-looking path finds it too.
    let dotted = project.join("..").join("my project");
    drop(reopened);
    assert_eq!(store.open(&dotted, &id).unwrap().data.messages, history());
}

#[test]
fn files_are_0600_and_folders_0700() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root.clone());
    let mut s = store.create(&project, "m").unwrap();
    s.data.messages.push(Message::user("hi"));
    s.save().unwrap();
    assert_eq!(mode(s.path()), 0o600);
    assert_eq!(mode(s.path().parent().unwrap()), 0o700);
    assert_eq!(mode(&root), 0o700);
    let lock = s.path().parent().unwrap().join(format!(".{}.lock", s.id()));
    assert_eq!(mode(&lock), 0o600);
    // A later save keeps the mode (the file is replaced, not rewritten).
    s.save().unwrap();
    assert_eq!(mode(s.path()), 0o600);
}

#[test]
fn a_project_folder_with_loose_mode_is_tightened() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let dir = store.project_dir(&project);
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let _s = store.create(&project, "m").unwrap();
    assert_eq!(mode(&dir), 0o700);
}

#[test]
fn list_and_latest_follow_the_last_update() {
    let (tmp, project, root) = setup();
    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    let store = Store::new(root);
    assert!(
        store.list(None).unwrap().is_empty(),
        "no root yet: empty list"
    );
    assert_eq!(store.latest(&project).unwrap(), None);

    let mut ids = Vec::new();
    for q in ["first question", "second question", "third question"] {
        let mut s = store.create(&project, "m").unwrap();
        s.data.messages.push(Message::user(q));
        s.save().unwrap();
        ids.push(s.id().to_string());
    }
    let mut o = store.create(&other, "m2").unwrap();
    o.data.messages = history();
    o.save().unwrap();
    let other_id = o.id().to_string();
    drop(o);

    let listing = store.list(Some(&project)).unwrap();
    let got: Vec<&str> = listing.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(got, vec![ids[2].as_str(), ids[1].as_str(), ids[0].as_str()]);
    assert_eq!(listing[0].title, "third question");
    assert_eq!(listing[0].messages, 1);
    assert!(store.scan(Some(&project)).unwrap().skipped.is_empty());

    // Touch the first one: it becomes the latest.
    let mut first = store.open(&project, &ids[0]).unwrap();
    first.data.messages.push(Message::assistant("answer"));
    first.save().unwrap();
    drop(first);
    let latest = store.latest(&project).unwrap().unwrap();
    assert_eq!(latest.id, ids[0]);
    assert_eq!(latest.messages, 2);
    assert_eq!(latest.cwd, project);

    let all = store.list(None).unwrap();
    assert_eq!(all.len(), 4);
    assert!(
        all.iter()
            .any(|i| i.id == other_id && i.model == "m2" && i.messages == 5)
    );
    let only_other = store.list(Some(&other)).unwrap();
    assert_eq!(only_other.len(), 1);
    assert_eq!(only_other[0].id, other_id);
}

#[test]
fn a_held_session_cannot_be_opened_twice() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let mut s = store.create(&project, "m").unwrap();
    s.data.messages.push(Message::user("hi"));
    s.save().unwrap();
    let id = s.id().to_string();

    let err = store.open(&project, &id).unwrap_err();
    assert!(matches!(err, StoreError::InUse { .. }));
    assert_eq!(
        err.to_string(),
        format!("session {id} is in use by another mm process")
    );

    drop(s);
    let again = store.open(&project, &id).unwrap();
    let err = store.open(&project, &id).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("session {id} is in use by another mm process")
    );
    drop(again);
    store.open(&project, &id).unwrap();
}

#[test]
fn corrupt_files_are_reported_skipped_and_left_alone() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let mut good = store.create(&project, "m").unwrap();
    good.data.messages = history();
    good.save().unwrap();
    let good_id = good.id().to_string();
    drop(good);

    let mut bad = store.create(&project, "m").unwrap();
    bad.data.messages = history();
    bad.save().unwrap();
    let bad_id = bad.id().to_string();
    let bad_path = bad.path().to_path_buf();
    drop(bad);
    // Half a file, as a writer without rename would leave it.
    let whole = fs::read(&bad_path).unwrap();
    let half = whole[..whole.len() / 2].to_vec();
    fs::write(&bad_path, &half).unwrap();

    let err = store.open(&project, &bad_id).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "session file {} is corrupt: EOF while parsing",
            bad_path.display()
        )),
        "{text}"
    );
    assert!(text.contains("line "), "says where: {text}");
    assert_eq!(
        fs::read(&bad_path).unwrap(),
        half,
        "a corrupt file was touched"
    );

    let listing = store.scan(Some(&project)).unwrap();
    assert_eq!(listing.sessions.len(), 1);
    assert_eq!(listing.sessions[0].id, good_id);
    assert_eq!(listing.skipped.len(), 1);
    assert!(matches!(listing.skipped[0], StoreError::Corrupt { .. }));
    let listed = store.list(Some(&project)).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, good_id);
    assert!(
        listing.skipped[0]
            .to_string()
            .contains(&bad_path.display().to_string())
    );
    assert_eq!(store.latest(&project).unwrap().unwrap().id, good_id);

    // Not JSON at all, and valid JSON that is not a session.
    fs::write(&bad_path, "hello").unwrap();
    assert!(matches!(
        store.open(&project, &bad_id).unwrap_err(),
        StoreError::Corrupt { .. }
    ));
    fs::write(&bad_path, r#"{"version":1,"id":"x"}"#).unwrap();
    let text = store.open(&project, &bad_id).unwrap_err().to_string();
    assert!(text.contains("missing field"), "{text}");

    // A newer format is named as such.
    let mut v: serde_json::Value = serde_json::from_slice(&whole).unwrap();
    v["version"] = 2.into();
    fs::write(&bad_path, serde_json::to_vec(&v).unwrap()).unwrap();
    assert_eq!(
        store.open(&project, &bad_id).unwrap_err().to_string(),
        format!(
            "session file {} has format version 2; this mm reads version 1",
            bad_path.display()
        )
    );
    // Another session's contents under this id.
    let mut v: serde_json::Value = serde_json::from_slice(&whole).unwrap();
    v["id"] = good_id.clone().into();
    fs::write(&bad_path, serde_json::to_vec(&v).unwrap()).unwrap();
    let text = store.open(&project, &bad_id).unwrap_err().to_string();
    assert!(
        text.ends_with(&format!("is corrupt: it holds session {good_id}")),
        "{text}"
    );
}

#[test]
fn save_refuses_to_overwrite_a_file_changed_on_disk() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let mut s = store.create(&project, "m").unwrap();
    s.data.messages = history();
    s.save().unwrap();
    fs::write(s.path(), "{ broken").unwrap();
    s.data.messages.push(Message::user("more"));
    let err = s.save().unwrap_err();
    assert!(matches!(err, StoreError::Changed { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "session file {} changed on disk since it was loaded; not overwriting it",
            s.path().display()
        )
    );
    assert_eq!(fs::read_to_string(s.path()).unwrap(), "{ broken");
    // A file that appears for a session never saved is not overwritten either.
    let mut fresh = store.create(&project, "m").unwrap();
    fs::write(fresh.path(), "someone else's").unwrap();
    assert!(matches!(
        fresh.save().unwrap_err(),
        StoreError::Changed { .. }
    ));
    assert_eq!(fs::read_to_string(fresh.path()).unwrap(), "someone else's");
}

#[test]
fn secrets_never_reach_the_file() {
    let (_tmp, project, root) = setup();
    let key = "sk-live-0123456789abcdef".to_string();
    let odd = "p\"a\\ss\nword".to_string();
    let store = Store::new(root).with_secrets([key.clone(), odd.clone(), String::new()]);
    let mut s = store.create(&project, "m").unwrap();
    s.data.messages = vec![
        Message::user(format!("use the key {key} please")),
        Message::Assistant {
            content: format!("ok {odd}"),
            reasoning: Vec::new(),
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "bash".into(),
                arguments: serde_json::json!({"command": format!("curl -H 'k: {key}'")})
                    .to_string(),
            }],
        },
        Message::tool("c", "bash", format!("echo {key}{key}")),
    ];
    s.record_error("generation", format!("401 for key {key}"));
    s.save().unwrap();

    let raw = fs::read_to_string(s.path()).unwrap();
    assert!(!raw.contains(&key), "{raw}");
    assert!(!raw.contains("sk-live"), "{raw}");
    assert!(!raw.contains("ss\\nword"), "{raw}");
    drop(s);

    let id = store.list(Some(&project)).unwrap()[0].id.clone();
    let back = store.open(&project, &id).unwrap();
    assert_eq!(back.data.title, "use the key [redacted] please");
    assert_eq!(
        back.data.messages[0],
        Message::user("use the key [redacted] please")
    );
    match &back.data.messages[1] {
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            assert_eq!(content, "ok [redacted]");
            assert_eq!(
                tool_calls[0].arguments,
                r#"{"command":"curl -H 'k: [redacted]'"}"#
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        back.data.messages[2],
        Message::tool("c", "bash", "echo [redacted][redacted]")
    );
    assert_eq!(back.data.errors[0].message, "401 for key [redacted]");
}

#[test]
fn unsaved_sessions_leave_nothing_and_bad_ids_are_refused() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let s = store.create(&project, "m").unwrap();
    let dir = s.path().parent().unwrap().to_path_buf();
    let id = s.id().to_string();
    drop(s);
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
    let err = store.open(&project, &id).unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("session {id} not found in {}", dir.display())
    );
    for bad in ["../x", "", "a/b", "x.json"] {
        assert!(
            matches!(
                store.open(&project, bad).unwrap_err(),
                StoreError::InvalidId { .. }
            ),
            "{bad}"
        );
    }
}

#[test]
fn open_removes_stale_temp_files_of_its_session() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let mut s = store.create(&project, "m").unwrap();
    s.data.messages.push(Message::user("hi"));
    s.save().unwrap();
    let id = s.id().to_string();
    let dir = s.path().parent().unwrap().to_path_buf();
    drop(s);
    let stale = dir.join(format!(".{id}.json.99999.3.tmp"));
    fs::write(&stale, "{ half").unwrap();
    let unrelated = dir.join("notes.txt");
    fs::write(&unrelated, "keep").unwrap();
    let s = store.open(&project, &id).unwrap();
    assert!(!stale.exists());
    assert!(unrelated.exists());
    assert_eq!(s.data.messages, vec![Message::user("hi")]);
    // Temp files and strangers never show up in a list.
    assert_eq!(store.list(Some(&project)).unwrap().len(), 1);
}

#[test]
fn titles_come_from_the_first_question() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let mut s = store.create(&project, "m").unwrap();
    s.save().unwrap();
    assert_eq!(s.data.title, "", "no question yet, no title");
    let long = "why ".repeat(40);
    s.data.messages = vec![
        Message::system("sys"),
        Message::user(long.clone()),
        Message::user("later"),
    ];
    s.save().unwrap();
    assert_eq!(s.data.title, title_from(&long));
    assert!(s.data.title.ends_with('…'));
    // Once set, the title stays even after a compaction rewrote the history.
    s.data.messages = vec![Message::user("Summary of earlier work: …")];
    s.save().unwrap();
    assert_eq!(s.data.title, title_from(&long));
}

#[test]
fn checkpoint_ids_round_trip_and_older_files_without_them_load() {
    use mm_store::{CheckpointLog, TurnCheckpoint};
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let mut s = store.create(&project, "qwen3:8b").unwrap();
    s.data.messages = history();
    s.save().unwrap();
    let id = s.id().to_string();
    let path = s.path().to_path_buf();
    let raw: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert!(raw.get("checkpoints").is_none(), "no field while empty");

    let turn = |before: &str, after: Option<&str>| TurnCheckpoint {
        before: before.into(),
        after: after.map(Into::into),
        question: "fix the parser".into(),
        at: time::OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .unwrap(),
    };
    s.data.checkpoints = CheckpointLog {
        start: Some("a".repeat(40)),
        done: vec![turn(&"a".repeat(40), Some(&"b".repeat(40)))],
        undone: vec![turn(&"b".repeat(40), None)],
    };
    s.save().unwrap();
    let saved = s.data.checkpoints.clone();
    drop(s);
    let raw: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(raw["checkpoints"]["done"][0]["after"], "b".repeat(40));
    assert!(raw["checkpoints"]["undone"][0].get("after").is_none());
    assert_eq!(store.open(&project, &id).unwrap().data.checkpoints, saved);

    // A file written before checkpoints existed: the same shape without
    // the field.
    let mut old = raw.clone();
    old.as_object_mut().unwrap().remove("checkpoints");
    fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
    let reopened = store.open(&project, &id).unwrap();
    assert!(reopened.data.checkpoints.is_empty());
    assert_eq!(reopened.data.messages, history());
}

#[test]
fn token_counts_round_trip_and_older_files_without_them_load() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let mut s = store
        .create(&project, "anthropic/claude-sonnet-4-5")
        .unwrap();
    s.data.messages = history();
    s.save().unwrap();
    let id = s.id().to_string();
    let path = s.path().to_path_buf();
    let raw: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert!(
        raw.get("usage").is_none(),
        "no field while nothing was counted"
    );

    s.data.usage = mm_types::Usage {
        prompt_tokens: 5200,
        completion_tokens: 80,
        cached_tokens: 4800,
    };
    s.save().unwrap();
    drop(s);
    let raw: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        raw["usage"],
        serde_json::json!({"prompt_tokens": 5200, "completion_tokens": 80, "cached_tokens": 4800})
    );
    assert_eq!(
        store.open(&project, &id).unwrap().data.usage.cached_tokens,
        4800
    );

    // Written before counts were kept: no field; and before the cached
    // part was: counts without it.
    let mut old = raw.clone();
    old.as_object_mut().unwrap().remove("usage");
    fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
    let reopened = store.open(&project, &id).unwrap();
    assert!(reopened.data.usage.is_zero());
    assert_eq!(reopened.data.messages, history());
    drop(reopened);
    old["usage"] = serde_json::json!({"prompt_tokens": 10, "completion_tokens": 2});
    fs::write(&path, serde_json::to_vec(&old).unwrap()).unwrap();
    let reopened = store.open(&project, &id).unwrap();
    assert_eq!(
        (
            reopened.data.usage.prompt_tokens,
            reopened.data.usage.cached_tokens
        ),
        (10, 0)
    );
}

#[test]
fn ids_resolve_from_a_unique_start_or_the_list_number() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let mut ids = Vec::new();
    for q in ["first", "second"] {
        let mut s = store.create(&project, "m").unwrap();
        s.data.messages.push(Message::user(q));
        s.save().unwrap();
        ids.push(s.id().to_string());
    }
    // The whole id, and the list's numbers (1 is the most recent).
    assert_eq!(store.resolve(&project, &ids[0]).unwrap(), ids[0]);
    assert_eq!(store.resolve(&project, "1").unwrap(), ids[1]);
    assert_eq!(store.resolve(&project, "2").unwrap(), ids[0]);
    assert!(matches!(
        store.resolve(&project, "3"),
        Err(StoreError::NoNumber {
            number: 3,
            count: 2
        })
    ));
    // A start both ids share is ambiguous; one only the first has is not.
    let common = ids[0]
        .chars()
        .zip(ids[1].chars())
        .take_while(|(a, b)| a == b)
        .count();
    // Both ids begin with the time they were made: they share a start.
    assert!(common > 0, "{ids:?}");
    match store.resolve(&project, &ids[0][..common]) {
        Err(StoreError::Ambiguous { ids: both, .. }) => assert_eq!(both.len(), 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.resolve(&project, &ids[0][..common + 1]).unwrap(),
        ids[0]
    );
    assert!(matches!(
        store.resolve(&project, "ffffffff"),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.resolve(&project, "../x"),
        Err(StoreError::InvalidId { .. })
    ));
}

#[test]
fn a_fork_copies_the_history_and_leaves_the_original_file_alone() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let mut s = store.create(&project, "m").unwrap();
    s.data.messages = history();
    s.data.cache_key = "key".into();
    s.save().unwrap();
    let before = fs::read(s.path()).unwrap();
    let mut fork = store.fork(&s.data, None).unwrap();
    assert_ne!(fork.id(), s.id());
    assert_eq!(fork.data.forked_from.as_deref(), Some(s.id()));
    assert_eq!(fork.data.messages, s.data.messages);
    assert_eq!(fork.data.cache_key, "key");
    assert_eq!(fork.data.title, "list the files (fork)");
    fork.save().unwrap();
    assert_eq!(
        fs::read(s.path()).unwrap(),
        before,
        "the original untouched"
    );
    let named = store.fork(&s.data, Some("  try\n another  way ")).unwrap();
    assert_eq!(named.data.title, "try another way");
    // The fork is a session like any other.
    let id = fork.id().to_string();
    drop(fork);
    let opened = store.open(&project, &id).unwrap();
    assert_eq!(opened.data.messages, history());
}

#[test]
fn rename_sets_the_title_and_refuses_an_empty_one() {
    let (_tmp, project, root) = setup();
    let store = Store::new(root);
    let mut s = store.create(&project, "m").unwrap();
    s.data.messages = history();
    s.save().unwrap();
    s.rename("the parser bug").unwrap();
    assert!(matches!(s.rename("  \n "), Err(StoreError::EmptyTitle)));
    assert_eq!(
        store.list(Some(&project)).unwrap()[0].title,
        "the parser bug"
    );
}

#[test]
fn search_finds_every_word_in_questions_or_answers_newest_first() {
    let (tmp, project, root) = setup();
    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    let store = Store::new(root);
    let make = |cwd: &Path, q: &str, a: &str| {
        let mut s = store.create(cwd, "m").unwrap();
        s.data.messages = vec![Message::user(q), Message::assistant(a)];
        s.save().unwrap();
        s.id().to_string()
    };
    let parser = make(&project, "fix the Parser", "The LEXER was wrong.");
    let lexer = make(&project, "why the lexer?", "Because tokens.");
    let elsewhere = make(&other, "parser and lexer", "ok");
    let ids = |found: Vec<mm_store::Found>| -> Vec<String> {
        found.into_iter().map(|f| f.info.id).collect()
    };
    assert_eq!(
        ids(store.search(Some(&project), &["lexer"]).unwrap()),
        [lexer.clone(), parser.clone()]
    );
    let both = store.search(Some(&project), &["parser", "lexer"]).unwrap();
    assert_eq!(both.len(), 1);
    assert_eq!(both[0].info.id, parser);
    assert_eq!(both[0].excerpt, "fix the Parser");
    assert!(store.search(Some(&project), &["tool"]).unwrap().is_empty());
    assert_eq!(
        ids(store.search(None, &["parser", "lexer"]).unwrap()),
        [elsewhere, parser]
    );
}
