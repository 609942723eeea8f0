//! Setting a real socket's cwnd clamp: the sock_ops BPF program `bpf/trickle_clamp/` and its
//! map, or, where BPF cannot load, an approximation by `SO_MAX_PACING_RATE`.
//!
//! Linux has no user-space socket option for `snd_cwnd_clamp` (`TCP_WINDOW_CLAMP` clamps the
//! *receive* window); only a BPF program may call `bpf_setsockopt(TCP_BPF_SNDCWND_CLAMP)`. So the
//! origin, at start ([`ClampProgram::load`]):
//! 1. compiles the embedded C source with clang (`-O2 -target bpf`), or takes a prebuilt object
//!    from `$TCPVIDEO_ORIGIN_BPF_OBJECT`;
//! 2. mounts bpffs if it is not (it is not at boot on this machine; `ip netns exec` also gives a
//!    fresh /sys without it) and a cgroup2 hierarchy if none is visible;
//! 3. loads the program with `bpftool prog load ... type sockops pinmaps ...`, creates the cgroup
//!    `origin-tcpvideo-<pid>`, attaches the program there and moves this process into it — before
//!    the listener is bound, because an accepted socket inherits its listener's cgroup;
//! 4. opens the pinned map with `bpf(BPF_OBJ_GET)`; each connection's wanted clamp is then one
//!    `bpf(BPF_MAP_UPDATE_ELEM)` keyed by its `SO_COOKIE` ([`ClampProgram::set`]).
//!
//! Why bpftool and raw `bpf(2)` rather than libbpf-rs or aya: loading happens once per run and
//! bpftool (with libbpf) is what this machine's recipe already uses; libbpf-rs would make every
//! build of the workspace compile libbpf-sys (C toolchain, pkg-config, zlib, libelf headers) for a
//! feature only root deployments use, and aya would add a second BPF toolchain. The per-update
//! path is two syscall arguments, written out below.
//!
//! Dropping the [`ClampProgram`] moves the process back to its cgroup, detaches the program and
//! removes the cgroup and the pins: nothing is left behind.
//!
//! Fallback ([`ClampControl::PacingFallback`]): a clamp of W packets over srtt lets at most
//! W·MSS bytes out per RTT, so the socket's pacing rate is capped at W·MSS/srtt instead. Not the
//! same wire pattern (pacing spreads packets evenly where a clamp sends ACK-clocked bursts of up
//! to W), which is why it is logged as a warning at start.

use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tcpvideo_model::units::Bandwidth;
use thiserror::Error;

use crate::socket_control::SocketHandle;

/// The program's C source, compiled at start.
pub const PROGRAM_SOURCE: &str = include_str!("../../../bpf/trickle_clamp/trickle_clamp.bpf.c");

/// The "no clamp" value the program applies (Linux TCP_INFINITE_SSTHRESH).
pub const NO_CLAMP: u32 = 0x7fff_ffff;

/// Why the BPF clamp is not available.
#[derive(Debug, Error)]
#[error("BPF cwnd clamp unavailable: {0}")]
pub struct ClampUnavailable(pub String);

fn unavailable(what: impl Into<String>) -> ClampUnavailable {
    ClampUnavailable(what.into())
}

/// The loaded program, its cgroup and its map.
pub struct ClampProgram {
    map: OwnedFd,
    prog_pin: PathBuf,
    maps_pin: PathBuf,
    cgroup: PathBuf,
    /// cgroup.procs of the cgroup this process came from (restored on drop).
    home_procs: PathBuf,
    scratch: PathBuf,
}

