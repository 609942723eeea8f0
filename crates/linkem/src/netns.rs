//! Entering a Linux network namespace from a thread, for the real-network helpers (`tun.rs`,
//! `qdisc_sampler.rs`, `forwarder.rs`).
//!
//! setns(2) with CLONE_NEWNET moves only the *calling thread* into the namespace named by a file
//! (`/var/run/netns/NAME`, what `ip netns add` creates, or `/proc/PID/ns/net`). So everything here
//! runs on a thread of its own: the Python interpreter's threads never change namespace, and a
//! socket or TUN file descriptor created inside keeps belonging to that namespace after the thread
//! ends (the namespace of a socket is fixed when it is created, net/socket.c `sock_create`).

use std::ffi::CString;
use std::io;

/// Move the calling thread into the network namespace at `path` (needs CAP_SYS_ADMIN).
pub fn enter(path: &str) -> io::Result<()> {
    let c = CString::new(path)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))?;
    // SAFETY: plain syscalls on a path we own; the fd is closed on every path.
    unsafe {
        let fd = libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let r = libc::setns(fd, libc::CLONE_NEWNET);
        let err = io::Error::last_os_error();
        libc::close(fd);
        if r != 0 {
            return Err(err);
        }
    }
    Ok(())
}

/// Run `f` on a fresh thread that first enters namespace `path` (if given); return its result.
pub fn run_in<T: Send + 'static>(
    path: Option<String>,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    std::thread::spawn(move || {
        if let Some(p) = path.as_deref() {
            enter(p).map_err(|e| io::Error::new(e.kind(), format!("setns({p}): {e}")))?;
        }
        f()
    })
    .join()
    .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")))
}
