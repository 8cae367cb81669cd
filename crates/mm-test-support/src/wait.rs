//! Bounded waits: a test that waits for something fails when it does not
//! come, never hangs.

use std::time::{Duration, Instant};

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(20);

/// Wait until `cond` holds, for at most `bound`; whether it did.
pub fn wait_for(bound: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(POLL);
    }
    cond()
}

/// [`wait_for`] inside an async test (it sleeps on the runtime's timer).
pub async fn eventually(bound: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + bound;
    while tokio::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(POLL).await;
    }
    cond()
}