impl ClampProgram {
    /// Load, attach and join the cgroup (see the module comment). Needs root.
    pub fn load() -> Result<ClampProgram, ClampUnavailable> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(unavailable("needs root (CAP_BPF, CAP_NET_ADMIN, cgroup writes)"));
        }
        let pid = std::process::id();
        let scratch = std::env::temp_dir().join(format!("origin-tcpvideo-{pid}"));
        fs::create_dir_all(&scratch).map_err(|e| unavailable(format!("{}: {e}", scratch.display())))?;
        let object = match std::env::var_os("TCPVIDEO_ORIGIN_BPF_OBJECT") {
            Some(p) => PathBuf::from(p),
            None => compile(&scratch)?,
        };
        let bpffs = ensure_mount("bpf", Path::new("/sys/fs/bpf"))?;
        let cgroup_root = ensure_mount("cgroup2", &scratch.join("cgroup2"))?;
        let prog_pin = bpffs.join(format!("origin_tcpvideo_{pid}_prog"));
        let maps_pin = bpffs.join(format!("origin_tcpvideo_{pid}_maps"));
        let cgroup = cgroup_root.join(format!("origin-tcpvideo-{pid}"));
        let home = home_cgroup(&cgroup_root)?;
        let mut loaded = ClampProgram {
            map: open_pinned(&maps_pin.join("clamps")).unwrap_or_else(|_| placeholder_fd()),
            prog_pin,
            maps_pin,
            cgroup,
            home_procs: home.join("cgroup.procs"),
            scratch,
        };
        run(Command::new("bpftool")
            .arg("prog")
            .arg("load")
            .arg(&object)
            .arg(&loaded.prog_pin)
            .args(["type", "sockops", "pinmaps"])
            .arg(&loaded.maps_pin))?;
        fs::create_dir_all(&loaded.cgroup).map_err(|e| unavailable(format!("mkdir {}: {e}", loaded.cgroup.display())))?;
        run(Command::new("bpftool").arg("cgroup").arg("attach").arg(&loaded.cgroup).args(["sock_ops", "pinned"]).arg(&loaded.prog_pin))?;
        loaded.map = open_pinned(&loaded.maps_pin.join("clamps")).map_err(|e| unavailable(format!("open pinned map: {e}")))?;
        fs::write(loaded.cgroup.join("cgroup.procs"), pid.to_string())
            .map_err(|e| unavailable(format!("join {}: {e}", loaded.cgroup.display())))?;
        Ok(loaded)
    }

    /// Want `clamp_packets` on the socket with this cookie (`None`: no clamp). Takes effect at the
    /// connection's next ACK carrying an RTT sample.
    pub fn set(&self, cookie: u64, clamp_packets: Option<u32>) -> std::io::Result<()> {
        let wanted = clamp_packets.map_or(NO_CLAMP, |c| c.clamp(1, NO_CLAMP));
        let mut value = [0u8; 8];
        value[..4].copy_from_slice(&wanted.to_ne_bytes()); // applied = 0: apply again
        map_command(&self.map, BPF_MAP_UPDATE_ELEM, &cookie.to_ne_bytes(), Some(&value))
    }

    /// Forget the socket (its connection closed).
    pub fn forget(&self, cookie: u64) {
        let _ = map_command(&self.map, BPF_MAP_DELETE_ELEM, &cookie.to_ne_bytes(), None);
    }

    /// The cgroup the server runs in (for tests and logs).
    pub fn cgroup(&self) -> &Path {
        &self.cgroup
    }
}

impl Drop for ClampProgram {
    fn drop(&mut self) {
        let _ = fs::write(&self.home_procs, std::process::id().to_string());
        let _ =
            Command::new("bpftool").arg("cgroup").arg("detach").arg(&self.cgroup).args(["sock_ops", "pinned"]).arg(&self.prog_pin).output();
        let _ = fs::remove_dir(&self.cgroup);
        let _ = fs::remove_file(&self.prog_pin);
        if let Ok(entries) = fs::read_dir(&self.maps_pin) {
            for e in entries.flatten() {
                let _ = fs::remove_file(e.path());
            }
        }
        let _ = fs::remove_dir(&self.maps_pin);
        let _ = fs::remove_dir_all(&self.scratch);
    }
}

/// How the origin puts a cwnd clamp on a socket.
pub enum ClampControl {
    Bpf(ClampProgram),
    /// BPF could not load: cap the pacing rate at clamp·MSS/srtt.
    PacingFallback,
}

impl ClampControl {
    /// Apply `clamp_packets` to `socket` (the fallback needs its srtt and MSS).
    pub fn apply(
        &self,
        socket: &SocketHandle,
        cookie: u64,
        clamp_packets: Option<u32>,
        srtt: Duration,
        mss_bytes: u64,
    ) -> std::io::Result<()> {
        match self {
            ClampControl::Bpf(p) => p.set(cookie, clamp_packets),
            ClampControl::PacingFallback => {
                let rate = clamp_packets.filter(|_| !srtt.is_zero()).map(|c| Bandwidth::from_bytes_per(c as u64 * mss_bytes, srtt));
                socket.set_max_pacing_rate(rate)
            }
        }
    }

    pub fn forget(&self, cookie: u64) {
        if let ClampControl::Bpf(p) = self {
            p.forget(cookie);
        }
    }

    pub fn is_bpf(&self) -> bool {
        matches!(self, ClampControl::Bpf(_))
    }
}

