//! mm-config: every setting of mm in one struct, layered from defaults,
//! the user file, the project file, the environment and flags, with clear
//! errors that name the file, the key and what was expected.
//!
//! It owns the settings struct, its sources and its errors. It must never
//! read anything but config files and the environment (it does not look
//! at key values beyond "set or not"), and never print.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[cfg(feature = "cli")]
pub mod cli;
pub mod dirs;
pub mod error;
pub mod load;
pub mod print;
pub mod provider;
pub mod ranges;
pub mod settings;
pub mod table;

#[cfg(feature = "cli")]
pub use cli::{DemoFlag, SessionFlags, SettingsFlags, TerminalFlags};
pub use dirs::{BaseDirs, config_dir, data_dir, state_dir};
pub use error::ConfigError;
pub use load::{Loaded, Origin, Overrides, Sources, check_file_text, load};
pub use print::{KeyInForce, Resolved, WindowInForce, mask_url};
pub use ranges::Range;
pub use settings::*;
pub use table::{SETTINGS, Setting, project_may_set, setting};
