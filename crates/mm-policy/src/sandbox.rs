//! The operating-system sandbox of `bash` commands (Linux): Landlock limits
//! where a command may write, a seccomp filter refuses it internet and
//! loopback sockets, both applied in the child between `fork` and `exec`
//! with no-new-privileges, so they hold for everything the command starts,
//! detached children included, and cannot be lifted from inside.
//!
//! Landlock has no right for a file's metadata (mode, owner, times,
//! extended attributes), so where the kernel lets it a second layer comes
//! first, as bubblewrap builds it: the child enters a mount namespace of
//! its own (with a user namespace unless it holds `CAP_SYS_ADMIN`), the
//! whole tree is made read-only and the writable folders are put back
//! over it as they were; `CAP_SYS_ADMIN` is then dropped so the command
//! cannot undo it. Where that cannot be had, [`Sandbox::mount_layer_missing`]
//! says why and Landlock alone guards the writes.
//!
//! - `workspace-write`: writes only below the working directory, the
//!   system temp folder and to `/dev/null`; reads everywhere.
//! - `read-only`: writes nowhere but `/dev/null`; reads everywhere.
//! - network off: `socket()` for any family but Unix-domain sockets fails
//!   with "Operation not permitted", and so does `io_uring` (which could
//!   open sockets past the filter). mm's own requests are unaffected.
//!
//! When the kernel cannot enforce what was asked (Landlock before ABI 3,
//! no seccomp), [`Sandbox::unavailable`] says why and commands must be
//! refused, never run unconfined. On other systems the setting is refused
//! when the settings are loaded.

use std::io;
use std::path::{Path, PathBuf};

/// `sandbox` of the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    /// No sandbox.
    Off,
    /// Writes nowhere.
    ReadOnly,
    /// Writes below the working directory and the temp folder.
    WorkspaceWrite,
}

/// The sandbox of one session: what it allows, and whether this system can
/// enforce it.
#[derive(Debug, Clone)]
pub struct Sandbox {
    mode: SandboxMode,
    network: bool,
    /// Canonical folders a command may write below (none in read-only).
    roots: Vec<PathBuf>,
    /// Why the kernel cannot enforce it; `None` when it can (or when off).
    unavailable: Option<String>,
    /// Why the read-only mount layer cannot be set up here; `None` when it
    /// can (or when off, or unavailable as a whole).
    no_layer: Option<String>,
}

/// Files a command may always write: the null device, which every shell
/// script sends output to.
const WRITABLE_FILES: &[&str] = &["/dev/null"];

/// Symlinks followed before a path is refused as a loop, as the kernel's
/// own limit.
const MAX_LINKS: usize = 40;

/// The Landlock ABI below which writes cannot be confined fully (ABI 3
/// adds truncation).
#[cfg(target_os = "linux")]
const MIN_ABI: i64 = 3;

impl Sandbox {
    /// No sandbox.
    pub fn off() -> Sandbox {
        Sandbox {
            mode: SandboxMode::Off,
            network: true,
            roots: Vec::new(),
            unavailable: None,
            no_layer: None,
        }
    }

    /// The sandbox for a session rooted at `cwd`, with the system temp
    /// folder `temp`; probes the kernel once (the mount layer in a child
    /// process that exits at once).
    pub fn new(mode: SandboxMode, network: bool, cwd: &Path, temp: &Path) -> Sandbox {
        if mode == SandboxMode::Off {
            return Sandbox::off();
        }
        let mut sandbox = Sandbox::build(mode, network, cwd, temp);
        sandbox.unavailable = probe(network).err();
        if sandbox.unavailable.is_none() {
            sandbox.no_layer = imp::probe_layer(&sandbox).err();
        }
        sandbox
    }

    /// A sandbox this system cannot enforce, as [`Sandbox::new`] makes it
    /// on such a kernel: every [`Sandbox::prepare`] fails with `why`, so no
    /// command runs. For callers that found out for themselves, and for
    /// tests on kernels that can.
    pub fn unenforceable(mode: SandboxMode, network: bool, cwd: &Path, why: &str) -> Sandbox {
        let mut sandbox = Sandbox::build(mode, network, cwd, &std::env::temp_dir());
        sandbox.unavailable = Some(why.to_owned());
        sandbox
    }

