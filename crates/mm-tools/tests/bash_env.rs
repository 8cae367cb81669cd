#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The command's environment (docs/design.md#keys-stay-out-of-tools): the
//! agent's minus provider keys, plus `MM=1`; key values redacted from the
//! output. Alone in its own binary because it sets this process's
//! environment before any thread runs a command.

mod bash_support;

use std::time::Duration;

use bash_support::*;
use mm_tools::bash::{Bash, BashSettings, ProcessRegistry};

#[test]
fn environment_minus_keys_plus_mm() {
    // SAFETY: the only test of this binary, run before the runtime starts:
    // no other thread reads the environment meanwhile.
    unsafe {
        std::env::set_var("OPENAI_API_KEY", "sk-openai-0123456789");
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-0123456789");
        std::env::set_var("GEMINI_API_KEY", "gm-0123456789");
        std::env::set_var("GOOGLE_API_KEY", "gg-0123456789");
        std::env::set_var("MY_PROVIDER_KEY", "my-secret-0123456789");
        std::env::set_var("MM_TEST_KEPT", "kept");
        std::env::set_var("MM", "0");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = TempDir::new();
        let b = Bash::with_registry(
            BashSettings {
                timeout: Duration::from_secs(10),
                // The agent gives the provider registry's variables and
                // the configured apiKeyEnv (mm-repl's contract test checks
                // that end to end).
                secrets_env: [
                    "OPENAI_API_KEY",
                    "ANTHROPIC_API_KEY",
                    "GEMINI_API_KEY",
                    "GOOGLE_API_KEY",
                    "MY_PROVIDER_KEY",
                ]
                .map(String::from)
                .to_vec(),
                secrets: vec!["my-secret-0123456789".to_string(), "sk-openai-0123456789".to_string()],
            },
            ProcessRegistry::new(),
        );
        let c = ctx(dir.path());
        let out = b
            .execute(
                "for v in OPENAI_API_KEY ANTHROPIC_API_KEY GEMINI_API_KEY GOOGLE_API_KEY MY_PROVIDER_KEY MM MM_TEST_KEPT; do \
                 echo \"$v=${!v-unset}\"; done; test -n \"$PATH\" && echo path-ok",
                &c,
            )
            .await;
        assert_eq!(
            out,
            "OPENAI_API_KEY=unset\nANTHROPIC_API_KEY=unset\nGEMINI_API_KEY=unset\nGOOGLE_API_KEY=unset\n\
             MY_PROVIDER_KEY=unset\nMM=1\nMM_TEST_KEPT=kept\npath-ok\n"
        );
        // A key value that reaches the output anyway (here: typed in the
        // command) is redacted, even split across reads.
        let out = b
            .execute("echo my-secret-0123456789; printf sk-openai-; sleep 0.2; echo 0123456789 >&2", &c)
            .await;
        assert_eq!(out, "[redacted]\n[redacted]\n");
        // Redaction happens before truncation: the omitted count is of the
        // redacted text.
        let small = Bash::with_registry(
            BashSettings {
                timeout: Duration::from_secs(10),
                secrets_env: Vec::new(),
                secrets: vec!["my-secret-0123456789".to_string()],
            },
            ProcessRegistry::new(),
        );
        let out = small
            .execute(
                "for i in $(seq 1 100); do printf 'my-secret-0123456789'; done",
                &ctx_max(dir.path(), 200),
            )
            .await;
        let redacted = "[redacted]".repeat(100);
        assert_eq!(out, expected_truncation(&redacted, "", 200));
    });
}
