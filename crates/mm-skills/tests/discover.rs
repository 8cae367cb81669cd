#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Discovery on real folders: flat files, SKILL.md folders, precedence,
//! and symlinks that try to leave the skills folder.

use std::fs;
use std::os::unix::fs::symlink;

use mm_skills::{catalogue, discover, find, read};

#[test]
fn flat_files_and_folders_sorted_by_name_flat_wins() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("zeta.md"), "Last one.\n").unwrap();
    fs::create_dir(d.join("alpha")).unwrap();
    fs::write(
        d.join("alpha/SKILL.md"),
        "---\ndescription: From the folder\n---\n# Alpha\n",
    )
    .unwrap();
    // Both forms: the flat file wins.
    fs::write(d.join("both.md"), "Flat wins.\n").unwrap();
    fs::create_dir(d.join("both")).unwrap();
    fs::write(d.join("both/SKILL.md"), "Folder loses.\n").unwrap();
    // Not skills: other extensions, folders without SKILL.md, hidden files.
    fs::write(d.join("notes.txt"), "no").unwrap();
    fs::create_dir(d.join("empty")).unwrap();
    fs::write(d.join(".hidden.md"), "no").unwrap();
    fs::write(d.join("bare.md"), "# Only a heading\n").unwrap();

    let skills = discover(d);
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["alpha", "bare", "both", "zeta"]);
    assert_eq!(
        catalogue(&skills),
        "  alpha — From the folder\n  bare\n  both — Flat wins.\n  zeta — Last one."
    );
    let both = find(d, "both").unwrap();
    assert_eq!(read(&both).unwrap(), "Flat wins.\n");
    let alpha = find(d, "alpha").unwrap();
    assert_eq!(
        read(&alpha).unwrap(),
        "---\ndescription: From the folder\n---\n# Alpha\n"
    );
}

#[test]
fn missing_folder_has_no_skills() {
    let dir = tempfile::tempdir().unwrap();
    assert!(discover(&dir.path().join("nope")).is_empty());
    assert!(find(&dir.path().join("nope"), "x").is_none());
}

#[test]
fn names_are_base_names_only() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    fs::create_dir(&skills).unwrap();
    fs::write(skills.join("ok.md"), "fine\n").unwrap();
    fs::write(dir.path().join("secret.md"), "outside\n").unwrap();
    assert!(find(&skills, "../secret").is_none());
    assert!(find(&skills, "..").is_none());
    assert!(find(&skills, "").is_none());
    assert!(find(&skills, "ok").is_some());
}

#[test]
fn symlinks_inside_are_followed_escaping_ones_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let skills = dir.path().join("skills");
    fs::create_dir(&skills).unwrap();
    fs::write(dir.path().join("outside.md"), "secret\n").unwrap();
    fs::create_dir(dir.path().join("outdir")).unwrap();
    fs::write(dir.path().join("outdir/SKILL.md"), "secret\n").unwrap();
    symlink(dir.path().join("outside.md"), skills.join("escape.md")).unwrap();
    symlink(dir.path().join("outdir"), skills.join("escdir")).unwrap();
    fs::write(skills.join("real.md"), "Inside.\n").unwrap();
    symlink("real.md", skills.join("alias.md")).unwrap();

    let names: Vec<String> = discover(&skills).into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["alias", "real"]);
    assert!(find(&skills, "escape").is_none());
    assert!(find(&skills, "escdir").is_none());
    assert_eq!(read(&find(&skills, "alias").unwrap()).unwrap(), "Inside.\n");
}