    fn build(mode: SandboxMode, network: bool, cwd: &Path, temp: &Path) -> Sandbox {
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let roots = match mode {
            SandboxMode::WorkspaceWrite => {
                let mut roots = vec![canonical(cwd)];
                let temp = canonical(temp);
                if !roots.contains(&temp) {
                    roots.push(temp);
                }
                roots
            }
            SandboxMode::ReadOnly | SandboxMode::Off => Vec::new(),
        };
        Sandbox {
            mode,
            network,
            roots,
            unavailable: None,
            no_layer: None,
        }
    }

    /// The mode.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Whether commands are confined at all.
    pub fn is_on(&self) -> bool {
        self.mode != SandboxMode::Off
    }

    /// Whether commands may open network sockets.
    pub fn network(&self) -> bool {
        self.network
    }

    /// The folders commands may write below.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Why this system cannot enforce the sandbox that was asked for;
    /// commands must then be refused.
    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// Why outside the writable folders a command can still change a
    /// file's mode, owner, times and extended attributes: the read-only
    /// mount layer could not be set up here (no user namespaces, …).
    /// `None` when it is in place, or when nothing is confined.
    pub fn mount_layer_missing(&self) -> Option<&str> {
        self.no_layer.as_deref()
    }

    /// The line to show when a session starts, if there is anything to
    /// warn about: the sandbox cannot be enforced, or only by Landlock.
    pub fn warning(&self) -> Option<String> {
        (self.unavailable.is_some() || self.no_layer.is_some()).then(|| self.describe())
    }

    /// What the sandbox allows, in words:
    /// `workspace-write: writes only in /p, /tmp; no network`.
    pub fn limits(&self) -> String {
        let writes = match self.mode {
            SandboxMode::Off => return "off".to_owned(),
            SandboxMode::ReadOnly => "read-only: writes nowhere".to_owned(),
            SandboxMode::WorkspaceWrite => {
                let roots: Vec<String> =
                    self.roots.iter().map(|r| r.display().to_string()).collect();
                format!("workspace-write: writes only in {}", roots.join(", "))
            }
        };
        let net = if self.network {
            "network allowed"
        } else {
            "no network"
        };
        format!("{writes}; {net}")
    }

    /// One line for the start of a session:
    /// `sandbox: workspace-write: writes only in /p, /tmp; no network`, or
    /// why it cannot be enforced, or what it leaves open without the mount
    /// layer.
    pub fn describe(&self) -> String {
        match &self.unavailable {
            None => match &self.no_layer {
                None => format!("sandbox: {}", self.limits()),
                Some(why) => format!(
                    "sandbox: {} (Landlock only: {why}; outside those folders a command can still change a file's mode, owner, times and extended attributes)",
                    self.limits()
                ),
            },
            Some(why) => format!(
                "sandbox: {} cannot be enforced here ({why}); bash commands will be refused",
                self.mode_name()
            ),
        }
    }

    fn mode_name(&self) -> &'static str {
        match self.mode {
            SandboxMode::Off => "off",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }

    /// Whether a file tool may write `path` (relative to `cwd`, or
    /// absolute), once every symlink on it is followed as the kernel
    /// would, a dangling last one included ([`real_path`]): `Err` says why
    /// not, naming `path` as given.
    pub fn may_write(&self, cwd: &Path, path: &Path) -> Result<(), String> {
        self.may_write_as(cwd, path, &path.display().to_string())
    }

    /// [`Sandbox::may_write`], naming the path `shown` in the refusal.
    pub fn may_write_as(&self, cwd: &Path, path: &Path, shown: &str) -> Result<(), String> {
        if !self.is_on() {
            return Ok(());
        }
        let real = real_path(cwd, path).map_err(|e| format!("{shown} cannot be written: {e}"))?;
        if WRITABLE_FILES.iter().any(|f| real == Path::new(f))
            || self.roots.iter().any(|r| real.starts_with(r))
        {
            return Ok(());
        }
        if self.mode == SandboxMode::ReadOnly {
            return Err(format!(
                "{shown} cannot be written: the sandbox is read-only"
            ));
        }
        let roots = self
            .roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let lexical = real_path_lexical(cwd, path);
        Err(if lexical == real {
            format!("{shown} is outside the folders the sandbox lets mm write ({roots})")
        } else {
            format!(
                "{shown} leads through a symlink to {}, outside the folders the sandbox lets mm write ({roots})",
                real.display()
            )
        })
    }

