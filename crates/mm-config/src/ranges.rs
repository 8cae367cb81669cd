//! The range of every numeric setting, in one table: checked at start for
//! each file, variable and flag, so that a huge or zero value from an
//! untrusted project file is an error naming the file and the key, never a
//! panic later (a duration added to an instant, a count that never ends).
//!
//! A new numeric setting joins [`RANGES`]; a test checks that every
//! integer key of [`crate::Config`] is listed.

use crate::settings::Config;

/// The allowed values of one numeric setting.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    /// Dotted camelCase key, as in [`crate::KEYS`].
    pub key: &'static str,
    /// The smallest value allowed.
    pub min: u64,
    /// The largest value allowed.
    pub max: u64,
    /// The setting's value in `config`; `None` when it holds no number
    /// (a setting that may also be a word).
    pub get: fn(&Config) -> Option<u64>,
}

/// The bounds. A day (86400 s) for waits, a week for a command; counts
/// far beyond any real use but well inside the arithmetic done on them.
pub const RANGES: &[Range] = &[
    Range {
        key: "contextWindow",
        min: 1,
        max: 100_000_000,
        get: |c| c.context_window.fixed(),
    },
    Range {
        key: "maxTokens",
        min: 1,
        max: 10_000_000,
        get: |c| Some(c.max_tokens),
    },
    Range {
        // 0 = never cut.
        key: "watchdog",
        min: 0,
        max: 86_400,
        get: |c| Some(c.watchdog),
    },
    Range {
        key: "retries",
        min: 0,
        max: 100,
        get: |c| Some(u64::from(c.retries)),
    },
    Range {
        key: "maxRetryWait",
        min: 0,
        max: 86_400,
        get: |c| Some(c.max_retry_wait),
    },
    Range {
        key: "maxTurns",
        min: 1,
        max: 1_000_000,
        get: |c| Some(u64::from(c.max_turns)),
    },
    Range {
        key: "bashTimeout",
        min: 1,
        max: 604_800,
        get: |c| Some(c.bash_timeout),
    },
    Range {
        key: "maxOutput",
        min: 200,
        max: 100_000_000,
        get: |c| u64::try_from(c.max_output).ok(),
    },
    Range {
        key: "previewLines",
        min: 0,
        max: 100_000,
        get: |c| u64::try_from(c.preview_lines).ok(),
    },
    Range {
        key: "compact.keepRecent",
        min: 0,
        max: 100_000_000,
        get: |c| Some(c.compact.keep_recent),
    },
    Range {
        key: "mcp.startTimeout",
        min: 1,
        max: 86_400,
        get: |c| Some(c.mcp.start_timeout),
    },
    Range {
        key: "mcp.toolTimeout",
        min: 1,
        max: 86_400,
        get: |c| Some(c.mcp.tool_timeout),
    },
    Range {
        key: "checkpoints.keep",
        min: 1,
        max: 100_000,
        get: |c| Some(u64::from(c.checkpoints.keep)),
    },
];

/// The range of `key`, if it is a numeric setting.
pub fn range_of(key: &str) -> Option<&'static Range> {
    RANGES.iter().find(|r| r.key == key)
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
    RANGES.iter().find_map(|r| {
        let value = (r.get)(config)?;
        r.check(value).err().map(|problem| (r.key, problem))
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
    fn every_integer_setting_has_a_range_and_the_defaults_are_inside() {
        let defaults = Config::default();
        assert_eq!(first_out_of_range(&defaults), None);
        let value = serde_json::to_value(&defaults).unwrap();
        let mut integers = Vec::new();
        fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(map) => {
                    for (k, v) in map {
                        let key = if prefix.is_empty() {
                            k.clone()
                        } else {
                            format!("{prefix}.{k}")
                        };
                        walk(&key, v, out);
                    }
                }
                serde_json::Value::Number(n) if n.is_u64() => out.push(prefix.to_owned()),
                _ => {}
            }
        }
        walk("", &value, &mut integers);
        for key in &integers {
            assert!(range_of(key).is_some(), "{key} has no range");
        }
        for r in RANGES {
            assert!(crate::KEYS.contains(&r.key), "{} is not a key", r.key);
            assert!(r.min <= r.max);
        }
    }

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
