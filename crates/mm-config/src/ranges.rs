//! The range of every numeric setting (a [`Setting`] row's `range`):
//! checked at start for each file, variable and flag, so that a huge or
//! zero value from an untrusted project file is an error naming the file
//! and the key, never a panic later (a duration added to an instant, a
//! count that never ends). A test checks that every integer setting has
//! one.

use crate::settings::Config;
use crate::table::{SETTINGS, Setting, setting};

/// The allowed values of one numeric setting.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    /// The smallest value allowed.
    pub min: u64,
    /// The largest value allowed.
    pub max: u64,
    /// The setting's value in `config`; `None` when it holds no number
    /// (a setting that may also be a word).
    pub get: fn(&Config) -> Option<u64>,
}

/// The range of `key`, if it is a numeric setting.
pub fn range_of(key: &str) -> Option<Range> {
    setting(key).and_then(|s| s.range)
}

impl Range {
    /// `Err(problem)` when `value` is outside the range.
    pub fn check(&self, value: u64) -> Result<(), String> {
        if value < self.min {
            Err(format!("expected at least {}, found {value}", self.min))
        } else if value > self.max {
            Err(format!("expected at most {}, found {value}", self.max))
        } else {
            Ok(())
        }
    }
}

/// The first setting of `config` outside its range: key and problem.
pub fn first_out_of_range(config: &Config) -> Option<(&'static str, String)> {
    SETTINGS.iter().find_map(|s: &Setting| {
        let r = s.range?;
        let value = (r.get)(config)?;
        r.check(value).err().map(|problem| (s.key, problem))
    })
}

/// What to say of an integer too large for any setting's type (`digits`
/// as written) under `key`.
pub fn too_large(key: &str, digits: &str) -> String {
    match range_of(key) {
        Some(r) => format!("expected at most {}, found {digits}", r.max),
        None => format!("expected a smaller number, found {digits} (too large)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_named() {
        let r = range_of("watchdog").unwrap();
        assert_eq!(r.check(86_400), Ok(()));
        assert_eq!(
            r.check(u64::MAX),
            Err("expected at most 86400, found 18446744073709551615".to_owned())
        );
        let r = range_of("maxTurns").unwrap();
        assert_eq!(r.check(0), Err("expected at least 1, found 0".to_owned()));
        assert_eq!(
            too_large("retries", "99999999999999999999999"),
            "expected at most 100, found 99999999999999999999999"
        );
    }
}