    /// Prepares the confinement of one command, in the parent (this
    /// allocates and opens files; the child may not). `Ok(None)` when the
    /// sandbox is off.
    pub fn prepare(&self) -> Result<Option<Confinement>, String> {
        if !self.is_on() {
            return Ok(None);
        }
        if let Some(why) = &self.unavailable {
            return Err(why.clone());
        }
        imp::prepare(self).map(|inner| Some(Confinement { inner }))
    }
}

/// What the child applies to itself before `exec`: a Landlock ruleset and,
/// without network, a seccomp filter. Made by [`Sandbox::prepare`].
#[derive(Debug)]
pub struct Confinement {
    inner: imp::Prepared,
}

impl Confinement {
    /// Applies the confinement to the calling process. Meant for
    /// `Command::pre_exec`: only async-signal-safe calls (prctl, the
    /// Landlock and seccomp system calls), no allocation.
    pub fn apply(&self) -> io::Result<()> {
        imp::apply(&self.inner)
    }
}

/// Whether this kernel can enforce a sandbox (with or without network).
fn probe(network: bool) -> Result<(), String> {
    imp::probe(network)
}

/// `path` (relative to `cwd`, or absolute) with every symlink on it
/// followed, as the kernel follows them when the file is opened or
/// created: a dangling link leads to where its target would be, and what
/// does not exist yet is kept as written. `..` applies to the folder
/// reached so far, as in the kernel. Fails on a loop.
pub fn real_path(cwd: &Path, path: &Path) -> io::Result<PathBuf> {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    use std::path::Component;

    /// One step still to walk.
    enum Step {
        Root,
        Up,
        Name(OsString),
    }
    fn steps(p: &Path) -> impl Iterator<Item = Step> + '_ {
        p.components().filter_map(|c| match c {
            Component::Prefix(_) | Component::RootDir => Some(Step::Root),
            Component::CurDir => None,
            Component::ParentDir => Some(Step::Up),
            Component::Normal(name) => Some(Step::Name(name.to_owned())),
        })
    }

    let abs = cwd.join(path);
    let mut todo: VecDeque<Step> = steps(&abs).collect();
    let mut current = PathBuf::from("/");
    let mut links = 0;
    while let Some(step) = todo.pop_front() {
        match step {
            Step::Root => current = PathBuf::from("/"),
            Step::Up => {
                current.pop();
            }
            Step::Name(name) => {
                let next = current.join(&name);
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        links += 1;
                        if links > MAX_LINKS {
                            return Err(io::Error::from_raw_os_error(libc::ELOOP));
                        }
                        let target = std::fs::read_link(&next)?;
                        for step in steps(&target).collect::<Vec<_>>().into_iter().rev() {
                            todo.push_front(step);
                        }
                    }
                    // Not there (or not searchable): kept as written.
                    Ok(_) | Err(_) => current = next,
                }
            }
        }
    }
    Ok(current)
}

