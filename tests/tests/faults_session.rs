#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The fault suite, session files: `kill -9` of `mm-repl` while it saves a
//! large session, once at a moment known to be inside a save and then many
//! times at random moments. Each time the file on disk must be the old
//! session or the new one — never torn — and the next run must continue
//! it (the lock died with the process, the stale temp file is cleared).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mm_mock::{MockServer, Options, Reply};
use mm_tests::child::{Finished, Running, built_binary};
use mm_tests::sandbox::Sandbox;
use serde_json::Value;

const BOUND: Duration = Duration::from_secs(90);
/// Characters of the tool output that makes the session large.
const BIG: usize = 4_000_000;

fn repl() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| built_binary("mm-repl")).clone().unwrap()
}

fn wait(running: Running) -> Finished {
    running
        .wait(BOUND)
        .unwrap_or_else(|e| panic!("mm-repl: {e}"))
}

/// A user whose project holds one session of several megabytes (one big
/// command output), built by `mm-repl` itself.
async fn large_session() -> (Sandbox, usize) {
    let sb = Sandbox::new(
        "retries: 1\nwatchdog: 60\nbashTimeout: 60\nmaxOutput: 10000000\ncontextWindow: 100000000\n",
    )
    .unwrap();
    let server = MockServer::start(vec![
        Reply::tool_call(
            "c1",
            "bash",
            format!(r#"{{"command": "yes 0123456789 | head -c {BIG}"}}"#),
        ),
        Reply::text("built"),
    ])
    .await
    .unwrap();
    let mut cmd = sb.command(&repl(), &format!("{}/v1", server.url()));
    cmd.args(["-p", "make it big"]);
    let running = Running::spawn(&mut cmd).unwrap();
    let done = tokio::task::spawn_blocking(move || wait(running))
        .await
        .unwrap();
    assert_eq!(done.code, Some(0), "{}", done.describe());
    let count = messages(&sb);
    assert_eq!(count, 4, "question, call, output, answer");
    let size = std::fs::metadata(&sb.session_files()[0]).unwrap().len();
    assert!(size > BIG as u64, "the session is only {size} bytes");
    (sb, count)
}

/// The number of messages of the one session file, which must parse.
fn messages(sb: &Sandbox) -> usize {
    let all = sb.sessions().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.len(), 1, "exactly one session file");
    let session = &all[0];
    let msgs = session["messages"].as_array().unwrap();
    // The big output is whole in every version of the file.
    assert_eq!(msgs[2]["content"].as_str().map(str::len), Some(BIG));
    msgs.len()
}

