//! Taking the provider keys out of the process environment at start, so
//! that no command, hook or server mm starts can read them, not even from
//! `/proc/<mm's pid>/environ` (docs/design.md#keys-stay-out-of-tools).

use mm_config::Sources;

/// Take every provider key variable, and the `apiKeyEnv` of the settings
/// `sources` name, out of the environment (see [`mm_redact::keys`]);
/// returns the names taken. Settings that do not load are left for the
/// front end to report: only the provider's own variables are taken then.
///
/// # Safety
/// No other thread may exist yet: call it first in `main`, before a
/// runtime starts.
pub unsafe fn take_keys(sources: &Sources) -> Vec<String> {
    let mut names: Vec<String> = mm_engine::all_key_vars()
        .into_iter()
        .map(str::to_owned)
        .collect();
    if let Ok(loaded) = mm_config::load(sources)
        && let Some(var) = loaded.config.api_key_env
        && !names.contains(&var)
    {
        names.push(var);
    }
    // SAFETY: passed on from this function's contract.
    unsafe { mm_redact::keys::take_from_env(&names) }
}
