//! Shared by the files*.rs and skill*.rs tests: a temp dir as the session
//! root and bounded calls through the `Tool` trait.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mm_tools::{PermissionMode, Permissions, Plan, Tool, ToolContext, ToolOutput};
use tokio_util::sync::CancellationToken;

pub const REJECTED: &str = "[edit rejected by the user]";

pub struct Env {
    pub dir: tempfile::TempDir,
    pub ctx: ToolContext,
}

impl Env {
    /// A temp root whose calls may return 30000 characters (`maxOutput`'s
    /// default).
    pub fn new() -> Env {
        Env::with_max(30_000)
    }

    /// A temp root whose calls may return `max_output` characters.
    pub fn with_max(max_output: usize) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext {
            cwd: dir.path().to_path_buf(),
            sink: Arc::new(mm_types::NullSink),
            cancel: CancellationToken::new(),
            permissions: Arc::new(Permissions::new(PermissionMode::Allow)),
            max_output,
            call_id: String::new(),
        };
        Env { dir, ctx }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&p, bytes).unwrap();
        p
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        fs::read(self.path(rel)).unwrap()
    }

    pub fn read_str(&self, rel: &str) -> String {
        String::from_utf8(self.read(rel)).unwrap()
    }

    /// `plan`, bounded.
    pub async fn plan(&self, tool: &dyn Tool, args: serde_json::Value) -> Result<Plan, String> {
        tokio::time::timeout(Duration::from_secs(30), tool.plan(&args, &self.ctx))
            .await
            .expect("plan timed out")
    }

    /// `run` of a plan, bounded: the text.
    pub async fn run(&self, tool: &dyn Tool, args: serde_json::Value, plan: Plan) -> String {
        self.run_output(tool, args, plan).await.text
    }

    /// `run` of a plan, bounded: text and status.
    pub async fn run_output(
        &self,
        tool: &dyn Tool,
        args: serde_json::Value,
        plan: Plan,
    ) -> ToolOutput {
        tokio::time::timeout(Duration::from_secs(30), tool.run(&args, plan, &self.ctx))
            .await
            .expect("run timed out")
    }

    /// plan then run, as the toolbox does with permission granted: the
    /// text the model gets either way.
    pub async fn call(&self, tool: &dyn Tool, args: serde_json::Value) -> String {
        self.outcome(tool, args).await.text
    }

    /// plan then run: text and status (a plan refusal is a failure, as the
    /// toolbox counts it).
    pub async fn outcome(&self, tool: &dyn Tool, args: serde_json::Value) -> ToolOutput {
        match self.plan(tool, args.clone()).await {
            Ok(plan) => self.run_output(tool, args, plan).await,
            Err(text) => ToolOutput::fail(text),
        }
    }

    /// Names in the temp dir (to check no temp file is left behind).
    pub fn names(&self, rel: &str) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.path(rel))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }
}

pub fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// The process umask, read without changing it.
pub fn umask() -> u32 {
    u32::from_str_radix(&mm_test_support::procs::self_status("Umask"), 8).unwrap()
}