/// A server that answers every question with "ok".
async fn answering() -> MockServer {
    MockServer::start_with(
        vec![Reply::text("ok")],
        Options {
            port: 0,
            repeat: true,
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

fn continue_cmd(sb: &Sandbox, server: &MockServer) -> std::process::Command {
    let mut cmd = sb.command(&repl(), &format!("{}/v1", server.url()));
    cmd.args(["--continue", "-p", "next"]);
    cmd
}

/// After a kill the file is the old session or the new one (one more
/// question and answer); returns the count now on disk.
fn assert_old_or_new(sb: &Sandbox, before: usize, when: &str) -> usize {
    let now = messages(sb);
    assert!(
        now == before || now == before + 2,
        "{when}: {now} messages, expected {before} or {}",
        before + 2
    );
    now
}

/// A run that must finish normally and add one question and answer; it
/// also removes the temp files a killed save left.
async fn continue_cleanly(sb: &Sandbox, server: &MockServer, before: usize) {
    let running = Running::spawn(&mut continue_cmd(sb, server)).unwrap();
    let done = tokio::task::spawn_blocking(move || wait(running))
        .await
        .unwrap();
    assert_eq!(done.code, Some(0), "{}", done.describe());
    assert_eq!(messages(sb), before + 2);
    assert!(sb.temp_files().is_empty(), "{:?}", sb.temp_files());
    let all = sb.sessions().unwrap();
    let last = all[0]["messages"].as_array().unwrap().last().cloned();
    assert_eq!(last.unwrap()["content"], Value::from("ok"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_inside_a_save_leaves_the_old_file_or_the_new_one() {
    let (sb, mut count) = large_session().await;
    let server = answering().await;
    let mut caught = false;
    let watch = Inotify::watch(&project_dir(&sb));
    for _attempt in 0..10 {
        watch.drain();
        let running = Running::spawn(&mut continue_cmd(&sb, &server)).unwrap();
        // A temp file beside the session exists only inside a save: kill
        // the moment one is created.
        let seen = tokio::task::block_in_place(|| {
            let seen = watch.await_temp(libc::IN_CREATE, &running, BOUND);
            if seen {
                running.kill9();
            }
            seen
        });
        let done = tokio::task::spawn_blocking(move || wait(running))
            .await
            .unwrap();
        count = assert_old_or_new(&sb, count, "killed inside a save");
        if seen && done.signal == Some(libc::SIGKILL) {
            caught = true;
            break;
        }
        // It finished before the signal landed: try again.
        assert_eq!(done.code, Some(0), "{}", done.describe());
    }
    assert!(caught, "mm-repl never was killed inside a save");
    continue_cleanly(&sb, &server, count).await;
}

/// xorshift64: the moments of the kills, reproducible from the printed seed.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Whether a save of this run is under way: a temp file beside the session
/// that was not there before the run (a killed run leaves its own behind).
fn saving(sb: &Sandbox, stale: &[PathBuf]) -> bool {
    sb.temp_files().iter().any(|t| !stale.contains(t))
}

/// The kernel's word that a save began (a `.tmp` file created in the
/// session folder) or ended (it was renamed over the session): no polling,
/// so the kill lands inside the save even on a busy machine.
struct Inotify {
    fd: libc::c_int,
    /// Events read but not yet looked at: one read may bring a save's
    /// creation and its rename together.
    pending: std::cell::RefCell<std::collections::VecDeque<(u32, Vec<u8>)>>,
}

impl Inotify {
    fn watch(dir: &std::path::Path) -> Inotify {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: plain syscalls on a descriptor we own and a valid C string.
        unsafe {
            let fd = libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK);
            assert!(fd >= 0, "inotify_init1 failed");
            let mask = libc::IN_CREATE | libc::IN_MOVED_FROM;
            let wd = libc::inotify_add_watch(fd, path.as_ptr(), mask);
            assert!(wd >= 0, "inotify_add_watch failed");
            Inotify {
                fd,
                pending: Default::default(),
            }
        }
    }

    /// The events the kernel queued since the last read: `(mask, name)`.
    fn read(&self) -> Vec<(u32, Vec<u8>)> {
        let mut events = Vec::new();
        let mut buf = [0u8; 8192];
        // SAFETY: reading into a buffer we own, of its length.
        let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
        let mut at = 0usize;
        while n > 0 && at + 16 <= n as usize {
            let field = |i: usize| u32::from_ne_bytes(buf[i..i + 4].try_into().unwrap());
            let (mask, len) = (field(at + 4), field(at + 12) as usize);
            let name = &buf[at + 16..(at + 16 + len).min(n as usize)];
            let name = name.split(|b| *b == 0).next().unwrap_or_default();
            events.push((mask, name.to_vec()));
            at += 16 + len;
        }
        events
    }

    /// Forget what earlier runs did.
    fn drain(&self) {
        self.pending.borrow_mut().clear();
        while !self.read().is_empty() {}
    }

    /// Take queued events up to and including the first `.tmp` event of
    /// kind `mask`; true if there was one (the rest stay queued).
    fn take(&self, mask: u32) -> bool {
        let mut pending = self.pending.borrow_mut();
        while let Some((m, name)) = pending.pop_front() {
            if m & mask != 0 && name.ends_with(b".tmp") {
                return true;
            }
        }
        false
    }

    /// Wait for a `.tmp` file event of kind `mask`; false if `running`
    /// ended (or `limit` passed) first.
    fn await_temp(&self, mask: u32, running: &Running, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.take(mask) {
                return true;
            }
            // Sampled first: whatever the run did before it ended is queued
            // by the time the queue is read below.
            let ended = running.has_ended();
            let mut pfd = libc::pollfd {
                fd: self.fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut pfd, 1, 20) } > 0 {
                let fresh = self.read();
                self.pending.borrow_mut().extend(fresh);
                continue;
            }
            if ended || Instant::now() >= deadline {
                return false;
            }
        }
    }
}

impl Drop for Inotify {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe {
            libc::close(self.fd);
        }
    }
}

fn project_dir(sb: &Sandbox) -> PathBuf {
    sb.session_files()[0].parent().unwrap().to_path_buf()
}

/// One whole run, watched: how long it takes and how long its save lasts
/// (from the temp file's creation to its rename over the session).
fn calibrate(
    sb: &Sandbox,
    server: &MockServer,
    watch: &Inotify,
    count: usize,
) -> (Duration, Duration) {
    watch.drain();
    let running = Running::spawn(&mut continue_cmd(sb, server)).unwrap();
    let began = watch.await_temp(libc::IN_CREATE, &running, BOUND);
    let start = Instant::now();
    let ended = began && watch.await_temp(libc::IN_MOVED_FROM, &running, BOUND);
    let save = start.elapsed();
    let done = wait(running);
    assert_eq!(done.code, Some(0), "{}", done.describe());
    assert!(ended, "the save was not seen: {}", done.describe());
    assert_eq!(messages(sb), count + 2);
    (done.wall, save.max(Duration::from_millis(1)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_random_moments_never_tears_the_session() {
    let (sb, mut count) = large_session().await;
    let server = answering().await;
    let watch = Inotify::watch(&project_dir(&sb));
    let (whole, save) = tokio::task::block_in_place(|| calibrate(&sb, &server, &watch, count));
    count += 2;

    let seed = std::env::var("MM_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                | 1
        });
    eprintln!("MM_FAULT_SEED={seed}: a run takes {whole:?}, its save {save:?}");
    let mut state = seed;
    let (mut killed, mut inside_save) = (0, 0);
    for round in 0..20 {
        let r = next(&mut state);
        let stale = sb.temp_files();
        watch.drain();
        let running = Running::spawn(&mut continue_cmd(&sb, &server)).unwrap();
        // Two rounds in three: at a random moment of the save itself; the
        // third: anywhere in the run.
        let at = tokio::task::block_in_place(|| {
            let at = if r.is_multiple_of(3) {
                Duration::from_micros(r / 3 % (whole.as_micros() as u64 + 1))
            } else {
                if !watch.await_temp(libc::IN_CREATE, &running, BOUND) {
                    return None;
                }
                Duration::from_micros(r / 3 % (save.as_micros() as u64 + 1))
            };
            std::thread::sleep(at);
            let saving = saving(&sb, &stale);
            running.kill9();
            Some((at, saving))
        });
        let done = tokio::task::spawn_blocking(move || wait(running))
            .await
            .unwrap();
        let Some((at, saving)) = at else {
            // The run ended before its save was seen: nothing was killed.
            assert_eq!(done.code, Some(0), "round {round}: {}", done.describe());
            count = assert_old_or_new(&sb, count, &format!("round {round}, not killed"));
            continue;
        };
        if done.signal == Some(libc::SIGKILL) {
            killed += 1;
            inside_save += usize::from(saving);
        } else {
            assert_eq!(done.code, Some(0), "round {round}: {}", done.describe());
        }
        let when = format!("round {round} (MM_FAULT_SEED={seed}), killed after {at:?}");
        count = assert_old_or_new(&sb, count, &when);
    }
    eprintln!("{killed} of 20 runs killed, {inside_save} of them inside a save");
    assert!(killed > 0, "no run was killed");
    assert!(inside_save > 0, "no kill landed inside a save");
    continue_cleanly(&sb, &server, count).await;
}
