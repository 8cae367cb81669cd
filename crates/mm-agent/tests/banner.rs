//! What a session shows when it starts: one line each for the model, the
//! folder, the tools, the skills, the language servers and the
//! instructions; the same in every front end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use mm_agent::{Agent, PermissionSource};

/// An agent with default settings, its skills in `skills` and no
/// language server (no request is made).
fn agent(dir: &Path, skills: &Path) -> Agent {
    let mut env = std::collections::BTreeMap::new();
    env.insert("HOME".to_owned(), dir.join("home").display().to_string());
    let sources = mm_config::Sources {
        cwd: dir.to_path_buf(),
        env,
        ..mm_config::Sources::default()
    };
    let mut config = mm_config::load(&sources).unwrap().config;
    config.skills_dir = skills.to_path_buf();
    config.lsp.servers.clear();
    Agent::new(config, dir, PermissionSource::Terminal).unwrap()
}

#[test]
fn the_banner_counts_the_skills_read_skill_offers() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    let a = agent(dir.path(), &skills);
    assert_eq!(
        a.banner()[3],
        format!("skills  none in {}", skills.display())
    );

    std::fs::create_dir(&skills).unwrap();
    std::fs::write(skills.join("deploy.md"), "# Deploy").unwrap();
    std::fs::create_dir(skills.join("review")).unwrap();
    std::fs::write(skills.join("review/SKILL.md"), "# Review").unwrap();
    std::fs::create_dir(skills.join("empty")).unwrap();
    std::fs::write(skills.join("notes.txt"), "x").unwrap();
    // Hidden names are never skills: read_skill does not offer them.
    std::fs::write(skills.join(".draft.md"), "x").unwrap();
    let a = agent(dir.path(), &skills);
    assert_eq!(a.skills(), ["deploy", "review"]);
    assert_eq!(a.banner()[3], format!("skills  2 in {}", skills.display()));
    assert_eq!(
        a.banner()[4],
        "lsp     no language server found on the PATH: the lsp tool is not declared"
    );
}
