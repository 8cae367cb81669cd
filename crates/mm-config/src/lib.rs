//! mm-config: every setting of mm in one struct, layered from defaults,
//! the user file, the project file, the environment and flags, with clear
//! errors. It reads nothing but config files and the environment.

pub mod settings;

pub use settings::*;
