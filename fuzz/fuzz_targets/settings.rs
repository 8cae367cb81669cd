//! The settings loader on one file's text (`mm_config::check_file_text`,
//! what `load` does with each file), as the user's file or the untrusted
//! project file: no panic; an error is one line naming the file; settings
//! that load have every number inside its range (so no later arithmetic on
//! them can overflow), and load again the same.
#![no_main]

use std::collections::BTreeMap;
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use mm_config::{BaseDirs, Origin, SETTINGS, check_file_text};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let path = PathBuf::from("/fuzz/config.yaml");
    let origin = if which % 2 == 0 {
        Origin::UserFile(path.clone())
    } else {
        Origin::ProjectFile(path.clone())
    };
    let mut env = BTreeMap::new();
    env.insert("HOME".to_owned(), "/fuzz-home".to_owned());
    let dirs = BaseDirs::from_env(&env).expect("HOME is set");
    match check_file_text(&origin, text, &dirs) {
        Ok(config) => {
            for setting in SETTINGS {
                let Some(range) = setting.range else { continue };
                if let Some(value) = (range.get)(&config) {
                    assert!(
                        range.min <= value && value <= range.max,
                        "{} = {value} passed outside {}..={}",
                        setting.key,
                        range.min,
                        range.max
                    );
                }
            }
            let again = check_file_text(&origin, text, &dirs).expect("loads twice");
            assert_eq!(again, config);
        }
        Err(e) => {
            let line = e.to_string();
            assert!(!line.is_empty() && !line.contains('\n'), "{line:?}");
            assert!(line.contains("/fuzz/config.yaml"), "{line}");
        }
    }
});
