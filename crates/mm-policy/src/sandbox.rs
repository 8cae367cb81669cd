//! The operating-system sandbox of `bash` commands (Linux): Landlock limits
//! where a command may write, a seccomp filter refuses it internet and
//! loopback sockets, both applied in the child between `fork` and `exec`
//! with no-new-privileges, so they hold for everything the command starts,
//! detached children included, and cannot be lifted from inside.
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
}

/// Files a command may always write: the null device, which every shell
/// script sends output to.
const WRITABLE_FILES: &[&str] = &["/dev/null"];

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
        }
    }

    /// The sandbox for a session rooted at `cwd`, with the system temp
    /// folder `temp`; probes the kernel once.
    pub fn new(mode: SandboxMode, network: bool, cwd: &Path, temp: &Path) -> Sandbox {
        if mode == SandboxMode::Off {
            return Sandbox::off();
        }
        let mut sandbox = Sandbox::build(mode, network, cwd, temp);
        sandbox.unavailable = probe(network).err();
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
    /// why it cannot be enforced.
    pub fn describe(&self) -> String {
        match &self.unavailable {
            None => format!("sandbox: {}", self.limits()),
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
    /// absolute), following every existing symlink as the kernel would:
    /// `Err` says why not.
    pub fn may_write(&self, cwd: &Path, path: &Path) -> Result<(), String> {
        if !self.is_on() {
            return Ok(());
        }
        let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        let real = crate::shell::resolve(&cwd, path);
        if WRITABLE_FILES.iter().any(|f| real == Path::new(f))
            || self.roots.iter().any(|r| real.starts_with(r))
        {
            return Ok(());
        }
        Err(match self.mode {
            SandboxMode::ReadOnly => format!(
                "{} cannot be written: the sandbox is read-only",
                path.display()
            ),
            _ => format!(
                "{} is outside the folders the sandbox lets mm write ({})",
                path.display(),
                self.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
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

    use super::{MIN_ABI, Sandbox, WRITABLE_FILES};

    /// Made in the parent, used in the child.
    #[derive(Debug)]
    pub(super) struct Prepared {
        ruleset: OwnedFd,
        filter: Option<BpfProgram>,
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
        Ok(Prepared { ruleset, filter })
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

    pub(super) fn prepare(_sandbox: &Sandbox) -> Result<Prepared, String> {
        Err("the sandbox is available on Linux only".to_owned())
    }

    pub(super) fn apply(_p: &Prepared) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}