fn compile(scratch: &Path) -> Result<PathBuf, ClampUnavailable> {
    let source = scratch.join("trickle_clamp.bpf.c");
    let object = scratch.join("trickle_clamp.bpf.o");
    fs::write(&source, PROGRAM_SOURCE).map_err(|e| unavailable(format!("{}: {e}", source.display())))?;
    let arch_include = format!("/usr/include/{}-linux-gnu", std::env::consts::ARCH);
    run(Command::new("clang").args(["-O2", "-g", "-target", "bpf", "-I", &arch_include, "-c"]).arg(&source).arg("-o").arg(&object))?;
    Ok(object)
}

fn run(cmd: &mut Command) -> Result<(), ClampUnavailable> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| unavailable(format!("{shown}: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(unavailable(format!("{shown}: {}", err.lines().last().unwrap_or("failed").trim())));
    }
    Ok(())
}

/// Where a file system of type `fstype` is mounted; mount one at `fallback` if none is.
fn ensure_mount(fstype: &str, fallback: &Path) -> Result<PathBuf, ClampUnavailable> {
    let mounts = fs::read_to_string("/proc/self/mounts").map_err(|e| unavailable(format!("/proc/self/mounts: {e}")))?;
    if let Some(dir) = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == fstype).then(|| PathBuf::from(f[1]))
    }) {
        return Ok(dir);
    }
    fs::create_dir_all(fallback).map_err(|e| unavailable(format!("mkdir {}: {e}", fallback.display())))?;
    let c = |s: &str| std::ffi::CString::new(s).unwrap_or_default();
    let target = c(&fallback.to_string_lossy());
    // SAFETY: NUL-terminated strings that live across the call.
    let rc = unsafe { libc::mount(c(fstype).as_ptr(), target.as_ptr(), c(fstype).as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        return Err(unavailable(format!("mount -t {fstype} {}: {}", fallback.display(), std::io::Error::last_os_error())));
    }
    Ok(fallback.to_path_buf())
}

/// This process's cgroup v2 directory ("0::/path" in /proc/self/cgroup).
fn home_cgroup(root: &Path) -> Result<PathBuf, ClampUnavailable> {
    let text = fs::read_to_string("/proc/self/cgroup").map_err(|e| unavailable(format!("/proc/self/cgroup: {e}")))?;
    let rel = text.lines().find_map(|l| l.strip_prefix("0::")).unwrap_or("/");
    Ok(root.join(rel.trim_start_matches('/')))
}

// bpf(2) commands and the offsets of their `union bpf_attr` members (include/uapi/linux/bpf.h).
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_MAP_DELETE_ELEM: libc::c_long = 3;
const BPF_OBJ_GET: libc::c_long = 7;
const ATTR_SIZE: usize = 128;

fn bpf(cmd: libc::c_long, attr: &mut [u8; ATTR_SIZE]) -> std::io::Result<libc::c_long> {
    // SAFETY: attr is a zero-initialised bpf_attr-sized buffer; pointers inside it stay valid
    // for the call (the callers keep their key/value/path alive).
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), ATTR_SIZE as libc::c_uint) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(rc)
}

fn open_pinned(path: &Path) -> std::io::Result<OwnedFd> {
    let c = std::ffi::CString::new(path.to_string_lossy().as_bytes()).map_err(std::io::Error::other)?;
    let mut attr = [0u8; ATTR_SIZE];
    attr[..8].copy_from_slice(&(c.as_ptr() as u64).to_ne_bytes()); // pathname
    let fd = bpf(BPF_OBJ_GET, &mut attr)?;
    // SAFETY: the kernel returned a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn map_command(map: &OwnedFd, cmd: libc::c_long, key: &[u8; 8], value: Option<&[u8; 8]>) -> std::io::Result<()> {
    let mut attr = [0u8; ATTR_SIZE];
    attr[..4].copy_from_slice(&(map.as_raw_fd() as u32).to_ne_bytes()); // map_fd
    attr[8..16].copy_from_slice(&(key.as_ptr() as u64).to_ne_bytes()); // key
    if let Some(v) = value {
        attr[16..24].copy_from_slice(&(v.as_ptr() as u64).to_ne_bytes()); // value
    } // flags (24..32) = BPF_ANY
    bpf(cmd, &mut attr).map(|_| ())
}

/// A valid fd to stand in before the map is open (so Drop can clean up a half-done load).
fn placeholder_fd() -> OwnedFd {
    // SAFETY: dup of stdin's fd number 0 or, failing that, /dev/null opened here.
    let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    unsafe { OwnedFd::from_raw_fd(fd) }
}