/// `path` made absolute against the canonical `cwd` with `.` and `..`
/// applied as text: what [`real_path`] gives when no link is on the way.
fn real_path_lexical(cwd: &Path, path: &Path) -> PathBuf {
    let cwd = real_path(Path::new("/"), cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let mut out = PathBuf::from("/");
    for part in cwd.join(path).components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::BTreeMap;
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};

    use landlock::{
        ABI, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
        path_beneath_rules,
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::{MIN_ABI, Sandbox, WRITABLE_FILES, layer};

    /// Made in the parent, used in the child.
    #[derive(Debug)]
    pub(super) struct Prepared {
        layer: Option<layer::Layer>,
        ruleset: OwnedFd,
        filter: Option<BpfProgram>,
    }

    /// Whether the read-only mount layer can be set up for `sandbox`: a
    /// child tries it and exits before `exec`.
    pub(super) fn probe_layer(sandbox: &Sandbox) -> Result<(), String> {
        let layer = layer::Layer::new(&sandbox.roots)?;
        layer.probe()
    }

    /// The Landlock ABI of the running kernel; 0 when it has none.
    fn landlock_abi() -> i64 {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: with a null attribute and size 0 this only asks for the
        // version; it touches no memory of ours.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        v.max(0)
    }

    pub(super) fn probe(network: bool) -> Result<(), String> {
        let abi = landlock_abi();
        if abi == 0 {
            return Err("this kernel has no Landlock".to_owned());
        }
        if abi < MIN_ABI {
            return Err(format!(
                "this kernel's Landlock is ABI {abi}; ABI {MIN_ABI} (Linux 6.2) is needed"
            ));
        }
        if !network {
            // SAFETY: PR_GET_SECCOMP reads our own mode; no memory involved.
            let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
            if mode < 0 {
                return Err("this kernel has no seccomp".to_owned());
            }
            filter()?;
        }
        Ok(())
    }

    fn write_access() -> landlock::BitFlags<AccessFs> {
        // Device ioctls (ABI 5) are refused too where the kernel can: a
        // terminal opened for reading could otherwise be written through.
        let abi = if landlock_abi() >= 5 {
            ABI::V5
        } else {
            ABI::V3
        };
        AccessFs::from_write(abi)
    }

    pub(super) fn prepare(sandbox: &Sandbox) -> Result<Prepared, String> {
        let access = write_access();
        let fail = |e: landlock::RulesetError| format!("cannot set up Landlock: {e}");
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(access)
            .map_err(fail)?
            .create()
            .map_err(fail)?
            .add_rules(path_beneath_rules(&sandbox.roots, access))
            .map_err(fail)?
            .add_rules(path_beneath_rules(WRITABLE_FILES, access))
            .map_err(fail)?;
        let ruleset: Option<OwnedFd> = ruleset.into();
        let ruleset = ruleset.ok_or("Landlock gave no ruleset")?;
        let filter = if sandbox.network {
            None
        } else {
            Some(filter()?)
        };
        let layer = match sandbox.no_layer {
            None => Some(layer::Layer::new(&sandbox.roots)?),
            Some(_) => None,
        };
        Ok(Prepared {
            layer,
            ruleset,
            filter,
        })
    }

    /// The seccomp program: `socket()` of any family but `AF_UNIX`, and
    /// the `io_uring` calls, fail with EPERM; everything else runs.
    fn filter() -> Result<BpfProgram, String> {
        let fail = |e: seccompiler::BackendError| format!("cannot build the seccomp filter: {e}");
        let arch = TargetArch::try_from(std::env::consts::ARCH)
            .map_err(|_| format!("no seccomp filter for {}", std::env::consts::ARCH))?;
        let not_unix = SeccompRule::new(vec![
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_UNIX as u64,
            )
            .map_err(fail)?,
        ])
        .map_err(fail)?;
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        rules.insert(libc::SYS_socket, vec![not_unix.clone()]);
        for call in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            rules.insert(call, Vec::new());
        }
        #[cfg(target_arch = "x86_64")]
        {
            // The x32 entry points share the x86_64 audit arch.
            const X32: i64 = 0x4000_0000;
            rules.insert(X32 | libc::SYS_socket, vec![not_unix]);
            rules.insert(X32 | libc::SYS_io_uring_setup, Vec::new());
        }
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .map_err(fail)?;
        BpfProgram::try_from(filter).map_err(fail)
    }

    pub(super) fn apply(p: &Prepared) -> io::Result<()> {
        // The mounts first: Landlock forbids them once applied.
        if let Some(layer) = &p.layer {
            layer.apply()?;
        }
        // SAFETY: prctl and the Landlock call take plain integers; the fd
        // is ours and open for as long as `p` lives.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            let fd = p.ruleset.as_raw_fd();
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(filter) = &p.filter {
            seccompiler::apply_filter(filter).map_err(|e| match e {
                seccompiler::Error::Seccomp(e) | seccompiler::Error::Prctl(e) => e,
                _ => io::Error::from_raw_os_error(libc::EINVAL),
            })?;
        }
        Ok(())
    }
}

