#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A writer killed with SIGKILL at random moments, thirty times: after each
//! kill the session file is the old version or a newer complete one, never
//! torn, and temp files do not pile up.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mm_store::{SessionData, Store};
use mm_types::Message;

const CHILD: &str = "MM_STORE_KILL_CHILD";
const KILLS: usize = 30;
const FILLER: usize = 8 * 1024;

/// Generation `g` of the history: its size changes with `g`, and every
/// message says which generation it belongs to, so a mix or a cut shows.
fn generation(g: u64) -> Vec<Message> {
    let n = 150 + (g % 50) as usize;
    (0..n)
        .map(|i| {
            let head = format!("gen {g} msg {i} ");
            let fill = char::from(b'a' + (i % 26) as u8).to_string().repeat(FILLER);
            if i % 2 == 0 {
                Message::user(head + &fill)
            } else {
                Message::assistant(head + &fill)
            }
        })
        .collect()
}

/// The generation of a complete, consistent file; panics on any tear.
fn check(data: &SessionData) -> u64 {
    let g: u64 = data.title.strip_prefix("gen ").unwrap().parse().unwrap();
    assert_eq!(data.messages, generation(g), "generation {g} is not whole");
    assert_eq!(
        data.compactions.len() as u64,
        g,
        "compactions of generation {g}"
    );
    g
}

/// Runs only inside the child: save forever until killed.
#[test]
#[ignore = "child process of kill_during_save_never_tears_the_file"]
fn child_writer() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let mut parts = spec.split('\n');
    let (root, cwd, id) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let store = Store::new(PathBuf::from(root));
    let mut s = store.open(Path::new(cwd), id).unwrap();
    let mut g = check(&s.data);
    loop {
        g += 1;
        s.data.title = format!("gen {g}");
        s.data.messages = generation(g);
        s.record_compaction(g as usize, format!("summary {g}"));
        s.save().unwrap();
    }
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// xorshift: random enough moments without a dependency.
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Which version of the file is there: changes with every completed save.
fn version_of(p: &Path) -> Option<(u64, i64, i64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).ok()?;
    Some((m.ino(), m.mtime(), m.mtime_nsec(), m.len()))
}

fn temps(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")
        })
        .count()
}

#[test]
fn kill_during_save_never_tears_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("proj");
    std::fs::create_dir(&cwd).unwrap();
    let cwd = cwd.canonicalize().unwrap();
    let root = tmp.path().join("sessions");
    let store = Store::new(root.clone());

    let mut s = store.create(&cwd, "m").unwrap();
    s.data.title = "gen 0".into();
    s.data.messages = generation(0);
    s.save().unwrap();
    let id = s.id().to_string();
    let path = s.path().to_path_buf();
    let dir = path.parent().unwrap().to_path_buf();
    drop(s);

    let spec = format!("{}\n{}\n{id}", root.display(), cwd.display());
    let stderr_path = tmp.path().join("child.stderr");
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64
        ^ u64::from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos(),
        );
    let mut last_gen = 0;
    let mut mid_save = 0;

    for round in 0..KILLS {
        let before = version_of(&path);
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "child_writer",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, &spec)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr_path).unwrap())
            .spawn()
            .unwrap();
        let mut child = KillOnDrop(child);

        // Wait until the child has finished at least one save of its own.
        let deadline = Instant::now() + Duration::from_secs(30);
        while version_of(&path) == before {
            if let Some(status) = child.0.try_wait().unwrap() {
                panic!(
                    "writer died by itself ({status}): {}",
                    std::fs::read_to_string(&stderr_path).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < deadline,
                "writer made no progress in round {round}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        if round == 0 {
            // While the writer lives, the session is its own.
            let err = store.open(&cwd, &id).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("session {id} is in use by another mm process")
            );
        }
        if round % 2 == 0 {
            // Any moment of the save cycle (encoding dominates it).
            std::thread::sleep(Duration::from_micros(next(&mut seed) % 80_000));
        } else {
            // Inside the write itself: once the temp file exists, within the
            // next two milliseconds (write, fsync, rename, folder fsync).
            while temps(&dir) == 0 {
                assert!(
                    Instant::now() < deadline,
                    "writer wrote no temp file in round {round}"
                );
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_micros(next(&mut seed) % 2_000));
        }
        child.0.kill().unwrap();
        child.0.wait().unwrap();
        drop(child);

        if temps(&dir) > 0 {
            mid_save += 1;
        }
        let reopened = store.open(&cwd, &id).unwrap();
        let g = check(&reopened.data);
        assert!(
            g > last_gen,
            "round {round}: generation {g} after {last_gen}"
        );
        last_gen = g;
        assert_eq!(temps(&dir), 0, "open left temp files behind");
        drop(reopened);
    }
    eprintln!("{KILLS} kills, {mid_save} during a write, last generation {last_gen}");
    assert!(
        mid_save > 0,
        "no kill landed during a write: the test proved nothing"
    );
}
