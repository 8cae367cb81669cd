#![allow(clippy::unwrap_used, clippy::expect_used)]
//! 1 GB of output ends with bounded memory. Alone in its own test binary so
//! that no other test's allocations move this process's peak.

mod bash_support;

use std::time::Duration;

use bash_support::*;

/// Peak resident set of this process, in kB.
fn vm_hwm_kb() -> u64 {
    let value = mm_test_support::procs::self_status("VmHWM");
    value.trim_end_matches(" kB").parse().unwrap()
}

#[tokio::test]
async fn a_gigabyte_of_output_ends_with_bounded_memory() {
    let dir = TempDir::new();
    let (b, _) = bash(600);
    let before = vm_hwm_kb();
    let out = tokio::time::timeout(
        Duration::from_secs(600),
        b.execute(
            "head -c 1000000000 /dev/zero | tr '\\0' a; echo; echo end",
            &ctx(dir.path()),
        ),
    )
    .await
    .expect("the 1 GB command hung");
    let grown_mb = (vm_hwm_kb().saturating_sub(before)) / 1024;
    assert!(grown_mb < 50, "peak memory grew by {grown_mb} MB");

    // 1e9 'a', "\n", "end\n": the exact head and tail of
    // docs/design.md#truncation.
    // The omitted count has 9 digits: the marker is 34 characters.
    let total: usize = 1_000_000_000 + 1 + 4;
    let budget = 30_000 - (34 + 1);
    let head = budget / 2;
    let tail = budget - head;
    let marker = format!("[… {} characters omitted …]", total - budget);
    assert_eq!(marker.chars().count(), 34);
    let expected = format!(
        "{}{marker}\n{}\nend\n",
        "a".repeat(head),
        "a".repeat(tail - 5)
    );
    assert_eq!(out.len(), expected.len());
    assert!(out == expected, "head/tail/marker differ");
    assert_eq!(out.chars().count(), 30_000);
}