/// The read-only mount layer (Linux), set up in the child between `fork`
/// and `exec`.
#[cfg(target_os = "linux")]
mod layer {
    use std::ffi::{CStr, CString};
    use std::io;
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::process::CommandExt as _;
    use std::path::PathBuf;

    use rustix::fd::OwnedFd;
    use rustix::fs::{CWD, Mode, OFlags};
    use rustix::mount::{MountPropagationFlags, MoveMountFlags, OpenTreeFlags};
    use rustix::thread::{CapabilitySet, UnshareFlags};

    /// Writable folders a layer puts back; a session has two (the working
    /// directory and the temp folder). A fixed bound keeps the child free
    /// of allocation.
    const MAX_ROOTS: usize = 8;

    /// `struct mount_attr` of `mount_setattr(2)`, which rustix lacks.
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const MOUNT_ATTR_RDONLY: u64 = 0x1;

    /// What the child needs, made in the parent: the writable folders that
    /// are not below another one, as C strings.
    #[derive(Debug)]
    pub(super) struct Layer {
        roots: Vec<CString>,
    }

    impl Layer {
        pub(super) fn new(roots: &[PathBuf]) -> Result<Layer, String> {
            let mut outer: Vec<&PathBuf> = Vec::new();
            let mut sorted: Vec<&PathBuf> = roots.iter().filter(|r| r.is_dir()).collect();
            sorted.sort_by_key(|r| r.as_os_str().len());
            for root in sorted {
                if !outer.iter().any(|o| root.starts_with(o)) {
                    outer.push(root);
                }
            }
            if outer.len() > MAX_ROOTS {
                return Err(format!("more than {MAX_ROOTS} writable folders"));
            }
            let roots = outer
                .into_iter()
                .map(|r| {
                    CString::new(r.as_os_str().as_bytes())
                        .map_err(|_| format!("{} holds a NUL byte", r.display()))
                })
                .collect::<Result<_, _>>()?;
            Ok(Layer { roots })
        }

        /// Sets the layer up in a child that exits before `exec`; the
        /// child sends back which step failed and why through a pipe.
        pub(super) fn probe(&self) -> Result<(), String> {
            use std::io::Read as _;
            use std::os::fd::AsRawFd as _;

            let cant = |e: io::Error| format!("cannot try the read-only mount layer: {e}");
            let (mut reader, writer) = io::pipe().map_err(cant)?;
            let fd = writer.as_raw_fd();
            let layer = Layer {
                roots: self.roots.clone(),
            };
            let mut cmd = std::process::Command::new("/");
            cmd.stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            // SAFETY: the closure makes only system calls on memory made
            // before the fork (see `steps`), writes to a pipe made before
            // it, then `_exit`s: it never returns to run `exec`.
            unsafe {
                cmd.pre_exec(move || {
                    if let Err((step, e)) = layer.steps() {
                        let errno = e.raw_os_error().unwrap_or(0).to_le_bytes();
                        let msg = [step as u8, errno[0], errno[1], errno[2], errno[3]];
                        libc::write(fd, msg.as_ptr().cast(), msg.len());
                        libc::_exit(1);
                    }
                    libc::_exit(0);
                });
            }
            let status = cmd.status().map_err(cant)?;
            drop(cmd);
            drop(writer);
            let mut msg = Vec::new();
            reader.read_to_end(&mut msg).map_err(cant)?;
            match (status.success(), msg.as_slice()) {
                (true, _) => Ok(()),
                (false, [step, a, b, c, d]) => {
                    let err = io::Error::from_raw_os_error(i32::from_le_bytes([*a, *b, *c, *d]));
                    Err(Step::from_u8(*step).failure(&err))
                }
                (false, _) => Err(format!(
                    "the read-only mount layer failed to start: {status}"
                )),
            }
        }

        /// In the child: a mount namespace of its own in which everything
        /// but the writable folders is read-only, then no `CAP_SYS_ADMIN`.
        /// Only system calls on memory made before the fork: no
        /// allocation.
        pub(super) fn apply(&self) -> io::Result<()> {
            self.steps().map_err(|(_, e)| e)
        }

