//! Which mm this is, for `--version`, the banners and the window's status
//! bar. Stamped by `build.rs` (docs/design.md#version).

/// The version string: `MM_VERSION` at build, else `<crate version>-<git
/// describe>`, else the crate version.
pub fn version() -> &'static str {
    env!("MM_BUILD_VERSION")
}