        /// [`Layer::apply`], saying which step failed.
        fn steps(&self) -> Result<(), (Step, io::Error)> {
            if self.roots.iter().any(|r| r.as_bytes() == b"/") {
                // Everything is writable: nothing to make read-only.
                return Ok(());
            }
            enter_namespaces()?;
            // Nothing done here may reach the parent namespace, and nothing
            // mounted there later comes in writable.
            rustix::mount::mount_change(
                c"/",
                MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
            )
            .map_err(Step::Mounts.of())?;
            // Copies of the writable trees as they are, taken before the
            // rest turns read-only, to put back over it.
            let mut trees: [Option<OwnedFd>; MAX_ROOTS] = [const { None }; MAX_ROOTS];
            for (slot, root) in trees.iter_mut().zip(&self.roots) {
                *slot = Some(
                    rustix::mount::open_tree(
                        CWD,
                        root.as_c_str(),
                        OpenTreeFlags::OPEN_TREE_CLONE
                            | OpenTreeFlags::OPEN_TREE_CLOEXEC
                            | OpenTreeFlags::AT_RECURSIVE,
                    )
                    .map_err(Step::Mounts.of())?,
                );
            }
            read_only_everywhere().map_err(|e| (Step::Mounts, e))?;
            for (tree, root) in trees.iter_mut().zip(&self.roots) {
                if let Some(fd) = tree.take() {
                    rustix::mount::move_mount(
                        &fd,
                        c"",
                        CWD,
                        root.as_c_str(),
                        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
                    )
                    .map_err(Step::Mounts.of())?;
                }
            }
            reenter_cwd().map_err(|e| (Step::Cwd, e))?;
            drop_sys_admin().map_err(|e| (Step::Caps, e))
        }
    }

    /// The steps of the layer, to say which one this system refused.
    #[derive(Debug, Clone, Copy)]
    #[repr(u8)]
    enum Step {
        UserNamespace,
        IdMaps,
        Mounts,
        Cwd,
        Caps,
    }

    impl Step {
        fn from_u8(v: u8) -> Step {
            match v {
                0 => Step::UserNamespace,
                1 => Step::IdMaps,
                2 => Step::Mounts,
                3 => Step::Cwd,
                _ => Step::Caps,
            }
        }

        /// Tags a rustix error with this step.
        fn of(self) -> impl Fn(rustix::io::Errno) -> (Step, io::Error) {
            move |e| (self, e.into())
        }

        /// The words for the start-up line.
        fn failure(self, err: &io::Error) -> String {
            match self {
                Step::UserNamespace => {
                    format!("user namespaces are not available to this user ({err})")
                }
                Step::IdMaps => format!("a new user namespace refused its id maps ({err})"),
                Step::Mounts => format!("the mounts could not be made read-only ({err})"),
                Step::Cwd => format!("the working directory could not be entered again ({err})"),
                Step::Caps => format!("CAP_SYS_ADMIN could not be dropped ({err})"),
            }
        }
    }

    /// A new mount namespace: directly with `CAP_SYS_ADMIN` (root keeps
    /// its ids and its power over every file), else inside a new user
    /// namespace that maps the caller's own ids to themselves.
    fn enter_namespaces() -> Result<(), (Step, io::Error)> {
        let caps = rustix::thread::capabilities(None).map_err(Step::UserNamespace.of())?;
        if caps
            .effective
            .contains(CapabilitySet::SYS_ADMIN | CapabilitySet::SETPCAP)
        {
            // SAFETY: no file descriptor table is unshared.
            if unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNS) }.is_ok() {
                return Ok(());
            }
        }
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        // A process that changed its ids since it started is not dumpable
        // and its /proc/self files then belong to root: the maps below
        // could not be written. `exec` sets this again anyway.
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::Dumpable)
            .map_err(Step::IdMaps.of())?;
        // SAFETY: as above.
        unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS) }
            .map_err(Step::UserNamespace.of())?;
        let mut line = [0u8; 32];
        write_file(c"/proc/self/setgroups", b"deny")
            .and_then(|()| write_file(c"/proc/self/uid_map", id_map(uid, &mut line)))
            .and_then(|()| write_file(c"/proc/self/gid_map", id_map(gid, &mut line)))
            .map_err(|e| (Step::IdMaps, e))
    }

    fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
        let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
        let n = rustix::io::write(&fd, bytes)?;
        if n != bytes.len() {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        Ok(())
    }

    /// `"<id> <id> 1\n"` in `buf`, without allocating.
    fn id_map(id: u32, buf: &mut [u8; 32]) -> &[u8] {
        let mut digits = [0u8; 10];
        let mut n = 0;
        let mut v = id;
        loop {
            digits[n] = b'0' + (v % 10) as u8;
            n += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        let mut len = 0;
        for _ in 0..2 {
            for d in digits[..n].iter().rev() {
                buf[len] = *d;
                len += 1;
            }
            buf[len] = b' ';
            len += 1;
        }
        buf[len] = b'1';
        buf[len + 1] = b'\n';
        &buf[..len + 2]
    }

    /// Every mount of this namespace read-only, submounts included.
    fn read_only_everywhere() -> io::Result<()> {
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        // SAFETY: `attr` and the path outlive the call, which only reads
        // them.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                c"/".as_ptr(),
                libc::AT_RECURSIVE,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The working directory was entered before the writable copy was put
    /// over it: enter it again by its name, so that it is the copy.
    fn reenter_cwd() -> io::Result<()> {
        let mut buf = [0u8; libc::PATH_MAX as usize];
        // SAFETY: the buffer is ours and its length is given; glibc does
        // not allocate when handed a buffer.
        let p = unsafe { libc::getcwd(buf.as_mut_ptr().cast(), buf.len()) };
        if p.is_null() {
            return Err(io::Error::last_os_error());
        }
        let cwd = CStr::from_bytes_until_nul(&buf)
            .map_err(|_| io::Error::from_raw_os_error(libc::ENAMETOOLONG))?;
        rustix::process::chdir(cwd)?;
        Ok(())
    }

    /// Without `CAP_SYS_ADMIN` the command cannot make the mounts writable
    /// again (`mount_setattr`), and any namespace it makes itself holds
    /// them locked read-only.
    fn drop_sys_admin() -> io::Result<()> {
        rustix::thread::remove_capability_from_bounding_set(CapabilitySet::SYS_ADMIN)?;
        rustix::thread::clear_ambient_capability_set()?;
        let mut caps = rustix::thread::capabilities(None)?;
        caps.effective.remove(CapabilitySet::SYS_ADMIN);
        caps.permitted.remove(CapabilitySet::SYS_ADMIN);
        caps.inheritable.remove(CapabilitySet::SYS_ADMIN);
        rustix::thread::set_capabilities(None, caps)?;
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn id_maps_are_written_without_allocation() {
            let mut buf = [0u8; 32];
            assert_eq!(id_map(0, &mut buf), b"0 0 1\n");
            assert_eq!(id_map(1000, &mut buf), b"1000 1000 1\n");
            assert_eq!(id_map(u32::MAX, &mut buf), b"4294967295 4294967295 1\n");
        }

        #[test]
        fn nested_folders_are_put_back_once() {
            let dir = tempfile::tempdir().unwrap();
            let outer = dir.path().to_path_buf();
            let inner = outer.join("inner");
            std::fs::create_dir(&inner).unwrap();
            let layer = Layer::new(&[outer.join("missing"), inner, outer.clone()]).unwrap();
            let want = CString::new(outer.as_os_str().as_bytes()).unwrap();
            assert_eq!(layer.roots, [want]);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;

    use super::Sandbox;

    /// Nothing: other systems have no sandbox here.
    #[derive(Debug)]
    pub(super) struct Prepared;

    pub(super) fn probe(_network: bool) -> Result<(), String> {
        Err("the sandbox is available on Linux only".to_owned())
    }

    pub(super) fn probe_layer(_sandbox: &Sandbox) -> Result<(), String> {
        Err("the sandbox is available on Linux only".to_owned())
    }

    pub(super) fn prepare(_sandbox: &Sandbox) -> Result<Prepared, String> {
        Err("the sandbox is available on Linux only".to_owned())
    }

    pub(super) fn apply(_p: &Prepared) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}
